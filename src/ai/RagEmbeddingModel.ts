/**
 * `@effect/ai`'s `EmbeddingModel` on top of this library's {@link Embeddings.Embeddings}
 * service (remote or local), so `EmbeddingModel.embed` / `embedMany` programs run against it
 * unchanged. Batches go through `Embeddings.embed` (input order kept, base64 transfer);
 * failures are `AiError.UnknownError`s whose `cause` is the library's typed error.
 *
 * Written for `@effect/ai` 0.37 (the release for `effect` 3.22).
 *
 * @since 0.1.0
 */
import * as AiError from "@effect/ai/AiError"
import * as EmbeddingModel from "@effect/ai/EmbeddingModel"
import { Effect, Layer } from "effect"
import * as Embeddings from "../api/Embeddings.js"

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The embedding model; defaults to the `Embeddings` service's `defaultModel`. */
  readonly model?: string | undefined
  /** Output dimensions, for models that can shorten their vectors. */
  readonly dimensions?: number | undefined
  /** Inputs per request (default 96). */
  readonly maxBatchSize?: number | undefined
}

/**
 * Builds the `EmbeddingModel` service over the `Embeddings` service in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const embeddings = yield* Embeddings.Embeddings
    const batchSize = Math.max(1, options.maxBatchSize ?? 96)
    return yield* EmbeddingModel.make({
      maxBatchSize: batchSize,
      embedMany: (input) =>
        embeddings.embed(input, {
          model: options.model ?? embeddings.defaultModel,
          batchSize,
          ...(options.dimensions !== undefined ? { dimensions: options.dimensions } : {})
        }).pipe(
          Effect.map((embedded) => embedded.vectors.map((vector, index) => ({ index, embeddings: Array.from(vector) }))),
          Effect.mapError((error) =>
            new AiError.UnknownError({
              module: "RagEmbeddingModel",
              method: "embedMany",
              description: error.message,
              cause: error
            })
          )
        )
    })
  })

/**
 * The `EmbeddingModel` layer over the `Embeddings` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<EmbeddingModel.EmbeddingModel, never, Embeddings.Embeddings> =>
  Layer.effect(EmbeddingModel.EmbeddingModel, make(options))
