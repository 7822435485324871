/**
 * OpenDocument read as the standard defines it rather than as one writer writes it: elements
 * matched by namespace URI whatever prefixes a document binds (ODT, ODP, ODS, packages and
 * flat files), and spreadsheets whose merged cells, covered cells and repeated rows and columns
 * are written as LibreOffice, OpenOffice and Excel write them (the shapes of odftoolkit's
 * `MergedCells.ods` and `Basic.ods`).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { unzipSync, zipSync } from "fflate"
import * as Upload from "../../src/api/Upload.js"
import { extractDocument } from "../../src/engines/documents/internal/extract/index.js"
import { maxRepeat } from "../../src/engines/documents/internal/extract/ods.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { flatOdf, metaXml, odfPackage } from "./odf-docs.js"

const enc = new TextEncoder()
const dec = new TextDecoder()

const read = (name: string, data: Uint8Array) => extractDocument({ name, data, options: { imagesOnly: false, textOnly: false, ocrLanguages: "eng" } })
const contentOf = async (name: string, data: Uint8Array) => (await read(name, data)).units.map((u) => u.content)

/** Binds other prefixes to the same namespaces: `<text:p>` becomes `<t:p>`, its `xmlns:text` `xmlns:t`. */
const renamePrefixes = (xml: string, names: Record<string, string>): string =>
  xml.replace(/(<\/?|\s)(xmlns:)?([a-z]+):?(?=[a-z-]*[=\s/>])/g, (m, lead: string, xmlns: string | undefined, prefix: string) => {
    const to = names[prefix]
    if (to === undefined) return m
    return xmlns ? `${lead}xmlns:${to}` : m.replace(`${lead}${prefix}:`, `${lead}${to}:`)
  })

/** The package with every XML part's prefixes renamed. */
const renamePackage = (data: Uint8Array, names: Record<string, string>): Uint8Array => {
  const parts = unzipSync(data)
  for (const [path, bytes] of Object.entries(parts)) {
    if (path.endsWith(".xml")) parts[path] = enc.encode(renamePrefixes(dec.decode(bytes), names))
  }
  return zipSync({ mimetype: [parts["mimetype"]!, { level: 0 }], ...Object.fromEntries(Object.entries(parts).filter(([p]) => p !== "mimetype")) })
}

const names = { office: "o", text: "t", table: "tb", draw: "d", presentation: "pr", svg: "s", dc: "dcx", meta: "m" }
/** A prefix this reader matches, bound to an unrelated namespace in the renamed document. */
const decoy = `<draw:p xmlns:draw="urn:example:not-odf">not document text</draw:p>`

const odtBody = `<office:text><text:h text:outline-level="1">Mills</text:h><text:p>Water <text:span>mills</text:span> of the Aire.<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body><text:p>A note.</text:p></text:note-body></text:note></text:p><text:list><text:list-item><text:p>one</text:p></text:list-item></text:list><table:table><table:table-row><table:table-cell><text:p>River</text:p></table:table-cell><table:table-cell><text:p>Mills</text:p></table:table-cell></table:table-row></table:table></office:text>`
const odpBody = `<office:presentation><draw:page draw:name="p1"><draw:frame presentation:class="title"><draw:text-box><text:p>Quarterly review</text:p></draw:text-box></draw:frame><draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item><text:p>Revenue up</text:p></text:list-item></text:list></draw:text-box></draw:frame><draw:frame presentation:class="page-number"><draw:text-box><text:p>1</text:p></draw:text-box></draw:frame><presentation:notes><draw:frame presentation:class="notes"><draw:text-box><text:p>Say hello.</text:p></draw:text-box></draw:frame></presentation:notes></draw:page></office:presentation>`
const odsBody = `<office:spreadsheet><table:table table:name="Sales"><table:table-row><table:table-cell table:number-columns-spanned="2"><text:p>Region and total</text:p></table:table-cell><table:covered-table-cell/></table:table-row><table:table-row><table:table-cell><text:p>North</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="12"><text:p>12</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>`

describe("OpenDocument names by namespace", () => {
  it.each([
    ["report.odt", "odt", odtBody, "# Mills\n\nWater mills of the Aire.[1]\n\n- one\n\n| River | Mills |\n| --- | --- |\n\nNotes:\n\n[1] A note."],
    ["deck.odp", "odp", odpBody, "## Quarterly review\n\n- Revenue up\n\n### Notes\n\nSay hello."],
    ["sales.ods", "ods", odsBody, "## Sales\n\n| Region and total |  |\n| --- | --- |\n| North | 12 |"]
  ] as const)("%s reads the same with other prefixes, in a package and flat", async (name, kind, body, expected) => {
    const meta = metaXml("The title", "")
    const original = odfPackage(kind, body, meta)
    expect((await contentOf(name, original)).join("\n\n")).toBe(expected)
    const renamed = renamePackage(original, names)
    const content = dec.decode(unzipSync(renamed)["content.xml"]!)
    expect(content).not.toMatch(/<(text|draw|table|office|presentation):/)
    expect(await contentOf(name, renamed)).toEqual(await contentOf(name, original))
    expect((await read(name, renamed)).title).toBe("The title")
    // flat, with a decoy: `draw:` bound to another namespace inside the body is not ODF
    const flat = renamePrefixes(dec.decode(flatOdf(kind, body, meta)), names).replace("</o:body>", `${decoy}</o:body>`)
    expect(flat).toContain(`xmlns:t="urn:oasis:names:tc:opendocument:xmlns:text:1.0"`)
    expect(await contentOf(name.replace(".", ".f"), enc.encode(flat))).toEqual(await contentOf(name, original))
  })

  it("reads elements in a default namespace and prefixes bound on inner elements", async () => {
    const office = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
    const text = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
    const flat = `<?xml version="1.0"?><document xmlns="${office}" mimetype="application/vnd.oasis.opendocument.text"><body><text>` +
      `<x:h xmlns:x="${text}" x:outline-level="2">Inner heading</x:h><p xmlns="${text}">A paragraph in the default namespace.</p></text></body></document>`
    expect(await contentOf("plain.fodt", enc.encode(flat))).toEqual(["## Inner heading\n\nA paragraph in the default namespace."])
  })
})

