/**
 * DOCX: the body's WordprocessingML read in one pass over htmlparser2's tree (XML mode) into
 * an HTML tree that `markdown.ts` writes as Markdown: headings (the `heading 1`–`6` styles),
 * lists (nested by level, numbered as Word shows them, from the paragraph or its style),
 * tables (spanned cells), text boxes, hyperlinks and fields as their text, inserted text kept
 * and deleted text left out, image alt text, footnotes and endnotes as `[n]` with the notes
 * listed after the body; then the header and footer parts, each distinct paragraph once. The
 * container is opened with limits first and every part that declares a DTD is refused, so no
 * parser sees a zip bomb or an entity expansion.
 */
import { parseDocument } from "htmlparser2"
import { htmlToMarkdown, type HtmlNode } from "./markdown.js"
import { listNumbering, type ListNumber } from "./numbering.js"
import { isXmlPart, mediaDataUrls, naturalCompare, parsePart, properties, refuseDtd } from "./ooxml.js"
import type { Extracted, ExtractOptions } from "./types.js"
import { ExtractFailure } from "./types.js"
import { attrsOf, childrenOf, findAll, maxXmlDepth, paragraphs, tagOf, tooDeep, type XNode } from "./xml.js"
import { openZip, type Zip } from "./zip.js"

const wordTags = { p: "w:p", t: "w:t", tab: "w:tab", br: "w:br" } as const

const wordNamespaces = new Set([
  "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
  "http://purl.oclc.org/ooxml/wordprocessingml/main"
])

// =============================================================================
// The parts around the body: styles, numbering, notes
// =============================================================================

interface Style {
  readonly name: string
  readonly basedOn: string | undefined
  readonly numId: string | undefined
  readonly ilvl: number | undefined
}

const childVal = (node: XNode | undefined, tag: string): string | undefined => {
  const child = node ? childrenOf(node).find((c) => tagOf(c) === tag) : undefined
  return child ? attrsOf(child)["w:val"] : undefined
}

/** The paragraph styles of `word/styles.xml`: name, parent, list. */
const readStyles = (zip: Zip): Map<string, Style> => {
  const styles = new Map<string, Style>()
  for (const style of findAll(parsePart(zip, "word/styles.xml") ?? [], "w:style")) {
    const a = attrsOf(style)
    if (a["w:type"] !== "paragraph" || a["w:styleId"] === undefined) continue
    const pPr = childrenOf(style).find((c) => tagOf(c) === "w:pPr")
    const numPr = pPr ? childrenOf(pPr).find((c) => tagOf(c) === "w:numPr") : undefined
    const ilvl = childVal(numPr, "w:ilvl")
    styles.set(a["w:styleId"], {
      name: (childVal(style, "w:name") ?? "").toLowerCase(),
      basedOn: childVal(style, "w:basedOn"),
      numId: childVal(numPr, "w:numId"),
      ilvl: ilvl === undefined ? undefined : Number(ilvl)
    })
  }
  return styles
}

// =============================================================================
// The body
// =============================================================================

const el = (name: string, children: Array<HtmlNode>, attribs: Record<string, string> = {}): HtmlNode => ({
  type: "tag",
  name,
  attribs,
  children
})
const text = (data: string): HtmlNode => ({ type: "text", data })

/** Elements whose content is not document text (properties, deleted or moved-away text, field codes). */
const skipped = new Set([
  "pPr", "rPr", "sdtPr", "sdtEndPr", "tblPr", "tblGrid", "trPr", "tcPr", "sectPr", "del", "moveFrom", "delText",
  "instrText", "delInstrText", "footnoteRef", "endnoteRef", "commentReference", "rt", "fldData", "pPrChange",
  "rPrChange", "tblPrChange", "trPrChange", "tcPrChange", "sectPrChange", "numberingChange"
])

class Reader {
  /** The notes referenced so far, in order of reference: `footnote:3`, `endnote:1`. */
  readonly noteRefs: Array<string> = []
  private readonly w: string

  constructor(
    root: HtmlNode,
    private readonly styles: Map<string, Style>,
    private readonly number: (numId: string, ilvl: number) => ListNumber | undefined
  ) {
    // the prefix the document gives WordprocessingML (`w` nearly always; none for a default namespace)
    const rootEl = root.children?.find((c) => c.type === "tag")
    let prefix = "w"
    for (const [k, v] of Object.entries(rootEl?.attribs ?? {})) {
      if (wordNamespaces.has(v)) prefix = k === "xmlns" ? "" : k.replace(/^xmlns:/, "")
    }
    this.w = prefix
  }

  /** The WordprocessingML local name of an element, undefined for other namespaces. */
  private local(n: HtmlNode): string | undefined {
    const name = n.name
    if (name === undefined || n.type !== "tag") return undefined
    if (this.w === "") return name.includes(":") ? undefined : name
    return name.length > this.w.length && name.startsWith(this.w) && name[this.w.length] === ":" ? name.slice(this.w.length + 1) : undefined
  }

