/**
 * `effect-rag serve [--host H] [--port P] [--embedder none|use-lite|onnx:DIR|remote]
 * [--reranker none|onnx:DIR|remote] [--allow-private] [--gateway] [--db DIR|URI] [--keys FILE] [--playground] [--config FILE] [limit flags]`:
 * the self-hosted server of the API (src/server/). The limit flags (`--max-json-bytes`, …) set
 * the server's limits; `docs/server.md` lists them with their defaults.
 *
 * It serves the local document engine (or the remote one with `EFFECT_RAG_UPLOAD=remote`), the
 * local web engine, the chosen embedder and reranker, and a model list of what it serves. With
 * `EFFECT_RAG_SERVER_KEY` set, every request needs `Authorization: Bearer <that key>`; without
 * it (and without a keys file) the server is open, so it binds to 127.0.0.1 unless `--host` says otherwise. An embedder or
 * reranker that was asked for and cannot load stops the start with its reason; endpoints with
 * nothing behind them answer 501.
 *
 * With `--gateway`, the server also proxies the endpoints it has no local engine for (chat
 * completions, image, video and music generation, AI search) to the deployment of
 * `EFFECT_RAG_BASE_URL`, with `EFFECT_RAG_API_KEY` (the remote `Chat`, `Images`, `Video`,
 * `Music` and `Search` layers). Without it they answer 501.
 *
 * With `--db DIR|URI` it also serves that database's collections (`GET /v1/collections`,
 * `GET /v1/collections/{name}`, `GET /v1/collections/{name}/documents`, `POST /v1/collections/{name}/query`, and
 * `POST /v1/collections/{name}/ask` with `--gateway`), retrieving with `--embedder` (when it made
 * a collection's vectors) and `--reranker`. `--keys FILE` (or `EFFECT_RAG_SERVER_KEYS`) maps API
 * keys to principals and to the collections each may read or write (`docs/server.md`); with it
 * every request needs a key, and a key reads only its collections, as its principal.
 * `--playground` (with `--db`) adds the playground page at `/` (`docs/playground.md`).
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Models from "../../api/Models.js"
import type * as ServerModule from "../../server/Server.js"
import * as RagError from "../../RagError.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

/** What `serve` runs, loaded when it runs (the command definition stays light for start-up). */
const modules = Shared.load(() =>
  Promise.all([
    import("../../api/Chat.js"),
    import("../../api/Embeddings.js"),
    import("../../api/Images.js"),
    import("../../api/ApiHttp.js"),
    import("../../api/Models.js"),
    import("../../api/Music.js"),
    import("../../api/Rerank.js"),
    import("../../api/Search.js"),
    import("../../api/Video.js"),
    import("../../Layers.js"),
    import("../../RagConfig.js"),
    import("../../server/Server.js"),
    import("../../server/routes/models.js"),
    import("node:fs/promises")
  ])
)

const host = Options.text("host").pipe(Options.withDefault("127.0.0.1"), Options.withDescription("address to bind"))
const port = Options.integer("port").pipe(Options.withDefault(8080), Options.withDescription("port (0: any free port)"))
const embedder = Options.text("embedder").pipe(
  Options.optional,
  Options.withDescription("embedder behind POST /v1/embeddings: none, use-lite, onnx:DIR, remote (default: $EFFECT_RAG_EMBEDDER or none)")
)
const reranker = Options.text("reranker").pipe(
  Options.optional,
  Options.withDescription("reranker behind POST /v1/rerank: none, onnx:DIR, remote (default: $EFFECT_RAG_RERANKER or none)")
)

const allowPrivate = Options.boolean("allow-private").pipe(
  Options.withDescription("let the web engine fetch private, loopback and link-local addresses (off: a client cannot make the server reach its own network)")
)

/** An optional positive integer flag (unset: the server's default, `docs/server.md`). */
const limit = (name: string, description: string) =>
  Options.integer(name).pipe(Options.optional, Options.withDescription(description))

