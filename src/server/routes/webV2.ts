/**
 * The Firecrawl v2 surface, on the server's web engine and its crawl-scope capability
 * (`WebCrawlScope`: the local engine, or a remote one in `firecrawl` routing), with v2's request
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
 * Firecrawl's `{success: false, error}` body. Without the crawl-scope capability every route is a
 * 501 naming the local web engine.
 * The batch scrape start is shared with v1 (`internal/jobs.ts`).
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"
import * as Web from "../../api/Web.js"
import * as WebCrawlScope from "../../api/WebCrawlScope.js"
import * as Firecrawl from "../internal/firecrawl.js"
import * as Jobs from "../internal/jobs.js"
import * as State from "../internal/state.js"
import { badRequest, fromError, service } from "../internal/wire.js"


// =============================================================================
// Requests
// =============================================================================

const SitemapMode = Schema.Literal(...WebCrawlScope.sitemapModes)

const ScrapeRequest = Schema.Struct({ url: Schema.String, ...Firecrawl.ScrapeOptions.fields })

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
  scrapeOptions: Schema.optionalWith(Firecrawl.ScrapeOptions, { nullable: true })
})

const MapRequest = Schema.Struct({
  url: Schema.String,
  search: Schema.optional(Schema.String),
  sitemap: Schema.optional(SitemapMode),
  includeSubdomains: Schema.optional(Schema.Boolean),
  ignoreQueryParameters: Schema.optional(Schema.Boolean),
  limit: Schema.optional(Schema.Int.pipe(Schema.positive()))
})

/** Which batch of a job a status request asks for (the query of a `next` link). */
const Batch = Schema.Struct({
  /** Pages to skip (a cursor the engine's codec reads). */
  skip: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
  /** Another `next` value of the engine, handed back to it as it is. */
  cursor: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
})

/** The query of this server's `next` link for the engine's `next` value of job `id`. */
const batchQuery = (scope: WebCrawlScope.Service, id: string, engineNext: string): string => {
  const cursor = scope.parseCursor(engineNext)
  return cursor !== undefined && cursor.id === id ? `skip=${cursor.skip}` : `cursor=${encodeURIComponent(engineNext)}`
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
  yield* service(WebCrawlScope.WebCrawlScope, endpoint, Jobs.crawlScopeName)
  const engine = yield* service(Web.Web, endpoint, Jobs.crawlScopeName)
  const { url, ...rest } = yield* Firecrawl.decodeBody(endpoint, ScrapeRequest, "scrape")
  const { options, rawHtml } = yield* Firecrawl.engineOptions(endpoint, rest, false)
  const response = yield* engine.scrape({ url, ...options }).pipe(Effect.mapError(fromError))
  return HttpServerResponse.unsafeJson({ success: true, data: document(response.data, rawHtml) })
})

/** The status path of a job (`kind` is `crawl` or `batch/scrape`). */
const jobPath = (kind: string, id: string) => `/v2/${kind}/${encodeURIComponent(id)}`

const started = (kind: string, job: Web.CrawlStarted) =>
  Effect.map(Firecrawl.origin, (origin) =>
    HttpServerResponse.unsafeJson({ success: true, id: job.id, url: `${origin}${jobPath(kind, job.id)}` }))

const crawl = Effect.gen(function*() {
  const endpoint = "POST /v2/crawl"
  const engine = yield* service(WebCrawlScope.WebCrawlScope, endpoint, Jobs.crawlScopeName)
  const request = yield* Firecrawl.decodeBody(endpoint, CrawlRequest, "job")
  const { options } = yield* Firecrawl.engineOptions(endpoint, request.scrapeOptions, true)
  const limit = yield* Jobs.crawlLimit(endpoint, request.limit)
  const key = yield* Firecrawl.idempotencyKey
  const start = engine.crawlWith(
    {
      url: request.url,
      ...(request.includePaths !== undefined ? { includePaths: request.includePaths } : {}),
      ...(request.excludePaths !== undefined ? { excludePaths: request.excludePaths } : {}),
      ...(limit !== undefined ? { limit } : {}),
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
  const job = yield* State.idempotent("crawlStart.v2", key, Jobs.gated(endpoint, Effect.mapError(start, fromError)))
  return yield* started("crawl", job)
})

/** `GET /v2/{kind}/{id}`: a batch of the job's pages, `next` the link to the following one. */
const status = (kind: string) =>
  Effect.gen(function*() {
    const endpoint = `GET /v2/${kind}/{id}`
    const scope = yield* service(WebCrawlScope.WebCrawlScope, endpoint, Jobs.crawlScopeName)
    const engine = yield* service(Web.Web, endpoint, Jobs.crawlScopeName)
    const id = yield* jobId
    const batch = yield* HttpServerRequest.schemaSearchParams(Batch).pipe(Effect.mapError((e) => badRequest(endpoint, e)))
    const cursor = batch.cursor ?? (batch.skip !== undefined && batch.skip > 0 ? scope.nextCursor(id, batch.skip) : id)
    const job = yield* engine.crawlStatus(cursor).pipe(Effect.mapError(fromError))
    const origin = yield* Firecrawl.origin
    const next = job.next === null || job.next === "" ? null : `${origin}${jobPath(kind, id)}?${batchQuery(scope, id, job.next)}`
    return HttpServerResponse.unsafeJson(yield* Jobs.record(job, next))
  })

const cancel = (kind: string) =>
  Effect.gen(function*() {
    const endpoint = `DELETE /v2/${kind}/{id}`
    yield* service(WebCrawlScope.WebCrawlScope, endpoint, Jobs.crawlScopeName)
    const engine = yield* service(Web.Web, endpoint, Jobs.crawlScopeName)
    const response = yield* engine.cancel(yield* jobId).pipe(Effect.mapError(fromError))
    return HttpServerResponse.unsafeJson({ success: response.success ?? response.status === "cancelled", status: response.status })
  })

const map = Effect.gen(function*() {
  const endpoint = "POST /v2/map"
  const engine = yield* service(WebCrawlScope.WebCrawlScope, endpoint, Jobs.crawlScopeName)
  const request = yield* Firecrawl.decodeBody(endpoint, MapRequest, "scrape")
  const limit = yield* Jobs.mapLimit(endpoint, request.limit)
  const response = yield* engine.mapWith(
    {
      url: request.url,
      ...(request.search !== undefined ? { search: request.search } : {}),
      ...(request.includeSubdomains !== undefined ? { includeSubdomains: request.includeSubdomains } : {}),
      // with the query dropped, more links may collapse: ask for all, cut after
      ...(request.ignoreQueryParameters !== true ? { limit } : {})
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
  }
  links = links.slice(0, limit)
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
  HttpRouter.post("/v2/batch/scrape", Firecrawl.handle(Jobs.batchScrapeStart("v2"))),
  HttpRouter.get("/v2/batch/scrape/:id", Firecrawl.handle(status("batch/scrape"))),
  HttpRouter.del("/v2/batch/scrape/:id", Firecrawl.handle(cancel("batch/scrape")))
)
