/**
 * Embeddings (`POST /v1/embeddings`, OpenAI embeddings format).
 *
 * `create` sends one request exactly as given. `embed` is the convenience most callers want: it
 * splits many texts into batches sent with bounded concurrency and returns one `Float32Array`
 * per input, in input order, whatever order the server answered in.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
import type * as RagError from "../RagError.js"
import { DecodeError } from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"

// =============================================================================
// Schemas
// =============================================================================

/**
 * The request body. `input` is one string or several.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EmbeddingsRequest = Schema.Struct({
  model: Schema.String,
  input: Schema.Union(Schema.String, Schema.Array(Schema.String)),
  encoding_format: Schema.optional(Schema.Literal("float", "base64")),
  dimensions: Schema.optional(Schema.Int),
  user: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type EmbeddingsRequest = typeof EmbeddingsRequest.Type

/**
 * One embedding: a number array, or base64 of little-endian float32 values.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EmbeddingItem = Schema.Struct({
  object: Schema.optional(Schema.String),
  index: Schema.Int,
  embedding: Schema.Union(Schema.Array(Schema.Number), Schema.String)
})

/**
 * The response body, decoded tolerantly.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EmbeddingsResponse = Schema.Struct({
  object: Schema.optional(Schema.String),
  data: Schema.Array(EmbeddingItem),
  model: Schema.optional(Schema.String),
  usage: Schema.optional(
    Schema.Struct({
      prompt_tokens: Schema.optional(Schema.Number),
      total_tokens: Schema.optional(Schema.Number)
    })
  )
})
/**
 * @since 0.1.0
 * @category models
 */
export type EmbeddingsResponse = typeof EmbeddingsResponse.Type

/**
 * Options of {@link Service.embed}.
 *
 * @since 0.1.0
 * @category models
 */
export interface EmbedOptions {
  readonly model?: string | undefined
  readonly dimensions?: number | undefined
  /** Inputs per request (default 96). */
  readonly batchSize?: number | undefined
  /** Requests in flight at once (default 4). */
  readonly concurrency?: number | undefined
  /** Ask for base64 (smaller responses; default true). */
  readonly base64?: boolean | undefined
}

/**
 * The result of {@link Service.embed}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Embedded {
  readonly model: string
  readonly vectors: ReadonlyArray<Float32Array>
  readonly totalTokens: number
}

/**
 * The embeddings service. Local layers (ONNX, USE-lite) implement the same interface.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** The model used when a call names none. */
  readonly defaultModel: string
  /** The vector dimension of the default model, when known before a call (local models). */
  readonly dimension: number | undefined
  /** Sends one embeddings request as it is. */
  readonly create: (request: EmbeddingsRequest) => Effect.Effect<EmbeddingsResponse, RagError.ApiError>
  /** Embeds many texts in batches; vectors come back in input order. */
  readonly embed: (
    texts: ReadonlyArray<string>,
    options?: EmbedOptions
  ) => Effect.Effect<Embedded, RagError.ApiError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Embeddings extends Context.Tag("effect-rag/api/Embeddings")<Embeddings, Service>() {}

// =============================================================================
// Decoding helpers
// =============================================================================

/**
 * Decodes base64 little-endian float32 into a `Float32Array` (endianness-safe).
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeBase64Floats = (b64: string): Float32Array | undefined => {
  const bytes = Buffer.from(b64, "base64")
  if (bytes.length % 4 !== 0) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const out = new Float32Array(bytes.length / 4)
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true)
  return out
}

/**
 * Places the items of a response by `index` into an array of `count` vectors. Fails with a
 * decode error if an index is missing, duplicated or out of range, or base64 is malformed.
 *
 * @since 0.1.0
 * @category utils
 */
