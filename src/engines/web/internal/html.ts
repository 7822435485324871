/**
 * HTML pages: bytes to text (charset from the header, a BOM or a `<meta>`), metadata, links,
 * content selection (`onlyMainContent`, `includeTags`, `excludeTags`, `removeBase64Images`) on
 * linkedom's DOM, and Markdown: each kept root is serialized (`innerHTML` of the body,
 * `outerHTML` of an element) and written by the document engine's one-pass writer on
 * htmlparser2 in its rich flavour (`htmlToMarkdown(html, { inline: "rich" })`: links, images,
 * emphasis, GFM tables and strike-through, task list boxes, fenced code, Markdown escapes).
 *
 * Relative links and image sources are made absolute against the page URL (or its
 * `<base href>`) before conversion, so the Markdown of a page can be read on its own.
 */
import chardet from "chardet"
import iconv from "iconv-lite"
import { parseHTML } from "linkedom"
import { htmlToMarkdown } from "../../documents/Markdown.js"
import { parseHttpUrl } from "../../../internal/url.js"

// =============================================================================
// Charset
// =============================================================================

// Labels that browsers decode as windows-1252 (WHATWG Encoding), which iconv-lite reads strictly.
const aliases: Record<string, string> = {
  "iso-8859-1": "windows-1252",
  "iso8859-1": "windows-1252",
  latin1: "windows-1252",
  "us-ascii": "windows-1252",
  ascii: "windows-1252",
  "x-sjis": "shift_jis"
}

const usable = (label: string | undefined): string | undefined => {
  if (!label) return undefined
  const l = label.trim().toLowerCase()
  const name = aliases[l] ?? l
  return iconv.encodingExists(name) ? name : undefined
}

const bomCharset = (data: Uint8Array): string | undefined => {
  if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) return "utf-8"
  if (data[0] === 0xff && data[1] === 0xfe) return "utf-16le"
  if (data[0] === 0xfe && data[1] === 0xff) return "utf-16be"
  return undefined
}

/** The charset a `<meta charset>` or `<meta http-equiv="content-type">` declares in the first 4 KiB. */
export const metaCharset = (data: Uint8Array): string | undefined => {
  const head = Buffer.from(data.buffer, data.byteOffset, Math.min(4096, data.byteLength)).toString("latin1")
  return /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)/i.exec(head)?.[1]
}

const validUtf8 = (data: Uint8Array): boolean => {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(data)
    return true
  } catch {
    return false
  }
}

/**
 * Decodes a page: a byte-order mark wins, then the `Content-Type` charset, then a `<meta>`
 * declaration, then UTF-8 when the bytes are valid UTF-8, then chardet's guess, then
 * windows-1252. Returns the text and the encoding used.
 */
export const decodePage = (data: Uint8Array, headerCharset: string | undefined): { text: string; encoding: string } => {
  const encoding = bomCharset(data) ??
    usable(headerCharset) ??
    usable(metaCharset(data)) ??
    (validUtf8(data) ? "utf-8" : usable(chardet.detect(data.subarray(0, 64 * 1024)) ?? undefined)) ??
    "windows-1252"
  const text = iconv.decode(Buffer.from(data.buffer, data.byteOffset, data.byteLength), encoding)
  return { text: text.replace(/^\uFEFF/, ""), encoding }
}

// =============================================================================
// Pages
// =============================================================================

/** What to keep of a page. */
export interface ContentOptions {
  /** Keep the main content only (default true). */
  readonly onlyMainContent?: boolean | undefined
  /** CSS selectors (tags, `.class`, `#id`) whose elements are the only content kept. */
  readonly includeTags?: ReadonlyArray<string> | undefined
  /** CSS selectors whose elements are removed. */
  readonly excludeTags?: ReadonlyArray<string> | undefined
  /** Remove `data:` images (default false). */
  readonly removeBase64Images?: boolean | undefined
}

/** A processed HTML page. */
export interface HtmlPage {
  readonly title: string | undefined
  readonly description: string | undefined
  readonly language: string | undefined
  /** Every http(s) link of the page, absolute, fragment removed, first occurrence order. */
  readonly links: ReadonlyArray<string>
  /** The selected content as HTML. */
  readonly html: string
  /** The selected content as Markdown. */
  readonly markdown: string
}

// Never content.
const dropAlways = "script, style, noscript, template, iframe, object, embed, canvas, link, meta"
// Boilerplate around the main content.
const boilerplate = [
  "nav",
  "aside",
  "[role=navigation]",
  "[role=complementary]",
  "[role=search]",
  ".sidebar",
  "#sidebar",
  ".navbar",
  ".menu",
  ".breadcrumb",
  ".breadcrumbs",
  ".cookie",
  ".cookie-banner",
  ".advert",
  ".ads",
  ".share",
  ".social"
].join(", ")
const pageChrome = "header, footer, [role=banner], [role=contentinfo], #header, #footer, .header, .footer"

