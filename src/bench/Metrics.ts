/**
 * Retrieval metrics with the standard BEIR (pytrec_eval) definitions: graded gains, DCG with a
 * `log2(rank + 1)` discount and linear gain (`rel`, as trec_eval's `ndcg_cut`), ideal DCG from
 * every judged document of the query (qrels), Recall@k over the relevant documents (gain > 0),
 * and MRR@k (reciprocal rank of the first relevant document within the first k).
 *
 * Ties in a ranking are taken in the given order: callers pass rankings already sorted.
 *
 * @since 0.1.0
 */

/**
 * Judgements of one query: document id -> graded relevance (0 = judged not relevant).
 *
 * @since 0.1.0
 * @category models
 */
export type Judgements = ReadonlyMap<string, number>

/**
 * Judgements of every query: query id -> {@link Judgements}.
 *
 * @since 0.1.0
 * @category models
 */
export type Qrels = ReadonlyMap<string, Judgements>

/**
 * nDCG@k of one ranking. 0 when the query has no relevant document.
 *
 * @since 0.1.0
 * @category utils
 */
export const ndcgAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number => {
  let dcg = 0
  const seen = new Set<string>()
  let rank = 0
  for (const id of ranking) {
    if (rank >= k) break
    if (seen.has(id)) continue // a document counts once, at its best rank
    seen.add(id)
    rank++
    const gain = judged.get(id) ?? 0
    if (gain > 0) dcg += gain / Math.log2(rank + 1)
  }
  const ideal = [...judged.values()].filter((g) => g > 0).sort((a, b) => b - a).slice(0, k)
  let idcg = 0
  ideal.forEach((gain, i) => {
    idcg += gain / Math.log2(i + 2)
  })
  return idcg === 0 ? 0 : dcg / idcg
}

/**
 * Recall@k: the share of the relevant documents found in the first k. 0 when none is relevant.
 *
 * @since 0.1.0
 * @category utils
 */
export const recallAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number => {
  const relevant = [...judged.entries()].filter(([, g]) => g > 0).map(([id]) => id)
  if (relevant.length === 0) return 0
  const top = new Set(ranking.slice(0, k))
  return relevant.filter((id) => top.has(id)).length / relevant.length
}

/**
 * MRR@k: 1 / rank of the first relevant document within the first k, else 0.
 *
 * @since 0.1.0
 * @category utils
 */
export const mrrAt = (k: number, ranking: ReadonlyArray<string>, judged: Judgements): number => {
  const n = Math.min(k, ranking.length)
  for (let i = 0; i < n; i++) if ((judged.get(ranking[i]!) ?? 0) > 0) return 1 / (i + 1)
  return 0
}

/**
 * The three reported metrics, averaged over queries.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly "ndcg@10": number
  readonly "recall@100": number
  readonly "mrr@10": number
}

/**
 * Averages the metrics over every query of `qrels` that has at least one relevant document; a
 * query with no ranking counts as zero (as BEIR does).
 *
 * @since 0.1.0
 * @category utils
 */
export const evaluate = (runs: ReadonlyMap<string, ReadonlyArray<string>>, qrels: Qrels): Summary => {
  let n = 0
  let ndcg = 0
  let recall = 0
  let mrr = 0
  for (const [qid, judged] of qrels) {
    if (![...judged.values()].some((g) => g > 0)) continue
    const ranking = runs.get(qid) ?? []
    n++
    ndcg += ndcgAt(10, ranking, judged)
    recall += recallAt(100, ranking, judged)
    mrr += mrrAt(10, ranking, judged)
  }
  return n === 0
    ? { "ndcg@10": 0, "recall@100": 0, "mrr@10": 0 }
    : { "ndcg@10": ndcg / n, "recall@100": recall / n, "mrr@10": mrr / n }
}

/**
 * The median of a sample (the mean of the two middle values for an even count); NaN for an empty sample.
 *
 * @since 0.1.0
 * @category utils
 */
export const median = (values: ReadonlyArray<number>): number => {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const m = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2
}

/**
 * The p-th percentile (0..100) of a sample, nearest-rank; 0 for an empty sample.
 *
 * @since 0.1.0
 * @category utils
 */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}
