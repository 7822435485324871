/**
 * The crawl-scope capability of a web engine: what the Firecrawl routes of the server need
 * beyond the {@link Web.Service} port. A crawl with explicit limits (the depth models, the
 * sitemap mode, the link scope), a map with a sitemap mode, batch scrape jobs, the cursor codec
 * of `next` values, and how many jobs run now.
 *
 * The local web engine provides it beside `Web`; the remote `Web` layer provides it too in
 * `firecrawl` routing (it sends the scope to the upstream server's Firecrawl v1 and v2 routes).
 * A server without it serves the library's own requests and answers the Firecrawl-only ones
 * with a 501 naming this capability.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as RagError from "../RagError.js"
import { BadRequest } from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"
import * as Web from "./Web.js"

/**
 * How a crawl uses the site's sitemaps (robots.txt `Sitemap:` lines, else `/sitemap.xml`):
 * `include` (default) with the links of the pages, `skip` not at all, `only` to say which
 * pages are returned (the start page and the sitemap's URLs).
 *
 * @since 0.1.0
 * @category models
 */
export type SitemapMode = "include" | "skip" | "only"

/**
 * The sitemap modes, for option parsers.
 *
 * @since 0.1.0
 * @category utils
 */
export const sitemapModes: ReadonlyArray<SitemapMode> = ["include", "skip", "only"]

/**
 * The crawl page limit an engine applies when a request has none.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimit = 1000

/**
 * The link limit of a map when a request has none.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMapLimit = 5000

/**
 * Where a crawl may go and how deep: the limits of {@link Service.crawlWith}. Each depth limit
 * is one of the three depth models (see `docs/crawl.md`); any that are set all apply.
 *
 * @since 0.1.0
 * @category models
 */
export interface CrawlScope {
  /**
   * Link hops from the start page (the start page is 0, the pages it links to 1, ...): the
   * model of `Web.CrawlRequest.maxDepth` in the library and the CLI. A page that links reach
   * only beyond this many hops is never returned, even when a sitemap lists it; the sitemap's
   * URLs are fetched after the link crawl, and only when that crawl ran out of links (they are
   * then pages that no link of the site reaches), never with their own links followed.
   */
  readonly maxHops?: number | undefined
  /**
   * Firecrawl v1 `maxDepth`: the most path segments (`index.html`/`index.php` not counted) a
   * URL may have beyond those of the start URL, whatever the links. Sitemap URLs are level 0.
   */
  readonly maxPathDepth?: number | undefined
  /**
   * Firecrawl `maxDiscoveryDepth`: the start page and the sitemap's URLs are depth 0, the
   * pages first linked from depth-n pages are n+1. Pages at this depth are fetched; their
   * links are not followed.
   */
  readonly maxDiscoveryDepth?: number | undefined
  /** How the sitemap is used (default `include`). Without `maxHops`, `only` follows no links. */
  readonly sitemap?: SitemapMode | undefined
  /** Only URLs under the start URL's path (Firecrawl's `crawlEntireDomain: false`). Default false. */
  readonly childPathsOnly?: boolean | undefined
  /** Follow links to subdomains of the start host too (default false). */
  readonly subdomains?: boolean | undefined
  /** Follow links to other sites too (default false); robots.txt and the address policy still apply. */
  readonly externalLinks?: boolean | undefined
  /** URLs that differ only in their query are one page (the query is dropped). Default false. */
  readonly ignoreQueryParameters?: boolean | undefined
}

/**
 * A batch of a job: the job id and how many of its pages come before the batch.
 *
 * @since 0.1.0
 * @category models
 */
export interface Cursor {
  readonly id: string
  readonly skip: number
}

/**
 * The capability. Job ids and `next` values are those of the same engine's `Web.crawlStatus`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * Starts a crawl job with the limits of `scope`; `request.maxDepth` is not read (the scope
   * says which depth model applies).
   */
  readonly crawlWith: (request: Web.CrawlRequest, scope: CrawlScope) => Effect.Effect<Web.CrawlStarted, RagError.ApiError>
  /**
   * Scrapes a list of pages as one background job, read like a crawl job (`crawlStatus`,
   * `cancel`), pages in the order of `urls`.
   */
  readonly batchScrape: (
    urls: ReadonlyArray<string>,
    options?: Web.ScrapeOptions
  ) => Effect.Effect<Web.CrawlStarted, RagError.ApiError>
  /**
   * `map` with a sitemap mode: `include` (what `map` does), `skip` (`ignoreSitemap`), `only`
   * (the sitemap's URLs and the start URL, no page read); `request.ignoreSitemap` is not read.
   */
  readonly mapWith: (request: Web.MapRequest, sitemap: SitemapMode) => Effect.Effect<Web.MapResponse, RagError.ApiError>
  /** The value `Web.crawlStatus` takes for the batch of job `id` after `skip` pages. */
  readonly nextCursor: (id: string, skip: number) => string
  /** Reads a `next` value of `Web.crawlStatus`; `undefined` when it is not one of this engine's. */
  readonly parseCursor: (next: string) => Cursor | undefined
  /**
   * How many crawl and batch jobs are running now (the server caps them); `undefined` when the
   * engine cannot tell (a remote engine caps its own jobs).
   */
  readonly running?: Effect.Effect<number> | undefined
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class WebCrawlScope extends Context.Tag("effect-rag/api/WebCrawlScope")<WebCrawlScope, Service>() {}

// =============================================================================
// Remote layer
// =============================================================================