const sheet = (rows: string) =>
  odfPackage("ods", `<office:spreadsheet><table:table table:name="S"><table:table-column table:number-columns-repeated="16384"/>${rows}</table:table></office:spreadsheet>`)
const cell = (text: string, attrs = "") => `<table:table-cell office:value-type="string"${attrs}><text:p>${text}</text:p></table:table-cell>`
const empty = (n: number) => `<table:table-cell table:number-columns-repeated="${n}"/>`
const row = (cells: string, attrs = "") => `<table:table-row${attrs}>${cells}</table:table-row>`

describe("ODS cells", () => {
  it("a merged cell's value is written once, in its first cell, as LibreOffice shows it; covered cells keep later cells in their columns", async () => {
    // MergedCells.ods: a over A1:A6, b over D3:H11, c over A14:E14; X after the covered cells (column I), e in E15
    const rows = row(cell("a", ` table:number-rows-spanned="6"`) + empty(16383)) +
      row(`<table:covered-table-cell/>` + empty(16383)) +
      row(`<table:covered-table-cell/>${empty(2)}${cell("b", ` table:number-columns-spanned="5" table:number-rows-spanned="9"`)}<table:covered-table-cell table:number-columns-repeated="4"/>${cell("X")}${empty(16375)}`) +
      row(`<table:covered-table-cell/>${empty(2)}<table:covered-table-cell table:number-columns-repeated="5"/>${empty(16376)}`, ` table:number-rows-repeated="3"`) +
      row(`${empty(3)}<table:covered-table-cell table:number-columns-repeated="5"/>${empty(16376)}`, ` table:number-rows-repeated="5"`) +
      row(empty(16384), ` table:number-rows-repeated="2"`) +
      row(cell("c", ` table:number-columns-spanned="5"`) + `<table:covered-table-cell table:number-columns-repeated="4"/>` + empty(16379)) +
      row(empty(4) + cell("e") + empty(16379)) +
      row(empty(16384), ` table:number-rows-repeated="1048561"`)
    const [content] = await contentOf("merged.ods", sheet(rows))
    // columns A, D, E and I are used; empty rows are dropped, as for every sheet
    expect(content).toBe(
      "## S\n\n| a |  |  |  |\n| --- | --- | --- | --- |\n|  | b |  | X |\n| c |  |  |  |\n|  |  | e |  |"
    )
  })

  it("a row with content repeated to the sheet's end is read once, with a warning; repeated cells and rows within bounds are kept", async () => {
    // Basic.ods: "blub" in four columns over 1,048,553 rows, then one "blubg" row
    const rows = row(cell("Range1") + empty(1) + cell("Range2", ` table:number-columns-repeated="2"`), ` table:number-rows-repeated="2"`) +
      row(cell("blub", ` table:number-columns-repeated="4"`), ` table:number-rows-repeated="1048553"`) +
      row(cell("blubg", ` table:number-columns-repeated="4"`)) +
      row(cell("wide", ` table:number-columns-repeated="${maxRepeat + 1}"`))
    const doc = await read("basic.ods", sheet(rows))
    expect(doc.units[0]!.content).toBe(
      "## S\n\n| Range1 |  | Range2 | Range2 |\n| --- | --- | --- | --- |\n| Range1 |  | Range2 | Range2 |\n" +
        "| blub | blub | blub | blub |\n| blubg | blubg | blubg | blubg |\n| wide |  |  |  |"
    )
    expect(doc.warnings).toEqual([
      "sheet S: a row repeated 1048553 times is read once",
      `sheet S: a cell repeated over ${maxRepeat + 1} columns is read once`
    ])
  })

  it("comments with their cell's address; a cell without paragraphs shows its value; nested row groups", async () => {
    const nested = 40
    const rows = row(cell("Total") + `<table:table-cell office:value-type="float" office:value="42"><office:annotation><dc:creator>Ada</dc:creator><text:p>checked</text:p></office:annotation></table:table-cell>`) +
      "<table:table-row-group>".repeat(nested) + row(cell("deep")) + "</table:table-row-group>".repeat(nested)
    expect(await contentOf("notes.ods", sheet(rows))).toEqual(["## S\n\n| Total | 42 |\n| --- | --- |\n| deep |  |\n\nComments:\n- B1 (Ada): checked"])
  })
})

layer(LocalFiles.layer({ timeout: "60 seconds" }))("ODS through the Upload service", (it) => {
  it.effect("a million repeated rows with content at the sheet's end read once, chunked by sheet", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const data = sheet(row(cell("Region") + cell("Total")) + row(cell("blub", ` table:number-columns-repeated="2"`), ` table:number-rows-repeated="1048574"`))
      const r = yield* upload.extractChunks({ name: "big.ods", data })
      expect([r.type, r.format]).toEqual(["xlsx", "ods"])
      expect(r.data.data.chunks.map((c) => [c.content, c.from_sheet])).toEqual([["## S\n\n| Region | Total |\n| --- | --- |\n| blub | blub |", "S"]])
    }))
})
