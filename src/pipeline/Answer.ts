/**
 * Query and answer: the read side of the pipeline.
 *
 * - {@link query}: retrieval over a collection (hybrid when an embedder is given and the
 *   collection holds vectors, full text otherwise, so it always works offline), optional
 *   rerank and metadata filters; hits come back numbered with score, source, page and chunk.
 * - {@link askStream} / {@link ask}: retrieves, puts the hits in the prompt as numbered sources
 *   and answers through the `Chat` service, streamed. The model may also call a
 *   `search_documents` tool (bounded by `maxToolRounds`) to retrieve more sources. Citations
 *   `[n]` in the answer are parsed and mapped back to their sources; numbers that point at no
 *   source are reported, never dropped silently.
 * - {@link askWithSearch}: the alternative path through AI search (`Search`), answer and
 *   sources in the same {@link Answer} shape.
 *
 * Every function runs for the {@link Principal.Principal} in its context (a program without one
 * does not compile): its read scope goes with every store read — the first retrieval, query
 * expansion, hybrid candidates, the reranker's candidates and each `search_documents` call of
 * the model — so no source, citation or tool result holds a chunk it may not read.
 * {@link askWithSearch} reads no collection (the AI search service answers from the web); it
 * takes the principal too, so that every answer path is written for one.
 *
 * Without a chat model (`options.model`, else `Chat.defaultModel`, which the remote layer reads
 * from `EFFECT_RAG_CHAT_MODEL`) or without an API key, `ask` fails with
 * {@link ChatNotConfigured}, whose message says what to set.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Chat from "../api/Chat.js"
import type * as Embeddings from "../api/Embeddings.js"
import type * as Rerank from "../api/Rerank.js"
import * as Search from "../api/Search.js"
import * as RagError from "../RagError.js"
import * as Principal from "./Principal.js"
import {
  type Collection,
  type CollectionSpec,
  documentIdField,
  type Filter,
  type Hit,
  type ReadScope,
  type Scalar,
  VectorStore,
  type VectorStoreError
} from "../store/VectorStore.js"
import {
  type CitationFields,
  citationOf,
  formatSources,
  parseCitations,
  sourceHeader
} from "./internal/answer-citations.js"
import * as Retrieve from "./Retrieve.js"

export { citationOf, parseCitations, snippet } from "./internal/answer-citations.js"
export type { CitationFields, CitationMark } from "./internal/answer-citations.js"

// =============================================================================
// Data
// =============================================================================

/**
 * A retrieved chunk, numbered (1-based) as it is listed and cited.
 *
 * @since 0.1.0
 * @category models
 */
export interface Source extends CitationFields {
  /** The number the source carries in results and in the prompt (`[n]`). */
  readonly n: number
  /** The chunk id. */
  readonly id: string
  readonly documentId: string
  /** Retrieval score (higher is better; the scale depends on the mode and the reranker). */
  readonly score: number
  /** The chunk text. */
  readonly text: string
  /** Every metadata field of the chunk. */
  readonly metadata: Readonly<Record<string, Scalar>>
}

/**
 * What {@link query} returns.
 *
 * @since 0.1.0
 * @category models
 */
export interface QueryResult {
  readonly query: string
  readonly collection: string
  /** The retrieval mode used. */
  readonly mode: "fulltext" | "vector" | "hybrid"
  /** Whether a reranker reordered the hits. */
  readonly reranked: boolean
  readonly hits: ReadonlyArray<Source>
}

/**
 * One citation of an answer, mapped to its source (undefined: the number points at none).
 *
 * @since 0.1.0
 * @category models
 */
export interface Citation {
  readonly n: number
  /** Offset of the bracket in the answer text. */
  readonly offset: number
  readonly source: Source | undefined
}

/**
 * A search the model made through the `search_documents` tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolSearch {
  readonly query: string
  /** The numbers of the sources it returned. */
  readonly sources: ReadonlyArray<number>
}

