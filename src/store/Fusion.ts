/**
 * Fusion of ranked lists for hybrid search: reciprocal rank fusion and weighted sums of
 * min-max-normalised scores. Both are pure; ties keep the order of first appearance.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { Collection, Hit, HybridSearchOptions } from "./VectorStore.js"

/**
 * A ranked candidate: an id and a score where higher is better.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scored {
  readonly id: string
  readonly score: number
}

/**
 * Reciprocal rank fusion: `sum_i w_i / (k + rank_i)` with ranks from 1. `weights` default
 * to 1 for each list; `k` defaults to 60 (Cormack et al.).
 *
 * @since 0.1.0
 * @category utils
 */
export const rrf = (
  lists: ReadonlyArray<ReadonlyArray<Scored>>,
  k = 60,
  weights?: ReadonlyArray<number>
): Array<Scored> => {
  const out = new Map<string, number>()
  lists.forEach((list, li) => {
    const w = weights?.[li] ?? 1
    list.forEach((s, rank) => out.set(s.id, (out.get(s.id) ?? 0) + w / (k + rank + 1)))
  })
  return sortScores(out)
}

/**
 * Min-max normalises scores into [0, 1] (all equal: all 1).
 *
 * @since 0.1.0
 * @category utils
 */
export const minMax = (list: ReadonlyArray<Scored>): Array<Scored> => {
  if (list.length === 0) return []
  let lo = Infinity
  let hi = -Infinity
  for (const s of list) {
    if (s.score < lo) lo = s.score
    if (s.score > hi) hi = s.score
  }
  const span = hi - lo
  return list.map((s) => ({ id: s.id, score: span > 0 ? (s.score - lo) / span : 1 }))
}

/**
 * Weighted sum of min-max-normalised scores: `w * text + (1 - w) * vector`; a candidate missing
 * from a list gets 0 from it.
 *
 * @since 0.1.0
 * @category utils
 */
export const weighted = (
  text: ReadonlyArray<Scored>,
  vector: ReadonlyArray<Scored>,
  textWeight: number
): Array<Scored> => {
  const out = new Map<string, number>()
  for (const s of minMax(text)) out.set(s.id, textWeight * s.score)
  for (const s of minMax(vector)) out.set(s.id, (out.get(s.id) ?? 0) + (1 - textWeight) * s.score)
  return sortScores(out)
}

const sortScores = (m: Map<string, number>): Array<Scored> => {
  const order = new Map<string, number>()
  let i = 0
  for (const id of m.keys()) order.set(id, i++)
  return [...m.entries()]
    .map(([id, score]) => ({ id, score }))
    .sort((a, b) => b.score - a.score || order.get(a.id)! - order.get(b.id)!)
}

/**
 * Fuses full-text and vector hits (shared with the in-memory store).
 *
 * @since 0.1.0
 * @category utils
 */
export const fuse = (
  text: ReadonlyArray<Hit>,
  vector: ReadonlyArray<Hit>,
  fusion: HybridSearchOptions["fusion"],
  limit: number
): ReadonlyArray<Hit> => {
  const byId = new Map<string, Hit>()
  for (const h of vector) byId.set(h.id, h)
  for (const h of text) byId.set(h.id, h)
  const f = fusion ?? defaultFusion
  const fused = f._tag === "Rrf"
    ? rrf([text, vector], f.k ?? 60, [f.textWeight ?? 1, 1])
    : weighted(text, vector, f.textWeight ?? defaultTextWeight)
  return fused.slice(0, limit).map((s) => ({ ...byId.get(s.id)!, score: s.score }))
}

/**
 * A collection's `searchHybrid` from its `searchText` and `searchVector`: both run with
 * `max(limit, candidates)` hits (default 100), the same filter and read scope, at once, then
 * {@link fuse}. Every built-in adapter's hybrid search is this.
 *
 * @since 0.1.0
 * @category utils
 */
export const hybridSearch = (
  searchText: Collection["searchText"],
  searchVector: Collection["searchVector"]
): Collection["searchHybrid"] =>
(query, options = {}) =>
  Effect.gen(function*() {
    const limit = Math.max(1, options.limit ?? 10)
    const candidates = Math.max(limit, options.candidates ?? 100)
    const [text, vec] = yield* Effect.all([
      searchText(query.text, { ...options, limit: candidates }),
      searchVector(query.vector, { filter: options.filter, scope: options.scope, limit: candidates })
    ], { concurrency: 2 })
    return fuse(text, vec, options.fusion, limit)
  })

/**
 * The default full-text weight of weighted fusion (measured: see {@link defaultFusion}).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTextWeight = 0.9

/**
 * The default fusion of hybrid search: weighted min-max-normalised scores, 0.9 on full text,
 * chosen by measurement with the one encoder that runs offline here (USE-lite, `benchmarks/README.md`):
 * SciFact nDCG@10 0.7010 against full text alone 0.6988 (0.8: 0.6973, 0.7: 0.6834, 0.5: 0.5901;
 * RRF k=60: 0.4376, text weighted 4:1: 0.5894), and the same order on a second collection
 * (npm READMEs: 0.9 gives 0.8635, 0.8 0.8630, full text 0.8586, RRF 0.5067). A weak encoder can
 * only nudge BM25, and rank fusion gives its list a full vote. A stronger encoder (remote, ONNX)
 * may want more weight: measure it with `--fusion-sweep` and pass `fusion`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultFusion: NonNullable<HybridSearchOptions["fusion"]> = { _tag: "Weighted", textWeight: defaultTextWeight }
