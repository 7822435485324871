/**
 * The wiring: every choice a user makes by name or URI, resolved in one place.
 *
 * | choice | flag | setting (`EFFECT_RAG_*` or config file) | values | default |
 * |---|---|---|---|---|
 * | embedder | `--embedder` | `EFFECT_RAG_EMBEDDER` (`embedder`) | `none`, `remote`, `use-lite`, `onnx:DIR` | `none` |
 * | reranker | `--reranker` | `EFFECT_RAG_RERANKER` (`reranker`) | `none`, `remote`, `onnx:DIR` | `none` |
 * | upload engine | | `EFFECT_RAG_UPLOAD` (`upload`) | `local`, `remote` | `local` |
 * | web engine | | `EFFECT_RAG_WEB` (`web`) | `local`, `remote` | `local` |
 * | store | `--db` | `EFFECT_RAG_DB` (`db`) | a folder or `s3://…`, `gs://…`, `az://…` (LanceDB), `memory:` | `.effect-rag/db` |
 *
 * Settings are read through Effect `Config` from the current `ConfigProvider`: the environment,
 * and the config file when the command line provides it. The module behind each choice is
 * imported inside the choice (`import()`), so naming a choice costs nothing until it is built:
 * the command line imports this module when it starts, LanceDB only when a command opens a
 * store, the ONNX runtime only for `onnx:DIR`.
 *
 * Stores are a table of URI schemes ({@link storeSchemes}): a new store plugs in with one entry.
 * An embedder or reranker that was named and cannot be built is never replaced by another:
 * {@link resolveEmbedder} and {@link resolveReranker} return the reason instead. A choice whose
 * optional packages are not installed fails with `RagError.MissingPackage` (its message is the
 * `npm install` line).
 *
 * @example
 * ```ts
 * import { Effect, Layer, Option } from "effect"
 * import * as Wiring from "effect-rag/Wiring"
 *
 * const program = Effect.gen(function*() {
 *   const uri = yield* Wiring.dbUri(Option.none())          // $EFFECT_RAG_DB or .effect-rag/db
 *   const spec = yield* Wiring.embedderSpec(Option.none())  // $EFFECT_RAG_EMBEDDER or none
 *   const { embedder, reason } = yield* Wiring.resolveEmbedder(spec)
 *   return { uri, embedder: embedder?.id ?? reason }
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { availableParallelism } from "node:os"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import type * as ApiHttp from "./api/ApiHttp.js"
import type * as Embeddings from "./api/Embeddings.js"
import type * as Rerank from "./api/Rerank.js"
import type * as Upload from "./api/Upload.js"
import type * as Web from "./api/Web.js"
import type * as WebCrawlScope from "./api/WebCrawlScope.js"
import type * as LocalFiles from "./engines/documents/LocalFiles.js"
import type * as LocalWeb from "./engines/web/LocalWeb.js"
import * as Optional from "./internal/optional.js"
import * as RagError from "./RagError.js"
import { defaultDb as defaultDbFolder, displayUri as displayStoreUri, isObjectStoreUri } from "./store/StoreUri.js"
import type { StoreError, VectorStore } from "./store/VectorStore.js"

// =============================================================================
// Settings
// =============================================================================

/**
 * A setting from the current configuration (the environment, and the config file when the
 * command line provides it); none when unset, empty or unreadable.
 *
 * @since 0.1.0
 * @category settings
 */
export const setting = (name: string): Effect.Effect<Option.Option<string>> =>
  Config.option(Config.string(name)).pipe(
    Effect.orElseSucceed(() => Option.none<string>()),
    Effect.map(Option.filter((s) => s !== ""))
  )

/**
 * A flag's value, else the setting `name`, else `fallback`: the precedence of every choice.
 *
 * @since 0.1.0
 * @category settings
 */
export const choose = (flag: Option.Option<string>, name: string, fallback: string): Effect.Effect<string> =>
  Option.match(flag, {
    onSome: Effect.succeed,
    onNone: () => Effect.map(setting(name), Option.getOrElse(() => fallback))
  })

