/**
 * Whole-collection reads of the in-memory adapter: count, the document list and scan, each over
 * the rows the filter and scope accept; and the lookup by id.
 */
import * as Effect from "effect/Effect"
import type { DocumentEntry, Filter, Hit, InvalidInput, ScopeOptions } from "../../VectorStore.js"
import { accepting } from "./scope.js"
import { compareIds, type CollectionState, type Row, toHit } from "./state.js"

/** The rows the filter and scope accept. */
const accepted = (state: CollectionState, filter: Filter | undefined, options: ScopeOptions): Effect.Effect<Array<Row>, InvalidInput> =>
  Effect.map(accepting(state.spec, filter, options.scope), (accept) => [...state.rows.values()].filter((r) => accept(r.chunk)))

/** The collection's `count`. */
export const count = (state: CollectionState, filter: Filter | undefined, options: ScopeOptions = {}) =>
  Effect.map(accepted(state, filter, options), (rows) => rows.length)

/** The collection's `listDocuments`: chunk counts by document id, sorted by id. */
export const listDocuments = (state: CollectionState, options: ScopeOptions = {}) =>
  Effect.map(accepted(state, undefined, options), (rows): ReadonlyArray<DocumentEntry> => {
    const counts = new Map<string, number>()
    for (const r of rows) counts.set(r.chunk.documentId, (counts.get(r.chunk.documentId) ?? 0) + 1)
    return [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([documentId, chunks]) => ({ documentId, chunks }))
  })

/** The collection's `get`: the chunks of these ids in the scope as hits of score 0, sorted by id. */
export const get = (state: CollectionState, ids: ReadonlyArray<string>, options: ScopeOptions = {}) =>
  Effect.map(accepting(state.spec, undefined, options.scope), (accept): ReadonlyArray<Hit> =>
    [...new Set(ids)].flatMap((id) => {
      const r = state.rows.get(id)
      return r !== undefined && accept(r.chunk) ? [toHit(r.chunk, 0)] : []
    }).sort((a, b) => compareIds(a.id, b.id)))

/** The collection's `scan`: the accepted chunks as hits of score 0, sorted by id. */
export const scan = (state: CollectionState, filter: Filter | undefined, options: ScopeOptions = {}) =>
  Effect.map(accepted(state, filter, options), (rows): ReadonlyArray<Hit> =>
    rows.map((r) => toHit(r.chunk, 0)).sort((a, b) => compareIds(a.id, b.id)))
