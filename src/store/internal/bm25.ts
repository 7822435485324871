/**
 * The in-memory full-text index: the LanceDB adapter's engine for small collections and the
 * in-memory store's (see {@link FieldIndex}).
 */
import type { TermCounts, TextQuery } from "../VectorStore.js"
import { stem, stopWords, terms, words } from "../TextAnalysis.js"

/** A weighted query: stemmed term -> weight. */
export type WeightedQuery = ReadonlyMap<string, number>

/**
 * The weighted stemmed terms of a query, as LanceDB's analyzer would see them: a text's words
 * weight 1 each, a weighted word its weight, and a repeated word counts again.
 */
export const weightedTerms = (query: TextQuery): Map<string, number> => {
  const q = new Map<string, number>()
  const parts = typeof query === "string" ? [{ text: query, weight: 1 }] : query.terms
  for (const p of parts) {
    if (!(p.weight > 0)) continue
    for (const t of terms(p.text)) q.set(t, (q.get(t) ?? 0) + p.weight)
  }
  return q
}

// =============================================================================
// Field index: BM25 per field, summed (the LanceDB adapter's small collections, the in-memory store)
// =============================================================================

/** One row of a {@link FieldIndex}: the text BM25 scores (title + text) and the title alone. */
export interface FieldDoc {
  readonly content: string
  readonly title?: string | undefined
}

/** A scored row of {@link FieldIndex.search}: its position in the rows the index was built from. */
export interface FieldHit {
  readonly row: number
  readonly score: number
}

interface Field {
  /**
   * Postings, term after term (`start[t]..start[t + 1]`): the rows holding the term and their
   * saturated, length-normalised term frequency.
   */
  readonly start: Int32Array
  readonly rows: Int32Array
  readonly parts: Float32Array
  /** Per term id: the BM25 IDF. */
  readonly idf: Float64Array
}

/**
 * A read-only BM25 index over two fields of a fixed list of rows, scored the way LanceDB's
 * native index scores a boolean query of a `content` match and a boosted `title` match: per
 * term, `weight × (bm25(content) + titleBoost × bm25(title))`, each field with its own
 * document frequencies and average length (`k1` 1.2, `b` 0.75, Lucene's IDF). The analyzer is
 * {@link terms}' (LanceDB's English stop words, Porter stemmer, words over 40 characters dropped).
 *
 * Postings hold the per-row BM25 term factor precomputed, so a query costs one multiply-add per
 * posting of its terms. Built once from all rows ({@link FieldIndex.build}); a changed
 * collection builds a new one.
 */
export class FieldIndex {
  private readonly ids = new Map<string, number>()
  private readonly content: Field
  private readonly title: Field
  /** Row -> [start, end) into termIds/termCounts: the row's content terms and counts. */
  private readonly offsets: Int32Array
  private readonly termIds: Int32Array
  private readonly termCounts: Int32Array
  private readonly termNames: Array<string> = []
  /** Per term id: the first word seen that gives it. */
  private readonly surface: Array<string> = []
  private readonly scores: Float64Array
  private readonly seen: Uint8Array

  private constructor(readonly size: number, docs: ReadonlyArray<FieldDoc>, readonly k1 = 1.2, readonly b = 0.75) {
    const idOf = (term: string) => {
      let id = this.ids.get(term)
      if (id === undefined) {
        id = this.termNames.length
        this.ids.set(term, id)
        this.termNames.push(term)
      }
      return id
    }
    const content = docs.map((d) => {
      const ids: Array<number> = []
      for (const w of words(d.content)) {
        if (w.length > 40 || stopWords.has(w)) continue
        const id = idOf(stem(w))
        if (this.surface[id] === undefined) this.surface[id] = w
        ids.push(id)
      }
      return ids
    })
    const title = docs.map((d) => (d.title === undefined ? [] : terms(d.title).map(idOf)))
    const c = this.rowCounts(content)
    this.offsets = c.offsets
    this.termIds = c.ids
    this.termCounts = c.counts
    this.content = this.field(c, () => true)
    // rows without a title are not in the title field (LanceDB indexes no null)
    this.title = this.field(this.rowCounts(title), (row) => docs[row]!.title !== undefined)
    this.scores = new Float64Array(size)
    this.seen = new Uint8Array(size)
  }

  /** Builds the index of `docs` (row numbers are their positions). */
  static build(docs: ReadonlyArray<FieldDoc>): FieldIndex {
    return new FieldIndex(docs.length, docs)
  }

