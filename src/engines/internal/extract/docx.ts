/**
 * DOCX with mammoth (body, headings, lists, tables, footnotes, endnotes, text boxes) to HTML,
 * converted to Markdown (`markdown.ts`), plus the header and footer parts read from the zip (mammoth skips them). The
 * container is opened with limits first, so mammoth never sees a zip bomb.
 */
import mammoth from "mammoth"
import { findElements, htmlToMarkdown, type HtmlNode, parseHtml } from "./markdown.js"
import { applyListStarts, numberedItems } from "./numbering.js"
import { isXmlPart, mediaDataUrls, naturalCompare, parsePart, properties, refuseDtd } from "./ooxml.js"
import type { Extracted, ExtractOptions } from "./types.js"
import { ExtractFailure } from "./types.js"
import { paragraphs } from "./xml.js"
import { openZip, type Zip } from "./zip.js"

const wordTags = { p: "w:p", t: "w:t", tab: "w:tab", br: "w:br" } as const

/**
 * mammoth's HTML as a tree, each numbered list starting at the number Word shows (only when
 * the document has numbered lists and one of them does not start at 1).
 */
const withListStarts = (html: string, zip: Zip): HtmlNode => {
  const root = parseHtml(html)
  const numbering = html.includes("<ol") ? parsePart(zip, "word/numbering.xml") : undefined
  if (!numbering) return root
  const items = numberedItems(zip.text("word/document.xml") ?? "", numbering)
  if (!items.some((i) => i.number !== 1)) return root
  applyListStarts(findElements(root, (e) => e.name === "ol"), items)
  return root
}

/** Extracts a DOCX. */
export const extractDocx = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const zip = openZip(data, (n) => isXmlPart(n) || (options.imagesOnly && n.startsWith("word/media/")))
  if (!zip.text("word/document.xml")) throw new ExtractFailure("corrupt", "the DOCX has no word/document.xml")
  // every part we or mammoth read is refused when it declares a DTD (no entity expansion)
  for (const name of zip.names.filter((n) => n.startsWith("word/") && n.endsWith(".xml"))) refuseDtd(zip, name)
  const props = properties(zip)
  const warnings: Array<string> = []
  if (options.imagesOnly) {
    const images = mediaDataUrls(zip, "word/media/")
    if (images.length === 0) warnings.push("images_only: the document has no embedded images")
    return {
      format: "docx",
      units: [{ page: 1, content: images.join("\n") }],
      pageCount: props.pages,
      title: props.title,
      description: props.description,
      images,
      warnings
    }
  }
  let html: string
  try {
    const result = await mammoth.convertToHtml({ buffer: Buffer.from(data) }, { ignoreEmptyParagraphs: true })
    html = result.value
  } catch (e) {
    throw new ExtractFailure("corrupt", `the DOCX cannot be read: ${(e as Error).message}`)
  }
  const body = htmlToMarkdown(withListStarts(html, zip))
  // headers and footers: each distinct paragraph once, in part order
  const seen = new Set<string>()
  const headerLines: Array<string> = []
  const parts = zip.names.filter((n) => /^word\/(header|footer)\d*\.xml$/.test(n)).sort(naturalCompare)
  for (const part of parts) {
    for (const p of paragraphs(parsePart(zip, part) ?? [], wordTags)) {
      const line = p.replace(/\s+/g, " ").trim()
      if (line && !seen.has(line)) {
        seen.add(line)
        headerLines.push(line)
      }
    }
  }
  return {
    format: "docx",
    units: [{ page: 1, content: body }],
    pageCount: props.pages,
    trailer: headerLines.length > 0 ? `Headers and footers:\n\n${headerLines.join("\n\n")}` : undefined,
    title: props.title,
    description: props.description,
    warnings
  }
}
