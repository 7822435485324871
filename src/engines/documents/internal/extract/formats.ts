/**
 * The text formats (JSON, XML, HTML, TXT), SVG and raster images.
 */
import { findElement, findElements, htmlToMarkdown, type HtmlNode, parseHtml, textContent, tidy, visibleText } from "./markdown.js"
import { recognize } from "./ocr.js"
import { readStructured, vocabularyOf } from "./structured-xml.js"
import { decodeText, htmlDeclaredCharset, xmlDeclaredEncoding } from "./text.js"
import { ExtractFailure, type Extracted, type ExtractOptions } from "./types.js"
import { find, parseOrdered, textOf, walk } from "./xml.js"

// =============================================================================
// JSON
// =============================================================================

const isScalar = (v: unknown) => v === null || typeof v !== "object"
const scalar = (v: unknown) => (typeof v === "string" ? v.replace(/\r?\n/g, " ") : String(v))

/**
 * Renders parsed JSON as an indented outline: `key: value` for scalars (strings decoded, so
 * `\u201c` escapes appear as the characters), `key:` with indented children for containers,
 * `-` for array items. Iterative, so deep nesting cannot overflow the stack.
 */
export const jsonOutline = (value: unknown): string => {
  const lines: Array<string> = []
  const stack: Array<{ key: string | undefined; value: unknown; depth: number }> = [{ key: undefined, value, depth: 0 }]
  while (stack.length > 0) {
    const { depth, key, value: v } = stack.pop()!
    const indent = "  ".repeat(Math.min(depth, 32))
    const label = key === undefined ? "" : key
    if (isScalar(v)) {
      lines.push(`${indent}${label === "-" ? "- " : label ? `${label}: ` : ""}${scalar(v)}`)
      continue
    }
    const entries: Array<[string, unknown]> = Array.isArray(v) ? v.map((x) => ["-", x]) : Object.entries(v as object)
    if (label) lines.push(`${indent}${label === "-" ? "-" : `${label}:`}`)
    const childDepth = label ? depth + 1 : depth
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, x] = entries[i]!
      stack.push({ key: k, value: x, depth: childDepth })
    }
  }
  return lines.join("\n")
}

/** Extracts JSON. */
export const extractJson = async (data: Uint8Array): Promise<Extracted> => {
  const { text } = decodeText(data)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    throw new ExtractFailure("corrupt", `the JSON cannot be parsed: ${(e as Error).message}`)
  }
  return { format: "json", units: [{ page: 1, content: jsonOutline(value) }], warnings: [] }
}

// =============================================================================
// XML and SVG
// =============================================================================

const looksLikeHtml = (s: string) => /<\/?(p|a|br|div|span|img|strong|em|b|i|ul|li)\b[^>]*>/i.test(s)

/**
 * Extracts XML, decoded per the declared encoding: a JATS, DocBook or TEI document as sections,
 * headings, paragraphs, lists and tables (`structured-xml.ts`); any other XML as its text nodes
 * in document order.
 */
export const extractXml = async (data: Uint8Array): Promise<Extracted> => {
  const { text } = decodeText(data, xmlDeclaredEncoding(data))
  const nodes = parseOrdered(text, "the XML document")
  const vocabulary = vocabularyOf(nodes, text.slice(0, 2048))
  if (vocabulary) {
    const doc = readStructured(nodes, vocabulary)
    return {
      format: "xml",
      units: [{ page: 1, content: doc.content }],
      title: doc.title,
      description: doc.description,
      metadata: { vocabulary },
      warnings: []
    }
  }
  const lines: Array<string> = []
  walk(nodes, (node, tag) => {
    if (tag === "#text" || tag === "#cdata") {
      const raw = tag === "#text" ? String(node["#text"] ?? "") : textOf([node])
      const value = looksLikeHtml(raw) ? htmlToMarkdown(raw) : raw
      const clean = value.replace(/[ \t]+/g, " ").trim()
      if (clean) lines.push(clean)
      return false
    }
  })
  const titleNode = find(nodes, "title")
  const title = titleNode ? textOf([titleNode]).trim() : undefined
  const descNode = find(nodes, "description")
  const description = descNode ? textOf([descNode]).replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim() : undefined
  return { format: "xml", units: [{ page: 1, content: lines.join("\n") }], title, description, warnings: [] }
}

