/**
 * `AnswerCheck`: sentence splitting around citation marks, and the support score on answers whose
 * right status is plain from the text.
 */
import { describe, expect, it } from "@effect/vitest"
import type * as Answer from "../../src/pipeline/Answer.js"
import * as AnswerCheck from "../../src/pipeline/AnswerCheck.js"

const source = (n: number, text: string, title?: string): Answer.Source => ({
  n,
  id: `c${n}`,
  documentId: `d${n}`,
  score: 1,
  text,
  metadata: {},
  source: `doc${n}.md`,
  page: undefined,
  place: undefined,
  chunk: undefined,
  title
})

const sources = [
  source(1, "The Fresnel lens was invented by Augustin Fresnel in 1822 to make lighthouse beams visible from far away.", "Lighthouse optics"),
  source(2, "The harbour was dredged in 1910 so that steamships could dock at the quay.")
]

describe("AnswerCheck", () => {
  it("splits sentences after the citation marks that follow their full stop, and at line breaks; keeps decimals", () => {
    expect(AnswerCheck.sentences("It was 1.5 m wide [1]. Then it moved.[2] Why?\nA list item").map((s) => s.text)).toEqual([
      "It was 1.5 m wide [1].",
      "Then it moved.[2]",
      "Why?",
      "A list item"
    ])
    const text = "First one [1].  Second [2]."
    for (const s of AnswerCheck.sentences(text)) expect(text.slice(s.offset, s.offset + s.text.length)).toBe(s.text)
  })

  it("marks a sentence whose cited passage does not hold it, one citing an unknown source, and one citing nothing", () => {
    const c = AnswerCheck.check({
      text: "Augustin Fresnel invented the lens in 1822 [1]. The harbour was dredged in 1910 [1]. " +
        "Steamships docked at the quay [7]. Bananas grow in the tropics. That is all.",
      sources
    })
    expect(c.sentences.map((s) => s.status)).toEqual(["supported", "unsupported", "unsupported", "uncited", "no-claim"])
    expect(c.sentences[0]!.support).toBe(1)
    expect(c.sentences[1]!.support).toBeLessThan(AnswerCheck.defaultThreshold)
    expect(c.sentences[2]!).toMatchObject({ cited: [7], support: 0 })
    expect(c).toMatchObject({ threshold: 0.5, supported: 1, unsupported: 2, uncited: 1 })
    // the same sentence citing the right passage is supported; several citations pool their passages
    const right = AnswerCheck.check({ text: "The harbour was dredged in 1910 [1][2].", sources })
    expect(right.sentences[0]!.status).toBe("supported")
    const text = AnswerCheck.format(c)
    expect(text).toMatch(/^Check \(lexical support, threshold 0\.5\): 1 of 4 sentence\(s\) supported by their citations, 2 unsupported, 1 without citation$/m)
    expect(text).toContain("  unsupported (0.00): Steamships docked at the quay [7].")
    expect(text).toContain("  no citation: Bananas grow in the tropics.")
  })

  it("a threshold of 0 accepts any cited sentence with a known source; 1 needs every content word", () => {
    const text = "Fresnel designed lenses for ships [1]."
    expect(AnswerCheck.check({ text, sources }, { threshold: 0 }).sentences[0]!.status).toBe("supported")
    expect(AnswerCheck.check({ text, sources }, { threshold: 1 }).sentences[0]!.status).toBe("unsupported")
  })
})
