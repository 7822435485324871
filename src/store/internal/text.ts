/**
 * Text analysis shared by the in-memory BM25 index, the query rewriting of the LanceDB adapter
 * (pseudo-relevance feedback, proximity) and the benchmark: lower-casing, splitting on anything
 * that is not a letter or digit, the Lucene English stop words (the list LanceDB's tantivy
 * analyzer uses) and the Porter stemmer.
 */
import { stemmer } from "stemmer"

/** Lucene's English stop set, the same list LanceDB's full-text analyzer removes. */
export const stopWords: ReadonlySet<string> = new Set([
  "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
  "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
  "they", "this", "to", "was", "will", "with"
])

const wordPattern = /[\p{L}\p{N}]+/gu

/** Splits a text into lower-case words (letters and digits), in order. */
export const words = (text: string): Array<string> => text.toLowerCase().match(wordPattern) ?? []

const stemCache = new Map<string, string>()

/** The Porter stem of a lower-case word (cached; the cache is bounded). */
export const stem = (word: string): string => {
  let s = stemCache.get(word)
  if (s === undefined) {
    s = /^\p{N}/u.test(word) ? word : stemmer(word)
    if (stemCache.size > 200_000) stemCache.clear()
    stemCache.set(word, s)
  }
  return s
}

/** One analysed token: its stem and the surface word it came from. */
export interface Token {
  readonly term: string
  readonly word: string
  /** Position among all words of the text (stop words count), for proximity. */
  readonly position: number
}

/** Analyses a text into stemmed tokens without stop words, keeping word positions. */
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

/** The stemmed terms of a text (stop words removed), in order. */
export const terms = (text: string): Array<string> => analyze(text).map((t) => t.term)
