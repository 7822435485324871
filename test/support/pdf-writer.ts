/**
 * A small PDF writer for tests and benchmarks: pages of Helvetica text lines and/or one JPEG
 * painted over the whole page (an image XObject with DCTDecode: a "scanned" page), written
 * object by object (catalog, page tree, font, pages, content streams) with a byte-exact xref
 * table, as the PDF 1.4 specification lays it out.
 */

export interface PageSpec {
  /** A JPEG painted over the whole page (its size at `dpi`, default 200, is the page size). */
  readonly image?: { readonly jpeg: Uint8Array; readonly width: number; readonly height: number; readonly dpi?: number }
  /** Lines of text in Helvetica (no parentheses or backslashes), drawn invisibly over an image. */
  readonly text?: ReadonlyArray<string>
}

/** A PDF of `pages`, written object by object with a byte-exact xref table. */
export const pdf = (pages: ReadonlyArray<PageSpec>): Uint8Array => {
  const objects: Array<Array<Uint8Array | string>> = []
  const add = (...parts: Array<Uint8Array | string>) => objects.push(parts) // returns the new object's number
  add("<< /Type /Catalog /Pages 2 0 R >>")
  add("") // the page tree, filled in below
  add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
  const kids: Array<number> = []
  for (const spec of pages) {
    const [w, h] = spec.image
      ? [(spec.image.width * 72) / (spec.image.dpi ?? 200), (spec.image.height * 72) / (spec.image.dpi ?? 200)]
      : [612, 792]
    let content = ""
    let xobject = ""
    if (spec.image) {
      const n = add(
        `<< /Type /XObject /Subtype /Image /Width ${spec.image.width} /Height ${spec.image.height} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length ${spec.image.jpeg.length} >>\nstream\n`,
        spec.image.jpeg,
        "\nendstream"
      )
      xobject = ` /XObject << /Im1 ${n} 0 R >>`
      content += `q ${w.toFixed(2)} 0 0 ${h.toFixed(2)} 0 0 cm /Im1 Do Q\n`
    }
    if (spec.text) {
      content += `BT /F1 11 Tf ${spec.image ? "3 Tr " : ""}14 TL 20 ${(h - 30).toFixed(2)} Td\n`
      content += spec.text.map((line) => `(${line}) Tj T*`).join("\n") + "\nET\n"
    }
    const c = add(`<< /Length ${Buffer.byteLength(content, "latin1")} >>\nstream\n${content}endstream`)
    kids.push(add(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${w.toFixed(2)} ${h.toFixed(2)}] /Resources << /Font << /F1 3 0 R >>${xobject} >> /Contents ${c} 0 R >>`
    ))
  }
  objects[1] = [`<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`]
  const chunks: Array<Buffer> = [Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "latin1")]
  let offset = chunks[0]!.length
  const offsets: Array<number> = []
  objects.forEach((parts, i) => {
    offsets.push(offset)
    const body = Buffer.concat([
      Buffer.from(`${i + 1} 0 obj\n`, "latin1"),
      ...parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))),
      Buffer.from("\nendobj\n", "latin1")
    ])
    chunks.push(body)
    offset += body.length
  })
  const xref = [
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
    ...offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`),
    `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${offset}\n%%EOF\n`
  ].join("")
  chunks.push(Buffer.from(xref, "latin1"))
  return new Uint8Array(Buffer.concat(chunks))
}
