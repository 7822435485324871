/**
 * PDF tables come out as Markdown tables, with the page's other text in reading order around
 * them: a ruled table with a multi-line cell, a ruled table of two-line cells with a shadowed
 * header, an unruled table, an unruled table whose narrow columns break words, a row broken by
 * a page break, a table that breaks across pages with its header row repeated (one table, the header once), one whose
 * title row repeats above the header and whose pages end in a footer, a table of single letters
 * beside a list whose bullet is a letter, and two columns of prose that must
 * stay prose. The PDFs were made once by LibreOffice from the flat ODT sources beside them
 * (test/fixtures/pdf-tables/README.md); the expected cells are those of the sources.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { maxOf, minOf } from "../../src/engines/documents/internal/extract/layout.js"
import { lamAlef, largestTypeTitle } from "../../src/engines/documents/internal/extract/pdf.js"
import { findTables, isGlyphSoup, joinedRows } from "../../src/engines/documents/internal/extract/pdf-tables.js"
import { packageRoot } from "../../src/internal/shared.js"

const dir = join(packageRoot(), "test", "fixtures", "pdf-tables")
const file = (name: string): Upload.UploadFile => {
  const raw = readFileSync(join(dir, name))
  return { name, data: new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) }
}

/** The positions of `parts` in `text`, each required to be there. */
const positions = (text: string, parts: ReadonlyArray<string>): Array<number> =>
  parts.map((p) => {
    const i = text.indexOf(p)
    expect(i, `"${p}" is in the text`).toBeGreaterThanOrEqual(0)
    return i
  })

const ascending = (xs: ReadonlyArray<number>) => xs.every((x, i) => i === 0 || x > xs[i - 1]!)

