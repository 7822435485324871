/**
 * Embedded pictures of a BIFF8 workbook (`.xls`), for `images_only`. SheetJS reads cells, not
 * drawings, so this reads the picture store itself: the `Workbook` stream of the compound file
 * (opened with SheetJS's CFB reader), its MSODRAWINGGROUP record and the CONTINUE records after
 * it ([MS-XLS] 2.4.133), which hold an OfficeArtDggContainer whose blip store lists every picture
 * once ([MS-ODRAW] 2.2.20 OfficeArtBStoreContainer, 2.2.32 OfficeArtFBSE, 2.2.23–2.2.31 blips).
 *
 * PNG, JPEG, TIFF and EMF blips become data URLs as they are; a DIB gets the 14-byte bitmap file
 * header that makes it a BMP. WMF and PICT blips (metafiles without their placeable header) are
 * counted, not returned. Every length is checked against the bytes present: a truncated or
 * hostile stream yields fewer pictures, never a read past the end.
 */
import * as XLSX from "@e965/xlsx"
import { unzlibSync } from "fflate"
import { limits } from "./types.js"

/** The pictures found, and how many blips were left out (metafile kinds, limits, damage). */
export interface XlsImages {
  readonly images: ReadonlyArray<string>
  readonly skipped: number
}

const MSODRAWINGGROUP = 0x00eb
const CONTINUE = 0x003c
const FILEPASS = 0x002f

/** Concatenates the drawing group record with the CONTINUE records that follow it. */
const drawingGroup = (stream: Uint8Array): Uint8Array | undefined => {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength)
  const parts: Array<Uint8Array> = []
  let inGroup = false
  for (let at = 0; at + 4 <= stream.length;) {
    const type = view.getUint16(at, true)
    const len = view.getUint16(at + 2, true)
    const body = at + 4
    if (body + len > stream.length) break
    if (type === FILEPASS) return undefined // encrypted: the caller reports it
    if (type === MSODRAWINGGROUP || (inGroup && type === CONTINUE)) {
      parts.push(stream.subarray(body, body + len))
      inGroup = true
    } else if (inGroup) break
    at = body + len
  }
  if (parts.length === 0) return new Uint8Array(0)
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let o = 0
  for (const p of parts) {
    out.set(p, o)
    o += p.length
  }
  return out
}

interface Header {
  readonly ver: number
  readonly instance: number
  readonly type: number
  readonly len: number
}

const header = (view: DataView, at: number): Header => {
  const verInst = view.getUint16(at, true)
  return { ver: verInst & 0xf, instance: verInst >> 4, type: view.getUint16(at + 2, true), len: view.getUint32(at + 4, true) }
}

/** Bitmap file header + DIB = a BMP file. */
const dibToBmp = (dib: Uint8Array): Uint8Array | undefined => {
  if (dib.length < 40) return undefined
  const dv = new DataView(dib.buffer, dib.byteOffset, dib.byteLength)
  const headerSize = dv.getUint32(0, true)
  const bitCount = dv.getUint16(14, true)
  const clrUsed = headerSize >= 36 ? dv.getUint32(32, true) : 0
  const palette = bitCount <= 8 ? (clrUsed || 1 << bitCount) * 4 : 0
  const out = new Uint8Array(14 + dib.length)
  const ov = new DataView(out.buffer)
  out[0] = 0x42 // "BM"
  out[1] = 0x4d
  ov.setUint32(2, out.length, true)
  ov.setUint32(10, 14 + headerSize + palette, true)
  out.set(dib, 14)
  return out
}

