/**
 * Web operations: crawl a site (start, status, pages, wait, cancel), map a site's links and
 * scrape one page. Firecrawl v1 resources.
 *
 * The paths are not in this file: every call is built by the route table of
 * `WebRoutes.ts`, which follows `RagConfig.Settings.webRouting` (`firecrawl` paths, or
 * everything through `POST /v1/web`). The schemas and the {@link Service} interface are shared
 * with the local crawler engine, which implements the same Tag.
 *
 * Web calls send the API key when one is configured and work without one.
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as RagError from "../RagError.js"
import { DecodeError, TaskFailed } from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"
import { endpointOf, webCall } from "./WebRoutes.js"

// =============================================================================
// Schemas
// =============================================================================

/** An optional response field that also accepts `null` (decoded as missing). */
const tolerant = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.optionalWith(schema, { nullable: true })

/** A response array that may be missing or `null` (decoded as empty). */
const tolerantArray = <A, I, R>(item: Schema.Schema<A, I, R>) =>
  Schema.optionalWith(Schema.Array(item), { nullable: true, default: () => [] })

/**
 * How each page is scraped (crawl `scrapeOptions`, and the fields of a scrape request).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ScrapeOptions = Schema.Struct({
  /** Output formats, e.g. `["markdown", "html", "links"]`. */
  formats: Schema.optional(Schema.Array(Schema.String)),
  /** Keep only the main content (no navigation, headers, footers). */
  onlyMainContent: Schema.optional(Schema.Boolean),
  /** Strip inline base64 images from the output. */
  removeBase64Images: Schema.optional(Schema.Boolean),
  /** Emulate a mobile device. */
  mobile: Schema.optional(Schema.Boolean),
  /** Milliseconds to wait for the page before scraping. */
  waitFor: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  /** Extra HTTP headers sent to the site. */
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  /** Only these tags, classes or ids. */
  includeTags: Schema.optional(Schema.Array(Schema.String)),
  /** Never these tags, classes or ids. */
  excludeTags: Schema.optional(Schema.Array(Schema.String))
})
/**
 * How each page is scraped.
 *
 * @since 0.1.0
 * @category models
 */
export type ScrapeOptions = typeof ScrapeOptions.Type

/**
 * The body of a crawl start request. Only `url` is required.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CrawlRequest = Schema.Struct({
  /** The URL the crawl starts from. */
  url: Schema.String,
  /** How many links deep to follow. */
  maxDepth: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  /** Path patterns to include. */
  includePaths: Schema.optional(Schema.Array(Schema.String)),
  /** Path patterns to exclude. */
  excludePaths: Schema.optional(Schema.Array(Schema.String)),
  /** Maximum number of pages. */
  limit: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** How each page is scraped. */
  scrapeOptions: Schema.optional(ScrapeOptions)
})
/**
 * The body of a crawl start request.
 *
 * @since 0.1.0
 * @category models
 */
export type CrawlRequest = typeof CrawlRequest.Type

/**
 * The response to a crawl start: the job id to poll.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CrawlStarted = Schema.Struct({
  success: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => true }),
  id: Schema.String,
  url: tolerant(Schema.String)
})
/**
 * The response to a crawl start.
 *
 * @since 0.1.0
 * @category models
 */
export type CrawlStarted = typeof CrawlStarted.Type

/**
 * The metadata of a scraped page.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PageMetadata = Schema.Struct({
  title: tolerant(Schema.String),
  description: tolerant(Schema.String),
  language: tolerant(Schema.String),
  sourceURL: tolerant(Schema.String),
  statusCode: tolerant(Schema.Int),
  /** The URL of the final response when redirects were followed (Firecrawl v1 `url`). */
  url: tolerant(Schema.String),
  /** Why the page failed (a crawl records failed pages without failing the job). */
  error: tolerant(Schema.String)
})
/**
 * The metadata of a scraped page.
 *
 * @since 0.1.0
 * @category models
 */
export type PageMetadata = typeof PageMetadata.Type

