/**
 * Rerank (`POST /v1/rerank`, the common rerank format): reorders documents by relevance to a
 * query. Results come sorted by `relevance_score`, highest first, at most `top_n` of them;
 * `index` points into the request's `documents`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as RagError from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"

/**
 * The request body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RerankRequest = Schema.Struct({
  model: Schema.String,
  query: Schema.String,
  documents: Schema.Array(Schema.String),
  top_n: Schema.optional(Schema.Int),
  return_documents: Schema.optional(Schema.Boolean)
})
/**
 * @since 0.1.0
 * @category models
 */
export type RerankRequest = typeof RerankRequest.Type

/**
 * One ranked document.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RerankResult = Schema.Struct({
  index: Schema.Int,
  relevance_score: Schema.Number,
  document: Schema.optional(Schema.Struct({ text: Schema.String }))
})
/**
 * @since 0.1.0
 * @category models
 */
export type RerankResult = typeof RerankResult.Type

/**
 * The response body, decoded tolerantly.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RerankResponse = Schema.Struct({
  id: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  results: Schema.Array(RerankResult),
  usage: Schema.optional(Schema.Struct({ total_tokens: Schema.optional(Schema.Number) }))
})
/**
 * @since 0.1.0
 * @category models
 */
export type RerankResponse = typeof RerankResponse.Type

/**
 * The rerank service. A local cross-encoder layer implements the same interface.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** The model used when a request names none (`mixr-v1` remotely). */
  readonly defaultModel: string
  /**
   * Reranks; the results are sorted by score, highest first, and every `index` is checked
   * against `documents` (a decode error otherwise).
   */
  readonly rerank: (request: RerankRequest) => Effect.Effect<RerankResponse, RagError.ApiError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Rerank extends Context.Tag("effect-rag/api/Rerank")<Rerank, Service>() {}

const endpoint = "POST /v1/rerank"

/**
 * Sorts results by score and checks their indices (servers are not trusted to do either).
 *
 * @since 0.1.0
 * @category utils
 */
export const normalize = (
  request: RerankRequest,
  response: RerankResponse
): Effect.Effect<RerankResponse, RagError.DecodeError> => {
  const bad = response.results.findIndex((r) => r.index < 0 || r.index >= request.documents.length)
  if (bad !== -1) {
    return Effect.fail(
      new RagError.DecodeError({
        endpoint,
        path: `results[${bad}].index`,
        message: `${endpoint}: result ${bad} points at document ${response.results[bad]?.index}, but ${request.documents.length} were sent`
      })
    )
  }
  const sorted = [...response.results].sort((a, b) => b.relevance_score - a.relevance_score)
  return Effect.succeed({
    ...response,
    results: request.top_n !== undefined ? sorted.slice(0, request.top_n) : sorted
  })
}

/**
 * Builds the remote service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly model?: string | undefined } = {}) =>
  Effect.gen(function*() {
    const http = yield* ApiHttp
    const rerank = (request: RerankRequest) =>
      http.encode(endpoint, RerankRequest, request).pipe(
        Effect.flatMap((body) =>
          http.json(
            { endpoint, method: "POST", host: "base", path: "/v1/rerank", body: { _tag: "Json", value: body } },
            RerankResponse
          )
        ),
        Effect.flatMap((response) => normalize(request, response)),
        Effect.withSpan("Rerank.rerank")
      )
    return Rerank.of({ defaultModel: options.model ?? "mixr-v1", rerank })
  })

/**
 * The remote layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: { readonly model?: string | undefined } = {}): Layer.Layer<Rerank, never, ApiHttp> =>
  Layer.effect(Rerank, make(options))