/** One of `values`, or a `ConfigurationError` naming the setting. */
const oneOf = <const A extends string>(name: string, values: ReadonlyArray<A>, fallback: A) =>
  Effect.flatMap(choose(Option.none(), name, fallback), (value) =>
    (values as ReadonlyArray<string>).includes(value)
      ? Effect.succeed(value as A)
      : Effect.fail(
        new RagError.ConfigurationError({ endpoint: "config", message: `${name} must be ${values.join(" or ")}, not ${value}` })
      ))

const loadRemote = () => Effect.promise(() => Promise.all([import("./api/ApiHttp.js"), import("./RagConfig.js")]))

/**
 * The remote API client (`ApiHttp`) configured from the current configuration (`RagConfig`),
 * loaded when the layer is built: what every `remote` choice runs on.
 *
 * @since 0.1.0
 * @category settings
 */
export const apiClient: Layer.Layer<ApiHttp.ApiHttp, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(loadRemote(), ([ApiHttp, RagConfig]) => ApiHttp.layer.pipe(Layer.provide(RagConfig.layerConfig)))
)

// =============================================================================
// Embedders and rerankers
// =============================================================================

/**
 * An embedder built from its name: the id it is reported (and stored in a collection) under,
 * and the service.
 *
 * @since 0.1.0
 * @category embedders
 */
export interface Embedder {
  readonly id: string
  readonly service: Embeddings.Service
}

/**
 * An embedder chosen by name, or the reason there is none.
 *
 * @since 0.1.0
 * @category embedders
 */
export interface ResolvedEmbedder {
  readonly embedder: Embedder | undefined
  readonly reason: string | undefined
}

/**
 * A reranker built from its name.
 *
 * @since 0.1.0
 * @category rerankers
 */
export interface Reranker {
  readonly id: string
  readonly service: Rerank.Service
}

/**
 * A reranker chosen by name, or the reason there is none.
 *
 * @since 0.1.0
 * @category rerankers
 */
export interface ResolvedReranker {
  readonly reranker: Reranker | undefined
  readonly reason: string | undefined
}

/**
 * The embedder's name: `--embedder`, then `EFFECT_RAG_EMBEDDER`, then `none`.
 *
 * @since 0.1.0
 * @category embedders
 */
export const embedderSpec = (flag: Option.Option<string>): Effect.Effect<string> => choose(flag, "EFFECT_RAG_EMBEDDER", "none")

/**
 * The reranker's name: `--reranker`, then `EFFECT_RAG_RERANKER`, then `none`.
 *
 * @since 0.1.0
 * @category rerankers
 */
export const rerankerSpec = (flag: Option.Option<string>): Effect.Effect<string> => choose(flag, "EFFECT_RAG_RERANKER", "none")

/** Download settings of the ONNX models: downloads off unless `EFFECT_RAG_ALLOW_DOWNLOADS` asks for them. */
const downloads = Effect.all({
  allowDownloads: Effect.map(setting("EFFECT_RAG_ALLOW_DOWNLOADS"), (v) => /^(1|true|yes)$/i.test(Option.getOrElse(v, () => ""))),
  cacheDir: Effect.map(setting("EFFECT_RAG_MODEL_CACHE"), Option.getOrUndefined)
})

/**
 * Builds the embedder named `spec`: `none`, `remote` (the `/v1/embeddings` endpoint of the
 * configured service; model `EFFECT_RAG_EMBEDDING_MODEL`, dimension
 * `EFFECT_RAG_EMBEDDING_DIMENSION`, which a new collection needs), `use-lite` (Universal
 * Sentence Encoder lite, offline, in worker threads) or `onnx:DIR` (a transformers.js model
 * folder; a hub id only with `EFFECT_RAG_ALLOW_DOWNLOADS=true`, cached in
 * `EFFECT_RAG_MODEL_CACHE`). Never falls back silently: an embedder that cannot be built yields
 * no embedder and the reason. Fails with `MissingPackage` when the optional packages of
 * `use-lite` or `onnx:` are not installed. The model session lives as long as the scope.
 *
 * @since 0.1.0
 * @category embedders
 */
