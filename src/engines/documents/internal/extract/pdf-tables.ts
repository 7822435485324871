/**
 * Tables on a PDF page, rebuilt from the positions of its text items and the lines it draws.
 *
 * - Ruled tables: the page's horizontal and vertical strokes (and hairline-thin filled
 *   rectangles) that touch each other form a grid; a grid of at least two columns and two rows
 *   is a table, each text item goes to the cell its centre falls in. A frame of horizontal rules
 *   only (no vertical lines) gives the rows; its columns come from the white stripes between the
 *   text, as for an unruled table.
 * - Unruled tables: a run of consecutive lines whose text falls into columns separated by white
 *   stripes through every line (at least a line height wide). Conservative on purpose: at least
 *   three rows, and at most one column of long text, so two columns of prose are never a table.
 *
 * A line of a multi-line cell joins its row. {@link pageParts} returns the page as text lines
 * and tables in reading order; {@link joinContinued} merges a table that goes on at the top of
 * the next page with its header row repeated.
 */
import { isUpright, maxOf, minOf, type PositionedItem } from "./layout.js"
import { markdownTable } from "./markdown.js"

/** An axis-aligned line the page draws, in page space (y grows upwards). */
export interface Rule {
  readonly x0: number
  readonly y0: number
  readonly x1: number
  readonly y1: number
}

/** A table found on a page: its box (page space) and its rows of cell texts; row 0 is the header. */
export interface Table {
  readonly x0: number
  readonly x1: number
  readonly top: number
  readonly bottom: number
  readonly ruled: boolean
  readonly rows: Array<Array<string>>
}

interface Box<I> {
  readonly item: I
  readonly x0: number
  readonly x1: number
  readonly base: number
  readonly h: number
}

const boxOf = <I extends PositionedItem>(item: I): Box<I> => {
  const x = item.transform[4] ?? 0
  return { item, x0: x, x1: x + Math.max(0, item.width), base: item.transform[5] ?? 0, h: Math.abs(item.height || item.transform[3] || 0) || 10 }
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)]!
}

/**
 * Whether a line of text is a figure's glyphs rather than words: mostly private-use, control or
 * replacement characters (a font without a usable ToUnicode map), or symbols with no two lower-case letters
 * in a row among them (`…47>F/# N:FF#O6:,/#`).
 */