/**
 * One scraped page: the formats that were asked for, and its metadata.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CrawlPage = Schema.Struct({
  markdown: tolerant(Schema.String),
  html: tolerant(Schema.String),
  links: tolerant(Schema.Array(Schema.String)),
  metadata: Schema.optionalWith(PageMetadata, { nullable: true, default: () => ({}) })
})
/**
 * One scraped page.
 *
 * @since 0.1.0
 * @category models
 */
export type CrawlPage = typeof CrawlPage.Type

/**
 * The states of a crawl job: `scraping` (in progress), `completed`, `failed`; `cancelled` is
 * what a cancelled job reports.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CrawlStatus = Schema.Literal("scraping", "completed", "failed", "cancelled")
/**
 * The states of a crawl job.
 *
 * @since 0.1.0
 * @category models
 */
export type CrawlStatus = typeof CrawlStatus.Type

/**
 * The crawl job record (one batch of it). While `next` is not `null`, more pages are in the
 * next batch: {@link Service.crawlPages} follows it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CrawlJob = Schema.Struct({
  status: CrawlStatus,
  /** Pages attempted. */
  total: Schema.optionalWith(Schema.Number, { nullable: true, default: () => 0 }),
  /** Pages crawled successfully. */
  completed: Schema.optionalWith(Schema.Number, { nullable: true, default: () => 0 }),
  /** Credits consumed. */
  creditsUsed: tolerant(Schema.Number),
  /** ISO 8601 time when the crawl data expires. */
  expiresAt: tolerant(Schema.String),
  /** Where the next batch of `data` is; `null` or absent on the last batch. */
  next: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  /** The pages of this batch. */
  data: tolerantArray(CrawlPage),
  /** The reason of a failed job, when the server gives one. */
  error: tolerant(Schema.String)
})
/**
 * The crawl job record (one batch of it).
 *
 * @since 0.1.0
 * @category models
 */
export type CrawlJob = typeof CrawlJob.Type

/**
 * The response to a crawl cancel (`{status: "cancelled"}`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CancelResponse = Schema.Struct({
  status: Schema.String,
  success: tolerant(Schema.Boolean)
})
/**
 * The response to a crawl cancel.
 *
 * @since 0.1.0
 * @category models
 */
export type CancelResponse = typeof CancelResponse.Type

/**
 * The body of a map request. Only `url` is required.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MapRequest = Schema.Struct({
  /** The site to map. */
  url: Schema.String,
  /** Keep only links matching this query. */
  search: Schema.optional(Schema.String),
  /** Do not read the sitemap. */
  ignoreSitemap: Schema.optional(Schema.Boolean),
  /** Include links on subdomains. */
  includeSubdomains: Schema.optional(Schema.Boolean),
  /** Maximum number of links. */
  limit: Schema.optional(Schema.Int.pipe(Schema.positive()))
})
/**
 * The body of a map request.
 *
 * @since 0.1.0
 * @category models
 */
export type MapRequest = typeof MapRequest.Type

/**
 * The response to a map request: the site's links. `links` is required (an empty array is a
 * site without links; a missing one is a `DecodeError`, never an empty site).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MapResponse = Schema.Struct({
  success: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => true }),
  links: Schema.Array(Schema.String)
})
/**
 * The response to a map request.
 *
 * @since 0.1.0
 * @category models
 */
export type MapResponse = typeof MapResponse.Type

/**
 * The body of a scrape request: a URL and the {@link ScrapeOptions} fields.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ScrapeRequest = Schema.Struct({
  /** The page to scrape. */
  url: Schema.String,
  ...ScrapeOptions.fields
})
/**
 * The body of a scrape request.
 *
 * @since 0.1.0
 * @category models
 */
export type ScrapeRequest = typeof ScrapeRequest.Type

/**
 * The response to a scrape request: one page.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ScrapeResponse = Schema.Struct({
  success: Schema.optionalWith(Schema.Boolean, { nullable: true, default: () => true }),
  data: CrawlPage
})
/**
 * The response to a scrape request.
 *
 * @since 0.1.0
 * @category models
 */
export type ScrapeResponse = typeof ScrapeResponse.Type