/** Extracts an SVG's text: `<title>`, `<desc>` and `<text>`/`<tspan>` nodes. */
export const extractSvg = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const { text } = decodeText(data, xmlDeclaredEncoding(data))
  const nodes = parseOrdered(text, "the SVG image")
  const lines: Array<string> = []
  walk(nodes, (node, tag) => {
    if (tag === "style" || tag === "script" || tag === "defs") return false
    if (tag === "text" || tag === "title" || tag === "desc" || tag === "textPath") {
      const t = textOf([node]).replace(/\s+/g, " ").trim()
      if (t) lines.push(t)
      return false
    }
  })
  const warnings: Array<string> = []
  if (options.imagesOnly) {
    const url = `data:image/svg+xml;base64,${Buffer.from(data).toString("base64")}`
    return { format: "svg", units: [{ page: 1, content: url }], images: [url], warnings }
  }
  return { format: "svg", units: [{ page: 1, content: lines.join("\n") }], warnings }
}

// =============================================================================
// HTML
// =============================================================================

/** The `content` of the first `<meta>` whose `attribute` is `value`, trimmed. */
const metaContent = (root: HtmlNode, attribute: string, value: string): string | undefined =>
  findElements(root, (e) => e.name === "meta" && e.attribs?.[attribute]?.toLowerCase() === value)[0]?.attribs?.content?.trim()

/**
 * Extracts HTML of any shape (a full page, a fragment, an e-mail body; the declared or detected
 * charset): the whole visible text of the page as Markdown (headings, lists and tables keep
 * their structure), navigation, headers and footers included, as a text browser shows the page;
 * scripts, styles, templates, the head and hidden elements dropped (`markdown.ts`). When the
 * Markdown conversion yields nothing, the page's plain visible text is used. (Scraping a URL
 * with the web engine is different: there `onlyMainContent` selects the main content.)
 */
export const extractHtml = async (data: Uint8Array): Promise<Extracted> => {
  const { text } = decodeText(data, htmlDeclaredCharset(data))
  let root: HtmlNode
  try {
    root = parseHtml(text)
  } catch (e) {
    throw new ExtractFailure("corrupt", `the HTML cannot be parsed: ${(e as Error).message}`)
  }
  const titleElement = findElement(root, "title")
  const h1 = findElement(root, "h1")
  const description = metaContent(root, "name", "description") || metaContent(root, "property", "og:description")
  const title = (titleElement && textContent(titleElement).trim()) ||
    metaContent(root, "property", "og:title") ||
    (h1 && textContent(h1).replace(/\s+/g, " ").trim())
  let content = htmlToMarkdown(root)
  if (content.trim() === "") content = visibleText(root)
  return {
    format: "html",
    units: [{ page: 1, content }],
    title: title || undefined,
    description: description || undefined,
    warnings: []
  }
}

// =============================================================================
// TXT
// =============================================================================

/** Extracts plain text (encoding detected). */
export { extractTxt } from "./text.js"

// =============================================================================
// Images
// =============================================================================

const imageMime = (data: Uint8Array): string => {
  const head = Buffer.from(data.subarray(0, 12))
  if (head[0] === 0x89 && head.toString("latin1", 1, 4) === "PNG") return "image/png"
  if (head[0] === 0xff && head[1] === 0xd8) return "image/jpeg"
  if (head.toString("latin1", 0, 3) === "GIF") return "image/gif"
  if (head.toString("latin1", 0, 2) === "BM") return "image/bmp"
  if (head.toString("latin1", 8, 12) === "WEBP") return "image/webp"
  return "image/tiff"
}

/**
 * Extracts a raster image: its text by OCR with `enable_ocr`; otherwise (no vision model
 * here) the image itself as a data URL, with a warning.
 */
export const extractImage = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const url = () => `data:${imageMime(data)};base64,${Buffer.from(data).toString("base64")}`
  if (options.imagesOnly) return { format: "image", units: [{ page: 1, content: url() }], images: [url()], warnings: [] }
  if (!options.enableOcr) {
    if (options.textOnly) {
      return {
        format: "image",
        units: [{ page: 1, content: "" }],
        warnings: ["text_only: an image has no text without OCR; pass enable_ocr=true"]
      }
    }
    return {
      format: "image",
      units: [{ page: 1, content: url() }],
      warnings: ["enable_ocr is false and no vision model is configured: the image is returned as a data URL"]
    }
  }
  const text = await recognize(data, options.ocrLangPath, options.ocrLanguages)
  return { format: "image", units: [{ page: 1, content: tidy(text) }], warnings: [] }
}