/**
 * The final answer. Plain data: `JSON.stringify` gives the `--json` output.
 *
 * @since 0.1.0
 * @category models
 */
export interface Answer {
  readonly question: string
  /** The answer text, citations included as written by the model. */
  readonly text: string
  /** `chat` (Chat service over the collection) or `search` (AI search). */
  readonly via: "chat" | "search"
  readonly model: string
  /** Every source shown to the model, by number. */
  readonly sources: ReadonlyArray<Source>
  /** The cited sources, each once, in order of first citation. */
  readonly cited: ReadonlyArray<Source>
  /** Every citation in order of appearance. */
  readonly citations: ReadonlyArray<Citation>
  /** Cited numbers that point at no source (the model invented them), each once. */
  readonly unknownCitations: ReadonlyArray<number>
  /** Searches made through the tool, in order. */
  readonly searches: ReadonlyArray<ToolSearch>
  readonly finishReason: string | null
  /** Token usage summed over the rounds (when the server reports it). */
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number } | undefined
}

/**
 * The events of {@link askStream}, in order: sources, then deltas (and tool searches), then `Done`.
 *
 * @since 0.1.0
 * @category models
 */
export type AskEvent =
  /** Sources added to the prompt: the initial retrieval (`round` 0) or a tool search. */
  | { readonly _tag: "Sources"; readonly round: number; readonly query: string; readonly sources: ReadonlyArray<Source> }
  /** The model called the search tool. */
  | { readonly _tag: "ToolCall"; readonly round: number; readonly name: string; readonly query: string }
  /** A piece of the answer text. */
  | { readonly _tag: "Delta"; readonly text: string }
  /** The final answer (always the last event). */
  | { readonly _tag: "Done"; readonly answer: Answer }

// =============================================================================
// Errors
// =============================================================================

/**
 * The text that tells how to configure a chat model.
 *
 * @since 0.1.0
 * @category utils
 */
export const configureHint =
  "set EFFECT_RAG_CHAT_MODEL (or pass --model / options.model), EFFECT_RAG_BASE_URL (the API serving it) and EFFECT_RAG_API_KEY"

/**
 * `ask` cannot answer: no chat model is configured (`reason: "model"`) or no API key
 * (`reason: "apiKey"`). The message says how to configure one.
 *
 * @since 0.1.0
 * @category errors
 */
export class ChatNotConfigured extends Data.TaggedError("ChatNotConfigured")<{
  readonly reason: "model" | "apiKey"
  readonly message: string
}> {}

/**
 * A `--filter` expression that cannot be applied to the collection.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidFilter extends Data.TaggedError("InvalidFilter")<{
  readonly expression: string
  readonly message: string
}> {}

/**
 * What {@link query} can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type QueryError = Retrieve.RetrieveError

/**
 * What {@link ask} can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type AskError = QueryError | RagError.StreamError | ChatNotConfigured

/**
 * What {@link askWithSearch} can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchAnswerError = RagError.ApiError | ChatNotConfigured

// =============================================================================
// Collections and filters
// =============================================================================

/**
 * A collection, or its name (opened through the {@link VectorStore} in the context).
 *
 * @since 0.1.0
 * @category models
 */
export type CollectionRef = string | Collection

/**
 * The context a {@link CollectionRef} needs: the store for a name, nothing for a collection.
 *
 * @since 0.1.0
 * @category models
 */
export type Needs<C extends CollectionRef> = C extends string ? VectorStore : never

const openRef = <C extends CollectionRef>(ref: C): Effect.Effect<Collection, VectorStoreError, Needs<C>> =>
  (typeof ref === "string"
    ? Effect.flatMap(VectorStore, (store) => store.open(ref))
    : Effect.succeed(ref as Collection)) as Effect.Effect<Collection, VectorStoreError, Needs<C>>

const ops = ["!=", ">=", "<=", "=", ">", "<"] as const