type Node = {
  readonly nodeName: string
  textContent: string | null
  innerHTML: string
  outerHTML: string
  getAttribute(name: string): string | null
  setAttribute(name: string, value: string): void
  remove(): void
  querySelector(selector: string): Node | null
  querySelectorAll(selector: string): ArrayLike<Node>
  contains(other: Node): boolean
}
type Doc = Node & { readonly body: Node | null; readonly documentElement: Node | null }

const all = (root: Node, selector: string): Array<Node> => Array.from(root.querySelectorAll(selector))

/**
 * Checks that every selector parses (linkedom throws on a bad one). Returns the message of the
 * first bad selector, or undefined.
 */
export const invalidSelector = (selectors: ReadonlyArray<string>): string | undefined => {
  const { document } = parseHTML("<!doctype html><html><body><p>x</p></body></html>")
  for (const s of selectors) {
    try {
      ;(document as unknown as Doc).querySelectorAll(s)
    } catch (e) {
      return `invalid selector ${JSON.stringify(s)}: ${(e as Error).message}`
    }
  }
  return undefined
}

const parse = (text: string): Doc => {
  const doc = parseHTML(text).document as unknown as Doc
  if (doc.body) return doc
  return parseHTML(`<!doctype html><html><head></head><body>${text}</body></html>`).document as unknown as Doc
}

/** The base URL of a page: its `<base href>` when valid, else the page URL. */
const baseOf = (doc: Doc, pageUrl: string): URL => {
  const href = doc.querySelector("base[href]")?.getAttribute("href")
  return (href ? parseHttpUrl(href, pageUrl) : undefined) ?? new URL(pageUrl)
}

const absolute = (value: string, base: URL): string | undefined => {
  const url = parseHttpUrl(value, base)
  if (!url) return undefined
  url.hash = ""
  return url.href
}

/**
 * Processes an HTML page fetched from `pageUrl` (the final URL, after redirects): metadata and
 * links from the whole document, content per `options`.
 */
export const processHtml = (text: string, pageUrl: string, options: ContentOptions = {}): HtmlPage => {
  const doc = parse(text)
  const base = baseOf(doc, pageUrl)
  const title = doc.querySelector("title")?.textContent?.replace(/\s+/g, " ").trim() || undefined
  const description =
    doc.querySelector("meta[name=description]")?.getAttribute("content")?.trim() ||
    doc.querySelector("meta[property='og:description']")?.getAttribute("content")?.trim() ||
    undefined
  const language = doc.documentElement?.getAttribute("lang")?.trim() || undefined

  const links: Array<string> = []
  const seen = new Set<string>()
  for (const a of all(doc, "a[href], area[href]")) {
    const url = absolute(a.getAttribute("href") ?? "", base)
    if (url !== undefined && !seen.has(url)) {
      seen.add(url)
      links.push(url)
    }
  }

  for (const el of all(doc, dropAlways)) el.remove()
  for (const sel of options.excludeTags ?? []) for (const el of all(doc, sel)) el.remove()

  const body = doc.body!
  let roots: Array<Node>
  if (options.includeTags && options.includeTags.length > 0) {
    const picked = options.includeTags.flatMap((sel) => all(body, sel))
    // document order, and no element inside another picked one
    const ordered = all(body, "*").filter((el) => picked.includes(el))
    roots = ordered.filter((el) => !ordered.some((other) => other !== el && other.contains(el)))
  } else if (options.onlyMainContent ?? true) {
    const main = body.querySelector("main, [role=main]")
    const articles = all(body, "article")
    const root = main ?? (articles.length === 1 ? articles[0]! : body)
    for (const el of all(root, boilerplate)) el.remove()
    if (root === body) for (const el of all(root, pageChrome)) el.remove()
    roots = [root]
  } else {
    roots = [body]
  }

  for (const root of roots) {
    for (const a of all(root, "a[href]")) {
      const url = absolute(a.getAttribute("href") ?? "", base)
      if (url !== undefined) a.setAttribute("href", url)
    }
    for (const img of all(root, "img[src]")) {
      const src = img.getAttribute("src") ?? ""
      if (/^data:/i.test(src.trim())) {
        if (options.removeBase64Images) img.remove()
        continue
      }
      const url = parseHttpUrl(src, base)
      if (url !== undefined) img.setAttribute("src", url.href)
    }
  }

  // each root serialized once: the `html` format, and the Markdown writer's input (an element
  // root, a table picked by includeTags, with its own tag so that it is written as a table)
  const parts = roots.map((r) => r === body ? body.innerHTML : r.outerHTML)
  const html = roots.length === 1 && roots[0] === body ? parts[0]!.trim() : parts.join("\n")
  const markdown = parts.map((p) => htmlToMarkdown(p, { inline: "rich" })).filter((m) => m !== "").join("\n\n")
  return { title, description, language, links, html, markdown }
}

/** Whether a media type is an HTML page. */
export const isHtml = (mediaType: string): boolean => mediaType === "text/html" || mediaType === "application/xhtml+xml"
