/**
 * Text for retrieval: the extraction regressions found on third-party documents, rebuilt as
 * small documents made here (the benchmark corpus is not downloaded in CI).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { zipSync } from "fflate"
import * as Upload from "../../src/api/Upload.js"
import { extractDocument, type Extracted } from "../../src/engines/documents/internal/extract/index.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { citationOf, placeOf, sourceHeader } from "../../src/pipeline/internal/answer-citations.js"

const enc = new TextEncoder()
const options = { enableOcr: false, imagesOnly: false, textOnly: false, ocrLanguages: "eng" }
const extract = (name: string, data: Uint8Array): Promise<Extracted> => extractDocument({ name, data, options })
const text = (doc: Extracted) => doc.units.map((u) => u.content).join("\n\n")

const W = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

/** A DOCX of the given body paragraphs (WordprocessingML), with a numbering part when given. */
const docx = (body: string, numbering?: string): Uint8Array =>
  zipSync({
    "[Content_Types].xml": enc.encode(
      `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>${
        numbering ? `<Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/>` : ""
      }</Types>`
    ),
    "_rels/.rels": enc.encode(
      `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`
    ),
    "word/_rels/document.xml.rels": enc.encode(
      `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${
        numbering ? `<Relationship Id="rIdN" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/>` : ""
      }</Relationships>`
    ),
    "word/document.xml": enc.encode(`<?xml version="1.0"?><w:document ${W}><w:body>${body}</w:body></w:document>`),
    ...(numbering ? { "word/numbering.xml": enc.encode(`<?xml version="1.0"?><w:numbering ${W}>${numbering}</w:numbering>`) } : {})
  })

const para = (t: string, numId?: number, ilvl = 0, run = "") =>
  `<w:p>${numId !== undefined ? `<w:pPr><w:numPr><w:ilvl w:val="${ilvl}"/><w:numId w:val="${numId}"/></w:numPr></w:pPr>` : ""}<w:r>${run}<w:t xml:space="preserve">${t}</w:t></w:r></w:p>`

const abstract = (id: number, start: number, fmt = "decimal") =>
  `<w:abstractNum w:abstractNumId="${id}"><w:lvl w:ilvl="0"><w:start w:val="${start}"/><w:numFmt w:val="${fmt}"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%2)"/></w:lvl></w:abstractNum>`

describe("DOCX list numbers as the document shows them", () => {
  it("a list that starts at 6 keeps 6, 7; an interrupted list goes on counting", async () => {
    const numbering = abstract(1, 6) + abstract(2, 1) + `<w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="2"/></w:num>`
    const body = [
      para("Steps continue here."),
      para("Sixth step", 1),
      para("Seventh step", 1),
      para("Ordinary list"),
      para("First item", 2),
      para("Second item", 2),
      para("A note between the items."),
      para("Third item", 2)
    ].join("")
    const out = text(await extract("list.docx", docx(body, numbering)))
    expect(out).toMatch(/^6\.\s+Sixth step$/m)
    expect(out).toMatch(/^7\.\s+Seventh step$/m)
    expect(out).toMatch(/^1\.\s+First item$/m)
    expect(out).toMatch(/^2\.\s+Second item$/m)
    expect(out).toMatch(/^3\.\s+Third item$/m)
  })

  it("a start override restarts the level where its list is first used", async () => {
    const numbering = abstract(1, 1) +
      `<w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="10"/></w:lvlOverride></w:num>`
    const body = [para("Alpha", 1), para("Beta", 1), para("Between."), para("Tenth", 2), para("Eleventh", 2)].join("")
    const out = text(await extract("override.docx", docx(body, numbering)))
    expect(out).toMatch(/^1\.\s+Alpha$/m)
    expect(out).toMatch(/^10\.\s+Tenth$/m)
    expect(out).toMatch(/^11\.\s+Eleventh$/m)
  })
})