/** The limit flags' names and descriptions, by the `Server.Limits` field or engine option they set. */
const limitSpecs = {
  jsonBodyBytes: ["max-json-bytes", "largest body of a JSON route in bytes (default 1 MiB)"],
  modelBodyBytes: ["max-model-body-bytes", "largest body of /v1/embeddings, /v1/rerank, /v1/chat/completions in bytes (default 8 MiB)"],
  bodyIdleMs: ["body-idle-ms", "a request body idle this long (ms) is answered 408 (default 30000)"],
  jsonDepth: ["max-json-depth", "deepest nesting of a JSON body (default 64)"],
  embeddingInputs: ["max-embedding-inputs", "inputs of one /v1/embeddings call (default 256)"],
  rerankDocuments: ["max-rerank-documents", "documents of one /v1/rerank call (default 256)"],
  inputChars: ["max-input-chars", "characters of one embeddings input, rerank query or document (default 32768)"],
  modelTimeoutMs: ["model-timeout-ms", "time one embeddings or rerank call may take (ms) before a 504 (default 60000)"],
  uploadBytesInFlight: ["upload-memory-bytes", "upload bytes held in memory at once, across uploads (default 256 MiB); more: 503"],
  crawlLimit: ["max-crawl-limit", "largest limit (pages) of one crawl (default 10000); more: 400"],
  batchUrls: ["max-batch-urls", "URLs of one batch scrape (default 1000); more: 400"],
  mapLimit: ["max-map-limit", "largest limit (links) of one map (default 30000); more: 400"],
  crawlJobs: ["max-crawl-jobs", "crawl and batch scrape jobs running at once (default 4); more: 429"],
  echoChars: ["max-echo-chars", "characters of a URL or other input an error message quotes (default 1024)"],
  crawlPageBytes: ["crawl-page-bytes", "bytes of pages (JSON) in one crawl status response, more behind next; a larger page is a failed page (default 10 MiB)"],
  maxConcurrentUploads: ["max-concurrent-uploads", "uploads extracted at once (default 4)"],
  extractTimeoutMs: ["extract-timeout-ms", "time one file's extraction (and chunking) may take (ms; default 120000)"],
  extractMemoryMb: ["extract-memory-mb", "heap limit of an extraction process in MiB (default 2048)"],
  extractRecycleMb: ["extract-recycle-mb", "an extraction process past this RSS in MiB is replaced after its answer (default 1024)"]
} as const

/** The limit flags, by the `Server.Limits` field or engine option they set. */
const limitFlags = Object.fromEntries(
  Object.entries(limitSpecs).map(([key, [name, description]]) => [key, limit(name, description)])
) as { readonly [K in keyof typeof limitSpecs]: ReturnType<typeof limit> }

const gateway = Options.boolean("gateway").pipe(
  Options.withDescription("also proxy chat completions, image, video and music generation and AI search to EFFECT_RAG_BASE_URL (with EFFECT_RAG_API_KEY); off: they answer 501")
)

/** The endpoints `--gateway` proxies. */
const proxied = [
  "POST /v1/chat/completions",
  "POST /v1/images/generations",
  "POST /v1/video_generation, GET /v1/query/video_generation, GET /v1/files/retrieve",
  "POST /svc/submit/music, GET /svc/music/status/{id}",
  "AI search (POST /v1/web)"
]

/** A URL fit for a log line: no user name or password in it. */
const printable = (url: string): string => {
  try {
    const u = new URL(url)
    u.username = ""
    u.password = ""
    return u.toString().replace(/\/$/, "")
  } catch {
    return "<invalid EFFECT_RAG_BASE_URL>"
  }
}

/** Whether the upstream is this very server (a gateway to itself would loop). */
const isSelf = (baseUrl: string, host: string, port: number): boolean => {
  try {
    const u = new URL(baseUrl)
    const upstreamPort = u.port === "" ? (u.protocol === "https:" ? 443 : 80) : Number(u.port)
    const loopback = ["127.0.0.1", "localhost", "[::1]", "0.0.0.0", "[::]"]
    return upstreamPort === port && (u.hostname === host || (loopback.includes(u.hostname) && loopback.includes(host)))
  } catch {
    return false
  }
}

const db = Options.text("db").pipe(
  Options.withPseudoName("DIR|URI"),
  Options.optional,
  Options.withDescription("serve the collections of this LanceDB database (query; ask with --gateway); default: no collection routes")
)

const keys = Options.text("keys").pipe(
  Options.withPseudoName("FILE"),
  Options.optional,
  Options.withDescription("a JSON keys file mapping API keys to principals and collections (default: $EFFECT_RAG_SERVER_KEYS); every request then needs a key")
)

const playground = Options.boolean("playground").pipe(
  Options.withDescription("serve the playground page at / (with --db): search the collections side by side, ask, open eval runs (docs/playground.md)")
)

const refuse = (message: string) => new RagError.ConfigurationError({ endpoint: "serve", message })

