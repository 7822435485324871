/**
 * The ingest queue's guards (issue #22): a real Redis (`redis-server` on loopback, started here)
 * and the built command line, plus the library API where a failure has to be staged.
 *
 * - A queue belongs to one store: a worker on another `--db` exits 2 before it takes a job or
 *   creates its folder; the library fails with `QueueError` `store_mismatch`.
 * - A worker pointed at a dead Redis creates no `--db` folder.
 * - Permanent failures (an encrypted document) fail after one attempt; transient ones are retried.
 * - `worker` exits 3 when a job failed, 0 when all succeeded.
 * - Two producers enqueuing the same documents at once count each job once between them.
 * - Queue URLs that cannot mean what they say are refused (exit 2, `invalid_url`); `/3` uses
 *   database 3; `unix://` connects through a Unix socket; the password is never printed.
 * - A Redis outage is reported while it lasts (lost, back after N s; JSON events with `--json`);
 *   a Redis that comes back empty ends the worker with an error, not exit 0.
 * - The web engine's extraction errors carry the file name once (`download: …`, not twice).
 */
import { Effect, Exit, Layer, Redacted } from "effect"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { connect, createServer, type Server, type Socket } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as RagError from "../../src/RagError.js"
import * as Upload from "../../src/api/Upload.js"
import * as Web from "../../src/api/Web.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as LocalWeb from "../../src/engines/web/LocalWeb.js"
import { sharedPath } from "../../src/internal/shared.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as IngestQueue from "../../src/pipeline/IngestQueue.js"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import { type BuiltCli, type CliResult, runBuiltCli as runBuilt, spawnBuiltCli as spawnBuilt } from "../support/cli.js"
import { redisAvailable, type RedisServer, startRedis } from "../support/redis.js"
import { tempDir } from "./fixtures/ingest-helpers.js"

const root = tempDir("queue-guards")
const socket = join(root, "redis.sock")
const encrypted = sharedPath("fixtures", "docs", "docx", "bug53475-password-is-pass.docx")
let redis: RedisServer

const writeDocs = (folder: string, count: number, tag = "doc") => {
  mkdirSync(folder, { recursive: true })
  for (let i = 0; i < count; i++) writeFileSync(join(folder, `${tag}-${String(i).padStart(5, "0")}.txt`), `Document ${tag} ${i}. alpha beta gamma ${i % 13}\n`)
  return folder
}

const redisCli = (port: number, ...args: Array<string>) => spawnSync("redis-cli", ["-p", String(port), ...args], { encoding: "utf8" }).stdout.trim()

const show = (r: CliResult) => `exit ${r.code}\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`
const expectExit = (r: CliResult, code: number) => {
  if (r.code !== code) throw new Error(`expected exit ${code}, got ${show(r)}`)
}

/**
 * The hang guard of each test, and the kill time of the CLI processes it starts: generous (a loaded
 * host runs these processes many times slower), never what a test checks.
 */
const hangGuardMs = 900_000

/**
 * Waits until `test` holds: progress, not a clock. It fails when `process` (the worker being
 * watched) ends before; a wait that never ends is caught by the test's hang guard.
 */
/** The built CLI, killed at the hang guard rather than the helpers' shorter defaults. */
const runBuiltCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runBuilt(args, env, { timeoutMs: hangGuardMs })
const spawnBuiltCli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  spawnBuilt(args, env, { timeoutMs: hangGuardMs })

const waitFor = (what: string, test: () => boolean, process?: BuiltCli) =>
  new Promise<void>((resolve, reject) => {
    let ended: CliResult | undefined
    process?.done.then((r) => void (ended = r), () => void (ended = { code: null, stdout: "", stderr: "" }))
    const poll = setInterval(() => {
      if (test()) {
        clearInterval(poll)
        resolve()
      } else if (ended !== undefined) {
        clearInterval(poll)
        reject(new Error(`the worker ended before ${what}: ${show(ended)}`))
      }
    }, 25)
  })

/** A TCP proxy to a port that can be taken down and brought back: a network outage for its clients. */
const startProxy = async (target: number) => {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const up = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(target, "127.0.0.1")
        sockets.add(client).add(upstream)
        const close = () => {
          client.destroy()
          upstream.destroy()
        }
        for (const s of [client, upstream]) {
          s.on("error", close)
          s.on("close", close)
        }
        client.pipe(upstream)
        upstream.pipe(client)
      })
      server.listen(port, "127.0.0.1", () => {
        const a = server!.address()
        port = typeof a === "object" && a !== null ? a.port : port
        resolve()
      })
    })
  const down = () =>
    new Promise<void>((resolve) => {
      server?.close(() => resolve())
      for (const s of sockets) s.destroy()
      sockets.clear()
    })
  await up()
  return { url: () => `redis://127.0.0.1:${port}`, up, down }
}

