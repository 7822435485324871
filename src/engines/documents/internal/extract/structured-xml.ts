/**
 * Document XML vocabularies read as documents: JATS (journal articles, NLM), DocBook and TEI.
 * Sections become Markdown headings by nesting depth, paragraphs one line of text each (the
 * phrases of a paragraph stay together however the source wraps them), lists as `- ` items,
 * tables as Markdown tables (HTML-style `tr`/`td`/`th`, CALS `row`/`entry`, TEI `row`/`cell`);
 * the article or book title is the document's title and the abstract its description. Front
 * matter that is not text (JATS `front` apart from title and abstract, TEI `teiHeader`, DocBook
 * `info` apart from title and abstract) is left out.
 */
import { markdownTable } from "./markdown.js"
import { tidy } from "./text.js"
import { attrsOf, childrenOf, tagOf, textOf, type XNode } from "./xml.js"

/** Which vocabulary a document's root element names, if any. */
export type Vocabulary = "jats" | "docbook" | "tei"

const local = (tag: string) => tag.slice(tag.indexOf(":") + 1)

/** The vocabulary of a parsed document: from its root element (and its namespace or DTD hints). */
export const vocabularyOf = (nodes: ReadonlyArray<XNode>, head: string): Vocabulary | undefined => {
  const root = nodes.find((n) => {
    const t = tagOf(n)
    return t !== undefined && t !== "#text" && !t.startsWith("?") && t !== "#comment"
  })
  const name = root ? local(tagOf(root)!) : ""
  const ns = root ? attrsOf(root)["xmlns"] ?? "" : ""
  if (name === "TEI" || name === "teiCorpus") return "tei"
  if (name === "article" && (/JATS|NLM|dtd-version|article-type/i.test(head) || childrenOf(root!).some((c) => tagOf(c) === "front"))) return "jats"
  if (ns === "http://docbook.org/ns/docbook" || /DocBook/i.test(head)) return "docbook"
  if (["book", "chapter", "part", "sect1", "section", "refentry"].includes(name) && childrenOf(root!).some((c) => ["title", "info", "para", "sect1", "section", "chapter"].includes(tagOf(c) ?? ""))) return "docbook"
  return undefined
}

const sections = new Set(["sec", "section", "sect1", "sect2", "sect3", "sect4", "sect5", "chapter", "appendix", "part", "div", "div1", "div2", "div3", "div4", "preface", "ack", "app", "simplesect", "refsection", "glossary", "bibliography", "ref-list"])
const titles = new Set(["title", "head"])
const paragraphs = new Set(["p", "para", "simpara", "formalpara", "ab", "l", "lg", "note", "caption", "attribution", "label", "term", "mixed-citation", "element-citation", "bibl", "biblioentry", "bibliomixed", "fn", "quote", "blockquote", "disp-quote", "programlisting", "screen", "code", "preformat", "literallayout"])
const lists = new Set(["list", "itemizedlist", "orderedlist", "variablelist", "simplelist", "def-list"])
const items = new Set(["list-item", "listitem", "item", "varlistentry", "member", "def-item"])
const skipped = new Set(["teiHeader", "front", "info", "articleinfo", "bookinfo", "graphic", "mediaobject", "inlinemediaobject", "imageobject", "xref-list", "facsimile", "back-matter-ignored", "processing-meta", "alt-text", "object-id", "indexterm", "remark"])
const preformatted = new Set(["programlisting", "screen", "code", "preformat", "literallayout"])

const clean = (s: string) => s.replace(/\s+/g, " ").trim()

/** Inline formatting: its text runs on with the text around it (`T<sub>4</sub>` is `T4`). */
const formatting = new Set([
  "bold", "italic", "sup", "sub", "sc", "underline", "monospace", "overline", "roman", "sans-serif", "strike",
  "emphasis", "hi", "superscript", "subscript", "phrase", "named-content", "styled-content", "inline-formula",
  "xref", "ref", "ext-link", "uri", "email", "abbrev", "foreignphrase", "foreign", "literal", "span", "ruby"
])

/**
 * The inline text of a node: its text, footnote markers and all, on one line. Children of
 * element-only content (no text of its own between them: a citation's authors, year, title and
 * journal, a name's surname and given names) are fields, written with a space between them;
 * formatting elements side by side run on.
 */
const inline = (nodes: ReadonlyArray<XNode>): string => {
  const elementOnly = !nodes.some((n) => tagOf(n) === "#text" && /\S/.test(String(n["#text"] ?? "")))
  let out = ""
  let previous: string | undefined
  for (const n of nodes) {
    const t = tagOf(n)
    if (t === undefined) continue
    if (t === "#text") out += String(n["#text"] ?? "")
    else if (t === "#cdata") out += textOf(childrenOf(n))
    else if (t === "lb" || t === "break") out += " "
    else if (!skipped.has(local(t))) {
      const l = local(t)
      const text = inline(childrenOf(n))
      const field = elementOnly && previous !== undefined && !(formatting.has(previous) && formatting.has(l))
      if (field && text !== "" && out !== "" && !/\s$/.test(out)) out += " "
      out += text
      previous = l
    }
  }
  return out
}

/** Whether a node holds block children (then its children are written as blocks, not one line). */
const hasBlocks = (n: XNode): boolean =>
  childrenOf(n).some((c) => {
    const t = tagOf(c)
    if (t === undefined || t === "#text") return false
    const l = local(t)
    return sections.has(l) || paragraphs.has(l) || lists.has(l) || l === "table" || l === "table-wrap" || l === "informaltable" || l === "fig" || l === "figure"
  })