export const resolveEmbedder = (spec: string): Effect.Effect<ResolvedEmbedder, RagError.MissingPackage, Scope.Scope> =>
  Effect.gen(function*() {
    if (spec === "none") return { embedder: undefined, reason: "no embedder configured (--embedder none)" }
    if (spec === "remote") {
      const Embeddings = yield* Effect.promise(() => import("./api/Embeddings.js"))
      const model = Option.getOrUndefined(yield* setting("EFFECT_RAG_EMBEDDING_MODEL"))
      const dimension = Number(Option.getOrElse(yield* setting("EFFECT_RAG_EMBEDDING_DIMENSION"), () => "NaN"))
      if (!Number.isInteger(dimension) || dimension <= 0) {
        return {
          embedder: undefined,
          reason: "--embedder remote needs EFFECT_RAG_EMBEDDING_DIMENSION (and EFFECT_RAG_EMBEDDING_MODEL) to create the collection"
        }
      }
      const service = yield* Embeddings.make({ model, dimension }).pipe(Effect.provide(apiClient), Effect.either)
      if (service._tag === "Left") return { embedder: undefined, reason: `remote embedder: ${String(service.left)}` }
      return { embedder: { id: `remote:${service.right.defaultModel}`, service: service.right }, reason: undefined }
    }
    if (spec === "use-lite") {
      yield* Optional.ensure("useLite")
      // one model thread per core, at most 2 (a copy of the model each)
      const concurrency = Math.max(1, Math.min(2, availableParallelism()))
      const UseLiteEmbeddings = yield* Effect.promise(() => import("./engines/models/UseLiteEmbeddings.js"))
      // in worker threads even on one core: a forward pass never holds the event loop of the server
      const service = yield* Effect.either(UseLiteEmbeddings.make({ concurrency, threads: true }))
      if (service._tag === "Left") return { embedder: undefined, reason: `use-lite: ${service.left.message}` }
      return { embedder: { id: "use-lite", service: service.right }, reason: undefined }
    }
    if (spec.startsWith("onnx:")) {
      yield* Optional.ensure("onnx")
      const OnnxEmbeddings = yield* Effect.promise(() => import("./engines/models/OnnxEmbeddings.js"))
      const service = yield* Effect.either(OnnxEmbeddings.make({ model: spec.slice("onnx:".length), ...(yield* downloads) }))
      if (service._tag === "Left") return { embedder: undefined, reason: `${spec}: ${service.left.message}` }
      return { embedder: { id: `onnx:${service.right.defaultModel}`, service: service.right }, reason: undefined }
    }
    return { embedder: undefined, reason: `unknown embedder ${JSON.stringify(spec)} (none, remote, use-lite, onnx:DIR)` }
  })

/**
 * Builds the reranker named `spec`: `none`, `remote` (`/v1/rerank`, model
 * `EFFECT_RAG_RERANK_MODEL`) or `onnx:DIR` (a cross-encoder folder). Never falls back silently.
 * Fails with `MissingPackage` when `onnx:` is named and its packages are not installed.
 *
 * @since 0.1.0
 * @category rerankers
 */
