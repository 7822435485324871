/**
 * Word list numbers as the document shows them. mammoth writes every numbered list as an `<ol>`
 * counting from 1; Word counts from the level's `w:start` (or a `w:startOverride`), and a list
 * interrupted by other paragraphs goes on counting. This reads `word/numbering.xml` and scans
 * the numbered paragraphs of `word/document.xml` (no DOM: bodies can be tens of MB), computes each item's number, and gives each
 * `<ol>` of mammoth's HTML the `start` of its first item (the Markdown numbers the items from it).
 */
import { type HtmlNode, textContent } from "./markdown.js"
import { attrsOf, childrenOf, findAll, tagOf, type XNode } from "./xml.js"

interface Level {
  readonly start: number
  readonly ordered: boolean
}

interface Numbering {
  /** numId → abstractNumId */
  readonly abstractOf: Map<string, string>
  /** abstractNumId → ilvl → level */
  readonly levels: Map<string, Map<number, Level>>
  /** numId → ilvl → start override */
  readonly overrides: Map<string, Map<number, number>>
}

const val = (node: XNode | undefined, tag: string): string | undefined => {
  const child = node ? childrenOf(node).find((c) => tagOf(c) === tag) : undefined
  return child ? attrsOf(child)["w:val"] : undefined
}

const readNumbering = (numbering: ReadonlyArray<XNode>): Numbering => {
  const levels = new Map<string, Map<number, Level>>()
  for (const abs of findAll(numbering, "w:abstractNum")) {
    const byLevel = new Map<number, Level>()
    for (const lvl of childrenOf(abs).filter((c) => tagOf(c) === "w:lvl")) {
      const ilvl = Number(attrsOf(lvl)["w:ilvl"] ?? 0)
      const fmt = val(lvl, "w:numFmt") ?? "decimal"
      byLevel.set(ilvl, { start: Number(val(lvl, "w:start") ?? 1), ordered: fmt !== "bullet" && fmt !== "none" })
    }
    levels.set(attrsOf(abs)["w:abstractNumId"] ?? "", byLevel)
  }
  const abstractOf = new Map<string, string>()
  const overrides = new Map<string, Map<number, number>>()
  for (const num of findAll(numbering, "w:num")) {
    const id = attrsOf(num)["w:numId"] ?? ""
    abstractOf.set(id, val(num, "w:abstractNumId") ?? "")
    for (const o of childrenOf(num).filter((c) => tagOf(c) === "w:lvlOverride")) {
      const start = val(o, "w:startOverride")
      if (start === undefined) continue
      const byLevel = overrides.get(id) ?? new Map<number, number>()
      byLevel.set(Number(attrsOf(o)["w:ilvl"] ?? 0), Number(start))
      overrides.set(id, byLevel)
    }
  }
  return { abstractOf, levels, overrides }
}

/** One numbered paragraph: its number as Word shows it and its text. */
export interface NumberedItem {
  readonly number: number
  readonly level: number
  readonly text: string
}

const normal = (s: string) => s.replace(/\s+/g, " ").trim()

const xmlEntities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }
const decode = (s: string) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : m
    }
    return xmlEntities[e.toLowerCase()] ?? m
  })

/** The paragraphs of `word/document.xml` that have a `w:numPr`: numId, level and text (a scan, no DOM). */
const numberedParagraphs = function*(xml: string): Generator<{ numId: string; ilvl: number; text: string }> {
  const starts = /<w:p[\s>/]/g
  let m = starts.exec(xml)
  while (m) {
    const from = m.index
    m = starts.exec(xml)
    const segment = xml.slice(from, m ? m.index : xml.length)
    const numPr = /<w:numPr>([\s\S]*?)<\/w:numPr>/.exec(segment.slice(0, segment.indexOf("</w:pPr>") + 1 || 2048))
    if (!numPr) continue
    const numId = /<w:numId\b[^>]*\bw:val="([^"]*)"/.exec(numPr[1]!)?.[1]
    const ilvl = Number(/<w:ilvl\b[^>]*\bw:val="([^"]*)"/.exec(numPr[1]!)?.[1] ?? 0)
    if (numId === undefined) continue
    const body = segment.replace(/<w:del\b[\s\S]*?<\/w:del>|<mc:Fallback>[\s\S]*?<\/mc:Fallback>/g, "")
    let text = ""
    for (const t of body.matchAll(/<w:t(?:\s[^>]*)?>([^<]*)<\/w:t>|<w:tab\/>/g)) text += t[1] === undefined ? "\t" : decode(t[1])
    yield { numId, ilvl, text }
  }
}

/**
 * The ordered-list paragraphs of a document body (the XML text of `word/document.xml`), in
 * order, with the number Word shows for each. Lists of one abstract definition share their
 * counters (Word's rule) unless a `w:num` overrides a level's start, which restarts that level
 * where the num is first used.
 */
export const numberedItems = (documentXml: string, numbering: ReadonlyArray<XNode>): Array<NumberedItem> => {
  const n = readNumbering(numbering)
  const counters = new Map<string, Array<number | undefined>>()
  const usedNums = new Set<string>()
  const items: Array<NumberedItem> = []
  for (const { ilvl, numId, text } of numberedParagraphs(documentXml)) {
    if (numId === "0") continue
    const abs = n.abstractOf.get(numId)
    const level = abs === undefined ? undefined : n.levels.get(abs)?.get(ilvl)
    if (abs === undefined || level === undefined) continue
    const counter = counters.get(abs) ?? []
    counters.set(abs, counter)
    if (!usedNums.has(numId)) {
      usedNums.add(numId)
      for (const [l, start] of n.overrides.get(numId) ?? []) counter[l] = start - 1
    }
    counter[ilvl] = counter[ilvl] === undefined ? level.start : counter[ilvl]! + 1
    for (let deeper = ilvl + 1; deeper < counter.length; deeper++) counter[deeper] = undefined
    if (level.ordered) items.push({ number: counter[ilvl]!, level: ilvl, text: normal(text) })
  }
  return items
}

const ownText = (li: HtmlNode): string => {
  let out = ""
  for (const c of li.children ?? []) {
    if (c.name === "ol" || c.name === "ul") continue
    out += textContent(c)
  }
  return normal(out)
}

/**
 * Sets `start` on each `<ol>` whose first item is a numbered paragraph Word shows with another
 * number than 1. Items are matched by their text, in document order; an `<ol>` whose first item
 * cannot be matched is left as it is.
 */
export const applyListStarts = (ols: ReadonlyArray<HtmlNode>, items: ReadonlyArray<NumberedItem>): void => {
  let cursor = 0
  for (const ol of ols) {
    const first = ol.children?.find((c) => c.name === "li")
    if (!first) continue
    const text = ownText(first)
    let at = -1
    for (let i = cursor; i < items.length && i < cursor + 200; i++) {
      if (items[i]!.text === text) {
        at = i
        break
      }
    }
    if (at < 0) continue
    cursor = at + 1
    if (items[at]!.number !== 1 && ol.attribs !== undefined) ol.attribs.start = String(items[at]!.number)
  }
}
