/**
 * Reading order of a PDF page's text items: columns are read one after the other, and every
 * place where the layout has a gap between two items becomes a word boundary.
 *
 * The page is cut recursively (an XY cut): first into horizontal bands at the vertical gaps
 * between lines, then each run of bands that share a column gutter (a vertical white stripe
 * through all their lines, at least half a line height wide, with at least two lines of
 * running text on each side, four when the stripe is narrower than a line height) is split at
 * the gutter into a left and a right part, each laid out the same way (a band joins the run
 * only when it has the columns itself, so a full-width line after them stays after them).
 * A table (short cells) is not split into columns, so its rows stay rows. Within a part,
 * items are read line by line (top to bottom, left to right).
 */

/** A positioned text item (pdf.js `TextItem`: `transform[4..5]` is the baseline origin). */
export interface PositionedItem {
  readonly str: string
  readonly hasEOL: boolean
  readonly transform: ReadonlyArray<number>
  readonly width: number
  readonly height: number
}

interface Box<I> {
  readonly item: I
  readonly x0: number
  readonly x1: number
  /** top and bottom, growing downwards */
  readonly top: number
  readonly bottom: number
  readonly base: number
  readonly h: number
}

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)]!
}

/** Groups boxes into lines (same baseline within half a line height), top to bottom. */
const lines = <I>(boxes: ReadonlyArray<Box<I>>): Array<Array<Box<I>>> => {
  const sorted = [...boxes].sort((a, b) => a.base - b.base || a.x0 - b.x0)
  const out: Array<Array<Box<I>>> = []
  for (const b of sorted) {
    const last = out[out.length - 1]
    if (last && Math.abs(b.base - last[0]!.base) <= Math.max(b.h, last[0]!.h) * 0.5) last.push(b)
    else out.push([b])
  }
  return out.map((l) => l.sort((a, b) => a.x0 - b.x0))
}

/** Horizontal bands: a new band wherever no box covers a vertical stretch of at least `gap`. */
const bands = <I>(boxes: ReadonlyArray<Box<I>>, gap: number): Array<Array<Box<I>>> => {
  const sorted = [...boxes].sort((a, b) => a.top - b.top)
  const out: Array<Array<Box<I>>> = []
  let bottom = -Infinity
  for (const b of sorted) {
    if (out.length === 0 || b.top - bottom > gap) out.push([])
    out[out.length - 1]!.push(b)
    bottom = Math.max(bottom, b.bottom)
  }
  return out
}

/** Vertical white stripes (x intervals no box covers) at least `gap` wide, inside the boxes' span. */
const gutters = <I>(boxes: ReadonlyArray<Box<I>>, gap: number): Array<readonly [number, number]> => {
  const sorted = [...boxes].sort((a, b) => a.x0 - b.x0)
  const out: Array<readonly [number, number]> = []
  let right = -Infinity
  for (const b of sorted) {
    if (right !== -Infinity && b.x0 - right >= gap) out.push([right, b.x0])
    right = Math.max(right, b.x1)
  }
  return out
}

const chars = <I extends PositionedItem>(line: ReadonlyArray<Box<I>>) => line.reduce((n, b) => n + b.item.str.trim().length, 0)

/** Whether the boxes on one side of a gutter look like running text (not table cells). */
const isColumn = <I extends PositionedItem>(boxes: ReadonlyArray<Box<I>>, minLines: number): boolean => {
  const ls = lines(boxes)
  if (ls.length < minLines) return false
  return ls.reduce((n, l) => n + chars(l), 0) / ls.length >= 12
}

/** A gutter of the boxes that splits them into two columns of running text, if any. */
const columnSplit = <I extends PositionedItem>(
  boxes: ReadonlyArray<Box<I>>,
  gap: number
): [Array<Box<I>>, Array<Box<I>>] | undefined => {
  // the widest gutters first; a narrow one (under a line height) needs more lines to be trusted
  for (const [l, r] of gutters(boxes, gap * 0.5).sort((a, b) => b[1] - b[0] - (a[1] - a[0]))) {
    const cut = (l + r) / 2
    const left = boxes.filter((b) => b.x1 <= cut)
    const right = boxes.filter((b) => b.x1 > cut)
    const minLines = r - l >= gap ? 2 : 4
    if (isColumn(left, minLines) && isColumn(right, minLines)) return [left, right]
  }
  return undefined
}

