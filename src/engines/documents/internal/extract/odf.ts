/**
 * OpenDocument (ODF 1.0–1.3): text (`.odt`, `.ott`), presentations (`.odp`, `.otp`) and the flat
 * XML forms (`.fodt`, `.fodp`) read here from `content.xml` (or the flat document's
 * `office:body`); spreadsheets (`.ods`, `.fods`) go to SheetJS after the same container checks
 * (see `sheet.ts`).
 *
 * Text documents become Markdown: headings (`text:h` by outline level), paragraphs, lists nested
 * by level, tables as Markdown tables (spanned cells written once, covered cells empty), text
 * boxes and sections in place, footnotes and endnotes as `[n]` listed after the body, image
 * titles and descriptions as their text; tracked deletions and annotations (comments) are left
 * out of the body, comments listed after it. Presentations: one unit per slide (`draw:page`),
 * the title frame as a `##` heading, the other frames' text and tables, then `### Notes`.
 * Title, description and properties from `meta.xml` (or `office:meta`).
 *
 * Hostile input: the container is opened with the zip limits (entry count, sizes, ratio) and a
 * part or flat document that declares a DTD is refused (ODF needs none; refusing it rules out
 * entity expansion); the XML parser bounds entities besides.
 */
import { markdownTable } from "./markdown.js"
import { decodeText, tidy, xmlDeclaredEncoding } from "./text.js"
import { ExtractFailure, type Extracted, type Unit } from "./types.js"
import { attrsOf, childrenOf, find, parseOrdered, tagOf, textOf, type XNode } from "./xml.js"
import { openZip } from "./zip.js"

const refuseDtd = (xml: string, name: string) => {
  if (/<!DOCTYPE/i.test(xml.slice(0, 4096))) {
    throw new ExtractFailure("corrupt", `${name} declares a DTD, which OpenDocument does not need`)
  }
}

/** The parts of an ODF document: its body and meta, from a package or a flat XML file. */
export interface OdfParts {
  readonly body: ReadonlyArray<XNode>
  readonly meta: ReadonlyArray<XNode> | undefined
}

/** Whether the bytes are a zip (an ODF package) rather than a flat XML document. */
const isZip = (data: Uint8Array) => data[0] === 0x50 && data[1] === 0x4b

/**
 * Opens an ODF document (package or flat) with the container limits and the DTD refusal; the
 * parts a spreadsheet needs are only checked here (SheetJS reads them).
 */
export const openOdf = (data: Uint8Array, parseBody = true): OdfParts => {
  if (isZip(data)) {
    const zip = openZip(data, (n) => n === "content.xml" || n === "meta.xml" || n === "styles.xml" || n === "mimetype")
    const content = zip.text("content.xml")
    if (content === undefined) throw new ExtractFailure("corrupt", "the OpenDocument package has no content.xml")
    refuseDtd(content, "content.xml")
    const meta = zip.text("meta.xml")
    if (meta !== undefined) refuseDtd(meta, "meta.xml")
    const styles = zip.text("styles.xml")
    if (styles !== undefined) refuseDtd(styles, "styles.xml")
    return {
      body: parseBody ? parseOrdered(content, "content.xml") : [],
      meta: meta === undefined ? undefined : parseOrdered(meta, "meta.xml")
    }
  }
  const { text } = decodeText(data, xmlDeclaredEncoding(data))
  refuseDtd(text, "the flat OpenDocument file")
  const nodes = parseOrdered(text, "the flat OpenDocument file")
  if (!find(nodes, "office:document")) throw new ExtractFailure("corrupt", "the file is no OpenDocument document (no office:document)")
  return { body: nodes, meta: nodes }
}

// =============================================================================
// Inline text and blocks
// =============================================================================

interface Notes {
  readonly list: Array<string>
  readonly comments: Array<string>
}

/** Tags whose content is never body text. */
const skipped = new Set([
  "text:tracked-changes",
  "office:annotation-end",
  "text:note-citation",
  "draw:image",
  "svg:title",
  "svg:desc",
  "text:sequence-decls",
  "text:variable-decls",
  "text:user-field-decls",
  "office:forms",
  "presentation:notes"
])