/**
 * Parses `key=value` filter expressions (also `!=`, `<`, `<=`, `>`, `>=`) against a
 * collection's declared fields, coercing values to the field's type. Expressions are ANDed;
 * several `=` on the same key are ORed (`source=a --filter source=b`). `documentId` is always
 * allowed. Returns undefined for no expressions.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseFilters = (
  expressions: ReadonlyArray<string>,
  spec: CollectionSpec
): Effect.Effect<Filter | undefined, InvalidFilter> =>
  Effect.gen(function*() {
    const fields: Record<string, string> = { ...spec.fields, [documentIdField]: "string" }
    const equal = new Map<string, Array<Scalar>>()
    const rest: Array<Filter> = []
    for (const expression of expressions) {
      const op = ops.find((o) => expression.includes(o))
      const at = op === undefined ? -1 : expression.indexOf(op)
      if (op === undefined || at <= 0) {
        return yield* new InvalidFilter({ expression, message: `filter ${JSON.stringify(expression)}: expected key=value (or !=, <, <=, >, >=)` })
      }
      const key = expression.slice(0, at).trim()
      const raw = expression.slice(at + op.length).trim()
      const type = fields[key]
      if (type === undefined) {
        const declared = Object.keys(fields).sort().join(", ")
        return yield* new InvalidFilter({
          expression,
          message: `filter ${JSON.stringify(expression)}: collection ${spec.name} has no filterable field ${JSON.stringify(key)} (declared: ${declared})`
        })
      }
      let value: Scalar = raw
      if (type === "number") {
        value = Number(raw)
        if (raw === "" || !Number.isFinite(value)) {
          return yield* new InvalidFilter({ expression, message: `filter ${JSON.stringify(expression)}: ${key} is a number field` })
        }
      } else if (type === "boolean") {
        if (raw !== "true" && raw !== "false") {
          return yield* new InvalidFilter({ expression, message: `filter ${JSON.stringify(expression)}: ${key} is true or false` })
        }
        value = raw === "true"
      }
      if (op === "=") equal.set(key, [...(equal.get(key) ?? []), value])
      else if (op === "!=") rest.push({ _tag: "Compare", field: key, op, value })
      else if (typeof value === "boolean") {
        return yield* new InvalidFilter({ expression, message: `filter ${JSON.stringify(expression)}: ${op} needs a number or string field` })
      } else rest.push({ _tag: "Compare", field: key, op, value })
    }
    const all: Array<Filter> = [
      ...[...equal.entries()].map(([field, values]): Filter =>
        values.length === 1 ? { _tag: "Compare", field, op: "=", value: values[0]! } : { _tag: "In", field, values }
      ),
      ...rest
    ]
    return all.length === 0 ? undefined : all.length === 1 ? all[0] : { _tag: "And", filters: all }
  })

// =============================================================================
// Query
// =============================================================================

/**
 * Options of {@link query}.
 *
 * @since 0.1.0
 * @category models
 */
export interface QueryOptions {
  /** Default: `hybrid` when `embeddings` is given and the collection holds vectors, else `fulltext`. */
  readonly mode?: "fulltext" | "vector" | "hybrid" | undefined
  /** Hits to return (default 10; {@link ask}: 6). */
  readonly limit?: number | undefined
  /** Metadata filter (see `VectorStore.Filter` and {@link parseFilters}). */
  readonly filter?: Filter | undefined
  /** The embedder for vector and hybrid retrieval (its model must be the collection's). */
  readonly embeddings?: Embeddings.Service | undefined
  /** A reranker over the top candidates. */
  readonly reranker?: Rerank.Service | undefined
  /** `chunk` (default) or `document` (one hit per document). */
  readonly groupBy?: "chunk" | "document" | undefined
  /** Other retrieval settings (full-text tuning, fusion, candidates). */
  readonly retrieve?: Omit<Retrieve.Options, "mode" | "limit" | "filter" | "scope" | "embeddings" | "reranker" | "groupBy"> | undefined
}

