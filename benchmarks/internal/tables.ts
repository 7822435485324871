/**
 * Cell-level quality of the tables an extractor writes as Markdown, against reference grids
 * (benchmarks/README.md, "PDF tables"). A cell is its row, its column and its normalised text;
 * a predicted cell matches a reference cell when, after aligning the predicted table to the
 * reference table (rows, then columns, each by a monotone alignment that maximises agreeing
 * cells), both are at the same aligned row and column and their texts are equal. Empty cells
 * are not counted.
 */

/** A reference table: its rows of cell texts and whether the source draws its borders. */
export interface RefTable {
  readonly ruled: boolean
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
}

/** Counts of one document or one class of tables. */
export interface CellCounts {
  /** Non-empty predicted cells, non-empty reference cells, matching cells. */
  predicted: number
  reference: number
  matched: number
}

/** Whitespace collapsed, compatibility forms folded (NFKC), soft hyphens dropped. */
export const normalise = (s: string): string => s.normalize("NFKC").replace(/\u00ad/g, "").replace(/\s+/g, " ").trim()

/** The cells of one Markdown table row (`| a | b \| c |`), unescaped. */
const rowCells = (line: string): Array<string> => {
  const inner = line.trim().replace(/^\|/, "").replace(/\|$/, "")
  const cells: Array<string> = []
  let cur = ""
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i]!
    if (ch === "\\" && inner[i + 1] === "|") {
      cur += "|"
      i++
    } else if (ch === "|") {
      cells.push(cur)
      cur = ""
    } else cur += ch
  }
  cells.push(cur)
  return cells.map(normalise)
}

const separator = /^\|(\s*:?-{3,}:?\s*\|)+\s*$/

/** The Markdown tables of a text (a header row, a `| --- |` row, body rows), as rows of cells. */
export const markdownTables = (text: string): Array<Array<Array<string>>> => {
  const lines = text.split("\n")
  const out: Array<Array<Array<string>>> = []
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.trim().startsWith("|") || !separator.test(lines[i + 1]!.trim())) continue
    const rows = [rowCells(lines[i]!)]
    let j = i + 2
    while (j < lines.length && lines[j]!.trim().startsWith("|")) rows.push(rowCells(lines[j++]!))
    out.push(rows)
    i = j - 1
  }
  return out
}

const filled = (rows: ReadonlyArray<ReadonlyArray<string>>) => rows.reduce((n, r) => n + r.filter((c) => c !== "").length, 0)

/** Common non-empty texts of two rows (as multisets). */
const common = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): number => {
  const bag = new Map<string, number>()
  for (const c of b) if (c !== "") bag.set(c, (bag.get(c) ?? 0) + 1)
  let n = 0
  for (const c of a) {
    const k = bag.get(c) ?? 0
    if (c !== "" && k > 0) {
      n++
      bag.set(c, k - 1)
    }
  }
  return n
}

/** A monotone one-to-one alignment of 0..n-1 to 0..m-1 maximising the summed weights. */
const align = (n: number, m: number, weight: (i: number, j: number) => number): Array<readonly [number, number]> => {
  const best = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0))
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      best[i]![j] = Math.max(best[i - 1]![j]!, best[i]![j - 1]!, best[i - 1]![j - 1]! + weight(i - 1, j - 1))
    }
  }
  const pairs: Array<readonly [number, number]> = []
  for (let i = n, j = m; i > 0 && j > 0;) {
    if (best[i]![j] === best[i - 1]![j]) i--
    else if (best[i]![j] === best[i]![j - 1]) j--
    else {
      pairs.push([i - 1, j - 1])
      i--
      j--
    }
  }
  return pairs.reverse()
}

