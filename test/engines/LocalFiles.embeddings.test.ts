/**
 * Embeddings mode: chunk token counts agree with the tokenizer, sizes respect the limits,
 * `from_page` is right on a multi-page PDF, usage totals add up, tables are split between rows
 * only, and the metadata carries a detected language.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { blocks, chunkPages } from "../../src/engines/documents/internal/chunk/chunker.js"
import { tiktoken, type Tokenizer } from "../../src/engines/documents/internal/chunk/tokenizer.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { fixtureFile, normalize } from "./fixtures.js"

const size = 200
const overlap = 30
const tokenizer = await tiktoken("cl100k_base")

const checkUsage = (r: Upload.EmbeddingsResult) => {
  const chunks = r.data.data.chunks
  expect(r.object).toBe("chunks")
  expect(r.data.success).toBe(true)
  expect(r.error).toBe("")
  expect(r.usage.total_chunks).toBe(chunks.length)
  expect(r.usage.total_tokens).toBe(chunks.reduce((n, c) => n + c.total_tokens, 0))
  for (const c of chunks) {
    expect(c.total_tokens).toBe(tokenizer.count(c.content))
    expect(c.content.trim().length).toBeGreaterThan(0)
  }
  // the result is exactly the spec's shape
  expect(Upload.EmbeddingsResult.make(r)).toBeTruthy()
}

layer(LocalFiles.layer({ chunkSize: size, chunkOverlap: overlap, isolation: "inline" }))("embeddings mode", (it) => {
  it.effect("tracemonkey.pdf: counts, limits, usage, language", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extractChunks(fixtureFile("pdf/tracemonkey.pdf"))
      checkUsage(r)
      const chunks = r.data.data.chunks
      expect(chunks.length).toBeGreaterThan(40)
      for (const c of chunks) expect(c.total_tokens).toBeLessThanOrEqual(size)
      expect(r.usage.total_pages).toBe(14)
      expect(r.type).toBe("pdf")
      expect(r.data.data.metadata.language).toBe("en")
      expect(r.data.data.metadata.title).toBe("Trace-based Just-in-Time Type Specialization for Dynamic Languages")
      expect(r.usage.total_extracted_text).toBeGreaterThan(50_000)
      // pages only move forward and cover the document
      const pages = chunks.map((c) => c.from_page)
      expect(pages[0]).toBe(1)
      expect(pages.at(-1)).toBeGreaterThanOrEqual(13)
      for (let i = 1; i < pages.length; i++) expect(pages[i]!).toBeGreaterThanOrEqual(pages[i - 1]!)
    }))

  it.effect("from_page is the page where a chunk's new text starts", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const file = fixtureFile("pdf/tracemonkey.pdf")
      const paged = yield* upload.extract(file, { page_based: true })
      const pageText = (paged.pages ?? []).map((p) => normalize(p.content))
      // without overlap, the start of every chunk is text of its from_page
      const tok = tokenizer
      const { chunks } = chunkPages(paged.pages ?? [], { size, overlap: 0 }, tok)
      for (const c of chunks) {
        const head = normalize(c.content).slice(0, 40)
        expect(pageText[c.from_page - 1]).toContain(head)
      }
      // and the layer's chunks put the abstract's sentence on page 1 and the last reference late
      const r = yield* upload.extractChunks(file)
      const withSnippet = (s: string) => r.data.data.chunks.find((c) => normalize(c.content).includes(s))
      expect(withSnippet("Keywords JavaScript, just-in-time compilation, trace trees.")?.from_page).toBe(1)
      const refPage = pageText.findIndex((t) => t.includes("SPECJVM98 - http://www.spec.org/jvm98/.")) + 1
      expect(refPage).toBeGreaterThan(10)
      expect([refPage - 1, refPage]).toContain(withSnippet("SPECJVM98")?.from_page)
    }))

  it.effect("a CSV table is split between rows, each piece with the header row", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extractChunks(fixtureFile("csv/country-codes.csv"))
      checkUsage(r)
      const chunks = r.data.data.chunks
      expect(chunks.length).toBeGreaterThan(10)
      const rowsSeen = new Set<string>()
      for (const c of chunks) {
        const lines = c.content.split("\n")
        for (const l of lines) {
          expect(l.startsWith("| ") && l.endsWith(" |")).toBe(true) // whole rows only
          rowsSeen.add(l)
        }
      }
      // every data row of the table is in some chunk
      const full = yield* upload.extract(fixtureFile("csv/country-codes.csv"))
      for (const row of full.content.split("\n")) expect(rowsSeen.has(row)).toBe(true)
    }))

  it.effect("languages are detected (ja, ru)", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const ja = yield* upload.extractChunks(fixtureFile("pdf/issue16063-japanese.pdf"))
      const ru = yield* upload.extractChunks(fixtureFile("docx/bib-chernigovka-calendar-ru.docx"))
      checkUsage(ja)
      checkUsage(ru)
      expect(ja.data.data.metadata.language).toBe("ja")
      expect(ru.data.data.metadata.language).toBe("ru")
      for (const c of [...ja.data.data.chunks, ...ru.data.data.chunks]) expect(c.total_tokens).toBeLessThanOrEqual(size)
    }))
})

layer(LocalFiles.layer({ chunkSize: 50, chunkOverlap: 0, isolation: "inline", tokenizer: { name: "chars", count: (s) => s.length } }))(
  "embeddings mode with the model's own tokenizer",
  (it) => {
    it.effect("counts with the configured tokenizer", () =>
      Effect.gen(function*() {
        const upload = yield* Upload.Upload
        const r = yield* upload.extractChunks(fixtureFile("docx/ComplexNumberedLists.docx"))
        for (const c of r.data.data.chunks) {
          expect(c.total_tokens).toBe(c.content.length)
          expect(c.total_tokens).toBeLessThanOrEqual(50)
        }
        expect(r.usage.total_tokens).toBe(r.data.data.chunks.reduce((n, c) => n + c.content.length, 0))
      }))
  }
)

describe("chunkPages", () => {
  const words: Tokenizer = { name: "words", count: (s) => s.split(/\s+/).filter(Boolean).length }
  const sentence = (i: number) => `Sentence number ${i} has exactly seven words.`

  it("starts a chunk at every heading and keeps the heading with its text", () => {
    const md = "# One\n\nalpha beta\n\n## Two\n\ngamma delta\n\n## Three\n\nepsilon"
    const { chunks } = chunkPages([{ page: 1, content: md }], { size: 100, overlap: 10 }, words)
    expect(chunks.map((c) => c.content)).toEqual(["# One\n\nalpha beta", "## Two\n\ngamma delta", "## Three\n\nepsilon"])
  })

  it("splits a long paragraph at sentences, with overlap within the limit", () => {
    const para = Array.from({ length: 30 }, (_, i) => sentence(i)).join(" ")
    const { chunks } = chunkPages([{ page: 3, content: para }], { size: 40, overlap: 10 }, words)
    expect(chunks.length).toBeGreaterThan(5)
    for (const c of chunks) {
      expect(c.total_tokens).toBeLessThanOrEqual(40)
      expect(c.total_tokens).toBe(words.count(c.content))
      expect(c.from_page).toBe(3)
    }
    // consecutive chunks share the previous chunk's last sentence (7 words <= 10)
    for (let i = 1; i < chunks.length; i++) {
      const lastSentence = chunks[i - 1]!.content.split(/(?<=\.)\s+/).at(-1)!
      expect(chunks[i]!.content.startsWith(lastSentence)).toBe(true)
    }
    // nothing is lost
    const all = chunks.map((c) => c.content).join(" ")
    for (let i = 0; i < 30; i++) expect(all).toContain(sentence(i))
  })

  it("splits a sentence longer than the size by words, and a word by characters", () => {
    const long = Array.from({ length: 100 }, (_, i) => `w${i}`).join(" ")
    const r1 = chunkPages([{ page: 1, content: long }], { size: 10, overlap: 0 }, words)
    for (const c of r1.chunks) expect(c.total_tokens).toBeLessThanOrEqual(10)
    expect(r1.chunks.map((c) => c.content).join(" ")).toBe(long)
    const chars: Tokenizer = { name: "chars", count: (s) => s.length }
    const r2 = chunkPages([{ page: 1, content: "x".repeat(95) }], { size: 10, overlap: 0 }, chars)
    expect(r2.chunks.map((c) => c.content.length)).toEqual([10, 10, 10, 10, 10, 10, 10, 10, 10, 5])
  })

  it("never splits inside a table row; an oversized row is kept whole and reported", () => {
    const table = ["| a | b |", "| --- | --- |", ...Array.from({ length: 20 }, (_, i) => `| r${i} | v${i} |`)].join("\n")
    const { chunks } = chunkPages([{ page: 2, content: table }], { size: 20, overlap: 0 }, words)
    for (const c of chunks) {
      expect(c.content.split("\n").slice(0, 2).join("\n")).toBe("| a | b |\n| --- | --- |")
      expect(c.total_tokens).toBeLessThanOrEqual(20)
    }
    const big = `| ${Array.from({ length: 40 }, (_, i) => `c${i}`).join(" | ")} |`
    const r = chunkPages([{ page: 1, content: `| h |\n| --- |\n${big}` }], { size: 20, overlap: 0 }, words)
    expect(r.chunks.some((c) => c.content === big)).toBe(true)
    expect(r.notes).toHaveLength(1)
  })

  it("splits Markdown into headings, paragraphs, lists and tables", () => {
    expect(blocks("# T\n\npara one\nline two\n\n- a\n- b\n\n| x |\n| --- |").map((b) => b.kind)).toEqual([
      "heading",
      "text",
      "text",
      "table"
    ])
  })
})
