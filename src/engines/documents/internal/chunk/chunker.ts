/**
 * Structure-aware, token-counted chunking of Markdown pages (embeddings mode).
 *
 * - A heading starts a new chunk (the heading stays with the text under it).
 * - Blocks (paragraphs, list items, tables) are packed into a chunk while it stays within
 *   `size` tokens; a block too big for a chunk is split into sentences (Intl.Segmenter), a
 *   sentence into words, a word into characters.
 * - Tables are split only between rows; each piece repeats the header row. A single row larger
 *   than `size` becomes a chunk of its own (never split) and is reported.
 * - Consecutive chunks of one section share up to `overlap` tokens: the previous chunk's last
 *   whole sentences/blocks that fit, else its last characters that fit.
 * - Every chunk's `total_tokens` is the tokenizer's count of its exact content, and
 *   `from_page` is the page of its first new (non-overlap) block.
 */
import { joins, type Tokenizer } from "./tokenizer.js"

/** One chunk. */
export interface ChunkOut {
  readonly content: string
  readonly total_tokens: number
  readonly from_page: number
  /** The heading the chunk's first new block sits under, without its `#`s (none before the first heading). */
  readonly section?: string
}

/** Chunking settings, in tokens. */
export interface ChunkSettings {
  readonly size: number
  readonly overlap: number
}

interface Piece {
  readonly text: string
  readonly tokens: number
  readonly page: number
  /** The heading in force (see {@link ChunkOut.section}). */
  readonly section: string | undefined
  /** Table piece: rows may be split from each other, never inside. */
  readonly kind: "heading" | "text" | "table"
}

const joiner = "\n\n"

/** A fence line of Markdown: up to three spaces, then three or more backticks or tildes. */
const fenceOpen = /^ {0,3}(`{3,}|~{3,})/

/**
 * Splits a page's Markdown into blocks: headings, tables and blank-line separated paragraphs. A
 * fenced code block is one block, blank lines and all, and what looks like a heading or a table
 * inside it (a `#` comment) is code. A block keeps the indentation of its first line when that
 * is an indented code block (four spaces or a tab).
 */
export const blocks = (markdown: string): Array<{ kind: Piece["kind"]; text: string }> => {
  const out: Array<{ kind: Piece["kind"]; text: string }> = []
  let para: Array<string> = []
  let table: Array<string> = []
  let fence: { marker: string; lines: Array<string> } | undefined
  const flushPara = () => {
    if (para.length > 0) {
      const text = para.join("\n")
      out.push({ kind: "text", text: /^( {4}|\t)/.test(text) ? text.trimEnd() : text.trim() })
    }
    para = []
  }
  const flushTable = () => {
    if (table.length > 0) out.push({ kind: "table", text: table.join("\n") })
    table = []
  }
  for (const line of markdown.split("\n")) {
    if (fence !== undefined) {
      fence.lines.push(line)
      const close = fenceOpen.exec(line)
      if (close && close[1]![0] === fence.marker[0] && close[1]!.length >= fence.marker.length && line.trim() === close[1]) {
        out.push({ kind: "text", text: fence.lines.join("\n").trimEnd() })
        fence = undefined
      }
      continue
    }
    const open = fenceOpen.exec(line)
    if (open && !(open[1]![0] === "`" && line.slice(open[0].length).includes("`"))) {
      flushPara()
      flushTable()
      fence = { marker: open[1]!, lines: [line] }
      continue
    }
    if (/^\s*\|/.test(line)) {
      flushPara()
      table.push(line)
      continue
    }
    flushTable()
    if (/^#{1,6}\s/.test(line)) {
      flushPara()
      out.push({ kind: "heading", text: line.trim() })
    } else if (line.trim() === "") flushPara()
    else if (/^\s*([-*+]|\d+[.)])\s/.test(line) && para.length > 0 && !/^\s*([-*+]|\d+[.)])\s/.test(para[0]!)) {
      // a list after a paragraph line starts a new block
      flushPara()
      para.push(line)
    } else para.push(line)
  }
  // an unclosed fence runs to the end of the page (CommonMark)
  if (fence !== undefined) out.push({ kind: "text", text: fence.lines.join("\n").trimEnd() })
  flushPara()
  flushTable()
  return out.filter((b) => b.text.length > 0)
}