export const placeByIndex = (
  endpoint: string,
  response: EmbeddingsResponse,
  count: number
): Effect.Effect<Array<Float32Array>, DecodeError> =>
  Effect.suspend(() => {
    const out: Array<Float32Array | undefined> = new Array(count).fill(undefined)
    for (const [position, item] of response.data.entries()) {
      const path = `data[${position}]`
      if (item.index < 0 || item.index >= count || out[item.index] !== undefined) {
        return Effect.fail(
          new DecodeError({
            endpoint,
            path: `${path}.index`,
            message: `${endpoint}: index ${item.index} is out of range or repeated (${count} inputs)`
          })
        )
      }
      const vector = typeof item.embedding === "string"
        ? decodeBase64Floats(item.embedding)
        : Float32Array.from(item.embedding)
      if (vector === undefined) {
        return Effect.fail(
          new DecodeError({
            endpoint,
            path: `${path}.embedding`,
            message: `${endpoint}: the base64 embedding is not a whole number of float32 values`
          })
        )
      }
      out[item.index] = vector
    }
    const missing = out.findIndex((v) => v === undefined)
    if (missing !== -1) {
      return Effect.fail(
        new DecodeError({
          endpoint,
          path: "data",
          message: `${endpoint}: no embedding for input ${missing} (${response.data.length} of ${count} returned)`
        })
      )
    }
    return Effect.succeed(out as Array<Float32Array>)
  })

// =============================================================================
// Remote layer
// =============================================================================

const endpoint = "POST /v1/embeddings"

/**
 * Options of the remote layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteOptions {
  /** The model used when a call names none. */
  readonly model?: string | undefined
  /** The dimension of that model, when the caller knows it. */
  readonly dimension?: number | undefined
}

/**
 * Builds the remote service on {@link ApiHttp}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: RemoteOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* ApiHttp
    const defaultModel = options.model ?? "text-embedding-3-small"
    const create = (request: EmbeddingsRequest) =>
      http.encode(endpoint, EmbeddingsRequest, request).pipe(
        Effect.flatMap((body) =>
          http.json(
            { endpoint, method: "POST", host: "base", path: "/v1/embeddings", body: { _tag: "Json", value: body } },
            EmbeddingsResponse
          )
        ),
        Effect.tap((response) =>
          response.usage?.prompt_tokens !== undefined
            ? Effect.annotateCurrentSpan("gen_ai.usage.input_tokens", response.usage.prompt_tokens)
            : Effect.void
        ),
        Effect.withSpan("Embeddings.create", {
          kind: "client",
          attributes: {
            "gen_ai.operation.name": "embeddings",
            "gen_ai.request.model": request.model,
            "effect_rag.inputs": typeof request.input === "string" ? 1 : request.input.length,
            ...(request.dimensions !== undefined ? { "gen_ai.embeddings.dimension.count": request.dimensions } : {})
          }
        })
      )

    const embed = (texts: ReadonlyArray<string>, opts: EmbedOptions = {}) =>
      Effect.gen(function*() {
        const batchSize = Math.max(1, opts.batchSize ?? 96)
        const model = opts.model ?? defaultModel
        const batches: Array<ReadonlyArray<string>> = []
        for (let i = 0; i < texts.length; i += batchSize) batches.push(texts.slice(i, i + batchSize))
        const results = yield* Effect.forEach(
          batches,
          (batch) =>
            create({
              model,
              input: batch,
              encoding_format: opts.base64 === false ? "float" : "base64",
              ...(opts.dimensions !== undefined ? { dimensions: opts.dimensions } : {})
            }).pipe(
              Effect.flatMap((response) =>
                Effect.map(placeByIndex(endpoint, response, batch.length), (vectors) => ({
                  vectors,
                  tokens: response.usage?.total_tokens ?? 0
                }))
              )
            ),
          { concurrency: Math.max(1, opts.concurrency ?? 4) }
        )
        return {
          model,
          vectors: results.flatMap((r) => r.vectors),
          totalTokens: results.reduce((sum, r) => sum + r.tokens, 0)
        } satisfies Embedded
      }).pipe(Effect.withSpan("Embeddings.embed", { attributes: { "effect_rag.inputs": texts.length } }))

    return Embeddings.of({ defaultModel, dimension: options.dimension, create, embed })
  })

/**
 * The remote layer (needs {@link ApiHttp}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RemoteOptions = {}): Layer.Layer<Embeddings, never, ApiHttp> =>
  Layer.effect(Embeddings, make(options))
