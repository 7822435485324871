/**
 * Format detection: magic bytes first, then the container's contents (zip entries, compound
 * file streams), then the file extension and MIME type. Pure.
 */
import { extname } from "node:path"
import type { Format } from "./types.js"
import { zipNames } from "./zip.js"

const startsWith = (data: Uint8Array, bytes: ReadonlyArray<number>, at = 0) =>
  bytes.every((b, i) => data[at + i] === b)

/** The bytes `from`..`to` as Latin-1 characters (one per byte; no spread of the bytes as arguments). */
const ascii = (data: Uint8Array, from: number, to: number) =>
  Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("latin1", from, Math.min(to, data.length))

const byExtension: Record<string, Format> = {
  ".pdf": "pdf",
  ".docx": "docx",
  ".docm": "docx",
  ".pptx": "pptx",
  ".pptm": "pptx",
  ".xlsx": "xlsx",
  ".xlsm": "xlsx",
  ".xls": "xls",
  ".csv": "csv",
  ".tsv": "csv",
  ".json": "json",
  ".xml": "xml",
  // PubMed Central's JATS articles
  ".nxml": "xml",
  ".rss": "xml",
  ".atom": "xml",
  ".html": "html",
  ".htm": "html",
  ".xhtml": "html",
  ".txt": "txt",
  ".md": "markdown",
  ".markdown": "markdown",
  ".mdown": "markdown",
  ".mkd": "markdown",
  ".mdx": "markdown",
  ".ipynb": "notebook",
  ".epub": "epub",
  ".eml": "email",
  ".rtf": "rtf",
  ".mbox": "mbox",
  ".mbx": "mbox",
  ".rst": "rst",
  ".rest": "rst",
  ".adoc": "asciidoc",
  ".asciidoc": "asciidoc",
  ".odt": "odt",
  ".ott": "odt",
  ".fodt": "odt",
  ".ods": "ods",
  ".ots": "ods",
  ".fods": "ods",
  ".odp": "odp",
  ".otp": "odp",
  ".fodp": "odp",
  ".text": "txt",
  ".log": "txt",
  ".svg": "svg",
  ".jpg": "image",
  ".jpeg": "image",
  ".png": "image",
  ".webp": "image",
  ".gif": "image",
  ".bmp": "image",
  ".tif": "image",
  ".tiff": "image",
  ".mp3": "audio",
  ".wav": "audio",
  ".ogg": "audio",
  ".m4a": "audio"
}

const byMime = (mime: string | undefined): Format | undefined => {
  if (!mime) return undefined
  const m = mime.toLowerCase().split(";")[0]!.trim()
  if (m === "application/pdf") return "pdf"
  if (m === "image/svg+xml") return "svg"
  if (m.startsWith("image/")) return "image"
  if (m.startsWith("audio/")) return "audio"
  if (m === "text/csv") return "csv"
  if (m === "application/json") return "json"
  if (m === "text/html") return "html"
  if (m === "application/xml" || m === "text/xml") return "xml"
  if (m.startsWith("application/vnd.oasis.opendocument.")) return odfKind(m)
  if (m === "application/epub+zip") return "epub"
  if (m === "message/rfc822") return "email"
  if (m === "application/rtf" || m === "text/rtf") return "rtf"
  if (m === "application/mbox") return "mbox"
  if (m === "text/x-rst") return "rst"
  if (m === "text/asciidoc" || m === "text/x-asciidoc") return "asciidoc"
  if (m === "text/markdown" || m === "text/x-markdown") return "markdown"
  if (m === "application/x-ipynb+json") return "notebook"
  if (m === "text/plain") return "txt"
  return undefined
}

/** The ODF kind a MIME type names (`application/vnd.oasis.opendocument.text…`). */
const odfKind = (mime: string): Format | undefined => {
  const sub = mime.trim().toLowerCase().slice("application/vnd.oasis.opendocument.".length)
  return sub.startsWith("text") ? "odt" : sub.startsWith("spreadsheet") ? "ods" : sub.startsWith("presentation") ? "odp" : undefined
}

/** Header names that mark an Internet message (RFC 5322) when two of them head a file. */
const mailHeaders = new Set([
  "from",
  "to",
  "cc",
  "subject",
  "date",
  "message-id",
  "received",
  "return-path",
  "mime-version",
  "content-type",
  "delivered-to",
  "reply-to",
  "in-reply-to",
  "references",
  "sender",
  "x-mailer",
  "dkim-signature",
  "authentication-results"
])

/**
 * A mailbox (a `From ` separator line, then a message) or a single message (a block of header
 * lines, at least two of them mail headers, ended by a blank line), judged from the first bytes.
 */
const mailKind = (head: string): "email" | "mbox" | undefined => {
  let text = head
  let mbox = false
  if (/^From \S+ /.test(text)) {
    mbox = true
    text = text.slice(text.indexOf("\n") + 1)
  }
  const lines = text.split(/\r?\n/)
  const known = new Set<string>()
  for (const line of lines) {
    if (line === "") return known.size >= 2 ? (mbox ? "mbox" : "email") : undefined
    if (/^[ \t]/.test(line)) continue // a folded header line
    const m = /^([!-9;-~]+):/.exec(line)
    if (!m) return undefined
    if (mailHeaders.has(m[1]!.toLowerCase())) known.add(m[1]!.toLowerCase())
  }
  // the header block runs past the sample: enough known headers decide
  return known.size >= 3 ? (mbox ? "mbox" : "email") : undefined
}

