/**
 * The local web engine: an in-process crawler behind the {@link Web.Web} Tag, with the same
 * typed results as the remote client, so that a site can be scraped, crawled and mapped with
 * no API key.
 *
 * - **scrape**: one URL, redirects followed (and reported in `metadata.url`), charset from the
 *   header, a BOM or `<meta>`, main content, Markdown / HTML / links, metadata. Non-HTML
 *   responses (PDF, DOCX, ...) go through the {@link Upload.Upload} service (the local
 *   document engine).
 * - **crawl**: breadth-first within the site of the start URL (same host, `www.` ignored),
 *   `maxDepth` (link hops from the start page), `limit` (pages fetched), include/exclude path
 *   patterns, robots.txt honoured, the sitemap's URLs after the link crawl when it ran out of
 *   links, URLs normalised and deduplicated, bounded concurrency, a politeness delay per host
 *   (raised to the site's `Crawl-delay`), a per-page time-out and body cap. A failed page, and
 *   a page that answered 4xx/5xx, is recorded (status code and `metadata.error`, no content) and
 *   the job goes on. {@link Service.crawlWith} takes the other depth models (Firecrawl v1 path
 *   depth, v2 discovery depth) and the sitemap mode. A job is a background fiber in the layer's
 *   scope, interrupted by `cancel` and when the scope closes. Its pages are not kept in memory:
 *   each is written to the job's spill file as it is scraped (a folder of the layer's scope,
 *   `spillDir`) and read back when a status request asks for it; `cancel` and expiry delete
 *   them.
 * - **map**: the site's links, from its sitemaps and from a few of its pages, without those
 *   robots.txt disallows (unless `respectRobots: false`).
 * - **safety**: only http and https; private, loopback and link-local destinations refused
 *   unless allowed (`allowPrivate`, `allowHosts`), checked on the resolved address of every
 *   connection and every redirect hop; bodies and redirects capped.
 *
 * Pagination: a job record holds at most `pageSize` pages and at most `pageBytes` bytes of
 * pages (their JSON); `next` is `local://crawl/{id}?skip={n}`, which
 * {@link Web.Service.crawlStatus} accepts in place of an id and {@link Web.Service.crawlPages}
 * follows. A page whose JSON alone is over `pageBytes` is recorded as a failed page (its
 * `metadata.error` says `page_too_large`), never served.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, type Scope } from "effect"
import * as Upload from "../../api/Upload.js"
import * as Web from "../../api/Web.js"
import * as WebCrawlScope from "../../api/WebCrawlScope.js"
import { makeBatchScrape } from "./internal/batch.js"
import { makeCrawlWith } from "./internal/crawl.js"
import * as Cursor from "./internal/cursor.js"
import { destroyAgents, makeAgents } from "./internal/fetcher.js"
import { makeJobs } from "./internal/job-service.js"
import { makeStore } from "./internal/jobs.js"
import { makeMapWith } from "./internal/map.js"
import { makePoliteness } from "./internal/politeness.js"
import * as Scrape from "./internal/scrape.js"
import type { Settings } from "./internal/settings.js"

// =============================================================================
// Options
// =============================================================================

/**
 * Options of the local web engine. Every field has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Allow private, loopback and link-local destinations (default false). */
  readonly allowPrivate?: boolean | undefined
  /**
   * Destinations allowed even when private: host names (`localhost`, `*.corp.test`), IP
   * addresses (`127.0.0.1`) or CIDR ranges (`10.0.0.0/8`). Default none.
   */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** The `User-Agent` (default {@link defaultUserAgent}); its first token is the robots.txt agent. */
  readonly userAgent?: string | undefined
  /** The `User-Agent` of `mobile` requests (default {@link defaultMobileUserAgent}). */
  readonly mobileUserAgent?: string | undefined
  /** Minimum time between two request starts to one host (default 500 ms). */
  readonly politenessDelay?: Duration.DurationInput | undefined
  /** The longest robots.txt `Crawl-delay` honoured (default 10 s): a larger one is capped. */
  readonly maxCrawlDelay?: Duration.DurationInput | undefined
  /** Pages fetched at once by one crawl or map (default 4). */
  readonly concurrency?: number | undefined
  /** Time limit of one page, redirects and body included (default 30 s). */
  readonly pageTimeout?: Duration.DurationInput | undefined
  /** Largest response body, decompressed (default 10 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** Most redirects followed for one URL (default 5). */
  readonly maxRedirects?: number | undefined
  /** Honour robots.txt in crawls and maps (default true). Scrape never reads it. */
  readonly respectRobots?: boolean | undefined
  /** Pages per crawl job record; more pages are behind `next` (default 100). */
  readonly pageSize?: number | undefined
  /**
   * Bytes of pages (their JSON) per crawl job record; more pages are behind `next` (default
   * 10 MiB, as Firecrawl pages its status). A page whose JSON alone is larger is recorded as a
   * failed page with the reason `page_too_large`.
   */
  readonly pageBytes?: number | undefined
  /**
   * Where crawl pages are written while their job is kept: a folder made inside this one when
   * the layer starts and removed when it is released (default the OS temp folder).
   */
  readonly spillDir?: string | undefined
  /** `maxDepth` of a crawl that does not set it (default 10). */
  readonly defaultMaxDepth?: number | undefined
  /** `limit` of a crawl that does not set it (default 1000). */
  readonly defaultLimit?: number | undefined
  /** Pages a map fetches to find links, besides the sitemaps (default 10). */
  readonly mapMaxPages?: number | undefined
  /** Most sitemap documents read for one crawl or map (default 20). */
  readonly maxSitemaps?: number | undefined
  /** How long a finished job is kept (default 24 hours). */
  readonly retention?: Duration.DurationInput | undefined
}

