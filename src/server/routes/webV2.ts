/**
 * The Firecrawl v2 surface, on the server's local web engine (`LocalWeb`), with v2's request
 * fields and response shapes as Firecrawl's API reference and the `@mendable/firecrawl-js` SDK
 * define them:
 *
 * | Route | Request | Response |
 * | --- | --- | --- |
 * | `POST /v2/scrape` | `{url, formats, onlyMainContent, includeTags, excludeTags, headers, waitFor, mobile, removeBase64Images}` | `{success, data: Document}` |
 * | `POST /v2/crawl` | `{url, maxDiscoveryDepth, sitemap, crawlEntireDomain, allowSubdomains, allowExternalLinks, ignoreQueryParameters, limit, includePaths, excludePaths, scrapeOptions}` | `{success, id, url}` |
 * | `GET /v2/crawl/{id}` | `?skip=n` (the `next` link) | `{success, status, total, completed, creditsUsed, expiresAt, next?, data: Document[]}` |
 * | `DELETE /v2/crawl/{id}` | | `{success, status}` |
 * | `POST /v2/map` | `{url, search, sitemap, includeSubdomains, ignoreQueryParameters, limit}` | `{success, links: [{url}]}` |
 * | `POST /v2/batch/scrape` | `{urls, ignoreInvalidURLs, ...scrape options}` | `{success, id, url, invalidURLs?}` |
 * | `GET /v2/batch/scrape/{id}`, `DELETE` | as crawl | as crawl |
 *
 * Depth is v2's: `maxDiscoveryDepth` counts discovery order (the start page and the sitemap's
 * pages are 0), `sitemap` is `include` (default), `skip` or `only`, and without
 * `crawlEntireDomain` only URLs under the start URL's path are followed. `formats` may be
 * names or `{type}` objects; `rawHtml` is the page as served, in the document's `rawHtml`.
 * Options the engine cannot honour are a 400 naming them (see `Firecrawl.refused`); errors are
 * Firecrawl's `{success: false, error}` body. Without the local web engine every route is a 501.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"
import type * as Web from "../../api/Web.js"
import * as LocalWeb from "../../engines/LocalWeb.js"
import * as Firecrawl from "../internal/firecrawl.js"
import * as State from "../internal/state.js"
import { badRequest, fromError, jsonBody, service, type WireError } from "../internal/wire.js"
import { firecrawlRecord } from "./web.js"

const engineName = "local web engine"

// =============================================================================
// Requests
// =============================================================================

/** A format: its name, or an object with a `type` (and options of its own). */
const Format = Schema.Union(Schema.String, Schema.Struct({ type: Schema.String }))

/** The scrape options of v2 that the engine reads (the others pass or are refused). */
const ScrapeOptions = Schema.Struct({
  formats: Schema.optional(Schema.Array(Format)),
  onlyMainContent: Schema.optional(Schema.Boolean),
  includeTags: Schema.optional(Schema.Array(Schema.String)),
  excludeTags: Schema.optional(Schema.Array(Schema.String)),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  waitFor: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  mobile: Schema.optional(Schema.Boolean),
  removeBase64Images: Schema.optional(Schema.Boolean)
})
type ScrapeOptions = typeof ScrapeOptions.Type

const SitemapMode = Schema.Literal("include", "skip", "only")

const ScrapeRequest = Schema.Struct({ url: Schema.String, ...ScrapeOptions.fields })

const CrawlRequest = Schema.Struct({
  url: Schema.String,
  includePaths: Schema.optionalWith(Schema.Array(Schema.String), { nullable: true }),
  excludePaths: Schema.optionalWith(Schema.Array(Schema.String), { nullable: true }),
  maxDiscoveryDepth: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { nullable: true }),
  sitemap: Schema.optional(SitemapMode),
  ignoreQueryParameters: Schema.optional(Schema.Boolean),
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { nullable: true }),
  crawlEntireDomain: Schema.optional(Schema.Boolean),
  allowExternalLinks: Schema.optional(Schema.Boolean),
  allowSubdomains: Schema.optional(Schema.Boolean),
  scrapeOptions: Schema.optionalWith(ScrapeOptions, { nullable: true })
})

const MapRequest = Schema.Struct({
  url: Schema.String,
  search: Schema.optional(Schema.String),
  sitemap: Schema.optional(SitemapMode),
  includeSubdomains: Schema.optional(Schema.Boolean),
  ignoreQueryParameters: Schema.optional(Schema.Boolean),
  limit: Schema.optional(Schema.Int.pipe(Schema.positive()))
})

