/**
 * The Postgres store against a real server on loopback (PGlite + pgvector by default, Debian's
 * PostgreSQL 15 + pgvector with EFFECT_RAG_TEST_POSTGRES=1: see test/support/postgres.ts),
 * through the `pg` driver: the whole contract suite, BM25 scores equal to the in-memory index's,
 * reopening with the stored spec, filtered vector search keeping its limit, an embedding over
 * pgvector's HNSW limit, a writer killed with SIGKILL, two processes writing one collection at
 * once, and the ingest pipeline on Postgres.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import { spawn } from "node:child_process"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import * as PostgresStore from "../../src/store/PostgresStore.js"
import { type Chunk, type Collection, Filter, VectorStore } from "../../src/store/VectorStore.js"
import { axis, contract, corpus, spec } from "../../src/store/VectorStoreContract.js"
import { repoRoot } from "../support/cli.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import { markdown, tempDir, writeCorpus } from "../pipeline/fixtures/ingest-helpers.js"
import { rmSync, unlinkSync, writeFileSync } from "node:fs"
import { pathToFileURL } from "node:url"
import { type PostgresServer, startPostgres } from "../support/postgres.js"

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
}, 120_000)
afterAll(async () => {
  await server?.stop()
})

let n = 0
/** A store in a fresh schema of the test server. */
const fresh = (options: Partial<PostgresStore.Options> = {}) =>
  PostgresStore.layer({ host: server.host, port: server.port, user: server.user, database: server.database, schema: `t${process.pid}_${n++}`, ...options })

contract("postgres", () => fresh())

const chunksOf = (doc: number, count: number, tag = ""): Array<Chunk> =>
  Array.from({ length: count }, (_, i) => ({
    id: `d${doc}-c${i}`,
    documentId: `d${doc}`,
    title: `Document ${doc}`,
    text: `chunk ${i} of document ${doc} about topic${doc % 5} ${tag}`,
    vector: axis(doc, i / count),
    metadata: { lang: doc % 2 === 0 ? "en" : "fr", year: 2000 + doc }
  }))