/** A paragraph's inline text: spans, spaces (`text:s`), tabs, line breaks, links, fields, notes as `[n]`. */
const inline = (nodes: ReadonlyArray<XNode>, notes: Notes, blocksOut?: Array<string>): string => {
  let out = ""
  for (const n of nodes) {
    const tag = tagOf(n)
    if (tag === undefined) continue
    if (tag === "#text") {
      out += String(n["#text"] ?? "").replace(/\s+/g, " ")
      continue
    }
    if (skipped.has(tag)) continue
    switch (tag) {
      case "text:s":
        out += " ".repeat(Math.min(100, Math.max(1, Number(attrsOf(n)["text:c"] ?? "1") || 1)))
        continue
      case "text:tab":
        out += "\t"
        continue
      case "text:line-break":
        out += "\n"
        continue
      case "text:note": {
        const body = find(childrenOf(n), "text:note-body")
        const citation = find(childrenOf(n), "text:note-citation")
        const label = (citation ? textOf([citation]).trim() : "") || String(notes.list.length + 1)
        const text = body ? blockText(childrenOf(body), notes).replace(/\s+/g, " ").trim() : ""
        out += `[${label}]`
        if (text) notes.list.push(`[${label}] ${text}`)
        continue
      }
      case "office:annotation": {
        const creator = find(childrenOf(n), "dc:creator")
        const who = creator ? textOf([creator]).trim() : ""
        const paras = childrenOf(n).filter((c) => tagOf(c) === "text:p" || tagOf(c) === "text:list")
        const text = blockText(paras, notes).replace(/\s+/g, " ").trim()
        if (text) notes.comments.push(`- ${who ? `${who}: ` : ""}${text}`)
        continue
      }
      case "draw:frame":
      case "draw:a":
      case "draw:custom-shape":
      case "draw:g":
      case "draw:rect":
      case "draw:text-box": {
        // a frame inside a paragraph: its text box is a block of its own; an image gives its title
        const kids = childrenOf(n)
        const title = kids.find((k) => tagOf(k) === "svg:title" || tagOf(k) === "svg:desc")
        const inner = blockText(tag === "draw:text-box" ? kids : kids.filter((k) => tagOf(k) !== "svg:title" && tagOf(k) !== "svg:desc"), notes)
        if (blocksOut && inner.trim()) blocksOut.push(inner)
        else if (inner.trim()) out += ` ${inner.replace(/\s+/g, " ").trim()} `
        if (title) {
          const alt = textOf([title]).replace(/\s+/g, " ").trim()
          if (alt) out += ` ${alt} `
        }
        continue
      }
      default:
        out += inline(childrenOf(n), notes, blocksOut)
    }
  }
  return out
}

/** A paragraph as one line of text (a cell, a heading): breaks and runs of spaces collapsed. */
const lineOf = (nodes: ReadonlyArray<XNode>, notes: Notes): string => inline(nodes, notes).replace(/\s+/g, " ").trim()

/** The Markdown of a sequence of block nodes (paragraphs, headings, lists, tables, sections). */
const blockText = (nodes: ReadonlyArray<XNode>, notes: Notes, depth = 0): string => {
  const out: Array<string> = []
  writeBlocks(nodes, notes, out, depth)
  return out.join("\n\n")
}

const writeBlocks = (nodes: ReadonlyArray<XNode>, notes: Notes, out: Array<string>, depth: number): void => {
  for (const n of nodes) {
    const tag = tagOf(n)
    if (tag === undefined || tag === "#text" || skipped.has(tag)) continue
    switch (tag) {
      case "text:h": {
        const level = Math.min(6, Math.max(1, Number(attrsOf(n)["text:outline-level"] ?? "1") || 1))
        const extra: Array<string> = []
        const text = inline(childrenOf(n), notes, extra).replace(/\s+/g, " ").trim()
        if (text) out.push(`${"#".repeat(level)} ${text}`)
        out.push(...extra)
        break
      }
      case "text:p": {
        const extra: Array<string> = []
        const text = tidy(inline(childrenOf(n), notes, extra).replace(/ {2,}/g, " ").replace(/ ?\n ?/g, "\n"))
        if (text) out.push(text)
        out.push(...extra)
        break
      }
      case "text:list": {
        const lines = listLines(n, notes, 0)
        if (lines.length > 0) out.push(lines.join("\n"))
        break
      }
      case "table:table":
        out.push(tableMarkdown(n, notes))
        break
      default:
        // sections, indexes (a table of contents' body), frames at block level, groups
        if (depth < 64) writeBlocks(childrenOf(n), notes, out, depth + 1)
    }
  }
}

