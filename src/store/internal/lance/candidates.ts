/**
 * `Collection.textCandidates` of the LanceDB adapter, for a table of more than
 * `textCandidateRows` rows searched through LanceDB's index: one search of the index (plain BM25
 * over title + text, the query's best `depth` chunks under the filter and scope), then every
 * further query of the caller (the title boost, RM3's second pass of ~40 weighted words) scored
 * in memory over those candidates with the collection's term statistics (`stats.ts`): no second
 * index search of ~40 weighted clauses. Smaller tables answer `undefined`: the in-memory engine
 * or LanceDB's index is as cheap there, and the caller searches as usual.
 */
import type * as lancedb from "@lancedb/lancedb"
import * as Effect from "effect/Effect"
import { stem, stopWords, words } from "../../TextAnalysis.js"
import type { CandidateOptions, Hit, StoreError, TermCounts, TextCandidates, TextQuery, VectorStoreError } from "../../VectorStore.js"
import { weightedTerms } from "../bm25.js"
import { ftsQuery, records } from "./fulltext.js"
import { contentOf, hitColumns, toHit } from "./rows.js"
import { type StatsTableAccess, type StatsView, TermStats } from "./stats.js"
import type { LanceTable } from "./table.js"

/** First-pass candidates when the caller names no depth. */
export const defaultDepth = 25

const scoredColumns = [...hitColumns, "_score"]

/** The candidate search of one table handle. */
export class CandidateEngine {
  readonly stats: TermStats

  constructor(private readonly t: LanceTable, side?: StatsTableAccess, sampleRows?: number) {
    this.stats = new TermStats(t, side, sampleRows)
  }

  /** Whether a table of `rows` rows takes the candidate path (see the module doc). */
  private applies(rows: number): boolean {
    const { memoryIndexRows, textCandidateRows } = this.t.settings
    if (memoryIndexRows > 0 && rows <= memoryIndexRows) return false
    return rows > textCandidateRows
  }

  /**
   * Brings the term statistics up to date for the table's current size (drawn and persisted when
   * the side table's are missing or stale), so that the next fresh process only reads them; a
   * table below the bound is left alone. Run after an explicit `optimize()` (an ingest's end).
   */
  refresh(): Effect.Effect<void, StoreError> {
    return Effect.flatMap(this.stats.rows, (rows) => (this.applies(rows) ? Effect.asVoid(this.stats.current(rows)) : Effect.void))
  }

  /** The candidates of `query` (undefined: the table is small enough for the usual search). */
  candidates(query: TextQuery, options: CandidateOptions = {}): Effect.Effect<TextCandidates | undefined, VectorStoreError> {
    const t = this.t
    return Effect.gen(this, function*() {
      const predicate = yield* t.where(options.filter, options.scope)
      const tableRows = yield* this.stats.rows
      if (!this.applies(tableRows)) return undefined
      const q = ftsQuery(query, 0)
      const depth = Math.max(1, options.depth ?? defaultDepth)
      const rows = q === undefined ? [] : yield* t.attempt("textCandidates", async () => {
        let s = (t.table.search(q) as lancedb.Query).select(scoredColumns).limit(depth)
        if (predicate !== undefined) s = s.where(predicate)
        return records(await s.toArrow(), hitColumns)
      })
      const stats = rows.length === 0 ? undefined : yield* this.stats.current(tableRows)
      return scorer(rows, stats)
    }).pipe(Effect.withSpan("LanceDbStore.textCandidates", { attributes: { collection: t.spec.name } }))
  }
}

/** One candidate's analysed fields. */
interface Analysed {
  /** `content`'s terms (title + text) with their counts. */
  readonly content: Map<string, number>
  /** `content`'s kept words (no stop word, none too long) and their terms, in order: the first word giving each term, on demand. */
  readonly kept: ReadonlyArray<string>
  readonly keptTerms: ReadonlyArray<string>
  readonly contentLength: number
  /** undefined: no title (not in the title field, as LanceDB indexes no null). */
  readonly title: Map<string, number> | undefined
  readonly titleLength: number
}

/** A text's analysed terms in one pass (as `terms`): their counts and the words kept. */
const tally = (text: string) => {
  const counts = new Map<string, number>()
  const kept: Array<string> = []
  const keptTerms: Array<string> = []
  for (const w of words(text)) {
    if (w.length > 40 || stopWords.has(w)) continue
    const t = stem(w)
    counts.set(t, (counts.get(t) ?? 0) + 1)
    kept.push(w)
    keptTerms.push(t)
  }
  return { counts, kept, keptTerms }
}