const toSource = (hit: Hit, n: number): Source => ({
  n,
  id: hit.id,
  documentId: hit.documentId,
  score: hit.score,
  text: hit.text,
  metadata: hit.metadata,
  ...citationOf(hit)
})

const modeOf = (collection: Collection, options: QueryOptions) =>
  options.mode ?? (options.embeddings !== undefined && collection.spec.embedding !== undefined ? "hybrid" : "fulltext")

const retrieveIn = (collection: Collection, text: string, options: QueryOptions, defaultLimit: number, scope: ReadScope) => {
  const mode = modeOf(collection, options)
  return Retrieve.retrieve(collection, text, {
    ...options.retrieve,
    // after the spread: the principal's scope is never replaced by an option
    scope,
    mode,
    limit: options.limit ?? defaultLimit,
    filter: options.filter,
    embeddings: options.embeddings,
    reranker: options.reranker,
    groupBy: options.groupBy
  }).pipe(Effect.map((hits) => ({ mode, hits })))
}

/**
 * Retrieves the chunks of a collection that best match `text`, numbered from 1, each with its
 * score, source, page, chunk index and title, among the chunks the context's principal may
 * read. Works offline (full text) on every collection.
 * Fails with `CollectionNotFound` for an unknown name, `ConfigurationError` for vector/hybrid
 * without an embedder, `EmbeddingMismatch` for an embedder of another model.
 *
 * @since 0.1.0
 * @category utils
 */
export const query = <C extends CollectionRef>(
  collection: C,
  text: string,
  options: QueryOptions = {}
): Effect.Effect<QueryResult, QueryError, Needs<C> | Principal.Principal> =>
  Effect.gen(function*() {
    const scope = Principal.scopeOf(yield* Principal.Principal)
    const c = yield* openRef(collection)
    const { hits, mode } = yield* retrieveIn(c, text, options, 10, scope)
    return {
      query: text,
      collection: c.spec.name,
      mode,
      reranked: options.reranker !== undefined,
      hits: hits.map((h, i) => toSource(h, i + 1))
    }
  }).pipe(Effect.withSpan("Answer.query"))

// =============================================================================
// Ask through Chat
// =============================================================================

/**
 * Options of {@link ask} and {@link askStream}.
 *
 * @since 0.1.0
 * @category models
 */
export interface AskOptions extends QueryOptions {
  /** The chat model (default: the Chat layer's `defaultModel`, i.e. `EFFECT_RAG_CHAT_MODEL`). */
  readonly model?: string | undefined
  /** Offer the `search_documents` tool to the model (default true). */
  readonly tools?: boolean | undefined
  /** Most tool rounds before the model must answer (default 2). */
  readonly maxToolRounds?: number | undefined
  /** Characters of each source's text in the prompt (default 1500). */
  readonly maxSourceChars?: number | undefined
  /** Replaces the default instructions ({@link defaultInstructions}). */
  readonly instructions?: string | undefined
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
}

/**
 * The name of the retrieval tool offered to the model.
 *
 * @since 0.1.0
 * @category utils
 */
export const searchToolName = "search_documents"

/**
 * The retrieval tool offered to the model.
 *
 * @since 0.1.0
 * @category utils
 */
export const searchTool: Chat.Tool = {
  type: "function",
  function: {
    name: searchToolName,
    description: "Search the document collection. Returns numbered sources to cite as [n].",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "what to search for" },
        limit: { type: "integer", description: "how many sources (default: as many as the first search)" }
      },
      required: ["query"]
    }
  }
}

/**
 * The default system instructions.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultInstructions = [
  "Answer the question using only the numbered sources you are given.",
  "Cite every statement with the number of its source in square brackets, like [1] or [2][3], right after the statement.",
  "Cite only numbers of sources you were given. If the sources do not contain the answer, say that you do not know."
].join(" ")

const toolInstructions = `If the sources are not enough, call the ${searchToolName} tool with a better query; its results are numbered sources too.`

/**
 * Builds the user message: the numbered sources, then the question.
 *
 * @since 0.1.0
 * @category utils
 */