describe("PostgresStore", () => {
  it.live("BM25 scores equal the in-memory index's, plain, weighted, with title boost and filters; termCounts too", () =>
    Effect.gen(function*() {
      const docs: Array<Chunk> = [
        ...corpus,
        ...Array.from({ length: 30 }, (_, d) => chunksOf(d, 3, d % 3 === 0 ? "solar tide bread" : "oven")).flat(),
        { id: "untitled", documentId: "U", text: "Solar ovens bake bread in the tide of sunlight", vector: axis(3), metadata: { lang: "en" } },
        { id: "empty-title", documentId: "U", title: "", text: "Tide pools and solar panels", vector: axis(3), metadata: {} }
      ]
      const run = <A>(layer: Layer.Layer<VectorStore, unknown>, f: (c: Collection) => Effect.Effect<A, unknown>) =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* VectorStore
          const c = yield* store.collection(spec)
          yield* c.upsert(docs)
          return yield* f(c)
        }).pipe(Effect.provide(layer)))
      const queries = [
        { q: "solar tide pools", o: {} },
        { q: "bread oven document topic1", o: { titleBoost: 2 } },
        { q: { terms: [{ text: "sunlight", weight: 2 }, { text: "pools chunk", weight: 0.4 }] }, o: { titleBoost: 0.5 } },
        { q: "document solar", o: { filter: Filter.and(Filter.eq("lang", "en"), Filter.gte("year", 2003)), limit: 7 } }
      ] as const
      const searchAll = (c: Collection) =>
        Effect.all([
          Effect.forEach(queries, ({ o, q }) => c.searchText(q, { limit: 20, ...o })),
          c.termCounts!(["a1", "untitled", "nope"])
        ])
      const pg = yield* run(fresh(), searchAll)
      const mem = yield* run(MemoryStore.layer, searchAll)
      for (const [i, hits] of pg[0].entries()) {
        const expected = mem[0][i]!
        expect(hits.length, `query ${i}`).toBe(expected.length)
        expect(hits.length, `query ${i}`).toBeGreaterThan(0)
        hits.forEach((h, j) => {
          expect(h.id, `query ${i} hit ${j}`).toBe(expected[j]!.id)
          expect(h.score).toBeCloseTo(expected[j]!.score, 5)
        })
      }
      const [pa1, pu, pnone] = pg[1]
      const [ma1, mu] = mem[1]
      expect(pnone).toBeUndefined()
      expect(pa1!.counts).toEqual(ma1!.counts)
      expect(pa1!.length).toBe(ma1!.length)
      expect(pu!.counts).toEqual(mu!.counts)
      // a word for each term, which analyses back to the term
      expect([...pa1!.words.keys()].sort()).toEqual([...ma1!.words.keys()].sort())
    }))

  it.live("reopens a collection with its spec and rows; another model is EmbeddingMismatch; the password is never in errors", () =>
    Effect.gen(function*() {
      const schema = `reopen_${process.pid}`
      const opts = { host: server.host, port: server.port, user: server.user, database: server.database, schema }
      yield* Effect.scoped(Effect.gen(function*() {
        const c = yield* (yield* VectorStore).collection(spec)
        yield* c.upsert(corpus)
      }).pipe(Effect.provide(PostgresStore.layer(opts))))
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        expect(store.backend).toBe("postgres")
        const c = yield* store.open("contract")
        expect(c.spec.embedding).toEqual({ model: "test-4d", dimension: 4 })
        expect(c.spec.fields).toEqual(spec.fields)
        expect(yield* c.count()).toBe(6)
        expect((yield* c.searchText("wild yeast", { limit: 1 }))[0]?.id).toBe("b1")
        const mismatch = yield* Effect.exit(store.collection({ ...spec, embedding: { model: "test-4d", dimension: 8 } }))
        expect(Exit.isFailure(mismatch) && JSON.stringify(mismatch.cause)).toContain("EmbeddingMismatch")
        const missing = yield* Effect.exit(store.open("nope"))
        expect(Exit.isFailure(missing) && JSON.stringify(missing.cause)).toContain("CollectionNotFound")
      }).pipe(Effect.provide(PostgresStore.layerFromUrl(`${server.url}?schema=${schema}`))))
      // a refused connection: the error names the place, never the password
      const secret = "s3cr3t-pa55"
      const refused = yield* Effect.exit(Effect.scoped(Effect.flatMap(VectorStore, (s) => s.list()).pipe(
        Effect.provide(PostgresStore.layer({ host: "127.0.0.1", port: 1, user: "u", password: Redacted.make(secret), database: "d" }))
      )))
      expect(Exit.isFailure(refused)).toBe(true)
      const text = JSON.stringify(refused) + String(refused)
      expect(text).toContain("StoreError")
      expect(text).not.toContain(secret)
      const parsed = PostgresStore.optionsFromUrl(`postgres://me:${secret}@db.example:6543/kb?schema=s1&sslmode=require`)
      expect(parsed._tag).toBe("Right")
      if (parsed._tag === "Right") {
        expect({ ...parsed.right, password: undefined }).toEqual({ host: "db.example", port: 6543, user: "me", password: undefined, database: "kb", schema: "s1", ssl: "no-verify" })
        expect(Redacted.isRedacted(parsed.right.password)).toBe(true)
        expect(String(parsed.right.password)).not.toContain(secret)
      }
    }))

  it.live("filtered vector search keeps its limit past the HNSW candidate list; hybrid fuses", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* VectorStore
      const dim = 16
      const c = yield* store.collection({ name: "hnsw", embedding: { model: "rand-16", dimension: dim }, fields: { group: "number" } })
      let seed = 7
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5
      const rows: Array<Chunk> = Array.from({ length: 600 }, (_, i) => ({
        id: `r${i}`,
        documentId: `doc${i % 50}`,
        text: `row ${i} ${i % 7 === 0 ? "seventh" : ""}`,
        vector: Array.from({ length: dim }, rand),
        metadata: { group: i % 20 }
      }))
      expect(yield* c.upsert(rows)).toEqual({ inserted: 600, updated: 0 })
      const hit = yield* c.searchVector(rows[123]!.vector!, { limit: 1 })
      expect(hit[0]?.id).toBe("r123")
      expect(hit[0]!.score).toBeCloseTo(1, 4)
      // 1 row in 20 matches: the index must keep scanning to fill the limit
      const filtered = yield* c.searchVector(rows[5]!.vector!, { limit: 25, filter: Filter.eq("group", 3) })
      expect(filtered.length).toBe(25)
      expect(filtered.every((h) => Number(h.id.slice(1)) % 20 === 3)).toBe(true)
      const many = yield* c.searchVector(rows[5]!.vector!, { limit: 150 })
      expect(many.length).toBe(150)
      const hybrid = yield* c.searchHybrid({ text: "seventh", vector: rows[14]!.vector! }, { limit: 5 })
      expect(hybrid[0]?.id).toBe("r14")
    }).pipe(Effect.provide(fresh()))))

  it.live("an embedding over pgvector's 2,000-dimension HNSW limit is stored and searched exactly", () =>
    Effect.scoped(Effect.gen(function*() {
      const dim = PostgresStore.maxIndexedDimension + 48
      const c = yield* (yield* VectorStore).collection({ name: "wide", embedding: { model: "wide", dimension: dim } })
      const unit = (i: number) => Array.from({ length: dim }, (_, j) => (j === i ? 1 : 0.01))
      yield* c.upsert([0, 1, 2047].map((i) => ({ id: `w${i}`, documentId: "W", text: `wide ${i}`, vector: unit(i) })))
      const hits = yield* c.searchVector(unit(2047), { limit: 3 })
      expect(hits.map((h) => h.id)).toEqual(["w2047", "w0", "w1"])
      expect(hits[0]!.score).toBeCloseTo(1, 4)
    }).pipe(Effect.provide(fresh()))))

  it.live("a writer killed with SIGKILL mid-upsert leaves whole transactions and consistent BM25 statistics; a rerun completes", () =>
    Effect.gen(function*() {
      const url = `${server.url}?schema=crash_${process.pid}`
      const runWriter = (killAfter: number | undefined) =>
        Effect.async<{ code: number | null; signal: string | null; out: string }>((resume) => {
          const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "test/store/postgres-crash-writer.ts"), url], {
            cwd: repoRoot,
            stdio: ["ignore", "pipe", "pipe"]
          })
          let out = ""
          child.stdout.on("data", (d: Buffer) => {
            out += d.toString()
            if (killAfter !== undefined && out.includes(`done ${killAfter} `)) child.kill("SIGKILL")
          })
          child.stderr.on("data", (d: Buffer) => (out += d.toString()))
          child.on("close", (code, signal) => resume(Effect.succeed({ code, signal, out })))
        })
      const killed = yield* runWriter(2)
      expect(killed.signal, killed.out).toBe("SIGKILL")
      const check = Effect.scoped(Effect.gen(function*() {
        const c = yield* (yield* VectorStore).open("crash")
        const n = yield* c.count()
        // whole transactions of 10 chunks (a document's 25 chunks are 10 + 10 + 5)
        const docs = yield* c.listDocuments()
        for (const d of docs) expect([10, 20, 25]).toContain(d.chunks)
        // the statistics BM25 uses agree with the rows: scores equal a fresh in-memory index's
        const rows = yield* c.searchText("crash document chunk", { limit: 2000 })
        expect(rows.length).toBe(n)
        const mem = yield* Effect.flatMap(VectorStore, (s) =>
          Effect.flatMap(s.collection({ name: "crash" }), (m) =>
            Effect.zipRight(
              m.upsert(rows.map((h) => ({ id: h.id, documentId: h.documentId, text: h.text, title: h.title }))),
              m.searchText("pumps valves document 3", { limit: 20 })
            ))).pipe(Effect.provide(MemoryStore.layer))
        const pg = yield* c.searchText("pumps valves document 3", { limit: 20 })
        expect(pg.map((h) => h.id)).toEqual(mem.map((h) => h.id))
        pg.forEach((h, i) => expect(h.score).toBeCloseTo(mem[i]!.score, 5))
        return n
      }).pipe(Effect.provide(PostgresStore.layerFromUrl(url))))
      const before = yield* check
      expect(before).toBeGreaterThanOrEqual(75)
      expect(before).toBeLessThan(1000)
      const rerun = yield* runWriter(undefined)
      expect(rerun.code, rerun.out).toBe(0)
      const inserted = rerun.out.trim().split("\n").map((l) => Number(l.split(" ")[2])).reduce((a, b) => a + b, 0)
      expect(inserted).toBe(1000 - before)
      expect(yield* check).toBe(1000)
    }))

  it.live("two processes upserting and deleting one collection at once lose nothing and count exactly", () =>
    Effect.gen(function*() {
      const schema = `procs_${process.pid}`
      const url = `${server.url}?schema=${schema}`
      yield* Effect.scoped(Effect.flatMap(VectorStore, (s) => s.collection(spec)).pipe(Effect.provide(PostgresStore.layerFromUrl(url))))
      const writer = (k: number) =>
        Effect.async<{ code: number | null; out: string }>((resume) => {
          const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "test/store/postgres-writer.ts"), url, String(k)], {
            cwd: repoRoot,
            stdio: ["ignore", "pipe", "pipe"]
          })
          let out = ""
          child.stdout.on("data", (d: Buffer) => (out += d.toString()))
          child.stderr.on("data", (d: Buffer) => (out += d.toString()))
          child.on("close", (code) => resume(Effect.succeed({ code, out })))
        })
      const results = yield* Effect.all([writer(1), writer(2)], { concurrency: 2 })
      for (const r of results) expect(r.code, r.out).toBe(0)
      const counts = results.map((r) => JSON.parse(r.out.trim().split("\n").at(-1)!) as { shared: { inserted: number; updated: number } })
      // the shared document: one writer inserted its 20 chunks, the other updated all 20 (texts differ)
      const shared = counts.map((c) => c.shared).sort((a, b) => b.inserted - a.inserted)
      expect(shared).toEqual([{ inserted: 20, updated: 0 }, { inserted: 0, updated: 20 }])
      yield* Effect.scoped(Effect.gen(function*() {
        const c = yield* (yield* VectorStore).open("contract")
        // each writer: 10 documents x 20 chunks, then deleted 5 of them; plus the shared 20
        expect(yield* c.count()).toBe(2 * 5 * 20 + 20)
        const docs = yield* c.listDocuments()
        expect(docs.length).toBe(2 * 5 + 1)
        expect(docs.every((d) => d.chunks === 20)).toBe(true)
        // the statistics BM25 uses agree with the rows
        const hits = yield* c.searchText("shared", { limit: 100 })
        expect(hits.length).toBe(20)
      }).pipe(Effect.provide(PostgresStore.layerFromUrl(url))))
    }))
})

