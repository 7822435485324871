/**
 * OpenDocument spreadsheets (`.ods`, `.ots`, flat `.fods`), read from `content.xml` with names
 * matched by namespace (see `odf.ts`): every `table:table` of `office:spreadsheet` is a sheet,
 * its cells' shown text (`text:p`; the `office:*value` when a cell has none) a Markdown table
 * (see `grid.ts`). A merged cell (`table:number-columns-spanned`, `table:number-rows-spanned`)
 * holds its value once, in its first cell, and the covered cells (`table:covered-table-cell`)
 * are empty but hold their columns: as LibreOffice shows and exports the sheet, as for XLSX,
 * and as the engine writes a table's spanned cells elsewhere. Comments (`office:annotation`)
 * are listed after the table with their cell's address.
 *
 * Bounded and iterative: repeated rows and columns (`table:number-rows-repeated`,
 * `table:number-columns-repeated`, which LibreOffice writes up to the sheet's last row and
 * column) cost nothing while empty; a row or cell with content repeated more than
 * {@link maxRepeat} times is read once, with a warning; at most `limits.sheetCells` cells per
 * sheet and {@link maxColumns} columns; row groups may nest to any depth.
 */
import { cellAddress, sheetContent } from "./grid.js"
import { cellText, metaOf, openOdf } from "./odf.js"
import { odfPictures } from "./ooxml.js"
import { ExtractFailure, type Extracted, type ExtractOptions, limits, type Unit } from "./types.js"
import { attrsOf, childrenOf, find, tagOf, textOf, type XNode } from "./xml.js"

/** A row or cell with content repeated more often than this is read once. */
export const maxRepeat = 1000

/** Columns read per row (LibreOffice's and Excel's limit). */
export const maxColumns = 16_384

/** One sheet being read: its rows so far, its comments. */
interface Sheet {
  readonly name: string
  readonly rows: Array<Array<string>>
  /** The index of the next row. */
  row: number
  cells: number
  full: boolean
  readonly comments: Array<string>
  readonly warnings: Array<string>
}

/** A count attribute (`number-…-repeated`, `-spanned`): 1 when absent or not a positive number. */
const countOf = (attrs: Record<string, string>, key: string): number => Math.max(1, Math.floor(Number(attrs[key] ?? "1")) || 1)

/** The row elements of a table in order, through header rows, row groups and `table:table-rows`, at any depth. */
const rowsOf = (table: XNode): Array<XNode> => {
  const out: Array<XNode> = []
  const stack: Array<XNode> = [...childrenOf(table)].reverse()
  while (stack.length > 0) {
    const node = stack.pop()!
    const tag = tagOf(node)
    if (tag === "table:table-row") out.push(node)
    else if (tag === "table:table-header-rows" || tag === "table:table-rows" || tag === "table:table-row-group") {
      const kids = childrenOf(node)
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!)
    }
  }
  return out
}

/** The text a cell shows: its paragraphs, else its typed value. */
const shownText = (cell: XNode): string => {
  const text = cellText(childrenOf(cell).filter((k) => tagOf(k) !== "office:annotation"))
  if (text) return text
  const a = attrsOf(cell)
  return a["office:string-value"] ?? a["office:value"] ?? a["office:date-value"] ?? a["office:time-value"] ?? a["office:boolean-value"] ?? ""
}

const addComments = (s: Sheet, cell: XNode, col: number): void => {
  for (const note of childrenOf(cell)) {
    if (tagOf(note) !== "office:annotation") continue
    const creator = find(childrenOf(note), "dc:creator")
    const who = creator ? textOf([creator]).trim() : ""
    const body = cellText(childrenOf(note).filter((k) => tagOf(k) === "text:p" || tagOf(k) === "text:list"))
    if (body) s.comments.push(`- ${cellAddress(s.row, col)}${who ? ` (${who})` : ""}: ${body}`)
  }
}

/** The cells of one row element, by column (holes are empty cells). */
const readCells = (s: Sheet, rowNode: XNode): Array<string> => {
  const cells: Array<string> = []
  let col = 0
  for (const cell of childrenOf(rowNode)) {
    const tag = tagOf(cell)
    if (tag !== "table:table-cell" && tag !== "table:covered-table-cell") continue
    if (col >= maxColumns) break
    const a = attrsOf(cell)
    let repeat = countOf(a, "table:number-columns-repeated")
    // a covered cell's content is hidden under the merge
    const text = tag === "table:table-cell" ? shownText(cell) : ""
    addComments(s, cell, col)
    if (text !== "") {
      if (repeat > maxRepeat) {
        s.warnings.push(`sheet ${s.name}: a cell repeated over ${repeat} columns is read once`)
        repeat = 1
      }
      for (let i = 0; i < repeat && col + i < maxColumns; i++) cells[col + i] = text
    }
    col += repeat
  }
  return cells
}

/** Adds a row at the sheet's next index; false once the cell limit is reached. */
const addRow = (s: Sheet, cells: Array<string>): boolean => {
  if (s.cells + cells.length > limits.sheetCells) {
    s.warnings.push(`sheet ${s.name}: only the first ${s.rows.length} rows are read (cell limit)`)
    s.full = true
    return false
  }
  s.cells += cells.length
  s.rows.push(Array.from(cells, (c) => c ?? ""))
  s.row++
  return true
}

const readSheet = (table: XNode, page: number, warnings: Array<string>): Unit => {
  const s: Sheet = {
    name: attrsOf(table)["table:name"] ?? `Sheet${page}`,
    rows: [],
    row: 0,
    cells: 0,
    full: false,
    comments: [],
    warnings
  }
  for (const rowNode of rowsOf(table)) {
    let repeat = countOf(attrsOf(rowNode), "table:number-rows-repeated")
    const cells = readCells(s, rowNode)
    if (!cells.some((c) => c !== undefined && c !== "")) {
      s.row += repeat // empty rows cost nothing, however many
      continue
    }
    if (repeat > maxRepeat) {
      warnings.push(`sheet ${s.name}: a row repeated ${repeat} times is read once`)
      repeat = 1
    }
    for (let i = 0; i < repeat; i++) if (!addRow(s, [...cells])) break
    if (s.full) break
  }
  return sheetContent(s.name, page, s.rows, s.comments)
}

/** Extracts an OpenDocument spreadsheet (`.ods`, `.ots`, `.fods`): one unit per sheet. */
export const extractOds = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  if (options.imagesOnly) {
    openOdf(data, false) // the container limits and the DTD refusal
    return odfPictures(data, "ods", "workbook")
  }
  const { body, meta } = openOdf(data)
  const spreadsheet = find(body, "office:spreadsheet")
  if (!spreadsheet) throw new ExtractFailure("corrupt", "the OpenDocument spreadsheet has no office:spreadsheet body")
  const warnings: Array<string> = []
  const units = childrenOf(spreadsheet)
    .filter((n) => tagOf(n) === "table:table")
    .map((table, i) => readSheet(table, i + 1, warnings))
  const m = metaOf(meta)
  return {
    format: "ods",
    units: units.length > 0 ? units : [{ page: 1, content: "" }],
    title: m.title,
    description: m.description,
    ...(Object.keys(m.properties).length > 0 ? { metadata: m.properties } : {}),
    warnings: [...new Set(warnings)]
  }
}
