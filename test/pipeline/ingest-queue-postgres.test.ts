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
import { type CliResult, runBuiltCli, spawnBuiltCli } from "../support/cli.js"
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
}, 120_000)

afterAll(async () => {
  await Promise.all([redis?.stop(), pg?.stop()])
  rmSync(root, { recursive: true, force: true })
})

const expectOk = (r: CliResult, code = 0) => {
  if (r.code !== code) throw new Error(`exit ${r.code} (expected ${code})\nstdout: ${r.stdout.slice(-2000)}\nstderr: ${r.stderr.slice(-2000)}`)
}

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
    const produced = await runBuiltCli(["ingest", corpus, "--queue", redis.url, "--collection", collection, "--json"], {}, { timeoutMs: 120_000 })
    expectOk(produced)
    const enqueued = JSON.parse(produced.stdout) as { documents: number; enqueued: number }
    expect(enqueued.enqueued).toBe(1_500)

    const single = join(root, "single-db")
    const direct = runBuiltCli(["ingest", corpus, "--db", single, "--collection", collection], {}, { timeoutMs: 180_000 })

    const workerArgs = ["worker", "--queue", redis.url, "--collection", collection, "--db", pg.url, "--lock-duration", "4000", "--until-empty", "--concurrency", "32", "--batch", "128"]
    const victim = spawnBuiltCli(workerArgs, {}, { timeoutMs: 180_000 })
    const other = spawnBuiltCli(workerArgs, {}, { timeoutMs: 180_000 })
    await new Promise<void>((resolve, reject) => {
      const started = Date.now()
      const poll = setInterval(() => {
        const written = victim.stderr().split("\n").filter((l) => l.startsWith("ingested ")).length
        if (written >= 50) {
          clearInterval(poll)
          victim.kill("SIGKILL")
          resolve()
        } else if (Date.now() - started > 150_000) {
          clearInterval(poll)
          reject(new Error(`the first worker wrote nothing in 150 s: ${victim.stderr().slice(-2000)}`))
        }
      }, 50)
    })
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
  }, 300_000)
})