export const userPrompt = (question: string, sources: ReadonlyArray<Source>, maxSourceChars = 1500): string =>
  sources.length === 0
    ? `No sources were found in the collection for this question.\n\nQuestion: ${question}`
    : `Sources:\n\n${formatSources(sources, maxSourceChars)}\n\nQuestion: ${question}`

const mapChatError = <E>(e: E): E | ChatNotConfigured =>
  e instanceof RagError.ConfigurationError
    ? new ChatNotConfigured({ reason: "apiKey", message: `ask: ${e.message}. To configure a chat model, ${configureHint}.` })
    : e

/** Resolves the model or fails with {@link ChatNotConfigured}. */
const modelOf = (chat: Chat.Service, model: string | undefined): Effect.Effect<string, ChatNotConfigured> => {
  const m = model ?? Option.getOrUndefined(chat.defaultModel)
  return m === undefined || m === ""
    ? Effect.fail(new ChatNotConfigured({ reason: "model", message: `ask needs a chat model: ${configureHint}.` }))
    : Effect.succeed(m)
}

/**
 * Maps the citations of a text to sources.
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveCitations = (
  text: string,
  sources: ReadonlyArray<Source>
): Pick<Answer, "cited" | "citations" | "unknownCitations"> => {
  const byN = new Map(sources.map((s) => [s.n, s]))
  const citations = parseCitations(text).map((m) => ({ n: m.n, offset: m.offset, source: byN.get(m.n) }))
  const cited: Array<Source> = []
  const unknown: Array<number> = []
  for (const c of citations) {
    if (c.source === undefined) {
      if (!unknown.includes(c.n)) unknown.push(c.n)
    } else if (!cited.includes(c.source)) cited.push(c.source)
  }
  return { cited, citations, unknownCitations: unknown }
}

/** A tool call of a round's message, its pieces joined. */
interface ToolCallSoFar {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

const parseToolArgs = (raw: string): { query: string; limit: number | undefined } | string => {
  try {
    const parsed: unknown = JSON.parse(raw === "" ? "{}" : raw)
    if (typeof parsed !== "object" || parsed === null) return "arguments must be a JSON object"
    const q = (parsed as Record<string, unknown>)["query"]
    const l = (parsed as Record<string, unknown>)["limit"]
    if (typeof q !== "string" || q.trim() === "") return "argument \"query\" (a non-empty string) is required"
    return { query: q, limit: typeof l === "number" && Number.isInteger(l) && l > 0 ? Math.min(l, 50) : undefined }
  } catch {
    return "arguments are not valid JSON"
  }
}

/** What an asked question's rounds read: fixed once the question is asked. */
interface AskSettings {
  readonly question: string
  readonly options: AskOptions
  readonly chat: Chat.Service
  readonly model: string
  readonly collection: Collection
  readonly scope: ReadScope
  readonly limit: number
  readonly maxChars: number
  /** Whether the search tool is offered (tools on and at least one tool round). */
  readonly offer: boolean
  readonly maxRounds: number
}

/**
 * What an asked question's rounds build up: the sources (numbered once, in order found; a chunk
 * found again keeps its first number), the messages sent, the searches, the answer's text and
 * the tokens used.
 */
interface Conversation {
  readonly sources: Array<Source>
  readonly byId: Map<string, Source>
  readonly messages: Array<Chat.Message>
  readonly searches: Array<ToolSearch>
  text: string
  usage: Answer["usage"]
}

/** The sources of hits, numbered: a hit seen before keeps its number, a new one gets the next. */
const numberHits = (conv: Conversation, hits: ReadonlyArray<Hit>): Array<Source> =>
  hits.map((h) => {
    const known = conv.byId.get(h.id)
    if (known) return known
    const s = toSource(h, conv.sources.length + 1)
    conv.sources.push(s)
    conv.byId.set(h.id, s)
    return s
  })

/** Runs a tool call of the model: the search tool's results as the tool's message, and its events. */
const runTool = (settings: AskSettings, conv: Conversation, call: ToolCallSoFar, round: number) =>
  Effect.gen(function*() {
    if (call.name !== searchToolName) {
      return { events: [] as Array<AskEvent>, content: `error: unknown tool ${JSON.stringify(call.name)}; the only tool is ${searchToolName}` }
    }
    const args = parseToolArgs(call.arguments)
    if (typeof args === "string") return { events: [] as Array<AskEvent>, content: `error: ${args}` }
    const found = yield* retrieveIn(settings.collection, args.query, settings.options, args.limit ?? settings.limit, settings.scope)
    const before = conv.sources.length
    const numbered = numberHits(conv, found.hits)
    conv.searches.push({ query: args.query, sources: numbered.map((s) => s.n) })
    const content = numbered.length === 0
      ? `No sources found for ${JSON.stringify(args.query)}.`
      : numbered.map((s) =>
        s.n > before
          ? `${sourceHeader(s)}\n${formatSources([s], settings.maxChars).split("\n").slice(1).join("\n")}`
          : `${sourceHeader(s)} (already listed above)`
      ).join("\n\n")
    const events: Array<AskEvent> = [
      { _tag: "ToolCall", round, name: call.name, query: args.query },
      { _tag: "Sources", round, query: args.query, sources: numbered }
    ]
    return { events, content }
  })

/** The answer once the last round ended. */
const finishAnswer = (settings: AskSettings, conv: Conversation, acc: Chat.MessageSoFar): Answer => ({
  question: settings.question,
  text: conv.text,
  via: "chat",
  model: settings.model,
  sources: [...conv.sources],
  ...resolveCitations(conv.text, conv.sources),
  searches: [...conv.searches],
  finishReason: acc.finish_reason,
  usage: conv.usage
})

/** Adds a streamed chunk to the round's message (see `Chat.addChunk`); the text it adds as a `Delta`. */
const accumulate = (conv: Conversation, acc: Chat.MessageSoFar, chunk: Chat.ChatChunk): Option.Option<AskEvent> => {
  Chat.addChunk(acc, chunk)
  const t = chunk.choices.find((x) => x.index === 0)?.delta.content
  if (!t) return Option.none()
  conv.text += t
  return Option.some({ _tag: "Delta", text: t })
}

/**
 * After round `n`: counts its tokens; `Done` when the model called no tool (or no more rounds
 * are allowed), else runs the tool calls, adds them and their results to the messages, and
 * goes on with the next round.
 */
const afterRound = (settings: AskSettings, conv: Conversation, acc: Chat.MessageSoFar, n: number): Stream.Stream<AskEvent, AskError> =>
  Stream.unwrap(Effect.gen(function*() {
    if (acc.usage) {
      conv.usage = {
        promptTokens: (conv.usage?.promptTokens ?? 0) + (acc.usage.prompt_tokens ?? 0),
        completionTokens: (conv.usage?.completionTokens ?? 0) + (acc.usage.completion_tokens ?? 0)
      }
    }
    const calls = [...acc.tools.entries()].sort(([a], [b]) => a - b).map(([, t]) => t)
    if (calls.length === 0 || !settings.offer || n >= settings.maxRounds) {
      return Stream.make<[AskEvent]>({ _tag: "Done", answer: finishAnswer(settings, conv, acc) })
    }
    const ids = calls.map((call, i) => call.id || `call_${n}_${i}`)
    conv.messages.push({
      role: "assistant",
      content: acc.content === "" ? null : acc.content,
      tool_calls: calls.map((call, i) => ({ id: ids[i]!, type: "function" as const, function: { name: call.name, arguments: call.arguments } }))
    })
    const events: Array<AskEvent> = []
    for (const [i, call] of calls.entries()) {
      const result = yield* runTool(settings, conv, call, n + 1)
      events.push(...result.events)
      conv.messages.push({ role: "tool", tool_call_id: ids[i]!, content: result.content })
    }
    return Stream.concat(Stream.fromIterable(events), askRound(settings, conv, n + 1))
  }))

/** Round `n`: the chat's answer streamed as `Delta`s, then what follows it ({@link afterRound}). */
const askRound = (settings: AskSettings, conv: Conversation, n: number): Stream.Stream<AskEvent, AskError> =>
  Stream.suspend(() => {
    const { options } = settings
    const acc = Chat.emptyMessage()
    const request: Chat.ChatRequest = {
      model: settings.model,
      messages: [...conv.messages],
      ...(settings.offer ? { tools: [searchTool], tool_choice: n < settings.maxRounds ? "auto" as const : "none" as const } : {}),
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {})
    }
    const deltas = settings.chat.stream(request).pipe(
      Stream.mapError(mapChatError),
      Stream.filterMap((chunk) => accumulate(conv, acc, chunk))
    )
    return Stream.concat(deltas, afterRound(settings, conv, acc, n))
  })