export const resolveReranker = (spec: string): Effect.Effect<ResolvedReranker, RagError.MissingPackage> =>
  Effect.gen(function*() {
    if (spec === "none") return { reranker: undefined, reason: "no reranker configured (--reranker none)" }
    if (spec === "remote") {
      const Rerank = yield* Effect.promise(() => import("./api/Rerank.js"))
      const model = Option.getOrUndefined(yield* setting("EFFECT_RAG_RERANK_MODEL"))
      const service = yield* Rerank.make({ model }).pipe(Effect.provide(apiClient), Effect.either)
      if (service._tag === "Left") return { reranker: undefined, reason: `remote reranker: ${String(service.left)}` }
      return { reranker: { id: `remote:${service.right.defaultModel}`, service: service.right }, reason: undefined }
    }
    if (spec.startsWith("onnx:")) {
      yield* Optional.ensure("onnx")
      const OnnxRerank = yield* Effect.promise(() => import("./engines/models/OnnxRerank.js"))
      const service = yield* Effect.either(OnnxRerank.make({ model: spec.slice("onnx:".length), ...(yield* downloads) }))
      if (service._tag === "Left") return { reranker: undefined, reason: `${spec}: ${service.left.message}` }
      return { reranker: { id: `onnx:${service.right.defaultModel}`, service: service.right }, reason: undefined }
    }
    return { reranker: undefined, reason: `unknown reranker ${JSON.stringify(spec)} (none, remote, onnx:DIR)` }
  })

// =============================================================================
// Upload and web engines
// =============================================================================

/**
 * Where documents are extracted: `local` (the in-process document engine) or `remote` (the
 * `/upload` endpoint of the configured service).
 *
 * @since 0.1.0
 * @category engines
 */
export type EngineChoice = "local" | "remote"

/**
 * The upload engine from `EFFECT_RAG_UPLOAD` (`local`, the default, or `remote`); another value
 * is a `ConfigurationError`.
 *
 * @since 0.1.0
 * @category engines
 */
export const uploadEngine: Effect.Effect<EngineChoice, RagError.ConfigurationError> = Effect.suspend(() =>
  oneOf("EFFECT_RAG_UPLOAD", ["local", "remote"], "local")
)

/**
 * The web engine from `EFFECT_RAG_WEB` (`local`, the default, or `remote`: the web endpoints of
 * the configured service); another value is a `ConfigurationError`.
 *
 * @since 0.1.0
 * @category engines
 */
export const webEngine: Effect.Effect<EngineChoice, RagError.ConfigurationError> = Effect.suspend(() =>
  oneOf("EFFECT_RAG_WEB", ["local", "remote"], "local")
)

/**
 * The `Upload` service of `engine`: the local document engine built with `local`, or the remote
 * endpoint (configured from the current configuration). Loaded when the layer is built.
 *
 * @since 0.1.0
 * @category engines
 */
export const uploadLayer = (engine: EngineChoice, local: LocalFiles.Options = {}): Layer.Layer<Upload.Upload, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    engine === "remote"
      ? Effect.map(Effect.promise(() => import("./api/Upload.js")), (Upload) => Upload.layer.pipe(Layer.provide(apiClient)))
      : Effect.map(Effect.promise(() => import("./engines/documents/LocalFiles.js")), (LocalFiles) => LocalFiles.layer(local))
  )

/**
 * The `Upload` service chosen by `EFFECT_RAG_UPLOAD` ({@link uploadEngine}, {@link uploadLayer}).
 *
 * @since 0.1.0
 * @category engines
 */
export const uploadFromConfig = (local: LocalFiles.Options = {}): Layer.Layer<Upload.Upload, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.map(
      // the same literal check as uploadEngine, as a ConfigError (what the library layers fail with)
      Config.literal("local", "remote")("EFFECT_RAG_UPLOAD").pipe(Config.withDefault("local" as const)),
      (engine) => uploadLayer(engine, local)
    )
  )

/**
 * The `Web` service of `engine`: the local web engine (over the `Upload` service it is given,
 * for the documents it finds while crawling) with `local`'s options, or the remote web
 * endpoints. Loaded when the layer is built.
 *
 * @since 0.1.0
 * @category engines
 */
export const webLayer = (
  engine: EngineChoice,
  local: LocalWeb.Options = {}
): Layer.Layer<Web.Web, ConfigError.ConfigError, Upload.Upload> =>
  engine === "remote"
    ? Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./api/Web.js")), (Web) => Web.layer.pipe(Layer.provide(apiClient))))
    : localWebLayer(local)