/** Matching cells of a predicted grid against a reference grid, after aligning rows, then columns. */
export const matchedCells = (pred: ReadonlyArray<ReadonlyArray<string>>, ref: ReadonlyArray<ReadonlyArray<string>>): number => {
  const rows = align(pred.length, ref.length, (i, j) => common(pred[i]!, ref[j]!))
  const pw = Math.max(0, ...pred.map((r) => r.length))
  const rw = Math.max(0, ...ref.map((r) => r.length))
  const agree = (c: number, d: number) => rows.filter(([i, j]) => (pred[i]![c] ?? "") !== "" && pred[i]![c] === ref[j]![d]).length
  const cols = align(pw, rw, agree)
  return cols.reduce((n, [c, d]) => n + agree(c, d), 0)
}

/**
 * Predicted tables to reference tables in document order: a non-decreasing assignment (several
 * predicted tables may go to one reference table, a table split across pages) maximising the
 * shared cell texts, a new reference table preferred on a tie; -1 for none.
 */
const assign = (score: ReadonlyArray<ReadonlyArray<number>>): Array<number> => {
  const r = score[0]?.length ?? 0
  // best[k + 1]: the best total with the last assigned reference table k (-1: none yet)
  let best: Array<{ total: number; path: Array<number> }> = Array.from({ length: r + 1 }, (_, k) => ({ total: k === 0 ? 0 : -Infinity, path: [] }))
  for (const row of score) {
    const next = best.map((b) => ({ total: b.total, path: [...b.path, -1] }))
    for (let k = -1; k < r; k++) {
      const from = best[k + 1]!
      if (from.total === -Infinity) continue
      for (let j = Math.max(0, k); j < r; j++) {
        if (row[j]! <= 0) continue
        const total = from.total + row[j]! + (j !== k ? 1e-3 : 0)
        if (total > next[j + 1]!.total) next[j + 1] = { total, path: [...from.path, j] }
      }
    }
    // the best so far may also end at an earlier table
    best = next
  }
  return best.reduce((a, b) => (b.total > a.total ? b : a)).path
}

/**
 * One document: the predicted tables are assigned to reference tables ({@link assign}); the
 * predicted tables of a reference table are read as one (a table split across pages), in their
 * order. Counts per class of reference
 * table (`ruled`, `unruled`) and `unassigned` (predicted cells of tables that match no table:
 * they lower the overall precision only).
 */
export const documentCounts = (
  predicted: ReadonlyArray<ReadonlyArray<ReadonlyArray<string>>>,
  reference: ReadonlyArray<RefTable>
): { ruled: CellCounts; unruled: CellCounts; unassigned: number } => {
  const refs = reference.filter(isTable).map((t) => ({ ruled: t.ruled, rows: t.rows.map((r) => r.map(normalise)) }))
  const bags = refs.map((t) => t.rows.flat())
  const assigned = refs.map(() => [] as Array<ReadonlyArray<string>>)
  const target = assign(predicted.map((p) => bags.map((b) => common(p.flat(), b))))
  let unassigned = 0
  predicted.forEach((p, i) => {
    const k = target[i]!
    if (k < 0) unassigned += filled(p)
    else assigned[k]!.push(...p)
  })
  const ruled: CellCounts = { predicted: 0, reference: 0, matched: 0 }
  const unruled: CellCounts = { predicted: 0, reference: 0, matched: 0 }
  refs.forEach((t, k) => {
    const c = t.ruled ? ruled : unruled
    c.reference += filled(t.rows)
    c.predicted += filled(assigned[k]!)
    c.matched += matchedCells(assigned[k]!, t.rows)
  })
  return { ruled, unruled, unassigned }
}

/**
 * A reference table counts when it has text in at least two rows and two columns: a one-column
 * or one-row "table" is a framed paragraph or a layout device, not rows and columns of data.
 */
export const isTable = (t: RefTable): boolean =>
  t.rows.filter((r) => r.some((c) => c.trim() !== "")).length >= 2 &&
  new Set(t.rows.flatMap((r) => r.flatMap((c, i) => (c.trim() !== "" ? [i] : [])))).size >= 2

/** Precision, recall and F1 of counts. */
export const scores = (c: CellCounts) => {
  const precision = c.predicted === 0 ? 0 : c.matched / c.predicted
  const recall = c.reference === 0 ? 0 : c.matched / c.reference
  return { precision, recall, f1: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall) }
}
