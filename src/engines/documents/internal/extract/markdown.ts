/**
 * HTML to Markdown on htmlparser2's light document tree (no browser DOM), in two flavours.
 *
 * The default, for retrieval (the document engine): the structure that carries meaning
 * (headings, lists, tables, code blocks, quotes) is Markdown, and running text is the
 * document's own text: no backslash escapes (`[1]`, `->` stay as written) and no emphasis
 * markers (bold, italic, strike-through become their plain text), so an exact phrase a user
 * searches for is in the text. Tables always become Markdown tables (first row as the header, a
 * spanned cell's text once with empty cells after it, pipes escaped; a caption before the
 * table), except layout tables that nest tables, whose cells become paragraphs. What a reader
 * never sees is dropped: scripts, styles, templates, embedded objects, the `<head>`, and
 * elements hidden by `hidden`, `aria-hidden="true"` or an inline `display: none` /
 * `visibility: hidden`. Images keep only their alt text, links only their text. Whitespace is
 * collapsed as a browser does, except inside `<pre>`.
 *
 * The rich flavour (`{ inline: "rich" }`, the web engine's scrape output, Firecrawl-compatible
 * and written as the turndown setup it replaces wrote it): the same blocks, plus links
 * `[text](url "title")`, images `![alt](src)`, `*em*`, `**strong**`, `~~del~~`, task list boxes,
 * headings with their inline Markdown, and turndown's backslash escapes in text; see
 * {@link MarkdownOptions} for the differences in detail.
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
  /** The parent node (set by htmlparser2; absent on trees built by hand). */
  readonly parent?: HtmlNode | null
}

/**
 * How deep the tree may nest. Deeper elements are unwrapped: their text and line breaks stay,
 * in document order, their nesting goes. The walks over the tree recurse, so without a bound a
 * page of a few thousand nested `<div>`s would overflow the stack.
 */
export const maxDepth = 200

/**
 * Bounds the nesting of a tree at {@link maxDepth}, in place and without recursion: the children
 * of an element at that depth become the text nodes, `<br>`s and images of its whole subtree.
 */