/**
 * The local web engine with its own Tag (`LocalWeb`) and its crawl-scope capability
 * (`WebCrawlScope`, what the server's Firecrawl routes need) beside `Web`. Loaded when the layer is built.
 *
 * @since 0.1.0
 * @category engines
 */
export const localWebLayer = (
  options: LocalWeb.Options = {}
): Layer.Layer<Web.Web | LocalWeb.LocalWeb | WebCrawlScope.WebCrawlScope, never, Upload.Upload> =>
  Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./engines/web/LocalWeb.js")), (LocalWeb) => LocalWeb.layer(options)))

/**
 * The local web engine of the current context, when the web engine is the local one (what a
 * caller needs for the engine's own crawl options beyond the `Web` port: sitemap modes, link
 * hops), with the engine's default link hops.
 *
 * @since 0.1.0
 * @category engines
 */
export const localWebEngine: Effect.Effect<{
  readonly engine: Option.Option<LocalWeb.Service>
  readonly defaultMaxDepth: number
}> = Effect.flatMap(Effect.promise(() => import("./engines/web/LocalWeb.js")), (LocalWeb) =>
  Effect.map(Effect.serviceOption(LocalWeb.LocalWeb), (engine) => ({ engine, defaultMaxDepth: LocalWeb.defaultMaxDepth })))

// =============================================================================
// Stores by URI
// =============================================================================

/**
 * Options a store may use (each adapter takes what applies to it).
 *
 * @since 0.1.0
 * @category stores
 */
export interface StoreOptions {
  /** LanceDB: rows up to which a collection's full-text index is held in memory (0: LanceDB's index only). */
  readonly memoryIndexRows?: number | undefined
}

/**
 * Where a store's data lives, which tells the command line what it can check up front:
 * `folder` (a local folder: created by commands that write, required by commands that read),
 * `remote` (checked when opened), `process` (this process's memory: gone when it ends, never
 * seen by another process).
 *
 * @since 0.1.0
 * @category stores
 */
export type StoreLocation = "folder" | "remote" | "process"

/**
 * A store adapter in the scheme table: what it is, where its data lives, and its layer (the
 * adapter's module imported when the layer is built).
 *
 * @since 0.1.0
 * @category stores
 */
export interface StoreAdapter {
  readonly description: string
  readonly location: StoreLocation
  readonly layer: (
    uri: string,
    options: StoreOptions
  ) => Layer.Layer<VectorStore, StoreError | ConfigError.ConfigError | RagError.MissingPackage>
}

const postgres: StoreAdapter = {
  description: "PostgreSQL with pgvector (needs the optional package pg)",
  location: "remote",
  layer: (uri) =>
    Layer.unwrapEffect(
      Effect.map(Effect.promise(() => import("./store/PostgresStore.js")), (PostgresStore) => PostgresStore.layerFromUrl(uri))
    )
}

const lanceDb = (location: StoreLocation): StoreAdapter => ({
  description: location === "folder" ? "LanceDB in a local folder" : "LanceDB on an object store",
  location,
  layer: (uri, options) =>
    Layer.unwrapEffect(
      Effect.map(Effect.promise(() => import("./store/LanceDbStore.js")), (LanceDbStore) => LanceDbStore.layerAt(uri, options))
    )
})

/**
 * The stores by URI scheme. A URI with no scheme (or `file://`) is a folder: LanceDB there. A
 * `scheme://` URI whose scheme has no entry is passed to LanceDB as an object-store URI (LanceDB
 * reads `s3://`, `s3+ddb://`, `gs://`, `az://` and more). `postgres://` and `postgresql://` are
 * PostgreSQL with pgvector (`PostgresStore`). A new store plugs in with one entry: a description,
 * where its data lives, and a layer that imports the adapter's module when it is built.
 *
 * @since 0.1.0
 * @category stores
 */
