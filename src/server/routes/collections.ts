/**
 * The collection routes: retrieval and answers over the server's store, for the caller's
 * principal (see `internal/access.ts`).
 *
 * - `GET /v1/collections`: the collections the key may read.
 * - `GET /v1/collections/{name}/documents`: the documents (with chunk counts) and the chunk
 *   count of a collection, of the chunks the principal may read.
 * - `GET /v1/collections/{name}`: what the server can do with the collection: its retrieval
 *   modes (vector and hybrid only with the embedder that made its vectors), whether a reranker
 *   and a chat model (`ask`) are there.
 * - `POST /v1/collections/{name}/query`: `Answer.query` (body: `query`, `limit`, `mode`,
 *   `filter` expressions `key=value`, `group_by`, `rerank`, `highlight`: with it the answer
 *   has the query's analysed `terms` and each hit the `highlights` where they occur).
 * - `POST /v1/collections/{name}/ask`: `Answer.ask` through the server's `Chat` (501 without
 *   one; body: `question`, `limit`, `mode`, `filter`, `tools`, `model`, `highlight`, `stream`:
 *   with it the answer is `text/event-stream` of the `Answer.askStream` events).
 *
 * A collection the key may not read is a 403 before anything is opened (the answer is the same
 * whether it exists). The principal's access lists apply inside every store read of the path.
 * Without a store (`serve` without `--db`) every route answers 501.
 */
import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, Schema, Stream } from "effect"
import * as Chat from "../../api/Chat.js"
import type * as Embeddings from "../../api/Embeddings.js"
import type * as Rerank from "../../api/Rerank.js"
import * as Answer from "../../pipeline/Answer.js"
import * as Principal from "../../pipeline/Principal.js"
import { matchSpans, terms as analysedTerms } from "../../store/TextAnalysis.js"
import { type Collection, VectorStore } from "../../store/VectorStore.js"
import { CallerTag } from "../internal/access.js"
import { fromError, handle, jsonBody, service, type WireError } from "../internal/wire.js"

/** What the collection routes retrieve with, besides the store. */
export interface Options {
  /** The embedder of vector and hybrid retrieval, with the id collections store as their model. */
  readonly embedder?: { readonly id: string; readonly service: Embeddings.Service } | undefined
  /** The reranker of `rerank: true`. */
  readonly reranker?: Rerank.Service | undefined
}

const namePattern = /^[A-Za-z0-9_-]{1,64}$/

const Mode = Schema.Literal("fulltext", "vector", "hybrid")
const Filters = Schema.Array(Schema.String.pipe(Schema.maxLength(1024))).pipe(Schema.maxItems(32))

const QueryBody = Schema.Struct({
  query: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(8192)),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 100))),
  mode: Schema.optional(Mode),
  filter: Schema.optional(Filters),
  group_by: Schema.optional(Schema.Literal("chunk", "document")),
  rerank: Schema.optional(Schema.Boolean),
  highlight: Schema.optional(Schema.Boolean)
})

const AskBody = Schema.Struct({
  question: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(8192)),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 50))),
  mode: Schema.optional(Mode),
  filter: Schema.optional(Filters),
  tools: Schema.optional(Schema.Boolean),
  model: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(256))),
  highlight: Schema.optional(Schema.Boolean),
  stream: Schema.optional(Schema.Boolean)
})

const wire = (status: number, message: string, type: string, code: string | null): WireError => ({ status, message, type, code })

/** The typed failures of the read path as wire errors (a store failure is a 500 without its cause). */
const toWire = (endpoint: string) => (e: { readonly _tag: string; readonly message: string }): WireError => {
  switch (e._tag) {
    case "CollectionNotFound":
      return wire(404, `${endpoint}: ${e.message}`, "not_found_error", "collection_not_found")
    case "InvalidFilter":
    case "InvalidInput":
    case "EmbeddingMismatch":
    case "ConfigurationError":
      return wire(400, `${endpoint}: ${e.message}`, "invalid_request_error", "invalid_request")
    case "ChatNotConfigured":
      return wire(501, `${endpoint}: this server has no chat model configured`, "not_implemented_error", "not_served")
    case "StoreError":
      return wire(500, `${endpoint}: the store failed`, "server_error", null)
    default:
      return fromError(e as Parameters<typeof fromError>[0])
  }
}

