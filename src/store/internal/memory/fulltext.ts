/**
 * Full text of the in-memory adapter: the BM25 index of `internal/bm25.ts` over title + text
 * plus a boosted title, built from the rows on the first search after a change; ties by id.
 */
import * as Effect from "effect/Effect"
import { FieldIndex, weightedTerms } from "../bm25.js"
import { requireFullText, type ScopeOptions, type TermCounts, type TextQuery, type TextSearchOptions } from "../../VectorStore.js"
import { accepting } from "./scope.js"
import { compareIds, type CollectionState, type TextIndex, toHit } from "./state.js"

/** The full-text index of the rows as they are (built now when stale, kept in the state). */
export const textIndex = (state: CollectionState): TextIndex => {
  if (state.text === undefined) {
    const order = [...state.rows.values()]
    const index = FieldIndex.build(order.map(({ chunk }) => ({
      title: chunk.title,
      content: chunk.title === undefined || chunk.title === "" ? chunk.text : `${chunk.title}\n${chunk.text}`
    })))
    state.text = { index, order, rowOf: new Map(order.map((r, i) => [r.chunk.id, i])) }
  }
  return state.text
}

/** The collection's `searchText`. */
export const searchText = (state: CollectionState, query: TextQuery, options: TextSearchOptions = {}) =>
  Effect.gen(function*() {
    yield* requireFullText(state.spec)
    const accept = yield* accepting(state.spec, options.filter, options.scope)
    const q = weightedTerms(query)
    if (q.size === 0) return []
    const { index, order } = textIndex(state)
    const byId = (a: number, b: number) => compareIds(order[a]!.chunk.id, order[b]!.chunk.id)
    return index.search(q, options.titleBoost ?? 0, Math.max(1, options.limit ?? 10), (row) => accept(order[row]!.chunk), byId)
      .map((h) => toHit(order[h.row]!.chunk, h.score))
  })

/** The collection's `termCounts`: the analysed content terms of each id readable in the scope. */
export const termCounts = (state: CollectionState, ids: ReadonlyArray<string>, options: ScopeOptions = {}) =>
  Effect.map(accepting(state.spec, undefined, options.scope), (accept): ReadonlyArray<TermCounts | undefined> => {
    const { index, order, rowOf } = textIndex(state)
    return ids.map((id) => {
      const row = rowOf.get(id)
      return row === undefined || !accept(order[row]!.chunk) ? undefined : index.contentTerms(row)
    })
  })
