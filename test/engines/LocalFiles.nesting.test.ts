/**
 * Documents whose XML nests deeper than the readers' bound (tables in tables, hostile nesting)
 * end in the same typed `limit_exceeded` the XML reader gives, or are read as far as they go
 * (HTML-like content: EPUB chapters, a workbook's cells); never `empty`, never a stack overflow
 * reported as a memory limit. One generated document per reader family, through the Upload
 * service (the default extraction process).
 */
import { expect, layer } from "@effect/vitest"
import * as XLSX from "@e965/xlsx"
import { Effect } from "effect"
import { strFromU8, strToU8, unzipSync, zipSync } from "fflate"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { flatOdf, odfPackage } from "./odf-docs.js"

const enc = new TextEncoder()
const nest = (n: number, open: string, close: string, inner: string) => open.repeat(n) + inner + close.repeat(n)

const outcome = (name: string, data: Uint8Array) =>
  Effect.flatMap(Upload.Upload, (u) => u.extract({ name, data })).pipe(
    Effect.map((r) => ({ ok: true as const, content: r.content, reason: undefined, message: "" })),
    Effect.catchAll((e) =>
      Effect.succeed({ ok: false as const, content: "", reason: e._tag === "ExtractionError" ? e.reason : e._tag, message: e.message })
    )
  )

const W = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
const docx = (body: string) =>
  zipSync({
    "[Content_Types].xml": enc.encode(
      `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`
    ),
    "word/document.xml": enc.encode(`<?xml version="1.0"?><w:document ${W}><w:body>${body}</w:body></w:document>`)
  })
const wp = (t: string) => `<w:p><w:r><w:t>${t}</w:t></w:r></w:p>`
/** `n` tables each in a cell of the one around it, `inner` in the innermost cell (3 levels per table). */
const wordTables = (n: number, inner: string) => nest(n, "<w:tbl><w:tr><w:tc>", "</w:tc></w:tr></w:tbl>", inner)

const P = `xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"`
const pptx = (shapes: string) =>
  zipSync({
    "[Content_Types].xml": enc.encode(
      `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`
    ),
    "ppt/presentation.xml": enc.encode(`<?xml version="1.0"?><p:presentation ${P}/>`),
    "ppt/slides/slide1.xml": enc.encode(`<?xml version="1.0"?><p:sld ${P}><p:cSld><p:spTree>${shapes}</p:spTree></p:cSld></p:sld>`)
  })
const shape = (t: string) => `<p:sp><p:txBody><a:p><a:r><a:t>${t}</a:t></a:r></a:p></p:txBody></p:sp>`

