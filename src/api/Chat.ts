/**
 * Chat completions (`POST /v1/chat/completions`, OpenAI Chat Completions format): plain and
 * streamed (SSE), with tools, tool-result messages and image input.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as RagError from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"
import { decodeError, parseErrorBody } from "./ApiErrors.js"

// =============================================================================
// Request schemas
// =============================================================================

/**
 * A text content part.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })

/**
 * An image content part: a URL or a data URL.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({
    url: Schema.String,
    detail: Schema.optional(Schema.Literal("auto", "low", "high"))
  })
})

/**
 * The content of a user or system message: a string or parts.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Content = Schema.Union(Schema.String, Schema.Array(Schema.Union(TextPart, ImagePart)))
/**
 * @since 0.1.0
 * @category models
 */
export type Content = typeof Content.Type

/**
 * A tool call made by the assistant; `arguments` is a JSON string.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})
/**
 * @since 0.1.0
 * @category models
 */
export type ToolCall = typeof ToolCall.Type

/**
 * A system message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: Content,
  name: Schema.optional(Schema.String)
})
/**
 * A user message (text and images).
 *
 * @since 0.1.0
 * @category schemas
 */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Content,
  name: Schema.optional(Schema.String)
})
/**
 * An assistant message, possibly with tool calls.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.optional(Schema.NullOr(Schema.String)),
  tool_calls: Schema.optional(Schema.Array(ToolCall)),
  name: Schema.optional(Schema.String)
})
/**
 * The result of a tool, answering the tool call `tool_call_id`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  tool_call_id: Schema.String,
  content: Schema.String
})

/**
 * Any message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Message = Schema.Union(SystemMessage, UserMessage, AssistantMessage, ToolMessage)
/**
 * @since 0.1.0
 * @category models
 */
export type Message = typeof Message.Type

/**
 * A function tool the model may call. `parameters` is a JSON schema object.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Tool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    description: Schema.optional(Schema.String),
    parameters: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  })
})
/**
 * @since 0.1.0
 * @category models
 */
export type Tool = typeof Tool.Type

/**
 * The request body (without `stream`, which `create` and `stream` set).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Message),
  temperature: Schema.optional(Schema.Number),
  max_tokens: Schema.optional(Schema.Int),
  top_p: Schema.optional(Schema.Number),
  stop: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  tools: Schema.optional(Schema.Array(Tool)),
  tool_choice: Schema.optional(
    Schema.Union(
      Schema.Literal("auto", "none", "required"),
      Schema.Struct({ type: Schema.Literal("function"), function: Schema.Struct({ name: Schema.String }) })
    )
  ),
  seed: Schema.optional(Schema.Int),
  user: Schema.optional(Schema.String),
  /**
   * Streaming only (`stream`): `{include_usage: true}` asks for a last chunk with empty
   * `choices` and the request's `usage`. `create` never sends it.
   */
  stream_options: Schema.optional(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))
})
/**
 * @since 0.1.0
 * @category models
 */
export type ChatRequest = typeof ChatRequest.Type

const WireRequest = Schema.extend(ChatRequest, Schema.Struct({ stream: Schema.optional(Schema.Boolean) }))

// =============================================================================
// Response schemas (tolerant: unknown fields are ignored, documented-optional ones may be
// missing; a field the format requires, such as `choices`, is a DecodeError when missing)
// =============================================================================

/**
 * Token usage.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  prompt_tokens: Schema.optional(Schema.Number),
  completion_tokens: Schema.optional(Schema.Number),
  total_tokens: Schema.optional(Schema.Number)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Usage = typeof Usage.Type

/**
 * The assistant's reply.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResponseMessage = Schema.Struct({
  role: Schema.optionalWith(Schema.String, { default: () => "assistant" }),
  content: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  tool_calls: Schema.optional(Schema.Array(ToolCall))
})
/**
 * @since 0.1.0
 * @category models
 */
export type ResponseMessage = typeof ResponseMessage.Type

