/**
 * Vector search of the in-memory adapter: exact cosine similarity over every row with a vector
 * that the filter and scope accept; ties by id.
 */
import * as Effect from "effect/Effect"
import { checkVector, type Hit, type SearchOptions } from "../../VectorStore.js"
import { accepting } from "./scope.js"
import { type CollectionState, normOf, toHit } from "./state.js"

/** The collection's `searchVector`. */
export const searchVector = (state: CollectionState, vector: Float32Array | ReadonlyArray<number>, options: SearchOptions = {}) =>
  Effect.gen(function*() {
    yield* checkVector(state.spec, vector)
    const accept = yield* accepting(state.spec, options.filter, options.scope)
    const q = Float32Array.from(vector)
    const qn = normOf(q) || 1
    const scored: Array<Hit> = []
    for (const r of state.rows.values()) {
      if (r.vector === undefined || !accept(r.chunk)) continue
      let dot = 0
      for (let i = 0; i < q.length; i++) dot += q[i]! * r.vector[i]!
      scored.push(toHit(r.chunk, dot / (qn * (r.norm || 1))))
    }
    scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    return scored.slice(0, Math.max(1, options.limit ?? 10))
  })
