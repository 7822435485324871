/**
 * Full-text search of the PostgreSQL adapter. PostgreSQL has no BM25, so the adapter stores
 * each chunk's postings (see `write.ts`) and a search computes BM25 in SQL over the postings of
 * its terms, per field (`content` = title + text, and `title`), with the constants of the
 * in-memory index (`../bm25.ts`: `k1` 1.2, `b` 0.75, Lucene's IDF), so scores match the other
 * adapters'. Also the analysed terms of stored chunks (`termCounts`).
 */
import * as Effect from "effect/Effect"
import { weightedTerms } from "../bm25.js"
import { type Hit, requireFullText, type ScopeOptions, type TermCounts, type TextQuery, type TextSearchOptions } from "../../VectorStore.js"
import { toHit } from "./codec.js"
import { Params } from "./sql.js"
import { type CollectionState, run, where } from "./state.js"

const k1 = 1.2
const b = 0.75

/** float8 constants: a bare 1.2 is numeric in SQL, several times slower per posting. */
const f = (x: number) => `${x}::float8`

/**
 * The CTEs up to `sc(chunk_id, score)`: BM25 per field, as `../bm25.ts` scores it,
 * weight × idf × tf (k1 + 1) / (tf + k1 (1 − b + b · len / avg)), the title's times the boost.
 */
const scoredSql = (state: CollectionState, p: { terms: string; weights: string; boost: string; id: string; titles: boolean }) => `
        WITH q(term, w) AS (SELECT * FROM unnest(${p.terms}::text[], ${p.weights}::float8[])),
        st AS (SELECT n_chunks::float8 AS n0, content_total::float8 AS t0, n_titled::float8 AS n1, title_total::float8 AS t1
               FROM ${state.tables.collections} WHERE id = ${p.id}),
        hits AS (SELECT p.term, p.field, p.chunk_id, p.tf, p.len, q.w FROM ${state.tables.postings} p JOIN q ON p.term = q.term
                 WHERE p.field IN ${p.titles ? "(0, 1)" : "(0)"}),
        df AS (SELECT term, field, count(*)::float8 AS df FROM hits GROUP BY term, field),
        sc AS (
          SELECT h.chunk_id, sum(
            h.w * (CASE h.field WHEN 0 THEN ${f(1)} ELSE ${p.boost}::float8 END)
            * ln(${f(1)} + ((CASE h.field WHEN 0 THEN st.n0 ELSE st.n1 END) - df.df + ${f(0.5)}) / (df.df + ${f(0.5)}))
            * h.tf * ${f(k1 + 1)} / (h.tf + ${f(k1)} * (${f(1 - b)} + ${f(b)} * h.len
              / greatest(${f(1e-9)}, CASE h.field WHEN 0 THEN st.t0 / greatest(${f(1)}, st.n0) ELSE st.t1 / greatest(${f(1)}, st.n1) END)))
          ) AS score
          FROM hits h JOIN df ON df.term = h.term AND df.field = h.field CROSS JOIN st
          GROUP BY h.chunk_id)`

/** The whole statement: the scores, the best `limit` (past the condition), their rows. */
const searchSql = (state: CollectionState, scored: string, cond: string, limit: string) => {
  const chunks = state.tables.chunks
  // equal scores in id order (sums in another order differ in the last bits); the best
  // `limit` are chosen before the rows are read, past the filter when there is one
  const order = `ORDER BY round(sc.score * 1e9::float8) DESC, sc.chunk_id LIMIT ${limit}`
  const top = cond === "TRUE"
    ? `top AS (SELECT sc.chunk_id, sc.score FROM sc ${order})`
    : `top AS (SELECT sc.chunk_id, sc.score FROM sc JOIN ${chunks} c ON c.id = sc.chunk_id WHERE ${cond} ${order})`
  return `${scored}, ${top}
        SELECT c.id, c.document_id, c.title, c.text, c.metadata, top.score
        FROM top JOIN ${chunks} c ON c.id = top.chunk_id
        ORDER BY round(top.score * 1e9::float8) DESC, c.id`
}

/** The collection's `searchText`. */
export const searchText = (state: CollectionState, query: TextQuery, options: TextSearchOptions = {}) =>
  Effect.gen(function*() {
    yield* requireFullText(state.spec)
    const params = new Params()
    const q = weightedTerms(query)
    const terms = params.bind([...q.keys()])
    const weights = params.bind([...q.values()])
    const boost = Math.max(0, options.titleBoost ?? 0)
    const boostP = params.bind(boost)
    const id = params.bind(state.id)
    const cond = yield* where(state, options.filter, params, options.scope)
    if (q.size === 0) return [] as ReadonlyArray<Hit>
    const limit = params.bind(Math.max(1, options.limit ?? 10))
    const scored = scoredSql(state, { terms, weights, boost: boostP, id, titles: boost > 0 })
    const rows = yield* run(state, "searchText", searchSql(state, scored, cond, limit), params.values)
    return rows.rows.map((r) => toHit(r, Number(r["score"])))
  }).pipe(Effect.withSpan("PostgresStore.searchText", { attributes: { collection: state.spec.name } }))

/** The collection's `termCounts`: the content terms of stored chunks, in the read scope. */
export const termCounts = (state: CollectionState, ids: ReadonlyArray<string>, options: ScopeOptions = {}) =>
  Effect.gen(function*() {
    const params = new Params()
    const idsP = params.bind([...ids])
    const cond = yield* where(state, undefined, params, options.scope)
    return yield* run(
      state,
      "termCounts",
      `SELECT c.id, p.term, p.tf, p.word FROM ${state.tables.chunks} c LEFT JOIN ${state.tables.postings} p ON p.chunk_id = c.id AND p.field = 0
         WHERE c.id = ANY(${idsP}::text[]) AND ${cond}`,
      params.values
    )
  }).pipe(Effect.map((r) => {
    const byId = new Map<string, { counts: Map<string, number>; words: Map<string, string>; length: number }>()
    for (const row of r.rows) {
      const id = String(row["id"])
      let e = byId.get(id)
      if (e === undefined) byId.set(id, e = { counts: new Map(), words: new Map(), length: 0 })
      if (row["term"] === null) continue
      const tf = Number(row["tf"])
      e.counts.set(String(row["term"]), tf)
      e.words.set(String(row["term"]), String(row["word"]))
      e.length += tf
    }
    return ids.map((id): TermCounts | undefined => byId.get(id))
  }))