const tableRows = (table: XNode): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  const visit = (nodes: ReadonlyArray<XNode>) => {
    for (const n of nodes) {
      const t = tagOf(n)
      if (t === undefined || t === "#text") continue
      const l = local(t)
      if (l === "tr" || l === "row") {
        const row: Array<string> = []
        for (const c of childrenOf(n)) {
          const ct = tagOf(c)
          if (ct === undefined || ct === "#text") continue
          const cl = local(ct)
          if (cl !== "td" && cl !== "th" && cl !== "entry" && cl !== "cell") continue
          const text = clean(inline(childrenOf(c)))
          row.push(text)
          const span = Math.min(50, Math.max(1, Number(attrsOf(c)["colspan"] ?? attrsOf(c)["cols"] ?? "1") || 1))
          for (let i = 1; i < span; i++) row.push("")
        }
        if (row.length > 0) rows.push(row)
      } else visit(childrenOf(n))
    }
  }
  visit(childrenOf(table))
  return rows
}

/** Writes the blocks under `nodes`; `depth` is the section depth (headings `#` × depth). */
const write = (nodes: ReadonlyArray<XNode>, depth: number, out: Array<string>, guard = 0): void => {
  if (guard > 200) {
    const text = clean(inline(nodes))
    if (text) out.push(text)
    return
  }
  for (const n of nodes) {
    const t = tagOf(n)
    if (t === undefined || t.startsWith("?") || t === "#comment") continue
    if (t === "#text" || t === "#cdata") {
      const text = clean(t === "#text" ? String(n["#text"] ?? "") : textOf(childrenOf(n)))
      if (text) out.push(text)
      continue
    }
    const l = local(t)
    if (skipped.has(l)) continue
    if (sections.has(l)) {
      write(childrenOf(n), Math.min(6, depth + 1), out, guard + 1)
      continue
    }
    if (titles.has(l)) {
      const text = clean(inline(childrenOf(n)))
      if (text) out.push(`${"#".repeat(Math.max(1, depth))} ${text}`)
      continue
    }
    if (lists.has(l)) {
      const lines: Array<string> = []
      for (const item of childrenOf(n)) {
        const it = tagOf(item)
        if (it === undefined || !items.has(local(it))) continue
        const text = clean(inline(childrenOf(item)))
        if (text) lines.push(`- ${text}`)
      }
      if (lines.length > 0) out.push(lines.join("\n"))
      continue
    }
    if (l === "table" || l === "informaltable" || l === "tgroup") {
      const table = markdownTable(tableRows(n))
      if (table) out.push(table)
      continue
    }
    if (preformatted.has(l)) {
      const code = textOf(childrenOf(n)).replace(/^\n+|\s+$/g, "")
      if (code) out.push("```\n" + code + "\n```")
      continue
    }
    if (paragraphs.has(l) && !hasBlocks(n)) {
      const text = clean(inline(childrenOf(n)))
      if (text) out.push(text)
      continue
    }
    // containers: body, back, text, article, book, table-wrap, fig, boxed-text, abstract in the body …
    write(childrenOf(n), depth, out, guard + 1)
  }
}

/** The first descendant with the local name `name`. */
const findLocal = (nodes: ReadonlyArray<XNode>, name: string): XNode | undefined => {
  const stack = [...nodes].reverse()
  while (stack.length > 0) {
    const n = stack.pop()!
    const t = tagOf(n)
    if (t === undefined || t === "#text") continue
    if (local(t) === name) return n
    const kids = childrenOf(n)
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!)
  }
  return undefined
}

/** Reads a JATS, DocBook or TEI document: Markdown, title and description. */
export const readStructured = (nodes: ReadonlyArray<XNode>, vocabulary: Vocabulary): {
  content: string
  title?: string
  description?: string
} => {
  const out: Array<string> = []
  let title: string | undefined
  let description: string | undefined
  if (vocabulary === "jats") {
    const front = findLocal(nodes, "front")
    const articleTitle = front ? findLocal([front], "article-title") : undefined
    title = articleTitle ? clean(inline(childrenOf(articleTitle))) : undefined
    const abstract = front ? findLocal([front], "abstract") : undefined
    if (title) out.push(`# ${title}`)
    if (abstract) {
      const parts: Array<string> = []
      write(childrenOf(abstract), 2, parts)
      description = clean(parts.filter((p) => !p.startsWith("#")).join(" ")) || undefined
      out.push("## Abstract", ...parts)
    }
    const body = findLocal(nodes, "body")
    const back = findLocal(nodes, "back")
    if (body) write(childrenOf(body), 1, out)
    if (back) write(childrenOf(back), 1, out)
  } else if (vocabulary === "tei") {
    const header = findLocal(nodes, "teiHeader")
    const titleStmt = header ? findLocal([header], "titleStmt") : undefined
    const t = titleStmt ? findLocal([titleStmt], "title") : undefined
    title = t ? clean(inline(childrenOf(t))) : undefined
    if (title) out.push(`# ${title}`)
    const text = findLocal(nodes, "text")
    write(text ? childrenOf(text) : nodes, 1, out)
  } else {
    const info = findLocal(nodes, "info") ?? findLocal(nodes, "bookinfo") ?? findLocal(nodes, "articleinfo")
    const rootTitle = nodes.flatMap((n) => childrenOf(n)).find((c) => tagOf(c) === "title")
    const t = rootTitle ?? (info ? findLocal([info], "title") : undefined)
    title = t ? clean(inline(childrenOf(t))) : undefined
    const abstract = info ? findLocal([info], "abstract") : undefined
    if (abstract) description = clean(inline(childrenOf(abstract))) || undefined
    if (title && !rootTitle) out.push(`# ${title}`)
    write(nodes, 0, out)
  }
  return { content: tidy(out.join("\n\n")), title, description }
}
