/**
 * Retrieval measured on your own collection: build a judged test set from it, run retrieval
 * modes on the set, compare them with paired-bootstrap confidence intervals, and gate a change
 * on a saved run.
 *
 * - {@link build} samples chunks (stratified across documents, seeded) and makes one
 *   *known-item* query per chunk from its most distinctive words (tf × BM25 idf against the
 *   collection): offline, no model, and easier than real questions (the query words are in the
 *   chunk, which favours full text).
 * - {@link buildWithModel} asks a chat model for questions about each sampled chunk with the
 *   shipped prompt ({@link questionPrompt}, version {@link promptVersion}); a question that
 *   copies the chunk (more than {@link defaultMaxOverlap} of its word bigrams found in the chunk)
 *   is rejected.
 * - {@link writeSet} writes the set as a BEIR folder (`corpus.jsonl` of the collection's
 *   documents, `queries.jsonl`, `qrels/test.tsv`) with `manifest.json` recording how it was made;
 *   every BEIR runner reads it. {@link readSet} reads it back.
 * - {@link run} runs named retrieval settings on a set and {@link compare} gives the means with
 *   95 % paired-bootstrap intervals and the differences with the first setting;
 *   {@link compareWithBaseline} compares with a saved run.
 * - {@link citationPrecision} asks the set's questions through `Answer.ask` and reports how many
 *   cited sentences their passages support (`AnswerCheck`).
 *
 * Building and running read the whole collection, unrestricted by access lists (an operator's
 * measurement, like the benchmarks); {@link citationPrecision} asks as the `Principal` in its
 * context.
 *
 * Relevance is at the document level: a query's relevant document is the one its chunk came
 * from, so collections chunked differently are compared on the same judgements.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Chat from "../api/Chat.js"
import * as Answer from "../pipeline/Answer.js"
import * as AnswerCheck from "../pipeline/AnswerCheck.js"
import type * as Principal from "../pipeline/Principal.js"
import type * as RagError from "../RagError.js"
import * as Retrieve from "../pipeline/Retrieve.js"
import { analyze, words } from "../store/TextAnalysis.js"
import type { Collection, Hit, VectorStoreError } from "../store/VectorStore.js"
import * as Metrics from "./Metrics.js"

// =============================================================================
// Errors and data
// =============================================================================

/**
 * The set cannot be built, read or written, or a run cannot be compared.
 *
 * @since 0.1.0
 * @category errors
 */
export class EvalError extends Data.TaggedError("EvalError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * Judgements: query id -> relevant document id -> grade (as BEIR's `qrels/test.tsv`).
 *
 * @since 0.1.0
 * @category models
 */
export type Qrels = ReadonlyMap<string, ReadonlyMap<string, number>>

/**
 * One corpus document of a set (BEIR `corpus.jsonl` line).
 *
 * @since 0.1.0
 * @category models
 */
export interface SetDocument {
  readonly _id: string
  readonly title: string
  readonly text: string
}

/**
 * One query of a set (BEIR `queries.jsonl` line; `metadata` says where it came from).
 *
 * @since 0.1.0
 * @category models
 */
export interface SetQuery {
  readonly _id: string
  readonly text: string
  readonly metadata: { readonly chunk: string; readonly document: string }
}

/**
 * How a set was made (`manifest.json`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Manifest {
  readonly format: "effect-rag-eval-set"
  readonly version: 1
  /** `known-item` (offline) or `generated` (a chat model wrote the questions). */
  readonly method: "known-item" | "generated"
  readonly model: string | null
  /** The prompt's version (generated sets only). */
  readonly promptVersion: string | null
  readonly seed: number
  /** The number of chunks asked for. */
  readonly size: number
  /** The chunks sampled (fewer than `size` when the collection has fewer usable chunks). */
  readonly sampledChunks: number
  readonly queries: number
  readonly collection: string
  readonly documents: number
  readonly chunks: number
  /** Relevance level: the document a query's chunk belongs to. */
  readonly target: "document"
  readonly createdAt: string
  /** The method's settings (query terms, questions per chunk, overlap threshold). */
  readonly settings: Record<string, unknown>
  /** Questions the model wrote that were rejected, by reason (generated sets). */
  readonly rejected: Record<string, number>
}

/**
 * A test set in memory.
 *
 * @since 0.1.0
 * @category models
 */
export interface TestSet {
  readonly manifest: Manifest
  readonly corpus: ReadonlyArray<SetDocument>
  readonly queries: ReadonlyArray<SetQuery>
  /** Query id -> relevant document id -> grade. */
  readonly qrels: Qrels
}

// =============================================================================
// Seeded randomness
// =============================================================================

/**
 * A seeded generator of uniform numbers in [0, 1) (mulberry32: the same seed gives the same sequence everywhere).
 *
 * @since 0.1.0
 * @category utils
 */
