import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { FieldIndex, weightedTerms } from "../../src/store/internal/bm25.js"
import * as Filters from "../../src/store/internal/filter.js"
import * as Fusion from "../../src/store/Fusion.js"
import { analyze, matchSpans, terms } from "../../src/store/TextAnalysis.js"
import { Filter } from "../../src/store/VectorStore.js"

const spec = { name: "t", fields: { lang: "string", year: "number", ok: "boolean" } } as const

describe("filter compiler", () => {
  it("escapes string literals and quotes only declared columns", () => {
    expect(Filters.toSql(Filter.eq("lang", "it's"))).toBe("(`f_lang` = 'it''s')")
    expect(Filters.toSql(Filter.and(Filter.gte("year", 2020), Filter.not(Filter.in("documentId", ["a", "b'c"])))))
      .toBe("((`f_year` >= 2020) AND (NOT (`document_id` IN ('a', 'b''c'))))")
    expect(Filters.toSql(Filter.eq("ok", true))).toBe("(`f_ok` = 1)")
    expect(Filters.toSql(Filter.ne("lang", null))).toBe("(`f_lang` IS NOT NULL)")
  })
  it("refuses undeclared fields, wrong types, non-finite numbers, empty IN", () => {
    expect(Filters.validate(spec, Filter.eq("nope", "x"))).toMatch(/not a declared/)
    expect(Filters.validate(spec, Filter.eq("year", "1"))).toMatch(/number/)
    expect(Filters.validate(spec, Filter.gt("year", Infinity))).toMatch(/finite/)
    expect(Filters.validate(spec, Filter.in("lang", []))).toMatch(/at least one/)
    expect(Filters.validate(spec, Filter.eq("lang", "x' OR '1'='1"))).toBeUndefined()
  })
  it("evaluates like SQL: null never matches a comparison", () => {
    const get = (f: string) => ({ lang: "en", year: undefined } as Record<string, string | undefined>)[f]
    expect(Filters.matches(Filter.eq("lang", "en"), get)).toBe(true)
    expect(Filters.matches(Filter.gt("year", 1), get)).toBe(false)
    expect(Filters.matches(Filter.not(Filter.gt("year", 1)), get)).toBe(false)
    expect(Filters.matches(Filter.eq("year", null), get)).toBe(true)
  })
})

describe("fusion", () => {
  it("RRF sums 1/(k + rank)", () => {
    const f = Fusion.rrf([[{ id: "a", score: 9 }, { id: "b", score: 1 }], [{ id: "b", score: 5 }]], 60)
    expect(f[0]).toEqual({ id: "b", score: 1 / 62 + 1 / 61 })
    expect(f[1]).toEqual({ id: "a", score: 1 / 61 })
  })
  it("weighted fusion min-max normalises each list", () => {
    const f = Fusion.weighted(
      [{ id: "a", score: 10 }, { id: "b", score: 5 }, { id: "c", score: 0 }],
      [{ id: "c", score: 0.9 }, { id: "a", score: 0.1 }],
      0.7
    )
    expect(f.map((s) => s.id)).toEqual(["a", "b", "c"])
    expect(f[0]!.score).toBeCloseTo(0.7, 10)
    expect(f[1]!.score).toBeCloseTo(0.35, 10)
    expect(f[2]!.score).toBeCloseTo(0.3, 10)
  })
})

