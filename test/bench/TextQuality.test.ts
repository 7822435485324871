import { describe, expect, it } from "vitest"
import { gluedRate, lcsLength, markupRate, measure, overlap, readingOrder, words } from "../../src/bench/TextQuality.js"

describe("TextQuality", () => {
  it("words are NFKC, lower-cased runs of letters and digits", () => {
    expect(words("Just-in-Time ﬁle, 12.5% Ünïcode **bold**")).toEqual(["just", "in", "time", "file", "12", "5", "ünïcode", "bold"])
    // Chinese and Japanese do not space words: each character counts; Hangul and Devanagari keep words
    expect(words("酒精和NASA 한국어 हिन्दी")).toEqual(["酒", "精", "和", "nasa", "한국어", "हिन्दी"])
  })

  it("overlap counts each word as often as both texts have it", () => {
    const q = overlap(words("a a b c"), words("a b b d"))
    expect(q.precision).toBeCloseTo(2 / 4)
    expect(q.recall).toBeCloseTo(2 / 4)
    expect(q.f1).toBeCloseTo(0.5)
    expect(overlap([], words("x"))).toEqual({ precision: 0, recall: 0, f1: 0 })
    expect(overlap([], [])).toEqual({ precision: 1, recall: 1, f1: 1 })
  })

  it("LCS by Myers matches the textbook value and gives up past maxD", () => {
    expect(lcsLength([..."ABCABBA"], [..."CBABAC"], 100)).toBe(4)
    expect(lcsLength([..."abc"], [..."abc"], 0)).toBe(3)
    expect(lcsLength([..."abc"], [..."xyz"], 2)).toBeUndefined()
  })

  it("reading order is 1 in order, lower when columns interleave, and ignores missing words", () => {
    const ref = words("left one left two left three right one right two right three")
    expect(readingOrder(ref, ref)).toBe(1)
    // a line-by-line read across two columns
    const interleaved = words("left one right one left two right two left three right three")
    const score = readingOrder(interleaved, ref)
    expect(score).toBeGreaterThan(0.5)
    expect(score).toBeLessThan(1)
    // a text that lost words but kept the order is still in order
    expect(readingOrder(words("alpha delta"), words("alpha beta gamma delta"))).toBe(1)
    expect(readingOrder([], ref)).toBe(0)
  })

  it("reading order of long shuffled sequences is measured in windows", () => {
    const ref = Array.from({ length: 9_000 }, (_, i) => `w${i % 3000}`)
    const shuffled = [...ref].reverse()
    const score = readingOrder(shuffled, ref)
    expect(score).toBeGreaterThan(0)
    expect(score).toBeLessThan(0.5)
  })

  it("glued words are two reference words written together", () => {
    const ref = words("visas are issued can download the complete text")
    expect(gluedRate(words("visas are issuedcan download thecomplete text"), ref)).toBeCloseTo(2 / 6)
    expect(gluedRate(words("visas are issued"), ref)).toBe(0)
    expect(gluedRate([], ref)).toBe(0)
  })

  it("markup rate counts Markdown escapes and emphasis inside running text", () => {
    expect(markupRate("custom change of b. -\\> e. see \\[1\\]")).toBeGreaterThan(0)
    expect(markupRate("**Bold** and *italic* and _under_")).toBeCloseTo((4 * 1000) / 5)
    expect(markupRate("# Heading\n\n- item one\n- item two\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\n2 * 3 = 6, snake_case_name")).toBe(0)
  })

  it("measure puts it together", () => {
    const q = measure("The quick brown fox", "the quick brown fox jumps")
    expect(q.precision).toBe(1)
    expect(q.recall).toBeCloseTo(0.8)
    expect(q.order).toBe(1)
    expect(q.words).toBe(4)
    expect(q.referenceWords).toBe(5)
  })
})
