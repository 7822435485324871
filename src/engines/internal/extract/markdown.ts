/**
 * HTML to Markdown for retrieval, on htmlparser2's light document tree (no browser DOM): the
 * structure that carries meaning (headings, lists, tables, code blocks, quotes) is Markdown,
 * and running text is the document's own text: no backslash escapes (`[1]`, `->` stay as
 * written) and no emphasis markers (bold, italic, strike-through become their plain text), so
 * an exact phrase a user searches for is in the text. Tables always become Markdown tables
 * (first row as the header, a spanned cell's text once with empty cells after it, pipes
 * escaped; a caption before the table), except layout tables that nest tables, whose cells
 * become paragraphs. What a reader never sees is dropped: scripts, styles, templates, embedded
 * objects, the `<head>`, and elements hidden by `hidden`, `aria-hidden="true"` or an inline
 * `display: none` / `visibility: hidden`. Images keep only their alt text, links only their
 * text. Whitespace is collapsed as a browser does, except inside `<pre>`.
 *
 * The renderer walks the tree once, writing lines with the prefixes of the list items and
 * quotes around them, so its cost is linear in the document.
 */
import { parseDocument } from "htmlparser2"
import { tidy } from "./text.js"

export { tidy }

/** What {@link cell} changes: whitespace other than single inner spaces, and pipes. */
const unclean = /[|\s]/

/** Escapes a table cell for a Markdown table row. */
export const cell = (text: string): string => {
  // most cells are plain words with single spaces: checked word by word, nothing to replace
  if (!unclean.test(text.replaceAll(" ", "")) && !text.startsWith(" ") && !text.endsWith(" ") && !text.includes("  ")) {
    return text
  }
  return text.replace(/\s+/g, " ").trim().replace(/\|/g, "\\|")
}

/** Renders rows as a Markdown table; the first row is the header. Empty input gives "". */
export const markdownTable = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  let width = 0
  for (const r of rows) if (r.length > width) width = r.length
  if (rows.length === 0 || width === 0) return ""
  const lines: Array<string> = []
  for (const r of rows) {
    let line = "|"
    for (let i = 0; i < width; i++) line += " " + cell(r[i] ?? "") + " |"
    lines.push(line)
    if (lines.length === 1) lines.push("|" + " --- |".repeat(width))
  }
  return lines.join("\n")
}

// =============================================================================
// The tree
// =============================================================================

/** A node of htmlparser2's tree (domhandler): the members read here. */
export interface HtmlNode {
  /** `text`, `tag`, `script`, `style`, `comment`, `directive`, `cdata` or `root`. */
  readonly type: string
  /** The element's name, lower case. */
  readonly name?: string
  /** A text node's text. */
  readonly data?: string
  /** The element's attributes, names lower case. */
  readonly attribs?: Record<string, string>
  readonly children?: ReadonlyArray<HtmlNode>
}

/** Parses HTML of any shape (a page, a fragment, an e-mail body) into a tree; entities decoded. */
export const parseHtml = (html: string): HtmlNode => parseDocument(html) as unknown as HtmlNode

const isElement = (n: HtmlNode): boolean => n.type === "tag" || n.type === "script" || n.type === "style"

/** Elements whose content a reader never sees. */
const unseen = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "iframe",
  "object",
  "embed",
  "canvas",
  "head",
  "title",
  "svg",
  "math"
])

const hiddenStyle = /display: ?none|visibility: ?hidden/i

/** Whether an element and what it holds are hidden from a reader. */
const isHidden = (n: HtmlNode): boolean => {
  if (!isElement(n)) return n.type === "comment" || n.type === "directive"
  if (unseen.has(n.name!)) return true
  const a = n.attribs
  if (a === undefined) return false
  return a.hidden !== undefined || a["aria-hidden"] === "true" || (a.style !== undefined && hiddenStyle.test(a.style))
}

/** Elements that start a block of their own (a browser's block-level elements). */
const blocks = new Set([
  "address", "article", "aside", "audio", "blockquote", "body", "canvas", "caption", "center", "dd", "details",
  "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frameset", "h1", "h2",
  "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html", "isindex", "legend", "li", "main", "menu", "nav",
  "noframes", "ol", "output", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
  "ul"
])

/** The first descendant element named `name` (document order), if any. */
export const findElement = (node: HtmlNode, name: string): HtmlNode | undefined => {
  for (const c of node.children ?? []) {
    if (isElement(c) && c.name === name) return c
    const found = findElement(c, name)
    if (found) return found
  }
  return undefined
}

