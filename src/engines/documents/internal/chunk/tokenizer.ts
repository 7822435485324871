/**
 * Token counting for embeddings-mode chunks. The default is `cl100k_base` (the encoding of
 * OpenAI's text-embedding-3 models) as implemented by gpt-tokenizer, whose ranks ship inside the
 * package; a caller with an embedding model of its own passes that model's tokenizer instead.
 *
 * Why gpt-tokenizer: its counts are tiktoken's (checked token for token against js-tiktoken on
 * the SciFact corpus and on special-token, emoji, CJK and long-run texts), and it counts about
 * 12× faster (a cache of merged words: text repeats its words), with half the memory.
 */

/** Counts tokens the way an embedding model does. */
export interface Tokenizer {
  /** A name for reports, e.g. `cl100k_base`. */
  readonly name: string
  /** The number of tokens of `text`. */
  readonly count: (text: string) => number
}

/** The BPE encodings whose ranks ship with the tokenizer package. */
export type TiktokenEncoding = "cl100k_base" | "o200k_base"

/** Special tokens are ordinary text in a document. */
const asText = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() }

/**
 * The longest run without whitespace (or of whitespace only) that is counted as one piece. BPE
 * merges within one pre-tokenised piece take time quadratic in its length (64 KiB of one "word"
 * takes seconds, a megabyte would take the better part of an hour), so a longer run (base64,
 * minified code, a page of padding blanks, a hostile file) is counted in slices of this length:
 * its count may then exceed tiktoken's by a few tokens per slice, and every text that changes
 * between whitespace and the rest at least this often is counted exactly.
 */
export const maxRunChars = 1024

const longRun = new RegExp(`\\S{${maxRunChars + 1},}|\\s{${maxRunChars + 1},}`, "g")

/** Whether a UTF-16 unit is whitespace as the regular expression `\s` means it. */
const isSpace = (c: number): boolean =>
  c === 32 || (c >= 9 && c <= 13) || (c > 127 &&
    (c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
      c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff))

/** Whether `text` has a run longer than `maxRunChars` of whitespace or of the rest (one pass, no regular expression). */
const hasLongRun = (text: string): boolean => {
  let run = 0
  let space = false
  for (let i = 0; i < text.length; i++) {
    const s = isSpace(text.charCodeAt(i))
    if (s === space) {
      if (++run > maxRunChars) return true
    } else {
      space = s
      run = 1
    }
  }
  return false
}

/** Counts `text`, slicing runs longer than `maxRunChars` (see there). */
const bounded = (count: (text: string) => number) => (text: string): number => {
  if (text.length <= maxRunChars || !hasLongRun(text)) return text.length === 0 ? 0 : count(text)
  longRun.lastIndex = 0
  let total = 0
  let from = 0
  for (let m = longRun.exec(text); m !== null; m = longRun.exec(text)) {
    if (m.index > from) total += count(text.slice(from, m.index))
    for (let i = 0; i < m[0].length; i += maxRunChars) total += count(m[0].slice(i, i + maxRunChars))
    from = m.index + m[0].length
  }
  return from === 0 ? count(text) : total + (from < text.length ? count(text.slice(from)) : 0)
}

/**
 * A tokenizer that can also count two texts joined by a blank line from their own counts (see
 * {@link blankLineJoin}): the tiktoken encodings here.
 */
export interface JoiningTokenizer extends Tokenizer {
  /**
   * `count(left + "\n\n" + right) - count(left) - count(right)`, when the characters at the
   * join decide it; undefined when they do not (the caller then counts the joined text).
   */
  readonly blankLineJoin: (left: string, right: string) => number | undefined
}

/** Whether `tok` can count blank-line joins from the parts' counts. */
export const joins = (tok: Tokenizer): tok is JoiningTokenizer =>
  typeof (tok as Partial<JoiningTokenizer>).blankLineJoin === "function"

const isAsciiAlnum = (c: number): boolean => (c >= 48 && c <= 57) || ((c | 0x20) >= 97 && (c | 0x20) <= 122)
/** ASCII punctuation and symbols: outside `\s`, `\p{L}` and `\p{N}` in both encodings' split patterns. */
const isAsciiPunct = (c: number): boolean => c > 32 && c < 127 && !isAsciiAlnum(c)

