/**
 * Image generation (`POST /v1/images/generations`).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
import type * as RagError from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"

/**
 * The request body; omitted fields take the server's defaults (n 1, 1024x1024, standard, natural).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImageRequest = Schema.Struct({
  prompt: Schema.String,
  n: Schema.optional(Schema.Int.pipe(Schema.positive())),
  size: Schema.optional(Schema.Literal("1024x1024", "1024x1792", "1792x1024")),
  quality: Schema.optional(Schema.Literal("standard", "hd")),
  style: Schema.optional(Schema.Literal("natural", "vivid")),
  model: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ImageRequest = typeof ImageRequest.Type

/**
 * The response body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImageResponse = Schema.Struct({
  created: Schema.Number,
  data: Schema.Array(
    Schema.Struct({
      revised_prompt: Schema.optional(Schema.String),
      url: Schema.optional(Schema.String),
      b64_json: Schema.optional(Schema.String)
    })
  )
})
/**
 * @since 0.1.0
 * @category models
 */
export type ImageResponse = typeof ImageResponse.Type

/**
 * The image generation service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly generate: (request: ImageRequest) => Effect.Effect<ImageResponse, RagError.ApiError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Images extends Context.Tag("effect-rag/api/Images")<Images, Service>() {}

const endpoint = "POST /v1/images/generations"

/**
 * Builds the remote service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.map(ApiHttp, (http) =>
  Images.of({
    generate: (request) =>
      http.encode(endpoint, ImageRequest, request).pipe(
        Effect.flatMap((body) =>
          http.json(
            {
              endpoint,
              method: "POST",
              host: "base",
              path: "/v1/images/generations",
              body: { _tag: "Json", value: body },
              // Generation is slow; it gets the long time-out.
              timeout: "upload"
            },
            ImageResponse
          )
        ),
        Effect.withSpan("Images.generate")
      )
  }))

/**
 * The remote layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Images, never, ApiHttp> = Layer.effect(Images, make)