describe("running text without Markdown escapes or emphasis markers", () => {
  it("DOCX: bold and italic runs are plain words, brackets and arrows stay as written", async () => {
    const body = [
      para("Bold", undefined, 0, "<w:rPr><w:b/></w:rPr>"),
      para("custom change of b. -> e. as in [1]"),
      `<w:p><w:r><w:t xml:space="preserve">a </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>bold</w:t></w:r><w:r><w:t xml:space="preserve"> and </w:t></w:r><w:r><w:rPr><w:i/></w:rPr><w:t>italic</w:t></w:r><w:r><w:t xml:space="preserve"> phrase_with_underscores * star</w:t></w:r></w:p>`
    ].join("")
    const out = text(await extract("emphasis.docx", docx(body)))
    expect(out).toContain("custom change of b. -> e. as in [1]")
    expect(out).toContain("a bold and italic phrase_with_underscores * star")
    expect(out).not.toMatch(/\\|\*\*|\*italic\*|_italic_/)
  })

  it("HTML: headings, lists and tables stay Markdown; links are their text; spans are not repeated", async () => {
    const html = `<!doctype html><html><body><article><h1>Release notes</h1>
      <p>The <strong>fast</strong> path is <em>now</em> the default -&gt; see [2] and <a href="https://example.org/x">the guide</a>.</p>
      <ol start="6"><li>sixth</li><li>seventh</li></ol>
      <table><tr><th colspan="2">Merged header</th></tr><tr><td>a</td><td>b</td></tr></table>
      <p>Further text so that the article is long enough to be taken as the main content of the page by the reader.</p>
    </article></body></html>`
    const out = text(await extract("notes.html", enc.encode(html)))
    expect(out).toContain("# Release notes")
    expect(out).toContain("The fast path is now the default -> see [2] and the guide.")
    expect(out).toMatch(/^6\.\s+sixth$/m)
    expect(out).toContain("| Merged header |  |")
    expect(out).not.toContain("example.org")
    expect(out.match(/Merged header/g)).toHaveLength(1)
  })

  it("HTML file: the whole visible page (navigation, main content once, footer), no script, style or hidden text", async () => {
    const html = `<!doctype html><html><head><title>Shop page</title>
      <style>.nav { color: red } /* styleRuleText */</style><script>var scriptSecretText = 1</script></head><body>
      <header><nav><ul><li><a href="/">Home section</a></li><li><a href="/help">Help centre</a></li></ul></nav></header>
      <main><article><h1>Installing the widget</h1>
        <p>Mount the bracket before tightening the hinge screws.</p>
        <ul><li>first step</li><li>second step</li></ul>
        <table><tr><th>Part</th><th>Count</th></tr><tr><td>screw</td><td>4</td></tr></table>
        <p>Further text so that the article is long enough to be taken as the main content of the page by a reader.</p>
        <div hidden>hiddenAttributeText</div><span aria-hidden="true">ariaHiddenText</span>
        <p style="display: none">inlineHiddenText</p><template><p>templateText</p></template>
      </article></main>
      <aside>Related reading: hinge maintenance</aside>
      <footer><p>Contact the support desk at the footer address.</p></footer>
      <script>document.write("trailingScriptText")</script></body></html>`
    const doc = await extract("page.html", enc.encode(html))
    const out = text(doc)
    expect(doc.title).toBe("Shop page")
    for (const visible of ["Home section", "Help centre", "Related reading: hinge maintenance", "Contact the support desk at the footer address."])
      expect(out).toContain(visible)
    expect(out).toContain("# Installing the widget")
    expect(out).toMatch(/^-\s+first step$/m)
    expect(out).toContain("| Part | Count |")
    expect(out.match(/Mount the bracket before tightening the hinge screws\./g)).toHaveLength(1)
    expect(out.indexOf("Home section")).toBeLessThan(out.indexOf("Mount the bracket"))
    expect(out.indexOf("Mount the bracket")).toBeLessThan(out.indexOf("Contact the support desk"))
    for (const invisible of ["scriptSecretText", "styleRuleText", "color: red", "trailingScriptText", "hiddenAttributeText", "ariaHiddenText", "inlineHiddenText", "templateText"])
      expect(out).not.toContain(invisible)
  })
})

