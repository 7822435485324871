/**
 * `@effect/ai`'s `LanguageModel` on top of this library's {@link Chat.Chat} service, so that an
 * existing `@effect/ai` program (`LanguageModel.generateText` with a `Toolkit`,
 * `LanguageModel.streamText`, `LanguageModel.generateObject`, `Chat`) runs against the chat
 * completions endpoint of the API, or of this library's server, unchanged:
 *
 * ```ts
 * const program = LanguageModel.generateText({ prompt: "Hello", toolkit: MyToolkit })
 * program.pipe(
 *   Effect.provide(RagLanguageModel.layer({ model: "gpt-4o-mini" })),
 *   Effect.provide(Chat.layer()), Effect.provide(ApiHttp.layer), Effect.provide(RagConfig.layerConfig))
 * ```
 *
 * Mapping: the prompt becomes chat messages (system, user text and images, assistant text and
 * tool calls, tool results as `role: "tool"` messages); toolkit tools become function tools
 * (their JSON schema as `parameters`) and `toolChoice` becomes `tool_choice`. A response
 * becomes `response-metadata`, `text`, `tool-call` and `finish` parts (with usage); a stream
 * becomes `text-start`/`text-delta`/`text-end`, `tool-params-*` and `tool-call` parts, then
 * `finish`. Structured output (`generateObject`) is asked for with a system message carrying
 * the JSON schema, since the endpoint has no `response_format`. Failures are `AiError`s: an
 * `UnknownError` whose `cause` is the library's own typed error (`RagError.*`), a
 * `MalformedInput` for prompt content the endpoint cannot carry (non-image files,
 * provider-defined tools), a `MalformedOutput` for tool-call arguments that are not JSON.
 *
 * Written for `@effect/ai` 0.37 (the release for `effect` 3.22).
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import { Effect, Layer, Option, Stream } from "effect"
import * as Chat from "../api/Chat.js"
import type * as RagError from "../RagError.js"

const module = "RagLanguageModel"

/**
 * Sampling settings sent with every request (a request's own prompt and tools are added).
 *
 * @since 0.1.0
 * @category models
 */
export interface Config {
  readonly temperature?: number | undefined
  readonly max_tokens?: number | undefined
  readonly top_p?: number | undefined
  readonly stop?: string | ReadonlyArray<string> | undefined
  readonly seed?: number | undefined
  readonly user?: string | undefined
}

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The chat model; defaults to the `Chat` service's `defaultModel`. */
  readonly model?: string | undefined
  /** Sampling settings for every request. */
  readonly config?: Config | undefined
  /**
   * Ask streams for a final usage chunk (`stream_options.include_usage`, default true), so
   * the `finish` part of `streamText` carries token counts.
   */
  readonly streamUsage?: boolean | undefined
}

// =============================================================================
// Errors
// =============================================================================

const fromRagError = (method: string) => (error: RagError.ApiError | RagError.StreamError): AiError.AiError =>
  new AiError.UnknownError({ module, method, description: error.message, cause: error })

// =============================================================================
// Prompt → chat messages
// =============================================================================

const base64 = (data: Uint8Array): string => Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64")

const imageUrl = (part: Prompt.FilePart): string => {
  const mediaType = part.mediaType === "image/*" ? "image/jpeg" : part.mediaType
  return part.data instanceof URL
    ? part.data.toString()
    : part.data instanceof Uint8Array
    ? `data:${mediaType};base64,${base64(part.data)}`
    : /^(data:|https?:\/\/)/i.test(part.data)
    ? part.data
    : `data:${mediaType};base64,${part.data}`
}

/**
 * Converts the prompt to chat messages; fails for content the endpoint cannot carry.
 *
 * @since 0.1.0
 * @category utils
 */
export const toMessages = (
  prompt: Prompt.Prompt,
  method: string
): Effect.Effect<Array<Chat.Message>, AiError.AiError> =>
  Effect.suspend(() => {
    const messages: Array<Chat.Message> = []
    for (const message of prompt.content) {
      switch (message.role) {
        case "system":
          messages.push({ role: "system", content: message.content })
          break
        case "user": {
          const parts: Array<typeof Chat.TextPart.Type | typeof Chat.ImagePart.Type> = []
          for (const part of message.content) {
            if (part.type === "text") {
              parts.push({ type: "text", text: part.text })
            } else if (part.mediaType.startsWith("image/")) {
              parts.push({ type: "image_url", image_url: { url: imageUrl(part) } })
            } else {
              return Effect.fail(
                new AiError.MalformedInput({
                  module,
                  method,
                  description: `a ${part.mediaType} file cannot be sent to chat completions (images only)`
                })
              )
            }
          }
          const only = parts[0]
          messages.push({
            role: "user",
            content: parts.length === 1 && only?.type === "text" ? only.text : parts
          })
          break
        }
        case "assistant": {
          let text = ""
          const toolCalls: Array<Chat.ToolCall> = []
          for (const part of message.content) {
            if (part.type === "text") text += part.text
            else if (part.type === "tool-call" && !part.providerExecuted) {
              toolCalls.push({
                id: part.id,
                type: "function",
                function: { name: part.name, arguments: JSON.stringify(part.params ?? {}) }
              })
            }
          }
          messages.push({
            role: "assistant",
            content: text === "" && toolCalls.length > 0 ? null : text,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
          })
          break
        }
        case "tool":
          for (const part of message.content) {
            messages.push({ role: "tool", tool_call_id: part.id, content: JSON.stringify(part.result) })
          }
          break
      }
    }
    return Effect.succeed(messages)
  })

