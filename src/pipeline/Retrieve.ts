/**
 * The retrieval path: full-text, vector or hybrid search over a {@link Collection}, chunk hits
 * optionally rolled up to documents, and an optional reranker over the top candidates.
 *
 * Full text is the offline default and is tuned beyond plain BM25 (see `benchmarks/README.md` for
 * the measurements):
 * - **title boost**: besides BM25 over title + text, a title match adds `titleBoost` times its
 *   BM25 score on the title field (default 0.3);
 * - **pseudo-relevance feedback (RM3)**: the top `feedback.docs` hits of a first pass give
 *   `feedback.terms` expansion words weighted by their share of those hits (hits weighted by
 *   a softmax of their BM25 scores, so the top hits dominate); the second pass searches the original words with weight
 *   `feedback.originalWeight` and the expansion with the rest. The hits' words come from the
 *   collection's `termCounts` when it has them (the LanceDB adapter's in-memory engine), else
 *   from analysing their texts. On a collection with `textCandidates` (the LanceDB adapter above
 *   its `textCandidateRows`), the index is searched once, for the query's best
 *   `feedbackDepth` chunks (default 25), and both passes rank those candidates in memory with
 *   the collection's BM25 statistics: no second search of ~40 weighted clauses.
 *
 * Access: `scope` (a `ReadScope`, default every chunk) goes with every store read of the path —
 * the first and second full-text passes, the feedback hits' terms, the vector candidates — so a
 * chunk outside it is never a candidate, a feedback document or a rerank input. A restricted
 * scope on a collection whose backend does not enforce access lists fails (`StoreError`).
 *
 * Dense retrieval needs an embedder; it is never implied: `mode: "vector" | "hybrid"` without
 * `embeddings` fails with a `ConfigurationError` that says so, and a query embedded by another
 * model than the collection's fails with `EmbeddingMismatch` (the store checks dimensions only).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Embeddings from "../api/Embeddings.js"
import type * as Rerank from "../api/Rerank.js"
import * as RagError from "../RagError.js"
import { fuse } from "../store/Fusion.js"
import { analyze, stem, stopWords, words } from "../store/TextAnalysis.js"
import {
  type Collection,
  describeEmbedding,
  EmbeddingMismatch,
  type Filter,
  type Fusion,
  type Hit,
  type ReadScope,
  requireScope,
  type TermCounts,
  type TextQuery,
  type VectorStoreError
} from "../store/VectorStore.js"

/**
 * Pseudo-relevance feedback (RM3) settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Feedback {
  /** Feedback hits (default 10). */
  readonly docs: number
  /** Expansion words (default 20). */
  readonly terms: number
  /** Weight of the original query, 0..1 (default 0.7). */
  readonly originalWeight: number
}

/**
 * Full-text tuning.
 *
 * @since 0.1.0
 * @category models
 */
export interface FullTextOptions {
  /** Extra weight of a title match (default 0.3; 0: plain BM25 over title + text). */
  readonly titleBoost?: number | undefined
  /** RM3 feedback (default on with {@link defaultFeedback}); `false` turns it off. */
  readonly feedback?: Feedback | false | undefined
  /**
   * On a collection that ranks a first pass's candidates in memory (`textCandidates`), how many
   * chunks the first pass takes for both passes to rank (default {@link defaultFeedbackDepth};
   * never fewer than the hits asked for).
   */
  readonly feedbackDepth?: number | undefined
}

/**
 * The default {@link FullTextOptions.feedbackDepth}.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultFeedbackDepth = 25

/**
 * The full-text settings used when none are given (chosen on SciFact, checked on a second collection).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultFeedback: Feedback = { docs: 10, terms: 20, originalWeight: 0.7 }

/**
 * The default extra title weight (chosen on SciFact, checked on a second collection).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTitleBoost = 0.3

/**
 * The plain BM25 settings (no title boost beyond 1, no feedback), for comparison.
 *
 * @since 0.1.0
 * @category utils
 */
export const plainFullText: FullTextOptions = { titleBoost: 0, feedback: false }

/**
 * Options of {@link retrieve}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** `fulltext` (default), `vector` or `hybrid`. */
  readonly mode?: "fulltext" | "vector" | "hybrid" | undefined
  /** Hits to return (default 10). */
  readonly limit?: number | undefined
  /** Metadata filter. */
  readonly filter?: Filter | undefined
  /** Which chunks may be read (default every chunk; `Answer` passes its principal's scope). */
  readonly scope?: ReadScope | undefined
  /** Full-text tuning. */
  readonly fullText?: FullTextOptions | undefined
  /** Hybrid fusion (default: the store's, see `LanceDbStore.defaultFusion`). */
  readonly fusion?: Fusion | undefined
  /** `chunk` (default) or `document`: one hit per document, its best chunk (max score). */
  readonly groupBy?: "chunk" | "document" | undefined
  /**
   * Candidates fetched before roll-up, fusion or rerank (default max(limit, 100)). A search with
   * none of them fetches only `limit` hits: rows are read only for what is returned.
   */
  readonly candidates?: number | undefined
  /** Embedder for `vector` and `hybrid`. */
  readonly embeddings?: Embeddings.Service | undefined
  /** Model passed to the embedder (default: its default). */
  readonly embeddingModel?: string | undefined
  /** Reranker over the top `rerankTop` candidates. */
  readonly reranker?: Rerank.Service | undefined
  /** Candidates sent to the reranker (default 50). */
  readonly rerankTop?: number | undefined
}