export const isGlyphSoup = (line: string): boolean => {
  const s = line.replace(/\s/g, "")
  if (s.length < 4) return false
  const bad = s.match(/[\p{Co}\p{Cc}\p{Cn}\uFFFD]/gu)?.length ?? 0
  if (bad / s.length > 0.3) return true
  if (s.length < 8 || /\p{Ll}{2}/u.test(s)) return false
  const symbols = s.match(/[#$%&*+/<=>@\\^_`{|}~]/g)?.length ?? 0
  return symbols / s.length >= 0.25
}

// =============================================================================
// The lines a page draws
// =============================================================================

type Matrix = readonly [number, number, number, number, number, number]
const identity: Matrix = [1, 0, 0, 1, 0, 0]
const multiply = (m: Matrix, n: Matrix): Matrix => [
  m[0] * n[0] + m[2] * n[1],
  m[1] * n[0] + m[3] * n[1],
  m[0] * n[2] + m[2] * n[3],
  m[1] * n[2] + m[3] * n[3],
  m[0] * n[4] + m[2] * n[5] + m[4],
  m[1] * n[4] + m[3] * n[5] + m[5]
]
const apply = (m: Matrix, x: number, y: number): [number, number] => [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]]

/** Thicker than this, a filled rectangle is a shape (a shaded cell), not a line. */
const hairline = 2.5

/** A rule from two points when the segment is horizontal or vertical, else undefined. */
const ruleOf = (a: readonly [number, number], b: readonly [number, number]): Rule | undefined => {
  const horizontal = Math.abs(a[1] - b[1]) < 0.8
  const vertical = Math.abs(a[0] - b[0]) < 0.8
  if (horizontal === vertical) return undefined
  const r = { x0: Math.min(a[0], b[0]), x1: Math.max(a[0], b[0]), y0: Math.min(a[1], b[1]), y1: Math.max(a[1], b[1]) }
  return r.x1 - r.x0 + (r.y1 - r.y0) >= 3 ? r : undefined
}

interface Path {
  readonly segments: Array<readonly [readonly [number, number], readonly [number, number]]>
  readonly rects: Array<ReadonlyArray<readonly [number, number]>>
}

/** Adds one `constructPath` (pdf.js 4: sub-path operators and their coordinates) to a path. */
const addPath = (path: Path, ops: ReadonlyArray<number>, coords: ReadonlyArray<number>, m: Matrix, OPS: Record<string, number>) => {
  let k = 0
  let start: [number, number] | undefined
  let cur: [number, number] | undefined
  for (const op of ops) {
    if (op === OPS.rectangle) {
      const [x, y, w, h] = coords.slice(k, k + 4) as [number, number, number, number]
      k += 4
      path.rects.push([apply(m, x, y), apply(m, x + w, y), apply(m, x + w, y + h), apply(m, x, y + h)])
    } else if (op === OPS.moveTo) {
      cur = start = apply(m, coords[k]!, coords[k + 1]!)
      k += 2
    } else if (op === OPS.lineTo) {
      const next = apply(m, coords[k]!, coords[k + 1]!)
      k += 2
      if (cur) path.segments.push([cur, next])
      cur = next
    } else if (op === OPS.curveTo) k += 6
    else if (op === OPS.curveTo2 || op === OPS.curveTo3) k += 4
    else if (op === OPS.closePath && cur && start) {
      path.segments.push([cur, start])
      cur = start
    }
  }
}

/** The rules of a painted path: every edge when stroked, thin rectangles when filled. */
const paint = (path: Path, stroked: boolean, out: Array<Rule>) => {
  if (stroked) {
    for (const [a, b] of path.segments) {
      const r = ruleOf(a, b)
      if (r) out.push(r)
    }
  }
  for (const q of path.rects) {
    const xs = q.map((p) => p[0])
    const ys = q.map((p) => p[1])
    const [x0, x1, y0, y1] = [minOf(xs), maxOf(xs), minOf(ys), maxOf(ys)]
    if (stroked) {
      for (let i = 0; i < 4; i++) {
        const r = ruleOf(q[i]!, q[(i + 1) % 4]!)
        if (r) out.push(r)
      }
    } else if (y1 - y0 <= hairline && x1 - x0 > y1 - y0) out.push({ x0, x1, y0: (y0 + y1) / 2, y1: (y0 + y1) / 2 })
    else if (x1 - x0 <= hairline && y1 - y0 > x1 - x0) out.push({ x0: (x0 + x1) / 2, x1: (x0 + x1) / 2, y0, y1 })
  }
}

/**
 * The horizontal and vertical lines a page's operator list draws (stroked paths, the edges of
 * stroked rectangles, hairline filled rectangles), in page space.
 */
export const rulesOf = (
  list: { readonly fnArray: ReadonlyArray<number>; readonly argsArray: ReadonlyArray<unknown> },
  OPS: Record<string, number>
): Array<Rule> => {
  const out: Array<Rule> = []
  const stack: Array<Matrix> = []
  let m = identity
  let path: Path = { segments: [], rects: [] }
  const strokes = new Set([OPS.stroke, OPS.closeStroke, OPS.fillStroke, OPS.eoFillStroke, OPS.closeFillStroke, OPS.closeEOFillStroke])
  const fills = new Set([OPS.fill, OPS.eoFill])
  for (let i = 0; i < list.fnArray.length && out.length < 20_000; i++) {
    const fn = list.fnArray[i]!
    const args = list.argsArray[i] as Array<unknown> | null
    if (fn === OPS.save) stack.push(m)
    else if (fn === OPS.restore) m = stack.pop() ?? identity
    else if (fn === OPS.transform && args) m = multiply(m, args as unknown as Matrix)
    else if (fn === OPS.paintFormXObjectBegin && args) {
      stack.push(m)
      if (Array.isArray(args[0]) && args[0].length === 6) m = multiply(m, args[0] as unknown as Matrix)
    } else if (fn === OPS.paintFormXObjectEnd) m = stack.pop() ?? identity
    else if (fn === OPS.constructPath && args) {
      addPath(path, args[0] as Array<number>, args[1] as Array<number>, m, OPS)
    } else if (strokes.has(fn) || fills.has(fn) || fn === OPS.endPath) {
      if (fn !== OPS.endPath) paint(path, strokes.has(fn), out)
      path = { segments: [], rects: [] }
    }
  }
  return out
}

// =============================================================================
// Grids of rules
// =============================================================================

const isHorizontal = (r: Rule) => r.y1 - r.y0 < 1
const touch = 2

const touches = (a: Rule, b: Rule): boolean =>
  a.x0 <= b.x1 + touch && b.x0 <= a.x1 + touch && a.y0 <= b.y1 + touch && b.y0 <= a.y1 + touch

/** Groups of rules that touch each other (union-find). */
const groups = (rules: ReadonlyArray<Rule>): Array<Array<Rule>> => {
  const parent = rules.map((_, i) => i)
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)))
  for (let i = 0; i < rules.length; i++) {
    for (let j = i + 1; j < rules.length; j++) if (touches(rules[i]!, rules[j]!)) parent[find(i)] = find(j)
  }
  const by = new Map<number, Array<Rule>>()
  rules.forEach((r, i) => {
    const g = by.get(find(i))
    if (g) g.push(r)
    else by.set(find(i), [r])
  })
  return [...by.values()]
}

