/**
 * What the local embedding layers (USE-lite, ONNX) share: the typed error of a model that
 * cannot be loaded, L2 normalisation, and the `Embeddings.Service` built around one function
 * that embeds a batch (batches of bounded size, a bounded number in flight, vectors normalised,
 * the OpenAI-shaped `create` answered locally).
 */
import { Data, Effect } from "effect"
import type * as Embeddings from "../../../api/Embeddings.js"
import * as RagError from "../../../RagError.js"

/**
 * A local model could not be loaded. `reason` tells a missing model (`not_found`: nothing at
 * the places in `looked`) from one that is there but failed to load (`load_failed`). The
 * message says where the layer looked and how to provide the model.
 */
export class LocalModelError extends Data.TaggedError("LocalModelError")<{
  /** The model as configured (a folder, a hub id, or a package name). */
  readonly model: string
  readonly reason: "not_found" | "load_failed"
  /** The places that were checked, in order. */
  readonly looked: ReadonlyArray<string>
  readonly message: string
  readonly cause?: unknown
}> {}

/** Scales a vector to unit length in place (a zero vector stays zero); returns it. */
export const normalize = (v: Float32Array): Float32Array => {
  let s = 0
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!
  const n = Math.sqrt(s)
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] = v[i]! / n
  return v
}

/** Encodes a vector as base64 little-endian float32 (the `encoding_format: "base64"` answer). */
export const encodeBase64Floats = (v: Float32Array): string => {
  const buf = Buffer.alloc(v.length * 4)
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i]!, i * 4)
  return buf.toString("base64")
}

/** What a local engine does with one batch: a vector per text (any scale) and the tokens read. */
export type EmbedBatch = (
  texts: ReadonlyArray<string>
) => Effect.Effect<{ readonly vectors: ReadonlyArray<Float32Array>; readonly tokens: number }, RagError.ApiError>

/** Settings of {@link makeLocalService}. */
export interface LocalServiceOptions {
  /** The model id reported in responses and accepted in requests. */
  readonly model: string
  /** The vector dimension. */
  readonly dimension: number
  /** The endpoint name used in errors, e.g. `UseLiteEmbeddings`. */
  readonly endpoint: string
  /** Default inputs per batch. */
  readonly batchSize: number
  /** Batches in flight at once across every caller of the layer. */
  readonly concurrency: number
  /** Embeds one batch. */
  readonly embedBatch: EmbedBatch
}

/** Builds the `Embeddings.Service` of a local engine around its batch function. */
export const makeLocalService = (options: LocalServiceOptions): Effect.Effect<Embeddings.Service> =>
  Effect.gen(function*() {
    const { dimension, endpoint, model } = options
    // Bounds the work of the whole layer, whatever the callers ask for.
    const permits = yield* Effect.makeSemaphore(Math.max(1, options.concurrency))

    const checkModel = (requested: string | undefined) =>
      requested === undefined || requested === model
        ? Effect.void
        : Effect.fail(
          new RagError.BadRequest({
            endpoint,
            message: `${endpoint} serves the model ${model} only, not ${requested}`
          })
        )
    const checkDimensions = (requested: number | undefined) =>
      requested === undefined || requested === dimension
        ? Effect.void
        : Effect.fail(
          new RagError.BadRequest({
            endpoint,
            message: `${endpoint}: ${model} gives ${dimension}-d vectors; dimensions ${requested} cannot be served`
          })
        )

    const embed = (texts: ReadonlyArray<string>, opts: Embeddings.EmbedOptions = {}) =>
      Effect.gen(function*() {
        yield* checkModel(opts.model)
        yield* checkDimensions(opts.dimensions)
        const batchSize = Math.max(1, opts.batchSize ?? options.batchSize)
        const batches: Array<ReadonlyArray<string>> = []
        for (let i = 0; i < texts.length; i += batchSize) batches.push(texts.slice(i, i + batchSize))
        const results = yield* Effect.forEach(
          batches,
          (batch) =>
            permits.withPermits(1)(options.embedBatch(batch)).pipe(
              Effect.flatMap((r) =>
                r.vectors.length === batch.length && r.vectors.every((v) => v.length === dimension)
                  ? Effect.succeed(r)
                  : Effect.fail(
                    new RagError.ServerError({
                      endpoint,
                      status: 500,
                      message: `${endpoint}: the engine returned ${r.vectors.length} vectors for ${batch.length} texts`
                    })
                  )
              )
            ),
          { concurrency: Math.max(1, opts.concurrency ?? options.concurrency) }
        )
        return {
          model,
          vectors: results.flatMap((r) => r.vectors.map(normalize)),
          totalTokens: results.reduce((sum, r) => sum + r.tokens, 0)
        } satisfies Embeddings.Embedded
      }).pipe(Effect.withSpan(`${endpoint}.embed`, { attributes: { count: texts.length } }))

    const create = (request: Embeddings.EmbeddingsRequest) =>
      Effect.gen(function*() {
        const inputs = typeof request.input === "string" ? [request.input] : request.input
        const embedded = yield* embed(inputs, { model: request.model, dimensions: request.dimensions })
        return {
          object: "list",
          model,
          data: embedded.vectors.map((v, index) => ({
            object: "embedding",
            index,
            embedding: request.encoding_format === "base64" ? encodeBase64Floats(v) : Array.from(v)
          })),
          usage: { prompt_tokens: embedded.totalTokens, total_tokens: embedded.totalTokens }
        } satisfies Embeddings.EmbeddingsResponse
      })

    return { defaultModel: model, dimension, create, embed } satisfies Embeddings.Service
  })

/** Maps an engine exception to the error of a local call (an engine fault, not the caller's). */
export const engineError = (endpoint: string) => (cause: unknown) =>
  new RagError.ServerError({
    endpoint,
    status: 500,
    message: `${endpoint}: ${cause instanceof Error ? cause.message : String(cause)}`
  })
