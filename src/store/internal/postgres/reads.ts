/**
 * The plain reads and maintenance of a PostgreSQL collection: counts, the list of documents
 * (both in the read scope) and `optimize` (`VACUUM ANALYZE` of its tables).
 */
import * as Effect from "effect/Effect"
import type { DocumentEntry, Filter, ScopeOptions } from "../../VectorStore.js"
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

/** The collection's `optimize`. */
export const optimize = (state: CollectionState) =>
  Effect.gen(function*() {
    yield* run(state, "optimize", `VACUUM ANALYZE ${state.tables.chunks}`)
    yield* run(state, "optimize", `VACUUM ANALYZE ${state.tables.postings}`)
  })
