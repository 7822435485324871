/**
 * Firecrawl jobs on the wire, shared by the v1 routes (`web.ts`) and the v2 routes
 * (`webV2.ts`): the job record a status request answers, and the start of a batch scrape.
 *
 * A batch scrape is one job of the web engine (`WebCrawlScope.batchScrape`), read like a crawl
 * job. Both API versions start it the same way and differ only in their scrape options (v1:
 * format names; v2: names or `{type}` objects) and in the links they answer:
 *
 * | Route | Request | Response |
 * | --- | --- | --- |
 * | `POST /v1/batch/scrape`, `POST /v2/batch/scrape` | `{urls, ignoreInvalidURLs, ...scrape options}` | `{success, id, url, invalidURLs?}` |
 *
 * `url` is the job's status URL on this server (`/v1/batch/scrape/{id}` or
 * `/v2/batch/scrape/{id}`). A URL that is not http(s) is a 400 naming it, unless
 * `ignoreInvalidURLs` is true: then it is skipped and listed in `invalidURLs`, and a request
 * left with no URL is a 400. A URL the engine's address policy refuses (private, loopback) is
 * a failed page of the job, and the other URLs are scraped. A retry with the same idempotency
 * key gets the first job.
 *
 * ## Caps
 *
 * What one request may make the engine do is capped by the server's limits (`limits.ts`),
 * each refusal naming its `effect-rag serve` flag: a crawl's `limit` (`crawlLimit`; a crawl
 * without one gets the engine's default, or the cap when that is lower), a batch's URLs
 * (`batchUrls`), and the jobs running at once (`crawlJobs`: a start over it is a 429 with
 * `Retry-After`, and a replayed start with a known idempotency key is not counted).
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import * as Web from "../../api/Web.js"
import * as WebCrawlScope from "../../api/WebCrawlScope.js"
import * as Firecrawl from "./firecrawl.js"
import { type Limits, named, ServerLimits } from "./limits.js"
import * as State from "./state.js"
import { clipEcho, fromError, serveTerms, service, type WireError } from "./wire.js"

/** The Firecrawl API versions. */
export type Version = "v1" | "v2"

/** The status path of a batch scrape job of an API version. */
export const batchPath = (version: Version, id: string): string => `/${version}/batch/scrape/${encodeURIComponent(id)}`

/**
 * A job record as Firecrawl answers it: `success: true`, and no `next` on the last batch (the
 * SDKs follow any `next` key). The reasons of failed pages are in the server's terms
 * (`serveTerms`). The library's own record (`single` routing) keeps `next: null`.
 */
export const record = (job: Web.CrawlJob, next: string | null) =>
  Effect.flatMap(ServerLimits, (limits) =>
    Schema.encode(Web.CrawlJob)({ ...inServeTerms(job, limits.echoChars), next }).pipe(
      Effect.orDie, // our own values always encode
      Effect.map(({ next, ...rest }) => ({ success: true, ...rest, ...(next === null ? {} : { next }) }))
    ))

/**
 * A job whose reasons (the job's, its failed pages') are in the server's terms, quoting at
 * most `echoChars` characters of a URL or other input.
 */
export const inServeTerms = (job: Web.CrawlJob, echoChars: number): Web.CrawlJob => {
  const terms = (message: string) => clipEcho(serveTerms(message), echoChars)
  const data = job.data.some((page) => page.metadata.error !== undefined)
    ? job.data.map((page) =>
      page.metadata.error === undefined ? page : { ...page, metadata: { ...page.metadata, error: terms(page.metadata.error) } }
    )
    : job.data
  return { ...job, data, ...(job.error !== undefined ? { error: terms(job.error) } : {}) }
}

// =============================================================================
// Caps
// =============================================================================

/** A 400 for a request over one of the web caps, naming it and its `effect-rag serve` flag. */
const overCap = (endpoint: string, path: string, message: string, limit: keyof Limits): WireError => ({
  status: 400,
  message: `${endpoint}: invalid request at ${path}: ${message} (server limit ${named(limit)})`,
  type: "invalid_request_error",
  code: "limit_exceeded"
})

/**
 * The `limit` a crawl runs with: the request's, refused over `crawlLimit`; without one, the
 * engine's default or the cap when that is lower.
 */
export const crawlLimit = (endpoint: string, limit: number | undefined): Effect.Effect<number | undefined, WireError> =>
  Effect.flatMap(ServerLimits, (limits) => {
    if (limit === undefined) return Effect.succeed(limits.crawlLimit < WebCrawlScope.defaultLimit ? limits.crawlLimit : undefined)
    return limit > limits.crawlLimit
      ? Effect.fail(overCap(endpoint, "limit", `${limit} pages, more than ${limits.crawlLimit}`, "crawlLimit"))
      : Effect.succeed(limit)
  })