export const random = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const shuffle = <A>(xs: ReadonlyArray<A>, next: () => number): Array<A> => {
  const out = [...xs]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

// =============================================================================
// Sampling
// =============================================================================

/**
 * Chunks with fewer words are never sampled (too little to ask about).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMinWords = 12

const byId = (a: Hit, b: Hit) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * Samples `size` chunks stratified across documents: documents take turns (in a seeded order),
 * each giving its next chunk (in a seeded order) until the size is reached or the chunks run
 * out, so every document is represented before any gives a second chunk. Chunks of fewer than
 * `minWords` words are left out.
 *
 * @since 0.1.0
 * @category utils
 */
export const sample = (
  chunks: ReadonlyArray<Hit>,
  options: { readonly size: number; readonly seed: number; readonly minWords?: number | undefined }
): Array<Hit> => {
  const next = random(options.seed)
  const minWords = options.minWords ?? defaultMinWords
  const byDoc = new Map<string, Array<Hit>>()
  for (const c of [...chunks].sort(byId)) {
    if (words(c.text).length < minWords) continue
    const list = byDoc.get(c.documentId)
    if (list === undefined) byDoc.set(c.documentId, [c])
    else list.push(c)
  }
  const queues = shuffle([...byDoc.keys()].sort(), next).map((d) => shuffle(byDoc.get(d)!, next))
  const out: Array<Hit> = []
  while (out.length < options.size && queues.some((q) => q.length > 0)) {
    for (const q of queues) {
      if (out.length >= options.size) break
      const c = q.shift()
      if (c !== undefined) out.push(c)
    }
  }
  return out
}

// =============================================================================
// Known-item queries
// =============================================================================

/**
 * Words of a known-item query (default 4).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultQueryTerms = 4

/**
 * Document frequencies of the analysed terms over chunks.
 *
 * @since 0.1.0
 * @category models
 */
export interface TermStats {
  readonly chunks: number
  readonly df: ReadonlyMap<string, number>
}

/**
 * Counts in how many chunks each analysed term occurs (title and text).
 *
 * @since 0.1.0
 * @category utils
 */
export const termStats = (chunks: ReadonlyArray<Hit>): TermStats => {
  const df = new Map<string, number>()
  for (const c of chunks) {
    const seen = new Set(analyze(`${c.title ?? ""} ${c.text}`).map((t) => t.term))
    for (const t of seen) df.set(t, (df.get(t) ?? 0) + 1)
  }
  return { chunks: chunks.length, df }
}

/**
 * The known-item query of a chunk: its `terms` most distinctive words, scored tf × idf with
 * BM25's idf `ln(1 + (N - df + 0.5) / (df + 0.5))` over the collection's chunks, written in the
 * order they first occur in the chunk. Words of fewer than 3 characters and words without a
 * letter are left out. Undefined when the chunk has fewer than 2 such words.
 *
 * @since 0.1.0
 * @category utils
 */
export const knownItemQuery = (chunk: Hit, stats: TermStats, terms = defaultQueryTerms): string | undefined => {
  const tokens = analyze(chunk.text).filter((t) => t.word.length >= 3 && /\p{L}/u.test(t.word))
  const tf = new Map<string, { n: number; word: string; first: number }>()
  for (const t of tokens) {
    const cur = tf.get(t.term)
    if (cur === undefined) tf.set(t.term, { n: 1, word: t.word, first: t.position })
    else cur.n++
  }
  const n = stats.chunks
  const scored = [...tf.entries()].map(([term, v]) => {
    const df = stats.df.get(term) ?? 1
    return { ...v, term, score: v.n * Math.log(1 + (n - df + 0.5) / (df + 0.5)) }
  }).sort((a, b) => b.score - a.score || a.first - b.first)
  const top = scored.slice(0, terms)
  if (top.length < 2) return undefined
  return top.sort((a, b) => a.first - b.first).map((t) => t.word).join(" ")
}

// =============================================================================
// Generated questions
// =============================================================================

/**
 * The version of {@link questionPrompt}; recorded in every generated set's manifest.
 *
 * @since 0.1.0
 * @category utils
 */
export const promptVersion = "eval-questions/1"

/**
 * Questions whose share of word bigrams found in the chunk is above this are rejected (default 0.5).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxOverlap = 0.5

/**
 * The system prompt of the question writer.
 *
 * @since 0.1.0
 * @category utils
 */
export const questionPrompt = [
  "You write questions to test a search engine over a document collection.",
  "You are given one passage from the collection. Write questions that this passage answers, as a person would ask them who has not seen the passage:",
  "use your own words, do not copy phrases from the passage, and make each question understandable on its own (name the subject; never say \"the passage\" or \"the text\").",
  "Write exactly the number of questions asked for, one per line, with no numbering and nothing else."
].join(" ")

/**
 * The user message for one passage.
 *
 * @since 0.1.0
 * @category utils
 */
export const questionRequest = (chunk: Pick<Hit, "text" | "title">, count: number, maxChars = 2000): string =>
  `Write ${count} question${count === 1 ? "" : "s"} about this passage${chunk.title ? ` (from "${chunk.title}")` : ""}.\n\nPassage:\n${chunk.text.slice(0, maxChars)}`

const bigrams = (text: string): Array<string> => {
  const w = words(text)
  const out: Array<string> = []
  for (let i = 0; i + 1 < w.length; i++) out.push(`${w[i]} ${w[i + 1]}`)
  return out
}

/**
 * The share of a question's word bigrams (lower-cased words, stop words kept) that occur in the
 * chunk: 0 for a question in its own words, 1 for a copied sentence.
 *
 * @since 0.1.0
 * @category utils
 */
export const overlap = (question: string, chunk: string): number => {
  const q = bigrams(question)
  if (q.length === 0) return 0
  const inChunk = new Set(bigrams(chunk))
  return q.filter((b) => inChunk.has(b)).length / q.length
}

/**
 * Reads the model's reply into questions: one a line, numbering and bullets removed.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseQuestions = (reply: string): Array<string> =>
  reply.split(/\r?\n/)
    .map((l) => l.replace(/^\s*(?:[-*•]|\d+[.)]|Q\d*[:.])\s*/i, "").trim())
    .filter((l) => l !== "")