export const boundDepth = (root: HtmlNode): HtmlNode => {
  const stack: Array<[HtmlNode, number]> = [[root, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!
    const children = node.children
    if (children === undefined || children.length === 0) continue
    if (depth < maxDepth) {
      for (const c of children) stack.push([c, depth + 1])
      continue
    }
    if (!children.some((c) => (c.children?.length ?? 0) > 0)) continue
    const flat: Array<HtmlNode> = []
    const pending: Array<HtmlNode> = [...children].reverse()
    while (pending.length > 0) {
      const n = pending.pop()!
      if (n.type === "text" || n.name === "br" || n.name === "img") flat.push(n)
      else if (isElement(n) && !isHidden(n) && n.children !== undefined) for (let i = n.children.length - 1; i >= 0; i--) pending.push(n.children[i]!)
    }
    ;(node as { children?: ReadonlyArray<HtmlNode> }).children = flat
  }
  return root
}

/**
 * Parses HTML of any shape (a page, a fragment, an e-mail body) into a tree; entities decoded,
 * nesting bounded ({@link boundDepth}).
 */
export const parseHtml = (html: string): HtmlNode => boundDepth(parseDocument(html) as unknown as HtmlNode)

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

/**
 * Whether an element and what it holds are hidden from a reader. `ariaHidden`: count
 * `aria-hidden="true"` as hidden (the rich flavour does not: it hides an element from a screen
 * reader only, and marks visible content such as Wikipedia's formula images).
 */
const isHidden = (n: HtmlNode, ariaHidden = true): boolean => {
  if (!isElement(n)) return n.type === "comment" || n.type === "directive"
  if (unseen.has(n.name!)) return true
  const a = n.attribs
  if (a === undefined) return false
  return a.hidden !== undefined || ariaHidden && a["aria-hidden"] === "true" ||
    (a.style !== undefined && hiddenStyle.test(a.style))
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
const lineText = (node: HtmlNode, ariaHidden = true): string => {
  let out = ""
  const visit = (n: HtmlNode) => {
    if (n.type === "text") {
      out += n.data ?? ""
      return
    }
    if (isHidden(n, ariaHidden) || !isElement(n) && n.type !== "root") return
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

/** An open link or emphasis of the rich flavour. */
interface Wrap {
  readonly open: string
  readonly close: string
  /** Written even around nothing (a link), unlike emphasis. */
  readonly always: boolean
  /** The inline text before it; its own text is the writer's `inline` until it closes. */
  outer: string
  /** A block inside it has already written part of its text (each part is wrapped). */
  split: boolean
}

// turndown's escapes: these anywhere in text, ...
const textEscapes = /[\\*`[\]_]/g
// ... these only where a line starts (turndown: where a text node starts)
const lineStartEscapes = /^(?:-|\+ |=+|#{1,6} |~~~|>|(\d+)\. )/

/** Escapes Markdown characters in text as turndown does; `lineStart`: the text starts a line. */
const escapeText = (text: string, lineStart: boolean): string => {
  const escaped = text.replace(textEscapes, "\\$&")
  if (!lineStart) return escaped
  const lead = escaped.startsWith(" ") ? 1 : 0
  const rest = escaped.slice(lead)
  const out = rest.replace(lineStartEscapes, (m, digits: string | undefined) => digits !== undefined ? `${digits}\\. ` : `\\${m}`)
  return out === rest ? escaped : escaped.slice(0, lead) + out
}

/** An attribute (alt, title) on as few lines as it needs, as turndown cleans it. */
const cleanAttribute = (value: string | undefined): string => value ? value.replace(/(\n+\s*)+/g, "\n") : ""

/** A link destination: `<`, `>`, parentheses escaped; in angle brackets when it holds a space. */
const destination = (url: string): string => {
  const escaped = url.replace(/([<>()])/g, "\\$1")
  return escaped.includes(" ") ? `<${escaped}>` : escaped
}

/** ` "title"` after a link destination, or "". */
const titlePart = (title: string | undefined): string => {
  const t = cleanAttribute(title)
  return t ? ` "${t.replace(/"/g, '\\"')}"` : ""
}

/** Whitespace at the ends of `text` moves outside the markers (`*a *` is not emphasis). */
const wrapText = (w: Wrap, text: string): string => {
  const core = text.trim()
  if (core === "") return w.always && !w.split ? text + w.open + w.close : text
  const lead = text.slice(0, text.length - text.trimStart().length)
  const trail = text.slice(text.trimEnd().length)
  return lead + w.open + core + w.close + trail
}

/** Inline code: a run of backticks that the code does not hold around it, whitespace outside. */
const codeSpan = (text: string): string => {
  const core = text.trim()
  if (core === "") return text
  const runs: ReadonlyArray<string> = core.match(/`+/g) ?? []
  let delimiter = "`"
  while (runs.includes(delimiter)) delimiter += "`"
  const pad = core.startsWith("`") || core.endsWith("`") ? " " : ""
  return text.slice(0, text.length - text.trimStart().length) + delimiter + pad + core + pad + delimiter +
    text.slice(text.trimEnd().length)
}

/** A task list box: an `<input type=checkbox>` (or `role=checkbox`) in a list item, or in its label or span. */
const isTaskBox = (n: HtmlNode): boolean => {
  const a = n.attribs
  if (!a || !(n.name === "input" && a.type?.toLowerCase() === "checkbox" || a.role === "checkbox")) return false
  const parent = n.parent
  if (parent?.name === "li") return true
  return (parent?.name === "label" || parent?.name === "span") && parent.parent?.name === "li"
}

/** The markers of emphasis and strike-through elements. */
const emphasis = new Map([["em", "*"], ["i", "*"], ["strong", "**"], ["b", "**"], ["del", "~~"], ["s", "~~"], ["strike", "~~"]])

class Writer {
  constructor(private readonly rich: boolean) {}

  private readonly lines: Array<string> = []
  /** Inline text of the block being written; `\n` only where a `<br>` was. */
  private inline = ""
  private readonly prefixes: Array<Prefix> = []
  private readonly lists: Array<List> = []
  /** Line breaks wanted before the next line: 1 a new line, 2 a blank line between. */
  private sep = 0
  // the rich flavour's state
  /** Open links and emphasis, outermost first. */
  private readonly wraps: Array<Wrap> = []
  /** Nothing but whitespace written on the current line yet (text there gets line-start escapes). */
  private lineStart = true
  /** Inside a heading: blocks are written as spaces, on the heading's one line. */
  private oneLine = 0
  /** What was written last is a block (a list item ending with one is followed by a blank line). */
  private afterBlock = false

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
    if (this.wraps.length > 0) this.inline = this.fold(this.inline)
    this.lineStart = true
    if (this.inline === "") return
    const pieces = this.inline.split("\n")
    this.inline = ""
    const lines = pieces.map((p) => p.replace(/ {2,}/g, " ").replace(/^ | $/g, ""))
    let from = 0
    let to = lines.length
    while (from < to && lines[from]!.trim() === "") from++
    while (to > from && lines[to - 1]!.trim() === "") to--
    if (from < to) this.afterBlock = false
    for (let i = from; i < to; i++) this.line(lines[i]!)
  }

  /**
   * Wraps `text` in the open links and emphasis and puts the text before them first: a block
   * inside a link is written now, the link's text so far as a link of its own.
   */
  private fold(text: string): string {
    for (let i = this.wraps.length - 1; i >= 0; i--) {
      const w = this.wraps[i]!
      if (text.trim() === "") text = w.outer + text
      else {
        text = w.outer + wrapText(w, text)
        w.split = true
      }
      w.outer = ""
    }
    return text
  }

  /** A block of lines (a heading, a table, a code block) with blank lines around it. */
  private lineBlock(lines: ReadonlyArray<string>) {
    this.flush()
    if (lines.length === 0) return
    this.blank()
    for (const l of lines) this.line(l)
    this.blank()
    this.afterBlock = true
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
      const text = (n.data ?? "").replace(spaces, " ")
      if (this.rich) {
        if (text.trim() === "") {
          this.inline += text
          return
        }
        this.inline += escapeText(text, this.lineStart)
        this.lineStart = false
        return
      }
      this.inline += text
      return
    }
    if (n.type === "root") return this.children(n)
    if (isHidden(n, !this.rich) || !isElement(n)) {
      // a drawing between words: a space where its source has one at an edge (turndown's rule)
      if (this.rich && (n.name === "svg" || n.name === "math") && /^\s|\s$/.test(textContent(n))) this.inline += " "
      return
    }
    const name = n.name!
    if (this.rich && this.richNode(n, name)) return
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
        this.afterBlock = true
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
    this.afterBlock = true
  }

  /** The rich flavour's elements: links, images, emphasis, code, task boxes, headings. Whether `n` was written. */
  private richNode(n: HtmlNode, name: string): boolean {
    const a = n.attribs ?? {}
    if (isTaskBox(n)) {
      const checked = name === "input" ? a.checked !== undefined : a["aria-checked"] === "true"
      this.inline += checked ? "[x] " : "[ ] "
      this.lineStart = false
      return true
    }
    switch (name) {
      case "a": {
        if (!a.href) return false
        return this.wrap(n, "[", `](${destination(a.href)}${titlePart(a.title)})`, true)
      }
      case "img": {
        if (a.src) {
          const alt = escapeText(cleanAttribute(a.alt), true)
          this.inline += `![${alt}](${destination(a.src)}${titlePart(a.title)})`
          this.lineStart = false
        }
        return true
      }
      case "code": {
        const code = codeSpan(textContent(n).replace(spaces, " "))
        this.inline += code
        if (code.trim() !== "") this.lineStart = false
        return true
      }
    }
    const marker = emphasis.get(name)
    if (marker !== undefined) return this.wrap(n, marker, marker, false)
    if (this.oneLine > 0) {
      // inside a heading: one line
      const block = blocks.has(name) || name === "br"
      if (block) this.inline += " "
      this.children(n)
      if (block) this.inline += " "
      return true
    }
    if (name === "br") {
      this.inline += "\n"
      this.lineStart = true
      return true
    }
    if (name.length === 2 && name[0] === "h" && name[1]! >= "1" && name[1]! <= "6") {
      this.flush()
      this.oneLine++
      this.children(n)
      this.oneLine--
      let text = this.inline
      this.inline = ""
      if (this.wraps.length > 0) text = this.fold(text)
      text = text.replace(spaces, " ").trim()
      this.lineBlock(text ? [`${"#".repeat(Number(name[1]))} ${text}`] : [])
      this.lineStart = true
      return true
    }
    return false
  }

  /** The children of `n` between `open` and `close` (see {@link wrapText}). */
  private wrap(n: HtmlNode, open: string, close: string, always: boolean): true {
    const w: Wrap = { open, close, always, outer: this.inline, split: false }
    this.inline = ""
    this.wraps.push(w)
    this.children(n)
    this.wraps.pop()
    const inner = this.inline
    this.inline = w.outer + wrapText(w, inner)
    if (inner.trim() !== "" || (always && !w.split)) this.lineStart = false
    return true
  }

  private pre(n: HtmlNode) {
    const code = preText(n, !this.rich).replace(/^\n/, "").replace(/\n+$/, "")
    if (code.trim() === "") return this.flush()
    const fence = this.rich ? fenceFor(code) : code.includes("```") ? "````" : "```"
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
    const captionText = caption ? lineText(caption, !this.rich) : ""
    if (captionText) this.lineBlock([captionText])
    const table = markdownTable(tableRows(n, this.rich))
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
    this.afterBlock = false
  }

  private item(n: HtmlNode) {
    this.flush()
    const list = this.lists[this.lists.length - 1]
    // the rich flavour, as turndown: an item after one that ends with a block has a blank line before it
    if (list !== undefined && list.items > 0) this.sep = this.rich && this.afterBlock ? 2 : 1
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
const preText = (node: HtmlNode, ariaHidden = true): string => {
  let out = ""
  const visit = (n: HtmlNode) => {
    if (n.type === "text") out += n.data ?? ""
    else if (isElement(n) && n.name === "br") out += "\n"
    else if (!isHidden(n, ariaHidden)) for (const c of n.children ?? []) visit(c)
  }
  visit(node)
  return out.replace(/\r\n?/g, "\n")
}

/** A code fence longer than any backtick fence at the start of a line of the code (turndown's rule). */
const fenceFor = (code: string): string => {
  let size = 3
  for (const m of code.matchAll(/^`{3,}/gm)) if (m[0].length >= size) size = m[0].length + 1
  return "`".repeat(size)
}

/**
 * The rows of a table (not of tables inside it): each cell's text, a spanned cell followed by
 * empty cells. `rich`: a spanned cell's text in each column, `aria-hidden` not hidden.
 */
const tableRows = (table: HtmlNode, rich = false): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  const visit = (n: HtmlNode) => {
    for (const c of n.children ?? []) {
      if (!isElement(c) || isHidden(c, !rich)) continue
      if (c.name === "table") continue
      if (c.name !== "tr") {
        visit(c)
        continue
      }
      const row: Array<string> = []
      for (const td of c.children ?? []) {
        if (!isElement(td) || (td.name !== "td" && td.name !== "th")) continue
        const span = Math.min(50, Math.max(1, Number(td.attribs?.colspan ?? "1") || 1))
        const text = isHidden(td, !rich) ? "" : lineText(td, !rich)
        row.push(text)
        for (let i = 1; i < span; i++) row.push(rich ? text : "")
      }
      if (row.length > 0) rows.push(row)
    }
  }
  visit(table)
  return rows
}

/** How {@link htmlToMarkdown} writes running text. */
export interface MarkdownOptions {
  /**
   * `"plain"` (the default): retrieval text, the text as written: links as their text, images as
   * their alt text, no emphasis markers, no backslash escapes.
   *
   * `"rich"`: the web engine's Markdown (Firecrawl-compatible), as the turndown setup it replaces
   * wrote it (atx headings, fenced code, `-` bullets, `---`, GFM tables and strike-through):
   * `[text](url "title")` (`(`, `)`, `<`, `>` escaped in the URL, `<url>` when it holds a space),
   * `![alt](src "title")` (nothing for an image without `src`), `*em*`, `**strong**`, `~~del~~`
   * (whitespace at their ends moved outside the markers), `[x] ` / `[ ] ` for a list item's
   * checkbox, inline code between a backtick run it does not hold, headings with their inline
   * Markdown, backslash escapes in text (a backslash, `*`, a backtick, `[`, `]` and `_` anywhere;
   * `-`, `+ `, `=`, `# `, `~~~`, `>` and `1. ` where a line starts), a blank line before a list
   * item that follows one ending with a block, and a spanned table cell's text in every column
   * it spans. Cells are plain text, as turndown's table rule wrote them.
   *
   * Where it departs from turndown: every `<pre>` is a fenced block (turndown fenced only
   * `<pre><code>`), a table cell's text has a space at each block boundary and its images' alt
   * text, a layout table (one that nests tables) is written as blocks and a caption before its
   * table, elements hidden by `hidden` or an inline style are dropped (`aria-hidden` ones are
   * kept: they are visible), a heading is one line, a link around blocks (a card:
   * `<a><h3>…</h3><p>…</p></a>`) makes a link of each block's text, line-start escapes are made
   * only where a line starts (turndown made them where any text node started: `**\-x**`), and
   * whitespace is collapsed as a browser does.
   */
  readonly inline?: "plain" | "rich" | undefined
}

/** Converts an HTML tree ({@link parseHtml}) or an HTML string to Markdown. */
export const htmlToMarkdown = (input: string | HtmlNode, options: MarkdownOptions = {}): string => {
  const root = typeof input === "string" ? parseHtml(input) : input
  const writer = new Writer(options.inline === "rich")
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
