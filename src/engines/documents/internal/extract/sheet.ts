/**
 * Spreadsheets with SheetJS CE (`@e965/xlsx` 0.20.3): XLSX and XLS (BIFF, legacy code pages
 * through the full cptable), every sheet by name as a Markdown table of the cells' formatted
 * values (cached formula results), a merged range's value once in its first cell (its other
 * cells empty, as LibreOffice shows and exports them), cell comments listed after the table. CSV with d3-dsv (RFC 4180 quoting; a stray quote inside an unquoted field
 * is kept as text). OOXML workbooks are opened with the zip limits
 * before SheetJS sees them.
 */
import * as XLSX from "@e965/xlsx"
import * as cptable from "@e965/xlsx/dist/cpexcel.full.mjs"
import { dsvFormat } from "d3-dsv"
import { sheetContent } from "./grid.js"
import { markdownTable } from "./markdown.js"
import { mediaDataUrls } from "./ooxml.js"
import { decodeText } from "./text.js"
import { ExtractFailure, type Extracted, type ExtractOptions, limits, type Unit } from "./types.js"
import { xlsImages } from "./xls-images.js"
import { openZip } from "./zip.js"

XLSX.set_cptable(cptable)

const plainDecimal = /^-?\d+(?:\.\d+)?$/

/**
 * A number in the General format as a spreadsheet shows it in a column wide enough: SheetJS
 * renders General as Excel does in a standard-width column, cut to 11 characters
 * (7168.95420416 → 7168.954204, 1885673307.78 → 1885673308, 123456789012345 → 1.23457E+14);
 * LibreOffice and a search for the value want all of it: up to 15 significant digits, as a
 * plain decimal (numbers that need an exponent keep SheetJS's text). Other formats are kept.
 */
const shownNumber = (cell: XLSX.CellObject, shown: string): string => {
  if (cell.t !== "n" || typeof cell.v !== "number" || !Number.isFinite(cell.v)) return shown
  if (shown !== XLSX.SSF.format("General", cell.v)) return shown
  const full = String(Number(cell.v.toPrecision(15)))
  return plainDecimal.test(full) ? full : shown
}

const sheetUnit = (ws: XLSX.WorkSheet, name: string, page: number, warnings: Array<string>): Unit => {
  const ref = ws["!ref"]
  if (!ref) return { page, name, content: "" }
  const range = XLSX.utils.decode_range(ref)
  const cols = range.e.c - range.s.c + 1
  let lastRow = range.e.r
  if ((lastRow - range.s.r + 1) * cols > limits.sheetCells) {
    lastRow = range.s.r + Math.floor(limits.sheetCells / cols) - 1
    warnings.push(`sheet ${name}: only the first ${lastRow - range.s.r + 1} rows are read (cell limit)`)
  }
  const rows: Array<Array<string>> = []
  const comments: Array<string> = []
  const dense = (ws as unknown as { "!data"?: Array<Array<XLSX.CellObject | undefined> | undefined> })["!data"]
  const at = (r: number, c: number): XLSX.CellObject | undefined =>
    dense ? dense[r]?.[c] : (ws[XLSX.utils.encode_cell({ r, c })] as XLSX.CellObject | undefined)
  for (let r = range.s.r; r <= lastRow; r++) {
    const row: Array<string> = []
    for (let c = range.s.c; c <= range.e.c; c++) {
      const cell = at(r, c)
      let text = ""
      if (cell && cell.t !== "z") {
        text = cell.w === undefined
          ? cell.v === undefined || cell.v === null ? "" : cell.v instanceof Date ? cell.v.toISOString() : String(cell.v)
          : shownNumber(cell, cell.w)
      }
      for (const comment of cell?.c ?? []) {
        const body = (comment.t ?? "").replace(/\s+/g, " ").trim()
        if (body) comments.push(`- ${XLSX.utils.encode_cell({ r, c })}${comment.a ? ` (${comment.a})` : ""}: ${body}`)
      }
      row.push(text)
    }
    rows.push(row)
  }
  return sheetContent(name, page, rows, comments)
}

