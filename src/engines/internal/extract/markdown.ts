/**
 * HTML (a parsed DOM, from linkedom) to Markdown with turndown, for retrieval: the structure
 * that carries meaning (headings, lists, tables, code blocks) is Markdown, and
 * running text is the document's own text: no backslash escapes (`[1]`, `->` stay as written)
 * and no emphasis markers (bold, italic, strike-through become their plain text), so an exact
 * phrase a user searches for is in the text. Tables always become Markdown tables (first row
 * as the header, a spanned cell's text once with empty cells after it, pipes escaped), except
 * layout tables that nest tables, whose cells become paragraphs. Scripts, styles and other
 * non-content elements are dropped; images keep only their alt text; links only their text.
 */
import { parseHTML } from "linkedom"
import TurndownService from "turndown"
import { tidy } from "./text.js"

export { tidy }

/** Escapes a table cell for a Markdown table row. */
export const cell = (text: string): string => text.replace(/\s+/g, " ").trim().replace(/\|/g, "\\|")

/** Renders rows as a Markdown table; the first row is the header. Empty input gives "". */
export const markdownTable = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const width = Math.max(0, ...rows.map((r) => r.length))
  if (rows.length === 0 || width === 0) return ""
  const line = (r: ReadonlyArray<string>) =>
    "| " + Array.from({ length: width }, (_, i) => cell(r[i] ?? "")).join(" | ") + " |"
  const [head, ...body] = rows
  return [line(head!), "| " + Array.from({ length: width }, () => "---").join(" | ") + " |", ...body.map(line)].join(
    "\n"
  )
}

// the DOM types of linkedom are structurally the browser's; we only touch a few members
interface El {
  readonly nodeName: string
  readonly textContent: string | null
  readonly childNodes: ArrayLike<El>
  readonly children?: ArrayLike<El>
  getAttribute?: (name: string) => string | null
  querySelector?: (sel: string) => El | null
  querySelectorAll?: (sel: string) => ArrayLike<El>
}

const tableRows = (table: El): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  const trs = Array.from(table.querySelectorAll!("tr")).filter((tr) => closestTable(tr) === table)
  for (const tr of trs) {
    const row: Array<string> = []
    for (const td of Array.from(tr.children ?? [])) {
      if (td.nodeName !== "TD" && td.nodeName !== "TH") continue
      const span = Math.min(50, Math.max(1, Number(td.getAttribute?.("colspan") ?? "1") || 1))
      row.push(blockText(td))
      for (let i = 1; i < span; i++) row.push("")
    }
    if (row.length > 0) rows.push(row)
  }
  return rows
}

const blockTags = new Set(["P", "DIV", "BR", "LI", "UL", "OL", "H1", "H2", "H3", "H4", "H5", "H6", "TR", "TABLE"])

/** The text of a node with a space at every block boundary (cells with several paragraphs). */
const blockText = (node: El): string => {
  let out = ""
  const visit = (n: El) => {
    const kids = Array.from(n.childNodes)
    if (kids.length === 0) {
      if ((n as unknown as { nodeType: number }).nodeType === 3) out += n.textContent ?? ""
      else if (blockTags.has(n.nodeName)) out += " "
      return
    }
    if (blockTags.has(n.nodeName)) out += " "
    for (const k of kids) visit(k)
    if (blockTags.has(n.nodeName)) out += " "
  }
  visit(node)
  return out.replace(/\s+/g, " ").trim()
}

const closestTable = (node: El): El | undefined => {
  let p = (node as unknown as { parentNode: El | null }).parentNode
  while (p && p.nodeName !== "TABLE") p = (p as unknown as { parentNode: El | null }).parentNode
  return p ?? undefined
}

const makeService = (): TurndownService => {
  const td = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    bulletListMarker: "-",
    emDelimiter: "*"
  })
  // the text as written: Markdown escapes would split the words and phrases a user searches for
  td.escape = (text: string) => text
  td.addRule("plain-emphasis", {
    filter: ["strong", "b", "em", "i", "u", "s", "del", "strike", "mark", "ins", "sup", "sub", "small", "big"],
    replacement: (content) => content
  })
  td.remove(["script", "style", "noscript", "template", "iframe", "object", "embed", "canvas", "head"] as unknown as TurndownService.Filter)
  td.remove((node) => node.nodeName === "svg" || node.nodeName === "SVG" || node.nodeName === "MATH")
  td.addRule("table", {
    filter: "table",
    replacement: (content, node) => {
      const el = node as unknown as El
      if (el.querySelector?.("table")) return `\n\n${content}\n\n` // layout table: keep the cells' blocks
      return `\n\n${markdownTable(tableRows(el))}\n\n`
    }
  })
  // inside a layout table the cells are plain blocks
  td.addRule("cells", {
    filter: ["td", "th", "tr", "thead", "tbody", "tfoot", "caption"],
    replacement: (content) => `\n\n${content}\n\n`
  })
  td.addRule("image", {
    filter: "img",
    replacement: (_content, node) => {
      const alt = ((node as unknown as El).getAttribute?.("alt") ?? "").trim()
      return alt ? alt : ""
    }
  })
  // a link is its text: the target's URL words are noise to a search over the text
  td.addRule("link", {
    filter: (node) => node.nodeName === "A",
    replacement: (content) => content.trim()
  })
  return td
}

let service: TurndownService | undefined

/** Converts a DOM node (linkedom) or an HTML string to Markdown. */
export const htmlToMarkdown = (input: string | object): string => {
  service ??= makeService()
  const node = typeof input === "string" ? parseHTML(`<!doctype html><html><body>${input}</body></html>`).document.body : input
  const md = service.turndown(node as TurndownService.Node)
  return tidy(md)
}
