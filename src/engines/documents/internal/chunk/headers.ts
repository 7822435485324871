/**
 * `remove_headers`: lines that repeat at the top or bottom of most pages (running heads, page
 * numbers, footers) are dropped. Digits are ignored when lines are compared, so "Page 3 of 9"
 * repeats. Documents of fewer than 3 pages are left alone. Markdown table rows are never
 * dropped: a table that runs over several pages repeats its header row at the top of each, and
 * dropping it would leave its `| --- |` line without a header (the table lost).
 */

const edge = 3

const norm = (line: string) => line.replace(/\d+/g, "#").replace(/\s+/g, " ").trim().toLowerCase()

/** A line that may be a running head or foot: not blank, not a Markdown table row. */
const candidate = (line: string) => {
  const t = line.trim()
  return t !== "" && !t.startsWith("|")
}

/** Returns the pages with repeating header/footer lines removed, and how many lines went. */
export const removeRepeatedLines = (pages: ReadonlyArray<string>): { pages: Array<string>; removed: number } => {
  if (pages.length < 3) return { pages: [...pages], removed: 0 }
  const split = pages.map((p) => p.split("\n"))
  const regions = split.map((lines) => {
    const idx = lines.map((l, i) => [l, i] as const).filter(([l]) => candidate(l))
    return { top: idx.slice(0, edge), bottom: idx.slice(-edge) }
  })
  const count = (which: "top" | "bottom") => {
    const seen = new Map<string, number>()
    for (const r of regions) {
      for (const key of new Set(r[which].map(([l]) => norm(l)))) seen.set(key, (seen.get(key) ?? 0) + 1)
    }
    return seen
  }
  const threshold = Math.max(3, Math.ceil(pages.length * 0.6))
  const top = count("top")
  const bottom = count("bottom")
  let removed = 0
  const out = split.map((lines, p) => {
    const drop = new Set<number>()
    for (const [l, i] of regions[p]!.top) if ((top.get(norm(l)) ?? 0) >= threshold && norm(l) !== "") drop.add(i)
    for (const [l, i] of regions[p]!.bottom) if ((bottom.get(norm(l)) ?? 0) >= threshold && norm(l) !== "") drop.add(i)
    removed += drop.size
    return lines.filter((_, i) => !drop.has(i)).join("\n")
  })
  return { pages: out, removed }
}