describe("the ingest pipeline on PostgresStore", () => {
  it.live("ingests real documents, a second run writes nothing, a change replaces, prune deletes; retrieval finds them", () =>
    Effect.gen(function*() {
      const dir = tempDir("pg-ingest")
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const folder = join(dir, "docs")
      const paths = writeCorpus(folder, 6)
      const layer = Layer.mergeAll(LocalFiles.layer({ isolation: "inline" }), fresh())
      const request: Ingest.Request = { sources: [Ingest.Source.path(folder)], collection: "docs", prune: true }
      yield* Effect.gen(function*() {
        const first = yield* Ingest.run(request, { batchWindow: 50 })
        expect(first).toMatchObject({ ingested: 8, failed: 0 })
        expect(first.chunks.inserted).toBe(first.chunks.ingested)
        expect(first.chunks.ingested).toBeGreaterThan(8)
        const second = yield* Ingest.run(request, { batchWindow: 50 })
        expect(second).toMatchObject({ ingested: 0, skipped: 8, failed: 0, writes: 0 })
        expect(second.chunks).toMatchObject({ inserted: 0, updated: 0, deleted: 0, total: first.chunks.total })
        writeFileSync(paths[1]!, markdown(1, 30, 1))
        unlinkSync(paths[4]!)
        const third = yield* Ingest.run(request, { batchWindow: 50 })
        expect(third).toMatchObject({ ingested: 1, skipped: 6, pruned: 1, failed: 0 })
        const c = yield* (yield* VectorStore).open("docs")
        const docs = (yield* c.listDocuments()).map((d) => d.documentId)
        expect(docs).not.toContain(pathToFileURL(paths[4]!).href)
        expect(docs).toContain(pathToFileURL(paths[1]!).href)
        expect(docs.length).toBe(7)
        expect(yield* c.count()).toBe(third.chunks.total)
        // the default full-text mode (title boost, query expansion over termCounts)
        const hits = yield* Retrieve.retrieve(c, "document 1 revision 1", { limit: 3 })
        expect(hits[0]?.documentId).toBe(pathToFileURL(paths[1]!).href)
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.scoped))
})