// =============================================================================
// Service
// =============================================================================

/**
 * Options of {@link Service.waitForCrawl}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Time between two status queries (default 2 seconds). */
  readonly interval?: Duration.DurationInput | undefined
}

/**
 * Options of {@link Service.crawlPages}.
 *
 * @since 0.1.0
 * @category models
 */
export interface PagesOptions extends WaitOptions {
  /**
   * The job's `completed` record when the caller has it (what {@link Service.waitForCrawl}
   * returned): its pages are the first batch, and paging goes on from its `next` without asking
   * for the first batch again.
   */
  readonly job?: CrawlJob | undefined
}

/**
 * The web service. The remote layer and the local crawler engine implement it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Starts a crawl job (one idempotent request: retries never start a second job). */
  readonly crawl: (request: CrawlRequest) => Effect.Effect<CrawlStarted, RagError.ApiError>
  /**
   * The job record as it stands: its status and the first batch of pages. Given a `next` value
   * of an earlier record instead of an id (the local engine's cursor; for the remote layer in
   * `firecrawl` routing, the server's `next` link), the batch it points to.
   */
  readonly crawlStatus: (id: string) => Effect.Effect<CrawlJob, RagError.ApiError>
  /**
   * Every page of the finished job, in order, following `next` from batch to batch until a
   * batch has none (`null` or absent). A job still `scraping` is waited for first (as
   * {@link Service.waitForCrawl} does, `interval` apart), so the stream never ends early with
   * the pages of an unfinished job; a `failed` or `cancelled` job fails with `TaskFailed`.
   * Pass the record `waitForCrawl` returned as `job` to start from it without a second status
   * query. A `next` that repeats fails with a `DecodeError` instead of looping.
   */
  readonly crawlPages: (
    id: string,
    options?: PagesOptions
  ) => Stream.Stream<CrawlPage, RagError.ApiError | TaskFailed>
  /**
   * Polls the job until it leaves `scraping`; returns the `completed` record. A `failed` or
   * `cancelled` job fails with `TaskFailed`. No overall time limit: add `Effect.timeout`.
   */
  readonly waitForCrawl: (
    id: string,
    options?: WaitOptions
  ) => Effect.Effect<CrawlJob, RagError.ApiError | TaskFailed>
  /** Cancels a crawl job. */
  readonly cancel: (id: string) => Effect.Effect<CancelResponse, RagError.ApiError>
  /** Lists the links of a site. */
  readonly map: (request: MapRequest) => Effect.Effect<MapResponse, RagError.ApiError>
  /** Scrapes one page. */
  readonly scrape: (request: ScrapeRequest) => Effect.Effect<ScrapeResponse, RagError.ApiError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Web extends Context.Tag("effect-rag/api/Web")<Web, Service>() {}

/**
 * The default time between two status queries of {@link Service.waitForCrawl}.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPollInterval: Duration.Duration = Duration.seconds(2)

/**
 * The polling loop of {@link Service.waitForCrawl}, over any status query (shared with the local
 * engine): queries, waits `interval` while the job is `scraping`, and maps `failed` and
 * `cancelled` to `TaskFailed`.
 *
 * @since 0.1.0
 * @category utils
 */
export const pollUntilDone = <E, R>(
  endpoint: string,
  id: string,
  status: Effect.Effect<CrawlJob, E, R>,
  options: WaitOptions = {}
): Effect.Effect<CrawlJob, E | TaskFailed, R> =>
  status.pipe(
    Effect.repeat(
      Schedule.spaced(options.interval ?? defaultPollInterval).pipe(
        Schedule.whileInput((job: CrawlJob) => job.status === "scraping"),
        // The schedule's output is the last job, so `repeat` returns the terminal record.
        Schedule.passthrough
      )
    ),
    Effect.flatMap((job) =>
      job.status === "completed"
        ? Effect.succeed(job)
        : Effect.fail(
          new TaskFailed({
            endpoint,
            taskId: id,
            status: job.status,
            message: `crawl ${id} ended ${job.status}${job.error !== undefined ? `: ${job.error}` : ""}`
          })
        )
    )
  )

