/**
 * The crawl loop: breadth-first, level by level (each level in discovery order), within the
 * limits of a `WebCrawlScope.CrawlScope` (its three depth models, the sitemap mode, the link
 * scope). Its state is one {@link CrawlRun} per job: the {@link Frontier} (URLs taken, what may
 * be taken next), which pages are recorded, and how many were attempted. Redirects to a page
 * already taken are dropped.
 */
import { type Either, Effect } from "effect"
import type * as Web from "../../../api/Web.js"
import type * as WebCrawlScope from "../../../api/WebCrawlScope.js"
import { normalize, parseHttpUrl, pathDepth, sameSite } from "../../../internal/url.js"
import * as RagError from "../../../RagError.js"
import { endpoint, failedPage, PageFailure } from "./errors.js"
import type { Job } from "./jobs.js"
import type { Jobs } from "./job-service.js"
import { compileFilter, passes, type PathFilter } from "./path-filter.js"
import type { Politeness, RobotsReader } from "./politeness.js"
import type { Robots } from "./robots.js"
import { checkScrapeOptions, type Scraped, type Scraper } from "./scrape.js"
import type { Settings } from "./settings.js"
import { sitemapUrls } from "./sitemap.js"

/** What a crawl needs of its engine. */
export interface CrawlDeps {
  readonly settings: Settings
  readonly polite: Politeness
  readonly scraper: Scraper
  readonly jobs: Jobs
}

/** The URLs a crawl has taken, and which links it may take next. */
interface Frontier {
  /** The normal form of a URL that dedupes it (the query dropped with `ignoreQueryParameters`). */
  readonly keyOf: (url: URL) => string
  /** Normal forms taken so far (queued, fetched, or reached by a redirect). */
  readonly seen: Set<string>
  /** Keeps the links worth fetching, in order, marking them seen. */
  readonly admit: (links: ReadonlyArray<string>) => Effect.Effect<Array<string>>
}

const makeFrontier = (start: URL, scope: WebCrawlScope.CrawlScope, filter: PathFilter, robotsOf: RobotsReader): Frontier => {
  const keyOf = (url: URL): string => {
    if (scope.ignoreQueryParameters) url.search = ""
    return normalize(url)
  }
  const seen = new Set<string>([keyOf(start)])
  const maxPathDepth = scope.maxPathDepth === undefined ? undefined : scope.maxPathDepth + pathDepth(start)
  const startPath = start.pathname

  /** Whether the crawl may go to a URL at all (site, path, patterns); robots is checked in `admit`. */
  const inScope = (url: URL): boolean =>
    (scope.externalLinks === true || sameSite(start, url, scope.subdomains ?? false)) &&
    (scope.childPathsOnly !== true || !sameSite(start, url, true) || url.pathname.startsWith(startPath)) &&
    (maxPathDepth === undefined || pathDepth(url) <= maxPathDepth) &&
    passes(filter, url)

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

  return { keyOf, seen, admit }
}

/** One crawl job's state. */
interface CrawlRun {
  readonly deps: CrawlDeps
  readonly job: Job
  readonly start: URL
  readonly request: Web.CrawlRequest
  readonly scope: WebCrawlScope.CrawlScope
  readonly frontier: Frontier
  /** The page URLs of the site's sitemaps (none with sitemap `skip`). */
  readonly sitemap: ReadonlyArray<string>
  /** Whether a page is recorded (`only` records nothing else but the start page and the sitemap's URLs). */
  readonly recorded: (url: string) => boolean
  /** Pages fetched or being fetched (at most the limit). */
  attempted: number
}

/** Fails the job when robots.txt disallows the start URL (or the site cannot be reached). */
const checkStart = (start: URL, robots: Robots): Effect.Effect<void, string> => {
  if (robots.isAllowed(start.href)) return Effect.void
  const reason = "reason" in robots ? `: ${String(robots.reason)}` : ""
  if ("unreachable" in robots && robots.unreachable === true) return Effect.fail(`cannot reach ${start.origin}${reason}`)
  return Effect.fail(`robots.txt disallows the start URL ${start.href}${reason}`)
}

/** The run's state: the start page checked against robots.txt, the sitemap read unless skipped. */
const startRun = (
  deps: CrawlDeps,
  job: Job,
  start: URL,
  request: Web.CrawlRequest,
  scope: WebCrawlScope.CrawlScope,
  filter: PathFilter
): Effect.Effect<CrawlRun, string> =>
  Effect.gen(function*() {
    const mode = scope.sitemap ?? "include"
    const robotsOf = deps.polite.robotsReader()
    const frontier = makeFrontier(start, scope, filter, robotsOf)
    const startRobots = yield* robotsOf(start)
    yield* checkStart(start, startRobots)
    const sitemap = mode === "skip" ? [] : yield* sitemapUrls(deps.settings, deps.polite, start, startRobots)
    /** The normal forms of the sitemap's URLs. */
    const listed = new Set(sitemap.flatMap((u) => {
      const url = parseHttpUrl(u)
      return url === undefined ? [] : [frontier.keyOf(url)]
    }))
    const recorded = (url: string): boolean =>
      mode !== "only" || url === start.href || listed.has(frontier.keyOf(new URL(url)))
    return { deps, job, start, request, scope, frontier, sitemap, recorded, attempted: 0 }
  })

