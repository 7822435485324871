/**
 * The table set's reference grids (scripts/corpus.mjs `docxTables`): a DOCX table's cells as
 * LibreOffice, which makes the PDF, prints them. A REF field whose bookmark does not exist
 * shows LibreOffice's error text, not the result Word cached; a REF field to a bookmark that
 * exists keeps its result. The DOCX is written here (a document part is all `docxTables` reads).
 */
import { describe, expect, it } from "@effect/vitest"
import { strToU8, zipSync } from "fflate"
// @ts-expect-error: a plain ES module script without types
import { docxTables } from "../../scripts/corpus.mjs"

const run = (text: string) => `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>`
const ref = (bookmark: string, cached: string) =>
  `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>REF ${bookmark} \\r \\h</w:instrText></w:r>` +
  `<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>${cached}</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>`
const cell = (body: string) => `<w:tc><w:p>${body}</w:p></w:tc>`
const row = (...cells: Array<string>) => `<w:tr>${cells.join("")}</w:tr>`

const docx = (body: string): Uint8Array =>
  zipSync({
    "word/document.xml": strToU8(
      `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`
    )
  })

describe("table set reference grids", () => {
  it("a reference field to a missing bookmark reads as LibreOffice prints it; one to a bookmark that exists keeps its result", () => {
    const body = `<w:p><w:bookmarkStart w:id="0" w:name="sec2"/>${run("2.1")}<w:bookmarkEnd w:id="0"/></w:p>` +
      `<w:tbl><w:tblPr/>` +
      row(cell(run("Name")), cell(run("Defined in"))) +
      row(cell(run("val")), cell(run("(§") + ref("missing-bookmark", "Error! Reference source not found.") + run(")"))) +
      row(cell(run("id")), cell(run("(§") + ref("sec2", "2.1") + run(")"))) +
      `</w:tbl>`
    const tables = docxTables(docx(body)) as Array<{ rows: Array<Array<string>> }>
    expect(tables.map((t) => t.rows)).toEqual([[["Name", "Defined in"], ["val", "(§Error: Reference source not found)"], ["id", "(§2.1)"]]])
  })
})