/** Converts the toolkit and tool choice to function tools and `tool_choice`. */
const toTools = (
  options: LanguageModel.ProviderOptions,
  method: string
): Effect.Effect<Pick<Chat.ChatRequest, "tools" | "tool_choice">, AiError.AiError> =>
  Effect.suspend(() => {
    if (options.tools.length === 0) return Effect.succeed({})
    if (options.tools.some((tool) => Tool.isProviderDefined(tool))) {
      return Effect.fail(
        new AiError.MalformedInput({ module, method, description: "provider-defined tools are not supported" })
      )
    }
    let tools: Array<Chat.Tool> = options.tools.map((tool) => {
      const description = Tool.getDescription(tool as any)
      return {
        type: "function" as const,
        function: {
          name: tool.name,
          ...(description !== undefined ? { description } : {}),
          parameters: Tool.getJsonSchema(tool as any) as unknown as Record<string, unknown>
        }
      }
    })
    const choice = options.toolChoice
    let toolChoice: Chat.ChatRequest["tool_choice"]
    if (choice === "auto" || choice === "none" || choice === "required") {
      toolChoice = choice
    } else if ("tool" in choice) {
      toolChoice = { type: "function", function: { name: choice.tool } }
    } else {
      const allowed = new Set<string>(choice.oneOf)
      tools = tools.filter((tool) => allowed.has(tool.function.name))
      toolChoice = choice.mode === "required" ? "required" : "auto"
    }
    return Effect.succeed({ tools, tool_choice: toolChoice })
  })

/** The system message that asks for structured output (the endpoint has no `response_format`). */
const jsonInstruction = (format: LanguageModel.ProviderOptions["responseFormat"]): Option.Option<Chat.Message> =>
  format.type === "json"
    ? Option.some({
      role: "system",
      content: `Answer with one JSON object only (no prose, no code fence), the "${format.objectName}" ` +
        `object matching this JSON schema:\n${JSON.stringify(Tool.getJsonSchemaFromSchemaAst(format.schema.ast))}`
    })
    : Option.none()

// =============================================================================
// Responses → parts
// =============================================================================

/**
 * Maps a chat `finish_reason` to `@effect/ai`'s finish reason.
 *
 * @since 0.1.0
 * @category utils
 */
export const finishReason = (reason: string | null | undefined): Response.FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    case null:
    case undefined:
      return "unknown"
    default:
      return "other"
  }
}

const usageOf = (usage: Chat.Usage | null | undefined) => ({
  inputTokens: usage?.prompt_tokens,
  outputTokens: usage?.completion_tokens,
  totalTokens: usage?.total_tokens
})

const parseParams = (name: string, text: string, method: string): Effect.Effect<unknown, AiError.AiError> =>
  Effect.try({
    try: () => Tool.unsafeSecureJsonParse(text === "" ? "{}" : text),
    catch: (cause) =>
      new AiError.MalformedOutput({
        module,
        method,
        description: `the arguments of the call to tool '${name}' are not JSON`,
        cause
      })
  })

const fromCompletion = (
  completion: Chat.ChatCompletion
): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
  Effect.gen(function*() {
    const choice = completion.choices[0]
    if (choice === undefined) {
      return yield* new AiError.MalformedOutput({ module, method: "generateText", description: "the completion has no choices" })
    }
    const parts: Array<Response.PartEncoded> = [{
      type: "response-metadata",
      id: completion.id,
      modelId: completion.model,
      timestamp: completion.created === undefined ? undefined : new Date(completion.created * 1000).toISOString()
    }]
    if (choice.message.content !== null && choice.message.content !== "") {
      parts.push({ type: "text", text: choice.message.content })
    }
    for (const call of choice.message.tool_calls ?? []) {
      const params = yield* parseParams(call.function.name, call.function.arguments, "generateText")
      parts.push({ type: "tool-call", id: call.id, name: call.function.name, params })
    }
    parts.push({ type: "finish", reason: finishReason(choice.finish_reason), usage: usageOf(completion.usage) })
    return parts
  })

