/**
 * A document's title and description from its first paragraph (when the extractor gives none):
 * the paragraph's whitespace collapsed, clipped to 200 / 300 characters with an ellipsis. A long
 * first paragraph is collapsed from its start only; the answers are those of the whole
 * paragraph, checked here against that definition on short, long, whitespace-heavy and
 * astral-plane paragraphs, behind headings and tables.
 */
import { describe, expect, it } from "vitest"
import { embeddingsResult } from "../../src/engines/documents/internal/files/results.js"

/** The definition: the first paragraph not a heading or table, whitespace collapsed, clipped. */
const reference = (text: string, n: number): string => {
  const p = text.split(/\n\s*\n/).map((part) => part.replace(/\s+/g, " ").trim())
    .find((part) => part.length > 0 && !part.startsWith("#") && !part.startsWith("|"))
  if (p === undefined) return ""
  const cps = [...p]
  return cps.length <= n ? p : cps.slice(0, n - 1).join("").trimEnd() + "…"
}

const metadataOf = (content: string) =>
  embeddingsResult({ format: "txt", units: [{ page: 1, content }], warnings: [] }, [{ page: 1, content }], []).data.data.metadata

const words = (n: number, sep: (i: number) => string) => Array.from({ length: n }, (_, i) => `word${i}${sep(i)}`).join("")

describe("first-paragraph title and description", () => {
  const paragraphs = [
    "A short paragraph.",
    words(2000, () => " "),
    words(2000, (i) => (i % 7 === 0 ? " \n\t " : " ")),
    // whitespace-heavy: the first 4,096 characters collapse to fewer than a clip keeps
    `${words(20, () => " ")}${" ".repeat(5000)}${words(500, () => "  ")}`,
    `${" \t".repeat(3000)}${words(400, () => " ")}`,
    words(1200, (i) => (i % 3 === 0 ? " 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 " : " ")),
    "x".repeat(10000),
    `${"a".repeat(298)} 𝔘𝔫 b`
  ]
  for (const [i, p] of paragraphs.entries()) {
    it(`paragraph ${i}: alone, after a heading, after a table`, () => {
      for (const text of [p, `# Heading\n\n${p}\n\nSecond paragraph.`, `| a | b |\n|---|---|\n\n  \n${p}`]) {
        const meta = metadataOf(text)
        expect(meta.description).toBe(reference(text, 300))
        // the title: the heading when there is one, else the paragraph
        expect(meta.title).toBe(text.startsWith("# ") ? "Heading" : reference(text, 200))
      }
    })
  }
  it("no paragraph: empty title and description", () => {
    const meta = metadataOf("# Only\n\n| a |\n\n   \n\n")
    expect([meta.title, meta.description]).toEqual(["Only", ""])
  })
})