/**
 * Asks a question about a collection, streamed: a `Sources` event (the initial retrieval), the
 * answer's `Delta`s as they arrive (with `ToolCall` and `Sources` events when the model
 * searches through the tool), and finally `Done` with the {@link Answer}. Fails with
 * {@link ChatNotConfigured} before any retrieval when there is no chat model.
 *
 * @since 0.1.0
 * @category utils
 */
export const askStream = <C extends CollectionRef>(
  collection: C,
  question: string,
  options: AskOptions = {}
): Stream.Stream<AskEvent, AskError, Chat.Chat | Needs<C> | Principal.Principal> =>
  Stream.unwrap(Effect.gen(function*() {
    const scope = Principal.scopeOf(yield* Principal.Principal)
    const chat = yield* Chat.Chat
    const model = yield* modelOf(chat, options.model)
    const c = yield* openRef(collection)
    const limit = options.limit ?? 6
    const maxRounds = Math.max(0, options.maxToolRounds ?? 2)
    const offer = (options.tools ?? true) && maxRounds > 0
    const settings: AskSettings = {
      question,
      options,
      chat,
      model,
      collection: c,
      scope,
      limit,
      maxChars: options.maxSourceChars ?? 1500,
      offer,
      maxRounds
    }
    const first = yield* retrieveIn(c, question, { ...options, limit }, limit, scope)
    const conv: Conversation = { sources: [], byId: new Map(), messages: [], searches: [], text: "", usage: undefined }
    const initial = numberHits(conv, first.hits)
    conv.messages.push(
      { role: "system", content: `${options.instructions ?? defaultInstructions}${offer ? ` ${toolInstructions}` : ""}` },
      { role: "user", content: userPrompt(question, initial, settings.maxChars) }
    )
    return Stream.concat(Stream.make<[AskEvent]>({ _tag: "Sources", round: 0, query: question, sources: initial }), askRound(settings, conv, 0))
  }))

