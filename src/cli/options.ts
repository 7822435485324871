/**
 * What the pipeline commands (`ingest`, `query`, `ask`, `collections`) share: the `--db`,
 * `--collection`, `--json` and `--config` flags, the configuration file, and the layers built
 * from the configuration.
 *
 * Configuration precedence: flags, then `EFFECT_RAG_*` environment variables, then the config
 * file (`--config FILE`, or `effect-rag.config.json` in the working directory when present),
 * then defaults. The config file holds the same settings as the environment, in camelCase:
 *
 * ```json
 * { "baseUrl": "https://api.example.com", "chatModel": "gpt-4o-mini", "embedder": "none",
 *   "upload": "local", "db": ".effect-rag/db" }
 * ```
 *
 * A key in the config file (`apiKey`, `awsSecretAccessKey`) is accepted but the environment is the
 * better place; it is read as `Redacted` like the environment variable and never printed.
 *
 * `--db` / `EFFECT_RAG_DB` / `db` is a folder or an object-store URI (`s3://bucket/prefix`,
 * `gs://…`, `az://…`); the object store's settings come from the environment or the config file
 * (`s3Endpoint`, `s3Region`, `s3AllowHttp`, `awsAccessKeyId`, `awsSecretAccessKey`,
 * `storageOptions`: see `LanceDbStore.storageConfig` and `docs/scale-out.md`).
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import { Config, ConfigProvider, Effect, Option } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import * as RagError from "../RagError.js"
import { isObjectStoreUri } from "../store/LanceDbStore.js"

/**
 * `--db DIR|URI`: the LanceDB folder or object-store URI (default `$EFFECT_RAG_DB` or
 * `.effect-rag/db` in the working directory).
 */
export const db = Options.text("db").pipe(
  Options.withDescription("the LanceDB database: a folder or s3://bucket/prefix, gs://…, az://… (default: $EFFECT_RAG_DB or ./.effect-rag/db)"),
  Options.optional
)

/** `--collection NAME` (default `$EFFECT_RAG_COLLECTION` or `default`). */
export const collection = Options.text("collection").pipe(
  Options.withDescription("the collection name (default: $EFFECT_RAG_COLLECTION or 'default')"),
  Options.optional
)

/** `--json`: machine-readable output. */
export const json = Options.boolean("json").pipe(Options.withDescription("print JSON for scripts"))

/** `--config FILE`: a JSON configuration file. */
export const config = Options.file("config", { exists: "yes" }).pipe(
  Options.withDescription("a JSON config file (default: ./effect-rag.config.json when present)"),
  Options.optional
)

/** Config-file keys and the environment variables they stand for. */
export const fileKeys: Readonly<Record<string, string>> = {
  apiKey: "EFFECT_RAG_API_KEY",
  baseUrl: "EFFECT_RAG_BASE_URL",
  uploadUrl: "EFFECT_RAG_UPLOAD_URL",
  crawlUrl: "EFFECT_RAG_CRAWL_URL",
  timeout: "EFFECT_RAG_TIMEOUT",
  maxRetries: "EFFECT_RAG_MAX_RETRIES",
  webRoutes: "EFFECT_RAG_WEB_ROUTES",
  chatModel: "EFFECT_RAG_CHAT_MODEL",
  embeddingModel: "EFFECT_RAG_EMBEDDING_MODEL",
  embeddingDimension: "EFFECT_RAG_EMBEDDING_DIMENSION",
  rerankModel: "EFFECT_RAG_RERANK_MODEL",
  embedder: "EFFECT_RAG_EMBEDDER",
  reranker: "EFFECT_RAG_RERANKER",
  upload: "EFFECT_RAG_UPLOAD",
  db: "EFFECT_RAG_DB",
  collection: "EFFECT_RAG_COLLECTION",
  s3Endpoint: "EFFECT_RAG_S3_ENDPOINT",
  s3Region: "EFFECT_RAG_S3_REGION",
  s3AllowHttp: "EFFECT_RAG_S3_ALLOW_HTTP",
  awsAccessKeyId: "AWS_ACCESS_KEY_ID",
  awsSecretAccessKey: "AWS_SECRET_ACCESS_KEY",
  awsSessionToken: "AWS_SESSION_TOKEN",
  storageOptions: "EFFECT_RAG_STORAGE_OPTIONS"
}