/** Trailing punctuation runs longer than this are counted joined rather than reasoned about. */
const maxTail = 64

/**
 * {@link JoiningTokenizer.blankLineJoin} for the tiktoken encodings (cl100k_base, o200k_base).
 * Both split text into pieces with a regular expression (no look-behind) and merge bytes only
 * within a piece, so a count is the sum of its pieces' counts, and a join changes only the pieces
 * that touch it. With `left` ending and `right` starting in an ASCII character other than
 * whitespace (and `right` not starting with `/`, which o200k's punctuation piece takes after
 * newlines), the blank line is one piece `\n\n` that ends where `right` starts, so `right`
 * splits as it does alone; `left` splits as alone except its last piece: after a letter or digit
 * nothing changes (the blank line adds `count("\n\n")`), after a run of punctuation (with the
 * space before it, if any) the run takes the newlines (` ?[^\s\p{L}\p{N}]+[\r\n]*`), which
 * adds `count(run + "\n\n") - count(run)`. Texts with a run the counter slices (see
 * {@link maxRunChars}) are left to the caller. `test/engines/tokenizer.test.ts` checks the sum
 * against the count of the joined text on real documents for both encodings.
 */
const blankLineJoin = (count: (text: string) => number) => {
  const blankLine = count("\n\n")
  const tails = new Map<string, number>()
  return (left: string, right: string): number | undefined => {
    if (left.length === 0 || right.length === 0) return undefined
    const first = right.charCodeAt(0)
    if (first === 47 || !(isAsciiAlnum(first) || isAsciiPunct(first))) return undefined
    const last = left.charCodeAt(left.length - 1)
    const punct = isAsciiPunct(last)
    if (!punct && !isAsciiAlnum(last)) return undefined
    if ((left.length > maxRunChars && hasLongRun(left)) || (right.length > maxRunChars && hasLongRun(right))) return undefined
    if (!punct) return blankLine
    let from = left.length - 1
    while (from > 0 && left.length - from <= maxTail && isAsciiPunct(left.charCodeAt(from - 1))) from--
    if (left.length - from > maxTail) return undefined
    if (from > 0) {
      const before = left.charCodeAt(from - 1)
      if (before === 32) from--
      else if (!isAsciiAlnum(before)) return undefined
    }
    const tail = left.slice(from)
    let delta = tails.get(tail)
    if (delta === undefined) {
      delta = count(tail + "\n\n") - count(tail)
      if (tails.size >= 4096) tails.clear()
      tails.set(tail, delta)
    }
    return delta
  }
}

/**
 * The encodings' pre-tokenisation patterns (tiktoken's, as gpt-tokenizer spells them): a text's
 * count is the sum of the counts of the pieces these split it into, BPE merging only within a
 * piece.
 */
const contraction = String.raw`'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])`
const splitPatterns: Record<TiktokenEncoding, string> = {
  cl100k_base: String.raw`${contraction}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+(?!\S)|\s`,
  o200k_base: String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:${contraction})?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:${contraction})?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
}

/** Pieces kept in the memo of piece counts, and the longest piece kept there. */
const memoPieces = 65_536
const memoPieceChars = 64

/**
 * Counts a text piece by piece, each piece's count remembered (a bounded memo: cleared when
 * full). Why: prose repeats its words, and a memo hit costs one lookup in a small map where
 * gpt-tokenizer looks each piece up in its 100,000-rank table and keeps its merge cache in
 * recency order (a delete and a set per hit): this counts SciFact abstracts in about half the
 * CPU. Exact: a piece alone splits into itself (the patterns' alternatives are greedy, their
 * look-ahead and end anchors only lengthen a whitespace piece, which then ends where the piece
 * does), so `countPiece(piece)` is the piece's BPE count, and the sum is the text's count.
 */
