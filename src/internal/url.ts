/**
 * URL handling of the crawler: parsing with a scheme check, normalisation for deduplication
 * and site membership (the include/exclude path patterns are in
 * `engines/web/internal/path-filter.ts`). Shared by the web engine and the ingest pipeline (which
 * deduplicates URL sources the same way).
 */

/** The schemes the engine ever fetches. */
export const allowedSchemes: ReadonlySet<string> = new Set(["http:", "https:"])

/** Parses an absolute http(s) URL (optionally against a base); undefined for anything else. */
export const parseHttpUrl = (input: string, base?: string | URL): URL | undefined => {
  try {
    const url = base === undefined ? new URL(input.trim()) : new URL(input.trim(), base)
    return allowedSchemes.has(url.protocol) && url.hostname !== "" ? url : undefined
  } catch {
    return undefined
  }
}

// Unreserved characters (RFC 3986 §2.3) that some sites percent-encode needlessly.
const unreserved = /%(4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|3[0-9]|2D|2E|5F|7E)/gi

/**
 * The normal form of a URL, used to deduplicate: scheme and host lower-cased, default port
 * dropped (WHATWG `URL` does both), fragment dropped, needlessly encoded unreserved characters
 * decoded, remaining escapes upper-cased, a trailing slash dropped (except the root path),
 * query parameters sorted (stable: equal keys keep their order) and an empty query removed.
 */
export const normalize = (url: URL): string => {
  const u = new URL(url.href)
  u.hash = ""
  let path = u.pathname
    .replace(unreserved, (m) => String.fromCharCode(parseInt(m.slice(1), 16)))
    .replace(/%[0-9a-f]{2}/gi, (m) => m.toUpperCase())
  if (path.length > 1 && path.endsWith("/")) path = path.replace(/\/+$/, "") || "/"
  u.pathname = path
  const params = [...u.searchParams.entries()]
  if (params.length === 0) {
    u.search = ""
  } else {
    const sorted = new URLSearchParams(params.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    u.search = sorted.toString()
  }
  return u.href
}

/** Normalises a string URL; undefined when it is not an http(s) URL. */
export const normalizeString = (input: string, base?: string | URL): string | undefined => {
  const url = parseHttpUrl(input, base)
  return url === undefined ? undefined : normalize(url)
}

/** The host without a leading `www.`, for site comparisons. */
const siteHost = (hostname: string): string => hostname.toLowerCase().replace(/^www\./, "")

/**
 * Whether `url` belongs to the site of `start`: the same host (a `www.` prefix ignored, any
 * port; http and https alike) or, with `includeSubdomains`, a subdomain of it.
 */
export const sameSite = (start: URL, url: URL, includeSubdomains = false): boolean => {
  const a = siteHost(start.hostname)
  const b = siteHost(url.hostname)
  if (a === b) return start.port === url.port
  return includeSubdomains && b.endsWith(`.${a}`)
}

/**
 * The depth of a URL's path as Firecrawl v1 counts it for `maxDepth`: its non-empty segments,
 * `index.html` and `index.php` not counted (`/` is 0, `/blog/` 1, `/blog/post-1` 2).
 */
export const pathDepth = (url: URL): number =>
  url.pathname.split("/").filter((x) => x !== "" && x !== "index.php" && x !== "index.html").length