const layout = <I extends PositionedItem>(
  boxes: ReadonlyArray<Box<I>>,
  h: number,
  depth: number
): Array<Array<Box<I>>> => {
  if (boxes.length < 4 || depth > 24) return [boxes.slice()]
  const bs = bands(boxes, h * 0.6)
  if (bs.length === 1) {
    const split = columnSplit(boxes, h)
    return split ? [...layout(split[0], h, depth + 1), ...layout(split[1], h, depth + 1)] : [boxes.slice()]
  }
  // runs of consecutive bands that share a column gutter are laid out together
  const out: Array<Array<Box<I>>> = []
  let run: Array<Box<I>> = []
  const flush = () => {
    if (run.length === 0) return
    const split = columnSplit(run, h)
    if (split) {
      for (const block of [...layout(split[0], h, depth + 1), ...layout(split[1], h, depth + 1)]) out.push(block)
    } else out.push(run)
    run = []
  }
  let runSplits = false
  for (const band of bs) {
    const joined = [...run, ...band]
    if (runSplits && columnSplit(band, h) && columnSplit(joined, h)) run = joined
    else {
      flush()
      run = band.slice()
      runSplits = columnSplit(run, h) !== undefined
    }
  }
  flush()
  return out
}

/**
 * Whether an item's baseline is horizontal: not rotated. A slanted item (an italic the PDF
 * writer made by skewing the upright font, `transform[2]` not 0) is upright too.
 */
export const isUpright = (item: PositionedItem): boolean =>
  Math.abs(item.transform[1] ?? 0) < 1e-6 && Math.abs(item.transform[2] ?? 0) < Math.abs(item.transform[3] ?? 0)

/**
 * Items in content-stream order, as lines: a new line where the baseline moves by more than
 * half a line or an item ends a line (rotated text, pages that are mostly rotated).
 */
const streamLines = <I extends PositionedItem>(items: ReadonlyArray<I>): Array<Array<I>> => {
  const out: Array<Array<I>> = []
  let lastY: number | undefined
  let eol = true
  for (const item of items) {
    const y = item.transform[5] ?? 0
    const h = Math.abs(item.height || item.transform[3] || 0) || 10
    const rotated = !isUpright(item)
    if (eol || rotated || lastY === undefined || Math.abs(y - lastY) > h * 0.5) out.push([])
    if (item.str.trim() !== "") out[out.length - 1]!.push(item)
    lastY = y
    eol = item.hasEOL || rotated
  }
  return out.filter((l) => l.length > 0)
}

/**
 * The items in reading order, as blocks (a column or a full-width part) of lines. A page whose
 * text is mostly rotated keeps the content-stream order; rotated items on an upright page
 * come last, one line each.
 */
export const readingOrder = <I extends PositionedItem>(items: ReadonlyArray<I>): Array<Array<Array<I>>> => {
  const visible = items.filter((i) => i.str.trim() !== "")
  const upright = visible.filter(isUpright)
  if (visible.length === 0) return []
  if (upright.length < visible.length * 0.9) return [streamLines(items)]
  const boxes: Array<Box<I>> = upright.map((item) => {
    const h = Math.abs(item.height || item.transform[3] || 0) || 10
    const x = item.transform[4] ?? 0
    const base = -(item.transform[5] ?? 0)
    return { item, x0: x, x1: x + Math.max(0, item.width), top: base - h * 0.8, bottom: base + h * 0.2, base, h }
  })
  const h = median(boxes.map((b) => b.h)) || 10
  const out = layout(boxes, h, 0).map((block) => lines(block).map((l) => l.map((b) => b.item)))
  const rotated = visible.filter((i) => !isUpright(i))
  if (rotated.length > 0) out.push(streamLines(rotated))
  return out
}

/**
 * The largest of some numbers (-Infinity for none), in a loop: `Math.max(...xs)` passes every
 * number as an argument and throws a RangeError past about 100,000 of them (a page of many
 * text runs).
 */
export const maxOf = (xs: ReadonlyArray<number>): number => {
  let m = -Infinity
  for (const x of xs) if (x > m) m = x
  return m
}

/** The smallest of some numbers (Infinity for none), in a loop (see {@link maxOf}). */
export const minOf = (xs: ReadonlyArray<number>): number => {
  let m = Infinity
  for (const x of xs) if (x < m) m = x
  return m
}