// =============================================================================
// Build
// =============================================================================

/**
 * Options of {@link build}.
 *
 * @since 0.1.0
 * @category models
 */
export interface BuildOptions {
  /** Chunks to sample (default 50). */
  readonly size?: number | undefined
  /** Seed of the sampling (default 1). */
  readonly seed?: number | undefined
  /** Words of a known-item query (default {@link defaultQueryTerms}). */
  readonly queryTerms?: number | undefined
  /** Chunks with fewer words are not sampled (default {@link defaultMinWords}). */
  readonly minWords?: number | undefined
}

/**
 * Options of {@link buildWithModel}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelBuildOptions extends BuildOptions {
  /** The chat model (default: the Chat layer's default, `EFFECT_RAG_CHAT_MODEL`). */
  readonly model?: string | undefined
  /** Questions asked for each chunk (default 1). */
  readonly questionsPerChunk?: number | undefined
  /** The overlap threshold (default {@link defaultMaxOverlap}). */
  readonly maxOverlap?: number | undefined
  /** Chat requests in flight (default 4). */
  readonly concurrency?: number | undefined
}

/**
 * What building a set can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type BuildError = EvalError | VectorStoreError

const readChunks = (collection: Collection): Effect.Effect<ReadonlyArray<Hit>, BuildError> =>
  collection.scan === undefined
    ? Effect.fail(new EvalError({ message: `the store of collection ${collection.spec.name} cannot list its chunks (no scan)` }))
    : collection.scan()

const chunkOrder = (h: Hit): number => {
  const c = h.metadata["chunk"]
  return typeof c === "number" ? c : Number.MAX_SAFE_INTEGER
}

/**
 * The collection's documents as corpus lines: each document's chunks joined in chunk order.
 *
 * @since 0.1.0
 * @category utils
 */
export const corpusOf = (chunks: ReadonlyArray<Hit>): Array<SetDocument> => {
  const byDoc = new Map<string, Array<Hit>>()
  for (const c of chunks) {
    const list = byDoc.get(c.documentId)
    if (list === undefined) byDoc.set(c.documentId, [c])
    else list.push(c)
  }
  return [...byDoc.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, list]) => {
    const ordered = [...list].sort((a, b) => chunkOrder(a) - chunkOrder(b) || byId(a, b))
    return { _id: id, title: ordered.find((c) => c.title)?.title ?? "", text: ordered.map((c) => c.text).join("\n\n") }
  })
}

const qrelsOf = (queries: ReadonlyArray<SetQuery>): Qrels =>
  new Map(queries.map((q) => [q._id, new Map([[q.metadata.document, 1]])]))

const baseManifest = (collection: Collection, chunks: ReadonlyArray<Hit>, corpus: ReadonlyArray<SetDocument>, o: BuildOptions) => ({
  format: "effect-rag-eval-set" as const,
  version: 1 as const,
  seed: o.seed ?? 1,
  size: o.size ?? 50,
  collection: collection.spec.name,
  documents: corpus.length,
  chunks: chunks.length,
  target: "document" as const,
  createdAt: new Date().toISOString()
})

/**
 * Builds a known-item set from a collection, offline: samples chunks (see {@link sample}) and
 * makes one query per chunk ({@link knownItemQuery}). Fails with `EvalError` when the store
 * cannot list chunks or no chunk is usable.
 *
 * @since 0.1.0
 * @category utils
 */
export const build = (collection: Collection, options: BuildOptions = {}): Effect.Effect<TestSet, BuildError> =>
  Effect.gen(function*() {
    const chunks = yield* readChunks(collection)
    const picked = sample(chunks, { size: options.size ?? 50, seed: options.seed ?? 1, minWords: options.minWords })
    const stats = termStats(chunks)
    const queries: Array<SetQuery> = []
    for (const c of picked) {
      const text = knownItemQuery(c, stats, options.queryTerms ?? defaultQueryTerms)
      if (text !== undefined) queries.push({ _id: `q${queries.length + 1}`, text, metadata: { chunk: c.id, document: c.documentId } })
    }
    if (queries.length === 0) {
      return yield* new EvalError({ message: `collection ${collection.spec.name} has no chunk to make a query from (${chunks.length} chunks)` })
    }
    const corpus = corpusOf(chunks)
    return {
      manifest: {
        ...baseManifest(collection, chunks, corpus, options),
        method: "known-item",
        model: null,
        promptVersion: null,
        sampledChunks: picked.length,
        queries: queries.length,
        settings: { queryTerms: options.queryTerms ?? defaultQueryTerms, minWords: options.minWords ?? defaultMinWords },
        rejected: {}
      },
      corpus,
      queries,
      qrels: qrelsOf(queries)
    } satisfies TestSet
  }).pipe(Effect.withSpan("Eval.build"))

/**
 * Builds a set whose questions a chat model wrote: for each sampled chunk, `questionsPerChunk`
 * questions from {@link questionPrompt}; questions that copy the chunk (see {@link overlap}),
 * repeat another or have fewer than 3 words are rejected and counted in the manifest. Fails with
 * the chat service's `ApiError`, or `EvalError` when no model is configured or no question is
 * kept.
 *
 * @since 0.1.0
 * @category utils
 */
