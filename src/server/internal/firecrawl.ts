/**
 * The wire of the Firecrawl routes (`/v1/crawl`, `/v1/batch/scrape`, `/v1/map`, `/v1/scrape`,
 * `/v2/...`) where it differs from the rest of the server: error bodies are `{"success":
 * false, "error": "<text>", "code": ...}` (both Firecrawl SDK generations read `error` as a
 * string; the library's client accepts this body too, see `wire-conventions.md`), the
 * idempotency key comes in `Idempotency-Key` or `x-idempotency-key` (the SDK's header), job
 * links carry the origin the client used, and scrape options are read, checked and handed to
 * the local engine the same way by every route.
 */
import { HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import * as Web from "../../api/Web.js"
import { badRequest, clipped, jsonBody, tcpUrl, type WireError } from "./wire.js"

/**
 * Whether a path is a Firecrawl path, served or not (its errors, 404 and 405 included, use
 * {@link errorResponse}): anything under `/v2/`, and under `/v1/` the paths of Firecrawl's v1
 * API (`crawl`, `batch`, `map`, `scrape`, and the ones this server does not serve: `search`,
 * `extract`, `llmstxt`, `deep-research`, `concurrency-check`, `team`). The other `/v1/` paths
 * are the library's own API, with the wire error body.
 */
export const isFirecrawlPath = (path: string): boolean =>
  /^\/v1\/(?:crawl|batch|map|scrape|search|extract|llmstxt|deep-research|concurrency-check|team)(?:\/|$)/.test(path) ||
  /^\/v2(?:\/|$)/.test(path)

/** A Firecrawl error body: `error` is the text, `code` the machine-readable reason when any. */
export const errorBody = (e: WireError) => ({
  success: false as const,
  error: e.message,
  ...(e.code !== null ? { code: e.code } : {})
})

/** The response of a wire error on a Firecrawl route (status and headers unchanged). */
export const errorResponse = (e: WireError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(errorBody(e), { status: e.status, headers: e.headers ?? {} })

/**
 * Runs a Firecrawl handler, answering its failures in the Firecrawl error body (quoting no
 * more of the client's input than the `echoChars` limit allows).
 */
export const handle = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, WireError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.catchAll(effect, (e) => Effect.map(clipped(e), errorResponse))

/** The request's idempotency key: `Idempotency-Key`, else the Firecrawl SDK's `x-idempotency-key`. */
export const idempotencyKey: Effect.Effect<string | undefined, never, HttpServerRequest.HttpServerRequest> = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => request.headers["idempotency-key"] ?? request.headers["x-idempotency-key"]
)

/** A host (name, IPv4 or bracketed IPv6) with an optional port: a `Host` header fit for a link. */
const hostPattern = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/**
 * The origin the client reached this server at: the `Host` header (and `X-Forwarded-Proto`),
 * else the bound TCP address; `""` (links relative to the client's host) when neither is usable.
 */
export const origin: Effect.Effect<string, never, HttpServerRequest.HttpServerRequest> = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const forwarded = (request.headers["x-forwarded-proto"] ?? "").split(",")[0]!.trim().toLowerCase()
  const scheme = forwarded === "https" ? "https" : "http"
  const host = request.headers["host"]
  if (host !== undefined && hostPattern.test(host)) return `${scheme}://${host}`
  const server = yield* Effect.serviceOption(HttpServer.HttpServer)
  if (Option.isNone(server) || server.value.address._tag !== "TcpAddress") return ""
  const { hostname, port } = server.value.address
  if (hostname === "0.0.0.0" || hostname === "::") return "" // not an address a client can use
  return tcpUrl(hostname, port)
})

// =============================================================================
// Options the local engine cannot honour
// =============================================================================

const present = (v: unknown): boolean => v !== undefined && v !== null
const isTrue = (v: unknown): boolean => v === true
const nonEmpty = (v: unknown): boolean => Array.isArray(v) ? v.length > 0 : present(v)

/** Scrape options (top level of a scrape, `scrapeOptions` of a crawl) and why each is refused. */
const scrapeRefusals: ReadonlyArray<readonly [string, (v: unknown) => boolean, string]> = [
  ["actions", nonEmpty, "browser actions need a headless browser"],
  ["location", present, "no geolocated proxies"],
  ["proxy", (v) => present(v) && v !== "basic" && v !== "auto", "no stealth or enhanced proxies"],
  ["jsonOptions", present, "no LLM extraction"],
  ["extract", present, "no LLM extraction"],
  ["changeTrackingOptions", present, "no change tracking"],
  ["skipTlsVerification", isTrue, "TLS is always verified"],
  ["redactPII", (v) => present(v) && v !== false, "no PII redaction"],
  ["profile", present, "no browser profiles"],
  ["lockdown", isTrue, "no lockdown mode"],
  ["useMock", present, "no mocks"],
  ["parsePDF", (v) => v === false, "PDFs are always parsed"],
  [
    "parsers",
    (v) => Array.isArray(v) && v.some((p) => (typeof p === "string" ? p : (p as { type?: unknown })?.type) !== "pdf"),
    "only the pdf parser"
  ]
]