/** Every descendant element matching `test`, in document order. */
export const findElements = (node: HtmlNode, test: (e: HtmlNode) => boolean, out: Array<HtmlNode> = []): Array<HtmlNode> => {
  for (const c of node.children ?? []) {
    if (isElement(c) && test(c)) out.push(c)
    findElements(c, test, out)
  }
  return out
}

/** The text of every text node under `node` (hidden ones too), as `textContent` gives it. */
export const textContent = (node: HtmlNode): string => {
  if (node.type === "text" || node.type === "cdata") return node.data ?? ""
  let out = ""
  for (const c of node.children ?? []) out += textContent(c)
  return out
}

/**
 * The visible text under `node` on one line: whitespace collapsed, a space at every block
 * boundary and line break, images as their alt text (table cells, headings).
 */
const lineText = (node: HtmlNode): string => {
  let out = ""
  const visit = (n: HtmlNode) => {
    if (n.type === "text") {
      out += n.data ?? ""
      return
    }
    if (isHidden(n) || !isElement(n) && n.type !== "root") return
    if (n.name === "img") {
      out += n.attribs?.alt ?? ""
      return
    }
    const block = blocks.has(n.name!) || n.name === "br"
    if (block) out += " "
    for (const c of n.children ?? []) visit(c)
    if (block) out += " "
  }
  visit(node)
  return out.replace(/\s+/g, " ").trim()
}

// =============================================================================
// The writer
// =============================================================================

interface Prefix {
  readonly first: string
  readonly rest: string
  used: boolean
}

interface List {
  readonly ordered: boolean
  next: number
  items: number
}

const spaces = /[ \t\r\n\f]+/g

class Writer {
  private readonly lines: Array<string> = []
  /** Inline text of the block being written; `\n` only where a `<br>` was. */
  private inline = ""
  private readonly prefixes: Array<Prefix> = []
  private readonly lists: Array<List> = []
  /** Line breaks wanted before the next line: 1 a new line, 2 a blank line between. */
  private sep = 0

  /** Asks for a blank line before what comes next (not before a list item's first line). */
  private blank() {
    const top = this.prefixes[this.prefixes.length - 1]
    if (top !== undefined && !top.used) return
    this.sep = 2
  }

  private prefix(): string {
    let out = ""
    for (const p of this.prefixes) {
      out += p.used ? p.rest : p.first
      p.used = true
    }
    return out
  }

  private line(text: string) {
    if (this.lines.length > 0 && this.sep === 2) {
      // the blank line carries the prefixes of what it sits inside (a quote's `>`), not a new one's
      this.lines.push(this.prefixes.filter((p) => p.used).map((p) => p.rest).join("").trimEnd())
    }
    this.lines.push(this.prefix() + text)
    this.sep = 1
  }

  /** Writes the inline text gathered so far as the lines of one block. */
  private flush() {
    if (this.inline === "") return
    const pieces = this.inline.split("\n")
    this.inline = ""
    const lines = pieces.map((p) => p.replace(/ {2,}/g, " ").replace(/^ | $/g, ""))
    let from = 0
    let to = lines.length
    while (from < to && lines[from]!.trim() === "") from++
    while (to > from && lines[to - 1]!.trim() === "") to--
    for (let i = from; i < to; i++) this.line(lines[i]!)
  }

  /** A block of lines (a heading, a table, a code block) with blank lines around it. */
  private lineBlock(lines: ReadonlyArray<string>) {
    this.flush()
    if (lines.length === 0) return
    this.blank()
    for (const l of lines) this.line(l)
    this.blank()
  }

  /** The Markdown written. */
  finish(): string {
    this.flush()
    return tidy(this.lines.join("\n"))
  }

  private children(n: HtmlNode) {
    for (const c of n.children ?? []) this.node(c)
  }

  node(n: HtmlNode): void {
    if (n.type === "text") {
      this.inline += (n.data ?? "").replace(spaces, " ")
      return
    }
    if (n.type === "root") return this.children(n)
    if (isHidden(n) || !isElement(n)) return
    const name = n.name!
    switch (name) {
      case "br":
        this.inline += "\n"
        return
      case "img":
        this.inline += n.attribs?.alt ?? ""
        return
      case "h1":
      case "h2":
      case "h3":
      case "h4":
      case "h5":
      case "h6": {
        const text = lineText(n)
        return this.lineBlock(text ? [`${"#".repeat(Number(name[1]))} ${text}`] : [])
      }
      case "hr":
        return this.lineBlock(["---"])
      case "pre":
        return this.pre(n)
      case "code":
        // inline code (a <pre> holds a code block)
        this.inline += "`" + textContent(n).replace(spaces, " ") + "`"
        return
      case "table":
        return this.table(n)
      case "ul":
      case "ol":
        return this.list(n, name === "ol")
      case "li":
        return this.item(n)
      case "blockquote":
        this.flush()
        this.blank()
        this.prefixes.push({ first: "> ", rest: "> ", used: false })
        this.children(n)
        this.flush()
        this.prefixes.pop()
        this.blank()
        return
    }
    if (blocks.has(name)) return this.block(n)
    this.children(n)
  }

