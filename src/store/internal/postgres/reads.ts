/**
 * The plain reads and maintenance of a PostgreSQL collection: counts, the list of documents,
 * the lookup by id (all in the read scope) and `optimize` (`VACUUM ANALYZE` of its tables).
 */
import * as Effect from "effect/Effect"
import type { DocumentEntry, Filter, ScopeOptions } from "../../VectorStore.js"
import { toHit } from "./codec.js"
import { Params } from "./sql.js"
import { type CollectionState, run, where } from "./state.js"

/** The collection's `count`. */
export const count = (state: CollectionState, filter?: Filter, options: ScopeOptions = {}) =>
  Effect.gen(function*() {
    const params = new Params()
    const cond = yield* where(state, filter, params, options.scope)
    const r = yield* run(state, "count", `SELECT count(*) AS n FROM ${state.tables.chunks} WHERE ${cond}`, params.values)
    return Number(r.rows[0]!["n"])
  })

/** The collection's `listDocuments`. */
export const listDocuments = (state: CollectionState, options: ScopeOptions = {}) =>
  Effect.gen(function*() {
    const params = new Params()
    const cond = yield* where(state, undefined, params, options.scope)
    const r = yield* run(
      state,
      "listDocuments",
      `SELECT document_id, count(*) AS n FROM ${state.tables.chunks} WHERE ${cond} GROUP BY document_id ORDER BY document_id`,
      params.values
    )
    return r.rows.map((x): DocumentEntry => ({ documentId: String(x["document_id"]), chunks: Number(x["n"]) }))
  })

/** The collection's `get`: the chunks of these ids in the scope, score 0, sorted by id. */
export const get = (state: CollectionState, ids: ReadonlyArray<string>, options: ScopeOptions = {}) =>
  Effect.gen(function*() {
    if (ids.length === 0) return []
    const params = new Params()
    const cond = yield* where(state, undefined, params, options.scope)
    const r = yield* run(
      state,
      "get",
      `SELECT id, document_id, title, text, metadata FROM ${state.tables.chunks} WHERE id = ANY(${params.bind([...new Set(ids)])}::text[]) AND ${cond}`,
      params.values
    )
    return r.rows.map((x) => toHit(x, 0)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  })

/** The collection's `optimize`. */
export const optimize = (state: CollectionState) =>
  Effect.gen(function*() {
    yield* run(state, "optimize", `VACUUM ANALYZE ${state.tables.chunks}`)
    yield* run(state, "optimize", `VACUUM ANALYZE ${state.tables.postings}`)
  })