/** What kind of OLE compound file (CFB) this is, judged by the caller from its streams. */
export type CompoundKind = "encrypted-ooxml" | "xls" | "doc" | "ppt" | "other"

/** The detected format, or `compound` for a CFB container to be inspected further. */
export type Detected = { readonly _tag: "format"; readonly format: Format } | { readonly _tag: "compound" } | {
  readonly _tag: "unknown"
}

/** Detects a file's format from its bytes, name and MIME type. */
export const detect = (name: string, data: Uint8Array, mime?: string): Detected => {
  const ext = extname(name).toLowerCase()
  const fromName = byExtension[ext] ?? byMime(mime)
  if (startsWith(data, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])) return { _tag: "compound" }
  if (ascii(data, 0, 1024).includes("%PDF-")) return { _tag: "format", format: "pdf" }
  if (startsWith(data, [0x50, 0x4b, 0x03, 0x04]) || startsWith(data, [0x50, 0x4b, 0x05, 0x06])) {
    // an ODF package starts with its uncompressed `mimetype` entry (ODF 1.2 §3.3)
    if (ascii(data, 30, 38) === "mimetype") {
      const declared = ascii(data, 38, 38 + 80)
      if (declared.startsWith("application/epub+zip")) return { _tag: "format", format: "epub" }
      const kind = odfKind(declared)
      if (kind) return { _tag: "format", format: kind }
    }
    const names = zipNames(data)
    if (names) {
      if (names.includes("word/document.xml")) return { _tag: "format", format: "docx" }
      if (names.includes("ppt/presentation.xml")) return { _tag: "format", format: "pptx" }
      if (names.some((n) => n === "xl/workbook.xml" || n === "xl/workbook.bin")) return { _tag: "format", format: "xlsx" }
    }
    // a damaged OOXML file: trust the extension so the right parser reports the damage
    if (names?.includes("META-INF/container.xml") && fromName === "epub") return { _tag: "format", format: "epub" }
    if (names?.includes("content.xml") && (fromName === "odt" || fromName === "ods" || fromName === "odp")) {
      return { _tag: "format", format: fromName }
    }
    if (fromName === "docx" || fromName === "pptx" || fromName === "xlsx") return { _tag: "format", format: fromName }
    return { _tag: "unknown" }
  }
  if (ascii(data, 0, 5) === "{\\rtf") return { _tag: "format", format: "rtf" }
  if (startsWith(data, [0x89, 0x50, 0x4e, 0x47])) return { _tag: "format", format: "image" }
  if (startsWith(data, [0xff, 0xd8, 0xff])) return { _tag: "format", format: "image" }
  if (ascii(data, 0, 4) === "GIF8") return { _tag: "format", format: "image" }
  if (ascii(data, 0, 2) === "BM" && data.length > 26) return { _tag: "format", format: "image" }
  if (startsWith(data, [0x49, 0x49, 0x2a, 0x00]) || startsWith(data, [0x4d, 0x4d, 0x00, 0x2a])) {
    return { _tag: "format", format: "image" }
  }
  if (ascii(data, 0, 4) === "RIFF" && ascii(data, 8, 12) === "WEBP") return { _tag: "format", format: "image" }
  if (ascii(data, 0, 4) === "RIFF" && ascii(data, 8, 12) === "WAVE") return { _tag: "format", format: "audio" }
  if (ascii(data, 0, 4) === "OggS" || ascii(data, 0, 3) === "ID3") return { _tag: "format", format: "audio" }
  if (ascii(data, 4, 8) === "ftyp" && /M4A|mp4|isom|M4B/.test(ascii(data, 8, 12))) {
    return { _tag: "format", format: "audio" }
  }
  if (data[0] === 0xff && data[1] !== undefined && (data[1] & 0xe0) === 0xe0 && fromName === "audio") {
    return { _tag: "format", format: "audio" }
  }
  if (fromName) return { _tag: "format", format: fromName }
  // no extension: sniff text
  const head = ascii(data, 0, 512).replace(/^\uFEFF|^\xEF\xBB\xBF/, "").trimStart().toLowerCase()
  if (head.startsWith("<svg") || (head.startsWith("<?xml") && head.includes("<svg"))) return { _tag: "format", format: "svg" }
  if (head.startsWith("<!doctype html") || head.startsWith("<html")) return { _tag: "format", format: "html" }
  const flat = /<office:document\b[^>]*office:mimetype\s*=\s*["']([^"']+)/.exec(ascii(data, 0, 2048))
  if (flat && odfKind(flat[1]!)) return { _tag: "format", format: odfKind(flat[1]!)! }
  // an XML declaration, or a document type that is not HTML (a JATS, DocBook or TEI DOCTYPE)
  if (head.startsWith("<?xml") || /^<!doctype (article|book|chapter|tei)\b/.test(head)) return { _tag: "format", format: "xml" }
  if (head.startsWith("{") || head.startsWith("[")) return { _tag: "format", format: "json" }
  const mail = mailKind(ascii(data, 0, 8192))
  if (mail) return { _tag: "format", format: mail }
  if (!data.subarray(0, 4096).includes(0)) return { _tag: "format", format: "txt" }
  return { _tag: "unknown" }
}