/** Distinct positions (within `tol`), ascending. */
const distinct = (xs: ReadonlyArray<number>, tol = 2.5): Array<number> => {
  const out: Array<number> = []
  for (const x of [...xs].sort((a, b) => a - b)) if (out.length === 0 || x - out[out.length - 1]! > tol) out.push(x)
  return out
}

/** A grid of rules: column edges (ascending x) and row edges (descending y). */
interface Grid {
  readonly xs: ReadonlyArray<number>
  readonly ys: ReadonlyArray<number>
  /** Columns come from the rules (false: from the white stripes between the text). */
  readonly vertical: boolean
}

const gridOf = (rules: ReadonlyArray<Rule>): Grid | undefined => {
  const hs = rules.filter(isHorizontal)
  const vs = rules.filter((r) => !isHorizontal(r))
  if (hs.length === 0) return undefined
  const left = minOf(rules.map((r) => r.x0))
  const right = maxOf(rules.map((r) => r.x1))
  if (right - left < 50) return undefined
  const ys = distinct([...hs.map((r) => r.y0), ...vs.flatMap((r) => [r.y0, r.y1])]).reverse()
  const xs = distinct([left, right, ...vs.map((r) => r.x0)])
  if (vs.length > 0 && xs.length >= 3 && ys.length >= 3) return { xs, ys, vertical: true }
  // horizontal rules only: at least three of about the same length
  const long = hs.filter((r) => r.x1 - r.x0 >= (right - left) * 0.9)
  if (vs.length === 0 && distinct(long.map((r) => r.y0)).length >= 3) return { xs: [left, right], ys: distinct(long.map((r) => r.y0)).reverse(), vertical: false }
  return undefined
}

// =============================================================================
// Cells
// =============================================================================

/** A line of a cell's text and its extent. */
interface TextLine {
  readonly text: string
  readonly x0: number
  readonly x1: number
}

/**
 * A line's items in reading order: left to right, or right to left when the line is mostly
 * right-to-left script (pdf.js gives each item's text in logical order, the items in drawing
 * order: "1", "-", "معلومات عامة" read "1 - معلومات عامة" from the right).
 */
const inLineOrder = <I extends PositionedItem>(line: ReadonlyArray<Box<I>>): Array<Box<I>> => {
  const text = line.map((b) => b.item.str).join("")
  const rightToLeft = (text.match(rtl)?.length ?? 0) > (text.match(ltr)?.length ?? 0)
  return [...line].sort((a, c) => (rightToLeft ? c.x1 - a.x1 : a.x0 - c.x0))
}

/** A cell's items as lines of text (top to bottom, left to right), glyph soup left out. */
const cellLines = <I extends PositionedItem>(boxes: ReadonlyArray<Box<I>>): Array<TextLine> => {
  const sorted = [...boxes].sort((a, b) => b.base - a.base || a.x0 - b.x0)
  const lines: Array<Array<Box<I>>> = []
  for (const b of sorted) {
    const last = lines[lines.length - 1]
    if (last && Math.abs(last[0]!.base - b.base) <= Math.max(b.h, last[0]!.h) * 0.5) last.push(b)
    else lines.push([b])
  }
  return lines
    .map((l) => {
      let out = ""
      let prev: Box<I> | undefined
      const seen = inLineOrder(l.filter(visible))
      for (const b of seen) {
        // the gap to the item before, on whichever side it is
        const gap = prev === undefined ? 0 : Math.max(b.x0 - prev.x1, prev.x0 - b.x1)
        if (prev !== undefined && gap > b.h * 0.15 && !out.endsWith(" ") && !b.item.str.startsWith(" ")) out += " "
        out += b.item.str
        prev = b
      }
      const text = out.replace(/\s+/g, " ").trim()
      return { text, x0: minOf(seen.map((b) => b.x0)), x1: maxOf(seen.map((b) => b.x1)) }
    })
    .filter((l) => l.text !== "" && !isGlyphSoup(l.text))
}

/**
 * Whether a cell's line `b` goes on with the word that ends line `a`, with no space: `a` ends
 * in a hyphen after a letter or digit (or is a minus sign) and `b` starts with one ("Chi-" and
 * "Square", "-" and "10.98"); or `a` is one word as wide as the column's widest line (within a
 * character), broken there for lack of room: it ends in a letter and `b` starts in lower case
 * ("Surviv" and "al"), or it is a number and `b` starts with a narrower run of digits ("0.000"
 * and "0", "39524." and "5", "007" and "F"; two numbers stacked in a cell, "11:20" over
 * "11:25", "2004" over "2005", stay apart).
 */