const pieceCounter = (pattern: string, countPiece: (piece: string) => number) => {
  const split = new RegExp(pattern, "gu")
  const memo = new Map<string, number>()
  return (text: string): number => {
    let total = 0
    split.lastIndex = 0
    for (let m = split.exec(text); m !== null; m = split.exec(text)) {
      const piece = m[0]
      let n = memo.get(piece)
      if (n === undefined) {
        n = countPiece(piece)
        if (piece.length <= memoPieceChars) {
          if (memo.size >= memoPieces) memo.clear()
          memo.set(piece, n)
        }
      }
      total += n
    }
    return total
  }
}

/** Whether every UTF-16 unit of `s` is ASCII. */
const isAsciiText = (s: string): boolean => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) return false
  return true
}

/**
 * The BPE token count of an ASCII piece: tiktoken's merge (the adjacent pair of lowest rank
 * merged first, the leftmost of equal ranks), as gpt-tokenizer's `bytePairMerge` runs it, over
 * the piece's characters, which are its bytes. Why: gpt-tokenizer looks each candidate pair up
 * by its bytes (a UTF-8 check and a `TextDecoder` call per pair), which made the first sight of a
 * word a tenth of an ingest's CPU; a slice of an ASCII string is the same key without either.
 */
const asciiMergeCount = (piece: string, rankOf: ReadonlyMap<string, number>): number => {
  const starts: Array<number> = []
  const ranks: Array<number> = []
  const rank = (i: number): number => {
    const end = starts[i + 2]
    return end === undefined ? Infinity : (rankOf.get(piece.slice(starts[i], end)) ?? Infinity)
  }
  for (let i = 0; i <= piece.length; i++) starts.push(i)
  for (let i = 0; i <= piece.length; i++) ranks.push(rank(i))
  while (starts.length > 1) {
    let lowest = Infinity
    let at = -1
    for (let i = 0; i < ranks.length - 1; i++) {
      if (ranks[i]! < lowest) {
        lowest = ranks[i]!
        at = i
      }
    }
    if (at === -1) break
    starts.splice(at + 1, 1)
    ranks.splice(at, 1)
    ranks[at] = rank(at)
    if (at > 0) ranks[at - 1] = rank(at - 1)
  }
  return starts.length - 1
}

/**
 * The encoding's ranks by token text, when the gpt-tokenizer instance exposes them as it does
 * (4.x: `bytePairEncodingCoreProcessor.bytePairStringRankEncoder`, a `Map` built once at load),
 * checked against its own counts on a few texts; undefined otherwise (every piece is then
 * counted by gpt-tokenizer). Reused, not rebuilt: building a 100,000-entry map costs a start-up.
 */
const stringRanks = (
  api: unknown,
  countTokens: (text: string) => number
): ReadonlyMap<string, number> | undefined => {
  const core = (api as { bytePairEncodingCoreProcessor?: { bytePairStringRankEncoder?: unknown } } | undefined)
    ?.bytePairEncodingCoreProcessor
  const ranks = core?.bytePairStringRankEncoder
  if (!(ranks instanceof Map) || ranks.size < 50_000) return undefined
  const probes = [" hello", "tokenization", " antidisestablishmentarianism", "   ", "!!!?", " 12", "xyzzyqwv"]
  return probes.every((p) => asciiMergeCount(p, ranks as Map<string, number>) === countTokens(p))
    ? (ranks as Map<string, number>)
    : undefined
}

/** Loads a tiktoken encoding (no network: the ranks are part of the package). */
export const tiktoken = async (encoding: TiktokenEncoding = "cl100k_base"): Promise<JoiningTokenizer> => {
  const mod = encoding === "o200k_base"
    ? await import("gpt-tokenizer/encoding/o200k_base")
    : await import("gpt-tokenizer/encoding/cl100k_base")
  const countTokens = (piece: string) => mod.countTokens(piece, asText)
  const ranks = stringRanks(mod.default, countTokens)
  const countPiece = ranks === undefined
    ? countTokens
    : (piece: string) => (!isAsciiText(piece) ? countTokens(piece) : ranks.has(piece) ? 1 : asciiMergeCount(piece, ranks))
  const count = bounded(pieceCounter(splitPatterns[encoding], countPiece))
  return { name: encoding, count, blankLineJoin: blankLineJoin(count) }
}
