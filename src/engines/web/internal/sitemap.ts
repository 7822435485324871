/**
 * Sitemaps (sitemaps.org protocol): `<urlset>` (page URLs) and `<sitemapindex>` (more
 * sitemaps), gzip-compressed or not, parsed with fast-xml-parser. Plain-text sitemaps (one URL
 * a line) are read too.
 */
import { XMLParser } from "fast-xml-parser"
import { gunzipSync } from "node:zlib"

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
