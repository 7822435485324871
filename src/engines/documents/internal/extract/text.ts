/**
 * Bytes to text: a byte-order mark wins, then a declared encoding (XML/HTML), then the
 * encoding chardet detects; iconv-lite decodes. Also plain text (TXT, Markdown) as a document:
 * light (no parser library) and linear in the input, so the local engine runs it in its own
 * process for small files (see `LocalFiles`).
 */
import chardet from "chardet"
import iconv from "iconv-lite"
import { isUtf8 } from "node:buffer"
import type { Extracted } from "./types.js"

const bom = (data: Uint8Array): string | undefined => {
  if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) return "utf-8"
  if (data[0] === 0xff && data[1] === 0xfe) return "utf-16le"
  if (data[0] === 0xfe && data[1] === 0xff) return "utf-16be"
  return undefined
}

const utf8 = new TextDecoder("utf-8")

/** Decodes with `encoding` when iconv-lite knows it, else undefined. */
const decodeAs = (data: Uint8Array, encoding: string): string | undefined =>
  iconv.encodingExists(encoding) ? iconv.decode(Buffer.from(data.buffer, data.byteOffset, data.byteLength), encoding) : undefined

/**
 * Decodes text bytes. `declared` is an encoding named by the document itself (XML declaration,
 * HTML meta charset); it is honoured unless a BOM says otherwise.
 */
export const decodeText = (data: Uint8Array, declared?: string): { text: string; encoding: string } => {
  const fromBom = bom(data)
  if (fromBom) return { text: decodeAs(data, fromBom)!.replace(/^\uFEFF/, ""), encoding: fromBom }
  if (declared) {
    const text = decodeAs(data, declared)
    if (text !== undefined) return { text, encoding: declared.toLowerCase() }
  }
  if (isUtf8(data)) return { text: utf8.decode(data), encoding: "utf-8" }
  const sample = data.subarray(0, 256 * 1024)
  const guessed = chardet.detect(sample)
  const text = guessed ? decodeAs(data, guessed) : undefined
  if (text !== undefined && guessed) return { text, encoding: guessed.toLowerCase() }
  return { text: decodeAs(data, "windows-1252")!, encoding: "windows-1252" }
}

/** The encoding declared in an XML declaration (`<?xml … encoding="…"?>`), if any. */
export const xmlDeclaredEncoding = (data: Uint8Array): string | undefined => {
  const head = String.fromCharCode(...data.subarray(0, 200))
  return /^(?:\xEF\xBB\xBF)?\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head)?.[1]
}

/** The charset declared by an HTML `<meta>` in the first 4 KiB, if any. */
export const htmlDeclaredCharset = (data: Uint8Array): string | undefined => {
  const head = String.fromCharCode(...data.subarray(0, 4096))
  return /<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9._:-]+)/i.exec(head)?.[1]
}

const isBlank = (c: number) => c === 32 || c === 9

/**
 * Line ends as `\n`, no spaces or tabs before a line end, at most one blank line in a row,
 * trimmed. Linear in the text (a regular expression for trailing blanks backtracks over every
 * run of spaces not followed by a line end: quadratic).
 */
export const tidy = (text: string): string => {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    let end = line.length
    while (end > 0 && isBlank(line.charCodeAt(end - 1))) end--
    if (end < line.length) lines[i] = line.slice(0, end)
  }
  return lines.join("\n").replace(/\n{3,}/g, "\n\n").trim()
}

/**
 * {@link tidy} for text whose first line's indentation means something (an indented code block
 * at the start of a Markdown or plain text file): leading blank lines go, leading spaces stay.
 */
export const tidyText = (text: string): string => {
  const tidied = tidy(text)
  if (tidied === "") return ""
  let at = 0
  for (;;) {
    const nl = text.indexOf("\n", at)
    if (nl < 0 || text.slice(at, nl).trim() !== "") break
    at = nl + 1
  }
  let end = at
  while (end < text.length && isBlank(text.charCodeAt(end))) end++
  return text.slice(at, end) + tidied
}

/** Extracts plain text (encoding detected). */
export const extractTxt = async (data: Uint8Array): Promise<Extracted> => {
  const { text } = decodeText(data)
  return { format: "txt", units: [{ page: 1, content: tidyText(text) }], warnings: [] }
}