/** The `serve` command. */
export const command = Command.make("serve", { host, port, embedder, reranker, allowPrivate, gateway, db, keys, playground, config: Shared.config, ...limitFlags }, (o) =>
  Effect.gen(function*() {
    const [Chat, Embeddings, Images, ApiHttp, Models, Music, Rerank, Search, Video, Layers, RagConfig, Server, ModelRoutes, fs] = yield* modules
    const given = (value: Option.Option<number>) => Option.getOrUndefined(value)
    const limits: Partial<ServerModule.Limits> = {
      jsonBodyBytes: given(o.jsonBodyBytes),
      modelBodyBytes: given(o.modelBodyBytes),
      bodyIdleMs: given(o.bodyIdleMs),
      jsonDepth: given(o.jsonDepth),
      embeddingInputs: given(o.embeddingInputs),
      rerankDocuments: given(o.rerankDocuments),
      inputChars: given(o.inputChars),
      modelTimeoutMs: given(o.modelTimeoutMs),
      uploadBytesInFlight: given(o.uploadBytesInFlight),
      crawlLimit: given(o.crawlLimit),
      batchUrls: given(o.batchUrls),
      mapLimit: given(o.mapLimit),
      crawlJobs: given(o.crawlJobs),
      echoChars: given(o.echoChars)
    }
    const badLimit = Object.entries({ ...limits, maxConcurrentUploads: given(o.maxConcurrentUploads), extractTimeoutMs: given(o.extractTimeoutMs), extractMemoryMb: given(o.extractMemoryMb), extractRecycleMb: given(o.extractRecycleMb), crawlPageBytes: given(o.crawlPageBytes) })
      .find(([, v]) => v !== undefined && v <= 0)
    if (badLimit !== undefined) {
      const [key, value] = badLimit as [keyof typeof limitSpecs, number]
      return yield* refuse(`--${limitSpecs[key][0]} must be a positive number, not ${value}`)
    }
    const extractTimeout = given(o.extractTimeoutMs)
    const documentEngine = Wiring.uploadFromConfig({
      ...(extractTimeout === undefined ? {} : { timeout: Duration.millis(extractTimeout) }),
      memoryMb: given(o.extractMemoryMb),
      recycleMb: given(o.extractRecycleMb)
    })
    const apiKey = yield* Config.option(Config.redacted("EFFECT_RAG_SERVER_KEY"))
    const keysPath = Option.isSome(o.keys) ? o.keys : yield* Wiring.setting("EFFECT_RAG_SERVER_KEYS")
    const keyGrants = Option.isNone(keysPath) ? [] : yield* Effect.tryPromise({
      try: () => fs.readFile(keysPath.value, "utf8"),
      catch: (e) => refuse(`--keys ${keysPath.value}: cannot read it (${(e as NodeJS.ErrnoException).code ?? "error"})`)
    }).pipe(
      Effect.flatMap((text) => Effect.mapError(Server.parseKeys(text), (m) => refuse(`--keys ${keysPath.value}: ${m}`)))
    )
    const dbUri = Option.isSome(o.db) ? Option.some(yield* Wiring.dbUri(o.db)) : Option.none<string>()
    if (o.playground && Option.isNone(o.db)) return yield* refuse("--playground needs --db DIR|URI: the page shows that database's collections")
    if (Option.isSome(keysPath) && keyGrants.length === 0) return yield* refuse(`--keys ${keysPath.value}: the file lists no key`)
    const embedderSpec = yield* Wiring.embedderSpec(o.embedder)
    const e = yield* Shared.asUsage("serve")(Wiring.resolveEmbedder(embedderSpec))
    if (embedderSpec !== "none" && e.embedder === undefined) return yield* refuse(e.reason ?? embedderSpec)
    const rerankerSpec = yield* Wiring.rerankerSpec(o.reranker)
    const r = yield* Shared.asUsage("serve")(Wiring.resolveReranker(rerankerSpec))
    if (rerankerSpec !== "none" && r.reranker === undefined) return yield* refuse(r.reason ?? rerankerSpec)
    // `created` (OpenAI's model field): when this server started serving the model
    const created = Math.floor(Date.now() / 1000)
    const models: Array<Models.ModelRecord> = [
      ...(e.embedder ? [{ id: e.embedder.service.defaultModel, object: "model", created, owned_by: "effect-rag", type: "embedding" }] : []),
      ...(r.reranker ? [{ id: r.reranker.service.defaultModel, object: "model", created, owned_by: "effect-rag", type: "rerank" }] : [])
    ]
    // the upstream of --gateway: the remote layers on the configured deployment (read once, so
    // the start-up line names the URL they use)
    const upstream = o.gateway ? Option.some(yield* RagConfig.settingsConfig) : Option.none()
    if (Option.isSome(upstream) && isSelf(upstream.value.baseUrl, o.host, o.port)) {
      return yield* refuse(`--gateway: EFFECT_RAG_BASE_URL (${printable(upstream.value.baseUrl)}) is this server itself`)
    }
    const gatewayServices = Option.match(upstream, {
      onNone: () => Layer.empty,
      onSome: (settings) =>
        Layer.unwrapEffect(
          Effect.map(Layers.remoteModelsConfig, (m) =>
            Layer.mergeAll(
              Chat.layer({ model: m.chatModel }),
              Images.layer,
              Video.layer(),
              Music.layer(),
              Search.layer,
              ModelRoutes.layerWithUpstream(models, created)
            ))
        ).pipe(
          // the upstream's client stays in the server's context: chat and images pass through it
          Layer.provideMerge(ApiHttp.layer),
          Layer.provide(Layer.succeed(RagConfig.RagConfig, settings))
        )
    })
    const services = Layer.mergeAll(
      gatewayServices,
      // one document engine, shared by /upload and by the web engine (PDFs found while crawling)
      Wiring.localWebLayer({ allowPrivate: o.allowPrivate, pageBytes: given(o.crawlPageBytes) }).pipe(Layer.provideMerge(documentEngine)),
      Option.isSome(upstream) ? Layer.empty : Models.layerList(models),
      e.embedder ? Layer.succeed(Embeddings.Embeddings, e.embedder.service) : Layer.empty,
      r.reranker ? Layer.succeed(Rerank.Rerank, r.reranker.service) : Layer.empty,
      Option.isSome(dbUri) ? Wiring.storeLayer(dbUri.value) : Layer.empty
    )
    const served = [
      "POST /upload",
      "POST /v1/files",
      "POST /v1/crawl, GET|DELETE /v1/crawl/{id}, POST /v1/batch/scrape, GET|DELETE /v1/batch/scrape/{id}, POST /v1/map, POST /v1/scrape, POST /v1/web",
      "POST /v2/scrape, POST /v2/crawl, GET|DELETE /v2/crawl/{id}, POST /v2/map, POST /v2/batch/scrape, GET|DELETE /v2/batch/scrape/{id}",
      "GET /v1/models",
      ...(e.embedder ? [`POST /v1/embeddings (${e.embedder.id})`] : []),
      ...(r.reranker ? [`POST /v1/rerank (${r.reranker.id})`] : []),
      ...(Option.isSome(o.db)
        ? [`GET /v1/collections, GET /v1/collections/{name}, GET /v1/collections/{name}/documents, POST /v1/collections/{name}/query${Option.isSome(upstream) ? ", POST /v1/collections/{name}/ask" : ""} (database ${Wiring.displayUri(dbUri.pipe(Option.getOrElse(() => "")))})`]
        : []),
      ...(o.playground ? ["the playground page at GET / (its page, style and script without a key)"] : [])
    ]
    const gatewayLine = Option.match(upstream, {
      onNone: () => "; chat, image, video and music generation answer 501 (no --gateway)",
      onSome: (settings) => `; proxying to ${printable(settings.baseUrl)}: ${proxied.join("; ")}`
    })
    yield* Console.error(
      `effect-rag serve: ${
        keyGrants.length > 0
          ? `key required (${keyGrants.length} key(s) from ${keysPath.pipe(Option.getOrElse(() => ""))}${Option.isSome(apiKey) ? " and EFFECT_RAG_SERVER_KEY" : ""})`
          : Option.isSome(apiKey) ? "key required (EFFECT_RAG_SERVER_KEY)" : "open (no EFFECT_RAG_SERVER_KEY)"
      }; serving ${served.join("; ")}${gatewayLine}`
    )
    // The server serves what is in its context. The CLI's context also holds the remote
    // services (for the other commands), so the server starts from an empty one: it serves
    // exactly the services above, never a remote API by accident (the --gateway ones are
    // among them only when asked for).
    return yield* Layer.launch(
      Server.layer({
        host: o.host,
        port: o.port,
        apiKey: Option.getOrUndefined(apiKey),
        keys: keyGrants,
        collections: { embedder: e.embedder, reranker: r.reranker?.service },
        playground: o.playground,
        logRequests: true,
        limits,
        maxConcurrentUploads: given(o.maxConcurrentUploads)
      }).pipe(
        Layer.provide(services)
      )
    ).pipe(Effect.mapInputContext((_: Context.Context<never>) => Context.empty()))
  }).pipe(Shared.withConfigFile(o.config))).pipe(Command.withDescription("Serve the API from the local engines (src/server/): upload, web, embeddings, rerank, models; with --gateway also proxy the generative endpoints to EFFECT_RAG_BASE_URL."))