/** Extracts an XLSX or XLS workbook. */
export const extractWorkbook = async (
  data: Uint8Array,
  format: "xlsx" | "xls",
  options: ExtractOptions
): Promise<Extracted> => {
  if (format === "xlsx") {
    const zip = openZip(data)
    if (zip.names.some((n) => n.endsWith(".xml") && /<!DOCTYPE/i.test((zip.text(n) ?? "").slice(0, 4096)))) {
      throw new ExtractFailure("corrupt", "the workbook declares a DTD, which OOXML does not allow")
    }
    if (options.imagesOnly) {
      const images = mediaDataUrls(zip, "xl/media/")
      return {
        format,
        units: [{ page: 1, content: images.join("\n") }],
        images,
        warnings: images.length === 0 ? ["images_only: the workbook has no embedded images"] : []
      }
    }
  }
  let wb: XLSX.WorkBook
  try {
    wb = XLSX.read(data, { type: "array", dense: true, cellFormula: false, cellHTML: false, cellText: true, cellDates: true })
  } catch (e) {
    const message = (e as Error)?.message ?? String(e)
    if (/password|encrypt/i.test(message)) {
      if (options.password !== undefined) {
        throw new ExtractFailure("wrong_password", "the workbook is encrypted and could not be opened with the password")
      }
      throw new ExtractFailure("password_required", "the workbook is encrypted: a password is required")
    }
    throw new ExtractFailure("corrupt", `the workbook cannot be read: ${message}`)
  }
  const warnings: Array<string> = []
  if (options.imagesOnly) {
    // XLS (XLSX returned above): the workbook opened, so it is neither corrupt nor locked
    const found = xlsImages(data)
    if (found.encrypted) warnings.push("images_only: the workbook stream is encrypted, so its pictures cannot be read")
    else if (found.images.length === 0) warnings.push("images_only: the workbook has no embedded images")
    if (found.skipped > 0) warnings.push(`images_only: ${found.skipped} picture(s) left out (WMF/PICT metafiles, damaged or over the limits)`)
    return { format, units: [{ page: 1, content: found.images.join("\n") }], images: found.images, warnings }
  }
  const units = wb.SheetNames.map((name, i) => sheetUnit(wb.Sheets[name]!, name, i + 1, warnings))
  const props = wb.Props ?? {}
  return {
    format,
    units,
    title: props.Title || undefined,
    description: props.Subject || props.Comments || undefined,
    warnings
  }
}

const sniffDelimiter = (text: string, name: string): string => {
  if (name.toLowerCase().endsWith(".tsv")) return "\t"
  const firstLines = text.split("\n", 5).join("\n")
  const counts = [",", ";", "\t", "|"].map((d) => [d, firstLines.split(d).length] as const)
  return counts.sort((a, b) => b[1] - a[1])[0]![0]
}

/** Extracts a CSV (encoding detected, delimiter sniffed) as one Markdown table. */
export const extractCsv = async (data: Uint8Array, name: string): Promise<Extracted> => {
  const { text } = decodeText(data)
  let rows: Array<Array<string>>
  try {
    // rows of any length; empty lines skipped
    rows = dsvFormat(sniffDelimiter(text, name)).parseRows(text).filter((r) => r.length > 1 || r[0] !== "")
  } catch (e) {
    throw new ExtractFailure("corrupt", `the CSV cannot be parsed: ${(e as Error).message}`)
  }
  if (rows.length * Math.max(1, rows[0]?.length ?? 1) > limits.sheetCells) {
    throw new ExtractFailure("limit_exceeded", `the CSV has more than ${limits.sheetCells} cells`)
  }
  return { format: "csv", units: [{ page: 1, content: markdownTable(rows) }], warnings: [] }
}