/**
 * The `limit` a map runs with: the request's, refused over `mapLimit`; without one, the engine's
 * default (5,000 links) or `mapLimit` when that is lower. Bounds the links one map answer holds.
 */
export const mapLimit = (endpoint: string, limit: number | undefined): Effect.Effect<number, WireError> =>
  Effect.flatMap(ServerLimits, (limits) => {
    if (limit === undefined) return Effect.succeed(Math.min(limits.mapLimit, WebCrawlScope.defaultMapLimit))
    return limit > limits.mapLimit
      ? Effect.fail(overCap(endpoint, "limit", `${limit} links, more than ${limits.mapLimit}`, "mapLimit"))
      : Effect.succeed(limit)
  })

/** Refuses a batch of more than `batchUrls` URLs. */
export const batchSize = (endpoint: string, urls: number): Effect.Effect<void, WireError> =>
  Effect.flatMap(ServerLimits, (limits) =>
    urls > limits.batchUrls
      ? Effect.fail(overCap(endpoint, "urls", `${urls} URLs, more than ${limits.batchUrls}`, "batchUrls"))
      : Effect.void)

/**
 * Starts a job of the web engine within `crawlJobs`: with as many jobs running, the start is a
 * 429 (`too_many_jobs`, `Retry-After: 5`). When the engine cannot count its jobs (no crawl-scope
 * capability, or a remote engine, which caps its own) the start runs as it is.
 */
export const gated = <A, R>(endpoint: string, start: Effect.Effect<A, WireError, R>): Effect.Effect<A, WireError, R> =>
  Effect.gen(function*() {
    const scope = yield* Effect.serviceOption(WebCrawlScope.WebCrawlScope)
    const count = Option.getOrUndefined(scope)?.running
    if (count === undefined) return yield* start
    const limits = yield* ServerLimits
    return yield* State.jobStart(Effect.gen(function*() {
      const running = yield* count
      if (running >= limits.crawlJobs) {
        return yield* Effect.fail<WireError>({
          status: 429,
          message: `${endpoint}: ${running} crawl and batch jobs are running, as many as this server runs at once (server limit ${named("crawlJobs")}); retry when one has finished, or cancel one`,
          type: "rate_limit_error",
          code: "too_many_jobs",
          headers: { "retry-after": "5" }
        })
      }
      return yield* start
    }))
  })

// =============================================================================
// Batch scrape start
// =============================================================================

/**
 * What a Firecrawl-only route needs (the crawl-scope capability, `WebCrawlScope`), as a 501
 * without it names it: the local web engine provides it (a remote one in `firecrawl` routing too).
 */
export const crawlScopeName = "local web engine"

/** The body of a batch scrape of an API version: the URLs and that version's scrape options. */
const batchRequest = (version: Version) =>
  Schema.Struct({
    urls: Schema.NonEmptyArray(Schema.String),
    ignoreInvalidURLs: Schema.optional(Schema.Boolean),
    ...(version === "v1" ? Web.ScrapeOptions.fields : Firecrawl.ScrapeOptions.fields)
  })

const isHttp = (u: string) => /^https?:\/\//i.test(u.trim()) && URL.canParse(u.trim())

const invalid = (endpoint: string, message: string): WireError => ({
  status: 400,
  message: `${endpoint}: ${message}`,
  type: "invalid_request_error",
  code: "invalid_request"
})

/** `POST /{version}/batch/scrape`: starts a batch scrape job on the web engine. */
export const batchScrapeStart = (version: Version) =>
  Effect.gen(function*() {
    const endpoint = `POST /${version}/batch/scrape`
    const engine = yield* service(WebCrawlScope.WebCrawlScope, endpoint, crawlScopeName)
    const { ignoreInvalidURLs, urls, ...rest } = yield* Firecrawl.decodeBody(endpoint, batchRequest(version), "batch")
    const { options } = yield* Firecrawl.engineOptions(endpoint, rest, true)
    yield* batchSize(endpoint, urls.length)
    const invalidURLs = urls.filter((u) => !isHttp(u))
    if (invalidURLs.length > 0 && ignoreInvalidURLs !== true) {
      return yield* Effect.fail(invalid(endpoint, `invalid URLs ${invalidURLs.join(", ")} (set ignoreInvalidURLs to skip them)`))
    }
    const valid = urls.filter(isHttp)
    if (valid.length === 0) return yield* Effect.fail(invalid(endpoint, "no valid URL"))
    const key = yield* Firecrawl.idempotencyKey
    const job = yield* State.idempotent(
      `batchScrape.${version}`,
      key,
      gated(endpoint, engine.batchScrape(valid, options).pipe(Effect.mapError(fromError)))
    )
    const origin = yield* Firecrawl.origin
    return HttpServerResponse.unsafeJson({
      success: true,
      id: job.id,
      url: `${origin}${batchPath(version, job.id)}`,
      ...(ignoreInvalidURLs === true ? { invalidURLs } : {})
    })
  })