/**
 * What retrieval can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type RetrieveError = VectorStoreError | RagError.ApiError

// =============================================================================
// Full text with feedback
// =============================================================================

/**
 * Builds the RM3 second-pass query from the first-pass hits: the original words with weight
 * `originalWeight` (split by their counts) and the top expansion words with the rest.
 *
 * @since 0.1.0
 * @category utils
 */
export const feedbackQuery = (
  query: string,
  hits: ReadonlyArray<Hit>,
  fb: Feedback,
  analysed: ReadonlyArray<TermCounts | undefined> = []
): TextQuery => {
  const original = analyze(query)
  if (original.length === 0) return query
  const top = hits.slice(0, fb.docs)
  const max = top[0]?.score ?? 0
  const weights = top.map((h) => Math.exp(h.score - max))
  const z = weights.reduce((a, b) => a + b, 0) || 1
  const rel = new Map<string, number>()
  const docs = top.map((h, i) => analysed[i] ?? termCounts(h))
  docs.forEach(({ counts, length }, i) => {
    if (length === 0) return
    for (const [term, c] of counts) {
      // numbers make poor expansion words (years, counts, table values)
      if (/^\p{N}+$/u.test(term)) continue
      rel.set(term, (rel.get(term) ?? 0) + (weights[i]! / z) * (c / length))
    }
  })
  const expansion = [...rel.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, fb.terms)
  // the words giving each expansion term, with their counts over the hits (only these terms')
  const surface = new Map<string, Map<string, number>>(expansion.map(([term]) => [term, new Map<string, number>()]))
  for (const { counts, length, words: wordOf } of docs) {
    if (length === 0) continue
    for (const [term, s] of surface) {
      const c = counts.get(term)
      if (c === undefined) continue
      const w = wordOf.get(term)!
      s.set(w, (s.get(w) ?? 0) + c)
    }
  }
  const ez = expansion.reduce((a, [, v]) => a + v, 0) || 1
  const weightOf = new Map<string, { word: string; weight: number }>()
  for (const t of original) {
    const e = weightOf.get(t.term) ?? { word: t.word, weight: 0 }
    e.weight += fb.originalWeight / original.length
    weightOf.set(t.term, e)
  }
  for (const [term, v] of expansion) {
    const words = [...(surface.get(term) ?? new Map<string, number>()).entries()].sort((a, b) => b[1] - a[1])
    const e = weightOf.get(term) ?? { word: words[0]?.[0] ?? term, weight: 0 }
    e.weight += (1 - fb.originalWeight) * v / ez
    weightOf.set(term, e)
  }
  return { terms: [...weightOf.values()].map(({ word, weight }) => ({ text: word, weight })) }
}

/**
 * A hit's analysed terms (what `analyze` gives for title + text), counted per distinct word
 * first (a long hit repeats its words). With several words to a term, the most frequent one.
 */
const termCounts = (h: Hit): TermCounts => {
  const byWord = new Map<string, number>()
  let length = 0
  for (const w of words(`${h.title ?? ""} ${h.text}`)) {
    if (w.length > 40 || stopWords.has(w)) continue
    length++
    byWord.set(w, (byWord.get(w) ?? 0) + 1)
  }
  const counts = new Map<string, number>()
  const wordOf = new Map<string, string>()
  const best = new Map<string, number>()
  for (const [w, c] of byWord) {
    const term = stem(w)
    counts.set(term, (counts.get(term) ?? 0) + c)
    if (c > (best.get(term) ?? 0)) {
      best.set(term, c)
      wordOf.set(term, w)
    }
  }
  return { counts, words: wordOf, length }
}

/**
 * Full-text search with title boost and optional RM3 feedback.
 *
 * @since 0.1.0
 * @category utils
 */