export const buildWithModel = (
  collection: Collection,
  options: ModelBuildOptions = {}
): Effect.Effect<TestSet, BuildError | RagError.ApiError, Chat.Chat> =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const model = options.model ?? (chat.defaultModel._tag === "Some" ? chat.defaultModel.value : undefined)
    if (model === undefined || model === "") {
      return yield* new EvalError({ message: "no chat model: set EFFECT_RAG_CHAT_MODEL or pass a model" })
    }
    const chunks = yield* readChunks(collection)
    const seed = options.seed ?? 1
    const picked = sample(chunks, { size: options.size ?? 50, seed, minWords: options.minWords })
    const perChunk = Math.max(1, options.questionsPerChunk ?? 1)
    const maxOverlap = options.maxOverlap ?? defaultMaxOverlap
    const replies = yield* Effect.forEach(picked, (c) =>
      chat.create({
        model,
        messages: [{ role: "system", content: questionPrompt }, { role: "user", content: questionRequest(c, perChunk) }],
        temperature: 0,
        seed
      }).pipe(Effect.map((r) => ({ chunk: c, text: r.choices[0]?.message.content ?? "" }))), { concurrency: Math.max(1, options.concurrency ?? 4) })
    const rejected: Record<string, number> = { overlap: 0, short: 0, duplicate: 0, extra: 0 }
    const seen = new Set<string>()
    const queries: Array<SetQuery> = []
    for (const { chunk, text } of replies) {
      let kept = 0
      for (const q of parseQuestions(text)) {
        const key = words(q).join(" ")
        if (kept >= perChunk) rejected["extra"]!++
        else if (words(q).length < 3) rejected["short"]!++
        else if (seen.has(key)) rejected["duplicate"]!++
        else if (overlap(q, chunk.text) > maxOverlap) rejected["overlap"]!++
        else {
          seen.add(key)
          kept++
          queries.push({ _id: `q${queries.length + 1}`, text: q, metadata: { chunk: chunk.id, document: chunk.documentId } })
        }
      }
    }
    if (queries.length === 0) {
      return yield* new EvalError({ message: `the model ${model} wrote no usable question for ${picked.length} chunks (rejected: ${JSON.stringify(rejected)})` })
    }
    const corpus = corpusOf(chunks)
    return {
      manifest: {
        ...baseManifest(collection, chunks, corpus, options),
        method: "generated",
        model,
        promptVersion,
        sampledChunks: picked.length,
        queries: queries.length,
        settings: { questionsPerChunk: perChunk, maxOverlap, minWords: options.minWords ?? defaultMinWords, temperature: 0 },
        rejected
      },
      corpus,
      queries,
      qrels: qrelsOf(queries)
    } satisfies TestSet
  }).pipe(Effect.withSpan("Eval.buildWithModel"))

// =============================================================================
// BEIR folder
// =============================================================================

/**
 * Writes a set as a BEIR folder with its `manifest.json` (files replaced).
 *
 * @since 0.1.0
 * @category utils
 */