const runsOn = (a: TextLine, b: TextLine, width: number): boolean => {
  if (/(?:^|[\p{L}\p{N}])-$/u.test(a.text) && /^[\p{L}\p{N}]/u.test(b.text)) return true
  const w = a.x1 - a.x0
  if (/\s/.test(a.text) || w < width - w / a.text.length) return false
  if (/\p{L}$/u.test(a.text) && /^\p{Ll}/u.test(b.text)) return true
  // a number (decimal, or hexadecimal in capitals) goes on with the digits its next line starts with
  const next = b.text.split(" ")[0]!
  const nextWidth = (b.x1 - b.x0) * (next.length / b.text.length)
  return /^[-+]?[\p{N}A-F]*[.,]?[\p{N}A-F]*$/u.test(a.text) && /\p{N}/u.test(a.text) && /^[\p{N}A-F]+$/u.test(next) && nextWidth < w * 0.75
}

/** A cell's text from its lines, one line after the other ({@link runsOn}); `width`: the room in its column. */
const joinLines = (lines: ReadonlyArray<TextLine>, width: number): string =>
  lines.reduce((out, l, i) => (i === 0 ? l.text : out + (runsOn(lines[i - 1]!, l, width) ? "" : " ") + l.text), "")

/** A cell's text, its lines joined as in a column as wide as its widest line. */
const cellText = <I extends PositionedItem>(boxes: ReadonlyArray<Box<I>>): string => {
  const lines = cellLines(boxes)
  return joinLines(lines, Math.max(0, maxOf(lines.map((l) => l.x1 - l.x0))))
}

/** The texts of a grid of cells (rows of columns of items), each column's widest line known to its cells. */
const gridText = <I extends PositionedItem>(
  grid: ReadonlyArray<ReadonlyArray<ReadonlyArray<Box<I>>>>,
  widths: ReadonlyArray<number> = columnWidths(grid)
): Array<Array<string>> => grid.map((row) => row.map((cell, c) => joinLines(cellLines(cell), widths[c]!)))

/**
 * The room for text in each column between ruled edges `xs`: the column's width less its
 * text's inset from the left edge on both sides (the cell padding).
 */
const ruledWidths = <I extends PositionedItem>(grid: ReadonlyArray<ReadonlyArray<ReadonlyArray<Box<I>>>>, xs: ReadonlyArray<number>): Array<number> =>
  xs.slice(1).map((right, c) => {
    const inset = minOf(grid.flatMap((row) => (row[c] ?? []).map((b) => b.x0 - xs[c]!)))
    return right - xs[c]! - 2 * Math.max(0, Number.isFinite(inset) ? inset : 0)
  })

const rtl = /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]/gu
const ltr = /[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]/g

/** A table written right to left (mostly Hebrew or Arabic script) has its first column on the right. */
const logicalOrder = (rows: Array<Array<string>>): Array<Array<string>> => {
  const text = rows.flat().join("")
  return (text.match(rtl)?.length ?? 0) > (text.match(ltr)?.length ?? 0) ? rows.map((r) => [...r].reverse()) : rows
}

/** Drops the columns and rows that are empty in every row and column. */
const compact = (rows: Array<Array<string>>): Array<Array<string>> => {
  const kept = rows.filter((r) => r.some((c) => c !== ""))
  const width = Math.max(0, maxOf(kept.map((r) => r.length)))
  const cols = Array.from({ length: width }, (_, c) => c).filter((c) => kept.some((r) => (r[c] ?? "") !== ""))
  return kept.map((r) => cols.map((c) => r[c] ?? ""))
}

/**
 * Whether a grid of rules holds a table rather than a form's boxes: at most 15 columns, and at
 * least 40% of its cells hold text.
 */
const isDense = (rows: ReadonlyArray<ReadonlyArray<string>>): boolean => {
  const width = rows[0]?.length ?? 0
  const filled = rows.reduce((n, r) => n + r.filter((c) => c !== "").length, 0)
  return width <= 15 && filled >= rows.length * width * 0.4
}

/** Index of the interval of `edges` (ascending) that holds `v`, or -1. */
const slot = (edges: ReadonlyArray<number>, v: number): number => {
  for (let i = 0; i + 1 < edges.length; i++) if (v >= edges[i]! && v <= edges[i + 1]!) return i
  return -1
}

