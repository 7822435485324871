/**
 * Word list numbers as the document shows them. mammoth writes every numbered list as an `<ol>`
 * counting from 1; Word counts from the level's `w:start` (or a `w:startOverride`), and a list
 * interrupted by other paragraphs goes on counting. This reads `word/numbering.xml` and the
 * numbered paragraphs of `word/document.xml`, computes each item's number, and gives each
 * `<ol>` of mammoth's HTML the `start` of its first item (turndown numbers the items from it).
 */
import { attrsOf, childrenOf, find, findAll, tagOf, type XNode } from "./xml.js"

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

/**
 * The ordered-list paragraphs of a document body, in order, with the number Word shows for
 * each. Lists of one abstract definition share their counters (Word's rule) unless a
 * `w:num` overrides a level's start, which restarts that level where the num is first used.
 */
export const numberedItems = (
  document: ReadonlyArray<XNode>,
  numbering: ReadonlyArray<XNode>,
  paragraphText: (p: XNode) => string
): Array<NumberedItem> => {
  const n = readNumbering(numbering)
  const counters = new Map<string, Array<number | undefined>>()
  const usedNums = new Set<string>()
  const items: Array<NumberedItem> = []
  for (const p of findAll(document, "w:p")) {
    const pPr = childrenOf(p).find((c) => tagOf(c) === "w:pPr")
    const numPr = pPr ? childrenOf(pPr).find((c) => tagOf(c) === "w:numPr") : undefined
    if (!numPr) continue
    const numId = val(numPr, "w:numId")
    const ilvl = Number(val(numPr, "w:ilvl") ?? 0)
    if (numId === undefined || numId === "0") continue
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
    if (level.ordered) items.push({ number: counter[ilvl]!, level: ilvl, text: normal(paragraphText(p)) })
  }
  return items
}

// linkedom's DOM: the few members used here
interface Li {
  readonly childNodes: ArrayLike<Li>
  readonly nodeName: string
  readonly textContent: string | null
}
interface Ol extends Li {
  readonly children: ArrayLike<Li>
  setAttribute(name: string, value: string): void
}

const ownText = (li: Li): string => {
  let out = ""
  for (const c of Array.from(li.childNodes)) {
    if (c.nodeName === "OL" || c.nodeName === "UL") continue
    out += c.textContent ?? ""
  }
  return normal(out)
}

/**
 * Sets `start` on each `<ol>` whose first item is a numbered paragraph Word shows with another
 * number than 1. Items are matched by their text, in document order; an `<ol>` whose first item
 * cannot be matched is left as it is.
 */
export const applyListStarts = (ols: ReadonlyArray<Ol>, items: ReadonlyArray<NumberedItem>): void => {
  let cursor = 0
  for (const ol of ols) {
    const first = Array.from(ol.children).find((c) => c.nodeName === "LI")
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
    if (items[at]!.number !== 1) ol.setAttribute("start", String(items[at]!.number))
  }
}

/** The paragraph text of a `w:p` as mammoth reads it (runs' `w:t`, tabs as a tab). */
export const wordParagraphText = (p: XNode): string => {
  let out = ""
  const visit = (nodes: ReadonlyArray<XNode>) => {
    for (const node of nodes) {
      const tag = tagOf(node)
      if (tag === undefined || tag === "w:del" || tag === "mc:Fallback" || tag === "w:pPr") continue
      if (tag === "w:t") {
        const text = find([node], "#text")
        out += text ? String(text["#text"] ?? "") : ""
      } else if (tag === "w:tab") out += "\t"
      else visit(childrenOf(node))
    }
  }
  visit(childrenOf(p))
  return out
}