/** Records a page that failed, or answered `status` (4xx/5xx), when the run records it. */
const recordFailure = (run: CrawlRun, url: string, keep: boolean, failure: PageFailure): Effect.Effect<ReadonlyArray<string>, string> => {
  if (!keep) return Effect.succeed([])
  run.job.total++
  return Effect.as(run.deps.jobs.recordPage(run.job, failedPage(url, failure)), [])
}

/** Takes the result of one fetched page: recorded (or not); returns its links to follow. */
const takePage = (
  run: CrawlRun,
  url: string,
  result: Either.Either<Scraped, PageFailure>
): Effect.Effect<ReadonlyArray<string>, string> => {
  const { frontier, job } = run
  const keep = run.recorded(url)
  if (result._tag === "Left") return recordFailure(run, url, keep, result.left)
  const finalKey = frontier.keyOf(new URL(result.right.finalUrl))
  if (finalKey !== frontier.keyOf(new URL(url)) && frontier.seen.has(finalKey)) return Effect.succeed([]) // a redirect to a page already taken
  frontier.seen.add(finalKey)
  const status = result.right.page.metadata.statusCode ?? 200
  if (status >= 400) {
    // reported with its status, never as a document
    const error = new RagError.UnexpectedStatus({ endpoint: `GET ${url}`, message: `HTTP ${status}`, status })
    return recordFailure(run, url, keep, new PageFailure(error, status, result.right.finalUrl))
  }
  const { links, page } = result.right
  if (!keep) return Effect.succeed(links)
  job.total++
  return run.deps.jobs.recordPage(job, page).pipe(
    // counted as completed only when it is served (not refused as too large)
    Effect.map((served) => {
      if (served) job.completed++
      return links
    })
  )
}

/** Fetches a level; returns the links of its pages that answered below 400. */
const fetchLevel = (run: CrawlRun, batch: ReadonlyArray<string>): Effect.Effect<Array<string>, string> =>
  Effect.forEach(
    batch,
    (url) =>
      run.deps.scraper.scrapePage("crawlStart", url, { ...run.request.scrapeOptions, sourceURL: url }).pipe(
        Effect.either,
        Effect.flatMap((result) => takePage(run, url, result))
      ),
    { concurrency: run.deps.settings.concurrency }
  ).pipe(Effect.map((links) => links.flat()))

/** Fetches the next URLs of `urls` within the page limit; returns their links. */
const fetchWithinLimit = (run: CrawlRun, urls: ReadonlyArray<string>, limit: number) => {
  const batch = urls.slice(0, limit - run.attempted)
  run.attempted += batch.length
  return Effect.map(fetchLevel(run, batch), (links) => ({ links, all: batch.length === urls.length }))
}

/**
 * The crawl itself, within the limits of its scope (see `WebCrawlScope.CrawlScope` for the three
 * depth models).
 */
const runCrawl = (
  deps: CrawlDeps,
  job: Job,
  start: URL,
  request: Web.CrawlRequest,
  scope: WebCrawlScope.CrawlScope,
  filter: PathFilter
): Effect.Effect<void, string> =>
  Effect.gen(function*() {
    const run = yield* startRun(deps, job, start, request, scope, filter)
    const limit = request.limit ?? deps.settings.defaultLimit
    const mode = scope.sitemap ?? "include"
    const hops = scope.maxHops
    const { admit } = run.frontier
    // Link hops: the sitemap seeds nothing; its URLs come after the link crawl, and only when
    // that crawl exhausted the site's links (else a listed page may lie beyond the limit).
    // Discovery order and path depth: the start page and the sitemap's URLs are level 0.
    let level: Array<string> = [start.href]
    if (hops === undefined && mode !== "skip") level.push(...(yield* admit(run.sitemap)))
    let exhausted = true
    for (let depth = 0; level.length > 0; depth++) {
      const { all, links } = yield* fetchWithinLimit(run, level, limit)
      if (!all || run.attempted >= limit) {
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
    if (hops !== undefined && mode !== "skip" && exhausted && run.attempted < limit) {
      yield* fetchWithinLimit(run, yield* admit(run.sitemap), limit)
    }
  })

/** `crawlWith` of the engine: the request checked, then the crawl as a background job. */
export const makeCrawlWith = (deps: CrawlDeps) =>
  Effect.fn("LocalWeb.crawlWith")(function*(request: Web.CrawlRequest, crawlScope: WebCrawlScope.CrawlScope) {
    yield* deps.jobs.sweep
    const start = yield* deps.scraper.precheckUrl("crawlStart", request.url)
    start.hash = ""
    const invalid = checkScrapeOptions("crawlStart", request.scrapeOptions)
    if (invalid) return yield* invalid
    const filter = yield* Effect.try({
      try: () => compileFilter(request.includePaths, request.excludePaths),
      catch: (e) => new RagError.BadRequest({ endpoint: endpoint("crawlStart"), message: (e as Error).message })
    })
    const job = yield* deps.jobs.newJob(start.href)
    yield* deps.jobs.runJob(job, runCrawl(deps, job, start, request, crawlScope, filter))
    return { success: true, id: job.id, url: start.href } satisfies Web.CrawlStarted as Web.CrawlStarted
  })
