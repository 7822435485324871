/**
 * Bytes to text: a byte-order mark wins, then a declared encoding (XML/HTML), then the
 * encoding chardet detects; iconv-lite decodes.
 */
import chardet from "chardet"
import iconv from "iconv-lite"

const bom = (data: Uint8Array): string | undefined => {
  if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) return "utf-8"
  if (data[0] === 0xff && data[1] === 0xfe) return "utf-16le"
  if (data[0] === 0xfe && data[1] === 0xff) return "utf-16be"
  return undefined
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/** The text of valid UTF-8 bytes, undefined for anything else (one decoding pass). */
const asUtf8 = (data: Uint8Array): string | undefined => {
  try {
    return strictUtf8.decode(data)
  } catch {
    return undefined
  }
}

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
  const utf8 = asUtf8(data)
  if (utf8 !== undefined) return { text: utf8, encoding: "utf-8" }
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