export const writeSet = (dir: string, set: TestSet): Effect.Effect<void, EvalError> =>
  Effect.try({
    try: () => {
      mkdirSync(join(dir, "qrels"), { recursive: true })
      writeFileSync(join(dir, "corpus.jsonl"), set.corpus.map((d) => JSON.stringify(d)).join("\n") + "\n")
      writeFileSync(join(dir, "queries.jsonl"), set.queries.map((q) => JSON.stringify(q)).join("\n") + "\n")
      const rows = ["query-id\tcorpus-id\tscore"]
      for (const [qid, judged] of set.qrels) for (const [did, g] of judged) rows.push(`${qid}\t${did}\t${g}`)
      writeFileSync(join(dir, "qrels", "test.tsv"), rows.join("\n") + "\n")
      writeFileSync(join(dir, "manifest.json"), JSON.stringify(set.manifest, null, 2) + "\n")
    },
    catch: (cause) => new EvalError({ message: `cannot write the set to ${dir}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
  })

/**
 * A set read back: its manifest (when there is one), queries and judgements (the corpus is not read).
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadedSet {
  readonly dir: string
  readonly manifest: Manifest | undefined
  readonly queries: ReadonlyArray<{ readonly _id: string; readonly text: string }>
  readonly qrels: Qrels
}

/**
 * Reads a set folder (any BEIR folder: the manifest is optional); only judged queries are kept.
 *
 * @since 0.1.0
 * @category utils
 */
export const readSet = (dir: string): Effect.Effect<LoadedSet, EvalError> =>
  Effect.try({
    try: () => {
      let manifest: Manifest | undefined
      try {
        manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as Manifest
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e
      }
      const qrels = new Map<string, Map<string, number>>()
      for (const [i, raw] of readFileSync(join(dir, "qrels", "test.tsv"), "utf8").split(/\r?\n/).entries()) {
        const cols = raw.trim().split("\t")
        if (cols.length < 3 || (i === 0 && isNaN(Number(cols[2])))) continue
        const m = qrels.get(cols[0]!) ?? new Map<string, number>()
        m.set(cols[1]!, Number(cols[2]))
        qrels.set(cols[0]!, m)
      }
      const queries = readFileSync(join(dir, "queries.jsonl"), "utf8").split(/\r?\n/).filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as { _id: unknown; text: unknown })
        .map((q) => ({ _id: String(q._id), text: String(q.text) }))
        .filter((q) => qrels.has(q._id))
      return { dir, manifest, queries, qrels }
    },
    catch: (cause) => new EvalError({ message: `cannot read the set in ${dir}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
  })

// =============================================================================
// Paired bootstrap
// =============================================================================

/**
 * Bootstrap settings: resamples (default 1,000) and seed (default 1).
 *
 * @since 0.1.0
 * @category models
 */
export interface BootstrapOptions {
  readonly resamples?: number | undefined
  readonly seed?: number | undefined
}

/**
 * A mean with its 95 % bootstrap interval.
 *
 * @since 0.1.0
 * @category models
 */
export interface Interval {
  readonly mean: number
  readonly lo: number
  readonly hi: number
}

/**
 * A paired difference (`b - a`) with its 95 % interval; significant when the interval excludes 0.
 *
 * @since 0.1.0
 * @category models
 */
export interface Difference extends Interval {
  readonly significant: boolean
  /** Two-sided bootstrap p-value: twice the smaller share of resampled differences at or beyond 0 on either side (at most 1). */
  readonly p: number
}

const mean = (xs: ReadonlyArray<number>): number => (xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length)

/** The resampled query indices: `resamples` draws of `n` indices with replacement, seeded. */
const resampleIndices = (n: number, options: BootstrapOptions): Array<Uint32Array> => {
  const next = random(options.seed ?? 1)
  const b = Math.max(1, options.resamples ?? 1000)
  const out: Array<Uint32Array> = []
  for (let r = 0; r < b; r++) {
    const idx = new Uint32Array(n)
    for (let i = 0; i < n; i++) idx[i] = Math.floor(next() * n)
    out.push(idx)
  }
  return out
}

const percentileInterval = (stats: Array<number>): { lo: number; hi: number } => {
  stats.sort((x, y) => x - y)
  const b = stats.length
  return { lo: stats[Math.max(0, Math.floor(0.025 * b))]!, hi: stats[Math.min(b - 1, Math.ceil(0.975 * b) - 1)]! }
}

/**
 * The mean of per-query values with a 95 % percentile-bootstrap interval (queries resampled with replacement).
 *
 * @since 0.1.0
 * @category utils
 */
export const interval = (values: ReadonlyArray<number>, options: BootstrapOptions = {}): Interval => {
  const n = values.length
  if (n === 0) return { mean: 0, lo: 0, hi: 0 }
  const stats = resampleIndices(n, options).map((idx) => {
    let s = 0
    for (let i = 0; i < n; i++) s += values[idx[i]!]!
    return s / n
  })
  return { mean: mean(values), ...percentileInterval(stats) }
}

/**
 * The paired bootstrap of `b - a` over the same queries (`a[i]` and `b[i]` are one query's
 * values): each resample draws queries with replacement and takes the mean difference; the 95 %
 * interval is the 2.5th to 97.5th percentile. Significant when the interval lies strictly above
 * or below 0. Fails with `EvalError` when the two lists differ in length.
 *
 * @since 0.1.0
 * @category utils
 */
export const pairedDifference = (
  a: ReadonlyArray<number>,
  b: ReadonlyArray<number>,
  options: BootstrapOptions = {}
): Effect.Effect<Difference, EvalError> =>
  Effect.suspend(() => {
    if (a.length !== b.length) {
      return Effect.fail(new EvalError({ message: `paired bootstrap: ${a.length} and ${b.length} values (the same queries are needed)` }))
    }
    const n = a.length
    if (n === 0) return Effect.succeed({ mean: 0, lo: 0, hi: 0, significant: false, p: 1 })
    const d = a.map((x, i) => b[i]! - x)
    const stats = resampleIndices(n, options).map((idx) => {
      let s = 0
      for (let i = 0; i < n; i++) s += d[idx[i]!]!
      return s / n
    })
    const below = stats.filter((x) => x <= 0).length
    const above = stats.filter((x) => x >= 0).length
    const p = Math.min(1, (2 * Math.min(below, above)) / stats.length)
    const { lo, hi } = percentileInterval(stats)
    return Effect.succeed({ mean: mean(d), lo, hi, significant: lo > 0 || hi < 0, p })
  })

// =============================================================================
// Run
// =============================================================================

/**
 * One retrieval setting to measure: a name, a collection, and the retrieval options.
 *
 * @since 0.1.0
 * @category models
 */
export interface Setting {
  readonly name: string
  readonly collection: Collection
  /** Mode, embedder, reranker, full-text and fusion settings (the limit and grouping are the run's). */
  readonly retrieve: Omit<Retrieve.Options, "limit" | "groupBy">
}

/**
 * Options of {@link run}.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions extends BootstrapOptions {
  /** The k of Recall@k (default 100; nDCG and MRR are at 10). */
  readonly recallK?: number | undefined
}

/**
 * The metrics of one setting, per query (in the order of {@link RunReport.queryIds}).
 *
 * @since 0.1.0
 * @category models
 */
export interface PerQuery {
  readonly "ndcg@10": ReadonlyArray<number>
  readonly recall: ReadonlyArray<number>
  readonly "mrr@10": ReadonlyArray<number>
  readonly ms: ReadonlyArray<number>
}

/**
 * The metrics compared (per query and in intervals).
 *
 * @since 0.1.0
 * @category utils
 */
export const metrics = ["ndcg@10", "recall", "mrr@10"] as const

/**
 * One metric's name.
 *
 * @since 0.1.0
 * @category models
 */
export type Metric = (typeof metrics)[number]

/**
 * The figures of one setting.
 *
 * @since 0.1.0
 * @category models
 */
export interface SettingResult {
  readonly name: string
  readonly collection: string
  readonly mode: string
  readonly reranked: boolean
  readonly summary: Readonly<Record<Metric, Interval>> & { readonly p50_ms: number; readonly p95_ms: number }
  /** The paired difference with the first setting (absent for the first). */
  readonly vsFirst: Readonly<Record<Metric, Difference>> | undefined
  readonly perQuery: PerQuery
}

/**
 * A run; `JSON.stringify` gives the file `eval run --json` writes and `--baseline` reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunReport {
  readonly format: "effect-rag-eval-run"
  readonly version: 1
  readonly set: {
    readonly dir: string
    /** A hash of the judged queries and their judgements: runs compare only on the same set. */
    readonly id: string
    readonly method: string | null
    readonly model: string | null
    readonly queries: number
  }
  readonly recallK: number
  readonly resamples: number
  readonly seed: number
  readonly createdAt: string
  readonly queryIds: ReadonlyArray<string>
  readonly settings: ReadonlyArray<SettingResult>
}

