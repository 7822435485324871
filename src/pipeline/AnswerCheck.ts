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
 * {@link judge} asks a chat model instead, sentence by sentence, whether the cited passages
 * support the sentence (the prompt is {@link judgePrompt}, versioned by
 * {@link judgePromptVersion}): it reads paraphrases and negations the lexical score cannot, at
 * the price of one model call per cited sentence, and it inherits the model's errors.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import * as Chat from "../api/Chat.js"
import * as RagError from "../RagError.js"
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
  /**
   * With {@link judge}: the model's verdict (`partial` counts as unsupported in `status`), or
   * `unreadable` when its reply named none (then `status` is the lexical one).
   */
  readonly verdict?: "supported" | "partial" | "unsupported" | "unreadable" | undefined
}

/**
 * The check of a whole answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Check {
  /** `lexical` ({@link check}) or `judge` ({@link judge}: a chat model's verdicts). */
  readonly method?: "lexical" | "judge" | undefined
  /** With {@link judge}: the model that judged. */
  readonly model?: string | undefined
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
  return summarise("lexical", undefined, threshold, out)
}

const summarise = (method: "lexical" | "judge", model: string | undefined, threshold: number, out: ReadonlyArray<SentenceCheck>): Check => ({
  method,
  ...(model === undefined ? {} : { model }),
  threshold,
  sentences: out,
  supported: out.filter((s) => s.status === "supported").length,
  unsupported: out.filter((s) => s.status === "unsupported").length,
  uncited: out.filter((s) => s.status === "uncited").length
})

/**
 * The version of {@link judgePrompt}; recorded with every judged check.
 *
 * @since 0.1.0
 * @category constants
 */
export const judgePromptVersion = "judge-1"

/**
 * The judge's instructions (the system message of each call).
 *
 * @since 0.1.0
 * @category constants
 */
export const judgePrompt = [
  "You check whether a sentence of an answer is supported by the passages it cites.",
  "Judge only from the passages, not from what you know. A sentence is SUPPORTED when the passages state or directly imply everything it claims;",
  "PARTIAL when they support some of its claims but not all; UNSUPPORTED when they do not support it or contradict it.",
  "Reply with exactly one word: SUPPORTED, PARTIAL or UNSUPPORTED."
].join("\n")

/**
 * Options of {@link judge}.
 *
 * @since 0.1.0
 * @category models
 */
export interface JudgeOptions {
  /** The chat model (default: the Chat layer's `defaultModel`, e.g. `EFFECT_RAG_CHAT_MODEL`). */
  readonly model?: string | undefined
  /** The lexical threshold for sentences the judge could not read (default 0.5). */
  readonly threshold?: number | undefined
  /** Model calls at once (default 4). */
  readonly concurrency?: number | undefined
}

/**
 * Reads a verdict from a reply: the first of the three words it contains (`unreadable` when none).
 *
 * @since 0.1.0
 * @category utils
 */
export const readVerdict = (reply: string): "supported" | "partial" | "unsupported" | "unreadable" => {
  const m = /\b(UNSUPPORTED|NOT\s+SUPPORTED|PARTIAL(?:LY)?|SUPPORTED)\b/i.exec(reply)
  if (m === null) return "unreadable"
  const w = m[1]!.toUpperCase()
  return w.startsWith("PARTIAL") ? "partial" : w === "SUPPORTED" ? "supported" : "unsupported"
}

/**
 * Checks each cited sentence with a chat model: one call per sentence with the sentence and the
 * passages it cites, {@link judgePrompt} as instructions, temperature 0. Sentences without a
 * citation or a content word keep their lexical status (`uncited`, `no-claim`); a reply that
 * names no verdict keeps the lexical status and is marked `unreadable`. Fails with the chat
 * service's errors (no model configured: a `ConfigurationError` naming `EFFECT_RAG_CHAT_MODEL`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const judge = (
  answer: Pick<Answer, "text" | "sources">,
  options: JudgeOptions = {}
): Effect.Effect<Check, RagError.ApiError | RagError.ConfigurationError, Chat.Chat> =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const model = options.model ?? Option.getOrUndefined(chat.defaultModel)
    if (model === undefined || model === "") {
      return yield* new RagError.ConfigurationError({ endpoint: "POST /v1/chat/completions", message: "the judge needs a chat model: set EFFECT_RAG_CHAT_MODEL or pass a model" })
    }
    const lexical = check(answer, { threshold: options.threshold })
    const byN = new Map<number, Source>(answer.sources.map((s) => [s.n, s]))
    const judged = yield* Effect.forEach(
      lexical.sentences,
      (s) => {
        if (s.status === "uncited" || s.status === "no-claim") return Effect.succeed(s)
        const passages = s.cited
          .map((n) => byN.get(n))
          .filter((x): x is Source => x !== undefined)
          .map((src) => `[${src.n}] ${src.title === undefined || src.title === "" ? "" : `${src.title}\n`}${src.text}`)
        if (passages.length === 0) return Effect.succeed(s)
        return chat.create({
          model,
          temperature: 0,
          messages: [
            { role: "system", content: judgePrompt },
            { role: "user", content: `Passages:\n${passages.join("\n\n")}\n\nSentence: ${s.text.replace(/\s*\[[^\]\n]{1,40}\]/g, "").trim()}` }
          ]
        }).pipe(Effect.map((r): SentenceCheck => {
          const verdict = readVerdict(r.choices[0]?.message.content ?? "")
          return verdict === "unreadable" ? { ...s, verdict } : { ...s, verdict, status: verdict === "supported" ? "supported" : "unsupported" }
        }))
      },
      { concurrency: Math.max(1, options.concurrency ?? 4) }
    )
    return summarise("judge", model, lexical.threshold, judged)
  }).pipe(Effect.withSpan("AnswerCheck.judge"))

/**
 * The check as text: a summary line, then each unsupported or uncited sentence.
 *
 * @since 0.1.0
 * @category utils
 */
export const format = (c: Check): string => {
  const claims = c.sentences.filter((s) => s.status !== "no-claim").length
  const how = c.method === "judge" ? `judged by ${c.model ?? "the chat model"}` : `lexical support, threshold ${c.threshold}`
  const lines = [
    `Check (${how}): ${c.supported} of ${claims} sentence(s) supported by their citations, ${c.unsupported} unsupported, ${c.uncited} without citation`
  ]
  for (const s of c.sentences) {
    if (s.status === "unsupported") lines.push(`  ${s.verdict === "partial" ? "partly supported" : "unsupported"} (${s.verdict === undefined ? s.support!.toFixed(2) : `lexical ${s.support!.toFixed(2)}`}): ${s.text}`)
    else if (s.status === "uncited") lines.push(`  no citation: ${s.text}`)
  }
  return lines.join("\n")
}
