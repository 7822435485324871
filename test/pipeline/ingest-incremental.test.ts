/**
 * One changed file of an ingested folder, ingested by naming the file (what `effect-rag ingest
 * DIR/sub/f.md` does), on real LanceDB in a temp folder: the run reads the stored state of that
 * document only (no whole-collection listing), replaces its chunks, leaves the end-of-run
 * `optimize()` out (a few rows) and the new text is still found at once through LanceDB's own
 * full-text index (rows written since its last update are searched flat); the same file again
 * writes nothing; a missing named file is pruned.
 */
import { afterAll, describe, expect, it } from "vitest"
import * as lancedb from "@lancedb/lancedb"
import { Effect, Layer } from "effect"
import { appendFileSync, rmSync, unlinkSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { type Collection, documentIdField, Filter, VectorStore } from "../../src/store/VectorStore.js"
import { dumpTable, tempDir, writeCorpus } from "./fixtures/ingest-helpers.js"

const roots: Array<string> = []
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})

/** Whole-collection listings (`listDocuments`) the run made, by collection. */
type Listings = Map<string, number>

/** The LanceDB store, its collections' `listDocuments` counted. */
const countingStore = (db: string, listings: Listings, options: Partial<LanceDbStore.Options> = {}) =>
  Layer.effect(
    VectorStore,
    Effect.map(VectorStore, (store) => {
      const wrap = (c: Collection): Collection => ({
        ...c,
        listDocuments: (o) => {
          listings.set(c.spec.name, (listings.get(c.spec.name) ?? 0) + 1)
          return c.listDocuments(o)
        }
      })
      return { ...store, collection: (spec) => Effect.map(store.collection(spec), wrap), open: (n) => Effect.map(store.open(n), wrap) }
    })
  ).pipe(Layer.provide(LanceDbStore.layer({ uri: db, memoryIndexRows: 0, ...options })))

const run = (db: string, request: Ingest.Request, options: Partial<LanceDbStore.Options> = {}) =>
  Effect.runPromise(Effect.gen(function*() {
    const listings: Listings = new Map()
    const summary = yield* Ingest.run(request, { batchWindow: 50 }).pipe(
      Effect.provide(Layer.mergeAll(LocalFiles.layer({ isolation: "inline" }), countingStore(db, listings, options)))
    )
    return { summary, listings }
  }))

/** What a fresh handle (LanceDB's full-text index, not the in-memory one) finds for a word, and a document's chunk count. */
const look = (db: string, word: string, documentId: string) =>
  Effect.runPromise(Effect.gen(function*() {
    const c = yield* (yield* VectorStore).open("docs")
    const hits = yield* c.searchText(word, { limit: 5 })
    const chunks = yield* c.count(Filter.eq(documentIdField, documentId))
    return { documents: [...new Set(hits.map((h) => h.documentId))], chunks }
  }).pipe(Effect.provide(LanceDbStore.layer({ uri: db, memoryIndexRows: 0 }))))

/** The rows LanceDB's `content` full-text index does not cover yet, and the indexed columns. */
const indexState = async (db: string): Promise<{ unindexed: number; columns: Array<string> }> => {
  const connection = await lancedb.connect(db)
  try {
    const table = await connection.openTable("docs")
    const unindexed = (await table.indexStats("content_idx"))?.numUnindexedRows ?? Number.NaN
    return { unindexed, columns: (await table.listIndices()).flatMap((i) => i.columns).sort() }
  } finally {
    connection.close()
  }
}
const unindexedRows = async (db: string): Promise<number> => (await indexState(db)).unindexed

describe("Ingest: one changed file of a folder", () => {
  for (const [name, options] of [
    ["default thresholds", {}],
    ["with the id and document_id BTREE indexes", { idIndexThreshold: 0 }]
  ] as const) {
    it(`is replaced, searchable at once, without a whole-collection read or optimize (${name})`, async () => {
      const dir = tempDir("incremental")
      roots.push(dir)
      const folder = join(dir, "docs")
      const db = join(dir, "db")
      const paths = writeCorpus(folder, 12, 4)
      const first = await run(db, { sources: [Ingest.Source.path(folder)], collection: "docs" }, options)
      expect(first.summary).toMatchObject({ failed: 0, skipped: 0 })
      expect(first.summary.ingested).toBeGreaterThan(10)
      // a folder run compares against every stored document: it lists both collections
      expect(first.listings.get("docs")).toBe(1)
      expect(first.listings.get(Ingest.manifestName("docs"))).toBe(1)
      expect(await indexState(db)).toEqual({
        unindexed: 0, // a folder's first ingest ends with optimize
        columns: "idIndexThreshold" in options ? ["content", "document_id", "id", "title"] : ["content", "title"]
      })

      const file = paths.find((p) => p.endsWith("doc-03.md"))!
      const id = pathToFileURL(file).href
      const before = await dumpTable(db, "docs")
      const oldIds = before.filter((r) => r.documentId === id).map((r) => r.id)
      expect(oldIds.length).toBeGreaterThan(0)
      appendFileSync(file, "\n\nA zebracorn grazes by the river.\n")

      const one = await run(db, { sources: [Ingest.Source.path(file)], collection: "docs" }, options)
      expect(one.summary).toMatchObject({ documents: 1, ingested: 1, skipped: 0, failed: 0 })
      expect(one.summary.chunks.deleted).toBe(oldIds.length)
      expect(one.listings.size).toBe(0) // the state of that one document only
      // no optimize after a few rows: the new rows are outside the index, and still found
      expect(await unindexedRows(db)).toBeGreaterThan(0)
      const seen = await look(db, "zebracorn", id)
      expect(seen.documents).toEqual([id])
      expect(seen.chunks).toBe(one.summary.chunks.ingested)
      const after = await dumpTable(db, "docs")
      expect(after.filter((r) => oldIds.includes(r.id))).toEqual([])
      // every other document is untouched, and the manifest seals the new generation
      const others = (rows: typeof before) => rows.filter((r) => r.documentId !== id)
      expect(others(after)).toEqual(others(before))
      const marker = (await dumpTable(db, Ingest.manifestName("docs"))).find((m) => m.id === id)!
      expect(JSON.parse(marker.documentId)).toEqual(expect.arrayContaining([id, one.summary.chunks.ingested]))

      // the same file again: skipped, nothing written; a folder rerun skips it too
      const again = await run(db, { sources: [Ingest.Source.path(file)], collection: "docs" }, options)
      expect(again.summary).toMatchObject({ ingested: 0, skipped: 1, writes: 0 })
      expect(again.listings.size).toBe(0)
      const folderAgain = await run(db, { sources: [Ingest.Source.path(folder)], collection: "docs" }, options)
      expect(folderAgain.summary).toMatchObject({ ingested: 0, failed: 0, writes: 0, skipped: first.summary.ingested })

      // a named file that is gone, with prune: its chunks and marker go, the rest stays
      unlinkSync(file)
      const gone = await run(db, { sources: [Ingest.Source.path(file)], collection: "docs", prune: true }, options)
      expect(gone.summary).toMatchObject({ pruned: 1, failed: 1 })
      expect(gone.listings.size).toBe(0)
      expect((await look(db, "zebracorn", id))).toEqual({ documents: [], chunks: 0 })
      expect((await dumpTable(db, Ingest.manifestName("docs"))).some((m) => m.id === id)).toBe(false)
      expect(others(await dumpTable(db, "docs"))).toEqual(others(before))
    })
  }
})