/** A heading block's text without its `#`s and closing `#`s. */
const headingText = (heading: string): string => {
  const text = heading.replace(/^#{1,6}\s+/, "").trimEnd()
  let end = text.length
  while (end > 0 && text[end - 1] === "#") end--
  // closing #s count only after a space (`# C#` keeps its #)
  return (end < text.length && (end === 0 || /\s/.test(text[end - 1]!)) ? text.slice(0, end) : text).trim()
}

const sentenceSegmenter = new Intl.Segmenter(undefined, { granularity: "sentence" })
const wordSegmenter = new Intl.Segmenter(undefined, { granularity: "word" })

/** Texts up to this length are segmented in one go; longer ones in windows (see {@link segments}). */
const segmentWindow = 16_384
/** A boundary closer than this to a window's end is not trusted: it is found again in the next window. */
const segmentMargin = 256

/**
 * The segments of `text` (`Intl.Segmenter`), the same as `Array.from(segmenter.segment(text))`.
 * Why windows: V8's segment iterator slows down with the length of the input (measured: 100 KB of
 * base64 in 0.1 s, 400 KB in 8 s, mostly system time), and one unbroken 1.2 MB "sentence" (a data
 * URI) spent about a minute there. Word and sentence boundaries depend only on a few characters
 * around them, so each window keeps the segments that end more than {@link segmentMargin}
 * characters before its end and the next window starts at the first one it dropped (a boundary).
 * A window without such a boundary falls back to segmenting the rest in one go.
 */
const segments = (segmenter: Intl.Segmenter, text: string): Array<string> => {
  if (text.length <= segmentWindow) return Array.from(segmenter.segment(text), (s) => s.segment)
  const out: Array<string> = []
  let start = 0
  while (start < text.length) {
    const end = start + segmentWindow
    if (end >= text.length) {
      for (const s of segmenter.segment(text.slice(start))) out.push(s.segment)
      break
    }
    let next = start
    for (const s of segmenter.segment(text.slice(start, end))) {
      if (start + s.index + s.segment.length > end - segmentMargin) break
      out.push(s.segment)
      next = start + s.index + s.segment.length
    }
    if (next === start) {
      for (const s of segmenter.segment(text.slice(start))) out.push(s.segment)
      break
    }
    start = next
  }
  return out
}

/** The first `k` code points of `text` (fewer when it is shorter), without splitting the whole text. */
const headCodePoints = (text: string, k: number): Array<string> => {
  const out: Array<string> = []
  if (k <= 0) return out
  for (const ch of text) {
    out.push(ch)
    if (out.length >= k) break
  }
  return out
}

/** The last `k` code points of `text` (fewer when it is shorter), in order. */
const tailCodePoints = (text: string, k: number): Array<string> => {
  const out: Array<string> = []
  let i = text.length
  while (i > 0 && out.length < k) {
    const lo = text.charCodeAt(i - 1)
    const pair = i >= 2 && lo >= 0xdc00 && lo <= 0xdfff && (text.charCodeAt(i - 2) & 0xfc00) === 0xd800
    const start = pair ? i - 2 : i - 1
    out.push(text.slice(start, i))
    i = start
  }
  return out.reverse()
}

/** Code points of a string, counted without materialising them. */
const codePointCount = (s: string): number => {
  let low = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xdc00 && c <= 0xdfff && i > 0 && (s.charCodeAt(i - 1) & 0xfc00) === 0xd800) low++
  }
  return s.length - low
}

/**
 * The largest `n` in `[min, total]` with `fits(n)` (`min` when none): the same probes and the
 * same answer as a plain bisection over `[min, total]`, except that a probe at or above `over`
 * (a length whose count is already more than twice the budget) is answered "does not fit"
 * without tokenising. Why: a plain bisection's first probes are half the text, and for a long
 * unbroken run (a 1.2 MB base64 data URI, cut into 2,000 chunks) every cut re-tokenised most of
 * the rest (about two minutes for that one file). Keeping the bisection itself (rather than,
 * say, galloping and bisecting a window) keeps its answer where BPE counts are not monotone in
 * the length, so chunks are byte-identical to before; only a suffix/prefix *longer* than `over`
 * whose count fell back within the budget (less than half of the shorter one's) could differ.
 */
