/**
 * Ready-made layers. Every service Tag has a remote layer (the HTTP API) and, where a local
 * engine exists, a local one; these presets wire them together. Choices by name or URI (the
 * embedder, reranker, upload and web engines, the store) are made in `Wiring`.
 *
 * @since 0.1.0
 */
import { Config, Effect, Layer, Option } from "effect"
import type { ConfigError } from "effect/ConfigError"
import * as Chat from "./api/Chat.js"
import * as Embeddings from "./api/Embeddings.js"
import * as Images from "./api/Images.js"
import * as ApiHttp from "./api/ApiHttp.js"
import * as Models from "./api/Models.js"
import * as Music from "./api/Music.js"
import * as Rerank from "./api/Rerank.js"
import * as Search from "./api/Search.js"
import * as Upload from "./api/Upload.js"
import * as Video from "./api/Video.js"
import * as Web from "./api/Web.js"
import type * as LocalFiles from "./engines/documents/LocalFiles.js"
import * as RagConfig from "./RagConfig.js"
import * as Wiring from "./Wiring.js"

/**
 * Every remote service.
 *
 * @since 0.1.0
 * @category models
 */
export type RemoteServices =
  | Chat.Chat
  | Embeddings.Embeddings
  | Rerank.Rerank
  | Images.Images
  | Models.Models
  | Video.Video
  | Music.Music
  | Upload.Upload
  | Web.Web
  | Search.Search

/**
 * Models used by the remote layers when a call names none.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteModels {
  readonly chatModel?: string | undefined
  readonly embeddingModel?: string | undefined
  readonly embeddingDimension?: number | undefined
  readonly rerankModel?: string | undefined
}

/**
 * All remote services over one `ApiHttp` client, which needs a `RagConfig`.
 *
 * @since 0.1.0
 * @category utils
 */
export const remoteServices = (models: RemoteModels = {}): Layer.Layer<RemoteServices, never, ApiHttp.ApiHttp> =>
  Layer.mergeAll(
    Chat.layer({ model: models.chatModel }),
    Embeddings.layer({ model: models.embeddingModel, dimension: models.embeddingDimension }),
    Rerank.layer({ model: models.rerankModel }),
    Images.layer,
    Models.layer,
    Video.layer(),
    Music.layer(),
    Upload.layer,
    Web.layer,
    Search.layer
  )

/**
 * All remote services, configured in code.
 *
 * @since 0.1.0
 * @category utils
 */
export const remote = (options: RagConfig.Options = {}, models: RemoteModels = {}): Layer.Layer<RemoteServices> =>
  remoteServices(models).pipe(Layer.provide(ApiHttp.layer), Layer.provide(RagConfig.layer(options)))

/**
 * The default models of the remote layers, from `EFFECT_RAG_*_MODEL` (and the config file).
 *
 * @since 0.1.0
 * @category utils
 */
export const remoteModelsConfig: Config.Config<RemoteModels> = Config.all({
  chatModel: Config.option(Config.string("EFFECT_RAG_CHAT_MODEL")),
  embeddingModel: Config.option(Config.string("EFFECT_RAG_EMBEDDING_MODEL")),
  embeddingDimension: Config.option(Config.integer("EFFECT_RAG_EMBEDDING_DIMENSION")),
  rerankModel: Config.option(Config.string("EFFECT_RAG_RERANK_MODEL"))
}).pipe(
  Config.map((c) => ({
    chatModel: Option.getOrUndefined(c.chatModel),
    embeddingModel: Option.getOrUndefined(c.embeddingModel),
    embeddingDimension: Option.getOrUndefined(c.embeddingDimension),
    rerankModel: Option.getOrUndefined(c.rerankModel)
  }))
)

/**
 * All remote services, configured from the current `ConfigProvider` (`EFFECT_RAG_*`
 * environment variables by default): settings and default models alike.
 *
 * @since 0.1.0
 * @category layers
 */
export const Remote: Layer.Layer<RemoteServices, ConfigError> = Layer.unwrapEffect(
  Effect.map(remoteModelsConfig, (models) => remoteServices(models))
).pipe(Layer.provide(ApiHttp.layer), Layer.provide(RagConfig.layerConfig))

/**
 * The `Upload` service chosen by `EFFECT_RAG_UPLOAD`: `local` (default, the in-process document
 * engine, built with `local`) or `remote` (the `/upload` endpoint of the configured service).
 *
 * @since 0.1.0
 * @category utils
 */
export const uploadFromConfigWith = (local: LocalFiles.Options = {}): Layer.Layer<Upload.Upload, ConfigError> =>
  Wiring.uploadFromConfig(local)

/**
 * {@link uploadFromConfigWith} with the local engine's defaults.
 *
 * @since 0.1.0
 * @category utils
 */
export const uploadFromConfig: Layer.Layer<Upload.Upload, ConfigError> = uploadFromConfigWith()
