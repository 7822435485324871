/**
 * `POST /v1/embeddings`, `POST /v1/rerank` and `GET /v1/models`, served by whatever `Embeddings`,
 * `Rerank` and `Models` services the server was given (local engines or a remote API). A
 * service the server has none of answers 501. The embeddings request carries every field of
 * OpenAI's (`model`, `input`, `encoding_format`, `dimensions`, `user`).
 */
import { HttpRouter } from "@effect/platform"
import { Effect, Layer } from "effect"
import * as Embeddings from "../../api/Embeddings.js"
import type { ApiHttp } from "../../api/internal/ApiHttp.js"
import * as Models from "../../api/Models.js"
import * as Rerank from "../../api/Rerank.js"
import { fromError, handle, jsonBody, jsonResponse, service } from "../internal/wire.js"

const embeddings = "POST /v1/embeddings"
const rerank = "POST /v1/rerank"
const models = "GET /v1/models"

/** The routes of the model endpoints. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post(
    "/v1/embeddings",
    handle(Effect.gen(function*() {
      const svc = yield* service(Embeddings.Embeddings, embeddings, "embedding model")
      const request = yield* jsonBody(embeddings, Embeddings.EmbeddingsRequest)
      const response = yield* svc.create(request).pipe(Effect.mapError(fromError))
      return yield* jsonResponse(Embeddings.EmbeddingsResponse, response)
    }))
  ),
  HttpRouter.post(
    "/v1/rerank",
    handle(Effect.gen(function*() {
      const svc = yield* service(Rerank.Rerank, rerank, "rerank model")
      const request = yield* jsonBody(rerank, Rerank.RerankRequest)
      const response = yield* svc.rerank(request).pipe(Effect.mapError(fromError))
      return yield* jsonResponse(Rerank.RerankResponse, response)
    }))
  ),
  HttpRouter.get(
    "/v1/models",
    handle(Effect.gen(function*() {
      const svc = yield* service(Models.Models, models, "model list")
      const list = yield* svc.list.pipe(Effect.mapError(fromError))
      return yield* jsonResponse(Models.ModelList, list)
    }))
  )
)

/**
 * The model list of a gateway: the server's own models, then the upstream's (`GET /v1/models`
 * on it, at each request) that the server does not list itself. Every record has `created`
 * (OpenAI's SDK reads it): the upstream's, else `created` (when the server started). An upstream
 * that fails fails the list with its error.
 */
export const layerWithUpstream = (
  local: ReadonlyArray<Models.ModelRecord>,
  created: number
): Layer.Layer<Models.Models, never, ApiHttp> =>
  Layer.effect(
    Models.Models,
    Effect.map(Models.make, (remote) =>
      Models.Models.of({
        list: Effect.map(remote.list, (upstream) => {
          const own = new Set(local.map((m) => m.id))
          return {
            object: "list",
            data: [
              ...local,
              ...upstream.data.filter((m) => !own.has(m.id)).map((m) => ({ ...m, created: m.created ?? created }))
            ]
          }
        })
      }))
  )