describe("BM25", () => {
  it("analyzes with stop words removed and Porter stems", () => {
    expect(analyze("The cells are converting sunlight").map((t) => t.term)).toEqual(["cell", "convert", "sunlight"])
  })
  it("matchSpans: the whole words whose stem is a query term, by character range, case and stop words as the analyser does", () => {
    const text = "Lighthouses and a LIGHTHOUSE's keeper; the lighter light-house. İstanbul keepers"
    const spans = matchSpans(text, new Set(terms("the lighthouse keepers")))
    expect(spans.map(([a, b]) => text.slice(a, b))).toEqual(["Lighthouses", "LIGHTHOUSE", "keeper", "keepers"])
    // offsets are of the original text (a letter that lower-cases to two code units does not shift them)
    expect(spans.at(-1)).toEqual([text.length - 7, text.length])
    expect(matchSpans(text, new Set(terms("the and a")))).toEqual([])
  })
  it("scores by hand: one term, two documents; the title as its own boosted field", () => {
    const ix = FieldIndex.build([
      { content: "apple banana" },
      { content: "Cherry\nbanana cherry durian", title: "Cherry" }
    ])
    // apple: N=2, df=1, idf = ln(1 + 1.5/1.5) = ln 2; row 0 has 2 terms, the average is 3; tf 1
    const bm25 = (idf: number, tf: number, len: number, avg: number) => idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * len / avg))
    const hits = ix.search(weightedTerms("apple"), 0, 10)
    expect(hits).toEqual([{ row: 0, score: expect.closeTo(bm25(Math.log(2), 1, 2, 3), 6) }])
    // cherry: twice in row 1's content (4 terms); once in its title, the only row with a title
    const cherry = bm25(Math.log(2), 2, 4, 3) + 0.5 * bm25(Math.log(1 + 0.5 / 1.5), 1, 1, 1)
    expect(ix.search(weightedTerms("cherries"), 0.5, 10)).toEqual([{ row: 1, score: expect.closeTo(cherry, 6) }])
    // weights multiply, a repeated word counts again, filters and ties
    expect(ix.search(weightedTerms("apple apple"), 0, 1)[0]!.score).toBeCloseTo(2 * hits[0]!.score, 6)
    expect(ix.search(weightedTerms({ terms: [{ text: "apple", weight: 0.25 }] }), 0, 1)[0]!.score).toBeCloseTo(hits[0]!.score / 4, 6)
    expect(ix.search(weightedTerms("banana"), 0, 10, (row) => row === 1).map((h) => h.row)).toEqual([1])
    expect(ix.search(weightedTerms("the of"), 0, 10)).toEqual([])
    expect(ix.contentTerms(1)).toEqual({
      counts: new Map([["cherri", 2], ["banana", 1], ["durian", 1]]),
      words: new Map([["cherri", "cherry"], ["banana", "banana"], ["durian", "durian"]]),
      length: 4
    })
  })
})

describe("AdapterKit: the public helpers are the ones the built-in adapters use", () => {
  it("filters, terms, digests and fusion as the stores apply them", async () => {
    const { AdapterKit } = await import("../../src/index.js")
    const spec = { name: "docs", fields: { lang: "string" as const } }
    expect(AdapterKit.validateFilter(spec, { _tag: "Compare", field: "lang", op: "=", value: "en" })).toBeUndefined()
    expect(AdapterKit.validateFilter(spec, { _tag: "Compare", field: "secret", op: "=", value: "x" })).toContain("secret")
    expect(AdapterKit.matchesFilter({ _tag: "Compare", field: "lang", op: "=", value: "en" }, (f) => (f === "lang" ? "en" : undefined))).toBe(true)
    expect([...AdapterKit.queryTerms("Running shoes")]).toEqual([["run", 1], ["shoe", 1]])
    const chunk = { id: "a", documentId: "d", text: "hello" }
    expect(AdapterKit.contentHash(chunk)).toBe(AdapterKit.contentHash({ ...chunk }))
    expect(AdapterKit.contentHash(chunk)).not.toBe(AdapterKit.contentHash({ ...chunk, access: ["t1"] }))
  })

  it.effect("checkReopened: another embedding is EmbeddingMismatch, a missing or retyped field InvalidInput", () =>
    Effect.gen(function*() {
      const { AdapterKit } = yield* Effect.promise(() => import("../../src/index.js"))
      const stored = { name: "docs", embedding: { model: "m", dimension: 4 }, fields: { lang: "string" as const, year: "number" as const } }
      // the same spec, or fewer fields: opens
      yield* AdapterKit.checkReopened(stored, stored)
      yield* AdapterKit.checkReopened(stored, { name: "docs", embedding: { model: "m", dimension: 4 }, fields: { lang: "string" } })
      const model = yield* Effect.flip(AdapterKit.checkReopened(stored, { ...stored, embedding: { model: "other", dimension: 4 } }))
      expect(model._tag).toBe("EmbeddingMismatch")
      expect(model).toMatchObject({ collection: "docs", expected: "m (4-d)", actual: "other (4-d)" })
      expect(model.message).toBe("collection docs was created with m (4-d), not other (4-d)")
      const none = yield* Effect.flip(AdapterKit.checkReopened(stored, { name: "docs" }))
      expect(none._tag).toBe("EmbeddingMismatch")
      const retyped = yield* Effect.flip(AdapterKit.checkReopened(stored, { ...stored, fields: { year: "string" } }))
      expect(retyped._tag).toBe("InvalidInput")
      expect(retyped.message).toContain("has no string field year")
      const missing = yield* Effect.flip(AdapterKit.checkReopened(stored, { ...stored, fields: { draft: "boolean" } }))
      expect(missing._tag).toBe("InvalidInput")
    }))
})
