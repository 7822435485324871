/**
 * Politeness: every request of the engine goes through here. Per host, the earliest time the
 * next request may start (the politeness delay, raised to the site's robots.txt `Crawl-delay`
 * up to `maxCrawlDelay`), the per-page time-out, and the robots.txt readers of crawls and maps
 * (which record each host's `Crawl-delay`).
 *
 * The state (the two per-host maps) belongs to one {@link Politeness}, made once per engine.
 */
import { Clock, Duration, Effect } from "effect"
import { parseHttpUrl } from "../../../internal/url.js"
import { type Agents, FetchFailure, type FetchResult, fetchUrl } from "./fetcher.js"
import * as Robots from "./robots.js"
import type { Settings } from "./settings.js"

/** How one request is made. */
export interface FetchSettings {
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly mobile?: boolean | undefined
  readonly accept?: string | undefined
  /** Wait for the host's turn first. */
  readonly polite: boolean
}

/** Reads (once per origin) the robots.txt of a URL's site. */
export type RobotsReader = (url: URL) => Effect.Effect<Robots.Robots>

/** The engine's paced fetch and its robots.txt readers. */
export interface Politeness {
  /** Fetches a URL: the host's turn (when `polite`), then the request, within the per-page time-out. */
  readonly fetchPage: (url: string, f: FetchSettings) => Effect.Effect<FetchResult, FetchFailure>
  /**
   * A robots.txt reader with its own cache (one per crawl or map); the `Crawl-delay` it reads
   * paces the host's later requests. Everything is allowed when `respectRobots` is off.
   */
  readonly robotsReader: () => RobotsReader
}

/** The politeness of one engine: its per-host state starts empty. */
export const makePoliteness = (s: Settings, agents: Agents): Politeness => {
  // per host: the earliest time the next request may start
  const nextStart = new Map<string, number>()
  // per host: the robots.txt Crawl-delay (ms), once read
  const crawlDelays = new Map<string, number>()

  /** Waits for the host's turn (politeness), then reserves the next slot. */
  const politeTurn = (host: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const delay = Math.max(s.politenessMs, Math.min(crawlDelays.get(host) ?? 0, s.maxCrawlDelayMs))
      const slot = Math.max(now, nextStart.get(host) ?? 0)
      nextStart.set(host, slot + delay)
      return slot > now ? Effect.sleep(Duration.millis(slot - now)) : Effect.void
    })

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
        (e) => resume(Effect.fail(e instanceof FetchFailure ? e : new FetchFailure("unreachable", url, String(e))))
      )
    })
    return (f.polite ? Effect.zipRight(politeTurn(host), request) : request).pipe(
      Effect.timeoutFail({
        duration: s.pageTimeout,
        onTimeout: () => new FetchFailure("timeout", url, `${url} did not answer within ${Duration.format(s.pageTimeout)}`)
      })
    )
  }

  const robotsReader = (): RobotsReader => {
    const cache = new Map<string, Robots.Robots>()
    return (url: URL): Effect.Effect<Robots.Robots> => {
      if (!s.respectRobots) return Effect.succeed(Robots.allowAll)
      const cached = cache.get(url.origin)
      if (cached) return Effect.succeed(cached)
      const robotsUrl = `${url.origin}/robots.txt`
      return fetchPage(robotsUrl, { polite: true, accept: "text/plain,*/*;q=0.5" }).pipe(
        Effect.map((res) => Robots.fromResponse(robotsUrl, res.status, Buffer.from(res.body).toString("utf8"), s.userAgent)),
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

  return { fetchPage, robotsReader }
}