/**
 * The `maxDepth` (link hops) of a crawl that does not set one, unless `Options.defaultMaxDepth` says otherwise.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxDepth = 10

/**
 * The `limit` of a crawl that does not set it, unless `Options.defaultLimit` says otherwise.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimit = WebCrawlScope.defaultLimit

/**
 * The `limit` (links) of a map that does not set it.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMapLimit = WebCrawlScope.defaultMapLimit

/**
 * The bytes of pages per crawl job record, unless `Options.pageBytes` says otherwise (10 MiB).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPageBytes = 10 * 1024 * 1024

/**
 * The default `User-Agent`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultUserAgent = "effect-rag/0.1 (local web engine)"
/**
 * The default mobile `User-Agent`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMobileUserAgent = "Mozilla/5.0 (Linux; Android 14; Mobile) effect-rag/0.1 (local web engine)"

/**
 * The formats a page can be scraped to (`rawHtml` is the unfiltered page in `html`).
 *
 * @since 0.1.0
 * @category utils
 */
export const supportedFormats: ReadonlySet<string> = Scrape.supportedFormats

const settingsOf = (o: Options): Settings => ({
  policy: { allowPrivate: o.allowPrivate ?? false, allowHosts: o.allowHosts ?? [] },
  userAgent: o.userAgent ?? defaultUserAgent,
  mobileUserAgent: o.mobileUserAgent ?? defaultMobileUserAgent,
  politenessMs: Duration.toMillis(o.politenessDelay ?? Duration.millis(500)),
  maxCrawlDelayMs: Duration.toMillis(o.maxCrawlDelay ?? Duration.seconds(10)),
  concurrency: Math.max(1, o.concurrency ?? 4),
  pageTimeout: Duration.decode(o.pageTimeout ?? Duration.seconds(30)),
  maxBodyBytes: o.maxBodyBytes ?? 10 * 1024 * 1024,
  maxRedirects: o.maxRedirects ?? 5,
  respectRobots: o.respectRobots ?? true,
  pageSize: Math.max(1, o.pageSize ?? 100),
  pageBytes: Math.max(1024, o.pageBytes ?? defaultPageBytes),
  spillDir: o.spillDir,
  defaultMaxDepth: o.defaultMaxDepth ?? defaultMaxDepth,
  defaultLimit: o.defaultLimit ?? defaultLimit,
  mapMaxPages: o.mapMaxPages ?? 10,
  maxSitemaps: o.maxSitemaps ?? 20,
  retentionMs: Duration.toMillis(o.retention ?? Duration.hours(24))
})

// =============================================================================
// Crawl scope
// =============================================================================

/**
 * How a crawl uses the site's sitemaps (the crawl-scope capability's {@link WebCrawlScope.SitemapMode}).
 *
 * @since 0.1.0
 * @category models
 */
export type SitemapMode = WebCrawlScope.SitemapMode

/**
 * The sitemap modes, for option parsers.
 *
 * @since 0.1.0
 * @category utils
 */
export const sitemapModes: ReadonlyArray<SitemapMode> = WebCrawlScope.sitemapModes

/**
 * Where a crawl may go and how deep: the limits of {@link Service.crawlWith} ({@link WebCrawlScope.CrawlScope}).
 *
 * @since 0.1.0
 * @category models
 */
export type CrawlScope = WebCrawlScope.CrawlScope

/**
 * The local web engine: the {@link Web.Service} and the calls of the crawl-scope capability
 * ({@link WebCrawlScope.Service}: `crawlWith`, `batchScrape`, `mapWith`, with the same types),
 * and the count of running jobs.
 *
 * - `crawl(request)` is `crawlWith(request, {maxHops: request.maxDepth ?? defaultMaxDepth})`.
 * - `batchScrape` pages are read like a crawl job's (`crawlStatus`, `crawlPages`,
 *   `waitForCrawl`, `cancel`). A URL that is not http(s) fails the call (`BadRequest`,
 *   `invalid_url`); one the address policy refuses (a private or loopback host) is a failed page
 *   of the job (`metadata.error`, `blocked`), and the other URLs are scraped. When the policy
 *   refuses every URL, the call fails (`BadRequest`, `blocked`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends Web.Service, Pick<WebCrawlScope.Service, "crawlWith" | "batchScrape" | "mapWith"> {
  /** How many crawl and batch jobs are running now (the server caps them). */
  readonly running: NonNullable<WebCrawlScope.Service["running"]>
}