  /** The children as a block of their own, blank lines around. */
  private block(n: HtmlNode) {
    this.flush()
    this.blank()
    this.children(n)
    this.flush()
    this.blank()
  }

  private pre(n: HtmlNode) {
    const code = preText(n).replace(/^\n/, "").replace(/\n+$/, "")
    if (code.trim() === "") return this.flush()
    const fence = code.includes("```") ? "````" : "```"
    const codeEl = n.children?.find((c) => isElement(c) && c.name === "code")
    const language = /(?:^|\s)(?:language|lang)-(\S+)/.exec(codeEl?.attribs?.class ?? "")?.[1] ?? ""
    this.lineBlock([fence + language, ...code.split("\n"), fence])
  }

  private table(n: HtmlNode) {
    if (findElement(n, "table")) {
      // a layout table: its cells are blocks
      return this.block(n)
    }
    const caption = n.children?.find((c) => isElement(c) && c.name === "caption")
    const captionText = caption ? lineText(caption) : ""
    if (captionText) this.lineBlock([captionText])
    const table = markdownTable(tableRows(n))
    this.lineBlock(table ? table.split("\n") : [])
  }

  private list(n: HtmlNode, ordered: boolean) {
    this.flush()
    const inItem = this.prefixes.length > 0 && this.lists.length > 0
    if (inItem) this.sep = Math.max(this.sep, 1)
    else this.blank()
    const start = Number.parseInt(n.attribs?.start ?? "", 10)
    this.lists.push({ ordered, next: Number.isFinite(start) ? start : 1, items: 0 })
    this.children(n)
    this.flush()
    this.lists.pop()
    this.blank()
  }

  private item(n: HtmlNode) {
    this.flush()
    const list = this.lists[this.lists.length - 1]
    if (list !== undefined && list.items > 0) this.sep = 1
    const marker = list?.ordered ? `${list.next}. ` : "- "
    if (list !== undefined) {
      list.next++
      list.items++
    }
    this.prefixes.push({ first: marker, rest: " ".repeat(marker.length), used: false })
    this.children(n)
    this.flush()
    this.prefixes.pop()
  }
}

/** The text of a `<pre>` as written (its line breaks kept, `<br>` as a line break). */
const preText = (node: HtmlNode): string => {
  let out = ""
  const visit = (n: HtmlNode) => {
    if (n.type === "text") out += n.data ?? ""
    else if (isElement(n) && n.name === "br") out += "\n"
    else if (!isHidden(n)) for (const c of n.children ?? []) visit(c)
  }
  visit(node)
  return out.replace(/\r\n?/g, "\n")
}

/** The rows of a table (not of tables inside it): each cell's text, a spanned cell followed by empty cells. */
const tableRows = (table: HtmlNode): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  const visit = (n: HtmlNode) => {
    for (const c of n.children ?? []) {
      if (!isElement(c) || isHidden(c)) continue
      if (c.name === "table") continue
      if (c.name !== "tr") {
        visit(c)
        continue
      }
      const row: Array<string> = []
      for (const td of c.children ?? []) {
        if (!isElement(td) || (td.name !== "td" && td.name !== "th")) continue
        const span = Math.min(50, Math.max(1, Number(td.attribs?.colspan ?? "1") || 1))
        row.push(isHidden(td) ? "" : lineText(td))
        for (let i = 1; i < span; i++) row.push("")
      }
      if (row.length > 0) rows.push(row)
    }
  }
  visit(table)
  return rows
}

/** Converts an HTML tree ({@link parseHtml}) or an HTML string to Markdown. */
export const htmlToMarkdown = (input: string | HtmlNode): string => {
  const root = typeof input === "string" ? parseHtml(input) : input
  const writer = new Writer()
  writer.node(root)
  return writer.finish()
}

/** The visible text under `node`, block by block (no Markdown). */
export const visibleText = (node: HtmlNode): string => {
  let out = ""
  const visit = (n: HtmlNode) => {
    if (n.type === "text") out += n.data ?? ""
    else if (n.type === "root" || (isElement(n) && !isHidden(n))) {
      const block = n.type !== "root" && (blocks.has(n.name!) || n.name === "br")
      if (block) out += "\n"
      for (const c of n.children ?? []) visit(c)
      if (block) out += "\n"
    }
  }
  visit(node)
  return tidy(out.replace(/[ \t]+/g, " ").replace(/\n /g, "\n"))
}