/** A list's lines, items as `- `, nested lists indented two spaces per level. */
const listLines = (list: XNode, notes: Notes, level: number): Array<string> => {
  const lines: Array<string> = []
  const indent = "  ".repeat(Math.min(level, 16))
  for (const item of childrenOf(list)) {
    const t = tagOf(item)
    if (t !== "text:list-item" && t !== "text:list-header") continue
    let first = true
    for (const c of childrenOf(item)) {
      const ct = tagOf(c)
      if (ct === "text:list") {
        lines.push(...listLines(c, notes, level + 1))
        continue
      }
      const text = ct === "text:p" || ct === "text:h" ? lineOf(childrenOf(c), notes) : blockText([c], notes).replace(/\n+/g, " ")
      if (!text) continue
      lines.push(first && t === "text:list-item" ? `${indent}- ${text}` : `${indent}  ${text}`)
      first = false
    }
  }
  return lines
}

/** The rows of a table (header rows, row groups), repeated cells bounded, as a Markdown table. */
const tableMarkdown = (table: XNode, notes: Notes): string => {
  const rows: Array<Array<string>> = []
  let cells = 0
  const visit = (nodes: ReadonlyArray<XNode>) => {
    for (const n of nodes) {
      const tag = tagOf(n)
      if (tag === "table:table-row") {
        const row: Array<string> = []
        for (const c of childrenOf(n)) {
          const ct = tagOf(c)
          if (ct !== "table:table-cell" && ct !== "table:covered-table-cell") continue
          const a = attrsOf(c)
          const repeat = Math.min(64, Math.max(1, Number(a["table:number-columns-repeated"] ?? "1") || 1))
          const text = ct === "table:covered-table-cell" ? "" : blockText(childrenOf(c), notes).replace(/\s+/g, " ").trim()
          for (let i = 0; i < repeat; i++) row.push(i === 0 || text ? text : "")
        }
        const repeatRows = Math.min(row.some((c) => c) ? 64 : 1, Math.max(1, Number(attrsOf(n)["table:number-rows-repeated"] ?? "1") || 1))
        for (let i = 0; i < repeatRows && cells < 2_000_000; i++) {
          rows.push(row)
          cells += row.length
        }
      } else if (
        tag === "table:table-header-rows" || tag === "table:table-rows" || tag === "table:table-row-group"
      ) visit(childrenOf(n))
    }
  }
  visit(childrenOf(table))
  // trailing empty columns and rows (a spreadsheet-like table repeats empty cells)
  const kept = rows.filter((r) => r.some((c) => c !== ""))
  const width = Math.max(0, ...kept.map((r) => {
    let w = r.length
    while (w > 0 && r[w - 1] === "") w--
    return w
  }))
  return markdownTable(kept.map((r) => r.slice(0, width)))
}

// =============================================================================
// Meta
// =============================================================================

const metaOf = (meta: ReadonlyArray<XNode> | undefined): {
  title?: string
  description?: string
  pages?: number
  properties: Record<string, string>
} => {
  const properties: Record<string, string> = {}
  if (!meta) return { properties }
  const office = find(meta, "office:meta")
  if (!office) return { properties }
  const text = (tag: string) => {
    const n = find([office], tag)
    const t = n ? textOf([n]).replace(/\s+/g, " ").trim() : ""
    return t || undefined
  }
  const title = text("dc:title")
  const description = text("dc:description") ?? text("dc:subject")
  for (const [key, tag] of [["creator", "dc:creator"], ["date", "dc:date"], ["language", "dc:language"], ["subject", "dc:subject"], ["generator", "meta:generator"]] as const) {
    const t = text(tag)
    if (t) properties[key] = t
  }
  const keywords = childrenOf(office).filter((n) => tagOf(n) === "meta:keyword").map((n) => textOf([n]).trim()).filter(Boolean)
  if (keywords.length > 0) properties.keywords = keywords.join(", ")
  const stats = find([office], "meta:document-statistic")
  const pages = Number(stats ? attrsOf(stats)["meta:page-count"] ?? NaN : NaN)
  return {
    ...(title ? { title } : {}),
    ...(description ? { description } : {}),
    ...(Number.isFinite(pages) && pages > 0 ? { pages } : {}),
    properties
  }
}

