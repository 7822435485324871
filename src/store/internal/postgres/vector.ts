/**
 * Vector search of the PostgreSQL adapter: cosine distance on the `vector` column. With an HNSW
 * index (`vector_cosine_ops`, embeddings of at most 2,000 dimensions) the search runs with
 * `hnsw.iterative_scan = strict_order` and `hnsw.ef_search` raised to the limit, in its own
 * transaction, so a filtered query still returns `limit` hits; without one it is exact.
 */
import * as Effect from "effect/Effect"
import { checkVector, type SearchOptions } from "../../VectorStore.js"
import { transaction } from "./client.js"
import { toHit } from "./codec.js"
import { Params, vectorLiteral } from "./sql.js"
import { type CollectionState, fail, run, where } from "./state.js"

/** The collection's `searchVector`. */
export const searchVector = (state: CollectionState, vector: Float32Array | ReadonlyArray<number>, options: SearchOptions = {}) =>
  Effect.gen(function*() {
    yield* checkVector(state.spec, vector)
    const params = new Params()
    const vP = params.bind(vectorLiteral(vector))
    const cond = yield* where(state, options.filter, params, options.scope)
    const limit = Math.max(1, options.limit ?? 10)
    const limitP = params.bind(limit)
    const sql = `SELECT id, document_id, title, text, metadata, 1 - (vector <=> ${vP}::vector) AS score
        FROM ${state.tables.chunks} WHERE ${cond} ORDER BY vector <=> ${vP}::vector LIMIT ${limitP}`
    const rows = yield* (state.indexed
      ? transaction(state.pool, fail(state, "searchVector"), async (c) => {
        // the index's candidate list as long as the limit; a filter keeps scanning until `limit` match
        await c.query(
          "SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'strict_order', true)",
          [String(Math.min(1000, Math.max(40, limit)))]
        )
        return c.query(sql, params.values)
      })
      : run(state, "searchVector", sql, params.values))
    // equal scores in id order, as the other adapters give them
    return rows.rows.map((r) => toHit(r, Number(r["score"])))
      .sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
  }).pipe(Effect.withSpan("PostgresStore.searchVector", { attributes: { collection: state.spec.name } }))
