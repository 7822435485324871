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
import { Cause, Chunk, Clock, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Schedule, Scope, Stream } from "effect"
import * as Upload from "../../api/Upload.js"
import { endpointOf, type WebOperation } from "../../api/WebRoutes.js"
import * as Web from "../../api/Web.js"
import * as WebCrawlScope from "../../api/WebCrawlScope.js"
import * as RagError from "../../RagError.js"
import {
  destroyAgents,
  type Agents,
  FetchFailure,
  type FetchResult,
  fetchUrl,
  makeAgents
} from "./internal/fetcher.js"
import { decodePage, invalidSelector, isHtml, processHtml } from "./internal/html.js"
import { type Job, makeStore } from "./internal/jobs.js"
import * as Robots from "./internal/robots.js"
import { parseSitemap } from "./internal/sitemap.js"
import { precheck, type Policy } from "./internal/ssrf.js"
import { compileFilter, passes, type PathFilter } from "./internal/path-filter.js"
import { normalize, parseHttpUrl, pathDepth, sameSite } from "../../internal/url.js"

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
export const supportedFormats: ReadonlySet<string> = new Set(["markdown", "html", "rawHtml", "links"])

interface Settings {
  readonly policy: Policy
  readonly userAgent: string
  readonly mobileUserAgent: string
  readonly politenessMs: number
  readonly maxCrawlDelayMs: number
  readonly concurrency: number
  readonly pageTimeout: Duration.Duration
  readonly maxBodyBytes: number
  readonly maxRedirects: number
  readonly respectRobots: boolean
  readonly pageSize: number
  readonly pageBytes: number
  readonly spillDir: string | undefined
  readonly defaultMaxDepth: number
  readonly defaultLimit: number
  readonly mapMaxPages: number
  readonly maxSitemaps: number
  readonly retentionMs: number
}

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
 * The local web engine: the {@link Web.Service} and a crawl with explicit limits.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends Web.Service {
  /**
   * Starts a crawl job with the limits of `scope`; `request.maxDepth` is not read (the scope
   * says which depth model applies). `crawl(request)` is `crawlWith(request, {maxHops:
   * request.maxDepth ?? defaultMaxDepth})`.
   */
  readonly crawlWith: (request: Web.CrawlRequest, scope: CrawlScope) => Effect.Effect<Web.CrawlStarted, RagError.ApiError>
  /**
   * Scrapes a list of pages as one background job, read like a crawl job (`crawlStatus`,
   * `crawlPages`, `waitForCrawl`, `cancel`), pages in the order of `urls`. A URL that is not
   * http(s) fails the call (`BadRequest`, `invalid_url`); one the address policy refuses (a
   * private or loopback host) is a failed page of the job (`metadata.error`, `blocked`), and
   * the other URLs are scraped. When the policy refuses every URL, the call fails
   * (`BadRequest`, `blocked`).
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
  /** How many crawl and batch jobs are running now (the server caps them). */
  readonly running: Effect.Effect<number>
}

/**
 * The local web engine's own Tag (the layer provides it beside {@link Web.Web}).
 *
 * @since 0.1.0
 * @category context
 */
export class LocalWeb extends Context.Tag("effect-rag/engines/LocalWeb")<LocalWeb, Service>() {}

// =============================================================================
// Errors
// =============================================================================

const endpoint = (op: WebOperation): string => endpointOf("firecrawl", op)

/** Maps a fetch failure to the API error family (scrape, map, crawl start). */
const fetchError = (op: WebOperation, e: FetchFailure, maxBytes: number): RagError.ApiError => {
  const ep = endpoint(op)
  switch (e.reason) {
    case "invalid_url":
    case "blocked":
    case "too_many_redirects":
      return new RagError.BadRequest({ endpoint: ep, message: e.message, code: e.reason })
    case "too_large":
      return new RagError.PayloadTooLarge({ endpoint: ep, message: e.message, code: e.reason, limit: maxBytes })
    case "timeout":
      return new RagError.TransportError({ endpoint: ep, message: e.message, reason: "timeout" })
    case "aborted":
      return new RagError.TransportError({ endpoint: ep, message: e.message, reason: "aborted" })
    case "unreachable":
      return new RagError.TransportError({ endpoint: ep, message: e.message, reason: "unreachable" })
  }
}

/** A page that could not be scraped (recorded in a crawl, an `ApiError` for scrape). */
class PageFailure {
  readonly _tag = "PageFailure"
  constructor(
    readonly error: RagError.ApiError,
    readonly statusCode: number | undefined,
    readonly finalUrl: string | undefined
  ) {}
}

