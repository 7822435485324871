/**
 * An in-memory BM25F index over two fields (title, text): the full-text engine of the
 * in-memory store, and the reference the LanceDB adapter's native index is compared with.
 *
 * Scoring is BM25F in its common simplified form: each field's term frequency is length
 * normalised with its own `b` and average length, weighted, summed, then saturated once with
 * `k1`; the IDF is Lucene's `ln(1 + (N - df + 0.5) / (df + 0.5))`. With a title weight of 1 and
 * both fields concatenated this is plain BM25.
 */
import { analyze, type Token } from "./text.js"

/** Tuning of {@link Bm25Index}. */
export interface Bm25Options {
  /** Term-frequency saturation (default 1.2). */
  readonly k1?: number | undefined
  /** Length normalisation (default 0.75). */
  readonly b?: number | undefined
  /** Weight of a title occurrence relative to a body one (default 1: plain BM25). */
  readonly titleWeight?: number | undefined
  /** Porter stemming (default true). */
  readonly stem?: boolean | undefined
}

/** One indexed unit (a chunk). */
export interface Bm25Doc {
  readonly id: string
  readonly title?: string | undefined
  readonly text: string
}

interface Entry {
  readonly id: string
  readonly titleLen: number
  readonly textLen: number
  /** term -> [tf in title, tf in text] */
  readonly tf: Map<string, [number, number]>
  /** Body tokens with positions, for proximity and feedback. */
  readonly tokens: ReadonlyArray<Token>
  alive: boolean
}

/** A scored hit of {@link Bm25Index.search}. */
export interface Bm25Hit {
  readonly id: string
  readonly score: number
}

/** A weighted query: stemmed term -> weight. */
export type WeightedQuery = ReadonlyMap<string, number>

/** Builds a weighted query from a text: each analysed term weighted by its count. */
export const queryOf = (text: string): Map<string, number> => {
  const q = new Map<string, number>()
  for (const t of analyze(text)) q.set(t.term, (q.get(t.term) ?? 0) + 1)
  return q
}

/** The mutable in-memory index. */
export class Bm25Index {
  private readonly k1: number
  private readonly b: number
  private readonly titleWeight: number
  private readonly stemming: boolean
  private readonly entries: Array<Entry> = []
  private readonly byId = new Map<string, number>()
  private readonly postings = new Map<string, Set<number>>()
  private live = 0
  private titleTotal = 0
  private textTotal = 0

  constructor(options: Bm25Options = {}) {
    this.k1 = options.k1 ?? 1.2
    this.b = options.b ?? 0.75
    this.titleWeight = options.titleWeight ?? 1
    this.stemming = options.stem ?? true
  }

  /** Analyses a text the way this index does (for building queries). */
  analyze(text: string): Array<Token> {
    return analyze(text, 40, this.stemming)
  }

  /** A weighted query from a text, analysed the way this index does. */
  queryOf(text: string): Map<string, number> {
    const q = new Map<string, number>()
    for (const t of this.analyze(text)) q.set(t.term, (q.get(t.term) ?? 0) + 1)
    return q
  }

  /** Number of live documents. */
  get size(): number {
    return this.live
  }

  /** Adds or replaces a document. */
  upsert(doc: Bm25Doc): void {
    this.remove(doc.id)
    const titleTokens = doc.title === undefined ? [] : this.analyze(doc.title)
    const tokens = this.analyze(doc.text)
    const tf = new Map<string, [number, number]>()
    for (const t of titleTokens) {
      const e = tf.get(t.term) ?? [0, 0]
      e[0]++
      tf.set(t.term, e)
    }
    for (const t of tokens) {
      const e = tf.get(t.term) ?? [0, 0]
      e[1]++
      tf.set(t.term, e)
    }
    const index = this.entries.length
    this.entries.push({ id: doc.id, titleLen: titleTokens.length, textLen: tokens.length, tf, tokens, alive: true })
    this.byId.set(doc.id, index)
    for (const term of tf.keys()) {
      let set = this.postings.get(term)
      if (set === undefined) this.postings.set(term, (set = new Set()))
      set.add(index)
    }
    this.live++
    this.titleTotal += titleTokens.length
    this.textTotal += tokens.length
  }

  /** Removes a document; returns whether it was there. */
  remove(id: string): boolean {
    const index = this.byId.get(id)
    if (index === undefined) return false
    const e = this.entries[index]!
    e.alive = false
    this.byId.delete(id)
    for (const term of e.tf.keys()) {
      const set = this.postings.get(term)
      set?.delete(index)
      if (set !== undefined && set.size === 0) this.postings.delete(term)
    }
    this.live--
    this.titleTotal -= e.titleLen
    this.textTotal -= e.textLen
    return true
  }

  /** Number of live documents containing a term. */
  docFreq(term: string): number {
    return this.postings.get(term)?.size ?? 0
  }

  /** Lucene's BM25 IDF of a term. */
  idf(term: string): number {
    const df = this.docFreq(term)
    return Math.log(1 + (this.live - df + 0.5) / (df + 0.5))
  }

  /** The analysed body tokens of a document (for proximity and feedback). */
  tokensOf(id: string): ReadonlyArray<Token> | undefined {
    const i = this.byId.get(id)
    return i === undefined ? undefined : this.entries[i]!.tokens
  }

  /** Term frequencies (title + body) of a document. */
  termCounts(id: string): ReadonlyMap<string, number> | undefined {
    const i = this.byId.get(id)
    if (i === undefined) return undefined
    const out = new Map<string, number>()
    for (const [term, [a, b]] of this.entries[i]!.tf) out.set(term, a + b)
    return out
  }

  /**
   * Scores every document matching at least one query term; returns the best `limit`, and
   * only those for which `accept` (when given) is true.
   */
  search(query: WeightedQuery, limit: number, accept?: (id: string) => boolean): Array<Bm25Hit> {
    if (this.live === 0 || query.size === 0) return []
    const avgTitle = Math.max(1e-9, this.titleTotal / this.live)
    const avgText = Math.max(1e-9, this.textTotal / this.live)
    const scores = new Map<number, number>()
    for (const [term, weight] of query) {
      const set = this.postings.get(term)
      if (set === undefined) continue
      const idf = this.idf(term)
      for (const index of set) {
        const e = this.entries[index]!
        const [tTitle, tText] = e.tf.get(term)!
        const nTitle = tTitle === 0 ? 0 : tTitle / (1 - this.b + this.b * (e.titleLen / avgTitle))
        const nText = tText === 0 ? 0 : tText / (1 - this.b + this.b * (e.textLen / avgText))
        const tf = this.titleWeight * nTitle + nText
        scores.set(index, (scores.get(index) ?? 0) + weight * idf * (tf * (this.k1 + 1)) / (tf + this.k1))
      }
    }
    const hits: Array<Bm25Hit> = []
    for (const [index, score] of scores) {
      const id = this.entries[index]!.id
      if (accept === undefined || accept(id)) hits.push({ id, score })
    }
    hits.sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
    return hits.slice(0, limit)
  }
}
