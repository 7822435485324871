/**
 * Word list numbers as the document shows them: Word counts from the level's `w:start` (or a
 * `w:startOverride`), and a list interrupted by other paragraphs goes on counting. Read from
 * `word/numbering.xml`; a level whose format is `bullet` or `none` is unordered.
 */
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

/** A list paragraph's number as Word shows it, and whether its level is ordered. */
export interface ListNumber {
  readonly number: number
  readonly ordered: boolean
}

/**
 * The list counters of a document (`word/numbering.xml` parsed): called for each list
 * paragraph in document order with its `numId` and level, it gives the number Word shows for
 * it. Lists of one abstract definition share their counters (Word's rule: an interrupted list
 * goes on counting) unless a `w:num` overrides a level's start, which restarts that level
 * where the num is first used. Undefined for `numId` 0 (no list) and an unknown list or level.
 */
export const listNumbering = (numbering: ReadonlyArray<XNode>): (numId: string, ilvl: number) => ListNumber | undefined => {
  const n = readNumbering(numbering)
  const counters = new Map<string, Array<number | undefined>>()
  const usedNums = new Set<string>()
  return (numId, ilvl) => {
    if (numId === "0") return undefined
    const abs = n.abstractOf.get(numId)
    const level = abs === undefined ? undefined : n.levels.get(abs)?.get(ilvl)
    if (abs === undefined || level === undefined) return undefined
    const counter = counters.get(abs) ?? []
    counters.set(abs, counter)
    if (!usedNums.has(numId)) {
      usedNums.add(numId)
      for (const [l, start] of n.overrides.get(numId) ?? []) counter[l] = start - 1
    }
    counter[ilvl] = counter[ilvl] === undefined ? level.start : counter[ilvl]! + 1
    for (let deeper = ilvl + 1; deeper < counter.length; deeper++) counter[deeper] = undefined
    return { number: counter[ilvl]!, ordered: level.ordered }
  }
}
