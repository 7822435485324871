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

/** Loads a tiktoken encoding (no network: the ranks are part of the package). */
export const tiktoken = async (encoding: TiktokenEncoding = "cl100k_base"): Promise<Tokenizer> => {
  const { countTokens } = encoding === "o200k_base"
    ? await import("gpt-tokenizer/encoding/o200k_base")
    : await import("gpt-tokenizer/encoding/cl100k_base")
  return { name: encoding, count: bounded((text) => countTokens(text, asText)) }
}