/** The collection named in the path, if the caller may read it (403 otherwise, 404 for internal names). */
const readable = (endpoint: string) =>
  Effect.gen(function*() {
    const params = yield* HttpRouter.params
    const name = params["name"] ?? ""
    if (!namePattern.test(name) || name.endsWith("__ingest")) {
      return yield* Effect.fail(wire(404, `${endpoint}: no collection ${JSON.stringify(name.slice(0, 80))}`, "not_found_error", "collection_not_found"))
    }
    const caller = yield* CallerTag
    if (!caller.canRead(name)) {
      return yield* Effect.fail(wire(403, `${endpoint}: this API key may not read collection ${name}`, "permission_error", "forbidden"))
    }
    const store = yield* service(VectorStore, endpoint, "collection store (serve --db)")
    const collection = yield* store.open(name).pipe(Effect.mapError(toWire(endpoint)))
    return { collection, principal: caller.principal }
  })

/** The retrieval options of a request: the embedder only when it made the collection's vectors. */
const queryOptions = (
  collection: Collection,
  options: Options,
  body: { readonly limit?: number | undefined; readonly mode?: "fulltext" | "vector" | "hybrid" | undefined; readonly rerank?: boolean | undefined },
  endpoint: string
): Effect.Effect<Answer.QueryOptions, WireError> => {
  const e = options.embedder
  const fits = e !== undefined && collection.spec.embedding?.model === e.id
  if (body.rerank === true && options.reranker === undefined) {
    return Effect.fail(wire(501, `${endpoint}: this server has no reranker`, "not_implemented_error", "not_served"))
  }
  return Effect.succeed({
    limit: body.limit,
    mode: body.mode,
    embeddings: fits
      ? { ...e.service, embed: (texts, o) => Effect.map(e.service.embed(texts, o), (r) => ({ ...r, model: e.id })) }
      : undefined,
    reranker: body.rerank === true ? options.reranker : undefined
  })
}

const filterOf = (collection: Collection, expressions: ReadonlyArray<string> | undefined, endpoint: string) =>
  Answer.parseFilters(expressions ?? [], collection.spec).pipe(Effect.mapError(toWire(endpoint)))

const json = (body: unknown) => HttpServerResponse.unsafeJson(body)

/**
 * The query's terms as the full-text analyser makes them (lower-cased, stop words dropped,
 * stemmed), each once, and where they occur in a text: the words of the text whose stem is one
 * of them, as `[start, end)` character ranges.
 */
const highlighter = (text: string) => {
  const terms = [...new Set(analysedTerms(text))]
  const set = new Set(terms)
  return { terms, mark: <S extends { readonly text: string }>(s: S) => ({ ...s, highlights: matchSpans(s.text, set) }) }
}

/** An answer with the question's terms marked in its sources. */
const markAnswer = (answer: Answer.Answer, mark: ReturnType<typeof highlighter>["mark"]) => ({
  ...answer,
  sources: answer.sources.map(mark),
  cited: answer.cited.map(mark),
  citations: answer.citations.map((c) => ({ ...c, source: c.source === undefined ? undefined : mark(c.source) }))
})

/** One `Answer.askStream` event as an SSE event: `{type: "sources" | "tool_call" | "delta" | "done", ...}`. */
const askEvent = (e: Answer.AskEvent, mark: ReturnType<typeof highlighter>["mark"] | undefined): string => {
  const data = (() => {
    switch (e._tag) {
      case "Sources":
        return { type: "sources", round: e.round, query: e.query, sources: mark ? e.sources.map(mark) : e.sources }
      case "ToolCall":
        return { type: "tool_call", round: e.round, name: e.name, query: e.query }
      case "Delta":
        return { type: "delta", text: e.text }
      case "Done":
        return { type: "done", answer: mark ? markAnswer(e.answer, mark) : e.answer }
    }
  })()
  return `data: ${JSON.stringify(data)}\n\n`
}

/**
 * The ask events as `text/event-stream`. The first event (the sources, after the retrieval) is
 * awaited before answering, so a failure before it keeps its status; a failure after it is a
 * last `{type: "error", error: {message, type, code}}` event.
 */
const askSse = (events: Stream.Stream<Answer.AskEvent, WireError>, mark: ReturnType<typeof highlighter>["mark"] | undefined) =>
  Effect.gen(function*() {
    const pull = yield* Stream.toPull(events)
    const first = yield* pull.pipe(
      Effect.map(Option.some),
      Effect.catchAll((e) => Option.match(e, { onNone: () => Effect.succeed(Option.none<Chunk.Chunk<Answer.AskEvent>>()), onSome: Effect.fail }))
    )
    const rest: Stream.Stream<Answer.AskEvent, WireError> = Option.match(first, {
      onNone: () => Stream.empty,
      onSome: (chunk) => Stream.concat(Stream.fromChunk(chunk), Stream.repeatEffectChunkOption(pull))
    })
    const body = rest.pipe(
      Stream.map((e) => askEvent(e, mark)),
      Stream.catchAll((e) =>
        Stream.succeed(`data: ${JSON.stringify({ type: "error", error: { message: e.message, type: e.type, code: e.code } })}\n\n`)
      ),
      Stream.encodeText
    )
    return HttpServerResponse.stream(body, { contentType: "text/event-stream", headers: { "cache-control": "no-cache" } })
  })