  private attr(n: HtmlNode, name: string): string | undefined {
    return n.attribs?.[this.w === "" ? name : `${this.w}:${name}`]
  }

  private child(n: HtmlNode, local: string): HtmlNode | undefined {
    return n.children?.find((c) => this.local(c) === local)
  }

  /** Block content (a body, a cell, a text box, a note): paragraphs grouped into lists, tables. */
  blocks(nodes: ReadonlyArray<HtmlNode>): Array<HtmlNode> {
    const out: Array<HtmlNode> = []
    // the open lists, outermost first, with the list paragraphs' level
    const open: Array<{ list: HtmlNode; ordered: boolean }> = []
    const visit = (nodes: ReadonlyArray<HtmlNode>) => {
      for (const n of nodes) {
        const local = this.local(n)
        if (local === "p") {
          const p = this.paragraph(n)
          if (p === undefined) continue
          if (p.list === undefined) {
            open.length = 0
            out.push(p.node)
            continue
          }
          const { ilvl, ordered, number } = p.list
          while (open.length > ilvl + 1 || (open.length === ilvl + 1 && open[ilvl]!.ordered !== ordered)) open.pop()
          while (open.length < ilvl + 1) {
            const list = el(ordered ? "ol" : "ul", [], ordered ? { start: String(number) } : {})
            const parent = open[open.length - 1]
            if (parent === undefined) out.push(list)
            else {
              const items = parent.list.children as Array<HtmlNode>
              if (items.length === 0) items.push(el("li", []))
              ;(items[items.length - 1]!.children as Array<HtmlNode>).push(list)
            }
            open.push({ list, ordered })
          }
          ;(open[ilvl]!.list.children as Array<HtmlNode>).push(el("li", p.node.children as Array<HtmlNode>))
        } else if (local === "tbl") {
          open.length = 0
          out.push(this.table(n))
        } else if (local === "sdt") {
          const content = this.child(n, "sdtContent")
          if (content) visit(content.children ?? [])
        } else if (local === "customXml" || local === "ins" || local === "moveTo" || local === "smartTag") {
          visit(n.children ?? [])
        } else if (local === "txbxContent") {
          visit(n.children ?? [])
        } else if (local === undefined && n.type === "tag") {
          // another vocabulary around Word content (mc:AlternateContent and the like)
          visit(this.alternative(n))
        }
      }
    }
    visit(nodes)
    return out
  }

  /** Of an `mc:AlternateContent`, the fallback (what readers without the extension show); else the element's children. */
  private alternative(n: HtmlNode): ReadonlyArray<HtmlNode> {
    if (!n.name?.endsWith(":AlternateContent")) return n.children ?? []
    const fallback = n.children?.find((c) => c.name?.endsWith(":Fallback"))
    const choice = n.children?.find((c) => c.name?.endsWith(":Choice"))
    return (fallback ?? choice)?.children ?? []
  }

  private paragraph(p: HtmlNode): { node: HtmlNode; list?: { ilvl: number; ordered: boolean; number: number } } | undefined {
    const pPr = this.child(p, "pPr")
    const styleId = pPr ? this.attr(this.child(pPr, "pStyle") ?? p, "val") : undefined
    const content: Array<HtmlNode> = []
    this.inline(p.children ?? [], content)
    if (!content.some(hasText)) return undefined
    const style = styleId === undefined ? undefined : this.styles.get(styleId)
    const heading = style ? /^heading ([1-6])$/.exec(style.name)?.[1] : styleId ? /^Heading([1-6])$/.exec(styleId)?.[1] : undefined
    if (heading !== undefined) return { node: el(`h${heading}`, content) }
    const numPr = pPr ? this.child(pPr, "numPr") : undefined
    let numId = numPr ? this.attr(this.child(numPr, "numId") ?? numPr, "val") : undefined
    let ilvl = numPr ? Number(this.attr(this.child(numPr, "ilvl") ?? numPr, "val") ?? 0) : 0
    if (numId === undefined) {
      // the list of the paragraph's style (or a style it is based on)
      const seen = new Set<string>()
      for (let s = style; s !== undefined && !seen.has(s.name); s = s.basedOn ? this.styles.get(s.basedOn) : undefined) {
        seen.add(s.name)
        if (s.numId !== undefined) {
          numId = s.numId
          ilvl = s.ilvl ?? 0
          break
        }
      }
    }
    const level = numId === undefined ? undefined : this.number(numId, Number.isFinite(ilvl) ? Math.min(8, Math.max(0, ilvl)) : 0)
    if (level === undefined) return { node: el("p", content) }
    return { node: el("p", content), list: { ilvl: Math.min(8, Math.max(0, ilvl)), ordered: level.ordered, number: level.number } }
  }

