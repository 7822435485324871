/**
 * Chunk token counts from the pieces' counts (`blankLineJoin`): the chunks are the ones the
 * chunker made when it counted every joined chunk text. The same chunker runs with the tiktoken
 * tokenizer (which can count joins) and with the same counts behind a plain `Tokenizer` (which
 * cannot, so every joined text is counted), on the shared fixture documents and SciFact
 * abstracts; and each join's count is checked against the count of the joined text.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { chunkPages } from "../../src/engines/documents/internal/chunk/chunker.js"
import { type JoiningTokenizer, tiktoken, type Tokenizer } from "../../src/engines/documents/internal/chunk/tokenizer.js"
import { extractDocument } from "../../src/engines/documents/internal/extract/index.js"
import { sharedPath } from "../../src/internal/shared.js"
import { fixtureFile, manifest } from "./fixtures.js"

type Pages = ReadonlyArray<{ readonly page: number; readonly content: string }>

const scifact: ReadonlyArray<Pages> = readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8")
  .split("\n").filter(Boolean).slice(0, 200)
  .map((line) => {
    const d = JSON.parse(line) as { title: string; text: string }
    return [{ page: 1, content: `# ${d.title}\n\n${d.text}` }]
  })

/** Fixtures left out for time: two PDFs that take seconds of layout analysis. */
const slow = new Set(["pdf/tracemonkey.pdf", "pdf/TAMReview.pdf"])

/** The fixture documents that extract without OCR, as pages (once for both encodings). */
let extracted: Promise<ReadonlyArray<Pages>> | undefined
const fixtures = (): Promise<ReadonlyArray<Pages>> => (extracted ??= extractFixtures())

const extractFixtures = async (): Promise<ReadonlyArray<Pages>> => {
  const out: Array<Pages> = []
  for (const entry of manifest) {
    if (entry.expect !== "ok" || slow.has(entry.path) || /\.(png|jpe?g)$/i.test(entry.path)) continue
    const file = fixtureFile(entry.path)
    const doc = await extractDocument({
      name: file.name,
      data: file.data,
      options: { enableOcr: false, imagesOnly: false, textOnly: true, password: entry.password, ocrLanguages: "eng" }
    }).catch(() => undefined)
    if (doc !== undefined) out.push(doc.units.map((u) => ({ page: u.page, content: u.content })))
  }
  return out
}

/** Blocks ending and starting with what the join reasons about: punctuation runs, spaces, digits, symbols. */
const edges: Pages = [{
  page: 1,
  content: [
    "# Ends with a period.",
    "A sentence.",
    "Two dots..",
    "A space then a period .",
    "Quote and paren?)\"",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "- list item!",
    "1999",
    "Code: `x = 1;`",
    "/path/to/file.",
    "Émile écrit: «ça»",
    "日本語のテキスト。",
    "tail --",
    "'s",
    "    indented code();",
    "```\nfenced\n```",
    "The end"
  ].join("\n\n")
}]

/** The same counts behind a plain tokenizer: no join counting, so every chunk text is counted. */
const plain = (tok: Tokenizer): Tokenizer => ({ name: tok.name, count: (text) => tok.count(text) })

const settings = [{ size: 512, overlap: 64 }, { size: 48, overlap: 16 }]

describe("chunk counts from piece counts", () => {
  for (const encoding of ["cl100k_base", "o200k_base"] as const) {
    it(`${encoding}: the same chunks and token counts as counting each chunk text`, async () => {
      const tok = await tiktoken(encoding)
      const documents = await fixtures()
      expect(documents.length).toBeGreaterThanOrEqual(20)
      let chunks = 0
      for (const s of settings) {
        // the fixtures (up to 140 KB of text each) at the default size only, for time
        for (const pages of s.size === 512 ? [...documents, ...scifact, edges] : [...scifact, edges]) {
          const joined = chunkPages(pages, s, tok)
          expect(joined).toEqual(chunkPages(pages, s, plain(tok)))
          for (const c of joined.chunks) expect(c.total_tokens).toBe(tok.count(c.content))
          chunks += joined.chunks.length
        }
      }
      expect(chunks).toBeGreaterThan(1000)
    }, 60_000)

    it(`${encoding}: a join adds what the joined text's count says`, async () => {
      const tok: JoiningTokenizer = await tiktoken(encoding)
      const blocks = [...edges[0]!.content.split("\n\n"), ...scifact.slice(0, 10).flatMap((p) => p[0]!.content.split("\n\n"))]
      let known = 0
      for (const a of blocks) {
        for (const b of blocks) {
          const join = tok.blankLineJoin(a, b)
          if (join === undefined) continue
          known++
          expect(tok.count(a) + join + tok.count(b), JSON.stringify([a.slice(-20), b.slice(0, 20)])).toBe(tok.count(`${a}\n\n${b}`))
        }
      }
      expect(known).toBeGreaterThan(blocks.length * blocks.length / 2)
    }, 60_000)
  }
})