  /** Each row's distinct terms and their counts, rows one after the other (`offsets[row]..offsets[row + 1]`). */
  private rowCounts(rowTerms: ReadonlyArray<ReadonlyArray<number>>) {
    const n = this.termNames.length
    const tally = new Int32Array(n)
    const offsets = new Int32Array(rowTerms.length + 1)
    const lengths = new Int32Array(rowTerms.length)
    let total = 0
    for (const ts of rowTerms) total += ts.length
    const ids = new Int32Array(total)
    const counts = new Int32Array(total)
    let at = 0
    rowTerms.forEach((ts, row) => {
      for (const t of ts) {
        if (tally[t] === 0) ids[at++] = t
        tally[t]!++
      }
      for (let i = offsets[row]!; i < at; i++) {
        counts[i] = tally[ids[i]!]!
        tally[ids[i]!] = 0
      }
      offsets[row + 1] = at
      lengths[row] = ts.length
    })
    return { offsets, ids: ids.subarray(0, at), counts: counts.subarray(0, at), lengths }
  }

  private field(rc: ReturnType<FieldIndex["rowCounts"]>, present: (row: number) => boolean): Field {
    const n = this.termNames.length
    const { counts, ids, lengths, offsets } = rc
    let live = 0
    let total = 0
    for (let row = 0; row < lengths.length; row++) {
      if (present(row)) {
        live++
        total += lengths[row]!
      }
    }
    const avg = Math.max(1e-9, total / Math.max(1, live))
    const df = new Int32Array(n)
    for (const t of ids) df[t]!++
    const idf = new Float64Array(n)
    const start = new Int32Array(n + 1)
    for (let t = 0; t < n; t++) {
      idf[t] = Math.log(1 + (live - df[t]! + 0.5) / (df[t]! + 0.5))
      start[t + 1] = start[t]! + df[t]!
    }
    const rows = new Int32Array(ids.length)
    const parts = new Float32Array(ids.length)
    const fill = start.slice(0, n)
    for (let row = 0; row < lengths.length; row++) {
      const norm = this.k1 * (1 - this.b + this.b * (lengths[row]! / avg))
      for (let i = offsets[row]!; i < offsets[row + 1]!; i++) {
        const t = ids[i]!
        const tf = counts[i]!
        const at = fill[t]!++
        rows[at] = row
        parts[at] = (tf * (this.k1 + 1)) / (tf + norm)
      }
    }
    return { start, rows, parts, idf }
  }

  /** The analysed content terms of a row with their counts, a word for each, and the row's number of terms. */
  contentTerms(row: number): TermCounts {
    const counts = new Map<string, number>()
    const words = new Map<string, string>()
    let length = 0
    for (let i = this.offsets[row]!; i < this.offsets[row + 1]!; i++) {
      const t = this.termIds[i]!
      counts.set(this.termNames[t]!, this.termCounts[i]!)
      words.set(this.termNames[t]!, this.surface[t]!)
      length += this.termCounts[i]!
    }
    return { counts, words, length }
  }

  /**
   * The best `limit` rows for a weighted query (stemmed term -> weight), among those `accept`
   * (when given) lets through; ties in row order unless `tieBreak` orders them.
   */
  search(
    query: WeightedQuery,
    titleBoost: number,
    limit: number,
    accept?: (row: number) => boolean,
    tieBreak?: (a: number, b: number) => number
  ): Array<FieldHit> {
    const scores = this.scores
    const seen = this.seen
    const touched: Array<number> = []
    const add = (f: Field, t: number, w: number) => {
      const { parts, rows } = f
      const wi = w * f.idf[t]!
      for (let i = f.start[t]!; i < f.start[t + 1]!; i++) {
        const r = rows[i]!
        if (seen[r] === 0) {
          seen[r] = 1
          scores[r] = 0
          touched.push(r)
        }
        scores[r]! += wi * parts[i]!
      }
    }
    for (const [term, weight] of query) {
      const t = this.ids.get(term)
      if (t === undefined || !(weight > 0)) continue
      add(this.content, t, weight)
      if (titleBoost > 0) add(this.title, t, weight * titleBoost)
    }
    // the best `limit`, kept sorted while scanning (a full sort of every touched row costs more)
    const order = (x: FieldHit, y: FieldHit) => y.score - x.score || (tieBreak ? tieBreak(x.row, y.row) : x.row - y.row)
    const k = Math.max(0, limit)
    const top: Array<FieldHit> = []
    for (const r of touched) {
      seen[r] = 0
      if (k === 0) continue
      const hit = { row: r, score: scores[r]! }
      if (top.length === k && order(hit, top[k - 1]!) >= 0) continue
      if (accept !== undefined && !accept(r)) continue
      let i = top.length === k ? k - 1 : top.length
      while (i > 0 && order(hit, top[i - 1]!) < 0) {
        top[i] = top[i - 1]!
        i--
      }
      top[i] = hit
    }
    return top
  }
}