layer(LocalFiles.layer({ isolation: "inline", timeout: "60 seconds" }))("PDF tables as Markdown", (it) => {
  it.effect("a ruled table with a multi-line cell, between the paragraphs around it", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("ruled-table.pdf"))
      const table = [
        "| Region | Sales | Note |",
        "| --- | --- | --- |",
        "| North | 1,200 | Revised in April after the late invoices were counted |",
        "| South | 950 | None |",
        "| East | 1,430 | Includes the new branch |"
      ].join("\n")
      const at = positions(content, ["Quarterly sales by region", "where the figures were revised.", table, "All figures are in thousands of euros."])
      expect(ascending(at)).toBe(true)
      // the table is a block of its own
      expect(content).toContain(`revised.\n\n${table}\n\nAll figures`)
    }))

  it.effect("an unruled table from the columns of its text", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("unruled-table.pdf"))
      const table = [
        "| Branch | Opens | Closes |",
        "| --- | --- | --- |",
        "| Harbour | 08:00 | 17:00 |",
        "| Market | 09:00 | 18:00 |",
        "| Station | 07:30 | 16:30 |",
        "| Castle | 10:00 | 19:00 |"
      ].join("\n")
      const at = positions(content, ["Opening hours of the branches", "from Monday to Friday.", table, "On public holidays every branch is closed."])
      expect(ascending(at)).toBe(true)
    }))

  it.effect("a table across pages with its header repeated is one table, the header once", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content, pages } = yield* upload.extract(file("table-across-pages.pdf"), { page_based: true })
      expect((pages ?? []).length).toBeGreaterThan(1)
      const weight = (i: number) => `${(10 + (i * 37) % 90) / 10} kg`
      const rows = Array.from({ length: 70 }, (_, i) => `| S-${String(i + 1).padStart(3, "0")} | Site ${(i % 7) + 1} | ${weight(i)} |`)
      const table = ["| Sample | Site | Weight |", "| --- | --- | --- |", ...rows].join("\n")
      const at = positions(content, ["Register of samples", table, "End of the register."])
      expect(ascending(at)).toBe(true)
      expect(content.split("| Sample | Site | Weight |").length - 1).toBe(1)
    }))

  it.effect("words broken inside narrow columns are whole again; a line of two parts under the table is not a row", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("narrow-unruled-table.pdf"))
      const table = [
        "| Observation | Time | Censored | Treatment | Survival |",
        "| --- | --- | --- | --- | --- |",
        "| 1 | 10.00000 | 1 | 1 | 0.9787 |",
        "| 2 | 12.00000 | 0 | 1 | 0.9574 |",
        "| 3 | 14.00000 | 1 | 2 | 0.9362 |",
        "| 4 | 15.00000 | 0 | 2 | 0.9149 |"
      ].join("\n")
      const at = positions(content, ["Survival times by treatment", table, "Source: lab"])
      expect(ascending(at)).toBe(true)
      expect(content).toContain(`${table}\n\nSource: lab`)
    }))

  it.effect("a ruled table written cell by cell, every cell of two lines and the header drawn twice (a text shadow)", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("ruled-two-line-cells.pdf"))
      const table = [
        "| Site name | Start date | Patients enrolled |",
        "| --- | --- | --- |",
        "| North clinic | March 2021 | 120 adults |",
        "| River hospital | June 2021 | 85 adults |",
        "| Hill centre | May 2022 | 42 children |"
      ].join("\n")
      expect(content).toBe(`Trial sites\n\n${table}\n\nEnrolment closed at the end of 2022.`)
    }))

  it.effect("a row broken by the page break is one row of the table that goes on, the header once", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("row-across-pages.pdf"))
      const rows = content.split("\n").filter((l) => l.startsWith("|"))
      expect(rows.filter((l) => l === "| Incident | Account |")).toHaveLength(1)
      expect(rows.slice(2).map((l) => /^\| (Incident \d+) \|/.exec(l)?.[1])).toEqual(Array.from({ length: 12 }, (_, i) => `Incident ${i + 1}`))
      // the row the page breaks (its text goes on after the header repeated on the next page)
      const row4 = rows.find((l) => l.startsWith("| Incident 4 |"))!
      expect(row4).toMatch(/^\| Incident 4 \| The register shows that damage was worst .* leaning towards the river\. The survey of the northern orchards .* Each team walked .* after the winter storms\. \|$/)
      const at = positions(content, ["Incident log", "| Incident 1 |", "| Incident 12 |", "End of the log."])
      expect(ascending(at)).toBe(true)
    }))

  it.effect("a table across pages under a title row repeated with its header, a page footer under it on each page, is one table", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("titled-table-across-pages.pdf"), { remove_headers: false })
      const weight = (i: number) => `${(10 + (i * 37) % 90) / 10} kg`
      const rows = Array.from({ length: 80 }, (_, i) => `| S-${String(i + 1).padStart(3, "0")} | Site ${(i % 7) + 1} | ${weight(i)} |`)
      const table = ["| Sample | Site | Weight |", "| --- | --- | --- |", ...rows].join("\n")
      const at = positions(content, ["Weighing log", "Weights of the samples by site", table, "Note: the samples were weighed", "End of the log."])
      expect(ascending(at)).toBe(true)
      expect(content.split("Weights of the samples by site").length - 1).toBe(1)
      // the footers stay, after the table
      expect(content.match(/Page \d of 3/g)).toEqual(["Page 1 of 3", "Page 2 of 3", "Page 3 of 3"])
    }))

  it.effect("a table of single lower-case letters is a table (a row per line, its page not sent to OCR); a list with the bullet \"o\" is not", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("letters-table.pdf"))
      const table = ["| a | b | c | d |", "| --- | --- | --- | --- |", "| e | f | g | h |", "| i |  | j | k |", "| l |  |  | m |"].join("\n")
      const list = ["o Analyse the current state", "o First field visit", "o First test measurements", "o Concepts for the next season"].join("\n")
      expect(content).toBe(`Grid of letters\n\n${table}\n\nSteps of the survey:\n${list}\nEnd of the steps.`)
    }))

  it.effect("a page that holds only a table of single letters is read from its text layer, not sent to OCR for its Markdown", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content, warnings } = yield* upload.extract(file("letters-table-alone.pdf"))
      expect(content).toBe(["| a | b | c | d |", "| --- | --- | --- | --- |", "| e | f | g | h |", "| i |  | j | k |", "| l |  |  | m |"].join("\n"))
      expect((warnings ?? []).filter((w) => /OCR/.test(w))).toEqual([])
    }))

  it.effect("two columns of prose are not a table", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const { content } = yield* upload.extract(file("two-column-prose.pdf"))
      expect(content.split("\n").filter((l) => l.startsWith("|"))).toEqual([])
      const at = positions(content, ["Field notes from the orchard survey", "The survey of the northern orchards\nbegan in early spring", "leaning towards the river."])
      expect(ascending(at)).toBe(true)
    }))
})

