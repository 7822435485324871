/**
 * Ingestion through the queue: a real Redis (`redis-server` on loopback, started here), the
 * built command line as producer (`ingest --queue`) and as three worker processes (`worker`).
 *
 * - The shared fixtures plus a synthetic 10,000-document corpus, enqueued by one producer and
 *   written by three workers, one of them killed with SIGKILL while it holds jobs: the
 *   collection ends with the same chunk ids and rows, and the same completion markers, as a
 *   single-process `effect-rag ingest` of the same sources. `ingest --queue --status` lists the
 *   documents that failed (a corrupt PDF, encrypted files) with their typed errors.
 * - A producer killed with SIGKILL mid-enqueue and rerun: every document is in the queue once.
 *   A worker stopped with SIGTERM finishes the jobs in hand and exits 143.
 */
import { Effect, Redacted } from "effect"
import { spawnSync } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { sharedPath } from "../../src/internal/shared.js"
import * as IngestQueue from "../../src/pipeline/IngestQueue.js"
import { type CliResult, runBuiltCli, spawnBuiltCli, untilWritten } from "../support/cli.js"
import { redisAvailable, type RedisServer, startRedis } from "../support/redis.js"
import { documentCounts, dumpManifest, dumpTable, tempDir } from "./fixtures/ingest-helpers.js"

const root = tempDir("queue")
const corpus = join(root, "corpus")
const fixtures = sharedPath("fixtures", "docs")
let redis: RedisServer

/** 10,000 small text documents in 10 folders (one chunk each). */
const writeSynthetic = (folder: string, count: number) => {
  for (let i = 0; i < count; i++) {
    const dir = join(folder, String(Math.floor(i / 1000)).padStart(2, "0"))
    if (i % 1000 === 0) mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `doc-${String(i).padStart(5, "0")}.txt`), `Document ${i}. ${`term${i % 97} alpha beta gamma `.repeat(3 + (i % 5))}\n`)
  }
}

beforeAll(async () => {
  if (!redisAvailable()) throw new Error("redis-server is not on PATH (apt-get install -y redis-server; .ci/run installs it)")
  redis = await startRedis()
  writeSynthetic(corpus, 10_000)
}, 600_000)

afterAll(async () => {
  await redis?.stop()
  rmSync(root, { recursive: true, force: true })
})

const expectOk = (r: CliResult, code = 0) => {
  if (r.code !== code) throw new Error(`exit ${r.code} (expected ${code})\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`)
}

// Nothing here depends on how fast the machine is (CI hosts can be several times slower than a
// workstation, or busy): the only wall-clock limits are the tests' own time-outs, which catch a
// hang, and the processes they start are killed only at the same limit.
/**
 * The first test's time-out, and the limit of each process it starts: it took 402 s at load
 * averages of 21-45 on 2 cores and 734 s with four CPU hogs besides (load 14-34).
 */
const firstTestMs = 1_500_000
/** The second test's time-out, and the limit of each process it starts. */
const secondTestMs = 600_000
/**
 * The job lock of the workers: the product's default (30 s), not a short lease for a quick redo.
 * BullMQ renews it every quarter to half of its duration, so a worker whose event loop stalls for
 * more than about half of it loses its jobs to another worker; a loaded host stalls a process for
 * seconds (the 4 s lease this test used was seen lost at load averages of 20 and more). The killed worker's
 * jobs come back within about two lock durations.
 */
const lockDurationMs = 30_000
/**
 * The per-file extraction time-out of the workers and of the single-process run, set high: this
 * test is not about it, and a PDF that takes 2.7 s of CPU took 97 s at a load average of 38 (so
 * a time-out could fail a document in one run and not in the other).
 */
const extractTimeoutMs = 600_000

