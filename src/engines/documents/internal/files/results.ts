/**
 * The local engine's answers built from an extracted document: the pages after
 * `remove_headers`, the standard result, and the embeddings-mode result with its chunk metadata
 * (sheet names, OCR marks) and document metadata (title, description, language).
 */
import { randomUUID } from "node:crypto"
import type * as Upload from "../../../../api/Upload.js"
import type { ChunkOut } from "../chunk/chunker.js"
import { removeRepeatedLines } from "../chunk/headers.js"
import { detectLanguage } from "../chunk/language.js"
import { type Extracted, wireType } from "../extract/types.js"
import type { CallOptions } from "./request.js"

/** Characters (code points) of a string, without materialising an array. */
const codePoints = (s: string): number => {
  let low = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xdc00 && c <= 0xdfff) low++
  }
  return s.length - low
}

const firstHeading = (text: string): string | undefined =>
  /^#{1,6}\s+(.+)$/m.exec(text)?.[1]?.trim()

/** The longest clip of a title or description (see {@link collapsed}). */
const maxClip = 300

/** Paragraph breaks: a line break, whitespace, a line break. */
const paragraphBreak = /\n\s*\n/g

/** Characters of a paragraph's start whose whitespace is collapsed when it is long (see {@link collapsed}). */
const headChars = 4096

/**
 * `part` with its whitespace runs as one space, trimmed; of a long part, its start only, when
 * that start still has more code points than any clip of it keeps (so `clip` of either is the
 * same): a document's first paragraph may be the whole document.
 */
const collapsed = (part: string): string => {
  if (part.length > headChars) {
    const head = part.slice(0, headChars).replace(/\s+/g, " ").trimStart()
    if (codePoints(head) > maxClip + 2) return head
  }
  return part.replace(/\s+/g, " ").trim()
}

/** The first paragraph that is not a heading or a table, whitespace collapsed (its start only when long: see {@link collapsed}). */
const firstParagraph = (text: string): string | undefined => {
  paragraphBreak.lastIndex = 0
  let from = 0
  for (;;) {
    const m = paragraphBreak.exec(text)
    const p = collapsed(text.slice(from, m === null ? text.length : m.index))
    if (p.length > 0 && !p.startsWith("#") && !p.startsWith("|")) return p
    if (m === null) return undefined
    from = m.index + m[0].length
  }
}

/** `s` cut to `n` characters (code points, `n` ≤ {@link maxClip}) with an ellipsis; `s` itself when it fits. */
const clip = (s: string, n: number) => {
  if (s.length <= n) return s // n UTF-16 units are at most n code points
  let kept = ""
  let count = 0
  for (const c of s) {
    if (++count > n) return kept.trimEnd() + "…"
    if (count < n) kept += c
  }
  return s
}

/** Spreadsheet chunks name their sheet (`from_sheet`), so that a citation can. */
const withSheetNames = (
  chunks: Array<ChunkOut>,
  format: Extracted["format"],
  pages: ReadonlyArray<{ readonly page: number; readonly name?: string }>
): Array<ChunkOut | (ChunkOut & { from_sheet: string })> => {
  if (format !== "xlsx" && format !== "xls" && format !== "ods") return chunks
  const names = new Map(pages.flatMap((p) => (p.name !== undefined ? [[p.page, p.name] as const] : [])))
  return chunks.map((c) => {
    const name = names.get(c.from_page)
    return name === undefined ? c : { ...c, from_sheet: name }
  })
}

/** Chunks of pages that OCR read say so (`ocr: true`). */
const withOcr = <C extends ChunkOut>(chunks: Array<C>, doc: Extracted): Array<C | (C & { ocr: true })> => {
  const read = new Set(doc.units.flatMap((u) => (u.ocr ? [u.page] : [])))
  return read.size === 0 ? chunks : chunks.map((c) => (read.has(c.from_page) ? { ...c, ocr: true as const } : c))
}

/** The pages after `remove_headers`, with the document-wide trailer on the last page. */
export const finalUnits = (doc: Extracted, opts: CallOptions, warnings: Array<string>): Array<Upload.PageContent> => {
  let contents = doc.units.map((u) => u.content)
  // header/footer removal is about text lines; an images_only page lists images, one per line
  if (opts.removeHeaders && doc.format === "pdf" && !opts.imagesOnly) {
    const r = removeRepeatedLines(contents)
    contents = r.pages
    if (r.removed > 0) warnings.push(`remove_headers: ${r.removed} repeated header/footer line(s) removed`)
  }
  return doc.units.map((u, i) => {
    let content = contents[i] ?? ""
    if (doc.trailer && i === doc.units.length - 1) content = content ? `${content}\n\n${doc.trailer}` : doc.trailer
    return { page: u.page, ...(u.name !== undefined ? { name: u.name } : {}), content }
  })
}

/** The standard (extraction) result of a document. */
export const standardResult = (
  doc: Extracted,
  opts: CallOptions,
  pages: ReadonlyArray<Upload.PageContent>
): Upload.StandardResult => ({
  status: true,
  content: doc.images && opts.imagesOnly ? doc.images.join("\n") : pages.map((p) => p.content).filter(Boolean).join("\n\n"),
  type: wireType(doc.format),
  format: doc.format,
  error: "",
  ...(opts.pageBased ? { pages } : {})
})

/** The document's metadata: title, description (clipped), language, and the format's own properties. */
const documentMetadata = (doc: Extracted, text: string) => {
  let first: { readonly p: string | undefined } | undefined
  const paragraph = () => (first ??= { p: firstParagraph(text) }).p
  const title = doc.title ?? firstHeading(text) ?? paragraph()
  const description = doc.description ?? paragraph()
  return {
    title: title ? clip(title, 200) : "",
    description: description ? clip(description, maxClip) : "",
    language: detectLanguage(text),
    ...(doc.metadata ? { properties: { ...doc.metadata } } : {})
  }
}

/** The embeddings-mode result of a document and its chunks. */
export const embeddingsResult = (
  doc: Extracted,
  pages: ReadonlyArray<Upload.PageContent>,
  chunks: Array<ChunkOut>
): Upload.EmbeddingsResult => {
  const text = pages.map((p) => p.content).join("\n\n")
  return {
    id: `chunks-${randomUUID()}`,
    object: "chunks",
    created: Math.floor(Date.now() / 1000),
    data: {
      success: true,
      data: {
        metadata: documentMetadata(doc, text),
        chunks: withOcr(withSheetNames(chunks, doc.format, pages), doc)
      }
    },
    usage: {
      total_chunks: chunks.length,
      total_extracted_text: codePoints(text),
      total_tokens: chunks.reduce((n, c) => n + c.total_tokens, 0),
      total_pages: doc.pageCount ?? pages.length
    },
    type: wireType(doc.format),
    format: doc.format,
    error: ""
  }
}