/**
 * Asks a question about a collection and waits for the whole {@link Answer} (see
 * {@link askStream} for the events and the errors).
 *
 * @since 0.1.0
 * @category utils
 */
export const ask = <C extends CollectionRef>(
  collection: C,
  question: string,
  options: AskOptions = {}
): Effect.Effect<Answer, AskError, Chat.Chat | Needs<C> | Principal.Principal> =>
  Stream.runFold(askStream(collection, question, options), undefined as Answer | undefined, (last, e) =>
    e._tag === "Done" ? e.answer : last).pipe(
      // The stream always ends with `Done`; a stream without one is a bug, not a user error.
      Effect.flatMap((a) => (a === undefined ? Effect.dieMessage("askStream ended without an answer") : Effect.succeed(a))),
      Effect.withSpan("Answer.ask")
    )

/**
 * The text deltas of an {@link askStream}.
 *
 * @since 0.1.0
 * @category utils
 */
export const textDeltas = <E, R>(events: Stream.Stream<AskEvent, E, R>): Stream.Stream<string, E, R> =>
  Stream.filterMap(events, (e) => (e._tag === "Delta" ? Option.some(e.text) : Option.none()))

// =============================================================================
// Ask through AI search
// =============================================================================

/**
 * Options of {@link askWithSearch}.
 *
 * @since 0.1.0
 * @category models
 */