const BatchRequest = Schema.Struct({
  urls: Schema.NonEmptyArray(Schema.String),
  ignoreInvalidURLs: Schema.optional(Schema.Boolean),
  ...ScrapeOptions.fields
})

/** Which batch of a job a status request asks for (the query of a `next` link). */
const Batch = Schema.Struct({
  skip: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()))
})

/** Reads a body: refused options first (a 400 naming one), then the schema. */
const body = <A, I>(endpoint: string, schema: Schema.Schema<A, I>, kind: "scrape" | "job" | "batch") =>
  Effect.gen(function*() {
    const json = yield* jsonBody(endpoint, Schema.Unknown)
    const refusal = Firecrawl.refused(endpoint, json, kind)
    if (refusal !== undefined) return yield* Effect.fail(refusal)
    return yield* Schema.decodeUnknown(schema)(json).pipe(Effect.mapError((e) => badRequest(endpoint, e)))
  })

const invalid = (endpoint: string, message: string): WireError => ({
  status: 400,
  message: `${endpoint}: ${message}`,
  type: "invalid_request_error",
  code: "invalid_request"
})

/**
 * The engine's scrape options of v2 options: format names (`{type}` objects by their type).
 * `rawHtml` comes back in the engine's `html` field, so it cannot be asked with `html`, nor in
 * a job (whose pages are read later, when the request is no longer known).
 */
const engineOptions = (
  endpoint: string,
  o: ScrapeOptions | undefined,
  job: boolean
): Effect.Effect<{ readonly options: Web.ScrapeOptions; readonly rawHtml: boolean }, WireError> => {
  const formats = o?.formats?.map((f) => (typeof f === "string" ? f : f.type))
  const rawHtml = formats?.includes("rawHtml") ?? false
  if (rawHtml && (job || formats!.includes("html"))) {
    return Effect.fail(invalid(
      endpoint,
      job
        ? "formats: rawHtml is only served by /v2/scrape here (use html in crawls and batches)"
        : "formats: rawHtml and html together are not supported by this server's web engine"
    ))
  }
  const { formats: _, ...rest } = o ?? {}
  return Effect.succeed({ options: { ...rest, ...(formats !== undefined ? { formats } : {}) }, rawHtml })
}

/** A v2 document of an engine page (`html` as `rawHtml` when that is what was asked). */
const document = (page: Web.CrawlPage, rawHtml: boolean) => {
  if (!rawHtml || page.html === undefined) return page
  const { html, ...rest } = page
  return { ...rest, rawHtml: html }
}

// =============================================================================
// Handlers
// =============================================================================

const scrape = Effect.gen(function*() {
  const endpoint = "POST /v2/scrape"
  const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
  const { url, ...rest } = yield* body(endpoint, ScrapeRequest, "scrape")
  const { options, rawHtml } = yield* engineOptions(endpoint, rest, false)
  const response = yield* engine.scrape({ url, ...options }).pipe(Effect.mapError(fromError))
  return HttpServerResponse.unsafeJson({ success: true, data: document(response.data, rawHtml) })
})

/** The status path of a job (`kind` is `crawl` or `batch/scrape`). */
const jobPath = (kind: string, id: string) => `/v2/${kind}/${encodeURIComponent(id)}`

const started = (kind: string, job: Web.CrawlStarted, extra: Record<string, unknown> = {}) =>
  Effect.map(Firecrawl.origin, (origin) =>
    HttpServerResponse.unsafeJson({ success: true, id: job.id, url: `${origin}${jobPath(kind, job.id)}`, ...extra }))

const crawl = Effect.gen(function*() {
  const endpoint = "POST /v2/crawl"
  const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
  const request = yield* body(endpoint, CrawlRequest, "job")
  const { options } = yield* engineOptions(endpoint, request.scrapeOptions, true)
  const key = yield* Firecrawl.idempotencyKey
  const start = engine.crawlWith(
    {
      url: request.url,
      ...(request.includePaths !== undefined ? { includePaths: request.includePaths } : {}),
      ...(request.excludePaths !== undefined ? { excludePaths: request.excludePaths } : {}),
      ...(request.limit !== undefined ? { limit: request.limit } : {}),
      scrapeOptions: options
    },
    {
      maxDiscoveryDepth: request.maxDiscoveryDepth,
      sitemap: request.sitemap ?? "include",
      childPathsOnly: request.crawlEntireDomain !== true,
      subdomains: request.allowSubdomains,
      externalLinks: request.allowExternalLinks,
      ignoreQueryParameters: request.ignoreQueryParameters
    }
  )
  const job = yield* State.idempotent("crawlStart.v2", key, start).pipe(Effect.mapError(fromError))
  return yield* started("crawl", job)
})

