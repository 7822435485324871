/**
 * robots.txt, read with `robots-parser` (RFC 9309 matching: longest match wins, `*` and `$`
 * wildcards, user-agent groups, `Crawl-delay`, `Sitemap`).
 *
 * How a robots.txt response is read (RFC 9309 §2.3.1): 2xx is parsed; 4xx means no rules
 * (everything allowed); 5xx or no response means the site cannot be crawled for now, so
 * everything is disallowed.
 */
import { createRequire } from "node:module"

interface RobotsTxt {
  isAllowed(url: string, ua?: string): boolean | undefined
  getCrawlDelay(ua?: string): number | undefined
  getSitemaps(): Array<string>
}

// robots-parser is CommonJS and its typings do not declare the default export callable
const robotsParser = createRequire(import.meta.url)("robots-parser") as (url: string, text: string) => RobotsTxt

/** The rules of one origin, as the engine uses them. */
export interface Robots {
  /** Whether the user agent may fetch `url`. */
  readonly isAllowed: (url: string) => boolean
  /** The `Crawl-delay` for the user agent in milliseconds, when given. */
  readonly crawlDelayMs: number | undefined
  /** The `Sitemap:` URLs. */
  readonly sitemaps: ReadonlyArray<string>
}

/** No rules: everything allowed. */
export const allowAll: Robots = { isAllowed: () => true, crawlDelayMs: undefined, sitemaps: [] }

/** Everything disallowed (robots.txt unreachable or a server error). */
export const disallowAll = (reason: string): Robots & { readonly reason: string } => ({
  isAllowed: () => false,
  crawlDelayMs: undefined,
  sitemaps: [],
  reason
})

/** The product token of a user agent string (`effect-rag/0.1 (...)` → `effect-rag`). */
export const productToken = (userAgent: string): string => userAgent.split(/[/\s]/)[0] ?? userAgent

/** Parses the robots.txt found at `robotsUrl` for `userAgent`. */
export const parseRobots = (robotsUrl: string, text: string, userAgent: string): Robots => {
  const robots = robotsParser(robotsUrl, text)
  const token = productToken(userAgent)
  const delay = robots.getCrawlDelay(token)
  return {
    // undefined means the URL is not on the robots.txt's origin: the caller checks per origin
    isAllowed: (url) => robots.isAllowed(url, token) !== false,
    crawlDelayMs: delay === undefined || !Number.isFinite(delay) || delay < 0 ? undefined : delay * 1000,
    sitemaps: robots.getSitemaps()
  }
}

/** Reads a robots.txt response by status (see the module comment). */
export const fromResponse = (robotsUrl: string, status: number, text: string, userAgent: string): Robots => {
  if (status >= 200 && status < 300) return parseRobots(robotsUrl, text, userAgent)
  if (status >= 400 && status < 500) return allowAll
  return disallowAll(`${robotsUrl} answered ${status}`)
}
