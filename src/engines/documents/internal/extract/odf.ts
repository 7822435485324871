/**
 * OpenDocument (ODF 1.0–1.3): text (`.odt`, `.ott`), presentations (`.odp`, `.otp`) and the flat
 * XML forms (`.fodt`, `.fodp`) read here from `content.xml` (or the flat document's
 * `office:body`); spreadsheets (`.ods`, `.fods`) in `ods.ts` from the parts opened here.
 * Elements and attributes are matched by namespace URI, not by the prefix a document happens to
 * bind: the parts' names are made canonical (`text:`, `draw:`, …) after parsing.
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
export const isZip = (data: Uint8Array): boolean => data[0] === 0x50 && data[1] === 0x4b

/** The prefixes this reader matches, by the namespace URI they stand for (ODF 1.0–1.3). */
const odfNamespaces: Readonly<Record<string, string>> = {
  "urn:oasis:names:tc:opendocument:xmlns:office:1.0": "office",
  "urn:oasis:names:tc:opendocument:xmlns:style:1.0": "style",
  "urn:oasis:names:tc:opendocument:xmlns:text:1.0": "text",
  "urn:oasis:names:tc:opendocument:xmlns:table:1.0": "table",
  "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0": "draw",
  "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0": "presentation",
  "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0": "svg",
  "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0": "fo",
  "urn:oasis:names:tc:opendocument:xmlns:meta:1.0": "meta",
  "urn:oasis:names:tc:opendocument:xmlns:datastyle:1.0": "number",
  "urn:oasis:names:tc:opendocument:xmlns:chart:1.0": "chart",
  "urn:oasis:names:tc:opendocument:xmlns:form:1.0": "form",
  "urn:oasis:names:tc:opendocument:xmlns:script:1.0": "script",
  "urn:oasis:names:tc:opendocument:xmlns:animation:1.0": "anim",
  "urn:oasis:names:tc:opendocument:xmlns:smil-compatible:1.0": "smil",
  "http://purl.org/dc/elements/1.1/": "dc",
  "http://www.w3.org/1999/xlink": "xlink"
}
const canonicalPrefixes = new Set(Object.values(odfNamespaces))

/**
 * The name with the prefix this reader matches for its namespace: a document may bind any
 * prefix (`<p:page xmlns:p="…:drawing:1.0">`) or a default namespace. A canonical prefix bound to
 * another namespace is renamed out of the way; names in unknown namespaces are left as they are.
 */
const canonicalName = (name: string, scope: ReadonlyMap<string, string>, element: boolean): string => {
  const colon = name.indexOf(":")
  if (colon < 0 && !element) return name // an attribute without a prefix has no namespace
  const prefix = colon < 0 ? "" : name.slice(0, colon)
  const uri = scope.get(prefix)
  if (uri === undefined) return name
  const canonical = odfNamespaces[uri]
  const local = name.slice(colon + 1)
  if (canonical !== undefined) return `${canonical}:${local}`
  return canonicalPrefixes.has(prefix) ? `ns-${prefix}:${local}` : name
}

/** The namespace bindings a node declares (`xmlns:p`, `xmlns`), added to its parent's. */
const scopeOf = (attrs: Record<string, string>, parent: ReadonlyMap<string, string>): ReadonlyMap<string, string> => {
  let scope = parent
  for (const [k, v] of Object.entries(attrs)) {
    if (k !== "xmlns" && !k.startsWith("xmlns:")) continue
    if (scope === parent) scope = new Map(parent)
    ;(scope as Map<string, string>).set(k === "xmlns" ? "" : k.slice(6), v)
  }
  return scope
}

/**
 * Renames elements and attributes, in place, to the prefixes this reader matches, by their
 * namespace URIs (iterative: any depth).
 */
export const canonicalNames = (nodes: Array<XNode>): Array<XNode> => {
  const stack: Array<{ readonly node: XNode; readonly scope: ReadonlyMap<string, string> }> = nodes.map((node) => ({ node, scope: new Map() }))
  while (stack.length > 0) {
    const { node, scope: parent } = stack.pop()!
    const tag = tagOf(node)
    if (tag === undefined || tag.startsWith("#") || tag.startsWith("?")) continue
    const attrs = attrsOf(node)
    const scope = scopeOf(attrs, parent)
    if (node[":@"] !== undefined) {
      const renamed: Record<string, string> = {}
      for (const [k, v] of Object.entries(attrs)) renamed[k === "xmlns" || k.startsWith("xmlns:") ? k : canonicalName(k, scope, false)] = v
      node[":@"] = renamed
    }
    const name = canonicalName(tag, scope, true)
    const kids = node[tag]
    if (name !== tag) {
      delete node[tag]
      node[name] = kids
    }
    if (Array.isArray(kids)) for (const k of kids as Array<XNode>) stack.push({ node: k, scope })
  }
  return nodes
}

/** Parses an ODF part with its names made canonical. */
const parseOdf = (xml: string, what: string): Array<XNode> => canonicalNames(parseOrdered(xml, what))

/**
 * Opens an ODF document (package or flat) with the container limits and the DTD refusal;
 * without `parseBody`, a package's `content.xml` is only checked.
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
      body: parseBody ? parseOdf(content, "content.xml") : [],
      meta: meta === undefined ? undefined : parseOdf(meta, "meta.xml")
    }
  }
  const { text } = decodeText(data, xmlDeclaredEncoding(data))
  refuseDtd(text, "the flat OpenDocument file")
  const nodes = parseOdf(text, "the flat OpenDocument file")
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

/** A cell's paragraphs as one line of text (notes and comments in it left out). */
export const cellText = (nodes: ReadonlyArray<XNode>): string =>
  blockText(nodes, { list: [], comments: [] }).replace(/\s+/g, " ").trim()

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
        for (const block of extra) out.push(block)
        break
      }
      case "text:p": {
        const extra: Array<string> = []
        const text = tidy(inline(childrenOf(n), notes, extra).replace(/ {2,}/g, " ").replace(/ ?\n ?/g, "\n"))
        if (text) out.push(text)
        for (const block of extra) out.push(block)
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
        for (const line of listLines(c, notes, level + 1)) lines.push(line)
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
  // a loop, not Math.max(...rows): a table may have more rows than a call has arguments
  let width = 0
  for (const r of kept) {
    let w = r.length
    while (w > width && r[w - 1] === "") w--
    if (w > width) width = w
  }
  return markdownTable(kept.map((r) => r.slice(0, width)))
}

// =============================================================================
// Meta
// =============================================================================

/** The title, description, page count and properties of `office:meta`. */
export const metaOf = (meta: ReadonlyArray<XNode> | undefined): {
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