/** White stripes through all boxes (x intervals no box covers) at least `gap` wide, inside their span. */
const stripes = <I>(boxes: ReadonlyArray<Box<I>>, gap: number): Array<number> => {
  const sorted = [...boxes].sort((a, b) => a.x0 - b.x0)
  const out: Array<number> = []
  let right = -Infinity
  for (const b of sorted) {
    if (right !== -Infinity && b.x0 - right >= gap) out.push((right + b.x0) / 2)
    right = Math.max(right, b.x1)
  }
  return out
}

const visible = <I extends PositionedItem>(b: Box<I>) => b.item.str.trim() !== ""

/** Appends `xs` to `into` in a loop (`push(...xs)` throws a RangeError past about 120,000 elements). */
const append = <T>(into: Array<T>, xs: ReadonlyArray<T>): void => {
  for (const x of xs) into.push(x)
}

/** The table of a grid, and the boxes it takes; undefined when it holds too little text. */
const gridTable = <I extends PositionedItem>(grid: Grid, boxes: ReadonlyArray<Box<I>>): { table: Table; used: Set<Box<I>> } | undefined => {
  const top = grid.ys[0]!
  const bottom = grid.ys[grid.ys.length - 1]!
  const x0 = grid.xs[0]!
  const x1 = grid.xs[grid.xs.length - 1]!
  const inside = boxes.filter((b) => {
    const cx = (b.x0 + b.x1) / 2
    const cy = b.base + b.h * 0.3
    return cx >= x0 && cx <= x1 && cy <= top && cy >= bottom
  })
  const words = inside.filter(visible)
  if (words.length === 0) return undefined
  const h = median(words.map((b) => b.h))
  const xs = grid.vertical ? grid.xs : [x0, ...stripes(words, h * 0.8), x1]
  const ysUp = [...grid.ys].reverse()
  const cells = new Map<string, Array<Box<I>>>()
  for (const b of words) {
    const c = slot(xs, Math.min(b.x0 + 1, (b.x0 + b.x1) / 2))
    const r = grid.ys.length - 2 - slot(ysUp, b.base + b.h * 0.3)
    if (c < 0 || r < 0 || r >= grid.ys.length - 1) continue
    const cell = cells.get(`${r},${c}`)
    if (cell) cell.push(b)
    else cells.set(`${r},${c}`, [b])
  }
  const boxGrid = Array.from({ length: grid.ys.length - 1 }, (_, r) => Array.from({ length: xs.length - 1 }, (_, c) => cells.get(`${r},${c}`) ?? []))
  const rows = logicalOrder(compact(
    gridText(boxGrid, grid.vertical ? ruledWidths(boxGrid, xs) : undefined)
  ))
  if (rows.length < 2 || (rows[0]?.length ?? 0) < 2 || !isDense(rows)) return undefined
  return { table: { x0, x1, top, bottom, ruled: true, rows }, used: new Set(inside) }
}

// =============================================================================
// Unruled tables
// =============================================================================

interface Line<I> {
  readonly boxes: Array<Box<I>>
  readonly base: number
  readonly h: number
}

const linesOf = <I extends PositionedItem>(boxes: ReadonlyArray<Box<I>>): Array<Line<I>> => {
  const sorted = [...boxes].sort((a, b) => b.base - a.base || a.x0 - b.x0)
  const out: Array<Array<Box<I>>> = []
  for (const b of sorted) {
    const last = out[out.length - 1]
    if (last && Math.abs(last[0]!.base - b.base) <= Math.max(b.h, last[0]!.h) * 0.5) last.push(b)
    else out.push([b])
  }
  return out.map((l) => ({ boxes: l.sort((a, b) => a.x0 - b.x0), base: l[0]!.base, h: median(l.map((b) => b.h)) }))
}

/** The x spans of a line's text separated by gaps of at least `gap`. */
const chunks = <I extends PositionedItem>(line: Line<I>, gap: number): Array<readonly [number, number]> => {
  const out: Array<[number, number]> = []
  for (const b of line.boxes) {
    const last = out[out.length - 1]
    if (last && b.x0 - last[1] < gap) last[1] = Math.max(last[1], b.x1)
    else out.push([b.x0, b.x1])
  }
  return out
}

/** Cells at most this long (median) make a key or number column. */
const shortCell = 15

/**
 * Whether unruled "rows" are lines of prose set in columns: no column of short cells (a table
 * has a column of keys or numbers), a column of long lines that mostly start in lower case
 * (sentences running on from the line above: prose beside a figure), or two columns of lines
 * that mostly start in lower case (a column of single letters is keys, not prose); or a code
 * listing (a column of comments).
 */