/**
 * The local web engine's own Tag (the layer provides it beside {@link Web.Web}).
 *
 * @since 0.1.0
 * @category context
 */
export class LocalWeb extends Context.Tag("effect-rag/engines/LocalWeb")<LocalWeb, Service>() {}

// =============================================================================
// Cursors
// =============================================================================

/**
 * The `next` cursor of a job record.
 *
 * @since 0.1.0
 * @category utils
 */
export const nextCursor: (id: string, skip: number) => string = Cursor.nextCursor

/**
 * Reads an id or a `next` cursor: the job id and the pages to skip.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseCursor: (idOrNext: string) => { id: string; skip: number } = Cursor.parseCursor

// =============================================================================
// Engine
// =============================================================================

/**
 * Builds the engine. Needs a `Scope` (background crawls and connection pools live in it) and
 * the {@link Upload.Upload} service for non-HTML pages.
 *
 * Each concern has its own state, made here and passed to the parts that use it: politeness
 * (per-host pacing and robots.txt), the scraper, the job store and its jobs (with their cursors),
 * the crawl loop, batch scrape and map.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, never, Scope.Scope | Upload.Upload> =>
  Effect.gen(function*() {
    const settings = settingsOf(options)
    const upload = yield* Upload.Upload
    const scope = yield* Effect.scope
    const agents = yield* Effect.acquireRelease(Effect.sync(makeAgents), (a) => Effect.sync(() => destroyAgents(a)))
    const store = yield* makeStore({ dir: settings.spillDir, pageSize: settings.pageSize, pageBytes: settings.pageBytes })
    const polite = makePoliteness(settings, agents)
    const scraper = Scrape.makeScraper(settings, polite, upload)
    const jobs = yield* makeJobs(settings, store, scope)
    const crawlWith = makeCrawlWith({ settings, polite, scraper, jobs })
    const crawl = (request: Web.CrawlRequest) => crawlWith(request, { maxHops: request.maxDepth ?? settings.defaultMaxDepth })
    const mapWith = makeMapWith({ settings, polite, scraper })
    const map = (request: Web.MapRequest) => mapWith(request, request.ignoreSitemap === true ? "skip" : "include")
    return {
      crawl,
      crawlWith,
      batchScrape: makeBatchScrape({ settings, scraper, jobs, store }),
      crawlStatus: jobs.crawlStatus,
      crawlPages: jobs.crawlPages,
      waitForCrawl: jobs.waitForCrawl,
      cancel: jobs.cancel,
      map,
      mapWith,
      scrape: scraper.scrape,
      running: jobs.running
    }
  })

/**
 * The local web engine as the {@link Web.Web} layer, and as {@link LocalWeb} (the same service
 * with {@link Service.crawlWith}). Scoped: background crawls are interrupted and connections
 * closed when the layer is released. Needs {@link Upload.Upload} for non-HTML pages (e.g.
 * `LocalFiles.layer()`).
 *
 * @example
 * ```ts
 * import { Console, Effect, Layer } from "effect"
 * import { LocalFiles, LocalWeb, Web } from "effect-rag"
 *
 * const program = Effect.gen(function*() {
 *   const web = yield* Web.Web
 *   const page = yield* web.scrape({ url: "https://example.com/", formats: ["markdown", "links"] })
 *   yield* Console.log(page.data.metadata.title, page.data.links?.length)
 *   // a crawl is a background job (its pages: `web.crawlPages(started.id)`)
 *   const started = yield* web.crawl({ url: "https://example.com/", maxDepth: 2, limit: 50 })
 *   const job = yield* web.waitForCrawl(started.id)
 *   yield* Console.log(`${job.completed} of ${job.total} pages`)
 * })
 *
 * // the web engine reads non-HTML pages (PDF, DOCX, ...) with the local document engine
 * const engine = LocalWeb.layer({ politenessDelay: "1 second" }).pipe(Layer.provide(LocalFiles.layer()))
 * Effect.runPromise(program.pipe(Effect.provide(engine)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Options = {}
): Layer.Layer<Web.Web | LocalWeb | WebCrawlScope.WebCrawlScope, never, Upload.Upload> =>
  Layer.scopedContext(
    Effect.map(make(options), (engine) =>
      Context.make(LocalWeb, engine).pipe(
        Context.add(Web.Web, engine),
        Context.add(WebCrawlScope.WebCrawlScope, crawlScopeOf(engine))
      ))
  )

/**
 * The engine as the crawl-scope capability (`WebCrawlScope`): its scoped crawl, batch scrape,
 * map with a sitemap mode, job count, and its cursor codec ({@link nextCursor}).
 *
 * @since 0.1.0
 * @category utils
 */
export const crawlScopeOf = (engine: Service): WebCrawlScope.Service => ({
  crawlWith: engine.crawlWith,
  batchScrape: engine.batchScrape,
  mapWith: engine.mapWith,
  running: engine.running,
  nextCursor,
  parseCursor: (next) => {
    const cursor = parseCursor(next)
    return nextCursor(cursor.id, cursor.skip) === next ? cursor : undefined
  }
})
