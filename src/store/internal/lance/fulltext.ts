/**
 * Full-text search against LanceDB's own BM25 indexes (`content`, and `title` for the boost):
 * a query as the fewest match clauses that score it, and the search.
 */
import * as lancedb from "@lancedb/lancedb"
import type * as Arrow from "apache-arrow"
import * as Effect from "effect/Effect"
import { analyze } from "../../TextAnalysis.js"
import type { Hit, StoreError, TextQuery } from "../../VectorStore.js"
import { byScoreThenId, hitColumns, toHit } from "./rows.js"
import type { LanceTable } from "./table.js"

/** Each analysed term once, with the sum of its weights (undefined: no term left). */
const termWeights = (query: TextQuery): ReadonlyArray<{ readonly text: string; readonly weight: number }> | undefined => {
  const parts: ReadonlyArray<{ text: string; weight: number }> = typeof query === "string"
    ? [{ text: query, weight: 1 }]
    : query.terms.filter((t) => t.weight > 0)
  // Each term once, with the sum of its weights: a word the query repeats counts as often as it
  // appears, as in the in-memory index (LanceDB releases differ on whether one match counts a
  // repeated word once or each time). Words the analyzer drops are left out (a match of
  // dropped words alone makes LanceDB fail).
  const byTerm = new Map<string, { word: string; weight: number }>()
  for (const p of parts) {
    for (const t of analyze(p.text)) {
      const e = byTerm.get(t.term)
      if (e === undefined) byTerm.set(t.term, { word: t.word, weight: p.weight })
      else e.weight += p.weight
    }
  }
  if (byTerm.size === 0) return undefined
  // Words of one weight go in one match: a match of several words scores the sum of theirs, and
  // LanceDB's time grows with the clauses of a boolean query.
  const groups = new Map<number, Array<string>>()
  for (const { word, weight } of byTerm.values()) {
    const g = groups.get(weight)
    if (g === undefined) groups.set(weight, [word])
    else g.push(word)
  }
  return [...groups].map(([weight, texts]) => ({ text: texts.join(" "), weight }))
}

/** The LanceDB query of a text query (undefined: nothing to search for). */
export const ftsQuery = (query: TextQuery, titleBoost: number): lancedb.FullTextQuery | undefined => {
  const matches = termWeights(query)
  if (matches === undefined) return undefined
  // one clause: a plain match (a boolean query of one clause costs LanceDB about 1.6× as much)
  if (matches.length === 1 && titleBoost <= 0) return new lancedb.MatchQuery(matches[0]!.text, "content", { boost: matches[0]!.weight })
  const clauses: Array<[lancedb.Occur, lancedb.FullTextQuery]> = []
  for (const p of matches) {
    clauses.push([lancedb.Occur.Should, new lancedb.MatchQuery(p.text, "content", { boost: p.weight })])
    if (titleBoost > 0) {
      clauses.push([lancedb.Occur.Should, new lancedb.MatchQuery(p.text, "title", { boost: p.weight * titleBoost })])
    }
  }
  return new lancedb.BooleanQuery(clauses)
}

const scoredColumns = [...hitColumns, "_score"]

/** Plain rows of an Arrow result, each column decoded once. */
export const records = (result: Arrow.Table, columns: ReadonlyArray<string>): Array<Record<string, unknown>> => {
  const vectors = columns.map((c) => [c, result.getChild(c)] as const)
  const out: Array<Record<string, unknown>> = []
  for (let i = 0; i < result.numRows; i++) {
    const r: Record<string, unknown> = {}
    for (const [c, v] of vectors) r[c] = v === null ? null : v.get(i)
    out.push(r)
  }
  return out
}

/** The best `limit` hits of LanceDB's full-text index under `predicate`. */
export const searchIndex = (
  t: LanceTable,
  query: TextQuery,
  options: { readonly titleBoost?: number | undefined; readonly limit?: number | undefined },
  predicate: string | undefined
): Effect.Effect<ReadonlyArray<Hit>, StoreError> => {
  const q = ftsQuery(query, options.titleBoost ?? 0)
  if (q === undefined) return Effect.succeed([])
  const limit = Math.max(1, options.limit ?? 10)
  return t.attempt("searchText", async () => {
    let s = (t.table.search(q) as lancedb.Query).select(scoredColumns).limit(limit)
    if (predicate !== undefined) s = s.where(predicate)
    // the Arrow result decoded column by column (the row objects of `toArray` decode on every read)
    return records(await s.toArrow(), scoredColumns)
  }).pipe(Effect.map((rows) => rows.map((r) => toHit(r, Number(r["_score"] ?? 0))).sort(byScoreThenId)))
}