  /** Run-level content into `out`: text, breaks, note marks, image alt text, text boxes (as blocks). */
  private inline(nodes: ReadonlyArray<HtmlNode>, out: Array<HtmlNode>): void {
    for (const n of nodes) {
      if (n.type !== "tag") continue
      const local = this.local(n)
      if (local === undefined) {
        this.foreign(n, out)
        continue
      }
      if (skipped.has(local)) continue
      switch (local) {
        case "t":
          out.push(text(textOf(n)))
          break
        case "tab":
        case "ptab":
          out.push(text("\t"))
          break
        case "br": {
          const type = this.attr(n, "type")
          if (type === undefined || type === "textWrapping") out.push(el("br", []))
          break
        }
        case "cr":
          out.push(el("br", []))
          break
        case "noBreakHyphen":
          out.push(text("-"))
          break
        case "sym": {
          const code = Number.parseInt(this.attr(n, "char") ?? "", 16)
          if (Number.isFinite(code)) out.push(text(String.fromCharCode(code >= 0xf000 ? code - 0xf000 : code)))
          break
        }
        case "footnoteReference":
        case "endnoteReference": {
          const key = `${local === "footnoteReference" ? "footnote" : "endnote"}:${this.attr(n, "id") ?? ""}`
          this.noteRefs.push(key)
          out.push(text(`[${this.noteRefs.length}]`))
          break
        }
        case "txbxContent":
          out.push(el("div", this.blocks(n.children ?? [])))
          break
        case "p":
        case "tbl":
          // block content inside a run-level element (a text box's paragraphs)
          out.push(el("div", this.blocks([n])))
          break
        default:
          this.inline(n.children ?? [], out)
      }
    }
  }

  /** Elements of other vocabularies inside runs: drawings (alt text, text boxes), VML, alternate content. */
  private foreign(n: HtmlNode, out: Array<HtmlNode>): void {
    const name = n.name ?? ""
    if (name.endsWith(":AlternateContent")) return this.inline(this.alternative(n), out)
    if (name === "wp:inline" || name === "wp:anchor") {
      const docPr = n.children?.find((c) => c.name === "wp:docPr")
      const alt = docPr?.attribs?.descr || docPr?.attribs?.title
      if (alt && hasDescendant(n, "a:blip")) out.push(text(` ${alt} `))
    } else if (name === "v:imagedata") {
      const alt = n.attribs?.["o:title"]
      if (alt) out.push(text(` ${alt} `))
    }
    this.inline(n.children ?? [], out)
  }

  private table(tbl: HtmlNode): HtmlNode {
    const rows: Array<HtmlNode> = []
    const cells = (nodes: ReadonlyArray<HtmlNode>, row: Array<HtmlNode>) => {
      for (const c of nodes) {
        const local = this.local(c)
        if (local === "tc") {
          const tcPr = this.child(c, "tcPr")
          const span = Number(tcPr ? this.attr(this.child(tcPr, "gridSpan") ?? tcPr, "val") : undefined)
          row.push(el("td", this.blocks(c.children ?? []), span > 1 ? { colspan: String(span) } : {}))
        } else if (local === "sdt") cells(this.child(c, "sdtContent")?.children ?? [], row)
        else if (local === "customXml") cells(c.children ?? [], row)
      }
    }
    const visit = (nodes: ReadonlyArray<HtmlNode>) => {
      for (const c of nodes) {
        const local = this.local(c)
        if (local === "tr") {
          const row: Array<HtmlNode> = []
          cells(c.children ?? [], row)
          rows.push(el("tr", row))
        } else if (local === "sdt") visit(this.child(c, "sdtContent")?.children ?? [])
        else if (local === "customXml") visit(c.children ?? [])
      }
    }
    visit(tbl.children ?? [])
    return el("table", rows)
  }

  /** The notes referenced in the body (and in notes), in order, as an ordered list. */
  notes(parts: Record<"footnote" | "endnote", Map<string, HtmlNode>>): HtmlNode | undefined {
    const items: Array<HtmlNode> = []
    const written = new Set<string>()
    // a note may reference another (the list grows while it is written); each note is written once
    for (let i = 0; i < this.noteRefs.length; i++) {
      const key = this.noteRefs[i]!
      const [kind, id] = key.split(":") as ["footnote" | "endnote", string]
      const note = written.has(key) ? undefined : parts[kind].get(id)
      written.add(key)
      items.push(el("li", note ? this.blocks(note.children ?? []) : []))
    }
    return items.length > 0 ? el("ol", items) : undefined
  }