/**
 * A chat completion. The text is at `choices[0].message.content`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletion = Schema.Struct({
  id: Schema.optional(Schema.String),
  object: Schema.optional(Schema.String),
  created: Schema.optional(Schema.Number),
  model: Schema.optional(Schema.String),
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.optionalWith(Schema.Int, { default: () => 0 }),
      message: ResponseMessage,
      finish_reason: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
    })
  ),
  usage: Schema.optional(Usage)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ChatCompletion = typeof ChatCompletion.Type

/**
 * A piece of a tool call inside a streamed delta; pieces with the same `index` are joined.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCallDelta = Schema.Struct({
  index: Schema.Int,
  id: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String),
  function: Schema.optional(
    Schema.Struct({ name: Schema.optional(Schema.String), arguments: Schema.optional(Schema.String) })
  )
})

/**
 * One streamed chunk (`chat.completion.chunk`). `choices` is required (the usage chunk of
 * `stream_options.include_usage` sends it empty), and so is each choice's `delta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatChunk = Schema.Struct({
  id: Schema.optional(Schema.String),
  object: Schema.optional(Schema.String),
  created: Schema.optional(Schema.Number),
  model: Schema.optional(Schema.String),
  choices: Schema.Array(
    Schema.Struct({
      index: Schema.optionalWith(Schema.Int, { default: () => 0 }),
      delta: Schema.Struct({
        role: Schema.optional(Schema.String),
        content: Schema.optional(Schema.NullOr(Schema.String)),
        tool_calls: Schema.optional(Schema.Array(ToolCallDelta))
      }),
      finish_reason: Schema.optional(Schema.NullOr(Schema.String))
    })
  ),
  usage: Schema.optional(Schema.NullOr(Usage))
})
/**
 * @since 0.1.0
 * @category models
 */
export type ChatChunk = typeof ChatChunk.Type

// =============================================================================
// Service
// =============================================================================

/**
 * The chat service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** The model used by helpers (e.g. `ask`) when none is given. */
  readonly defaultModel: Option.Option<string>
  /** One completion. */
  readonly create: (request: ChatRequest) => Effect.Effect<ChatCompletion, RagError.ApiError>
  /**
   * A streamed completion: chunks as they arrive. An error event inside the stream fails it
   * with `StreamError`; a chunk that does not decode (a missing `choices` included) fails it
   * with `DecodeError`. The request is retried until the response starts, never after: a
   * stream that breaks off once chunks were delivered fails with `TransportError` (reason
   * `aborted`, or `timeout` when it went silent) whose `partial` holds the text, tool calls and
   * usage received so far, so the caller can show them or ask again with them as context. A
   * stream that ends without `[DONE]` was cut off: `TransportError` `aborted` (with `partial`),
   * or `DecodeError` when not one chunk came (a server that ignored `stream: true`).
   */
  readonly stream: (
    request: ChatRequest
  ) => Stream.Stream<ChatChunk, RagError.ApiError | RagError.StreamError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Chat extends Context.Tag("effect-rag/api/Chat")<Chat, Service>() {}

/**
 * The message a stream folds into.
 *
 * @since 0.1.0
 * @category models
 */
export interface FoldedMessage {
  readonly role: string
  readonly content: string
  readonly tool_calls: ReadonlyArray<ToolCall>
  readonly finish_reason: string | null
  readonly usage: Usage | undefined
}

interface Acc {
  role: string
  content: string
  tools: Map<number, { id: string; name: string; arguments: string }>
  finish_reason: string | null
  usage: Usage | undefined
}

const emptyAcc = (): Acc => ({ role: "assistant", content: "", tools: new Map(), finish_reason: null, usage: undefined })

/** What an accumulator holds, as the `partial` of a `TransportError`. */
const partialOf = (acc: Acc, chunks: number): RagError.PartialCompletion => ({
  content: acc.content,
  tool_calls: [...acc.tools.entries()].sort(([a], [b]) => a - b).map(([, t]) => t),
  ...(acc.usage !== undefined ? { usage: acc.usage } : {}),
  chunks
})

/**
 * The OpenTelemetry GenAI attributes of a chat request (operation, model and sampling
 * settings; never the messages).
 */
