/**
 * A sheet's cells as a unit of text, shared by the spreadsheet readers (SheetJS for XLSX and
 * XLS, `ods.ts` for OpenDocument): empty rows and unused columns dropped, the rest as a
 * Markdown table under the sheet's name, cell comments listed after it.
 */
import { markdownTable } from "./markdown.js"
import type { Unit } from "./types.js"

/** Drops empty rows and the columns no row uses. Loops only: a sheet may have a million rows. */
export const trimRows = (rows: ReadonlyArray<ReadonlyArray<string>>): Array<Array<string>> => {
  const kept = rows.filter((r) => r.some((c) => c !== undefined && c.trim() !== ""))
  let width = 0
  for (const r of kept) if (r.length > width) width = r.length
  const used: Array<number> = []
  for (let i = 0; i < width; i++) if (kept.some((r) => (r[i] ?? "").trim() !== "")) used.push(i)
  return kept.map((r) => used.map((i) => r[i] ?? ""))
}

/** The unit of one sheet: `## name`, its table, then `Comments:`. */
export const sheetContent = (
  name: string,
  page: number,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  comments: ReadonlyArray<string>
): Unit => {
  const table = markdownTable(trimRows(rows))
  const parts = [`## ${name}`]
  if (table) parts.push(table)
  if (comments.length > 0) parts.push(`Comments:\n${comments.join("\n")}`)
  return { page, name, content: parts.join("\n\n") }
}

/** A cell's address in A1 style (0-based row and column). */
export const cellAddress = (row: number, col: number): string => {
  let letters = ""
  for (let c = col + 1; c > 0; c = Math.floor((c - 1) / 26)) letters = String.fromCharCode(65 + ((c - 1) % 26)) + letters
  return `${letters}${row + 1}`
}
