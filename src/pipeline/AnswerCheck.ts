/**
 * Checks an answer against its citations: each sentence is scored by how much of it the
 * passages it cites contain, and marked when they do not support it.
 *
 * The score is lexical: the share of the sentence's content words (lower-cased, stemmed, stop
 * words and citation marks left out) that occur in the cited passages (text and title). A
 * sentence is `supported` at {@link defaultThreshold} (0.5) or more, `unsupported` below, or
 * when every number it cites points at no source; `uncited` when it has content words but
 * cites nothing; `no-claim` when it has no content word ("That is all."). A paraphrase in
 * other words scores low, and a sentence that copies words but reverses their meaning scores
 * high: the check finds claims with no trace in their sources, it does not prove the others.
 *
 * @since 0.1.0
 */
import { analyze } from "../store/TextAnalysis.js"
import type { Answer, Source } from "./Answer.js"
import { parseCitations } from "./internal/answer-citations.js"

/**
 * The default support threshold: at least half the sentence's content words in its cited passages.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultThreshold = 0.5

/**
 * One sentence of an answer, checked.
 *
 * @since 0.1.0
 * @category models
 */
export interface SentenceCheck {
  /** The sentence as written, citation marks included. */
  readonly text: string
  /** Offset of the sentence in the answer text. */
  readonly offset: number
  /** The numbers it cites, each once, in order. */
  readonly cited: ReadonlyArray<number>
  /** Share of its content words found in the cited passages (undefined: no citation or no content word). */
  readonly support: number | undefined
  readonly status: "supported" | "unsupported" | "uncited" | "no-claim"
}

/**
 * The check of a whole answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Check {
  readonly threshold: number
  readonly sentences: ReadonlyArray<SentenceCheck>
  readonly supported: number
  readonly unsupported: number
  readonly uncited: number
}

/**
 * Splits a text into sentences: after `.`, `!` or `?` (and the citation marks right after it) followed by a space, or at a line break.
 *
 * @since 0.1.0
 * @category utils
 */
export const sentences = (text: string): Array<{ readonly text: string; readonly offset: number }> => {
  const out: Array<{ text: string; offset: number }> = []
  const boundary = /[.!?]+(?:\s*\[[^\]\n]{1,40}\])*(?=\s|$)|\n+/g
  let start = 0
  const push = (end: number) => {
    const raw = text.slice(start, end)
    const lead = raw.length - raw.trimStart().length
    const s = raw.trim()
    if (s !== "") out.push({ text: s, offset: start + lead })
  }
  for (const m of text.matchAll(boundary)) {
    const end = m[0].startsWith("\n") ? m.index : m.index + m[0].length
    push(end)
    start = m.index + m[0].length
  }
  push(text.length)
  return out
}

const contentTerms = (text: string): Set<string> =>
  new Set(analyze(text.replace(/\[[^\]\n]{1,40}\]/g, " ")).map((t) => t.term))

/**
 * Checks each sentence of an answer against the sources it cites (see the module doc for the
 * score and the statuses). Pure: no model, no I/O.
 *
 * @since 0.1.0
 * @category utils
 */
export const check = (
  answer: Pick<Answer, "text" | "sources">,
  options: { readonly threshold?: number | undefined } = {}
): Check => {
  const threshold = options.threshold ?? defaultThreshold
  const byN = new Map<number, Source>(answer.sources.map((s) => [s.n, s]))
  const termsOf = new Map<number, Set<string>>()
  const sourceTerms = (n: number): Set<string> | undefined => {
    const s = byN.get(n)
    if (s === undefined) return undefined
    let t = termsOf.get(n)
    if (t === undefined) termsOf.set(n, (t = contentTerms(`${s.title ?? ""} ${s.text}`)))
    return t
  }
  const out: Array<SentenceCheck> = []
  for (const s of sentences(answer.text)) {
    const cited = [...new Set(parseCitations(s.text).map((c) => c.n))]
    const terms = contentTerms(s.text)
    if (terms.size === 0) {
      out.push({ ...s, cited, support: undefined, status: "no-claim" })
      continue
    }
    if (cited.length === 0) {
      out.push({ ...s, cited, support: undefined, status: "uncited" })
      continue
    }
    const known = cited.map(sourceTerms).filter((t): t is Set<string> => t !== undefined)
    let found = 0
    for (const t of terms) if (known.some((k) => k.has(t))) found++
    const support = found / terms.size
    out.push({ ...s, cited, support, status: support >= threshold ? "supported" : "unsupported" })
  }
  return {
    threshold,
    sentences: out,
    supported: out.filter((s) => s.status === "supported").length,
    unsupported: out.filter((s) => s.status === "unsupported").length,
    uncited: out.filter((s) => s.status === "uncited").length
  }
}

/**
 * The check as text: a summary line, then each unsupported or uncited sentence.
 *
 * @since 0.1.0
 * @category utils
 */
export const format = (c: Check): string => {
  const claims = c.sentences.filter((s) => s.status !== "no-claim").length
  const lines = [
    `Check (lexical support, threshold ${c.threshold}): ${c.supported} of ${claims} sentence(s) supported by their citations, ${c.unsupported} unsupported, ${c.uncited} without citation`
  ]
  for (const s of c.sentences) {
    if (s.status === "unsupported") lines.push(`  unsupported (${s.support!.toFixed(2)}): ${s.text}`)
    else if (s.status === "uncited") lines.push(`  no citation: ${s.text}`)
  }
  return lines.join("\n")
}