const bisect = (total: number, min: number, over: number, fits: (n: number) => boolean): number => {
  let lo = min
  let hi = total
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (mid < over && fits(mid)) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** The shortest doubling of a first guess (~4 code points a token) whose count exceeds twice the budget. */
const farOver = (total: number, budget: number, count: (n: number) => number): number => {
  for (let w = Math.max(16, budget * 4); w < total; w *= 2) {
    if (count(w) > 2 * budget) return w
  }
  return total + 1
}

/**
 * The first (`fromEnd` false) or last `n` code points of `text`, reading only as many code
 * points as asked for (`n` past the end gives the whole text).
 */
const codePointWindow = (text: string, fromEnd: boolean) => {
  let chars: Array<string> = []
  let complete = false
  return (n: number): string => {
    if (n > chars.length && !complete) {
      const want = Math.max(n, chars.length * 2)
      chars = fromEnd ? tailCodePoints(text, want) : headCodePoints(text, want)
      complete = chars.length < want
    }
    return (fromEnd ? chars.slice(Math.max(0, chars.length - n)) : chars.slice(0, n)).join("")
  }
}

/**
 * The longest prefix of `text` (in whole code points) within `budget` tokens; at least one code
 * point. `total`: the code points of `text`, when the caller knows them.
 */
const fittingPrefix = (text: string, budget: number, tok: Tokenizer, total = codePointCount(text)): string => {
  const at = codePointWindow(text, false)
  const over = farOver(total, budget, (n) => tok.count(at(n)))
  return at(bisect(total, 1, over, (n) => tok.count(at(n)) <= budget))
}

/** The longest suffix of `text` within `budget` tokens ("" when not even one code point fits). */
const fittingSuffix = (text: string, budget: number, tok: Tokenizer): string => {
  const at = codePointWindow(text, true)
  const total = codePointCount(text)
  const over = farOver(total, budget, (n) => tok.count(at(n)))
  return at(bisect(total, 0, over, (n) => tok.count(at(n)) <= budget)).trimStart()
}

/** The last whole sentences of `text` within `budget` tokens ("" when the last one does not fit). */
const trailingSentences = (text: string, budget: number, tok: Tokenizer): string => {
  const sentences = Array.from(sentenceSegmenter.segment(text), (s) => s.segment)
  let tail = ""
  for (let i = sentences.length - 1; i >= 0; i--) {
    const candidate = sentences[i]! + tail
    if (tok.count(candidate.trim()) > budget) break
    tail = candidate
  }
  return tail.trim()
}

/**
 * How close (in tokens) the running estimate of a part may come to the budget before the part is
 * counted exactly. See {@link splitText}.
 */
const estimateSlack = 16

/**
 * Splits text into parts of at most `budget` tokens: sentences, then words, then characters.
 *
 * Packing is greedy: a unit joins the current part unless the part would exceed the budget.
 * Counting every candidate part exactly re-tokenises the part once per word (quadratic: ~50
 * counts of a growing part per chunk; 2,000 chunks for one 1.2 MB base64 data URI). So the part's
 * count is kept as an estimate (its last exact count plus the counts of the units added since)
 * and counted exactly only once the estimate comes within {@link estimateSlack} of the budget:
 * the decisions are then the exact ones whenever BPE counts are additive within that slack,
 * which is what makes the packing cheap. Every part packed that way is counted again at the end;
 * if one is over the budget (counts that were far from additive), the text is split again with
 * every candidate counted exactly, as before. So the limit holds exactly either way.
 */
const splitText = (text: string, budget: number, tok: Tokenizer): Array<string> => {
  const fast = splitTextWith(text, budget, tok, estimateSlack)
  return fast.packed.every((p) => tok.count(p) <= budget) ? fast.out : splitTextWith(text, budget, tok, undefined).out
}

/** {@link splitText} with estimates within `slack` tokens of the budget (`undefined`: every candidate counted). */
const splitTextWith = (
  text: string,
  budget: number,
  tok: Tokenizer,
  slack: number | undefined
): { out: Array<string>; packed: Array<string> } => {
  const out: Array<string> = []
  const packed: Array<string> = []
  /** Greedy packing of `units` into `into`; a unit over the budget on its own goes through `next`. */
  const pack = (units: Iterable<string>, next: (u: string) => Array<string>, into: Array<string>) => {
    let cur = ""
    let estimate = 0
    const flush = () => {
      const part = cur.trim()
      if (part) {
        into.push(part)
        packed.push(part)
      }
    }
    for (const u of units) {
      const unitTokens = tok.count(u)
      if (unitTokens > budget) {
        flush()
        cur = ""
        estimate = 0
        for (const p of next(u)) into.push(p)
        continue
      }
      const candidate = cur + u
      if (!cur) {
        cur = candidate
        estimate = unitTokens
        continue
      }
      if (slack !== undefined && estimate + unitTokens + slack <= budget) {
        cur = candidate
        estimate += unitTokens
        continue
      }
      const exact = tok.count(candidate.trim())
      if (exact > budget) {
        flush()
        cur = u
        estimate = unitTokens
      } else {
        cur = candidate
        estimate = exact
      }
    }
    flush()
  }
  const byChars = (word: string): Array<string> => {
    const parts: Array<string> = []
    let rest = word
    // counted once and kept up to date: recounting the rest at every cut would be quadratic
    let left = codePointCount(rest)
    while (rest.length > 0) {
      const head = fittingPrefix(rest, budget, tok, left)
      parts.push(head)
      rest = rest.slice(head.length)
      left -= codePointCount(head)
    }
    return parts.map((p) => p.trim()).filter(Boolean)
  }
  const byWords = (sentence: string): Array<string> => {
    const inner: Array<string> = []
    pack(segments(wordSegmenter, sentence), byChars, inner)
    return inner
  }
  pack(segments(sentenceSegmenter, text), byWords, out)
  return { out: out.filter(Boolean), packed }
}

/** Splits a Markdown table into row groups of at most `budget` tokens, repeating the header. */
const splitTable = (
  text: string,
  budget: number,
  tok: Tokenizer,
  oversize: (row: string) => void
): Array<string> => {
  const lines = text.split("\n")
  const hasHeader = lines.length >= 2 && /^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$/.test(lines[1]!)
  const header = hasHeader ? lines.slice(0, 2).join("\n") : ""
  const rows = hasHeader ? lines.slice(2) : lines
  const headerTokens = header ? tok.count(header) + 1 : 0
  const out: Array<string> = []
  let cur: Array<string> = []
  let curTokens = headerTokens
  const flush = () => {
    if (cur.length > 0) out.push((header ? header + "\n" : "") + cur.join("\n"))
    cur = []
    curTokens = headerTokens
  }
  let headerAlone = false
  for (const row of rows) {
    const t = tok.count(row) + 1
    if (headerTokens + t > budget) {
      flush()
      if (header && !headerAlone) {
        // the header cannot travel with this row: give it a piece of its own, once
        if (headerTokens > budget) oversize(header)
        out.push(header)
        headerAlone = true
      }
      if (header && t <= budget) out.push(row) // fits without the header
      else {
        oversize(row)
        out.push(row)
      }
      continue
    }
    if (curTokens + t > budget) flush()
    cur.push(row)
    curTokens += t
  }
  flush()
  if (out.length === 0 && header) out.push(header)
  return out
}

/**
 * The tokenizer with a small per-call memo. Why: the packing asks for the same strings again
 * (the exact re-count after `cur.pop()`, then of the same chunk once accepted; a trailing sentence
 * that is the whole piece; a word candidate ending in a space, trimmed back to the previous one),
 * and a BPE count is the dominant cost of chunking. Counts are pure, so the output is unchanged.
 */
const memoized = (tok: Tokenizer): Tokenizer => {
  const cache = new Map<string, number>()
  return {
    name: tok.name,
    count: (text) => {
      const hit = cache.get(text)
      if (hit !== undefined) return hit
      const n = tok.count(text)
      if (cache.size >= 1024) cache.clear() // bounded: the repeats are close together
      cache.set(text, n)
      return n
    }
  }
}

/**
 * The pieces of pages (step 1 of {@link chunkPages}): blocks that fit in a chunk, and the parts
 * of those that do not (tables between rows, text by sentences, words, characters), each with
 * its count; a note when table rows exceed the size.
 */
const piecesOf = (
  pages: ReadonlyArray<{ readonly page: number; readonly content: string }>,
  size: number,
  overlap: number,
  tok: Tokenizer
): { pieces: Array<Piece>; notes: Array<string> } => {
  let oversizeRows = 0
  let largestRow = 0
  const oversizePages = new Set<number>()
  const pieces: Array<Piece> = []
  let section: string | undefined
  for (const { content, page } of pages) {
    for (const block of blocks(content)) {
      if (block.kind === "heading") section = headingText(block.text) || section
      const tokens = tok.count(block.text)
      if (tokens <= size) {
        pieces.push({ text: block.text, tokens, page, section, kind: block.kind })
        continue
      }
      const parts =
        block.kind === "table"
          ? splitTable(block.text, size, tok, (row) => {
            oversizeRows++
            largestRow = Math.max(largestRow, tok.count(row))
            oversizePages.add(page)
          })
          : splitText(block.text, Math.max(1, size - overlap), tok) // leave room for the overlap
      for (const text of parts) pieces.push({ text, tokens: tok.count(text), page, section, kind: block.kind })
    }
  }
  const notes = oversizeRows === 0 ? [] : [
    `${oversizeRows} table row(s) (up to ${largestRow} tokens, on page(s) ${[...oversizePages].slice(0, 10).join(", ")}) exceed the chunk size of ${size} tokens and are kept whole`
  ]
  return { pieces, notes }
}

/**
 * Chunks pages of Markdown. Returns the chunks and notes (e.g. a table row bigger than the
 * chunk size). Pure; cost is about three tokenizer passes over the text.
 */
export const chunkPages = (
  pages: ReadonlyArray<{ readonly page: number; readonly content: string }>,
  settings: ChunkSettings,
  tokenizer: Tokenizer
): { chunks: Array<ChunkOut>; notes: Array<string> } => {
  const tok = memoized(tokenizer)
  const joining = joins(tokenizer)
  const size = Math.max(8, Math.floor(settings.size))
  const overlap = Math.max(0, Math.min(Math.floor(settings.overlap), Math.floor(size / 2)))
  const sepTokens = tok.count(joiner)
  // 1. pieces that each fit in a chunk (or are an unsplittable table row)
  const { notes, pieces } = piecesOf(pages, size, overlap, tok)
  // 2. pack pieces into chunks
  const chunks: Array<ChunkOut> = []
  let cur: Array<Piece> = []
  let carry: Array<Piece> = [] // overlap from the previous chunk
  let curTokens = 0
  const contentOf = (ps: ReadonlyArray<Piece>) => ps.map((p) => p.text).join(joiner)
  /**
   * The count of `contentOf(ps)`: from the pieces' own counts and their joins when the tokenizer
   * can tell what a join adds (the tiktoken encodings, see `blankLineJoin`), else by counting the
   * joined text. Why: re-counting every chunk's text was a third of the tokenizer's work.
   */
  const countOf = (ps: ReadonlyArray<Piece>): number => {
    if (ps.length === 1) return ps[0]!.tokens
    if (!joining) return tok.count(contentOf(ps))
    let n = ps[0]!.tokens
    for (let i = 1; i < ps.length; i++) {
      const join = tokenizer.blankLineJoin(ps[i - 1]!.text, ps[i]!.text)
      if (join === undefined) return tok.count(contentOf(ps))
      n += join + ps[i]!.tokens
    }
    return n
  }
  const emit = () => {
    const fresh = cur.filter((p) => !carry.includes(p))
    if (fresh.length === 0) return
    const content = contentOf(cur)
    const section = fresh[0]!.section
    chunks.push({ content, total_tokens: countOf(cur), from_page: fresh[0]!.page, ...(section ? { section } : {}) })
  }
  const overlapOf = (ps: ReadonlyArray<Piece>): Array<Piece> => {
    if (overlap === 0) return []
    const out: Array<Piece> = []
    let t = 0
    for (let i = ps.length - 1; i >= 0; i--) {
      const p = ps[i]!
      if (p.kind === "heading") break
      if (t + p.tokens + (out.length > 0 ? sepTokens : 0) > overlap) {
        if (out.length === 0 && p.kind === "text") {
          const tail = trailingSentences(p.text, overlap, tok) || fittingSuffix(p.text, overlap, tok)
          if (tail) out.unshift({ text: tail, tokens: tok.count(tail), page: p.page, section: p.section, kind: "text" })
        }
        break
      }
      out.unshift(p)
      t += p.tokens + (out.length > 1 ? sepTokens : 0)
    }
    return out
  }
  const start = (withCarry: ReadonlyArray<Piece>) => {
    carry = [...withCarry]
    cur = [...withCarry]
    curTokens = withCarry.reduce((n, p, i) => n + p.tokens + (i > 0 ? sepTokens : 0), 0)
  }
  for (const piece of pieces) {
    if (piece.kind === "heading" && cur.some((p) => !carry.includes(p))) {
      emit()
      start([])
    }
    const added = curTokens + (cur.length > 0 ? sepTokens : 0) + piece.tokens
    if (added > size && cur.some((p) => !carry.includes(p))) {
      const tail = overlapOf(cur)
      emit()
      start(tail.length > 0 && tail.reduce((n, p) => n + p.tokens + sepTokens, 0) + piece.tokens <= size ? tail : [])
    } else if (added > size) {
      start([]) // only overlap so far and it does not leave room: drop it
    }
    cur.push(piece)
    curTokens += (cur.length > 1 ? sepTokens : 0) + piece.tokens
    // BPE counts are not exactly additive: check the real count and move the piece on if needed
    if (cur.length > 1 && curTokens > size - 4) {
      const exact = countOf(cur)
      if (exact > size) {
        cur.pop()
        const tail = overlapOf(cur)
        emit()
        start(tail.length > 0 && countOf([...tail, piece]) <= size ? tail : [])
        cur.push(piece)
        curTokens = countOf(cur)
      } else curTokens = exact
    }
  }
  emit()
  return { chunks, notes }
}