// =============================================================================
// Remote layer
// =============================================================================

/**
 * Builds the remote service on {@link ApiHttp}; routes follow `settings.webRouting`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
  const http = yield* ApiHttp
  const routing = http.settings.webRouting

  const crawl = Effect.fn("Web.crawl")(function*(request: CrawlRequest) {
    const body = yield* http.encode(endpointOf(routing, "crawlStart"), CrawlRequest, request)
    return yield* http.json(webCall(routing, "crawlStart", { body }), CrawlStarted)
  })

  /** One batch: the first (no `next`) or the one a `next` value points to. */
  const batch = (id: string, next: string | undefined) =>
    http.json(webCall(routing, "crawlStatus", { id, next }), CrawlJob)

  // an id, or (firecrawl routing) a `next` link of a previous record, as the crawl-scope codec makes
  const crawlStatus = (id: string) =>
    (routing === "firecrawl" && isLink(id) ? batch("", id) : batch(id, undefined)).pipe(Effect.withSpan("Web.crawlStatus"))

  const crawlPages = (id: string, options: PagesOptions = {}): Stream.Stream<CrawlPage, RagError.ApiError | TaskFailed> =>
    Stream.suspend(() => {
      // Per run of the stream: the `next` values already followed.
      const seen = new Set<string>()
      const pagesOf = (job: CrawlJob) => {
        if (job.next === null || job.next === "") {
          return Effect.succeed([Chunk.fromIterable(job.data), Option.none<CrawlJob | string>()] as const)
        }
        if (seen.has(job.next)) {
          const endpoint = endpointOf(routing, "crawlStatus")
          return Effect.fail(
            new DecodeError({
              endpoint,
              path: "next",
              message: `${endpoint}: crawl ${id} sent a next link that was already followed`
            })
          )
        }
        seen.add(job.next)
        return Effect.succeed([Chunk.fromIterable(job.data), Option.some<CrawlJob | string>(job.next)] as const)
      }
      // the first batch: the caller's completed record, or the one the wait ends with
      const first = options.job?.status === "completed" ? Effect.succeed(options.job) : waitForCrawl(id, options)
      return Stream.unwrap(
        Effect.map(first, (job) =>
          Stream.paginateChunkEffect<CrawlJob | string, CrawlPage, RagError.ApiError, never>(job, (state) =>
            typeof state === "string" ? Effect.flatMap(batch(id, state), pagesOf) : pagesOf(state)))
      )
    }).pipe(Stream.withSpan("Web.crawlPages"))

  const waitForCrawl = (id: string, options?: WaitOptions) =>
    pollUntilDone(
      endpointOf(routing, "crawlStatus"),
      id,
      // The failure reason comes from the server and ends up in an error message: scrub it.
      Effect.map(batch(id, undefined), (job) =>
        job.error === undefined ? job : { ...job, error: http.scrub(job.error) }),
      options
    ).pipe(Effect.withSpan("Web.waitForCrawl"))

  const cancel = (id: string) =>
    http.json(webCall(routing, "crawlCancel", { id }), CancelResponse).pipe(Effect.withSpan("Web.cancel"))

  const map = Effect.fn("Web.map")(function*(request: MapRequest) {
    const body = yield* http.encode(endpointOf(routing, "map"), MapRequest, request)
    return yield* http.json(webCall(routing, "map", { body }), MapResponse)
  })

  const scrape = Effect.fn("Web.scrape")(function*(request: ScrapeRequest) {
    const body = yield* http.encode(endpointOf(routing, "scrape"), ScrapeRequest, request)
    return yield* http.json(webCall(routing, "scrape", { body }), ScrapeResponse)
  })

  return Web.of({ crawl, crawlStatus, crawlPages, waitForCrawl, cancel, map, scrape })
})

/**
 * The remote layer (needs {@link ApiHttp}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Web, never, ApiHttp> = Layer.effect(Web, make)

/** A `next` value that is a link (absolute, or a path on the crawl host) rather than a job id. */
const isLink = (value: string) => value.startsWith("/") || /^https?:\/\//i.test(value)
