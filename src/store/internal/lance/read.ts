/**
 * The reads of one table that need no state of their own: vector search (flat cosine, or the
 * `IVF_HNSW_SQ` index once built), counts, the document listing, the lookup by id and the scan.
 */
import * as Effect from "effect/Effect"
import * as Filters from "../filter.js"
import {
  checkVector,
  type DocumentEntry,
  type Filter,
  type Hit,
  type ScopeOptions,
  type SearchOptions,
  type VectorStoreError
} from "../../VectorStore.js"
import { hitColumns, toHit } from "./rows.js"
import type { LanceTable } from "./table.js"

/** The `limit` nearest rows by cosine, under the options' filter and scope. */
export const searchVector = (t: LanceTable, vector: Float32Array | ReadonlyArray<number>, options: SearchOptions = {}) =>
  Effect.gen(function*() {
    yield* checkVector(t.spec, vector)
    const predicate = yield* t.where(options.filter, options.scope)
    const limit = Math.max(1, options.limit ?? 10)
    const rows = yield* t.attempt("searchVector", () => {
      let s = t.table.vectorSearch(Array.from(vector)).distanceType("cosine").select([...hitColumns, "_distance"]).limit(limit)
      if (predicate !== undefined) s = s.where(predicate)
      return s.toArray() as Promise<Array<Record<string, unknown>>>
    })
    return rows.map((r) => toHit(r, 1 - Number(r["_distance"] ?? 1)))
  }).pipe(Effect.withSpan("LanceDbStore.searchVector", { attributes: { collection: t.spec.name } }))

/** The rows a filter and scope match. */
export const count = (t: LanceTable, filter?: Filter, options: ScopeOptions = {}): Effect.Effect<number, VectorStoreError> =>
  t.where(filter, options.scope).pipe(Effect.flatMap((sql) => t.attempt("count", () => t.table.countRows(sql))))

/** The documents and their chunk counts, in document id order. */
export const listDocuments = (t: LanceTable, options: ScopeOptions = {}): Effect.Effect<Array<DocumentEntry>, VectorStoreError> =>
  Effect.flatMap(t.where(undefined, options.scope), (predicate) => t.attempt("listDocuments", async () => {
    const counts = new Map<string, number>()
    const q = t.table.query().select(["document_id"])
    for await (const batch of predicate === undefined ? q : q.where(predicate)) {
      const col = batch.getChild("document_id")
      if (col === null) continue
      for (let i = 0; i < batch.numRows; i++) {
        const id = String(col.get(i))
        counts.set(id, (counts.get(id) ?? 0) + 1)
      }
    }
    return [...counts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([documentId, chunks]): DocumentEntry => ({ documentId, chunks }))
  }))

/** The rows a predicate matches (every row: undefined), as hits of score 0 in id order. */
const hitsWhere = (t: LanceTable, op: string, predicate: string | undefined): Effect.Effect<Array<Hit>, VectorStoreError> =>
  Effect.map(
    t.attempt(op, () => {
      let q = t.table.query().select([...hitColumns])
      if (predicate !== undefined) q = q.where(predicate)
      return q.toArray() as Promise<Array<Record<string, unknown>>>
    }),
    (rows) => rows.map((r) => toHit(r, 0)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  )

/** The rows of these ids in the scope, as hits of score 0 in id order (the `id` BTREE serves it once built). */
export const get = (t: LanceTable, ids: ReadonlyArray<string>, options: ScopeOptions = {}): Effect.Effect<Array<Hit>, VectorStoreError> =>
  Effect.gen(function*() {
    if (ids.length === 0) return []
    const scope = yield* t.where(undefined, options.scope)
    const byId = Filters.toSql({ _tag: "In", field: "__id", values: [...new Set(ids)] })
    return yield* hitsWhere(t, "get", scope === undefined ? byId : `(${byId} AND ${scope})`)
  })

/** Every row a filter and scope match, as hits of score 0 in id order. */
export const scan = (t: LanceTable, filter?: Filter, options: ScopeOptions = {}): Effect.Effect<Array<Hit>, VectorStoreError> =>
  Effect.flatMap(t.where(filter, options.scope), (predicate) => hitsWhere(t, "scan", predicate))
