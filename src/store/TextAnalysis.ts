/**
 * Text analysis shared by the in-memory BM25 index, the query rewriting of the LanceDB adapter
 * (pseudo-relevance feedback, proximity) and the benchmark: lower-casing, splitting on anything
 * that is not a letter or digit, the English stop words LanceDB's analyzer drops and the Porter
 * stemmer (LanceDB stems with Snowball's English stemmer: a few words stem differently).
 *
 * @since 0.1.0
 */
import { stemmer } from "stemmer"

/**
 * The English stop words LanceDB's full-text analyzer drops (its Snowball list, applied after
 * stemming): every word of that list that a LanceDB index was seen to drop, probed one by one.
 * A listed word whose stem is not listed (`very` → `veri`, `because` → `becaus`) is kept, in
 * LanceDB and here.
 *
 * @since 0.1.0
 * @category constants
 */
export const stopWords: ReadonlySet<string> = new Set([
  "i", "me", "my", "myself", "we", "our", "ours", "you", "your", "yours", "yourself", "he", "him",
  "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "they", "them", "their",
  "theirs", "what", "which", "who", "whom", "this", "that", "these", "those", "am", "is", "are",
  "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "did", "doing",
  "should", "a", "an", "the", "and", "but", "if", "or", "as", "until", "while", "of", "at", "by",
  "for", "with", "about", "against", "between", "into", "through", "after", "below", "to", "from",
  "up", "down", "in", "out", "on", "off", "over", "under", "again", "further", "then", "here",
  "there", "when", "where", "how", "all", "both", "each", "few", "more", "most", "other", "some",
  "such", "no", "nor", "not", "own", "same", "so", "than", "too", "s", "t", "can", "will", "just",
  "don", "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "couldn", "didn", "doesn",
  "hadn", "hasn", "haven", "isn", "ma", "mightn", "mustn", "needn", "shan", "shouldn", "wasn",
  "weren", "won", "wouldn"
])

const wordPattern = /[\p{L}\p{N}]+/gu

/**
 * Splits a text into lower-case words (letters and digits), in order.
 *
 * @since 0.1.0
 * @category utils
 */
export const words = (text: string): Array<string> => text.toLowerCase().match(wordPattern) ?? []

const stemCache = new Map<string, string>()

/**
 * The Porter stem of a lower-case word (cached; the cache is bounded).
 *
 * @since 0.1.0
 * @category utils
 */
export const stem = (word: string): string => {
  let s = stemCache.get(word)
  if (s === undefined) {
    s = /^\p{N}/u.test(word) ? word : stemmer(word)
    if (stemCache.size > 200_000) stemCache.clear()
    stemCache.set(word, s)
  }
  return s
}

/**
 * One analysed token: its stem and the surface word it came from.
 *
 * @since 0.1.0
 * @category models
 */
export interface Token {
  readonly term: string
  readonly word: string
  /** Position among all words of the text (stop words count), for proximity. */
  readonly position: number
}

/**
 * Analyses a text into stemmed tokens without stop words, keeping word positions.
 *
 * @since 0.1.0
 * @category utils
 */
export const analyze = (text: string, maxTokenLength = 40, stemming = true): Array<Token> => {
  const out: Array<Token> = []
  const ws = words(text)
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i]!
    if (w.length > maxTokenLength || stopWords.has(w)) continue
    out.push({ term: stemming ? stem(w) : w, word: w, position: i })
  }
  return out
}

/**
 * The stemmed terms of a text (stop words removed), in order (what {@link analyze} gives, without positions).
 *
 * @since 0.1.0
 * @category utils
 */
export const terms = (text: string, maxTokenLength = 40): Array<string> => {
  const out: Array<string> = []
  for (const w of words(text)) if (w.length <= maxTokenLength && !stopWords.has(w)) out.push(stem(w))
  return out
}

/**
 * Where the terms of a query occur in a text: the character ranges `[start, end)` of the words
 * whose analysed term (lower-cased, stop words dropped, stemmed as {@link analyze} does) is one
 * of `queryTerms`, in order. A query for `lighthouses` marks `lighthouse` and `Lighthouse's`
 * word `Lighthouse`, never the `light` inside `lighthouse`: words are matched whole, by stem.
 *
 * @since 0.1.0
 * @category utils
 */
export const matchSpans = (text: string, queryTerms: ReadonlySet<string>, maxTokenLength = 40): Array<readonly [number, number]> => {
  const out: Array<readonly [number, number]> = []
  if (queryTerms.size === 0) return out
  for (const m of text.matchAll(wordPattern)) {
    const w = m[0].toLowerCase()
    if (w.length > maxTokenLength || stopWords.has(w)) continue
    if (queryTerms.has(stem(w))) out.push([m.index, m.index + m[0].length])
  }
  return out
}