const isProse = (text: ReadonlyArray<ReadonlyArray<string>>, width: number): boolean => {
  const columns = Array.from({ length: width }, (_, c) => text.map((r) => r[c]!).filter((t) => t !== ""))
  if (!columns.some((col) => median(col.map((t) => t.length)) <= shortCell)) return true
  // a code listing with its comments aligned
  if (columns.some((col) => col.length >= 2 && col.filter((t) => /^(?:\/\/|\/\*|#|--|;)/.test(t)).length >= (col.length * 2) / 3)) return true
  const running = (col: ReadonlyArray<string>) => col.filter((t) => /^\p{Ll}/u.test(t)).length >= col.length / 2
  // a column of single letters ("a", "e", "i") is a column of keys, not lines of prose
  const letters = (col: ReadonlyArray<string>) => col.every((t) => [...t].length === 1)
  // a column of lines running on from each other, or two columns whose lines mostly start in lower case
  return columns.some((col) => running(col) && median(col.map((t) => t.length)) > 25) || columns.filter((col) => running(col) && !letters(col)).length >= 2
}

/** A list marker: a bullet, or a number or letter with its "." or ")". */
const marker = /^(?:[\p{P}\p{S}\p{Co}]|\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)])$/iu

/**
 * A bulleted or numbered list set with a hanging indent: its first column is all list markers,
 * or one character over and over (a bullet drawn as a letter of a symbol font, "o").
 */
const isList = (rows: ReadonlyArray<ReadonlyArray<string>>): boolean => {
  const first = rows.map((r) => r[0] ?? "").filter((c) => c !== "")
  return first.length === 0 || first.every((c) => marker.test(c)) || (first[0]!.length === 1 && first.every((c) => c === first[0]))
}

/**
 * Whether a line of an unruled table continues the row above (its cells wrapped): each of its
 * cells is under text of the line above, and its first cell is empty, or it has fewer cells
 * than the line above, or all of them start in lower case (a word broken in a narrow column);
 * never under a line of single characters (a table of letters or keys, "e f g h" over
 * "i j k" or "f g" under "b c", has a row per line: one character does not wrap).
 */
const wraps = <I extends PositionedItem>(cells: ReadonlyArray<ReadonlyArray<Box<I>>>, above: ReadonlyArray<ReadonlyArray<Box<I>>>): boolean => {
  if (!cells.every((c, i) => c.length === 0 || above[i]!.length > 0)) return false
  if (above.every((c) => cellText(c).length <= 1)) return false
  if (cells[0]!.length === 0) return true
  const count = (cs: ReadonlyArray<ReadonlyArray<unknown>>) => cs.filter((c) => c.length > 0).length
  const lower = cells.every((c) => c.length === 0 || /^\p{Ll}/u.test(c[0]!.item.str.trim()))
  return count(cells) < count(above) || lower
}

/** The width of each column's widest line of text. */
const columnWidths = <I extends PositionedItem>(grid: ReadonlyArray<ReadonlyArray<ReadonlyArray<Box<I>>>>): Array<number> =>
  (grid[0] ?? []).map((_, c) => Math.max(0, maxOf(grid.flatMap((row) => cellLines(row[c] ?? []).map((l) => l.x1 - l.x0)))))

/**
 * Whether a line of an unruled table goes on with a word the line above broke for lack of room
 * in some column: that cell above is one word as wide as the column, ending in three letters
 * (a single letter is a key, not a broken word), and the cell below starts in lower case
 * ("Stratu" and "m").
 */
const brokenWord = <I extends PositionedItem>(
  cells: ReadonlyArray<ReadonlyArray<Box<I>>>,
  above: ReadonlyArray<ReadonlyArray<Box<I>>>,
  widths: ReadonlyArray<number>
): boolean =>
  cells.some((c, k) => {
    const [a] = cellLines(above[k]!)
    const [b] = cellLines(c)
    return a !== undefined && b !== undefined && /\p{L}{3}$/u.test(a.text) && /^\p{Ll}/u.test(b.text) && runsOn(a, b, widths[k]!)
  })

/**
 * Whether a column is justified prose: two or more lines of more than 25 characters, of which two
 * thirds end at the same x (within 1.5 pt), as the lines of a justified paragraph do.
 */
const hasJustified = <I extends PositionedItem>(grid: ReadonlyArray<ReadonlyArray<ReadonlyArray<Box<I>>>>): boolean =>
  (grid[0] ?? []).some((_, c) => {
    const ends = grid
      .map((cells) => cells[c]!)
      .filter((cell) => cell.reduce((n, b) => n + b.item.str.length, 0) > 25)
      .map((cell) => maxOf(cell.map((b) => b.x1)))
    if (ends.length < 2) return false
    const right = median(ends)
    return ends.filter((x) => Math.abs(x - right) <= 1.5).length >= (ends.length * 2) / 3
  })

/** The rows of an unruled table over `lines` split at `cuts`, or undefined when it is not one. */
const unruledRows = <I extends PositionedItem>(lines: ReadonlyArray<Line<I>>, cuts: ReadonlyArray<number>): Array<Array<string>> | undefined => {
  const edges = [-Infinity, ...cuts, Infinity]
  const grid = lines.map((l) => {
    const cells: Array<Array<Box<I>>> = edges.slice(1).map(() => [])
    for (const b of l.boxes) cells[slot(edges, (b.x0 + b.x1) / 2)]?.push(b)
    return cells
  })
  // prose is judged line by line, before wrapped lines are joined into rows
  if (isProse(grid.map((cells) => cells.map(cellText)), cuts.length + 1) || hasJustified(grid)) return undefined
  const rows: Array<Array<Array<Box<I>>>> = []
  let last: Array<Array<Box<I>>> | undefined
  const widths = columnWidths(grid)
  for (const cells of grid) {
    const prev = rows[rows.length - 1]
    if (prev && last && (wraps(cells, last) || brokenWord(cells, last, widths))) cells.forEach((c, k) => append(prev[k]!, c))
    else rows.push(cells.map((c) => [...c]))
    last = cells
  }
  const text = gridText(rows)
  if (text.length < 3 || isList(text)) return undefined
  const width = cuts.length + 1
  for (let c = 0; c < width; c++) if (text.filter((r) => r[c] !== "").length < 2) return undefined
  return logicalOrder(text)
}

const isMulti = <I extends PositionedItem>(l: Line<I>) => chunks(l, l.h).length >= 2

/** How many lines from `start` on follow each other closely (no gap of more than about a blank line). */
const closeRun = <I extends PositionedItem>(lines: ReadonlyArray<Line<I>>, start: number): number => {
  let end = start + 1
  while (end < lines.length && lines[end - 1]!.base - lines[end]!.base <= Math.max(lines[end - 1]!.h, lines[end]!.h) * 2.6) end++
  return end
}

/** The unruled table that starts at `lines[start]`, the longest first, and the index after it. */
const unruledAt = <I extends PositionedItem>(lines: ReadonlyArray<Line<I>>, start: number): { table: Table; end: number } | undefined => {
  for (let end = closeRun(lines, start); end - start >= 3; end--) {
    const span = lines.slice(start, end)
    if (!isMulti(span[span.length - 1]!) || span.filter(isMulti).length < 3) continue
    const boxes = span.flatMap((l) => l.boxes)
    const h = median(boxes.map((b) => b.h))
    const gap = Math.max(h * 0.5, 3)
    const cuts = stripes(boxes, gap)
    // a last line or two that close a column stripe of the lines above (a page footer, a note, a paragraph) are no rows
    const closes = (k: number) => end - start - k >= 3 && stripes(span.slice(0, -k).flatMap((l) => l.boxes), gap).length > cuts.length
    if (closes(1) || closes(2)) continue
    const rows = cuts.length > 0 ? unruledRows(span, cuts) : undefined
    if (!rows) continue
    const last = span[span.length - 1]!
    const x0 = minOf(boxes.map((b) => b.x0))
    const x1 = maxOf(boxes.map((b) => b.x1))
    return { table: { x0, x1, top: span[0]!.base + span[0]!.h, bottom: last.base - last.h * 0.3, ruled: false, rows }, end }
  }
  return undefined
}

/** The unruled tables among a page's lines (top to bottom) and the lines they take. */
const unruledTables = <I extends PositionedItem>(lines: ReadonlyArray<Line<I>>): Array<{ table: Table; lines: ReadonlyArray<Line<I>> }> => {
  const out: Array<{ table: Table; lines: ReadonlyArray<Line<I>> }> = []
  let i = 0
  while (i < lines.length) {
    const found = isMulti(lines[i]!) ? unruledAt(lines, i) : undefined
    if (found) {
      out.push({ table: found.table, lines: lines.slice(i, found.end) })
      i = found.end
    } else i++
  }
  return out
}

// =============================================================================
// The page
// =============================================================================

/** A page as parts in reading order: runs of text items, and tables. */
export type Part<I> = { readonly kind: "text"; readonly items: Array<I> } | { readonly kind: "table"; readonly table: Table }

/**
 * The items without those drawn again over themselves (the same text at the same place, within
 * about a point: a shadow or bold effect drawn twice), which would read twice.
 */
const once = <I extends PositionedItem>(items: ReadonlyArray<I>): Array<I> => {
  const seen = new Set<string>()
  const key = (i: I, dx: number, dy: number) => `${i.str}\u0000${Math.round(i.transform[4] ?? 0) + dx},${Math.round(i.transform[5] ?? 0) + dy}`
  return items.filter((i) => {
    if (i.str.trim() === "") return true
    if ([-1, 0, 1].some((dx) => [-1, 0, 1].some((dy) => seen.has(key(i, dx, dy))))) return false
    seen.add(key(i, 0, 0))
    return true
  })
}

/** The tables of a page and the items they do not take. */
export const findTables = <I extends PositionedItem>(items: ReadonlyArray<I>, rules: ReadonlyArray<Rule>): { tables: Array<Table>; rest: Array<I> } => {
  let boxes = items.filter(isUpright).map(boxOf)
  const tables: Array<Table> = []
  const taken = new Set<I>()
  for (const g of rules.length > 4000 ? [] : groups(rules)) {
    const grid = gridOf(g)
    const found = grid && gridTable(grid, boxes)
    if (!found) continue
    tables.push(found.table)
    for (const b of found.used) taken.add(b.item)
    boxes = boxes.filter((b) => !found.used.has(b))
  }
  const lines = linesOf(boxes.filter(visible))
  for (const found of unruledTables(lines)) {
    tables.push(found.table)
    for (const l of found.lines) for (const b of l.boxes) taken.add(b.item)
  }
  return { tables, rest: items.filter((i) => !taken.has(i)) }
}

/**
 * The page as text and tables in reading order: the text above a table, the table, the text
 * below it (an item beside a table goes before or after it by its height on the page).
 */
export const pageParts = <I extends PositionedItem>(items: ReadonlyArray<I>, rules: ReadonlyArray<Rule>): Array<Part<I>> => {
  const { tables, rest } = findTables(once(items), rules)
  if (tables.length === 0) return [{ kind: "text", items: [...items] }]
  const sorted = [...tables].sort((a, b) => b.top - a.top)
  const parts: Array<Part<I>> = []
  let remaining = rest
  for (const t of sorted) {
    const middle = (t.top + t.bottom) / 2
    const above = remaining.filter((i) => (i.transform[5] ?? 0) > middle)
    remaining = remaining.filter((i) => (i.transform[5] ?? 0) <= middle)
    if (above.some((i) => i.str.trim() !== "")) parts.push({ kind: "text", items: above })
    parts.push({ kind: "table", table: t })
  }
  if (remaining.some((i) => i.str.trim() !== "")) parts.push({ kind: "text", items: remaining })
  return parts
}

/** The Markdown of a table. */
export const tableMarkdown = (table: Table): string => markdownTable(table.rows)

const sameRow = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((c, i) => c === b[i])

/**
 * Whether `next` (first on its page) goes on with `prev` (last on the page before): the same
 * columns and its first row repeats `prev`'s header. Its rows after the header are then `prev`'s.
 */
export const continues = (prev: Table, next: Table): boolean =>
  prev.rows[0] !== undefined && next.rows[0] !== undefined && sameRow(prev.rows[0], next.rows[0]) && next.rows.length > 1

/**
 * The rows of `prev` and of `next` (which {@link continues} it) as one table, the header once. A
 * row split by the page break (the first row after the repeated header has no text in its first
 * column, the last row of `prev` has) is one row again, its cells' texts joined.
 */
export const joinedRows = (prev: Table, next: Table): Array<Array<string>> => {
  const body = next.rows.slice(1)
  const last = prev.rows[prev.rows.length - 1]!
  const first = body[0]
  if (prev.rows.length > 1 && first && first.length === last.length && first.some((c) => c !== "") && (first[0] === "" && last[0] !== "" || goesOn(last, first))) {
    const merged = last.map((c, i) => (c !== "" && first[i] !== "" && digitsOn(c, first[i]!) ? c + first[i] : [c, first[i]!].filter((t) => t !== "").join(" ")))
    return [...prev.rows.slice(0, -1), merged, ...body.slice(1)]
  }
  return [...prev.rows, ...body]
}

/** Whether `next` is the digits a number `cell` goes on with on the next line ("3.000" and "0"). */
const digitsOn = (cell: string, next: string): boolean => /^[-+]?\d[\d,.]*$/.test(cell) && /^\d+$/.test(next)

/**
 * Whether row `first` (first after the repeated header) is the rest of row `last` (last before
 * the page break): fewer cells with text, each under a cell of `last` with text, and each the
 * digits of a number broken there or a lower-case word going on.
 */
const goesOn = (last: ReadonlyArray<string>, first: ReadonlyArray<string>): boolean => {
  const filled = (r: ReadonlyArray<string>) => r.filter((c) => c !== "").length
  return filled(first) < filled(last) &&
    first.every((c, i) => c === "" || (last[i] !== "" && (digitsOn(last[i]!, c) || /^\p{Ll}/u.test(c))))
}