export const fullText = (
  collection: Collection,
  query: string,
  options: {
    readonly limit: number
    readonly filter?: Filter | undefined
    readonly scope?: ReadScope | undefined
    readonly fullText?: FullTextOptions | undefined
  }
): Effect.Effect<ReadonlyArray<Hit>, VectorStoreError> =>
  Effect.gen(function*() {
    yield* requireScope(collection, options.scope)
    const titleBoost = options.fullText?.titleBoost ?? defaultTitleBoost
    const fb = options.fullText?.feedback === undefined ? defaultFeedback : options.fullText.feedback
    const candidates = fb === false || collection.textCandidates === undefined ? undefined : yield* collection.textCandidates(query, {
      depth: Math.max(options.limit, fb.docs, options.fullText?.feedbackDepth ?? defaultFeedbackDepth),
      filter: options.filter,
      scope: options.scope
    })
    if (fb !== false && candidates !== undefined) {
      // both passes over one candidate set: the second scored in memory, not searched again
      const top = yield* candidates.search(query, { limit: Math.max(options.limit, fb.docs), titleBoost })
      if (top.length === 0) return top
      const terms = yield* candidates.termCounts(top.slice(0, fb.docs).map((h) => h.id))
      return yield* candidates.search(feedbackQuery(query, top, fb, terms), { limit: options.limit, titleBoost })
    }
    const first = yield* collection.searchText(query, {
      limit: fb === false ? options.limit : Math.max(options.limit, fb.docs),
      filter: options.filter,
      scope: options.scope,
      titleBoost
    })
    if (fb === false || first.length === 0) return first.slice(0, options.limit)
    // the engine's own analysis of the hits when it has one (no second pass over their texts)
    const analysed = collection.termCounts === undefined
      ? []
      : yield* collection.termCounts(first.slice(0, fb.docs).map((h) => h.id), { scope: options.scope })
    return yield* collection.searchText(feedbackQuery(query, first, fb, analysed), {
      limit: options.limit,
      filter: options.filter,
      scope: options.scope,
      titleBoost
    })
  })

// =============================================================================
// Roll-up and the whole path
// =============================================================================

/**
 * Keeps each document's best hit, in score order.
 *
 * @since 0.1.0
 * @category utils
 */
export const rollUp = (hits: ReadonlyArray<Hit>): Array<Hit> => {
  const best = new Map<string, Hit>()
  for (const h of hits) {
    const b = best.get(h.documentId)
    if (b === undefined || h.score > b.score) best.set(h.documentId, h)
  }
  return [...best.values()].sort((a, b) => b.score - a.score)
}

const needEmbedder = (mode: string) =>
  new RagError.ConfigurationError({
    endpoint: "Retrieve",
    message: `${mode} retrieval needs an embedder: configure one (remote /v1/embeddings, an ONNX model folder, or USE-lite) or use mode "fulltext"`
  })

/**
 * Retrieves hits for a query.
 *
 * @since 0.1.0
 * @category utils
 */
export const retrieve = (
  collection: Collection,
  query: string,
  options: Options = {}
): Effect.Effect<ReadonlyArray<Hit>, RetrieveError> =>
  Effect.gen(function*() {
    const mode = options.mode ?? "fulltext"
    const limit = Math.max(1, options.limit ?? 10)
    yield* requireScope(collection, options.scope)
    const widened = options.groupBy === "document" || options.reranker !== undefined || mode === "hybrid"
    const candidates = widened
      ? Math.max(limit, options.candidates ?? 100, options.reranker ? options.rerankTop ?? 50 : 0)
      : limit
    let hits: ReadonlyArray<Hit>
    if (mode === "fulltext") {
      hits = yield* fullText(collection, query, { limit: candidates, filter: options.filter, scope: options.scope, fullText: options.fullText })
    } else {
      if (options.embeddings === undefined) return yield* Effect.fail(needEmbedder(mode))
      const embedded = yield* options.embeddings.embed([query], { model: options.embeddingModel })
      const expected = collection.spec.embedding
      // The store checks the dimension; only the caller knows the model of the query vector.
      if (expected !== undefined && embedded.model !== expected.model) {
        return yield* new EmbeddingMismatch({
          collection: collection.spec.name,
          expected: describeEmbedding(expected),
          actual: `a query embedded by ${embedded.model}`,
          message: `collection ${collection.spec.name} holds ${describeEmbedding(expected)} vectors; the query was embedded by ${embedded.model}`
        })
      }
      const vector = embedded.vectors[0]!
      if (mode === "vector") {
        hits = yield* collection.searchVector(vector, { limit: candidates, filter: options.filter, scope: options.scope })
      } else {
        const [text, vec] = yield* Effect.all([
          fullText(collection, query, { limit: candidates, filter: options.filter, scope: options.scope, fullText: options.fullText }),
          collection.searchVector(vector, { limit: candidates, filter: options.filter, scope: options.scope })
        ], { concurrency: 2 })
        hits = fuse(text, vec, options.fusion, candidates)
      }
    }
    if (options.groupBy === "document") hits = rollUp(hits)
    if (options.reranker !== undefined && hits.length > 0) {
      const top = hits.slice(0, options.rerankTop ?? 50)
      const reranked = yield* options.reranker.rerank({
        model: options.reranker.defaultModel,
        query,
        documents: top.map((h) => (h.title ? `${h.title}\n${h.text}` : h.text))
      })
      const ordered = [...reranked.results].sort((a, b) => b.relevance_score - a.relevance_score).map((r) => ({ ...top[r.index]!, score: r.relevance_score }))
      const seen = new Set(ordered.map((h) => h.id))
      hits = [...ordered, ...top.filter((h) => !seen.has(h.id)), ...hits.slice(top.length)]
    }
    return hits.slice(0, limit)
  }).pipe(Effect.withSpan("Retrieve.retrieve", { attributes: { mode: options.mode ?? "fulltext" } }))
