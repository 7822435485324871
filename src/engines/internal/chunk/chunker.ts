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
import type { Tokenizer } from "./tokenizer.js"

/** One chunk. */
export interface ChunkOut {
  readonly content: string
  readonly total_tokens: number
  readonly from_page: number
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
  /** Table piece: rows may be split from each other, never inside. */
  readonly kind: "heading" | "text" | "table"
}

const joiner = "\n\n"

/** Splits a page's Markdown into blocks: headings, tables and blank-line separated paragraphs. */
export const blocks = (markdown: string): Array<{ kind: Piece["kind"]; text: string }> => {
  const out: Array<{ kind: Piece["kind"]; text: string }> = []
  let para: Array<string> = []
  let table: Array<string> = []
  const flushPara = () => {
    if (para.length > 0) out.push({ kind: "text", text: para.join("\n").trim() })
    para = []
  }
  const flushTable = () => {
    if (table.length > 0) out.push({ kind: "table", text: table.join("\n") })
    table = []
  }
  for (const line of markdown.split("\n")) {
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
  flushPara()
  flushTable()
  return out.filter((b) => b.text.length > 0)
}

const sentenceSegmenter = new Intl.Segmenter(undefined, { granularity: "sentence" })
const wordSegmenter = new Intl.Segmenter(undefined, { granularity: "word" })

/** The longest prefix of `text` (in whole code points) within `budget` tokens; at least one code point. */
const fittingPrefix = (text: string, budget: number, tok: Tokenizer): string => {
  const chars = Array.from(text)
  let lo = 1
  let hi = chars.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (tok.count(chars.slice(0, mid).join("")) <= budget) lo = mid
    else hi = mid - 1
  }
  return chars.slice(0, lo).join("")
}

/** The longest suffix of `text` within `budget` tokens ("" when not even one code point fits). */
const fittingSuffix = (text: string, budget: number, tok: Tokenizer): string => {
  const chars = Array.from(text)
  let lo = 0
  let hi = chars.length
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (tok.count(chars.slice(chars.length - mid).join("")) <= budget) lo = mid
    else hi = mid - 1
  }
  return chars.slice(chars.length - lo).join("").trimStart()
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

/** Splits text into parts of at most `budget` tokens: sentences, then words, then characters. */
const splitText = (text: string, budget: number, tok: Tokenizer): Array<string> => {
  const out: Array<string> = []
  const pack = (units: ReadonlyArray<string>, next: (u: string) => Array<string>) => {
    let cur = ""
    for (const u of units) {
      if (tok.count(u) > budget) {
        if (cur.trim()) out.push(cur.trim())
        cur = ""
        for (const p of next(u)) out.push(p)
        continue
      }
      const candidate = cur + u
      if (cur && tok.count(candidate.trim()) > budget) {
        out.push(cur.trim())
        cur = u
      } else cur = candidate
    }
    if (cur.trim()) out.push(cur.trim())
  }
  const byChars = (word: string): Array<string> => {
    const parts: Array<string> = []
    let rest = word
    while (rest.length > 0) {
      const head = fittingPrefix(rest, budget, tok)
      parts.push(head)
      rest = rest.slice(head.length)
    }
    return parts.map((p) => p.trim()).filter(Boolean)
  }
  const byWords = (sentence: string): Array<string> => {
    const inner: Array<string> = []
    let cur = ""
    for (const { segment } of wordSegmenter.segment(sentence)) {
      if (tok.count(segment) > budget) {
        if (cur.trim()) inner.push(cur.trim())
        cur = ""
        inner.push(...byChars(segment))
        continue
      }
      const candidate = cur + segment
      if (cur && tok.count(candidate.trim()) > budget) {
        inner.push(cur.trim())
        cur = segment
      } else cur = candidate
    }
    if (cur.trim()) inner.push(cur.trim())
    return inner
  }
  pack(
    Array.from(sentenceSegmenter.segment(text), (s) => s.segment),
    byWords
  )
  return out.filter(Boolean)
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
 * Chunks pages of Markdown. Returns the chunks and notes (e.g. a table row bigger than the
 * chunk size). Pure; cost is about three tokenizer passes over the text.
 */
export const chunkPages = (
  pages: ReadonlyArray<{ readonly page: number; readonly content: string }>,
  settings: ChunkSettings,
  tok: Tokenizer
): { chunks: Array<ChunkOut>; notes: Array<string> } => {
  const size = Math.max(8, Math.floor(settings.size))
  const overlap = Math.max(0, Math.min(Math.floor(settings.overlap), Math.floor(size / 2)))
  const notes: Array<string> = []
  const sepTokens = tok.count(joiner)

  let oversizeRows = 0
  let largestRow = 0
  const oversizePages = new Set<number>()
  // 1. pieces that each fit in a chunk (or are an unsplittable table row)
  const pieces: Array<Piece> = []
  for (const { content, page } of pages) {
    for (const block of blocks(content)) {
      const tokens = tok.count(block.text)
      if (tokens <= size) {
        pieces.push({ text: block.text, tokens, page, kind: block.kind })
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
      for (const text of parts) pieces.push({ text, tokens: tok.count(text), page, kind: block.kind })
    }
  }

  if (oversizeRows > 0) {
    notes.push(
      `${oversizeRows} table row(s) (up to ${largestRow} tokens, on page(s) ${[...oversizePages].slice(0, 10).join(", ")}) exceed the chunk size of ${size} tokens and are kept whole`
    )
  }
  // 2. pack pieces into chunks
  const chunks: Array<ChunkOut> = []
  let cur: Array<Piece> = []
  let carry: Array<Piece> = [] // overlap from the previous chunk
  let curTokens = 0
  const contentOf = (ps: ReadonlyArray<Piece>) => ps.map((p) => p.text).join(joiner)
  const emit = () => {
    const fresh = cur.filter((p) => !carry.includes(p))
    if (fresh.length === 0) return
    const content = contentOf(cur)
    chunks.push({ content, total_tokens: tok.count(content), from_page: fresh[0]!.page })
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
          if (tail) out.unshift({ text: tail, tokens: tok.count(tail), page: p.page, kind: "text" })
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
      const exact = tok.count(contentOf(cur))
      if (exact > size) {
        cur.pop()
        const tail = overlapOf(cur)
        emit()
        start(tail.length > 0 && tok.count(contentOf([...tail, piece])) <= size ? tail : [])
        cur.push(piece)
        curTokens = tok.count(contentOf(cur))
      } else curTokens = exact
    }
  }
  emit()
  return { chunks, notes }
}
