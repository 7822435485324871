/**
 * `POST /v1/embeddings`, `POST /v1/rerank` and `GET /v1/models`, served by whatever `Embeddings`,
 * `Rerank` and `Models` services the server was given (local engines or a remote API). A
 * service the server has none of answers 501. The embeddings request carries every field of
 * OpenAI's (`model`, `input`, `encoding_format`, `dimensions`, `user`).
 *
 * One call is bounded (`limits.ts`): at most `embeddingInputs` inputs or `rerankDocuments`
 * documents, each at most `inputChars` characters (more is a 400 naming the limit and the
 * `effect-rag serve` flag that sets it), and it is
 * answered 504 when the model has not finished within `modelTimeoutMs`.
 */
import { HttpRouter } from "@effect/platform"
import { Duration, Effect, Layer } from "effect"
import * as Embeddings from "../../api/Embeddings.js"
import type { ApiHttp } from "../../api/ApiHttp.js"
import * as Models from "../../api/Models.js"
import * as Rerank from "../../api/Rerank.js"
import { type Limits, named, ServerLimits } from "../internal/limits.js"
import { fromError, handle, jsonBody, jsonResponse, service, type WireError } from "../internal/wire.js"

const embeddings = "POST /v1/embeddings"
const rerank = "POST /v1/rerank"
const models = "GET /v1/models"

/** A 400 for a call over one of the per-call limits, naming it and its `effect-rag serve` flag. */
const overLimit = (endpoint: string, path: string, message: string, limit: keyof Limits): WireError => ({
  status: 400,
  message: `${endpoint}: invalid request at ${path}: ${message} (server limit ${named(limit)})`,
  type: "invalid_request_error",
  code: "limit_exceeded"
})

/** The first input over `inputChars`, as a 400, or undefined. */
const longInput = (endpoint: string, path: string, texts: ReadonlyArray<string>, limits: Limits) => {
  const i = texts.findIndex((t) => t.length > limits.inputChars)
  return i < 0
    ? undefined
    : overLimit(endpoint, texts.length === 1 && path === "query" ? path : `${path}[${i}]`, `${texts[i]!.length} characters, more than ${limits.inputChars}`, "inputChars")
}

/** The 504 of a model call that took longer than `modelTimeoutMs`. */
const tooSlow = (endpoint: string, ms: number): WireError => ({
  status: 504,
  message: `${endpoint}: the model did not answer within ${ms / 1000} s`,
  type: "server_error",
  code: "timeout"
})

/** Checks an embeddings request against the per-call limits. */
const checkEmbeddings = (request: Embeddings.EmbeddingsRequest, limits: Limits): WireError | undefined => {
  const inputs = typeof request.input === "string" ? [request.input] : request.input
  if (inputs.length > limits.embeddingInputs) {
    return overLimit(embeddings, "input", `${inputs.length} inputs, more than ${limits.embeddingInputs}`, "embeddingInputs")
  }
  return longInput(embeddings, "input", inputs, limits)
}

/** Checks a rerank request against the per-call limits. */
const checkRerank = (request: Rerank.RerankRequest, limits: Limits): WireError | undefined => {
  if (request.documents.length > limits.rerankDocuments) {
    return overLimit(rerank, "documents", `${request.documents.length} documents, more than ${limits.rerankDocuments}`, "rerankDocuments")
  }
  return longInput(rerank, "query", [request.query], limits) ?? longInput(rerank, "documents", request.documents, limits)
}

/** Runs a model call within the time-out; its typed errors keep their family. */
const bounded = <A>(endpoint: string, call: Effect.Effect<A, Parameters<typeof fromError>[0]>, limits: Limits) =>
  call.pipe(
    Effect.mapError(fromError),
    Effect.timeoutFail({ duration: Duration.millis(limits.modelTimeoutMs), onTimeout: () => tooSlow(endpoint, limits.modelTimeoutMs) })
  )

/** The routes of the model endpoints. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post(
    "/v1/embeddings",
    handle(Effect.gen(function*() {
      const svc = yield* service(Embeddings.Embeddings, embeddings, "embedding model")
      const limits = yield* ServerLimits
      const request = yield* jsonBody(embeddings, Embeddings.EmbeddingsRequest, "model")
      const refused = checkEmbeddings(request, limits)
      if (refused !== undefined) return yield* Effect.fail(refused)
      const response = yield* bounded(embeddings, svc.create(request), limits)
      return yield* jsonResponse(Embeddings.EmbeddingsResponse, response)
    }))
  ),
  HttpRouter.post(
    "/v1/rerank",
    handle(Effect.gen(function*() {
      const svc = yield* service(Rerank.Rerank, rerank, "rerank model")
      const limits = yield* ServerLimits
      const request = yield* jsonBody(rerank, Rerank.RerankRequest, "model")
      const refused = checkRerank(request, limits)
      if (refused !== undefined) return yield* Effect.fail(refused)
      const response = yield* bounded(rerank, svc.rerank(request), limits)
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