const genAiAttributes = (request: ChatRequest): Record<string, unknown> => ({
  "gen_ai.operation.name": "chat",
  "gen_ai.request.model": request.model,
  ...(request.temperature !== undefined ? { "gen_ai.request.temperature": request.temperature } : {}),
  ...(request.max_tokens !== undefined ? { "gen_ai.request.max_tokens": request.max_tokens } : {}),
  ...(request.top_p !== undefined ? { "gen_ai.request.top_p": request.top_p } : {})
})

/** Adds one chunk (choice 0) to an accumulator. */
const step = (acc: Acc, chunk: ChatChunk): Acc => {
  if (chunk.usage) acc.usage = chunk.usage
  const choice = chunk.choices.find((c) => c.index === 0)
  if (choice === undefined) return acc
  if (choice.delta.role) acc.role = choice.delta.role
  if (choice.delta.content) acc.content += choice.delta.content
  for (const piece of choice.delta.tool_calls ?? []) {
    const current = acc.tools.get(piece.index) ?? { id: "", name: "", arguments: "" }
    acc.tools.set(piece.index, {
      id: piece.id ?? current.id,
      name: current.name + (piece.function?.name ?? ""),
      arguments: current.arguments + (piece.function?.arguments ?? "")
    })
  }
  if (choice.finish_reason) acc.finish_reason = choice.finish_reason
  return acc
}

/**
 * A streamed assistant message as far as it came: the chunks of choice 0 added up by
 * {@link addChunk} (content joined, tool-call pieces joined by `index`, the finish reason and
 * usage once they come). What {@link foldStream} folds with, for a caller that reads the chunks
 * itself.
 *
 * @since 0.1.0
 * @category models
 */
export type MessageSoFar = Acc

/**
 * A message of which no chunk came yet.
 *
 * @since 0.1.0
 * @category constructors
 */
export const emptyMessage: () => MessageSoFar = emptyAcc

/**
 * Adds one chunk (choice 0) to a {@link MessageSoFar}, in place, and returns it.
 *
 * @since 0.1.0
 * @category utils
 */
export const addChunk: (message: MessageSoFar, chunk: ChatChunk) => MessageSoFar = step

/**
 * Folds a stream of chunks into the final assistant message: content joined, tool-call pieces
 * joined by `index` (ids and names from the first piece that carries them).
 *
 * @since 0.1.0
 * @category utils
 */
export const foldStream = <E, R>(stream: Stream.Stream<ChatChunk, E, R>): Effect.Effect<FoldedMessage, E, R> =>
  Stream.runFold(stream, emptyAcc(), step).pipe(
    Effect.map((acc) => ({
      role: acc.role,
      content: acc.content,
      tool_calls: [...acc.tools.entries()]
        .sort(([a], [b]) => a - b)
        .map(([, t]) => ({ id: t.id, type: "function" as const, function: { name: t.name, arguments: t.arguments } })),
      finish_reason: acc.finish_reason,
      usage: acc.usage
    }))
  )

/**
 * Text deltas only: a stream of content strings (tool calls and empty deltas dropped).
 *
 * @since 0.1.0
 * @category utils
 */
export const textDeltas = <E, R>(stream: Stream.Stream<ChatChunk, E, R>): Stream.Stream<string, E, R> =>
  Stream.filterMap(stream, (chunk) => {
    const text = chunk.choices.find((c) => c.index === 0)?.delta.content
    return text ? Option.some(text) : Option.none()
  })

// =============================================================================
// Remote layer
// =============================================================================

const endpoint = "POST /v1/chat/completions"
const decodeChunk = Schema.decodeUnknown(ChatChunk)

/**
 * Options of the remote layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteOptions {
  /** A default model for helpers that need one (from `EFFECT_RAG_CHAT_MODEL` in the CLI). */
  readonly model?: string | undefined
}