const analyse = (r: Record<string, unknown>): Analysed => {
  const title = typeof r["title"] === "string" ? r["title"] : undefined
  // the `content` column's value, made as the adapter makes it (not read a second time)
  const content = tally(contentOf(title, String(r["text"] ?? "")))
  const titleTerms = title === undefined ? undefined : tally(title)
  return {
    content: content.counts,
    kept: content.kept,
    keptTerms: content.keptTerms,
    contentLength: content.kept.length,
    title: titleTerms?.counts,
    titleLength: titleTerms?.kept.length ?? 0
  }
}

/** The first word giving each term of a candidate (only the feedback hits' are asked for). */
const surfaceOf = (d: Analysed): Map<string, string> => {
  const surface = new Map<string, string>()
  d.keptTerms.forEach((t, i) => {
    if (!surface.has(t)) surface.set(t, d.kept[i]!)
  })
  return surface
}

/** The candidates' own statistics (no collection statistics: no candidate). */
const localStats = (docs: ReadonlyArray<Analysed>): StatsView => {
  const field = (f: "content" | "title") => {
    let present = 0
    let length = 0
    for (const d of docs) {
      if (d[f] === undefined) continue
      present++
      length += f === "content" ? d.contentLength : d.titleLength
    }
    return { rows: present, avgLength: length / Math.max(1, present) }
  }
  return { content: field("content"), title: field("title"), frequencies: () => Effect.succeed(() => 0) }
}

const k1 = 1.2
const b = 0.75
const part = (tf: number, length: number, avg: number) => (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * (length / Math.max(1e-9, avg))))

/**
 * A BM25 scorer over fetched rows with the collection's statistics: per query term,
 * `weight × (bm25(content) + titleBoost × bm25(title))`, each field with its own statistics, as
 * `FieldIndex` (`../bm25.ts`) and LanceDB score a whole collection (Lucene's IDF, k1 1.2, b 0.75).
 * A term's document frequency is never taken below its count among the candidates.
 */
export const scorer = (rows: ReadonlyArray<Record<string, unknown>>, stats: StatsView | undefined): TextCandidates => {
  const docs = rows.map(analyse)
  const fields = stats ?? localStats(docs)
  const idf = (field: "content" | "title", term: string, df: (field: "content" | "title", term: string) => number): number => {
    let here = 0
    for (const d of docs) if (d[field]?.has(term) === true) here++
    if (here === 0) return 0
    const n = Math.max(fields[field].rows, here)
    const f = Math.min(n, Math.max(here, df(field, term)))
    return Math.log(1 + (n - f + 0.5) / (f + 0.5))
  }
  const ids = rows.map((r) => String(r["id"]))
  const rowOf = new Map(ids.map((id, i) => [id, i]))
  const score = (weighted: ReadonlyArray<{ readonly term: string; readonly content: number; readonly title: number }>, limit: number): Array<Hit> => {
    const scored: Array<{ row: number; score: number }> = []
    docs.forEach((d, row) => {
      let total = 0
      let matched = false
      for (const x of weighted) {
        const tc = d.content.get(x.term)
        if (tc !== undefined) {
          matched = true
          total += x.content * part(tc, d.contentLength, fields.content.avgLength)
        }
        const tt = x.title > 0 ? d.title?.get(x.term) : undefined
        if (tt !== undefined) {
          matched = true
          total += x.title * part(tt, d.titleLength, fields.title.avgLength)
        }
      }
      if (matched) scored.push({ row, score: total })
    })
    // equal scores in id order, as the adapter's other searches
    scored.sort((x, y) => y.score - x.score || (ids[x.row]! < ids[y.row]! ? -1 : ids[x.row]! > ids[y.row]! ? 1 : 0))
    return scored.slice(0, limit).map((h) => toHit(rows[h.row]!, h.score))
  }
  const search = (query: TextQuery, limit: number, boost: number) => {
    const q = [...weightedTerms(query)]
    if (q.length === 0 || docs.length === 0) return Effect.succeed([])
    return Effect.map(fields.frequencies(q.map(([term]) => term)), (df) => {
      const weighted = q.map(([term, w]) => ({
        term,
        content: w * idf("content", term, df),
        title: boost > 0 ? w * boost * idf("title", term, df) : 0
      })).filter((x) => x.content > 0 || x.title > 0)
      return weighted.length === 0 ? [] : score(weighted, limit)
    })
  }
  return {
    search: (query, options = {}) => search(query, Math.max(1, options.limit ?? 10), options.titleBoost ?? 0),
    termCounts: (wanted) =>
      Effect.sync(() =>
        wanted.map((id): TermCounts | undefined => {
          const row = rowOf.get(id)
          if (row === undefined) return undefined
          const d = docs[row]!
          return { counts: d.content, words: surfaceOf(d), length: d.contentLength }
        })
      )
  }
}