  /** The notes of a notes part (`w:footnote` / `w:endnote` by id, separators left out). */
  notesOf(root: HtmlNode | undefined, local: string): Map<string, HtmlNode> {
    const out = new Map<string, HtmlNode>()
    const top = root?.children?.find((c) => c.type === "tag")
    for (const n of top?.children ?? []) {
      if (this.local(n) !== local) continue
      const type = this.attr(n, "type")
      if (type === "separator" || type === "continuationSeparator" || type === "continuationNotice") continue
      out.set(this.attr(n, "id") ?? "", n)
    }
    return out
  }
}

const textOf = (n: HtmlNode): string => {
  let out = ""
  for (const c of n.children ?? []) if (c.type === "text") out += c.data ?? ""
  return out
}

const hasText = (n: HtmlNode): boolean =>
  n.type === "text" ? /\S/.test(n.data ?? "") : (n.children ?? []).some(hasText)

const hasDescendant = (n: HtmlNode, name: string): boolean =>
  (n.children ?? []).some((c) => c.name === name || hasDescendant(c, name))

/**
 * A part as htmlparser2's tree (XML mode: entities of XML only, no DTD: refused before). A part
 * whose elements nest deeper than {@link maxXmlDepth} fails as the other XML readers do
 * (`limit_exceeded`): the reader below recurses over the tree.
 */
const parseXmlTree = (xml: string | undefined, part: string): HtmlNode | undefined => {
  if (xml === undefined) return undefined
  const root = parseDocument(xml, { xmlMode: true }) as unknown as HtmlNode
  if (depthOf(root) > maxXmlDepth) throw tooDeep(part)
  return root
}

/** How deep the elements of a tree nest (the root's children are level 1), without recursion. */
const depthOf = (root: HtmlNode): number => {
  let deepest = 0
  const stack: Array<[HtmlNode, number]> = [[root, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    if (depth > deepest) deepest = depth
    for (const c of node.children ?? []) if (c.type === "tag") stack.push([c, depth + 1])
  }
  return deepest
}

/** The body of a DOCX as Markdown, its notes after it. */
const bodyMarkdown = (zip: Zip): string => {
  const root = parseXmlTree(zip.text("word/document.xml"), "word/document.xml")!
  const numbering = parsePart(zip, "word/numbering.xml")
  const reader = new Reader(root, readStyles(zip), numbering ? listNumbering(numbering) : () => undefined)
  const document = root.children?.find((c) => c.type === "tag")
  const body = document?.children?.find((c) => c.name?.endsWith("body") || c.name === "body")
  const blocks = reader.blocks(body?.children ?? [])
  if (reader.noteRefs.length > 0) {
    const notes = reader.notes({
      footnote: reader.notesOf(parseXmlTree(zip.text("word/footnotes.xml"), "word/footnotes.xml"), "footnote"),
      endnote: reader.notesOf(parseXmlTree(zip.text("word/endnotes.xml"), "word/endnotes.xml"), "endnote")
    })
    if (notes) blocks.push(notes)
  }
  return htmlToMarkdown({ type: "root", children: blocks })
}

/** Extracts a DOCX. */
export const extractDocx = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const zip = openZip(data, (n) => isXmlPart(n) || (options.imagesOnly && n.startsWith("word/media/")))
  if (!zip.text("word/document.xml")) throw new ExtractFailure("corrupt", "the DOCX has no word/document.xml")
  // every part we read is refused when it declares a DTD (no entity expansion)
  for (const name of zip.names.filter((n) => n.startsWith("word/") && n.endsWith(".xml"))) refuseDtd(zip, name)
  const props = properties(zip)
  const warnings: Array<string> = []
  if (options.imagesOnly) {
    const images = mediaDataUrls(zip, "word/media/")
    if (images.length === 0) warnings.push("images_only: the document has no embedded images")
    return {
      format: "docx",
      units: [{ page: 1, content: images.join("\n") }],
      pageCount: props.pages,
      title: props.title,
      description: props.description,
      images,
      warnings
    }
  }
  const body = bodyMarkdown(zip)
  // headers and footers: each distinct paragraph once, in part order
  const seen = new Set<string>()
  const headerLines: Array<string> = []
  const parts = zip.names.filter((n) => /^word\/(header|footer)\d*\.xml$/.test(n)).sort(naturalCompare)
  for (const part of parts) {
    for (const p of paragraphs(parsePart(zip, part) ?? [], wordTags)) {
      const line = p.replace(/\s+/g, " ").trim()
      if (line && !seen.has(line)) {
        seen.add(line)
        headerLines.push(line)
      }
    }
  }
  return {
    format: "docx",
    units: [{ page: 1, content: body }],
    pageCount: props.pages,
    trailer: headerLines.length > 0 ? `Headers and footers:\n\n${headerLines.join("\n\n")}` : undefined,
    title: props.title,
    description: props.description,
    warnings
  }
}