/**
 * Builds the remote service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: RemoteOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* ApiHttp
    const call = (body: unknown, stream: boolean) => ({
      endpoint,
      method: "POST" as const,
      host: "base" as const,
      path: "/v1/chat/completions",
      body: { _tag: "Json" as const, value: body },
      ...(stream ? { timeout: "stream" as const } : {})
    })
    // create never sends stream_options (the service refuses it without `stream`)
    const unstreamed = ({ stream_options: _, ...rest }: ChatRequest): ChatRequest => rest

    const create = (request: ChatRequest) =>
      http.encode(endpoint, WireRequest, { ...unstreamed(request), stream: false }).pipe(
        Effect.flatMap((body) => http.json(call(body, false), ChatCompletion)),
        Effect.tap((completion) =>
          Effect.annotateCurrentSpan({
            ...(completion.model !== undefined ? { "gen_ai.response.model": completion.model } : {}),
            ...(completion.usage?.prompt_tokens !== undefined
              ? { "gen_ai.usage.input_tokens": completion.usage.prompt_tokens }
              : {}),
            ...(completion.usage?.completion_tokens !== undefined
              ? { "gen_ai.usage.output_tokens": completion.usage.completion_tokens }
              : {}),
            "gen_ai.response.finish_reasons": completion.choices.flatMap((c) => c.finish_reason ?? [])
          })
        ),
        Effect.withSpan("Chat.create", { kind: "client", attributes: genAiAttributes(request) })
      )

    const parseEvent = (data: string): Effect.Effect<ChatChunk, RagError.ApiError | RagError.StreamError> => {
      let json: unknown
      try {
        json = JSON.parse(data)
      } catch {
        return Effect.fail(
          new RagError.DecodeError({ endpoint, path: "", message: `${endpoint}: a stream event is not JSON` })
        )
      }
      if (typeof json === "object" && json !== null && "error" in json) {
        const body = parseErrorBody(data, "error event in stream")
        return Effect.fail(
          new RagError.StreamError({
            endpoint,
            message: `${endpoint}: the stream reported an error: ${http.scrub(body.message)}`,
            type: body.type,
            code: body.code
          })
        )
      }
      return decodeChunk(json).pipe(Effect.mapError((error) => decodeError(endpoint, error)))
    }

    const stream = (request: ChatRequest) =>
      Stream.unwrap(
        http.encode(endpoint, WireRequest, { ...request, stream: true }).pipe(
          Effect.map((body) =>
            Stream.suspend(() => {
              // What this run has delivered, for the `partial` of a stream that breaks off.
              const acc = emptyAcc()
              let chunks = 0
              let done = false
              // The stream ends with `[DONE]`: a body that ends before it was cut off (or was
              // no stream at all), never a complete answer.
              const unfinished = Stream.suspend(() =>
                done
                  ? Stream.empty
                  : Stream.fail(
                    chunks === 0
                      ? new RagError.DecodeError({
                        endpoint,
                        path: "",
                        message: `${endpoint}: the streamed request was answered without any chunk or [DONE] (not a server-sent event stream)`
                      })
                      : new RagError.TransportError({ endpoint, reason: "aborted", message: `${endpoint}: the stream ended without [DONE]` })
                  )
              )
              return http.sse(call(body, true)).pipe(
                Stream.map((event) => event.data.trim()),
                Stream.takeWhile((data) => {
                  done = data === "[DONE]"
                  return !done
                }),
                Stream.mapEffect(parseEvent),
                Stream.tap((chunk) =>
                  Effect.sync(() => {
                    chunks += 1
                    step(acc, chunk)
                  })
                ),
                Stream.concat(unfinished),
                Stream.mapError((error) =>
                  error._tag === "TransportError" && chunks > 0
                    ? new RagError.TransportError({
                      endpoint: error.endpoint,
                      reason: error.reason,
                      message: `${error.message} (after ${chunks} chunks; what arrived is in partial)`,
                      partial: partialOf(acc, chunks)
                    })
                    : error
                )
              )
            })
          )
        )
      ).pipe(Stream.withSpan("Chat.stream", { kind: "client", attributes: genAiAttributes(request) }))

    return Chat.of({ defaultModel: Option.fromNullable(options.model), create, stream })
  })

/**
 * The remote layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RemoteOptions = {}): Layer.Layer<Chat, never, ApiHttp> =>
  Layer.effect(Chat, make(options))