describe("glyph soup", () => {
  it("a figure's glyphs without a usable text map are soup; words, numbers and formulas are not", () => {
    expect(isGlyphSoup("…47>F/# N:FF#O6:,/#")).toBe(true)
    expect(isGlyphSoup("\ue001\ue002\ue003\ue004\ue005 \ue006")).toBe(true)
    expect(isGlyphSoup("\u0001\u0002\u0003\u0004\u0005x")).toBe(true)
    expect(isGlyphSoup("The survey of the northern orchards")).toBe(false)
    expect(isGlyphSoup("1,200 950 1,430 3.5% 12/04/2024")).toBe(false)
    expect(isGlyphSoup("E = mc^2")).toBe(false)
    expect(isGlyphSoup("if (a <= b && c != d) { x = y / z; }")).toBe(false)
  })
})

describe("pages of many text runs", () => {
  it("a page with more text runs than a call takes arguments finds its title (no RangeError from Math.max(...))", () => {
    const run = (str: string, size: number) => ({ str, hasEOL: false, transform: [size, 0, 0, size, 0, 0], width: 10, height: size })
    const items = [run("Annual", 24), run("Report", 24), ...Array.from({ length: 250_000 }, (_, i) => run(`w${i % 10}`, 10))]
    expect(largestTypeTitle(items)).toBe("Annual Report")
    expect(maxOf(items.map((i) => i.height))).toBe(24)
    expect(minOf(items.map((i) => i.height))).toBe(10)
    expect([maxOf([]), minOf([])]).toEqual([-Infinity, Infinity])
  })

  it("a ruled table cell of 130,000 text lines is read (a page's items gathered in loops, never spread into a call or copied per item)", () => {
    const item = (str: string, x: number, y: number, h: number) => ({ str, hasEOL: false, transform: [h, 0, 0, h, x, y], width: 10 * str.length, height: h })
    const lines = 130_000 // the last ones fall under the table's bottom rule
    const items = [
      item("Name", 60, 680, 10),
      item("Value", 300, 680, 10),
      item("Key", 60, 590, 10),
      ...Array.from({ length: lines }, (_, i) => item("7", 300, 590 - i * 0.0038, 0.002))
    ]
    // a grid of two rows and two columns
    const rules = [
      ...[700, 600, 100].map((y) => ({ x0: 50, x1: 550, y0: y, y1: y })),
      ...[50, 250, 550].map((x) => ({ x0: x, x1: x, y0: 100, y1: 700 }))
    ]
    const { tables } = findTables(items, rules)
    expect(tables).toHaveLength(1)
    expect(tables[0]!.rows[0]).toEqual(["Name", "Value"])
    expect(tables[0]!.rows[1]![0]).toBe("Key")
    const inside = items.filter((i) => i.str === "7" && i.transform[5]! >= 100).length
    expect(inside).toBeGreaterThan(120_000)
    expect(tables[0]!.rows[1]![1]).toBe(Array.from({ length: inside }, () => "7").join(" "))
  })
})