/**
 * Reads a config file into environment-variable names. Unknown keys fail (a typo should not be
 * silently ignored), as does a file that is not a JSON object.
 */
export const readConfigFile = (path: string): Effect.Effect<Map<string, string>, RagError.ConfigurationError> =>
  Effect.try({
    try: () => {
      const parsed: unknown = JSON.parse(readFileSync(path, "utf8"))
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object")
      const out = new Map<string, string>()
      for (const [key, value] of Object.entries(parsed)) {
        const env = fileKeys[key]
        if (env === undefined) throw new Error(`unknown key ${JSON.stringify(key)} (known: ${Object.keys(fileKeys).join(", ")})`)
        // an object (storageOptions) is passed on as JSON
        if (value !== null && value !== undefined) out.set(env, typeof value === "object" ? JSON.stringify(value) : String(value))
      }
      return out
    },
    catch: (cause) =>
      new RagError.ConfigurationError({
        endpoint: "config",
        message: `cannot use config file ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

/**
 * The configuration provider for a command: the environment, falling back to the config file
 * (the given one, or `./effect-rag.config.json` when present).
 */
export const configProvider = (
  file: Option.Option<string>
): Effect.Effect<ConfigProvider.ConfigProvider, RagError.ConfigurationError> =>
  Effect.gen(function*() {
    const env = ConfigProvider.fromEnv()
    const path = Option.getOrElse(file, () => resolve("effect-rag.config.json"))
    if (Option.isNone(file) && !existsSync(path)) return env
    const values = yield* readConfigFile(path)
    return env.pipe(ConfigProvider.orElse(() => ConfigProvider.fromMap(values)))
  })

/** Provides the config provider of `--config` to an effect (and to the layers it builds). */
export const withConfigFile = (file: Option.Option<string>) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | RagError.ConfigurationError, R> =>
  Effect.flatMap(configProvider(file), (provider) => Effect.withConfigProvider(self, provider))

/** A setting from the environment or the config file (after {@link withConfigFile}). */
export const setting = (name: string): Effect.Effect<Option.Option<string>> =>
  Config.option(Config.string(name)).pipe(
    Effect.orElseSucceed(() => Option.none<string>()),
    Effect.map(Option.filter((s) => s !== ""))
  )

/**
 * Resolves `--db` (flag, then `EFFECT_RAG_DB`, then `./.effect-rag/db`): a folder to an absolute
 * path, an object-store URI as it is.
 */
export const resolveDb = (flag: Option.Option<string>): Effect.Effect<string> =>
  Effect.map(
    Option.match(flag, {
      onSome: Effect.succeed,
      onNone: () => Effect.map(setting("EFFECT_RAG_DB"), Option.getOrElse(() => ".effect-rag/db"))
    }),
    (db) => (isObjectStoreUri(db) ? db : resolve(db))
  )

/** Resolves `--collection` (flag, then `EFFECT_RAG_COLLECTION`, then `default`). */
export const resolveCollection = (flag: Option.Option<string>): Effect.Effect<string> =>
  Option.match(flag, {
    onSome: Effect.succeed,
    onNone: () => Effect.map(setting("EFFECT_RAG_COLLECTION"), Option.getOrElse(() => "default"))
  })

/** Exit codes of the pipeline commands. */
export const ExitCode = {
  success: 0,
  failure: 1,
  usage: 2,
  /** Some items failed, the rest succeeded (e.g. an ingest with failed documents). */
  partial: 3
} as const

/** Sets the process exit code (never lowers a failure to a success). */
export const setExitCode = (code: number): Effect.Effect<void> =>
  Effect.sync(() => {
    const current = typeof process.exitCode === "number" ? process.exitCode : 0
    if (code !== 0 && (current === 0 || code === ExitCode.failure)) process.exitCode = code
  })