/** Turns chat chunks into stream parts (one text part, tool calls joined by index, then finish). */
const toStreamParts = <E, R>(
  chunks: Stream.Stream<Chat.ChatChunk, E, R>
): Stream.Stream<Response.StreamPartEncoded, E | AiError.AiError, R> =>
  Stream.suspend(() => {
    let metadataSent = false
    let textOpen = false
    let finish: string | null = null
    let usage: Chat.Usage | undefined
    const tools = new Map<number, { id: string; name: string; params: string }>()
    const textId = "text-0"

    const onChunk = (chunk: Chat.ChatChunk): Array<Response.StreamPartEncoded> => {
      const parts: Array<Response.StreamPartEncoded> = []
      if (!metadataSent) {
        metadataSent = true
        parts.push({
          type: "response-metadata",
          id: chunk.id,
          modelId: chunk.model,
          timestamp: chunk.created === undefined ? undefined : new Date(chunk.created * 1000).toISOString()
        })
      }
      if (chunk.usage) usage = chunk.usage
      const choice = chunk.choices.find((c) => c.index === 0)
      if (choice === undefined) return parts
      const text = choice.delta.content
      if (text) {
        if (!textOpen) {
          textOpen = true
          parts.push({ type: "text-start", id: textId })
        }
        parts.push({ type: "text-delta", id: textId, delta: text })
      }
      for (const piece of choice.delta.tool_calls ?? []) {
        let tool = tools.get(piece.index)
        if (tool === undefined) {
          tool = { id: piece.id ?? `call-${piece.index}`, name: piece.function?.name ?? "", params: "" }
          tools.set(piece.index, tool)
          parts.push({ type: "tool-params-start", id: tool.id, name: tool.name })
        } else if (piece.function?.name) {
          tool.name += piece.function.name
        }
        const delta = piece.function?.arguments ?? ""
        if (delta !== "") {
          tool.params += delta
          parts.push({ type: "tool-params-delta", id: tool.id, delta })
        }
      }
      if (choice.finish_reason) finish = choice.finish_reason
      return parts
    }

    const onEnd = Effect.gen(function*() {
      const parts: Array<Response.StreamPartEncoded> = []
      if (textOpen) parts.push({ type: "text-end", id: textId })
      for (const [, tool] of [...tools].sort(([a], [b]) => a - b)) {
        parts.push({ type: "tool-params-end", id: tool.id })
        const params = yield* parseParams(tool.name, tool.params, "streamText")
        parts.push({ type: "tool-call", id: tool.id, name: tool.name, params })
      }
      parts.push({ type: "finish", reason: finishReason(finish), usage: usageOf(usage) })
      return parts
    })

    return chunks.pipe(
      Stream.mapConcat(onChunk),
      Stream.concat(Stream.flatMap(Stream.fromEffect(onEnd), (parts) => Stream.fromIterable(parts)))
    )
  })

// =============================================================================
// Constructors
// =============================================================================

/**
 * Builds the `LanguageModel` service over the `Chat` service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const modelName = options.model ?? Option.getOrUndefined(chat.defaultModel)

    const request = (provider: LanguageModel.ProviderOptions, method: string) =>
      Effect.gen(function*() {
        if (modelName === undefined) {
          return yield* new AiError.MalformedInput({
            module,
            method,
            description: "no chat model: pass model to RagLanguageModel.layer or give the Chat layer a default model"
          })
        }
        const messages = yield* toMessages(provider.prompt, method)
        const tools = yield* toTools(provider, method)
        const instruction = jsonInstruction(provider.responseFormat)
        const config = options.config ?? {}
        const req: Chat.ChatRequest = {
          model: modelName,
          messages: Option.isSome(instruction) ? [instruction.value, ...messages] : messages,
          ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
          ...(config.max_tokens !== undefined ? { max_tokens: config.max_tokens } : {}),
          ...(config.top_p !== undefined ? { top_p: config.top_p } : {}),
          ...(config.stop !== undefined ? { stop: config.stop } : {}),
          ...(config.seed !== undefined ? { seed: config.seed } : {}),
          ...(config.user !== undefined ? { user: config.user } : {}),
          ...tools
        }
        return req
      })

    return yield* LanguageModel.make({
      generateText: (provider) =>
        request(provider, "generateText").pipe(
          Effect.flatMap((req) => Effect.mapError(chat.create(req), fromRagError("generateText"))),
          Effect.flatMap(fromCompletion)
        ),
      streamText: (provider) =>
        Stream.unwrap(
          Effect.map(request(provider, "streamText"), (req) =>
            toStreamParts(
              chat.stream(
                options.streamUsage === false ? req : { ...req, stream_options: { include_usage: true } }
              ).pipe(Stream.mapError(fromRagError("streamText")))
            ))
        )
    })
  })

/**
 * The `LanguageModel` layer over the `Chat` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<LanguageModel.LanguageModel, never, Chat.Chat> =>
  Layer.effect(LanguageModel.LanguageModel, make(options))