const extractionError = (op: WebOperation, e: Upload.UploadError): RagError.ApiError => {
  if (e._tag !== "ExtractionError") return e
  const ep = endpoint(op)
  // the engines' messages start with the file name already ("download: …" for a URL ending in "/")
  const message = e.message.startsWith(`${e.file}: `) ? e.message : `${e.file}: ${e.message}`
  switch (e.reason) {
    case "too_large":
    case "limit_exceeded":
      return new RagError.PayloadTooLarge({ endpoint: ep, message, code: e.reason })
    case "password_required":
    case "wrong_password":
    case "corrupt":
    case "unsupported":
      return new RagError.BadRequest({ endpoint: ep, message, code: e.reason })
    default:
      return new RagError.ServerError({ endpoint: ep, message, code: e.reason, status: 500 })
  }
}

// =============================================================================
// Jobs
// =============================================================================

/**
 * The `next` cursor of a job record.
 *
 * @since 0.1.0
 * @category utils
 */
export const nextCursor = (id: string, skip: number): string => `local://crawl/${encodeURIComponent(id)}?skip=${skip}`

/**
 * Reads an id or a `next` cursor: the job id and the pages to skip.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseCursor = (idOrNext: string): { id: string; skip: number } => {
  const m = /^local:\/\/crawl\/([^?]+)(?:\?skip=(\d+))?$/.exec(idOrNext)
  if (!m) return { id: idOrNext, skip: 0 }
  return { id: decodeURIComponent(m[1]!), skip: Number(m[2] ?? "0") }
}

// =============================================================================
// Engine
// =============================================================================

/** A scraped page and the links to follow from it. */
interface Scraped {
  readonly page: Web.CrawlPage
  /** The final URL (after redirects). */
  readonly finalUrl: string
  /** Links of the page (absolute), for crawling and mapping. */
  readonly links: ReadonlyArray<string>
}

/** Per-request options. */
interface PageOptions extends Web.ScrapeOptions {
  readonly sourceURL: string
}

const defaultFormats = ["markdown"] as const

const checkScrapeOptions = (op: WebOperation, o: Web.ScrapeOptions | undefined): RagError.BadRequest | undefined => {
  const unknown = (o?.formats ?? []).filter((f) => !supportedFormats.has(f))
  if (unknown.length > 0) {
    return new RagError.BadRequest({
      endpoint: endpoint(op),
      message: `unsupported formats ${unknown.join(", ")} (the local engine supports ${[...supportedFormats].join(", ")})`
    })
  }
  const bad = invalidSelector([...(o?.includeTags ?? []), ...(o?.excludeTags ?? [])])
  return bad === undefined ? undefined : new RagError.BadRequest({ endpoint: endpoint(op), message: bad })
}

const fileName = (url: string, mediaType: string): string => {
  const last = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "") || "download"
  if (/\.[a-z0-9]{2,5}$/i.test(last)) return last
  const ext: Record<string, string> = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.ms-excel": ".xls",
    "text/csv": ".csv",
    "application/json": ".json",
    "image/png": ".png",
    "image/jpeg": ".jpg"
  }
  return last + (ext[mediaType] ?? "")
}

const isText = (mediaType: string): boolean =>
  mediaType === "text/plain" || mediaType === "text/markdown" || mediaType === "text/x-markdown"

