/**
 * Queue workers writing to PostgreSQL: a real Redis (`redis-server` on loopback) for the queue,
 * PGlite + pgvector served on loopback (or Debian's PostgreSQL 15 with
 * `EFFECT_RAG_TEST_POSTGRES=1`) as the store, the built command line as producer
 * (`ingest --queue`) and as two worker processes (`worker --db postgres://…`), one of them killed
 * with SIGKILL once it has written. The collection ends with the documents and chunk counts a
 * single-process `effect-rag ingest` of the same sources writes to LanceDB.
 */
import { Effect } from "effect"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as PostgresStore from "../../src/store/PostgresStore.js"
import { VectorStore } from "../../src/store/VectorStore.js"
import { type CliResult, runBuiltCli, spawnBuiltCli, untilWritten } from "../support/cli.js"
import { type PostgresServer, startPostgres } from "../support/postgres.js"
import { redisAvailable, type RedisServer, startRedis } from "../support/redis.js"
import { documentCounts, dumpTable, tempDir } from "./fixtures/ingest-helpers.js"

const root = tempDir("queue-pg")
const corpus = join(root, "corpus")
let redis: RedisServer
let pg: PostgresServer

const writeDocs = (folder: string, count: number) => {
  for (let i = 0; i < count; i++) {
    const dir = join(folder, String(Math.floor(i / 500)))
    if (i % 500 === 0) mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `doc-${String(i).padStart(4, "0")}.md`), `# Note ${i}\n\n${`term${i % 31} alpha beta gamma delta `.repeat(4 + (i % 7))}\n`)
  }
}

beforeAll(async () => {
  if (!redisAvailable()) throw new Error("redis-server is not on PATH (apt-get install -y redis-server; .ci/run installs it)")
  ;[redis, pg] = await Promise.all([startRedis(), startPostgres()])
  writeDocs(corpus, 1_500)
}, 600_000)

afterAll(async () => {
  await Promise.all([redis?.stop(), pg?.stop()])
  rmSync(root, { recursive: true, force: true })
})

const expectOk = (r: CliResult, code = 0) => {
  if (r.code !== code) throw new Error(`exit ${r.code} (expected ${code})\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`)
}

// Nothing here depends on how fast the machine is: the only wall-clock limit is the test's own
// time-out (a hang), and the processes it starts are killed only at the same limit.
/** The test's time-out, and the limit of each process it starts. */
const testMs = 900_000
/**
 * The workers' job lock: the product's default (30 s), not a short lease for a quick redo. BullMQ
 * renews it every quarter to half of its duration, so a worker whose event loop stalls for more
 * than about half of it (seconds, on a loaded host) loses its jobs to the other worker.
 */
const lockDurationMs = 30_000

/** Documents and their chunk counts in a Postgres collection, read through the store. */
const postgresDocuments = (url: string, collection: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.open(collection)
      const docs = yield* c.listDocuments()
      return { counts: Object.fromEntries(docs.map((d) => [d.documentId, d.chunks])), total: yield* c.count() }
    }).pipe(Effect.provide(PostgresStore.layerFromUrl(url)))
  )

describe("IngestQueue workers writing to PostgreSQL", () => {
  it("two workers (one killed with SIGKILL mid-run) write the documents and chunks a single-process ingest writes", async () => {
    const collection = "notes"
    const produced = await runBuiltCli(["ingest", corpus, "--queue", redis.url, "--collection", collection, "--json"], {}, { timeoutMs: testMs })
    expectOk(produced)
    const enqueued = JSON.parse(produced.stdout) as { documents: number; enqueued: number }
    expect(enqueued.enqueued).toBe(1_500)

    const single = join(root, "single-db")
    const direct = runBuiltCli(["ingest", corpus, "--db", single, "--collection", collection], {}, { timeoutMs: testMs })

    const workerArgs = ["worker", "--queue", redis.url, "--collection", collection, "--db", pg.url, "--lock-duration", String(lockDurationMs), "--until-empty", "--concurrency", "32", "--batch", "128"]
    const victim = spawnBuiltCli(workerArgs, {}, { timeoutMs: testMs })
    const other = spawnBuiltCli(workerArgs, {}, { timeoutMs: testMs })
    await untilWritten(victim, 50)
    victim.kill("SIGKILL")
    expect((await victim.done).code).toBeNull()
    expectOk(await other.done)
    expectOk(await direct)

    const expected = documentCounts(await dumpTable(single, collection))
    const got = await postgresDocuments(pg.url, collection)
    expect(Object.keys(got.counts).length).toBe(1_500)
    expect(got.counts).toEqual(expected)
    expect(got.total).toBe(Object.values(expected).reduce((a, b) => a + b, 0))
    // the password-less URL is what the worker printed; nothing else about the server leaks
    expect(other.stderr()).not.toMatch(/password/i)
  }, testMs)
})