/** A `next` value that is a link (absolute, or a path on the crawl host) rather than a job id. */
const isLink = (value: string) => value.startsWith("/") || /^https?:\/\//i.test(value)

/** A Firecrawl v2 map answer (`links` as `{url}` objects). */
const V2MapResponse = Schema.Struct({
  success: Schema.optional(Schema.Boolean),
  links: Schema.Array(Schema.Union(Schema.String, Schema.Struct({ url: Schema.String })))
})

/**
 * The crawl-scope capability of a remote Firecrawl-compatible server (`firecrawl` routing): a
 * crawl with a path depth (`maxPathDepth`) goes to `POST /v1/crawl` with v1's fields, any other
 * scope to `POST /v2/crawl` with v2's (a link-hop depth, `maxHops`, has no Firecrawl field: a
 * `BadRequest`); `mapWith` is `POST /v2/map`; a batch scrape is
 * `POST /v1/batch/scrape`. Its cursors are the server's `next` links (`/v1/crawl/{id}?skip=n`),
 * which the remote `crawlStatus` follows. It does not count the server's jobs (`running` is
 * absent: the server caps its own). In `single` routing every call fails with a `BadRequest`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeCrawlScope = Effect.gen(function*() {
  const http = yield* ApiHttp
  const routing = http.settings.webRouting
  const post = <A, I>(path: string, value: Record<string, unknown>, schema: Schema.Schema<A, I>, idempotent: boolean) => {
    const endpoint = `POST ${path}`
    if (routing !== "firecrawl") {
      return Effect.fail(
        new BadRequest({ endpoint, message: `${endpoint}: the crawl-scope calls need firecrawl web routing (webRouting is ${routing})` })
      )
    }
    return http.json({ endpoint, method: "POST", host: "crawl", path, auth: "optional", idempotent, body: { _tag: "Json", value } }, schema)
  }
  const defined = (fields: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))

  const crawlWith = Effect.fn("Web.crawlWith")(function*(request: Web.CrawlRequest, scope: CrawlScope) {
    const { maxDepth: _notRead, ...body } = (yield* http.encode("POST /v2/crawl", Web.CrawlRequest, request)) as Record<string, unknown>
    const fields = defined({
      maxDiscoveryDepth: scope.maxDiscoveryDepth,
      crawlEntireDomain: scope.childPathsOnly !== true,
      allowSubdomains: scope.subdomains,
      allowExternalLinks: scope.externalLinks,
      ignoreQueryParameters: scope.ignoreQueryParameters
    })
    const unsupported = (endpoint: string, what: string) =>
      Effect.fail(new BadRequest({ endpoint, message: `${endpoint}: ${what} has no field on the Firecrawl routes` }))
    if (scope.maxHops !== undefined) return yield* unsupported("POST /v2/crawl", "a link-hop depth (maxHops)")
    if (scope.maxPathDepth !== undefined) {
      // Firecrawl v1's depth model: path segments beyond the start URL's
      if (scope.sitemap === "only") return yield* unsupported("POST /v1/crawl", "sitemap only with a path depth")
      const sitemap = scope.sitemap === "skip" ? { ignoreSitemap: true } : {}
      return yield* post("/v1/crawl", { ...body, ...fields, maxDepth: scope.maxPathDepth, ...sitemap }, Web.CrawlStarted, true)
    }
    return yield* post("/v2/crawl", { ...body, ...fields, sitemap: scope.sitemap ?? "include" }, Web.CrawlStarted, true)
  })

  const batchScrape = Effect.fn("Web.batchScrape")(function*(urls: ReadonlyArray<string>, options?: Web.ScrapeOptions) {
    const encoded = options === undefined ? {} : yield* http.encode("POST /v1/batch/scrape", Web.ScrapeOptions, options)
    return yield* post("/v1/batch/scrape", { urls, ...(encoded as Record<string, unknown>) }, Web.CrawlStarted, true)
  })

  const mapWith = Effect.fn("Web.mapWith")(function*(request: Web.MapRequest, sitemap: SitemapMode) {
    const { ignoreSitemap: _ignored, ...encoded } = (yield* http.encode("POST /v2/map", Web.MapRequest, request)) as Record<string, unknown>
    const response = yield* post("/v2/map", { ...encoded, sitemap }, V2MapResponse, false)
    return { success: true, links: response.links.map((link) => (typeof link === "string" ? link : link.url)) }
  })

  const nextCursor = (id: string, skip: number) => `/v1/crawl/${encodeURIComponent(id)}?skip=${skip}`

  const parseCursor = (next: string): Cursor | undefined => {
    if (!isLink(next)) return undefined
    const url = URL.canParse(next) ? new URL(next) : new URL(next, "http://upstream.invalid")
    const m = /^\/v[12]\/(?:crawl|batch\/scrape)\/([^/]+)$/.exec(url.pathname)
    const skip = Number(url.searchParams.get("skip") ?? "0")
    if (!m || !Number.isInteger(skip) || skip < 0) return undefined
    return { id: decodeURIComponent(m[1]!), skip }
  }

  return WebCrawlScope.of({ crawlWith, batchScrape, mapWith, nextCursor, parseCursor })
})

/**
 * The remote crawl-scope capability (needs `ApiHttp`; `firecrawl` routing).
 *
 * @since 0.1.0
 * @category layers
 */
export const crawlScopeLayer: Layer.Layer<WebCrawlScope, never, ApiHttp> = Layer.effect(
  WebCrawlScope,
  makeCrawlScope
)