/**
 * The id of a set's judged queries (sha-256 of the ids, texts and judgements, 16 hex digits).
 *
 * @since 0.1.0
 * @category utils
 */
export const setId = (set: LoadedSet): string => {
  const h = createHash("sha256")
  for (const q of set.queries) {
    h.update(`${q._id}\t${q.text}\n`)
    for (const [d, g] of [...(set.qrels.get(q._id) ?? new Map<string, number>())].sort(([x], [y]) => (x < y ? -1 : 1))) {
      h.update(`${d}\t${g}\n`)
    }
  }
  return h.digest("hex").slice(0, 16)
}

/**
 * Runs every judged query of the set in every setting (one after another, after one untimed
 * warm-up query: latency is measured without contention or model loading), and compares: each metric's mean with its 95 % bootstrap interval, and
 * the paired difference of each setting with the first. Fails with the retrieval's errors (an
 * embedder of another model than the collection's: `EmbeddingMismatch`; vector modes without
 * an embedder: `ConfigurationError`).
 *
 * @since 0.1.0
 * @category utils
 */
export const run = (
  set: LoadedSet,
  settings: ReadonlyArray<Setting>,
  options: RunOptions = {}
): Effect.Effect<RunReport, Retrieve.RetrieveError | EvalError> =>
  Effect.gen(function*() {
    if (settings.length === 0) return yield* new EvalError({ message: "no setting to run" })
    if (set.queries.length === 0) return yield* new EvalError({ message: `the set in ${set.dir} has no judged query` })
    const recallK = Math.max(1, options.recallK ?? 100)
    const boot = { resamples: options.resamples ?? 1000, seed: options.seed ?? 1 }
    const results: Array<Omit<SettingResult, "summary" | "vsFirst">> = []
    for (const s of settings) {
      const ndcg: Array<number> = []
      const recall: Array<number> = []
      const mrr: Array<number> = []
      const ms: Array<number> = []
      // one untimed query first: a model's first call (loading, compiling) is not a query's latency
      yield* Retrieve.retrieve(s.collection, set.queries[0]!.text, { ...s.retrieve, limit: Math.max(10, recallK), groupBy: "document" })
      for (const q of set.queries) {
        const judged = set.qrels.get(q._id)!
        const t = performance.now()
        const hits = yield* Retrieve.retrieve(s.collection, q.text, { ...s.retrieve, limit: Math.max(10, recallK), groupBy: "document" })
        ms.push(performance.now() - t)
        const ranking = hits.map((h) => h.documentId)
        ndcg.push(Metrics.ndcgAt(10, ranking, judged))
        recall.push(Metrics.recallAt(recallK, ranking, judged))
        mrr.push(Metrics.mrrAt(10, ranking, judged))
      }
      results.push({
        name: s.name,
        collection: s.collection.spec.name,
        mode: s.retrieve.mode ?? "fulltext",
        reranked: s.retrieve.reranker !== undefined,
        perQuery: { "ndcg@10": ndcg, recall, "mrr@10": mrr, ms: ms.map(round) }
      })
    }
    const first = results[0]!
    const out: Array<SettingResult> = []
    for (const [i, r] of results.entries()) {
      const summary = {
        "ndcg@10": interval(r.perQuery["ndcg@10"], boot),
        recall: interval(r.perQuery.recall, boot),
        "mrr@10": interval(r.perQuery["mrr@10"], boot),
        p50_ms: round(Metrics.percentile(r.perQuery.ms, 50)),
        p95_ms: round(Metrics.percentile(r.perQuery.ms, 95))
      }
      let vsFirst: SettingResult["vsFirst"]
      if (i > 0) {
        vsFirst = {
          "ndcg@10": yield* pairedDifference(first.perQuery["ndcg@10"], r.perQuery["ndcg@10"], boot),
          recall: yield* pairedDifference(first.perQuery.recall, r.perQuery.recall, boot),
          "mrr@10": yield* pairedDifference(first.perQuery["mrr@10"], r.perQuery["mrr@10"], boot)
        }
      }
      out.push({ ...r, summary, vsFirst })
    }
    return {
      format: "effect-rag-eval-run",
      version: 1,
      set: {
        dir: set.dir,
        id: setId(set),
        method: set.manifest?.method ?? null,
        model: set.manifest?.model ?? null,
        queries: set.queries.length
      },
      recallK,
      resamples: boot.resamples,
      seed: boot.seed,
      createdAt: new Date().toISOString(),
      queryIds: set.queries.map((q) => q._id),
      settings: out
    } satisfies RunReport
  }).pipe(Effect.withSpan("Eval.run"))