/**
 * Builds the engine. Needs a `Scope` (background crawls and connection pools live in it) and
 * the {@link Upload.Upload} service for non-HTML pages.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Service, never, Scope.Scope | Upload.Upload> =>
  Effect.gen(function*() {
    const s = settingsOf(options)
    const upload = yield* Upload.Upload
    const scope = yield* Effect.scope
    const agents: Agents = yield* Effect.acquireRelease(Effect.sync(makeAgents), (a) => Effect.sync(() => destroyAgents(a)))
    const store = yield* makeStore({ dir: s.spillDir, pageSize: s.pageSize, pageBytes: s.pageBytes })
    const jobs = store.jobs
    // per host: the earliest time the next request may start
    const nextStart = new Map<string, number>()
    // per host: the robots.txt Crawl-delay (ms), once read
    const crawlDelays = new Map<string, number>()

    // ---------------------------------------------------------------------------
    // Fetching
    // ---------------------------------------------------------------------------

    /** Waits for the host's turn (politeness), then reserves the next slot. */
    const politeTurn = (host: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const delay = Math.max(s.politenessMs, Math.min(crawlDelays.get(host) ?? 0, s.maxCrawlDelayMs))
        const slot = Math.max(now, nextStart.get(host) ?? 0)
        nextStart.set(host, slot + delay)
        return slot > now ? Effect.sleep(Duration.millis(slot - now)) : Effect.void
      })

    interface FetchSettings {
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly mobile?: boolean | undefined
      readonly accept?: string | undefined
      readonly polite: boolean
    }

    /** Fetches a URL: politeness turn, then the request, within the per-page time-out. */
    const fetchPage = (url: string, f: FetchSettings): Effect.Effect<FetchResult, FetchFailure> => {
      const host = parseHttpUrl(url)?.host ?? ""
      const request = Effect.async<FetchResult, FetchFailure>((resume, signal) => {
        fetchUrl(url, {
          policy: s.policy,
          agents,
          userAgent: f.mobile ? s.mobileUserAgent : s.userAgent,
          headers: f.headers,
          maxBytes: s.maxBodyBytes,
          maxRedirects: s.maxRedirects,
          accept: f.accept,
          signal
        }).then(
          (r) => resume(Effect.succeed(r)),
          (e) =>
            resume(Effect.fail(e instanceof FetchFailure ? e : new FetchFailure("unreachable", url, String(e))))
        )
      })
      return (f.polite ? Effect.zipRight(politeTurn(host), request) : request).pipe(
        Effect.timeoutFail({
          duration: s.pageTimeout,
          onTimeout: () =>
            new FetchFailure("timeout", url, `${url} did not answer within ${Duration.format(s.pageTimeout)}`)
        })
      )
    }

    /**
     * Turns a response into a page (HTML processed, text kept, documents extracted). With
     * `linksOnly` (map), documents are not extracted: only HTML has links.
     */
    const toPage = (
      op: WebOperation,
      res: FetchResult,
      o: PageOptions,
      linksOnly = false
    ): Effect.Effect<Scraped, PageFailure> =>
      Effect.gen(function*() {
        const formats = new Set(o.formats ?? defaultFormats)
        const base = {
          sourceURL: o.sourceURL,
          statusCode: res.status,
          ...(res.redirects.length > 0 ? { url: res.url } : {})
        }
        if (isHtml(res.mediaType) || (res.mediaType === "" && /^\s*</.test(Buffer.from(res.body.subarray(0, 256)).toString("latin1")))) {
          const { text } = decodePage(res.body, res.charset)
          const page = processHtml(text, res.url, o)
          return {
            finalUrl: res.url,
            links: page.links,
            page: {
              ...(formats.has("markdown") ? { markdown: page.markdown } : {}),
              ...(formats.has("html") ? { html: page.html } : formats.has("rawHtml") ? { html: text } : {}),
              ...(formats.has("links") ? { links: [...page.links] } : {}),
              metadata: {
                ...(page.title !== undefined ? { title: page.title } : {}),
                ...(page.description !== undefined ? { description: page.description } : {}),
                ...(page.language !== undefined ? { language: page.language } : {}),
                ...base
              }
            }
          }
        }
        if (isText(res.mediaType)) {
          const { text } = decodePage(res.body, res.charset)
          return {
            finalUrl: res.url,
            links: [],
            page: {
              ...(formats.has("markdown") ? { markdown: text.trim() } : {}),
              ...(formats.has("links") ? { links: [] } : {}),
              metadata: base
            }
          }
        }
        if (linksOnly) return { finalUrl: res.url, links: [], page: { metadata: base } }
        const file: Upload.UploadFile = {
          name: fileName(res.url, res.mediaType),
          data: res.body,
          ...(res.mediaType !== "" ? { type: res.mediaType } : {})
        }
        const result = yield* upload.extract(file).pipe(
          Effect.mapError((e) => new PageFailure(extractionError(op, e), res.status, res.url))
        )
        if (!result.status) {
          return yield* Effect.fail(
            new PageFailure(
              new RagError.BadRequest({
                endpoint: endpoint(op),
                message: `${file.name}: ${result.error || "the document could not be extracted"}`
              }),
              res.status,
              res.url
            )
          )
        }
        return {
          finalUrl: res.url,
          links: [],
          page: {
            ...(formats.has("markdown") ? { markdown: result.content } : {}),
            ...(formats.has("links") ? { links: [] } : {}),
            metadata: base
          }
        }
      })

    /** Fetches and processes one page. */
    const scrapePage = (op: WebOperation, url: string, o: PageOptions, linksOnly = false) =>
      fetchPage(url, { headers: o.headers, mobile: o.mobile, polite: true }).pipe(
        Effect.mapError((e) => new PageFailure(fetchError(op, e, s.maxBodyBytes), undefined, undefined)),
        Effect.flatMap((res) => toPage(op, res, o, linksOnly))
      )

    // ---------------------------------------------------------------------------
    // Robots and sitemaps
    // ---------------------------------------------------------------------------

    /** A robots.txt reader with a cache (one per crawl or map). */
    const robotsReader = () => {
      const cache = new Map<string, Robots.Robots>()
      return (url: URL): Effect.Effect<Robots.Robots> => {
        if (!s.respectRobots) return Effect.succeed(Robots.allowAll)
        const cached = cache.get(url.origin)
        if (cached) return Effect.succeed(cached)
        const robotsUrl = `${url.origin}/robots.txt`
        return fetchPage(robotsUrl, { polite: true, accept: "text/plain,*/*;q=0.5" }).pipe(
          Effect.map((res) =>
            Robots.fromResponse(robotsUrl, res.status, Buffer.from(res.body).toString("utf8"), s.userAgent)
          ),
          Effect.catchAll((e) =>
            Effect.succeed(
              e.reason === "too_large" || e.reason === "blocked"
                ? Robots.allowAll
                // a site that cannot be reached is not one whose robots.txt disallows
                : { ...Robots.disallowAll(`${robotsUrl}: ${e.message}`), unreachable: e.reason === "unreachable" || e.reason === "timeout" }
            )
          ),
          Effect.tap((robots) =>
            Effect.sync(() => {
              cache.set(url.origin, robots)
              if (robots.crawlDelayMs !== undefined) crawlDelays.set(url.host, robots.crawlDelayMs)
            })
          )
        )
      }
    }

    /** The page URLs of the site's sitemaps (robots.txt `Sitemap:` lines, else `/sitemap.xml`). */
    const sitemapUrls = (start: URL, robots: Robots.Robots): Effect.Effect<Array<string>> =>
      Effect.gen(function*() {
        const queue = robots.sitemaps.length > 0 ? [...robots.sitemaps] : [`${start.origin}/sitemap.xml`]
        const read = new Set<string>()
        const urls: Array<string> = []
        while (queue.length > 0 && read.size < s.maxSitemaps) {
          const next = queue.shift()!
          if (read.has(next)) continue
          read.add(next)
          const res = yield* Effect.option(fetchPage(next, { polite: true, accept: "application/xml,text/xml,*/*;q=0.5" }))
          if (Option.isNone(res) || res.value.status < 200 || res.value.status >= 300) continue
          const entries = parseSitemap(res.value.body, s.maxBodyBytes)
          urls.push(...entries.urls)
          queue.push(...entries.sitemaps)
        }
        return urls
      })

    // ---------------------------------------------------------------------------
    // Scrape
    // ---------------------------------------------------------------------------

    const precheckUrl = (op: WebOperation, input: string) =>
      Effect.gen(function*() {
        const url = parseHttpUrl(input)
        if (url === undefined) {
          return yield* new RagError.BadRequest({
            endpoint: endpoint(op),
            message: `not an http(s) URL: ${input}`,
            code: "invalid_url"
          })
        }
        const blocked = yield* Effect.promise(() => precheck(s.policy, url.hostname))
        if (blocked) return yield* new RagError.BadRequest({ endpoint: endpoint(op), message: blocked.message, code: "blocked" })
        return url
      })

    const scrape = Effect.fn("LocalWeb.scrape")(function*(request: Web.ScrapeRequest) {
      const url = yield* precheckUrl("scrape", request.url)
      const invalid = checkScrapeOptions("scrape", request)
      if (invalid) return yield* invalid
      url.hash = ""
      const scraped = yield* scrapePage("scrape", url.href, { ...request, sourceURL: request.url }).pipe(
        Effect.mapError((f) => f.error)
      )
      return { success: true, data: scraped.page } satisfies Web.ScrapeResponse as Web.ScrapeResponse
    })

    // ---------------------------------------------------------------------------
    // Crawl
    // ---------------------------------------------------------------------------

    /** Drops finished jobs past their expiry, with their spilled pages. */
    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.forEach(
        [...jobs.values()].filter((job) => job.finished && job.expiresAt < now),
        store.remove,
        { discard: true }
      ))
    // expired jobs go even when nobody calls the engine
    yield* sweep.pipe(Effect.repeat(Schedule.spaced("1 minute")), Effect.interruptible, Effect.forkIn(scope))

    /**
     * Records a page of a job (in `slot`, else the next one): written to the job's spill file.
     * A page over `pageBytes` is recorded as a failed page instead (the result is then false);
     * a page that cannot be written fails the job.
     */
    const recordPage = (job: Job, page: Web.CrawlPage, slot?: number): Effect.Effect<boolean, string> =>
      store.record(job, page, slot).pipe(
        Effect.as(true),
        Effect.catchAll((e) => {
          if (e._tag === "SpillFailed") return Effect.fail(e.message)
          const sourceURL = page.metadata.sourceURL ?? ""
          const tooLarge = new RagError.PayloadTooLarge({
            endpoint: `GET ${sourceURL}`,
            message: `page_too_large: the page is ${e.bytes} bytes as JSON, over the ${e.limit} bytes of one crawl status batch (pageBytes, the LocalWeb option)`,
            code: "page_too_large",
            limit: e.limit
          })
          return store.record(
            job,
            failedPage(sourceURL, new PageFailure(tooLarge, page.metadata.statusCode, page.metadata.url ?? sourceURL)),
            slot
          ).pipe(
            Effect.as(false),
            Effect.catchAll((e2) => Effect.fail(e2._tag === "SpillFailed" ? e2.message : "a failed page is too large"))
          )
        })
      )

    const failedPage = (sourceURL: string, f: PageFailure): Web.CrawlPage => ({
      metadata: {
        sourceURL,
        ...(f.statusCode !== undefined ? { statusCode: f.statusCode } : {}),
        ...(f.finalUrl !== undefined && f.finalUrl !== sourceURL ? { url: f.finalUrl } : {}),
        error: f.error.message
      }
    })

    /**
     * The crawl itself: breadth-first, level by level (each level in discovery order), within
     * the limits of {@link CrawlScope} (see its fields for the three depth models).
     */
    const runCrawl = (
      job: Job,
      start: URL,
      request: Web.CrawlRequest,
      scope: CrawlScope,
      filter: PathFilter
    ): Effect.Effect<void, string> =>
      Effect.gen(function*() {
        const limit = request.limit ?? s.defaultLimit
        const mode = scope.sitemap ?? "include"
        const hops = scope.maxHops
        const robotsOf = robotsReader()
        const keyOf = (url: URL): string => {
          if (scope.ignoreQueryParameters) url.search = ""
          return normalize(url)
        }
        const seen = new Set<string>([keyOf(start)])
        const startRobots = yield* robotsOf(start)
        if (!startRobots.isAllowed(start.href)) {
          const reason = "reason" in startRobots ? `: ${String(startRobots.reason)}` : ""
          if ("unreachable" in startRobots && startRobots.unreachable === true) {
            return yield* Effect.fail(`cannot reach ${start.origin}${reason}`)
          }
          return yield* Effect.fail(`robots.txt disallows the start URL ${start.href}${reason}`)
        }
        const maxPathDepth = scope.maxPathDepth === undefined ? undefined : scope.maxPathDepth + pathDepth(start)
        const startPath = start.pathname

        /** Whether the crawl may go to a URL at all (site, path, patterns); robots is checked in `admit`. */
        const inScope = (url: URL): boolean =>
          (scope.externalLinks === true || sameSite(start, url, scope.subdomains ?? false)) &&
          (scope.childPathsOnly !== true || !sameSite(start, url, true) || url.pathname.startsWith(startPath)) &&
          (maxPathDepth === undefined || pathDepth(url) <= maxPathDepth) &&
          passes(filter, url)

        /** Keeps the links worth fetching, in order, marking them seen. */
        const admit = (links: ReadonlyArray<string>): Effect.Effect<Array<string>> =>
          Effect.gen(function*() {
            const out: Array<string> = []
            for (const link of links) {
              const url = parseHttpUrl(link)
              if (url === undefined) continue
              url.hash = ""
              if (!inScope(url)) continue
              const key = keyOf(url)
              if (seen.has(key)) continue
              const robots = yield* robotsOf(url)
              if (!robots.isAllowed(url.href)) continue
              seen.add(key)
              out.push(url.href)
            }
            return out
          })

        const sitemap = mode === "skip" ? [] : yield* sitemapUrls(start, startRobots)
        /** The normal forms of the sitemap's URLs (`only` records nothing else but the start page). */
        const listed = new Set(sitemap.flatMap((u) => {
          const url = parseHttpUrl(u)
          return url === undefined ? [] : [keyOf(url)]
        }))
        const recorded = (url: string): boolean =>
          mode !== "only" || url === start.href || listed.has(keyOf(new URL(url)))
        let attempted = 0

        /** Fetches a level; returns the links of its pages that answered below 400. */
        const fetchLevel = (batch: ReadonlyArray<string>) =>
          Effect.forEach(
            batch,
            (url) =>
              scrapePage("crawlStart", url, { ...request.scrapeOptions, sourceURL: url }).pipe(
                Effect.either,
                Effect.flatMap((result): Effect.Effect<ReadonlyArray<string>, string> => {
                  const keep = recorded(url)
                  if (result._tag === "Left") {
                    if (!keep) return Effect.succeed([])
                    job.total++
                    return Effect.as(recordPage(job, failedPage(url, result.left)), [])
                  }
                  const finalKey = keyOf(new URL(result.right.finalUrl))
                  if (finalKey !== keyOf(new URL(url)) && seen.has(finalKey)) return Effect.succeed([]) // a redirect to a page already taken
                  seen.add(finalKey)
                  const status = result.right.page.metadata.statusCode ?? 200
                  if (status >= 400) {
                    // reported with its status, never as a document
                    if (!keep) return Effect.succeed([])
                    job.total++
                    return Effect.as(
                      recordPage(
                        job,
                        failedPage(url, new PageFailure(
                          new RagError.UnexpectedStatus({ endpoint: `GET ${url}`, message: `HTTP ${status}`, status }),
                          status,
                          result.right.finalUrl
                        ))
                      ),
                      []
                    )
                  }
                  const { links, page } = result.right
                  if (!keep) return Effect.succeed(links)
                  job.total++
                  return recordPage(job, page).pipe(
                    // counted as completed only when it is served (not refused as too large)
                    Effect.map((served) => {
                      if (served) job.completed++
                      return links
                    })
                  )
                })
              ),
            { concurrency: s.concurrency }
          ).pipe(Effect.map((links) => links.flat()))

        // Link hops: the sitemap seeds nothing; its URLs come after the link crawl, and only when
        // that crawl exhausted the site's links (else a listed page may lie beyond the limit).
        // Discovery order and path depth: the start page and the sitemap's URLs are level 0.
        let level: Array<string> = [start.href]
        if (hops === undefined && mode !== "skip") level.push(...(yield* admit(sitemap)))
        let exhausted = true
        for (let depth = 0; level.length > 0; depth++) {
          const batch = level.slice(0, limit - attempted)
          attempted += batch.length
          const links = yield* fetchLevel(batch)
          if (batch.length < level.length || attempted >= limit) {
            exhausted = false
            break
          }
          const stop = (hops !== undefined && depth >= hops) ||
            (scope.maxDiscoveryDepth !== undefined && depth >= scope.maxDiscoveryDepth) ||
            (hops === undefined && mode === "only")
          const next = yield* admit(links)
          if (stop) {
            exhausted = next.length === 0
            break
          }
          level = next
        }
        if (hops !== undefined && mode !== "skip" && exhausted && attempted < limit) {
          const orphans = yield* admit(sitemap)
          const batch = orphans.slice(0, limit - attempted)
          attempted += batch.length
          yield* fetchLevel(batch)
        }
      })

    const crawlWith = Effect.fn("LocalWeb.crawlWith")(function*(request: Web.CrawlRequest, crawlScope: CrawlScope) {
      yield* sweep
      const start = yield* precheckUrl("crawlStart", request.url)
      start.hash = ""
      const invalid = checkScrapeOptions("crawlStart", request.scrapeOptions)
      if (invalid) return yield* invalid
      const filter = yield* Effect.try({
        try: () => compileFilter(request.includePaths, request.excludePaths),
        catch: (e) => new RagError.BadRequest({ endpoint: endpoint("crawlStart"), message: (e as Error).message })
      })
      const job = yield* newJob(start.href)
      yield* runJob(job, runCrawl(job, start, request, crawlScope, filter))
      return { success: true, id: job.id, url: start.href } satisfies Web.CrawlStarted as Web.CrawlStarted
    })

    /** A new job record, registered. */
    const newJob = (url: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.create(url, now + s.retentionMs))

    /** Runs a job's work in the background (in the layer's scope); its end sets the job's status. */
    const runJob = (job: Job, work: Effect.Effect<void, string>) =>
      Effect.gen(function*() {
        const finish = (exit: Exit.Exit<void, string>) =>
          Effect.flatMap(Clock.currentTimeMillis, (end) =>
            Effect.suspend(() => {
              job.finished = true
              job.expiresAt = end + s.retentionMs
              if (Exit.isSuccess(exit)) {
                job.status = "completed"
              } else if (Exit.isInterrupted(exit)) {
                job.status = "cancelled"
              } else {
                job.status = "failed"
                job.error = Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.pretty(exit.cause))
              }
              // a cancelled job's pages are released at once; the others' when they expire
              return store.seal(job).pipe(
                Effect.zipRight(job.status === "cancelled" ? store.free(job) : Effect.void),
                Effect.zipRight(Deferred.succeed(job.done, undefined))
              )
            }))
        job.fiber = yield* work.pipe(
          Effect.onExit(finish),
          Effect.catchAllCause(() => Effect.void),
          Effect.forkIn(scope)
        )
      })

    const crawl = (request: Web.CrawlRequest) => crawlWith(request, { maxHops: request.maxDepth ?? s.defaultMaxDepth })

    const batchScrape = Effect.fn("LocalWeb.batchScrape")(function*(
      urls: ReadonlyArray<string>,
      options: Web.ScrapeOptions = {}
    ) {
      yield* sweep
      const invalid = checkScrapeOptions("scrape", options)
      if (invalid) return yield* invalid
      const targets: Array<URL> = []
      for (const input of urls) {
        const url = parseHttpUrl(input)
        if (url === undefined) {
          return yield* new RagError.BadRequest({ endpoint: endpoint("scrape"), message: `not an http(s) URL: ${input}`, code: "invalid_url" })
        }
        url.hash = ""
        targets.push(url)
      }
      // the address policy, once per host: a refused URL is a failed page and the others are
      // scraped; a batch of refused URLs only is refused as a scrape of one is
      const hosts = [...new Set(targets.map((t) => t.hostname))]
      const refusals = new Map<string, RagError.BadRequest>()
      yield* Effect.forEach(
        hosts,
        (host) =>
          Effect.promise(() => precheck(s.policy, host)).pipe(Effect.map((refusal) => {
            if (refusal !== undefined) {
              refusals.set(host, new RagError.BadRequest({ endpoint: endpoint("scrape"), message: refusal.message, code: "blocked" }))
            }
          })),
        { concurrency: 8, discard: true }
      )
      if (refusals.size === hosts.length && hosts.length > 0) return yield* refusals.get(hosts[0]!)!
      const job = yield* newJob(targets[0]?.href ?? "")
      // one slot per URL: pages in the order of the request, whatever order they finish in
      store.reserve(job, targets.length)
      const run = Effect.forEach(
        targets,
        (target, slot) => {
          const url = target.href
          const refusal = refusals.get(target.hostname)
          const page = refusal === undefined
            ? scrapePage("scrape", url, { ...options, sourceURL: url })
            : Effect.fail(new PageFailure(refusal, undefined, undefined))
          return page.pipe(
            Effect.either,
            Effect.flatMap((result) => {
              job.total++
              if (result._tag === "Left") return recordPage(job, failedPage(url, result.left), slot)
              return Effect.map(recordPage(job, result.right.page, slot), (served) => {
                if (served) job.completed++
              })
            })
          )
        },
        { concurrency: s.concurrency, discard: true }
      )
      yield* runJob(job, run)
      return { success: true, id: job.id, url: job.url } satisfies Web.CrawlStarted as Web.CrawlStarted
    })

    const findJob = (op: WebOperation, id: string) =>
      Effect.flatMap(sweep, () => {
        const job = jobs.get(id)
        return job
          ? Effect.succeed(job)
          : Effect.fail(new RagError.NotFound({ endpoint: endpoint(op), message: `no crawl job ${id}` }))
      })

    /** The job record with the batch of pages from `skip`, read back from the spill file. */
    const record = (job: Job, skip: number): Effect.Effect<Web.CrawlJob, RagError.ApiError> =>
      Effect.suspend(() => {
        // one moment's view of the job: its state, then (in `read`, before any I/O) the pages
        // visible; a job that ends while the pages are read back is not reported ended with
        // only part of its pages and a `next`
        const { status, total, completed, expiresAt, error } = job
        return store.read(job, skip).pipe(
          Effect.mapError((e) =>
            new RagError.ServerError({
              endpoint: endpoint("crawlStatus"),
              message: `cannot read the pages of crawl job ${job.id}: ${e.message}`,
              status: 500
            })
          ),
          Effect.map((batch) => ({
            status,
            total,
            completed,
            creditsUsed: completed,
            expiresAt: new Date(expiresAt).toISOString(),
            next: batch.next !== undefined ? nextCursor(job.id, batch.next) : null,
            data: batch.pages,
            ...(error !== undefined ? { error } : {})
          }))
        )
      })

    const crawlStatus = (idOrNext: string): Effect.Effect<Web.CrawlJob, RagError.ApiError> => {
      const { id, skip } = parseCursor(idOrNext)
      return Effect.flatMap(findJob("crawlStatus", id), (job) => record(job, skip)).pipe(
        Effect.withSpan("LocalWeb.crawlStatus")
      )
    }

    // as the remote client: the pages of the finished job (a running one is waited for)
    const crawlPages = (id: string): Stream.Stream<Web.CrawlPage, RagError.ApiError | RagError.TaskFailed> =>
      Stream.unwrap(Effect.as(
        waitForCrawl(id),
        Stream.paginateChunkEffect(id, (cursor) =>
          Effect.map(crawlStatus(cursor), (job) =>
            [Chunk.fromIterable(job.data), Option.fromNullable(job.next)] as const))
      )).pipe(Stream.withSpan("LocalWeb.crawlPages"))

    const waitForCrawl = (id: string, waitOptions?: Web.WaitOptions) =>
      Effect.flatMap(findJob("crawlStatus", id), (job) =>
        Web.pollUntilDone(
          endpoint("crawlStatus"),
          id,
          Effect.zipRight(Deferred.await(job.done), crawlStatus(id)),
          waitOptions
        )).pipe(Effect.withSpan("LocalWeb.waitForCrawl"))

    const cancel = (id: string): Effect.Effect<Web.CancelResponse, RagError.ApiError> =>
      Effect.gen(function*() {
        const job = yield* findJob("crawlCancel", id)
        if (job.finished) return { status: job.status, success: job.status === "cancelled" }
        if (job.fiber) yield* Fiber.interrupt(job.fiber)
        yield* Deferred.await(job.done)
        return { status: "cancelled", success: true }
      }).pipe(Effect.withSpan("LocalWeb.cancel"))

    // ---------------------------------------------------------------------------
    // Map
    // ---------------------------------------------------------------------------

    const map = (request: Web.MapRequest) => mapWith(request, request.ignoreSitemap === true ? "skip" : "include")

    const mapWith = Effect.fn("LocalWeb.mapWith")(function*(request: Web.MapRequest, sitemapMode: SitemapMode) {
      const start = yield* precheckUrl("map", request.url)
      start.hash = ""
      const includeSubdomains = request.includeSubdomains ?? false
      const limit = request.limit ?? defaultMapLimit
      const robotsOf = robotsReader()
      const found = new Map<string, string>() // normal form → URL as first seen
      const queued = new Set<string>()
      /** The site's URL of a link (fragment removed), or undefined when it is off-site. */
      const onSite = (link: string): URL | undefined => {
        const url = parseHttpUrl(link)
        if (url === undefined || !sameSite(start, url, includeSubdomains)) return undefined
        url.hash = ""
        return url
      }
      const add = (url: URL) => {
        const key = normalize(url)
        if (!found.has(key)) found.set(key, url.href)
      }
      /** The URLs not queued yet for fetching, marked queued. */
      const enqueue = (urls: ReadonlyArray<URL>) =>
        urls.filter((url) => {
          const key = normalize(url)
          if (queued.has(key)) return false
          queued.add(key)
          return true
        })
      add(start)
      enqueue([start])
      const startRobots = yield* robotsOf(start)
      const fromSitemaps = sitemapMode === "skip"
        ? []
        : (yield* sitemapUrls(start, startRobots)).flatMap((u) => onSite(u) ?? [])
      for (const url of fromSitemaps) add(url)
      // enough links already: no need to read pages (a search may still need them)
      const enough = () => request.search === undefined && found.size >= limit
      let level = sitemapMode === "only" ? [] : [start]
      let fetched = 0
      for (let depth = 0; level.length > 0 && fetched < s.mapMaxPages && !enough(); depth++) {
        const batch: Array<string> = []
        for (const url of level) {
          if (batch.length + fetched >= s.mapMaxPages) break
          const robots = yield* robotsOf(url)
          if (robots.isAllowed(url.href)) batch.push(url.href)
        }
        if (batch.length === 0) break
        fetched += batch.length
        const results = yield* Effect.forEach(
          batch,
          (u) => Effect.option(scrapePage("map", u, { formats: ["links"], sourceURL: u }, true)),
          { concurrency: s.concurrency }
        )
        const links = results.flatMap((r) => (Option.isSome(r) ? r.value.links.flatMap((l) => onSite(l) ?? []) : []))
        for (const url of links) add(url)
        level = enqueue(depth === 0 ? [...links, ...fromSitemaps] : links)
      }
      const terms = (request.search ?? "").toLowerCase().split(/\s+/).filter((t) => t !== "")
      // robots.txt-disallowed URLs are not listed (unless `respectRobots: false`)
      const allowed: Array<string> = []
      for (const u of found.values()) {
        const url = new URL(u)
        if ((yield* robotsOf(url)).isAllowed(url.href)) allowed.push(u)
      }
      const links = allowed.filter((u) => {
        let text = u.toLowerCase()
        try {
          text = decodeURIComponent(u).toLowerCase()
        } catch {
          // a malformed escape: match the URL as written
        }
        return terms.every((t) => text.includes(t))
      })
      return { success: true, links: links.slice(0, limit) } satisfies Web.MapResponse as Web.MapResponse
    })

    const running = Effect.sync(() => {
      let n = 0
      for (const job of jobs.values()) if (!job.finished) n++
      return n
    })

    return { crawl, crawlWith, batchScrape, crawlStatus, crawlPages, waitForCrawl, cancel, map, mapWith, scrape, running }
  })

/**
 * The local web engine as the {@link Web.Web} layer, and as {@link LocalWeb} (the same service
 * with {@link Service.crawlWith}). Scoped: background crawls are interrupted and connections
 * closed when the layer is released. Needs {@link Upload.Upload} for non-HTML pages (e.g.
 * `LocalFiles.layer()`).
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