/** A one-page PDF (Helvetica) whose text items are drawn in the given order at the given places. */
const pdf = (items: ReadonlyArray<{ x: number; y: number; text: string }>): Uint8Array => {
  const stream = items.map((i) => `BT /F1 10 Tf ${i.x} ${i.y} Td (${i.text}) Tj ET`).join("\n")
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`
  ]
  let out = "%PDF-1.4\n"
  const offsets: Array<number> = []
  objects.forEach((o, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return enc.encode(out)
}

describe("PDF extraction leaves the process as it was", () => {
  it("Array.prototype.push is still the native one after pdf.js is loaded (its legacy build's core-js replaces it)", async () => {
    const push = Array.prototype.push
    const doc = await extract("one.pdf", pdf([{ x: 72, y: 700, text: "Native push check" }]))
    expect(text(doc)).toContain("Native push check")
    // core-js dresses its replacement up as native code (toString), so the function itself is compared
    expect(Array.prototype.push).toBe(push)
  })
})

describe("PDF columns in reading order", () => {
  const columns = [
    ["Q visas are issued", "to participants in an", "international cultural", "exchange program that", "the Attorney General", "has designated."],
    ["can download the", "complete text of most", "publications from the", "website at any time", "of the day or night", "without a fee."],
    ["meet the closer", "connection exception", "to the substantial", "presence test if you", "were present fewer", "than 183 days."]
  ]
  const columnText = columns.map((c) => c.join("\n"))

  it("a three-column page drawn row by row (and right to left) reads column after column, no glued words", async () => {
    const items: Array<{ x: number; y: number; text: string }> = [{ x: 72, y: 740, text: "Instructions for Form 1040-NR" }]
    for (let row = 0; row < 6; row++) {
      for (const col of [1, 0, 2]) items.push({ x: 72 + col * 170, y: 700 - row * 12, text: columns[col]![row]! })
    }
    items.push({ x: 72, y: 600, text: "Page footer spanning the width of the page, after the columns end." })
    const out = text(await extract("irs.pdf", pdf(items)))
    expect(out.startsWith("Instructions for Form 1040-NR\n")).toBe(true)
    for (const c of columnText) expect(out).toContain(c)
    expect(out.indexOf(columnText[0]!)).toBeLessThan(out.indexOf(columnText[1]!))
    expect(out.indexOf(columnText[1]!)).toBeLessThan(out.indexOf(columnText[2]!))
    expect(out.trim().endsWith("after the columns end.")).toBe(true)
    expect(out).not.toMatch(/issuedcan|mostmeet|issued ?can/)
  })

  it("a word hyphenated at a line end is one word again; a capital after the break keeps the hyphen", async () => {
    const lines = ["Pollinators visit many inter-", "species hybrids near Stuttgart-", "Hohenheim every year."]
    const out = text(await extract("hyphen.pdf", pdf(lines.map((t, i) => ({ x: 72, y: 700 - i * 12, text: t })))))
    expect(out).toContain("many interspecies hybrids")
    expect(out).toContain("Stuttgart-\nHohenheim")
  })

  it("a table of short cells keeps its rows, as a Markdown table", async () => {
    const rows = [["Name", "Code", "Rate"], ["Alpha", "A1", "0.5"], ["Beta", "B2", "0.7"], ["Gamma", "C3", "0.9"]]
    const items = rows.flatMap((r, i) => r.map((cell, j) => ({ x: 72 + j * 150, y: 700 - i * 14, text: cell })))
    const out = text(await extract("table.pdf", pdf(items)))
    expect(out).toBe("| Name | Code | Rate |\n| --- | --- | --- |\n| Alpha | A1 | 0.5 |\n| Beta | B2 | 0.7 |\n| Gamma | C3 | 0.9 |")
  })
})

describe("citations name the sheet, the slide or the page", () => {
  it("spreadsheet chunks carry their sheet name, and a citation shows it", async () => {
    const XLSX = await import("@e965/xlsx")
    const wb = XLSX.utils.book_new()
    XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet([["Region", "Sales"], ["North", 120]]), "Summary")
    XLSX.utils.book_append_sheet(wb, XLSX.utils.aoa_to_sheet([["Quarter", "Revenue"], ["Q3", 4200]]), "Revenue 2024")
    const data = new Uint8Array(XLSX.write(wb, { type: "array", bookType: "xlsx" }) as ArrayBuffer)
    const result = await Effect.runPromise(
      Effect.flatMap(Upload.Upload, (u) => u.extractChunks({ name: "budget.xlsx", data }, {})).pipe(
        Effect.provide(LocalFiles.layer({ isolation: "inline" }))
      )
    )
    const chunks = result.data.data.chunks
    const revenue = chunks.find((c) => c.content.includes("4200"))!
    expect(revenue.from_page).toBe(2)
    expect(revenue.from_sheet).toBe("Revenue 2024")
    const hit = { id: "d#1", documentId: "d", title: undefined, metadata: { source: "budget.xlsx", page: 2, sheet: "Revenue 2024", type: "xlsx" } }
    expect(citationOf(hit).place).toBe(`sheet "Revenue 2024"`)
    expect(sourceHeader({ ...citationOf(hit), n: 1, text: "" })).toBe(`[1] budget.xlsx, sheet "Revenue 2024"`)
  })

  it("slides cite the slide, PDFs and other documents the page", () => {
    expect(placeOf({ type: "pptx" }, 3)).toBe("slide 3")
    expect(placeOf({ type: "pdf" }, 7)).toBe("page 7")
    expect(placeOf({ type: "xlsx" }, 2)).toBe("sheet 2")
    expect(placeOf({ type: "text" }, undefined)).toBeUndefined()
  })
})

describe("JATS references", () => {
  it("the fields of an element-only citation are words of their own; formatting inside text runs on", async () => {
    const article = `<?xml version="1.0"?><article article-type="research-article"><front><article-meta><title-group><article-title>T</article-title></title-group></article-meta></front>` +
      `<body><p>Levels of T<sub>4</sub> rose (<italic>n</italic><sup>2</sup>).</p></body><back><ref-list><title>References</title>` +
      `<ref id="b1"><element-citation publication-type="journal"><person-group person-group-type="author"><name><surname>Akhter</surname><given-names>M</given-names></name>` +
      `<name><surname>Inoue</surname><given-names>M</given-names></name></person-group><year>2008</year><article-title>Reproductive factors</article-title>` +
      `<source>Eur J Cancer Prev</source><volume>17</volume><fpage>515</fpage><lpage>524</lpage></element-citation></ref>` +
      `<ref id="b2"><mixed-citation>Smith J. <italic>Mills</italic>. 1990.</mixed-citation></ref></ref-list></back></article>`
    expect(text(await extract("refs.xml", enc.encode(article)))).toBe(
      "# T\n\nLevels of T4 rose (n2).\n\n## References\n\nAkhter M Inoue M 2008 Reproductive factors Eur J Cancer Prev 17 515 524\n\nSmith J. Mills. 1990."
    )
  })
})

describe("merged cells in workbooks", () => {
  it("XLSX and XLS: a merged range's value once, in its first cell, as LibreOffice shows it; its other cells empty", async () => {
    const XLSX = await import("@e965/xlsx")
    const ws = XLSX.utils.aoa_to_sheet([["Region and zone", "", "Total"], ["North", "East", 5], ["", "West", 7]])
    // A1:B1 across two columns, A2:A3 down two rows
    ws["!merges"] = [XLSX.utils.decode_range("A1:B1"), XLSX.utils.decode_range("A2:A3")]
    const wb = XLSX.utils.book_new()
    XLSX.utils.book_append_sheet(wb, ws, "S")
    for (const bookType of ["xlsx", "biff8"] as const) {
      const data = new Uint8Array(XLSX.write(wb, { type: "array", bookType }) as ArrayBuffer)
      const out = text(await extract(`merged.${bookType === "xlsx" ? "xlsx" : "xls"}`, data))
      expect([bookType, out]).toEqual([bookType, "## S\n\n| Region and zone |  | Total |\n| --- | --- | --- |\n| North | East | 5 |\n|  | West | 7 |"])
    }
  })
})

describe("numbers in workbooks", () => {
  it("XLSX and XLS: a General number with all its digits (up to 15), not cut to 11 characters; other formats as formatted", async () => {
    const XLSX = await import("@e965/xlsx")
    const ws = XLSX.utils.aoa_to_sheet([["Value", "Id", "Big", "Sum", "Tiny", "Rounded"], [7168.95420416, 1885673307.78, 123456789012345, 0.1 + 0.2, 1e-7, 2.25]])
    ws["F2"]!.z = "0.0"
    const wb = XLSX.utils.book_new()
    XLSX.utils.book_append_sheet(wb, ws, "S")
    for (const bookType of ["xlsx", "biff8"] as const) {
      const data = new Uint8Array(XLSX.write(wb, { type: "array", bookType }) as ArrayBuffer)
      const out = text(await extract(`numbers.${bookType === "xlsx" ? "xlsx" : "xls"}`, data))
      // 1e-7 needs an exponent at full precision: SheetJS's General text stays
      expect([bookType, out.split("\n").at(-1)]).toEqual([bookType, "| 7168.95420416 | 1885673307.78 | 123456789012345 | 0.3 | 0.0000001 | 2.3 |"])
    }
  })
})

describe("CSV as one Markdown table", () => {
  it("quoted delimiters, doubled quotes, line breaks in quotes, CRLF, empty lines, a stray quote and ragged rows", async () => {
    const csv = `name,note,count\r\n"Smith, J.","said ""hi""",3\r\n\r\nplain,"two\nlines",4\r\nstray "quote,x\r\nshort\r\n`
    const out = text(await extract("table.csv", enc.encode(csv)))
    expect(out).toBe(
      [
        "| name | note | count |",
        "| --- | --- | --- |",
        `| Smith, J. | said "hi" | 3 |`,
        "| plain | two lines | 4 |",
        `| stray "quote | x |  |`,
        "| short |  |  |"
      ].join("\n")
    )
  })

  it("a .tsv file is split on tabs; a semicolon file on semicolons", async () => {
    expect(text(await extract("t.tsv", enc.encode("a\tb, c\n1\t2\n")))).toBe("| a | b, c |\n| --- | --- |\n| 1 | 2 |")
    expect(text(await extract("s.csv", enc.encode("a;b\n1,5;2\n")))).toBe("| a | b |\n| --- | --- |\n| 1,5 | 2 |")
  })
})