const round = (x: number): number => Math.round(x * 1000) / 1000

// =============================================================================
// Baseline
// =============================================================================

/**
 * One metric of one setting compared with a saved run (`current - baseline`).
 *
 * @since 0.1.0
 * @category models
 */
export interface BaselineComparison {
  readonly setting: string
  readonly metric: Metric
  readonly baseline: number
  readonly current: number
  readonly difference: Difference
  /** Significantly lower than the baseline. */
  readonly regression: boolean
}

/**
 * Compares a run with a saved one, setting by setting (matched by name), metric by metric, with
 * the paired bootstrap over the same queries. A regression is a significant drop (the interval
 * of `current - baseline` lies below 0). Fails with `EvalError` when the runs were made on
 * different sets (other queries or judgements) or share no setting.
 *
 * @since 0.1.0
 * @category utils
 */
export const compareWithBaseline = (
  current: RunReport,
  baseline: RunReport,
  options: BootstrapOptions = {}
): Effect.Effect<ReadonlyArray<BaselineComparison>, EvalError> =>
  Effect.gen(function*() {
    const saved = baseline as Partial<RunReport> | null
    const wellFormed = typeof saved === "object" && saved !== null && saved.format === "effect-rag-eval-run" &&
      typeof saved.set?.id === "string" && Array.isArray(saved.queryIds) && Array.isArray(saved.settings) &&
      saved.settings.every((x) => typeof x?.name === "string" && metrics.every((m) => Array.isArray(x.perQuery?.[m]) && x.perQuery[m].length === saved.queryIds!.length))
    if (!wellFormed) {
      return yield* new EvalError({ message: "the baseline is not a saved eval run (write one with eval run --json FILE)" })
    }
    if (baseline.set.id !== current.set.id || baseline.queryIds.join("\n") !== current.queryIds.join("\n")) {
      return yield* new EvalError({ message: `the baseline was run on another set (${baseline.set.id}, this run: ${current.set.id}): compare runs of the same set` })
    }
    if (baseline.recallK !== current.recallK) {
      return yield* new EvalError({ message: `the baseline measured Recall@${baseline.recallK}, this run Recall@${current.recallK}` })
    }
    const boot = { resamples: options.resamples ?? current.resamples, seed: options.seed ?? current.seed }
    const out: Array<BaselineComparison> = []
    for (const s of current.settings) {
      const b = baseline.settings.find((x) => x.name === s.name)
      if (b === undefined) continue
      for (const m of metrics) {
        const difference = yield* pairedDifference(b.perQuery[m], s.perQuery[m], boot)
        out.push({ setting: s.name, metric: m, baseline: mean(b.perQuery[m]), current: mean(s.perQuery[m]), difference, regression: difference.hi < 0 })
      }
    }
    if (out.length === 0) {
      return yield* new EvalError({
        message: `the baseline shares no setting with this run (baseline: ${baseline.settings.map((x) => x.name).join(", ")})`
      })
    }
    return out
  })

// =============================================================================
// Tables
// =============================================================================