describe("table text from positioned items", () => {
  const item = (str: string, x: number, y: number, skew = 0) => ({ str, hasEOL: false, transform: [12, 0, skew, 12, x, y], width: 6 * str.length, height: 12 })

  it("a table set in slanted type (an italic made by skewing the upright font) is a table", () => {
    const rows = [["Year", "Cases", "Closed"], ["2004", "134", "37"], ["2005", "164", "40"], ["2006", "116", "30"]]
    const items = rows.flatMap((r, i) => r.map((c, k) => item(c, 100 + k * 120, 700 - i * 20, 3.3)))
    const { tables, rest } = findTables(items, [])
    expect(tables.map((t) => t.rows)).toEqual([rows])
    expect(rest).toEqual([])
  })

  it("a right-to-left cell's items are read from the right (\"1\", \"-\", a heading: \"1 - heading\")", () => {
    // pdf.js gives each item's text in logical order; the items of a line go right to left
    const heading = "معلومات عامة"
    const cell = [item("1", 400, 650), item("-", 390, 650), item(heading, 300, 650)]
    const items = [item("الصفحة", 300, 680), item("البند", 100, 680), ...cell, item("10", 100, 650), item("ألف", 300, 620), item("12", 100, 620)]
    const rules = [
      ...[700, 665, 635, 605].map((y) => ({ x0: 50, x1: 450, y0: y, y1: y })),
      ...[50, 250, 450].map((x) => ({ x0: x, x1: x, y0: 605, y1: 700 }))
    ]
    const { tables } = findTables(items, rules)
    // a right-to-left table: its first column is on the right
    expect(tables.map((t) => t.rows)).toEqual([[["الصفحة", "البند"], [`1 - ${heading}`, "10"], ["ألف", "12"]]])
  })

  it("a hexadecimal range broken inside its numbers in a narrow ruled cell is whole again; two numbers stacked stay apart", () => {
    // column 0 is 30 wide, its text 3 in from each rule: room for four characters (6 wide each)
    const cell = [item("000", 53, 680), item("0 –", 53, 667), item("007", 53, 654), item("F", 53, 641)]
    const stacked = [item("2004", 53, 610), item("2005", 53, 597)]
    const items = [item("Cell", 83, 700), item("Name", 83, 680), item("Year", 83, 610), ...cell, ...stacked, item("No", 53, 700)]
    const rules = [
      ...[712, 692, 622, 590].map((y) => ({ x0: 50, x1: 200, y0: y, y1: y })),
      ...[50, 80, 200].map((x) => ({ x0: x, x1: x, y0: 590, y1: 712 }))
    ]
    const { tables } = findTables(items, rules)
    expect(tables.map((t) => t.rows)).toEqual([[["No", "Cell"], ["0000 – 007F", "Name"], ["2004 2005", "Year"]]])
  })
})

describe("tables across pages and their last lines", () => {
  const item = (str: string, x: number, y: number) => ({ str, hasEOL: false, transform: [12, 0, 0, 12, x, y], width: 6 * str.length, height: 12 })
  const table = (rows: Array<Array<string>>) => ({ x0: 0, x1: 100, top: 700, bottom: 100, ruled: false, rows })

  it("a number broken by the page break (\"3.000\" and \"0\" after the repeated header) is whole again; a new row is not joined", () => {
    const prev = table([["Time", "Failed"], ["2.0000", "5"], ["3.000", "6"]])
    expect(joinedRows(prev, table([["Time", "Failed"], ["0", ""], ["3.0000", "7"]]))).toEqual([["Time", "Failed"], ["2.0000", "5"], ["3.0000", "6"], ["3.0000", "7"]])
    expect(joinedRows(prev, table([["Time", "Failed"], ["4.0000", ""]]))).toEqual([["Time", "Failed"], ["2.0000", "5"], ["3.000", "6"], ["4.0000", ""]])
  })

  it("two lines under an unruled table that close its column gaps (a note) are not rows", () => {
    const rows = [["Time", "Survival", "Left"], ["1.0", "0.97", "46"], ["2.0", "0.89", "41"], ["3.0", "0.73", "34"], ["4.0", "0.69", "31"]]
    const items = rows.flatMap((r, i) => r.map((c, k) => item(c, 100 + k * 90, 700 - i * 14)))
    const note = [item("Note", 100, 630), item("The marked survival times are censored", 140, 630), item(":", 100, 616), item("observations.", 140, 616)]
    const { tables, rest } = findTables([...items, ...note], [])
    expect(tables.map((t) => t.rows)).toEqual([rows])
    expect(rest.map((i) => i.str)).toEqual(note.map((i) => i.str))
  })
})

describe("Arabic lam-alef ligatures", () => {
  const item = (str: string) => ({ str, hasEOL: false, transform: [12, 0, 0, 12, 0, 0], width: 10, height: 12 })

  it("after the article's alef, a ligature pdf.js gave in reverse is in its letters' order again; other text is kept", () => {
    // "الأول" (the first) and "والاقتصادية" (and the economic) as pdf.js gives them
    expect(lamAlef(item("الباب األول")).str).toBe("الباب الأول")
    expect(lamAlef(item("الخصائص واالقتصادية")).str).toBe("الخصائص والاقتصادية")
    expect(lamAlef(item("اإلطار")).str).toBe("الإطار")
    // no alef before the alef: nothing to tell a reversed ligature from the letters ("ألف", "إلى", "مال")
    for (const s of ["ألف", "إلى", "مال", "Plain text", "الأول"]) expect(lamAlef(item(s)).str).toBe(s)
  })
})