export interface SearchAskOptions {
  /** The AI search model id (default `Search.defaultModel`). */
  readonly model?: string | undefined
  /** The chat model that writes the answer (default `openai` / `gpt-4o-mini`). */
  readonly chatModel?: Search.ModelChoice | undefined
  /** The embedding model that ranks the sources (default `openai` / `text-embedding-3-small`). */
  readonly embeddingModel?: Search.ModelChoice | undefined
  /** Default `webSearch`. */
  readonly focusMode?: Search.KnownFocusMode | (string & {}) | undefined
  /** Default `balanced`. */
  readonly optimizationMode?: "balanced" | "speed" | undefined
  /** Earlier turns, oldest first. */
  readonly history?: ReadonlyArray<Search.HistoryEntry> | undefined
}

/**
 * Default chat model of the AI search path.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSearchChatModel: Search.ModelChoice = { provider: "openai", model: "gpt-4o-mini" }
/**
 * Default embedding model of the AI search path.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSearchEmbeddingModel: Search.ModelChoice = { provider: "openai", model: "text-embedding-3-small" }

/**
 * Answers through AI search instead of the collection: the service searches and answers, and
 * its sources are numbered in the order it returns them so that `[n]` in its answer maps to
 * them. Fails with {@link ChatNotConfigured} (`apiKey`) without an API key.
 *
 * @since 0.1.0
 * @category utils
 */
export const askWithSearch = (
  question: string,
  options: SearchAskOptions = {}
): Effect.Effect<Answer, SearchAnswerError, Search.Search | Principal.Principal> =>
  Effect.gen(function*() {
    // the principal is required (see the module doc); AI search reads no collection chunk
    yield* Principal.Principal
    const search = yield* Search.Search
    const response = yield* search.search({
      model: options.model,
      params: {
        query: question,
        chatModel: options.chatModel ?? defaultSearchChatModel,
        embeddingModel: options.embeddingModel ?? defaultSearchEmbeddingModel,
        focusMode: options.focusMode ?? "webSearch",
        optimizationMode: options.optimizationMode ?? "balanced",
        ...(options.history ? { history: options.history } : {})
      }
    }).pipe(Effect.mapError(mapChatError))
    const choice = response.choices[0]
    const text = choice?.message.content ?? ""
    const sources: Array<Source> = (choice?.message.sources ?? []).map((s, i) => {
      const url = s.metadata.url
      return {
        n: i + 1,
        id: url ?? `search-${i + 1}`,
        documentId: url ?? `search-${i + 1}`,
        score: 0,
        text: s.pageContent ?? "",
        metadata: {},
        source: url ?? s.metadata.title ?? `search result ${i + 1}`,
        page: undefined,
        place: undefined,
        chunk: undefined,
        title: s.metadata.title
      }
    })
    return {
      question,
      text,
      via: "search" as const,
      model: response.model ?? options.model ?? Search.defaultModel,
      sources,
      ...resolveCitations(text, sources),
      searches: [],
      finishReason: choice?.finish_reason ?? null,
      usage: response.usage
        ? { promptTokens: response.usage.prompt_tokens ?? 0, completionTokens: response.usage.completion_tokens ?? 0 }
        : undefined
    }
  }).pipe(Effect.withSpan("Answer.askWithSearch"))
