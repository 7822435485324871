/**
 * Client configuration: hosts, credentials, time-outs and retries.
 *
 * Read from the environment with {@link layerConfig} (the default) or built in code with
 * {@link layer}. The API key is held as a `Redacted` value: it prints as `<redacted>` in
 * `toString`, `JSON.stringify` and logs. A missing key is not an error here; it fails with
 * a `ConfigurationError` only when a call that needs it is made.
 *
 * Environment variables:
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | `EFFECT_RAG_API_KEY` | none | bearer key |
 * | `EFFECT_RAG_BASE_URL` | `http://127.0.0.1:8787` | main API host |
 * | `EFFECT_RAG_UPLOAD_URL` | base URL | file-processing host |
 * | `EFFECT_RAG_CRAWL_URL` | base URL | web crawling host |
 * | `EFFECT_RAG_TIMEOUT` | `60 seconds` | per-request time-out |
 * | `EFFECT_RAG_UPLOAD_TIMEOUT` | `10 minutes` | upload time-out |
 * | `EFFECT_RAG_STREAM_TIMEOUT` | `10 minutes` | whole-stream time-out (chat streaming) |
 * | `EFFECT_RAG_MAX_RETRIES` | `2` | retries after the first attempt |
 * | `EFFECT_RAG_RETRY_BASE_DELAY` | `500 millis` | first backoff delay (doubles, jittered) |
 * | `EFFECT_RAG_WEB_ROUTES` | `firecrawl` | `firecrawl` (one path per web operation) or `single` (`POST /v1/web` for all) |
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

/**
 * How web operations are routed: see `api/WebRoutes.ts`.
 *
 * @since 0.1.0
 * @category models
 */
export type WebRouting = "firecrawl" | "single"

/**
 * The resolved settings every remote service reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly baseUrl: string
  readonly uploadUrl: string
  readonly crawlUrl: string
  readonly timeout: Duration.Duration
  readonly uploadTimeout: Duration.Duration
  readonly streamTimeout: Duration.Duration
  readonly maxRetries: number
  readonly retryBaseDelay: Duration.Duration
  /** Upper bound of one wait between retries, `Retry-After` included. */
  readonly maxRetryDelay: Duration.Duration
  readonly webRouting: WebRouting
}

/**
 * The configuration service.
 *
 * @since 0.1.0
 * @category context
 */
export class RagConfig extends Context.Tag("effect-rag/RagConfig")<RagConfig, Settings>() {}

/**
 * Options accepted by {@link make}; everything but `baseUrl` has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly apiKey?: Redacted.Redacted<string> | string | undefined
  readonly baseUrl?: string | undefined
  readonly uploadUrl?: string | undefined
  readonly crawlUrl?: string | undefined
  readonly timeout?: Duration.DurationInput | undefined
  readonly uploadTimeout?: Duration.DurationInput | undefined
  readonly streamTimeout?: Duration.DurationInput | undefined
  readonly maxRetries?: number | undefined
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  readonly maxRetryDelay?: Duration.DurationInput | undefined
  readonly webRouting?: WebRouting | undefined
}

/**
 * The default base URL: the self-hosted server on loopback.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "http://127.0.0.1:8787"

const trimSlash = (url: string): string => url.replace(/\/+$/, "")

/**
 * Builds {@link Settings} from options, filling defaults.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Settings => {
  const baseUrl = trimSlash(options.baseUrl ?? defaultBaseUrl)
  const apiKey =
    options.apiKey === undefined || options.apiKey === ""
      ? Option.none()
      : Option.some(typeof options.apiKey === "string" ? Redacted.make(options.apiKey) : options.apiKey)
  return {
    apiKey,
    baseUrl,
    uploadUrl: trimSlash(options.uploadUrl ?? baseUrl),
    crawlUrl: trimSlash(options.crawlUrl ?? baseUrl),
    timeout: Duration.decode(options.timeout ?? "60 seconds"),
    uploadTimeout: Duration.decode(options.uploadTimeout ?? "10 minutes"),
    streamTimeout: Duration.decode(options.streamTimeout ?? "10 minutes"),
    maxRetries: Math.max(0, Math.floor(options.maxRetries ?? 2)),
    retryBaseDelay: Duration.decode(options.retryBaseDelay ?? "500 millis"),
    maxRetryDelay: Duration.decode(options.maxRetryDelay ?? "60 seconds"),
    webRouting: options.webRouting ?? "firecrawl"
  }
}

/**
 * A layer from options given in code.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<RagConfig> => Layer.succeed(RagConfig, make(options))

/**
 * The settings as an Effect `Config`, read from `EFFECT_RAG_*` variables by default.
 *
 * @since 0.1.0
 * @category utils
 */
export const settingsConfig: Config.Config<Settings> = Config.all({
  apiKey: Config.option(Config.redacted("EFFECT_RAG_API_KEY")),
  baseUrl: Config.option(Config.string("EFFECT_RAG_BASE_URL")),
  uploadUrl: Config.option(Config.string("EFFECT_RAG_UPLOAD_URL")),
  crawlUrl: Config.option(Config.string("EFFECT_RAG_CRAWL_URL")),
  timeout: Config.option(Config.duration("EFFECT_RAG_TIMEOUT")),
  uploadTimeout: Config.option(Config.duration("EFFECT_RAG_UPLOAD_TIMEOUT")),
  streamTimeout: Config.option(Config.duration("EFFECT_RAG_STREAM_TIMEOUT")),
  maxRetries: Config.option(Config.integer("EFFECT_RAG_MAX_RETRIES")),
  retryBaseDelay: Config.option(Config.duration("EFFECT_RAG_RETRY_BASE_DELAY")),
  maxRetryDelay: Config.option(Config.duration("EFFECT_RAG_MAX_RETRY_DELAY")),
  webRouting: Config.option(Config.literal("firecrawl", "single")("EFFECT_RAG_WEB_ROUTES"))
}).pipe(
  Config.map((c) =>
    make({
      apiKey: Option.getOrUndefined(c.apiKey),
      baseUrl: Option.getOrUndefined(c.baseUrl),
      uploadUrl: Option.getOrUndefined(c.uploadUrl),
      crawlUrl: Option.getOrUndefined(c.crawlUrl),
      timeout: Option.getOrUndefined(c.timeout),
      uploadTimeout: Option.getOrUndefined(c.uploadTimeout),
      streamTimeout: Option.getOrUndefined(c.streamTimeout),
      maxRetries: Option.getOrUndefined(c.maxRetries),
      retryBaseDelay: Option.getOrUndefined(c.retryBaseDelay),
      maxRetryDelay: Option.getOrUndefined(c.maxRetryDelay),
      webRouting: Option.getOrUndefined(c.webRouting)
    })
  )
)

/**
 * A layer reading {@link settingsConfig} from the current `ConfigProvider` (the environment
 * by default). Fails with a `ConfigError` only for malformed values, never for a missing key.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<RagConfig, import("effect/ConfigError").ConfigError> = Layer.effect(
  RagConfig,
  Effect.gen(function*() {
    return yield* settingsConfig
  })
)
