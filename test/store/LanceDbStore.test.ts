import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { type Chunk, Filter, VectorStore } from "../../src/store/VectorStore.js"
import { axis, contract, corpus, spec } from "../../src/store/VectorStoreContract.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshDir = () => join(root, `db${n++}`)

contract("lancedb", () => LanceDbStore.layer({ uri: freshDir() }))
// full text through LanceDB's own index (what collections above `memoryIndexRows` use)
contract("lancedb, native full-text index", () => LanceDbStore.layer({ uri: freshDir(), memoryIndexRows: 0 }))

const chunksOf = (doc: number, count: number, tag = ""): Array<Chunk> =>
  Array.from({ length: count }, (_, i) => ({
    id: `d${doc}-c${i}`,
    documentId: `d${doc}`,
    title: `Document ${doc}`,
    text: `chunk ${i} of document ${doc} about topic${doc % 5} ${tag}`,
    vector: axis(doc, i / count),
    metadata: { lang: doc % 2 === 0 ? "en" : "fr", year: 2000 + doc }
  }))

describe("LanceDbStore", () => {
  it.live("reopens a collection from disk with its spec, rows and indexes", () =>
    Effect.gen(function*() {
      const uri = freshDir()
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
      // a new layer, a new connection: everything comes from disk
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const c = yield* store.open("contract")
        expect(c.spec.embedding).toEqual({ model: "test-4d", dimension: 4 })
        expect(c.spec.fields).toEqual(spec.fields)
        expect(yield* c.count()).toBe(6)
        expect((yield* c.searchText("wild yeast", { limit: 1 }))[0]?.id).toBe("b1")
        expect((yield* c.searchVector(axis(2), { limit: 1 }))[0]?.id).toBe("c1")
        const mismatch = yield* Effect.exit(store.collection({ ...spec, embedding: { model: "test-4d", dimension: 8 } }))
        expect(Exit.isFailure(mismatch) && JSON.stringify(mismatch.cause)).toContain("EmbeddingMismatch")
        const missing = yield* Effect.exit(store.open("nope"))
        expect(Exit.isFailure(missing) && JSON.stringify(missing.cause)).toContain("CollectionNotFound")
        const lance = yield* LanceDbStore.LanceDbStore
        const table = yield* Effect.promise(() => lance.connection.openTable("contract"))
        const indexed = (yield* Effect.promise(() => table.listIndices())).flatMap((i) => i.columns)
        expect(indexed).toEqual(expect.arrayContaining(["content", "title"]))
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
    }))

  it.live("indexes `id` and `document_id` (BTREE, kept by optimize) from idIndexThreshold rows; a collection with fullText: false gets no full-text index", () =>
    Effect.gen(function*() {
      const uri = freshDir()
      const indexes = (name: string) =>
        Effect.flatMap(LanceDbStore.LanceDbStore, (lance) =>
          Effect.promise(async () => {
            const table = await lance.connection.openTable(name)
            return { columns: (await table.listIndices()).flatMap((i) => i.columns).sort(), id: await table.indexStats("id_idx") }
          }))
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const main = yield* store.collection(spec)
        yield* main.upsert(corpus)
        expect((yield* indexes("contract")).columns).toEqual(["content", "document_id", "id", "title"])
        // below the default threshold (100,000 rows): no id index
        const small = yield* Effect.provide(
          Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.collection({ ...spec, name: "small" }), (c) => c.upsert(corpus))),
          LanceDbStore.layer({ uri })
        )
        expect(small.inserted).toBe(6)
        expect((yield* indexes("small")).columns).toEqual(["content", "title"])
        const books = yield* store.collection({ name: "books", fullText: false })
        yield* books.upsert(chunksOf(1, 20).map(({ vector: _v, ...c }) => c))
        yield* books.upsert(chunksOf(2, 20).map(({ vector: _v, ...c }) => c))
        const before = yield* indexes("books")
        expect(before.columns).toEqual(["document_id", "id"])
        expect(before.id?.numUnindexedRows).toBe(20)
        // a write after the index: the merge-insert still finds the rows it did not index
        expect(yield* books.upsert(chunksOf(2, 20).map(({ vector: _v, ...c }) => ({ ...c, text: c.text + " v2" })))).toEqual({ inserted: 0, updated: 20 })
        yield* books.optimize()
        const after = yield* indexes("books")
        expect(after.columns).toEqual(["document_id", "id"])
        expect(after.id?.numUnindexedRows).toBe(0)
        expect(after.id?.numIndexedRows).toBe(40)
      }).pipe(Effect.provide(LanceDbStore.layer({ uri, idIndexThreshold: 0 }))))
      // from disk: the spec keeps fullText: false
      yield* Effect.scoped(Effect.gen(function*() {
        const books = yield* Effect.flatMap(VectorStore, (store) => store.open("books"))
        expect(books.spec.fullText).toBe(false)
        expect(yield* books.count()).toBe(40)
        expect(Exit.isFailure(yield* Effect.exit(books.searchText("chunk")))).toBe(true)
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
    }))

  it.live("writes in bounded batches and keeps the full-text index current", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection(spec)
      // 3 batches of 16, then new rows past reindexAfter trigger an index update
      const first = yield* c.upsert(Array.from({ length: 6 }, (_, d) => chunksOf(d, 8)).flat())
      expect(first.inserted).toBe(48)
      yield* c.upsert(chunksOf(100, 40, "zebra"))
      const lance = yield* LanceDbStore.LanceDbStore
      const table = yield* Effect.promise(() => lance.connection.openTable("contract"))
      const stats = yield* Effect.promise(() => table.indexStats("content_idx"))
      expect(stats?.numUnindexedRows).toBe(0)
      expect((yield* c.searchText("zebra", { limit: 100 })).length).toBe(40)
      const versions = yield* Effect.promise(() => table.listVersions())
      expect(versions.length).toBeGreaterThan(3)
    }).pipe(Effect.provide(LanceDbStore.layer({ uri: freshDir(), batchSize: 16, reindexAfter: 30 })))))

  it.live("concurrent writers (two connections) lose nothing: merge-insert, delete, upsert races", () =>
    Effect.gen(function*() {
      const uri = freshDir()
      const writer = (k: number) =>
        Effect.scoped(Effect.gen(function*() {
          const store = yield* VectorStore
          const c = yield* store.collection(spec)
          for (let round = 0; round < 3; round++) {
            yield* c.upsert(chunksOf(k * 10 + round, 5))
          }
          // re-upsert an overlapping document both writers touch
          yield* c.upsert(chunksOf(999, 5, `writer${k}`))
        }).pipe(Effect.provide(LanceDbStore.layer({ uri, batchSize: 2 }))))
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        yield* store.collection(spec)
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
      yield* Effect.all([writer(1), writer(2), writer(3), writer(4)], { concurrency: "unbounded" })
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const c = yield* store.open("contract")
        // 4 writers x 3 docs x 5 chunks + 5 shared chunks, no duplicates
        expect(yield* c.count()).toBe(65)
        expect((yield* c.listDocuments()).find((d) => d.documentId === "d999")?.chunks).toBe(5)
        // concurrent deletes and upserts
        yield* Effect.all([
          c.deleteDocuments(["d10", "d20"]),
          c.deleteWhere(Filter.eq("documentId", "d30")),
          c.upsert(chunksOf(500, 5)),
          c.deleteDocuments(["d40"])
        ], { concurrency: "unbounded" })
        expect(yield* c.count()).toBe(65 - 20 + 5)
        yield* c.optimize()
        expect(yield* c.count()).toBe(50)
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
    }))

  it.live("builds a cosine vector index at the threshold and still finds neighbours", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* VectorStore
      const dim = 16
      const c = yield* store.collection({ name: "indexed", embedding: { model: "rand-16", dimension: dim } })
      let seed = 7
      const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5
      const rows: Array<Chunk> = Array.from({ length: 600 }, (_, i) => ({
        id: `r${i}`,
        documentId: `doc${i % 50}`,
        text: `row ${i}`,
        vector: Array.from({ length: dim }, rand)
      }))
      yield* c.upsert(rows)
      const lance = yield* LanceDbStore.LanceDbStore
      const table = yield* Effect.promise(() => lance.connection.openTable("indexed"))
      const ix = (yield* Effect.promise(() => table.listIndices())).find((i) => i.columns.includes("vector"))
      expect(ix?.indexType).toMatch(/HNSW/i)
      const hit = yield* c.searchVector(rows[123]!.vector!, { limit: 1 })
      expect(hit[0]?.id).toBe("r123")
    }).pipe(Effect.provide(LanceDbStore.layer({ uri: freshDir(), vectorIndexThreshold: 512 })))))

  it.live("a layer without the folder creates it; the connection closes with the scope", () =>
    Effect.gen(function*() {
      const uri = join(freshDir(), "nested", "db")
      const names = yield* Effect.scoped(Effect.flatMap(VectorStore, (s) => s.list()).pipe(
        Effect.provide(Layer.fresh(LanceDbStore.layer({ uri })))
      ))
      expect(names).toEqual([])
    }))
})
