/**
 * AI search: a search-and-answer operation combining a chat model, an embedding model and a
 * focus mode (`POST {baseUrl}/v1/web`, body `{model: "svc-ai-search", params}`).
 *
 * The call is built by the web route table (`WebRoutes.ts`), so the `single` routing
 * (`{"operation": "search", …}`) needs no change here. AI search requires an API key.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as RagError from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"
import { endpointOf, webCall } from "./WebRoutes.js"

// =============================================================================
// Request
// =============================================================================

/**
 * The model identifier of AI search, sent when a request names none.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "svc-ai-search"

/**
 * A provider and one of its models.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelChoice = Schema.Struct({
  provider: Schema.String,
  model: Schema.String
})
/**
 * A provider and one of its models.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelChoice = typeof ModelChoice.Type

/**
 * One earlier turn of the conversation, as a `[role, content]` pair (e.g. `["human", "…"]`,
 * `["assistant", "…"]`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const HistoryEntry = Schema.Tuple(Schema.String, Schema.String)
/**
 * One earlier turn of the conversation.
 *
 * @since 0.1.0
 * @category models
 */
export type HistoryEntry = typeof HistoryEntry.Type

/**
 * The focus modes named by the service description. Three more exist (mathematical and
 * scientific queries, video content, forum discussions) whose identifiers carry third-party
 * brands; any string is sent as it is.
 *
 * @since 0.1.0
 * @category models
 */
export type KnownFocusMode = "webSearch" | "academicSearch" | "writingAssistant"

/**
 * The search parameters.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchParams = Schema.Struct({
  /** The search text. */
  query: Schema.String,
  /** The chat model that writes the answer. */
  chatModel: ModelChoice,
  /** The embedding model that ranks the sources. */
  embeddingModel: ModelChoice,
  /** Where to search, e.g. `webSearch` (see {@link KnownFocusMode}). */
  focusMode: Schema.String,
  /** `balanced` or `speed`. */
  optimizationMode: Schema.Literal("balanced", "speed"),
  /** Earlier turns, oldest first. */
  history: Schema.optional(Schema.Array(HistoryEntry))
})
/**
 * The search parameters.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchParams = typeof SearchParams.Type

/**
 * The request. `model` may be left out: {@link defaultModel} is sent then.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchRequest = Schema.Struct({
  model: Schema.optional(Schema.String),
  params: SearchParams
})
/**
 * The request.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchRequest = typeof SearchRequest.Type

// =============================================================================
// Response (decoded tolerantly: missing or null fields are allowed)
// =============================================================================

const tolerant = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.optionalWith(schema, { nullable: true })

const tolerantArray = <A, I, R>(item: Schema.Schema<A, I, R>) =>
  Schema.optionalWith(Schema.Array(item), { nullable: true, default: () => [] })

/**
 * A source the answer is based on.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchSource = Schema.Struct({
  pageContent: tolerant(Schema.String),
  metadata: Schema.optionalWith(
    Schema.Struct({ title: tolerant(Schema.String), url: tolerant(Schema.String) }),
    { nullable: true, default: () => ({}) }
  )
})
/**
 * A source the answer is based on.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchSource = typeof SearchSource.Type

/**
 * A related video.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchVideo = Schema.Struct({
  url: tolerant(Schema.String),
  img_src: tolerant(Schema.String),
  title: tolerant(Schema.String),
  iframe_src: tolerant(Schema.String)
})
/**
 * A related video.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchVideo = typeof SearchVideo.Type

/**
 * A related image.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchImage = Schema.Struct({
  url: tolerant(Schema.String),
  img_src: tolerant(Schema.String),
  title: tolerant(Schema.String)
})
/**
 * A related image.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchImage = typeof SearchImage.Type

/**
 * The answer message, with its sources, media and follow-up suggestions.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchMessage = Schema.Struct({
  role: Schema.optionalWith(Schema.String, { nullable: true, default: () => "assistant" }),
  /** The answer: required (a message without it is a `DecodeError`, never an empty answer). */
  content: Schema.String,
  sources: tolerantArray(SearchSource),
  videos: tolerantArray(SearchVideo),
  images: tolerantArray(SearchImage),
  /** Follow-up queries. */
  suggestions: tolerantArray(Schema.String)
})
/**
 * The answer message.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchMessage = typeof SearchMessage.Type

/**
 * One choice of the response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchChoice = Schema.Struct({
  index: Schema.optionalWith(Schema.Number, { nullable: true, default: () => 0 }),
  message: SearchMessage,
  finish_reason: tolerant(Schema.String)
})
/**
 * One choice of the response.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchChoice = typeof SearchChoice.Type

/**
 * Token counts.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchUsage = Schema.Struct({
  prompt_tokens: tolerant(Schema.Number),
  completion_tokens: tolerant(Schema.Number),
  total_tokens: tolerant(Schema.Number),
  prompt_tokens_details: tolerant(Schema.Struct({
    cached_tokens: tolerant(Schema.Number),
    text_tokens: tolerant(Schema.Number),
    audio_tokens: tolerant(Schema.Number),
    image_tokens: tolerant(Schema.Number)
  })),
  completion_tokens_details: tolerant(Schema.Struct({
    text_tokens: tolerant(Schema.Number),
    audio_tokens: tolerant(Schema.Number)
  }))
})
/**
 * Token counts.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchUsage = typeof SearchUsage.Type

/**
 * The AI search response. The answer is `choices[0].message.content`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchResponse = Schema.Struct({
  id: tolerant(Schema.String),
  /** E.g. `search.completion`. */
  object: tolerant(Schema.String),
  /** Unix timestamp (seconds). */
  created: tolerant(Schema.Number),
  model: tolerant(Schema.String),
  choices: Schema.Array(SearchChoice),
  usage: tolerant(SearchUsage),
  system_fingerprint: tolerant(Schema.String)
})
/**
 * The AI search response.
 *
 * @since 0.1.0
 * @category models
 */
export type SearchResponse = typeof SearchResponse.Type

// =============================================================================
// Service
// =============================================================================

/**
 * The AI search service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Runs one search; `model` defaults to {@link defaultModel}. Needs an API key. */
  readonly search: (request: SearchRequest) => Effect.Effect<SearchResponse, RagError.ApiError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Search extends Context.Tag("effect-rag/api/Search")<Search, Service>() {}

/**
 * Builds the remote service on {@link ApiHttp}; the route follows `settings.webRouting`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.map(ApiHttp, (http) => {
  const routing = http.settings.webRouting
  const endpoint = endpointOf(routing, "search")
  return Search.of({
    search: Effect.fn("Search.search")(function*(request: SearchRequest) {
      const body = yield* http.encode(endpoint, SearchRequest, {
        model: request.model ?? defaultModel,
        params: request.params
      })
      return yield* http.json(webCall(routing, "search", { body }), SearchResponse)
    })
  })
})

/**
 * The remote layer (needs {@link ApiHttp}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Search, never, ApiHttp> = Layer.effect(Search, make)