const batchScrape = Effect.gen(function*() {
  const endpoint = "POST /v2/batch/scrape"
  const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
  const { ignoreInvalidURLs, urls, ...rest } = yield* body(endpoint, BatchRequest, "batch")
  const { options } = yield* engineOptions(endpoint, rest, true)
  const isHttp = (u: string) => /^https?:\/\//i.test(u.trim()) && URL.canParse(u.trim())
  const invalidURLs = urls.filter((u) => !isHttp(u))
  if (invalidURLs.length > 0 && ignoreInvalidURLs !== true) {
    return yield* Effect.fail(invalid(endpoint, `invalid URLs ${invalidURLs.join(", ")} (set ignoreInvalidURLs to skip them)`))
  }
  const valid = urls.filter(isHttp)
  if (valid.length === 0) return yield* Effect.fail(invalid(endpoint, "no valid URL"))
  const key = yield* Firecrawl.idempotencyKey
  const job = yield* State.idempotent("batchScrape.v2", key, engine.batchScrape(valid, options)).pipe(
    Effect.mapError(fromError)
  )
  return yield* started("batch/scrape", job, ignoreInvalidURLs === true ? { invalidURLs } : {})
})

/** `GET /v2/{kind}/{id}`: a batch of the job's pages, `next` the link to the following one. */
const status = (kind: string) =>
  Effect.gen(function*() {
    const endpoint = `GET /v2/${kind}/{id}`
    const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
    const id = yield* jobId
    const { skip } = yield* HttpServerRequest.schemaSearchParams(Batch).pipe(Effect.mapError((e) => badRequest(endpoint, e)))
    const job = yield* engine.crawlStatus(skip !== undefined && skip > 0 ? LocalWeb.nextCursor(id, skip) : id).pipe(
      Effect.mapError(fromError)
    )
    const origin = yield* Firecrawl.origin
    const next = job.next === null ? null : `${origin}${jobPath(kind, id)}?skip=${LocalWeb.parseCursor(job.next).skip}`
    return HttpServerResponse.unsafeJson(yield* firecrawlRecord(job, next))
  })

const cancel = (kind: string) =>
  Effect.gen(function*() {
    const endpoint = `DELETE /v2/${kind}/{id}`
    const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
    const response = yield* engine.cancel(yield* jobId).pipe(Effect.mapError(fromError))
    return HttpServerResponse.unsafeJson({ success: response.success ?? response.status === "cancelled", status: response.status })
  })

const map = Effect.gen(function*() {
  const endpoint = "POST /v2/map"
  const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
  const request = yield* body(endpoint, MapRequest, "scrape")
  const response = yield* engine.mapWith(
    {
      url: request.url,
      ...(request.search !== undefined ? { search: request.search } : {}),
      ...(request.includeSubdomains !== undefined ? { includeSubdomains: request.includeSubdomains } : {}),
      // with the query dropped, more links may collapse: ask for all, cut after
      ...(request.limit !== undefined && request.ignoreQueryParameters !== true ? { limit: request.limit } : {})
    },
    request.sitemap ?? "include"
  ).pipe(Effect.mapError(fromError))
  let links: ReadonlyArray<string> = response.links
  if (request.ignoreQueryParameters === true) {
    const seen = new Set<string>()
    links = links.flatMap((link) => {
      const url = new URL(link)
      url.search = ""
      if (seen.has(url.href)) return []
      seen.add(url.href)
      return [url.href]
    })
    if (request.limit !== undefined) links = links.slice(0, request.limit)
  }
  return HttpServerResponse.unsafeJson({ success: true, links: links.map((url) => ({ url })) })
})

// =============================================================================
// Routes
// =============================================================================

const jobId = Effect.map(HttpRouter.params, (params) => params["id"] ?? "")

/** The Firecrawl v2 routes. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post("/v2/scrape", Firecrawl.handle(scrape)),
  HttpRouter.post("/v2/crawl", Firecrawl.handle(crawl)),
  HttpRouter.get("/v2/crawl/:id", Firecrawl.handle(status("crawl"))),
  HttpRouter.del("/v2/crawl/:id", Firecrawl.handle(cancel("crawl"))),
  HttpRouter.post("/v2/map", Firecrawl.handle(map)),
  HttpRouter.post("/v2/batch/scrape", Firecrawl.handle(batchScrape)),
  HttpRouter.get("/v2/batch/scrape/:id", Firecrawl.handle(status("batch/scrape"))),
  HttpRouter.del("/v2/batch/scrape/:id", Firecrawl.handle(cancel("batch/scrape")))
)