const metricLabel = (m: Metric, recallK: number) => (m === "ndcg@10" ? "nDCG@10" : m === "recall" ? `Recall@${recallK}` : "MRR@10")
const f3 = (x: number) => x.toFixed(3)
const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(3)}`
const cell = (i: Interval) => `${f3(i.mean)} [${f3(i.lo)}, ${f3(i.hi)}]`
const diffCell = (d: Difference) => `${signed(d.mean)} [${signed(d.lo)}, ${signed(d.hi)}]${d.significant ? " *" : "  "}`

/**
 * The run as text: the settings side by side with intervals, then the differences with the first setting.
 *
 * @since 0.1.0
 * @category utils
 */
export const table = (r: RunReport): string => {
  const width = Math.max(8, ...r.settings.map((s) => s.name.length))
  const col = 22
  const lines = [
    `set ${r.set.dir}: ${r.set.queries} queries${r.set.method ? ` (${r.set.method}${r.set.model ? `, ${r.set.model}` : ""})` : ""}; means with 95 % intervals (paired bootstrap, ${r.resamples} resamples, seed ${r.seed})`,
    `${"setting".padEnd(width)}  ${metrics.map((m) => metricLabel(m, r.recallK).padEnd(col)).join("  ")}  p50 ms   p95 ms`,
    ...r.settings.map((s) =>
      `${s.name.padEnd(width)}  ${metrics.map((m) => cell(s.summary[m]).padEnd(col)).join("  ")}  ${s.summary.p50_ms.toFixed(1).padStart(6)}  ${s.summary.p95_ms.toFixed(1).padStart(7)}`
    )
  ]
  if (r.settings.length > 1) {
    const first = r.settings[0]!.name
    lines.push("", `difference with ${first} (* significant: the 95 % interval excludes 0)`)
    lines.push(`${"setting".padEnd(width)}  ${metrics.map((m) => `Δ ${metricLabel(m, r.recallK)}`.padEnd(col + 4)).join("  ")}`)
    for (const s of r.settings.slice(1)) {
      lines.push(`${s.name.padEnd(width)}  ${metrics.map((m) => diffCell(s.vsFirst![m]).padEnd(col + 4)).join("  ")}`)
    }
  }
  return lines.join("\n")
}

/**
 * The comparison with a baseline as text; regressions marked.
 *
 * @since 0.1.0
 * @category utils
 */
export const baselineTable = (rows: ReadonlyArray<BaselineComparison>, recallK: number): string => {
  const width = Math.max(8, ...rows.map((r) => r.setting.length))
  return [
    `compared with the baseline (current - baseline, 95 % interval)`,
    ...rows.map((r) =>
      `${r.setting.padEnd(width)}  ${metricLabel(r.metric, recallK).padEnd(10)} ${f3(r.baseline)} -> ${f3(r.current)}  ${diffCell(r.difference)}${r.regression ? "  REGRESSION" : ""}`
    )
  ].join("\n")
}

// =============================================================================
// Citation precision
// =============================================================================

/**
 * Options of {@link citationPrecision}: those of `Answer.ask`, the support threshold and a cap on questions.
 *
 * @since 0.1.0
 * @category models
 */
export interface CitationOptions extends Answer.AskOptions, BootstrapOptions {
  /** The support threshold of `AnswerCheck.check` (default its `defaultThreshold`, 0.5). */
  readonly threshold?: number | undefined
  /** Ask at most this many questions of the set, in order (default: all). */
  readonly questions?: number | undefined
  /** Check the answers with `AnswerCheck.judge` (a chat model's verdicts) instead of the lexical score. */
  readonly judge?: AnswerCheck.JudgeOptions | undefined
}

/**
 * How well answers are held by their citations, over a set's questions.
 *
 * @since 0.1.0
 * @category models
 */
export interface CitationReport {
  /** How sentences were checked: `lexical` (`AnswerCheck.check`) or `judge` (`AnswerCheck.judge`). */
  readonly method: "lexical" | "judge"
  readonly questions: number
  /** Answers with at least one cited sentence (the others have no precision). */
  readonly answersWithCitations: number
  /** Per answer, supported / (supported + unsupported) cited sentences; the mean with its 95 % bootstrap interval. */
  readonly precision: Interval
  readonly supported: number
  readonly unsupported: number
  readonly uncited: number
  /** Answers that cite a passage of the question's relevant document. */
  readonly relevantCited: number
}

/**
 * Asks every question of the set (up to `questions`) through `Answer.ask` on the collection,
 * checks each answer with `AnswerCheck.check` (or `AnswerCheck.judge` with `judge`), and reports citation precision (the share of
 * cited sentences their passages support) with a bootstrap interval, and how many answers cite
 * the relevant document. Asks as the `Principal` in the context. Fails with `Answer.ask`'s
 * errors (no chat model: `ChatNotConfigured`).
 *
 * @since 0.1.0
 * @category utils
 */
export const citationPrecision = (
  set: LoadedSet,
  collection: Collection,
  options: CitationOptions = {}
): Effect.Effect<CitationReport, Answer.AskError | EvalError, Chat.Chat | Principal.Principal> =>
  Effect.gen(function*() {
    const questions = set.queries.slice(0, options.questions ?? set.queries.length)
    if (questions.length === 0) return yield* new EvalError({ message: `the set in ${set.dir} has no judged query` })
    const perAnswer: Array<number> = []
    let supported = 0
    let unsupported = 0
    let uncited = 0
    let relevantCited = 0
    for (const q of questions) {
      const answer = yield* Answer.ask(collection, q.text, options)
      const c = options.judge === undefined
        ? AnswerCheck.check(answer, { threshold: options.threshold })
        : yield* AnswerCheck.judge(answer, { threshold: options.threshold, ...options.judge })
      supported += c.supported
      unsupported += c.unsupported
      uncited += c.uncited
      if (c.supported + c.unsupported > 0) perAnswer.push(c.supported / (c.supported + c.unsupported))
      const relevant = set.qrels.get(q._id) ?? new Map<string, number>()
      if (answer.cited.some((s) => (relevant.get(s.documentId) ?? 0) > 0)) relevantCited++
    }
    return {
      method: options.judge === undefined ? "lexical" as const : "judge" as const,
      questions: questions.length,
      answersWithCitations: perAnswer.length,
      precision: interval(perAnswer, options),
      supported,
      unsupported,
      uncited,
      relevantCited
    }
  }).pipe(Effect.withSpan("Eval.citationPrecision"))

/**
 * The citation report as one line.
 *
 * @since 0.1.0
 * @category utils
 */
export const citationLine = (r: CitationReport): string =>
  `citation precision${r.method === "judge" ? " (judged by the chat model)" : ""} ${cell(r.precision)} over ${r.answersWithCitations} of ${r.questions} answers with citations; ` +
  `${r.supported} cited sentence(s) supported, ${r.unsupported} unsupported, ${r.uncited} without citation; ` +
  `the relevant document cited in ${r.relevantCited} of ${r.questions} answers`