/** One blip record → a data URL, or undefined for a kind we do not return. */
const blipUrl = (h: Header, body: Uint8Array): string | undefined => {
  const url = (mime: string, bytes: Uint8Array) => `data:${mime};base64,${Buffer.from(bytes).toString("base64")}`
  // [MS-ODRAW]: each blip starts with one 16-byte UID, or two when the instance says so
  switch (h.type) {
    case 0xf01e: { // PNG: instance 0x6E0 (one UID) or 0x6E1 (two), then a tag byte
      const skip = (h.instance === 0x6e1 ? 32 : 16) + 1
      return body.length > skip ? url("image/png", body.subarray(skip)) : undefined
    }
    case 0xf01d: // JPEG (RGB): 0x46A/0x6E2 one UID, 0x46B/0x6E3 two
    case 0xf02a: { // JPEG (CMYK): 0x6E2 / 0x6E3
      const skip = (h.instance === 0x46b || h.instance === 0x6e3 ? 32 : 16) + 1
      return body.length > skip ? url("image/jpeg", body.subarray(skip)) : undefined
    }
    case 0xf029: { // TIFF: 0x6E4 / 0x6E5
      const skip = (h.instance === 0x6e5 ? 32 : 16) + 1
      return body.length > skip ? url("image/tiff", body.subarray(skip)) : undefined
    }
    case 0xf01f: { // DIB: 0x7A8 / 0x7A9
      const skip = (h.instance === 0x7a9 ? 32 : 16) + 1
      const bmp = body.length > skip ? dibToBmp(body.subarray(skip)) : undefined
      return bmp ? url("image/bmp", bmp) : undefined
    }
    case 0xf01a: { // EMF: 0x3D4 / 0x3D5, then a 34-byte metafile header; deflate when compression is 0
      const skip = h.instance === 0x3d5 ? 32 : 16
      if (body.length < skip + 34) return undefined
      const size = new DataView(body.buffer, body.byteOffset + skip, 4).getUint32(0, true)
      const compressed = body[skip + 32] === 0
      const data = body.subarray(skip + 34)
      if (compressed && size > limits.zipEntryBytes) return undefined
      try {
        // inflating into a buffer of the declared size cannot grow beyond it
        return url("image/emf", compressed ? unzlibSync(data, { out: new Uint8Array(size) }) : data)
      } catch {
        return undefined
      }
    }
    default:
      return undefined
  }
}

/**
 * Reads the pictures of an XLS file. `encrypted` is true when the workbook stream is protected
 * (FILEPASS), in which case no picture can be read.
 */
export const xlsImages = (data: Uint8Array): XlsImages & { readonly encrypted: boolean } => {
  let stream: Uint8Array | undefined
  try {
    const cfb = XLSX.CFB.read(data, { type: "array" })
    const entry = XLSX.CFB.find(cfb, "Workbook") ?? XLSX.CFB.find(cfb, "Book")
    stream = entry?.content ? new Uint8Array(entry.content as ArrayLike<number>) : undefined
  } catch {
    stream = undefined
  }
  if (stream === undefined) return { images: [], skipped: 0, encrypted: false }
  const group = drawingGroup(stream)
  if (group === undefined) return { images: [], skipped: 0, encrypted: true }
  const view = new DataView(group.buffer, group.byteOffset, group.byteLength)
  const images: Array<string> = []
  let skipped = 0
  let bytes = 0
  // Walk the records: descend into containers (ver 0xF), read FBSEs, take blips wherever found.
  const walk = (from: number, to: number, depth: number): void => {
    for (let at = from; at + 8 <= to;) {
      const h = header(view, at)
      const body = at + 8
      const end = body + h.len
      if (end > to || depth > 8) {
        skipped++
        return
      }
      if (h.ver === 0xf) walk(body, end, depth + 1)
      else if (h.type === 0xf007) {
        // OfficeArtFBSE: 36 fixed bytes, the name (cbName at 33), then the embedded blip, if any
        if (h.len >= 36) {
          const nameLen = group[body + 33]!
          if (body + 36 + nameLen + 8 <= end) walk(body + 36 + nameLen, end, depth + 1)
        }
      } else if (h.type >= 0xf018 && h.type <= 0xf117) {
        if (images.length >= limits.images || bytes + h.len > limits.imageBytes) skipped++
        else {
          const url = blipUrl(h, group.subarray(body, end))
          if (url === undefined) skipped++
          else {
            images.push(url)
            bytes += h.len
          }
        }
      }
      at = end
    }
  }
  walk(0, group.length, 0)
  return { images, skipped, encrypted: false }
}