beforeAll(async () => {
  if (!redisAvailable()) throw new Error("redis-server is not on PATH (apt-get install -y redis-server; .ci/run installs it)")
  mkdirSync(root, { recursive: true })
  redis = await startRedis({ unixSocket: socket })
}, hangGuardMs)

afterAll(async () => {
  await redis?.stop()
  rmSync(root, { recursive: true, force: true })
})

describe("IngestQueue guards (a real Redis, built CLI processes)", () => {
  it("a queue belongs to one store: a worker on another --db exits 2 before taking a job or creating its folder", async () => {
    const docs = writeDocs(join(root, "split-docs"), 20)
    const dbA = join(root, "split-a")
    const dbB = join(root, "split-b")
    // the producer names the store: the queue records it
    expectExit(await runBuiltCli(["ingest", docs, "--queue", redis.url, "--collection", "split", "--db", dbA]), 0)
    const refused = await runBuiltCli(["worker", "--queue", redis.url, "--collection", "split", "--db", dbB, "--until-empty"])
    expectExit(refused, 2)
    expect(refused.stderr).toMatch(/QueueError \(store_mismatch\): the queue of collection split on redis:\/\/127\.0\.0\.1:\d+ belongs to the store .*split-a, not .*split-b/)
    expect(existsSync(dbB)).toBe(false)
    const status = await Effect.runPromise(IngestQueue.status({ url: Redacted.make(redis.url) }, "split"))
    expect(status.counts.waiting).toBe(20) // no job taken
    expect(status.store).toBe(IngestQueue.storeIdentity(dbA))
    // the store's own worker does them all (and exits 0: none failed)
    const ok = await runBuiltCli(["worker", "--queue", redis.url, "--collection", "split", "--db", dbA, "--until-empty"])
    expectExit(ok, 0)
    expect(ok.stdout).toMatch(/20 ingested, 0 unchanged, 0 failed/)

    // a queue no producer bound: the first worker records its store, a second on another store is refused
    expectExit(await runBuiltCli(["ingest", docs, "--queue", redis.url, "--collection", "split2"]), 0)
    expectExit(await runBuiltCli(["worker", "--queue", redis.url, "--collection", "split2", "--db", dbA, "--until-empty"]), 0)
    const second = await runBuiltCli(["worker", "--queue", redis.url, "--collection", "split2", "--db", dbB, "--until-empty", "--json"])
    expectExit(second, 2)
    expect(JSON.parse(second.stdout)).toMatchObject({ error: { _tag: "QueueError", reason: "store_mismatch" } })
    expect(existsSync(dbB)).toBe(false)
  }, hangGuardMs)

  it("the library's worker on another store fails with QueueError store_mismatch before taking a job", async () => {
    const config = { url: Redacted.make(redis.url) }
    const docs = writeDocs(join(root, "lib-docs"), 3)
    await Effect.runPromise(IngestQueue.enqueue({ sources: [Ingest.Source.path(docs)], collection: "lib" }, config, { store: join(root, "lib-a") }))
    const layers = Layer.mergeAll(LocalFiles.layer(), MemoryStore.layer)
    const exit = await Effect.runPromiseExit(
      IngestQueue.worker(config, { collection: "lib", store: join(root, "lib-b"), untilEmpty: true }).pipe(Effect.provide(layers))
    )
    if (!Exit.isFailure(exit)) throw new Error("the worker on another store succeeded")
    const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    expect(error).toMatchObject({ _tag: "QueueError", reason: "store_mismatch" })
    expect((await Effect.runPromise(IngestQueue.status(config, "lib"))).counts.waiting).toBe(3)
  }, hangGuardMs)

  it("a worker pointed at a dead Redis fails without creating its --db folder", async () => {
    const server = createServer()
    const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)))
    await new Promise<void>((resolve) => server.close(() => resolve()))
    const db = join(root, "dead-redis-db", "nested")
    const r = await runBuiltCli(["worker", "--queue", `redis://127.0.0.1:${port}`, "--db", db, "--until-empty"])
    expectExit(r, 1)
    expect(r.stderr).toMatch(/QueueError \(connection\): cannot reach Redis/)
    expect(existsSync(join(root, "dead-redis-db"))).toBe(false)
  }, hangGuardMs)

  it("permanent failures fail after one attempt, transient ones are retried (library API)", async () => {
    const config = { url: Redacted.make(redis.url) }
    const docs = writeDocs(join(root, "retry-docs"), 2, "flaky")
    // the first extraction of each text file fails with a 503: transient
    const tries = new Map<string, number>()
    const flakyUpload = Layer.effect(
      Upload.Upload,
      Effect.map(Upload.Upload, (u) => ({
        ...u,
        extractChunks: (file: Upload.UploadFile, options?: Upload.UploadOptions) => {
          const n = (tries.get(file.name) ?? 0) + 1
          tries.set(file.name, n)
          return file.name.endsWith(".txt") && n === 1
            ? Effect.fail(new RagError.ServerError({ endpoint: "local upload", message: "busy, try again", status: 503 }))
            : u.extractChunks(file, options)
        }
      }))
    ).pipe(Layer.provide(LocalFiles.layer()))
    await Effect.runPromise(IngestQueue.enqueue({ sources: [Ingest.Source.path(docs), Ingest.Source.path(encrypted)], collection: "retry" }, config, { attempts: 3, backoff: 50 }))
    const events: Array<IngestQueue.WorkerEvent> = []
    const summary = await Effect.runPromise(
      IngestQueue.worker(config, { collection: "retry", untilEmpty: true, onEvent: (e) => Effect.sync(() => void events.push(e)) }).pipe(
        Effect.provide(Layer.mergeAll(flakyUpload, MemoryStore.layer))
      )
    )
    const failed = events.filter((e) => e._tag === "Failed")
    const locked = failed.filter((e) => e.source.endsWith(".docx"))
    expect(locked).toHaveLength(1)
    expect(locked[0]).toMatchObject({ error: { _tag: "ExtractionError", reason: "password_required" }, permanent: true, final: true, attempt: 1, attempts: 3 })
    const flaky = failed.filter((e) => e.source.endsWith(".txt"))
    expect(flaky).toHaveLength(2)
    for (const f of flaky) expect(f).toMatchObject({ error: { _tag: "ServerError" }, permanent: false, final: false, attempt: 1 })
    expect(summary).toMatchObject({ ingested: 2, failed: 3, failedJobs: 1 })
    const status = await Effect.runPromise(IngestQueue.status(config, "retry"))
    expect(status.counts).toMatchObject({ completed: 2, failed: 1 })
    expect(status.failed[0]).toMatchObject({ attempts: 1, error: { _tag: "ExtractionError", reason: "password_required" } })
    expect(IngestQueue.isPermanent({ _tag: "TransportError", reason: "timeout" })).toBe(false)
    expect(IngestQueue.isPermanent({ _tag: "RateLimited" })).toBe(false)
    expect(IngestQueue.isPermanent({ _tag: "SourceError", reason: "not_found" })).toBe(true)
    expect(IngestQueue.isPermanent({ _tag: "PayloadTooLarge" })).toBe(true)
  }, hangGuardMs)

  it("worker exits 3 when a job failed (the line says it is not retried)", async () => {
    const docs = writeDocs(join(root, "partial-docs"), 2)
    expectExit(await runBuiltCli(["ingest", docs, encrypted, "--queue", redis.url, "--collection", "partial"]), 0)
    const r = await runBuiltCli(["worker", "--queue", redis.url, "--collection", "partial", "--db", join(root, "partial-db"), "--until-empty"])
    expectExit(r, 3)
    expect(r.stderr).toMatch(/failed .*bug53475-password-is-pass\.docx: ExtractionError \(password_required\): .*\(permanent, not retried\)/)
    expect(r.stdout).toMatch(/2 ingested, 0 unchanged, 1 failed \(1 failed attempt\(s\)\)/)
  }, hangGuardMs)

  it("two producers enqueuing the same documents at once count each job once", async () => {
    const docs = writeDocs(join(root, "race-docs"), 3000)
    const args = ["ingest", docs, "--queue", redis.url, "--collection", "race", "--json"]
    const [a, b] = await Promise.all([runBuiltCli(args), runBuiltCli(args)])
    expectExit(a, 0)
    expectExit(b, 0)
    const [ra, rb] = [a, b].map((r) => JSON.parse(r.stdout) as IngestQueue.EnqueueSummary)
    expect(ra!.documents).toBe(3000)
    expect(rb!.documents).toBe(3000)
    expect(ra!.enqueued + rb!.enqueued).toBe(3000)
    const status = await Effect.runPromise(IngestQueue.status({ url: Redacted.make(redis.url) }, "race"))
    expect(status.counts.waiting).toBe(3000)
    // and a third adds none
    const c = await runBuiltCli(["ingest", docs, "--queue", redis.url, "--collection", "race"])
    expect(c.stdout).toMatch(/3000 document\(s\) submitted, 0 new job\(s\), 3000 already queued/)
  }, hangGuardMs)

  it("the producer skips special files and says so; they are never enqueued", async () => {
    const docs = writeDocs(join(root, "fifo-docs"), 2)
    spawnSync("mkfifo", [join(docs, "pipe")])
    const r = await runBuiltCli(["ingest", docs, "--queue", redis.url, "--collection", "fifo"])
    expectExit(r, 0)
    expect(r.stdout).toMatch(/2 document\(s\) submitted, 2 new job\(s\)/)
    expect(r.stdout).toMatch(/skipped .*pipe: .*FIFO/)
    const json = await runBuiltCli(["ingest", docs, "--queue", redis.url, "--collection", "fifo", "--json"])
    const summary = JSON.parse(json.stdout) as IngestQueue.EnqueueSummary
    expect(summary.ignored.map((i) => i.reason)).toEqual(["fifo"])
  }, hangGuardMs)

  it("queue URLs that cannot mean what they say are refused; /3 uses database 3; unix:// uses the socket", async () => {
    const docs = writeDocs(join(root, "url-docs"), 2)
    const base = `redis://127.0.0.1:${redis.port}`
    const refused: Array<[string, RegExp]> = [
      ["redis:///tmp/redis.sock", /redis:\/\/ needs a host .*unix:\/\/\/path\/to\/redis\.sock/],
      [`${base}/99`, /has no database 99/],
      [`${base}/3x`, /database must be a number/],
      [`${base}/3/extra`, /database must be a number/],
      [`${base}/3?timeout=5`, /takes no query/],
      [`${base}/3#x`, /fragment/],
      [`redis://:s3cret@127.0.0.1:${redis.port}/99`, /has no database 99/],
      [`unix://${socket}?db=3&x=1`, /takes only \?db=N/]
    ]
    for (const [url, message] of refused) {
      const r = await runBuiltCli(["ingest", docs, "--queue", url, "--collection", "urls"])
      if (r.code !== 2) throw new Error(`${url}: ${show(r)}`)
      expect(r.stderr).toMatch(/QueueError \(invalid_url\)/)
      expect(r.stderr).toMatch(message)
      expect(r.stdout + r.stderr).not.toContain("s3cret")
    }
    // nothing was written by the refused ones
    expect(redisCli(redis.port, "exists", "effect-rag:urls:identity")).toBe("0")

    // /3 is database 3
    expectExit(await runBuiltCli(["ingest", docs, "--queue", `${base}/3`, "--collection", "db3"]), 0)
    expect(redisCli(redis.port, "-n", "3", "exists", "effect-rag:db3:identity")).toBe("1")
    expect(redisCli(redis.port, "-n", "0", "exists", "effect-rag:db3:identity")).toBe("0")

    // a Unix socket, with a database
    expectExit(await runBuiltCli(["ingest", docs, "--queue", `unix://${socket}?db=2`, "--collection", "sock"]), 0)
    expect(redisCli(redis.port, "-n", "2", "exists", "effect-rag:sock:identity")).toBe("1")
    const status = await runBuiltCli(["ingest", "--queue", `redis+unix://${socket}?db=2`, "--collection", "sock", "--status"])
    expectExit(status, 0)
    expect(status.stdout).toMatch(/queue of collection sock: 2 waiting/)
  }, hangGuardMs)

  it("a Redis outage is reported while it lasts (JSON events with --json), and the worker goes on", async () => {
    const proxy = await startProxy(redis.port)
    const docs = writeDocs(join(root, "outage-docs"), 3, "before")
    expectExit(await runBuiltCli(["ingest", docs, "--queue", proxy.url(), "--collection", "outage"]), 0)
    // a password in the URL (this Redis needs none: ioredis warns and goes on) is never printed
    const withPassword = proxy.url().replace("redis://", "redis://:s3cret@")
    const worker = spawnBuiltCli(["worker", "--queue", withPassword, "--collection", "outage", "--db", join(root, "outage-db"), "--json"])
    const events = () =>
      worker.stderr().split("\n").filter((l) => l.startsWith("{")).map((l) =>
        JSON.parse(l) as { event: string; downMs?: number; queue?: string; error?: { _tag: string; reason: string; message: string } }
      )
    // the three documents are written (the summary comes at the end: watch the store's markers through status)
    await waitFor("the first jobs", () => redisCli(redis.port, "zcard", "effect-rag:outage:completed") === "3", worker)
    await proxy.down()
    await waitFor("the lost connection event", () => events().some((e) => e.event === "connection_lost"), worker)
    // BullMQ's own errors (its reconnection tries) are reported, typed, with the host, once each
    await waitFor("a queue error event", () => events().some((e) => e.event === "queue_error"), worker)
    const queueErrors = events().filter((e) => e.event === "queue_error")
    for (const e of queueErrors) {
      expect(e).toMatchObject({ queue: proxy.url(), error: { _tag: "QueueError", reason: "connection", message: expect.stringContaining(`Redis at ${proxy.url()}: `) } })
    }
    expect(queueErrors.some((e) => /ECONNREFUSED 127\.0\.0\.1:\d+/.test(e.error!.message))).toBe(true)
    await new Promise((r) => setTimeout(r, 2500))
    await proxy.up()
    await waitFor("the connection back event", () => events().some((e) => e.event === "connection_restored"), worker)
    const back = events().find((e) => e.event === "connection_restored")!
    expect(back.downMs).toBeGreaterThanOrEqual(2000)
    // ioredis tried again every 2 s at most: the same error repeated is one event
    const messages = events().filter((e) => e.event === "queue_error").map((e) => e.error!.message)
    expect(messages.filter((m, i) => i > 0 && m === messages[i - 1])).toEqual([])
    // it goes on: a job enqueued after the outage is done
    writeDocs(join(root, "outage-docs-2"), 1, "after")
    expectExit(await runBuiltCli(["ingest", join(root, "outage-docs-2"), "--queue", proxy.url(), "--collection", "outage"]), 0)
    await waitFor("the job enqueued after the outage", () => redisCli(redis.port, "zcard", "effect-rag:outage:completed") === "4", worker)
    worker.kill("SIGTERM")
    const r = await worker.done
    expect(r.code).toBe(143)
    expect(r.stdout + r.stderr).not.toContain("s3cret")
    await proxy.down()
  }, hangGuardMs)

  it("a Redis that comes back empty ends an --until-empty worker with an error, not exit 0", async () => {
    const own = await startRedis()
    let restarted: RedisServer | undefined
    try {
      const docs = writeDocs(join(root, "empty-docs"), 3000)
      expectExit(await runBuiltCli(["ingest", docs, "--queue", own.url, "--collection", "gone"]), 0)
      const worker = spawnBuiltCli(["worker", "--queue", own.url, "--collection", "gone", "--db", join(root, "empty-db"), "--until-empty", "--concurrency", "4", "--batch", "4"])
      await waitFor("the first ingested document", () => /^ingested /m.test(worker.stderr()), worker)
      await own.stop()
      await waitFor("the lost connection line", () => /lost the connection to Redis at redis:\/\/127\.0\.0\.1:\d+/.test(worker.stderr()), worker)
      await new Promise((r) => setTimeout(r, 1000))
      restarted = await startRedis({ port: own.port })
      const r = await worker.done
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/the connection to Redis at redis:\/\/127\.0\.0\.1:\d+ is back after \d+\.\d s/)
      expect(r.stderr).toMatch(/QueueError \(queue_lost\): Redis at .* holds no queue for collection gone any more/)
      // the real redis-server stopped under the worker: BullMQ's connection errors, typed, with the host, each once in a row
      const errors = r.stderr.split("\n").filter((l) => l.startsWith("queue error: "))
      expect(errors.length).toBeGreaterThan(0)
      for (const l of errors) expect(l).toMatch(new RegExp(`^queue error: QueueError \\(connection\\): Redis at redis://127\\.0\\.0\\.1:${own.port}: .+ \\(reconnecting\\)$`))
      expect(errors.filter((l, i) => i > 0 && l === errors[i - 1])).toEqual([])
    } finally {
      await (restarted ?? own).stop().catch(() => undefined)
    }
  }, hangGuardMs)

  it("the web engine names a downloaded file once in its extraction errors", async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/pdf" })
      res.end("%PDF-1.7\nthis is not a PDF body\n")
    })
    const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)))
    try {
      const error = await Effect.runPromise(
        Effect.flip(Effect.flatMap(Web.Web, (w) => w.scrape({ url: `http://127.0.0.1:${port}/`, formats: ["markdown"] }))).pipe(
          Effect.provide(LocalWeb.layer({ allowPrivate: true }).pipe(Layer.provide(LocalFiles.layer()))),
          Effect.scoped
        )
      )
      expect(error.message).toMatch(/download(\.pdf)?: /)
      expect(error.message).not.toMatch(/(download(\.pdf)?): \1: /)
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }, hangGuardMs)
})