// =============================================================================
// Extractors
// =============================================================================

const notesText = (notes: Notes): string => {
  const parts: Array<string> = []
  if (notes.list.length > 0) parts.push(`Notes:\n\n${notes.list.join("\n")}`)
  if (notes.comments.length > 0) parts.push(`Comments:\n\n${notes.comments.join("\n")}`)
  return parts.join("\n\n")
}

/** Extracts an OpenDocument text (`.odt`, `.ott`, `.fodt`). */
export const extractOdt = async (data: Uint8Array): Promise<Extracted> => {
  const { body, meta } = openOdf(data)
  const text = find(body, "office:text")
  if (!text) throw new ExtractFailure("corrupt", "the OpenDocument text has no office:text body")
  const notes: Notes = { list: [], comments: [] }
  const content = tidy([blockText(childrenOf(text), notes), notesText(notes)].filter(Boolean).join("\n\n"))
  const m = metaOf(meta)
  return {
    format: "odt",
    units: [{ page: 1, content }],
    ...(m.pages ? { pageCount: m.pages } : {}),
    title: m.title,
    description: m.description,
    ...(Object.keys(m.properties).length > 0 ? { metadata: m.properties } : {}),
    warnings: []
  }
}

/** Extracts an OpenDocument presentation (`.odp`, `.otp`, `.fodp`): one unit per slide. */
export const extractOdp = async (data: Uint8Array): Promise<Extracted> => {
  const { body, meta } = openOdf(data)
  const presentation = find(body, "office:presentation")
  if (!presentation) throw new ExtractFailure("corrupt", "the OpenDocument presentation has no office:presentation body")
  const units: Array<Unit> = []
  const pages = childrenOf(presentation).filter((n) => tagOf(n) === "draw:page")
  pages.forEach((page, i) => {
    const notes: Notes = { list: [], comments: [] }
    let title = ""
    const parts: Array<string> = []
    for (const frame of childrenOf(page)) {
      const tag = tagOf(frame)
      if (tag === undefined || tag === "presentation:notes" || tag === "#text") continue
      const cls = attrsOf(frame)["presentation:class"]
      if (cls === "page-number" || cls === "footer" || cls === "date-time" || cls === "header") continue
      const text = blockText(childrenOf(frame), notes)
      if (!text.trim()) continue
      if (!title && cls === "title") {
        title = text.replace(/\s+/g, " ").trim()
        continue
      }
      parts.push(text)
    }
    const speaker = childrenOf(page).find((n) => tagOf(n) === "presentation:notes")
    if (speaker) {
      // the notes page holds a thumbnail of the slide and the notes' text box
      const text = blockText(childrenOf(speaker).filter((f) => attrsOf(f)["presentation:class"] !== "page-thumbnail" && tagOf(f) !== "draw:page-thumbnail"), notes)
      if (text.trim()) parts.push(`### Notes\n\n${text}`)
    }
    const extra = notesText(notes)
    if (extra) parts.push(extra)
    const content = tidy([title ? `## ${title}` : "", ...parts].filter(Boolean).join("\n\n"))
    const name = title || attrsOf(page)["draw:name"]
    units.push({ page: i + 1, ...(name ? { name } : {}), content })
  })
  const m = metaOf(meta)
  return {
    format: "odp",
    units: units.length > 0 ? units : [{ page: 1, content: "" }],
    title: m.title,
    description: m.description,
    ...(Object.keys(m.properties).length > 0 ? { metadata: m.properties } : {}),
    warnings: []
  }
}

/**
 * The title, description and properties of an ODF spreadsheet (for `sheet.ts`, whose SheetJS
 * reads the cells), after the container checks; the body is not parsed here.
 */
export const checkOds = (data: Uint8Array): ReturnType<typeof metaOf> => metaOf(openOdf(data, isZip(data)).meta)