/** The collection routes, with the retrieval options of the server. */
export const routes = (options: Options = {}) =>
  HttpRouter.empty.pipe(
    HttpRouter.get(
      "/v1/collections",
      handle(Effect.gen(function*() {
        const endpoint = "GET /v1/collections"
        const store = yield* service(VectorStore, endpoint, "collection store (serve --db)")
        const caller = yield* CallerTag
        const names = yield* store.list().pipe(Effect.mapError(toWire(endpoint)))
        const data = names.filter((n) => !n.endsWith("__ingest") && caller.canRead(n)).sort().map((name) => ({ name }))
        return json({ object: "list", data })
      }))
    ),
    HttpRouter.get(
      "/v1/collections/:name",
      handle(Effect.gen(function*() {
        const endpoint = "GET /v1/collections/{name}"
        const { collection } = yield* readable(endpoint)
        const model = collection.spec.embedding?.model
        const vectors = model !== undefined && options.embedder?.id === model
        const chat = yield* Effect.serviceOption(Chat.Chat)
        return json({
          collection: collection.spec.name,
          embedding: model ?? null,
          modes: vectors ? ["fulltext", "vector", "hybrid"] : ["fulltext"],
          rerank: options.reranker !== undefined,
          ask: Option.isSome(chat)
        })
      }))
    ),
    HttpRouter.get(
      "/v1/collections/:name/documents",
      handle(Effect.gen(function*() {
        const endpoint = "GET /v1/collections/{name}/documents"
        const { collection, principal } = yield* readable(endpoint)
        const scope = Principal.scopeOf(principal)
        const [documents, chunks] = yield* Effect.all([
          collection.listDocuments({ scope }),
          collection.count(undefined, { scope })
        ]).pipe(Effect.mapError(toWire(endpoint)))
        return json({ collection: collection.spec.name, chunks, documents })
      }))
    ),
    HttpRouter.post(
      "/v1/collections/:name/query",
      handle(Effect.gen(function*() {
        const endpoint = "POST /v1/collections/{name}/query"
        const { collection, principal } = yield* readable(endpoint)
        const body = yield* jsonBody(endpoint, QueryBody)
        const filter = yield* filterOf(collection, body.filter, endpoint)
        const base = yield* queryOptions(collection, options, body, endpoint)
        const result = yield* Answer.query(collection, body.query, { ...base, filter, groupBy: body.group_by }).pipe(
          Effect.provideService(Principal.Principal, principal),
          Effect.mapError(toWire(endpoint))
        )
        if (body.highlight !== true) return json(result)
        const { mark, terms } = highlighter(body.query)
        return json({ ...result, terms, hits: result.hits.map(mark) })
      }))
    ),
    HttpRouter.post(
      "/v1/collections/:name/ask",
      handle(Effect.gen(function*() {
        const endpoint = "POST /v1/collections/{name}/ask"
        const { collection, principal } = yield* readable(endpoint)
        const chat = yield* service(Chat.Chat, endpoint, "chat model (serve --gateway)")
        const body = yield* jsonBody(endpoint, AskBody)
        const filter = yield* filterOf(collection, body.filter, endpoint)
        const base = yield* queryOptions(collection, options, body, endpoint)
        const askOptions = { ...base, filter, tools: body.tools, model: body.model }
        const marks = body.highlight === true ? highlighter(body.question) : undefined
        if (body.stream === true) {
          const events = Answer.askStream(collection, body.question, askOptions).pipe(
            Stream.provideService(Principal.Principal, principal),
            Stream.provideService(Chat.Chat, chat),
            Stream.mapError(toWire(endpoint))
          )
          return yield* askSse(events, marks?.mark)
        }
        const answer = yield* Answer.ask(collection, body.question, askOptions).pipe(
          Effect.provideService(Principal.Principal, principal),
          Effect.provideService(Chat.Chat, chat),
          Effect.mapError(toWire(endpoint))
        )
        return json(marks ? { ...markAnswer(answer, marks.mark), terms: marks.terms } : answer)
      }))
    )
  )