export const storeSchemes: Readonly<Record<string, StoreAdapter>> = {
  file: lanceDb("folder"),
  memory: {
    description: "the in-memory store of this process",
    location: "process",
    layer: () => Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./store/MemoryStore.js")), (MemoryStore) => MemoryStore.layer))
  },
  s3: lanceDb("remote"),
  "s3+ddb": lanceDb("remote"),
  gs: lanceDb("remote"),
  az: lanceDb("remote"),
  postgres,
  postgresql: postgres
}

/** A URI's scheme, lower-cased, when it has one: `memory:`, or `scheme://` (a one-letter scheme is a Windows drive). */
const schemeOf = (uri: string): string | undefined => {
  const m = /^([a-z][a-z0-9+.-]*):/i.exec(uri)
  if (m === null || m[1]!.length === 1) return undefined
  const scheme = m[1]!.toLowerCase()
  return uri.slice(m[0].length).startsWith("//") || scheme in storeSchemes ? scheme : undefined
}

/**
 * The adapter of a store URI ({@link storeSchemes}).
 *
 * @since 0.1.0
 * @category stores
 */
export const storeAdapter = (uri: string): StoreAdapter => {
  const scheme = schemeOf(uri)
  if (scheme === undefined) return storeSchemes["file"]!
  return storeSchemes[scheme] ?? lanceDb(isObjectStoreUri(uri) ? "remote" : "folder")
}

/**
 * The default database (`.effect-rag/db` in the working directory).
 *
 * @since 0.1.0
 * @category stores
 */
export const defaultDb = defaultDbFolder

/**
 * The store URI: `--db`, then `EFFECT_RAG_DB`, then {@link defaultDb}. A folder (or `file://`
 * URL) becomes an absolute path; any other URI is kept as it is.
 *
 * @since 0.1.0
 * @category stores
 */
export const dbUri = (flag: Option.Option<string>): Effect.Effect<string> =>
  Effect.map(choose(flag, "EFFECT_RAG_DB", defaultDb), (db) => {
    if (storeAdapter(db).location !== "folder") return db
    return /^file:\/\//i.test(db) ? fileURLToPath(db) : resolve(db)
  })

/**
 * A store URI as it may be printed (a password in it replaced by `***`).
 *
 * @since 0.1.0
 * @category stores
 */
export const displayUri = displayStoreUri

/**
 * The store at `uri` ({@link storeAdapter}), loaded when the layer is built.
 *
 * @since 0.1.0
 * @category stores
 */
export const storeLayer = (
  uri: string,
  options: StoreOptions = {}
): Layer.Layer<VectorStore, StoreError | ConfigError.ConfigError | RagError.MissingPackage> =>
  storeAdapter(uri).layer(uri, options)

// =============================================================================
// The pipeline's layers
// =============================================================================

/**
 * What an ingest runs on: the upload engine, the web engine over it (for URLs and sites), and
 * the store at `db`. The same for `effect-rag ingest` and the queue workers.
 *
 * @since 0.1.0
 * @category pipeline
 */
export const ingestLayer = (options: {
  readonly db: string
  readonly upload: EngineChoice
  readonly web?: EngineChoice | undefined
  /** Documents the local document engine extracts at once. */
  readonly concurrency: number
  /** Let the local web engine fetch private and loopback addresses. */
  readonly allowPrivate: boolean
  /** The local document engine's per-file time-out in ms (its default when absent). */
  readonly extractTimeoutMs?: number | undefined
}): Layer.Layer<Upload.Upload | Web.Web | VectorStore, StoreError | ConfigError.ConfigError | RagError.MissingPackage> => {
  // one document engine, shared by the ingest and by the web engine (documents found while crawling)
  // a number as a Duration input is milliseconds
  const timeout = options.extractTimeoutMs === undefined ? {} : { timeout: options.extractTimeoutMs }
  const upload = uploadLayer(options.upload, { concurrency: options.concurrency, ...timeout })
  const web = webLayer(options.web ?? "local", { allowPrivate: options.allowPrivate }).pipe(Layer.provide(upload))
  return Layer.mergeAll(upload, web, storeLayer(options.db))
}