const epub = (opfExtra: string, chapter: string) => {
  const opf = `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Deep</dc:title>${opfExtra}</metadata>` +
    `<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c1"/></spine></package>`
  return zipSync({
    mimetype: [enc.encode("application/epub+zip"), { level: 0 }],
    "META-INF/container.xml": enc.encode(
      `<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`
    ),
    "content.opf": enc.encode(opf),
    "c1.xhtml": enc.encode(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head><body>${chapter}</body></html>`)
  })
}

const tp = (t: string) => `<text:p>${t}</text:p>`

layer(LocalFiles.layer({ timeout: "30 seconds" }))("XML nested past the readers' bound", (it) => {
  it.effect("DOCX: tables in tables (and hostile nesting) past the bound are limit_exceeded; 60 nested tables read", () =>
    Effect.gen(function*() {
      const deepTables = yield* outcome("deep-tables.docx", docx(wp("before") + wordTables(2_000, wp("deep")) + wp("after")))
      expect([deepTables.ok, deepTables.reason]).toEqual([false, "limit_exceeded"])
      expect(deepTables.message).toMatch(/word\/document\.xml: elements nested more than \d+ levels deep/)
      // run-level nesting inside one paragraph: the same bound, whatever the recursion would have done
      const deepRuns = yield* outcome("deep-runs.docx", docx(`<w:p>${nest(5_000, "<w:r>", "</w:r>", "<w:t>deep</w:t>")}</w:p>`))
      expect([deepRuns.reason, deepRuns.message]).toEqual(["limit_exceeded", expect.stringMatching(/nested more than/)])
      const footnotes = zipSync({
        ...unzipSync(docx(wp("body text"))),
        "word/footnotes.xml": enc.encode(`<?xml version="1.0"?><w:footnotes ${W}>${nest(400, "<w:sdt>", "</w:sdt>", "")}</w:footnotes>`)
      })
      // the footnotes part is read only when the body refers to a note: no reference, no failure
      expect((yield* outcome("notes.docx", footnotes)).content).toBe("body text")
      // well inside the bound: 60 tables deep (180 levels) is read, the innermost text included
      const ok = yield* outcome("nested-60.docx", docx(wp("before") + wordTables(60, wp("deep inside")) + wp("after")))
      expect(ok.ok).toBe(true)
      expect(ok.content).toMatch(/^before\b[\s\S]*deep inside[\s\S]*\bafter$/)
    }))

  it.effect("PPTX: group shapes nested past the bound are limit_exceeded; a few levels read", () =>
    Effect.gen(function*() {
      const deep = yield* outcome("deep.pptx", pptx(shape("before") + nest(3_000, "<p:grpSp>", "</p:grpSp>", shape("deep"))))
      expect([deep.reason, deep.message]).toEqual(["limit_exceeded", expect.stringMatching(/slide1\.xml: elements nested more than/)])
      const ok = yield* outcome("groups.pptx", pptx(shape("before") + nest(20, "<p:grpSp>", "</p:grpSp>", shape("grouped"))))
      expect(ok.content).toBe("before\n\ngrouped")
    }))

  it.effect("ODT, ODS, ODP and flat ODF: content nested past the bound is limit_exceeded", () =>
    Effect.gen(function*() {
      const cases: Array<[string, Uint8Array]> = [
        ["deep.odt", odfPackage("odt", `<office:text>${tp("before")}${nest(3_000, "<text:section>", "</text:section>", tp("deep"))}</office:text>`)],
        [
          "deep.ods",
          odfPackage(
            "ods",
            `<office:spreadsheet><table:table table:name="S"><table:table-row><table:table-cell><text:p>${nest(3_000, "<text:span>", "</text:span>", "deep")}</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>`
          )
        ],
        [
          "deep.odp",
          odfPackage(
            "odp",
            `<office:presentation><draw:page draw:name="p1">${nest(3_000, "<draw:g>", "</draw:g>", `<draw:frame><draw:text-box>${tp("deep")}</draw:text-box></draw:frame>`)}</draw:page></office:presentation>`
          )
        ],
        ["deep.fodt", flatOdf("odt", `<office:text>${nest(3_000, "<text:section>", "</text:section>", tp("deep"))}</office:text>`)]
      ]
      for (const [name, data] of cases) {
        const r = yield* outcome(name, data)
        expect([name, r.reason, r.message]).toEqual([name, "limit_exceeded", expect.stringMatching(/nested more than \d+ levels deep/)])
      }
      const ok = yield* outcome("sections.odt", odfPackage("odt", `<office:text>${nest(50, "<text:section>", "</text:section>", tp("inside fifty sections"))}</office:text>`))
      expect(ok.content).toBe("inside fifty sections")
    }))

  it.effect("EPUB: a chapter nested past the bound is read as far as it goes (its text kept); a package document past it is limit_exceeded", () =>
    Effect.gen(function*() {
      const chapter = yield* outcome("deep-chapter.epub", epub("", `<p>before</p>${nest(5_000, "<div>", "</div>", "<p>deep text</p>")}<p>after</p>`))
      expect(chapter.ok).toBe(true)
      expect(chapter.content).toMatch(/before[\s\S]*deep text[\s\S]*after/)
      const opf = yield* outcome("deep-opf.epub", epub(nest(3_000, "<x>", "</x>", ""), "<p>text</p>"))
      expect([opf.reason, opf.message]).toEqual(["limit_exceeded", expect.stringMatching(/content\.opf: elements nested more than/)])
    }))

  it.effect("XLSX: elements nested inside a sheet's data do not hide its cells (SheetJS reads the cells it finds)", () =>
    Effect.gen(function*() {
      const wb = XLSX.utils.book_new()
      XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet([["alpha", "beta"]]), "S")
      const files = unzipSync(new Uint8Array(XLSX.write(wb, { type: "array", bookType: "xlsx" }) as ArrayBuffer))
      const sheet = strFromU8(files["xl/worksheets/sheet1.xml"]!)
      files["xl/worksheets/sheet1.xml"] = strToU8(sheet.replace("<sheetData>", "<sheetData>" + "<x>".repeat(5_000)).replace("</sheetData>", "</x>".repeat(5_000) + "</sheetData>"))
      const r = yield* outcome("deep.xlsx", zipSync(files))
      expect(r.content).toContain("| alpha | beta |")
    }))
})
