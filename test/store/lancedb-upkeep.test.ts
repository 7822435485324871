/**
 * Index upkeep across handles, on real LanceDB in a temp folder: each write below is made by a
 * fresh store (as each `effect-rag ingest` of one file is a fresh process), so only what the
 * table itself records (its index and fragment statistics) can tell the adapter that unindexed
 * rows or small fragments have piled up past `reindexAfter` / `maxFragments`, thresholds that
 * grow with the table past `reindexFraction` of its indexed rows.
 */
import { describe, expect, it } from "@effect/vitest"
import * as lancedb from "@lancedb/lancedb"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { type Chunk, VectorStore } from "../../src/store/VectorStore.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-upkeep-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const chunks = (from: number, count: number): Array<Chunk> =>
  Array.from({ length: count }, (_, k) => ({ id: `c${from + k}`, documentId: `d${from + k}`, text: `word${from + k} shared text` }))

/** One upsert through a fresh store (a new connection and handle, as a new process has). */
const writeFresh = (db: string, options: Partial<LanceDbStore.Options>, batch: ReadonlyArray<Chunk>) =>
  Effect.gen(function*() {
    const c = yield* (yield* VectorStore).collection({ name: "t" })
    yield* c.upsert(batch)
  }).pipe(Effect.provide(LanceDbStore.layer({ uri: db, memoryIndexRows: 0, ...options })))

/** What the table records: rows outside the `content` index, and its small fragments. */
const tableState = (db: string) =>
  Effect.promise(async () => {
    const connection = await lancedb.connect(db)
    try {
      const table = await connection.openTable("t")
      const unindexed = (await table.indexStats("content_idx"))?.numUnindexedRows
      return { unindexed, smallFragments: (await table.stats()).fragmentStats.numSmallFragments }
    } finally {
      connection.close()
    }
  })

describe("LanceDbStore upkeep across handles", () => {
  it.live("optimizes once the unindexed rows that earlier handles left reach reindexAfter", () =>
    Effect.gen(function*() {
      const db = join(root, "rows")
      const options = { reindexAfter: 30, maxFragments: 1_000 }
      yield* writeFresh(db, options, chunks(0, 20)) // creates the index: it covers these rows
      expect((yield* tableState(db)).unindexed).toBe(0)
      yield* writeFresh(db, options, chunks(20, 20)) // 20 unindexed: below 30, left
      expect((yield* tableState(db)).unindexed).toBe(20)
      yield* writeFresh(db, options, chunks(40, 20)) // 20 of this handle + 20 stored: 40, optimized
      expect((yield* tableState(db)).unindexed).toBe(0)
      // every row is found through the index
      const hits = yield* Effect.flatMap(VectorStore, (s) => s.open("t")).pipe(
        Effect.flatMap((c) => c.searchText("word25", { limit: 3 })),
        Effect.provide(LanceDbStore.layer({ uri: db, memoryIndexRows: 0 }))
      )
      expect(hits.map((h) => h.id)).toEqual(["c25"])
    }))

  it.live("compacts once the small fragments that earlier handles left pass maxFragments", () =>
    Effect.gen(function*() {
      const db = join(root, "fragments")
      const options = { reindexAfter: 1_000_000, maxFragments: 4 }
      const seen: Array<number> = []
      for (let i = 0; i < 6; i++) {
        yield* writeFresh(db, options, chunks(i, 1))
        seen.push((yield* tableState(db)).smallFragments)
      }
      // one fragment per write, until the fifth write finds 5 > 4 and compacts them (LanceDB
      // leaves two here); a handle that counted only its own writes would never reach 5
      expect(seen.slice(0, 4)).toEqual([1, 2, 3, 4])
      expect(seen[4]).toBeLessThanOrEqual(2)
      expect(seen[5]).toBe(seen[4]! + 1)
    }))

  it.live("lets the backlog grow with the table past reindexFraction of its indexed rows", () =>
    Effect.gen(function*() {
      // 200 indexed rows: at reindexFraction 0.5 the threshold is 100 rows, not reindexAfter's 30
      const unindexedAfterWrites = (db: string, reindexFraction: number) =>
        Effect.gen(function*() {
          const options = { reindexAfter: 30, maxFragments: 1_000, reindexFraction }
          yield* writeFresh(db, options, chunks(0, 200)) // creates the index over these rows
          const seen: Array<number | undefined> = []
          for (let i = 0; i < 4; i++) {
            yield* writeFresh(db, options, chunks(200 + 25 * i, 25))
            seen.push((yield* tableState(db)).unindexed)
          }
          return seen
        })
      // 25, 50, 75 unindexed rows are left; the fourth write brings 100 and optimizes
      expect(yield* unindexedAfterWrites(join(root, "growing"), 0.5)).toEqual([25, 50, 75, 0])
      // fixed thresholds (0): 50 ≥ 30 at every second write
      expect(yield* unindexedAfterWrites(join(root, "fixed"), 0)).toEqual([25, 0, 25, 0])
    }))
})