/** Crawl and batch options and why each is refused. */
const jobRefusals: ReadonlyArray<readonly [string, (v: unknown) => boolean, string]> = [
  ["prompt", present, "no LLM to turn a prompt into crawl options"],
  ["webhook", present, "no webhooks: poll the job"],
  ["delay", present, "the engine's politeness delay and robots.txt Crawl-delay apply"],
  ["maxConcurrency", present, "the engine's concurrency applies"],
  ["deduplicateSimilarURLs", isTrue, "URLs are deduplicated by their normal form only"],
  ["regexOnFullURL", isTrue, "path patterns match the path and query"],
  ["ignoreRobotsTxt", isTrue, "robots.txt is the server's policy"],
  ["robotsUserAgent", present, "robots.txt is read for the server's user agent"],
  ["appendToId", present, "no appending to a batch"]
]

/**
 * The first option of a request body the local engine cannot honour, as a 400 naming it:
 * `scrape` looks at the body's top level (a scrape, a batch scrape), `job` at the crawl or
 * batch fields and at `scrapeOptions`. Options that change nothing here (`origin`,
 * `integration`, `zeroDataRetention`, cache ages, `blockAds`, `fastMode`, `timeout`) pass.
 */
export const refused = (endpoint: string, body: unknown, kind: "scrape" | "job" | "batch"): WireError | undefined => {
  if (typeof body !== "object" || body === null) return undefined
  const record = body as Record<string, unknown>
  const check = (
    fields: Record<string, unknown>,
    rules: ReadonlyArray<readonly [string, (v: unknown) => boolean, string]>,
    prefix: string
  ): WireError | undefined => {
    for (const [name, applies, why] of rules) {
      if (Object.hasOwn(fields, name) && applies(fields[name])) {
        return {
          status: 400,
          message: `${endpoint}: ${prefix}${name} is not supported by this server's web engine (${why})`,
          type: "invalid_request_error",
          code: "unsupported_option"
        }
      }
    }
    return undefined
  }
  if (kind === "scrape") return check(record, scrapeRefusals, "")
  if (kind === "batch") return check(record, jobRefusals, "") ?? check(record, scrapeRefusals, "")
  const options = record["scrapeOptions"]
  return check(record, jobRefusals, "") ??
    (typeof options === "object" && options !== null
      ? check(options as Record<string, unknown>, scrapeRefusals, "scrapeOptions.")
      : undefined)
}

/**
 * Reads a request body: the options the engine cannot honour first (a 400 naming one, see
 * {@link refused}), then the schema (a 400 naming the field).
 */
export const decodeBody = <A, I>(endpoint: string, schema: Schema.Schema<A, I>, kind: "scrape" | "job" | "batch") =>
  Effect.gen(function*() {
    const json = yield* jsonBody(endpoint, Schema.Unknown)
    const refusal = refused(endpoint, json, kind)
    if (refusal !== undefined) return yield* Effect.fail(refusal)
    return yield* Schema.decodeUnknown(schema)(json).pipe(Effect.mapError((e) => badRequest(endpoint, e)))
  })

// =============================================================================
// Scrape options and documents
// =============================================================================

/** A v2 format: its name, or an object with a `type` (and options of its own). */
export const Format = Schema.Union(Schema.String, Schema.Struct({ type: Schema.String }))

/**
 * The scrape options the engine reads, with v2's formats (names or `{type}` objects); v1's
 * are `Web.ScrapeOptions` (names only). The other options pass or are refused.
 */
export const ScrapeOptions = Schema.Struct({
  ...Web.ScrapeOptions.fields,
  formats: Schema.optional(Schema.Array(Format))
})
export type ScrapeOptions = typeof ScrapeOptions.Type

/**
 * The engine's scrape options of Firecrawl options: format names (`{type}` objects by their
 * type). `rawHtml` comes back in the engine's `html` field, so it cannot be asked with `html`,
 * nor in a job (`job`: a crawl or batch, whose pages are read later, when the request is no
 * longer known).
 */
export const engineOptions = (
  endpoint: string,
  o: ScrapeOptions | undefined,
  job: boolean
): Effect.Effect<{ readonly options: Web.ScrapeOptions; readonly rawHtml: boolean }, WireError> => {
  const formats = o?.formats?.map((f) => (typeof f === "string" ? f : f.type))
  const rawHtml = formats?.includes("rawHtml") ?? false
  if (rawHtml && (job || formats!.includes("html"))) {
    return Effect.fail({
      status: 400,
      message: job
        ? `${endpoint}: formats: rawHtml is only served by /v2/scrape here (use html in crawls and batches)`
        : `${endpoint}: formats: rawHtml and html together are not supported by this server's web engine`,
      type: "invalid_request_error",
      code: "invalid_request"
    })
  }
  const { formats: _, ...rest } = o ?? {}
  return Effect.succeed({ options: { ...rest, ...(formats !== undefined ? { formats } : {}) }, rawHtml })
}
