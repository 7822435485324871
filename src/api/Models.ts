/**
 * Model list (`GET /v1/models`). Both shapes of the service description are accepted and
 * normalised to one {@link ModelInfo}: `{object:"list", data[{id, object, created, owned_by}]}`
 * and `{data[{id, name, type}]}`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
import type * as RagError from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"

/**
 * A model record in either shape, decoded tolerantly.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.optional(Schema.String),
  created: Schema.optional(Schema.Number),
  owned_by: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ModelRecord = typeof ModelRecord.Type

/**
 * The response body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelList = Schema.Struct({
  object: Schema.optional(Schema.String),
  data: Schema.Array(ModelRecord)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ModelList = typeof ModelList.Type

/**
 * The model list service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly list: Effect.Effect<ModelList, RagError.ApiError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Models extends Context.Tag("effect-rag/api/Models")<Models, Service>() {}

const endpoint = "GET /v1/models"

/**
 * Builds the remote service.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.map(ApiHttp, (http) =>
  Models.of({
    list: http
      .json({ endpoint, method: "GET", host: "base", path: "/v1/models" }, ModelList)
      .pipe(Effect.withSpan("Models.list"))
  }))

/**
 * The remote layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Models, never, ApiHttp> = Layer.effect(Models, make)

/**
 * A fixed model list, for a server or a test that serves local engines (no remote call). The
 * records are answered in the OpenAI shape, `object: "list"`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerList = (data: ReadonlyArray<ModelRecord>): Layer.Layer<Models> =>
  Layer.succeed(Models, Models.of({ list: Effect.succeed({ object: "list", data }) }))
