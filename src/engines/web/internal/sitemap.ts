/**
 * Sitemaps (sitemaps.org protocol): `<urlset>` (page URLs) and `<sitemapindex>` (more
 * sitemaps), gzip-compressed or not, parsed with fast-xml-parser. Plain-text sitemaps (one URL
 * a line) are read too. {@link sitemapUrls} reads a site's sitemaps through the engine's paced
 * fetch.
 */
import { Effect, Option } from "effect"
import { XMLParser } from "fast-xml-parser"
import { gunzipSync } from "node:zlib"
import type { Politeness } from "./politeness.js"
import type { Robots } from "./robots.js"
import type { Settings } from "./settings.js"

/** What one sitemap document lists. */
export interface SitemapEntries {
  /** Page URLs (`<url><loc>`). */
  readonly urls: ReadonlyArray<string>
  /** Further sitemaps (`<sitemap><loc>`). */
  readonly sitemaps: ReadonlyArray<string>
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  processEntities: true,
  isArray: (name) => name === "url" || name === "sitemap",
  // never expand entities defined by the document (billion laughs)
  htmlEntities: false
})

const locs = (items: unknown): Array<string> =>
  Array.isArray(items)
    ? items.flatMap((item) => {
      const loc = (item as { loc?: unknown } | null)?.loc
      return typeof loc === "string" && loc.trim() !== "" ? [loc.trim()] : []
    })
    : []

/** Gunzips when the bytes are gzip (magic number), whatever the headers say. */
export const maybeGunzip = (data: Uint8Array, maxBytes: number): Uint8Array =>
  data[0] === 0x1f && data[1] === 0x8b ? new Uint8Array(gunzipSync(data, { maxOutputLength: maxBytes })) : data

/** Parses a sitemap document. Unparseable input lists nothing. */
export const parseSitemap = (data: Uint8Array, maxBytes: number): SitemapEntries => {
  let text: string
  try {
    text = new TextDecoder("utf-8").decode(maybeGunzip(data, maxBytes))
  } catch {
    return { urls: [], sitemaps: [] }
  }
  if (!/^\s*(<\?xml|<)/.test(text)) {
    const urls = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => /^https?:\/\//i.test(l))
    return { urls, sitemaps: [] }
  }
  try {
    const doc = parser.parse(text) as {
      urlset?: { url?: unknown }
      sitemapindex?: { sitemap?: unknown }
    }
    return { urls: locs(doc.urlset?.url), sitemaps: locs(doc.sitemapindex?.sitemap) }
  } catch {
    return { urls: [], sitemaps: [] }
  }
}

/**
 * The page URLs of a site's sitemaps (robots.txt `Sitemap:` lines, else `/sitemap.xml`), at most
 * `maxSitemaps` documents read, each fetched through the engine's paced fetch.
 */
export const sitemapUrls = (
  s: Settings,
  polite: Politeness,
  start: URL,
  robots: Robots
): Effect.Effect<Array<string>> =>
  Effect.gen(function*() {
    const queue = robots.sitemaps.length > 0 ? [...robots.sitemaps] : [`${start.origin}/sitemap.xml`]
    const read = new Set<string>()
    const urls: Array<string> = []
    while (queue.length > 0 && read.size < s.maxSitemaps) {
      const next = queue.shift()!
      if (read.has(next)) continue
      read.add(next)
      const res = yield* Effect.option(polite.fetchPage(next, { polite: true, accept: "application/xml,text/xml,*/*;q=0.5" }))
      if (Option.isNone(res) || res.value.status < 200 || res.value.status >= 300) continue
      const entries = parseSitemap(res.value.body, s.maxBodyBytes)
      urls.push(...entries.urls)
      queue.push(...entries.sitemaps)
    }
    return urls
  })
