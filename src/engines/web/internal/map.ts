/**
 * Map: the links of a site, from its sitemaps and from a few of its pages (breadth-first, at
 * most `mapMaxPages`), without those robots.txt disallows, filtered by the request's search
 * terms. The state of one map is a {@link Found} (links found, pages queued).
 */
import { Effect, Option } from "effect"
import type * as Web from "../../../api/Web.js"
import * as WebCrawlScope from "../../../api/WebCrawlScope.js"
import { normalize, parseHttpUrl, sameSite } from "../../../internal/url.js"
import type { Politeness, RobotsReader } from "./politeness.js"
import type { Scraper } from "./scrape.js"
import type { Settings } from "./settings.js"
import { sitemapUrls } from "./sitemap.js"

/** What a map needs of its engine. */
export interface MapDeps {
  readonly settings: Settings
  readonly polite: Politeness
  readonly scraper: Scraper
}

/** The links one map found so far and the pages it queued for reading. */
interface Found {
  /** Normal form → the URL as first seen. */
  readonly links: Map<string, string>
  /** The site's URL of a link (fragment removed), or undefined when it is off-site. */
  readonly onSite: (link: string) => URL | undefined
  /** Adds a link (once per normal form). */
  readonly add: (url: URL) => void
  /** The URLs not queued yet for reading, marked queued. */
  readonly enqueue: (urls: ReadonlyArray<URL>) => Array<URL>
}

const makeFound = (start: URL, includeSubdomains: boolean): Found => {
  const links = new Map<string, string>()
  const queued = new Set<string>()
  const onSite = (link: string): URL | undefined => {
    const url = parseHttpUrl(link)
    if (url === undefined || !sameSite(start, url, includeSubdomains)) return undefined
    url.hash = ""
    return url
  }
  const add = (url: URL) => {
    const key = normalize(url)
    if (!links.has(key)) links.set(key, url.href)
  }
  const enqueue = (urls: ReadonlyArray<URL>) =>
    urls.filter((url) => {
      const key = normalize(url)
      if (queued.has(key)) return false
      queued.add(key)
      return true
    })
  return { links, onSite, add, enqueue }
}

/**
 * Reads pages breadth-first from `start` (none with sitemap `only`) for their links, at most
 * `mapMaxPages`, until `enough` links are found; the sitemap's URLs are queued after the start
 * page's links.
 */
const readPages = (
  deps: MapDeps,
  found: Found,
  robotsOf: RobotsReader,
  first: ReadonlyArray<URL>,
  fromSitemaps: ReadonlyArray<URL>,
  enough: () => boolean
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const s = deps.settings
    let level = first
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
        (u) => Effect.option(deps.scraper.scrapePage("map", u, { formats: ["links"], sourceURL: u }, true)),
        { concurrency: s.concurrency }
      )
      const links = results.flatMap((r) => (Option.isSome(r) ? r.value.links.flatMap((l) => found.onSite(l) ?? []) : []))
      for (const url of links) found.add(url)
      level = found.enqueue(depth === 0 ? [...links, ...fromSitemaps] : links)
    }
  })

/** The links robots.txt allows (unless `respectRobots: false`) that contain every search term. */
const listed = (found: Found, robotsOf: RobotsReader, search: string | undefined): Effect.Effect<Array<string>> =>
  Effect.gen(function*() {
    const terms = (search ?? "").toLowerCase().split(/\s+/).filter((t) => t !== "")
    const allowed: Array<string> = []
    for (const u of found.links.values()) {
      const url = new URL(u)
      if ((yield* robotsOf(url)).isAllowed(url.href)) allowed.push(u)
    }
    return allowed.filter((u) => {
      let text = u.toLowerCase()
      try {
        text = decodeURIComponent(u).toLowerCase()
      } catch {
        // a malformed escape: match the URL as written
      }
      return terms.every((t) => text.includes(t))
    })
  })

/** `mapWith` of the engine. */
export const makeMapWith = (deps: MapDeps) =>
  Effect.fn("LocalWeb.mapWith")(function*(request: Web.MapRequest, sitemapMode: WebCrawlScope.SitemapMode) {
    const start = yield* deps.scraper.precheckUrl("map", request.url)
    start.hash = ""
    const limit = request.limit ?? WebCrawlScope.defaultMapLimit
    const robotsOf = deps.polite.robotsReader()
    const found = makeFound(start, request.includeSubdomains ?? false)
    found.add(start)
    found.enqueue([start])
    const startRobots = yield* robotsOf(start)
    const fromSitemaps = sitemapMode === "skip"
      ? []
      : (yield* sitemapUrls(deps.settings, deps.polite, start, startRobots)).flatMap((u) => found.onSite(u) ?? [])
    for (const url of fromSitemaps) found.add(url)
    // enough links already: no need to read pages (a search may still need them)
    const enough = () => request.search === undefined && found.links.size >= limit
    yield* readPages(deps, found, robotsOf, sitemapMode === "only" ? [] : [start], fromSitemaps, enough)
    const links = yield* listed(found, robotsOf, request.search)
    return { success: true, links: links.slice(0, limit) } satisfies Web.MapResponse as Web.MapResponse
  })
