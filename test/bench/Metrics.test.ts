import { describe, expect, it } from "@effect/vitest"
import * as Metrics from "../../src/bench/Metrics.js"

const j = (o: Record<string, number>) => new Map(Object.entries(o))

describe("Metrics", () => {
  it("nDCG@10 with graded gains and the ideal DCG from all judged documents", () => {
    // gains: a=2, b=1, c=0 (judged non-relevant), d=1 (not retrieved)
    const judged = j({ a: 2, b: 1, c: 0, d: 1 })
    // ranking b, x, a: DCG = 1/log2(2) + 2/log2(4) = 1 + 1 = 2
    // ideal a, b, d: 2/1 + 1/log2(3) + 1/2 = 2.5 + 0.6309298 = 3.1309298
    expect(Metrics.ndcgAt(10, ["b", "x", "a"], judged)).toBeCloseTo(2 / 3.1309298, 6)
    expect(Metrics.ndcgAt(10, ["a", "b", "d"], judged)).toBeCloseTo(1, 10)
    expect(Metrics.ndcgAt(10, [], judged)).toBe(0)
    // cut-off: a relevant document at rank 3 does not count at k = 2
    expect(Metrics.ndcgAt(2, ["x", "y", "a"], judged)).toBe(0)
    // no relevant document judged: 0
    expect(Metrics.ndcgAt(10, ["c"], j({ c: 0 }))).toBe(0)
    // a duplicate counts once
    expect(Metrics.ndcgAt(10, ["a", "a"], j({ a: 1 }))).toBeCloseTo(1, 10)
  })

  it("Recall@100 over relevant documents only", () => {
    const judged = j({ a: 1, b: 2, c: 0, d: 1 })
    expect(Metrics.recallAt(100, ["a", "c", "x"], judged)).toBeCloseTo(1 / 3, 10)
    expect(Metrics.recallAt(1, ["x", "a"], judged)).toBe(0)
    expect(Metrics.recallAt(100, ["d", "b", "a"], judged)).toBe(1)
  })

  it("MRR@10: the first relevant document within the cut-off", () => {
    const judged = j({ a: 1, c: 0 })
    expect(Metrics.mrrAt(10, ["c", "x", "a"], judged)).toBeCloseTo(1 / 3, 10)
    expect(Metrics.mrrAt(2, ["c", "x", "a"], judged)).toBe(0)
    expect(Metrics.mrrAt(10, ["a"], judged)).toBe(1)
  })

  it("evaluate averages over judged queries; a missing run counts as 0", () => {
    const qrels = new Map([["q1", j({ a: 1 })], ["q2", j({ b: 1 })], ["q3", j({ c: 0 })]])
    const runs = new Map([["q1", ["a"]]])
    const s = Metrics.evaluate(runs, qrels)
    expect(s["ndcg@10"]).toBeCloseTo(0.5, 10)
    expect(s["recall@100"]).toBeCloseTo(0.5, 10)
    expect(s["mrr@10"]).toBeCloseTo(0.5, 10)
  })

  it("percentile is nearest-rank", () => {
    expect(Metrics.percentile([5, 1, 3, 2, 4], 50)).toBe(3)
    expect(Metrics.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBe(10)
    expect(Metrics.percentile([], 50)).toBe(0)
  })
})