describe("IngestQueue (BullMQ on a real Redis, built CLI processes)", () => {
  it("three workers (one killed with SIGKILL mid-job) write the collection a single-process ingest writes; --status lists the failed documents", async () => {
    const queued = join(root, "queued-db")
    const single = join(root, "single-db")
    const collection = "kb"

    // one producer
    const produced = await runBuiltCli(["ingest", fixtures, corpus, "--queue", redis.url, "--collection", collection, "--attempts", "2", "--json"], {}, { timeoutMs: firstTestMs })
    expectOk(produced)
    const enqueued = JSON.parse(produced.stdout) as IngestQueue.EnqueueSummary
    expect(enqueued.enqueued).toBe(enqueued.documents)
    expect(enqueued.documents).toBeGreaterThan(10_000)

    // the same sources, one process, at the same time (it shares nothing with the queue)
    // --no-ocr here and on the workers: OCR of the fixtures' scanned and glyph-soup pages (minutes
    // of CPU) is not what this test is about
    const extractTimeout = ["--extract-timeout-ms", String(extractTimeoutMs)]
    const direct = runBuiltCli(["ingest", fixtures, corpus, "--db", single, "--collection", collection, "--no-ocr", ...extractTimeout], {}, { timeoutMs: firstTestMs })

    // three workers; the first is killed once it has written something and holds more jobs
    const workerArgs = [
      "worker", "--queue", redis.url, "--collection", collection, "--db", queued, "--lock-duration", String(lockDurationMs),
      "--until-empty", "--concurrency", "64", "--batch", "256", "--no-ocr", ...extractTimeout
    ]
    const victim = spawnBuiltCli(workerArgs, {}, { timeoutMs: firstTestMs })
    const others = [spawnBuiltCli(workerArgs, {}, { timeoutMs: firstTestMs }), spawnBuiltCli(workerArgs, {}, { timeoutMs: firstTestMs })]
    await untilWritten(victim, 100)
    victim.kill("SIGKILL")
    const killed = await victim.done
    expect(killed.code).toBeNull() // killed, not finished
    // each exits 0, or 3 when documents failed in its hands (corrupt and encrypted fixtures)
    for (const r of await Promise.all(others.map((w) => w.done))) expectOk(r, / 0 failed \(/.test(r.stdout) ? 0 : 3)
    expectOk(await direct, 3)
    // the workers that ran dry released the collection's writer lock before they exited
    const lock = spawnSync("redis-cli", ["-p", String(redis.port), "exists", `effect-rag:${collection}:writer`], { encoding: "utf8" })
    expect(lock.status).toBe(0)
    expect(lock.stdout.trim()).toBe("0")

    const [qRows, sRows] = await Promise.all([dumpTable(queued, collection), dumpTable(single, collection)])
    expect(qRows.length).toBe(sRows.length)
    expect(qRows.length).toBeGreaterThan(10_000)
    expect(qRows.map((r) => r.id)).toEqual(sRows.map((r) => r.id))
    expect(qRows).toEqual(sRows)
    expect(documentCounts(qRows)).toEqual(documentCounts(sRows))
    const markers = async (db: string) => (await dumpManifest(db, collection)).map((r) => r.documentId)
    expect(await markers(queued)).toEqual(await markers(single))

    // the failed set: the documents that fail in the single-process run, with their typed errors
    const status = await runBuiltCli(["ingest", "--queue", redis.url, "--collection", collection, "--status", "--json"])
    expectOk(status)
    const s = JSON.parse(status.stdout) as IngestQueue.QueueStatus
    expect(s.counts.waiting + s.counts.active + s.counts.delayed).toBe(0)
    expect(s.counts.completed + s.counts.failed).toBe(enqueued.documents)
    const corrupt = s.failed.find((f) => f.source.endsWith("bug1020226-corrupt.pdf"))
    expect(corrupt?.error).toMatchObject({ _tag: "ExtractionError", reason: "corrupt" })
    // a corrupt document is a permanent failure: one attempt, not the two allowed
    expect(corrupt?.attempts).toBe(1)
    const text = await runBuiltCli(["ingest", "--queue", redis.url, "--collection", collection, "--status"])
    expect(text.stdout).toMatch(/failed .*bug1020226-corrupt\.pdf after 1 attempt\(s\): ExtractionError \(corrupt\)/)
    expect(s.failed.every((f) => f.error._tag === "ExtractionError")).toBe(true)
  }, firstTestMs)

  it("a producer killed mid-enqueue and rerun enqueues every document once; a worker stopped by SIGTERM leaves no job active", async () => {
    const collection = "restart"
    const first = spawnBuiltCli(["ingest", corpus, "--queue", redis.url, "--collection", collection], {}, { timeoutMs: secondTestMs })
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (/submitted \d+ document/.test(first.stderr()) || first.stdout() !== "") {
          clearInterval(poll)
          first.kill("SIGKILL")
          resolve()
        }
      }, 5)
    })
    await first.done
    const config = { url: Redacted.make(redis.url) }
    const before = await Effect.runPromise(IngestQueue.status(config, collection))
    expect(before.counts.waiting).toBeGreaterThan(0)
    expect(before.counts.waiting).toBeLessThan(10_000)

    const rerun = await runBuiltCli(["ingest", corpus, "--queue", redis.url, "--collection", collection, "--json"], {}, { timeoutMs: secondTestMs })
    expectOk(rerun)
    const r = JSON.parse(rerun.stdout) as IngestQueue.EnqueueSummary
    expect(r.documents).toBe(10_000)
    expect(r.enqueued).toBe(10_000 - before.counts.waiting)
    const after = await Effect.runPromise(IngestQueue.status(config, collection))
    expect(after.counts.waiting).toBe(10_000)

    // a third run adds nothing
    const again = await runBuiltCli(["ingest", corpus, "--queue", redis.url, "--collection", collection, "--json"], {}, { timeoutMs: secondTestMs })
    expect((JSON.parse(again.stdout) as IngestQueue.EnqueueSummary).enqueued).toBe(0)

    // SIGTERM on a worker: the jobs in hand are finished (none left active), exit 143
    const worker = spawnBuiltCli(["worker", "--queue", redis.url, "--collection", collection, "--db", join(root, "sigterm-db"), "--concurrency", "16", "--batch", "16"], {}, { timeoutMs: secondTestMs })
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (/^ingested /m.test(worker.stderr())) {
          clearInterval(poll)
          worker.kill("SIGTERM")
          resolve()
        }
      }, 20)
    })
    const stopped = await worker.done
    expect(stopped.code).toBe(143)
    expect(stopped.stderr).toMatch(/stopped by SIGTERM: \d+ ingested/)
    const left = await Effect.runPromise(IngestQueue.status(config, collection))
    expect(left.counts.active).toBe(0)
    expect(left.counts.completed).toBeGreaterThan(0)
    expect(left.counts.waiting + left.counts.completed).toBe(10_000)
  }, secondTestMs)

  it("a bad queue URL is a typed error that never shows the password", async () => {
    const e = await Effect.runPromise(Effect.flip(IngestQueue.status({ url: Redacted.make("redis://user:s3cret@127.0.0.1:1") }, "kb")))
    if (e._tag !== "QueueError") throw new Error(`expected a QueueError, got ${e._tag}`)
    expect(e.reason).toBe("connection")
    expect(e.message).not.toContain("s3cret")
    const bad = await runBuiltCli(["ingest", "--queue", "http://user:s3cret@example.invalid", "--status"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/QueueError \(invalid_url\)/)
    expect(bad.stdout + bad.stderr).not.toContain("s3cret")
  }, 60_000)
})
