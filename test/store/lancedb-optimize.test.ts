import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { type Chunk, VectorStore } from "../../src/store/VectorStore.js"

// The LanceDB release the package takes must survive what re-ingesting does to the full-text
// index: documents deleted (so some words leave the index entirely), new ones written, then
// `optimize`, which folds the new rows into the index. LanceDB 0.30.0 (lance-index 7.0.0) panics
// there ("index out of bounds", scalar/inverted/builder.rs:856) on the second or third round.
const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-optimize-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

// ten chunks per document; every chunk has a word of its own, every document a shared one
const documentChunks = (doc: number): Array<Chunk> =>
  Array.from({ length: 10 }, (_, i) => ({
    id: `d${doc}-c${i}`,
    documentId: `d${doc}`,
    title: `title${doc}`,
    text: `uniq${doc}x${i} group${doc % 5} common`
  }))
const documents = (from: number, count: number) => Array.from({ length: count }, (_, k) => documentChunks(from + k)).flat()

describe("LanceDbStore optimize after deletes", () => {
  it.live("rounds of delete, write and optimize keep the native full-text index whole", () =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "churn" })
      yield* c.upsert(documents(0, 100))
      yield* c.optimize()
      let next = 100
      let expected = 1000
      for (let round = 0; round < 6; round++) {
        // ten documents gone: their own words leave the index
        const gone = Array.from({ length: 10 }, (_, k) => `d${round * 10 + k}`)
        expect(yield* c.deleteDocuments(gone)).toBe(100)
        yield* c.upsert(documents(next, 30))
        next += 30
        expected += 300 - 100
        yield* c.optimize()
        // a few more written and deleted before the next optimize
        yield* c.upsert(documents(next, 5))
        expect(yield* c.deleteDocuments([`d${next + 3}`, `d${next + 4}`])).toBe(20)
        next += 5
        expected += 30
        yield* c.optimize()
        expect(yield* c.count()).toBe(expected)
        // a deleted document's word is gone, a new one's is found, the shared word still ranks
        expect(yield* c.searchText(`uniq${round * 10}x0`, { limit: 5 })).toEqual([])
        expect((yield* c.searchText(`uniq${next - 3}x7`, { limit: 5 }))[0]?.id).toBe(`d${next - 3}-c7`)
        expect((yield* c.searchText("common", { limit: 3 })).length).toBe(3)
      }
    }).pipe(Effect.provide(LanceDbStore.layer({ uri: join(root, "db"), memoryIndexRows: 0, reindexAfter: 1_000_000 })))))
})
