/**
 * The local web engine: scrape, map and the SSRF guard, against the loopback site of `site.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Upload from "../../../src/api/Upload.js"
import * as Web from "../../../src/api/Web.js"
import * as LocalFiles from "../../../src/engines/documents/LocalFiles.js"
import * as LocalWeb from "../../../src/engines/web/LocalWeb.js"
import { isAllowed, isPublicAddress } from "../../../src/engines/web/internal/ssrf.js"
import { normalizeString, sameSite } from "../../../src/internal/url.js"
import * as RagError from "../../../src/RagError.js"
import { slowMs, startSite } from "./site.js"

const noDocuments = Layer.succeed(
  Upload.Upload,
  Upload.Upload.of({
    extract: (file) => Effect.fail(new RagError.BadRequest({ endpoint: "extract", message: `unexpected ${file.name}` })),
    extractChunks: (file) => Effect.fail(new RagError.BadRequest({ endpoint: "extractChunks", message: `unexpected ${file.name}` })),
    files: (file) => Effect.fail(new RagError.BadRequest({ endpoint: "files", message: `unexpected ${file.name}` }))
  })
)

const loopback: LocalWeb.Options = { allowHosts: ["127.0.0.1"], politenessDelay: "1 millis", pageTimeout: "2 seconds" }

/** The engine, built in the test's scope (with its document engine). */
const engine = (options: LocalWeb.Options = loopback, upload: Layer.Layer<Upload.Upload> = noDocuments) =>
  Effect.map(Layer.build(LocalWeb.layer(options).pipe(Layer.provide(upload))), (context) => Context.get(context, Web.Web))

describe("LocalWeb scrape", () => {
  it.scopedLive("main content as Markdown, with metadata; links absolute", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const about = yield* web.scrape({ url: `${site.origin}/about`, formats: ["markdown", "links"] })
      expect(about.success).toBe(true)
      expect(about.data.markdown).toBe(
        `# About\n\nWe write *tests*. Meet [the team](${site.origin}/team).\n\n` +
          `| Name | Role |\n| --- | --- |\n| Ada | Lead |\n\n` +
          `![inline](data:image/png;base64,iVBORw0KGgo=)![logo](${site.origin}/logo.png)`
      )
      expect(about.data.links).toEqual([`${site.origin}/`, `${site.origin}/about`, `${site.origin}/team`])
      expect(about.data.html).toBeUndefined()
      expect(about.data.metadata).toEqual({
        title: "About",
        description: "About description",
        language: "en",
        sourceURL: `${site.origin}/about`,
        statusCode: 200
      })

      const home = yield* web.scrape({ url: `${site.origin}/`, formats: ["links"] })
      expect(home.data.markdown).toBeUndefined()
      expect(home.data.links).toEqual(
        ["/", "/about", "/blog/", "/old-page", "/private/secret", "/missing", "/latin1", "/sjis", "/slow", "/files/report.pdf"]
          .map((p) => `${site.origin}${p}`)
          .concat(["https://example.invalid/elsewhere"])
      )
    }))

  it.scopedLive("onlyMainContent, includeTags, excludeTags, removeBase64Images, html and rawHtml", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const url = `${site.origin}/about`
      const whole = yield* web.scrape({ url, onlyMainContent: false })
      expect(whole.data.markdown).toMatch(/^\[Home\]\(http:\/\/127\.0\.0\.1:\d+\/\) \| \[About\]/)
      expect(whole.data.markdown).toContain(`Footer text [about](${site.origin}/about)`)
      const table = yield* web.scrape({ url, includeTags: ["table"], formats: ["markdown", "html"] })
      expect(table.data.markdown).toBe("| Name | Role |\n| --- | --- |\n| Ada | Lead |")
      expect(table.data.html).toBe("<table><tr><th>Name</th><th>Role</th></tr><tr><td>Ada</td><td>Lead</td></tr></table>")
      const noTable = yield* web.scrape({ url, excludeTags: ["table", "h1"], removeBase64Images: true })
      expect(noTable.data.markdown).toBe(`We write *tests*. Meet [the team](${site.origin}/team).\n\n![logo](${site.origin}/logo.png)`)
      const raw = yield* web.scrape({ url, formats: ["rawHtml"] })
      expect(raw.data.html).toContain("<footer>Footer text")
      const bad = yield* Effect.flip(web.scrape({ url, formats: ["screenshot"] }))
      expect(bad._tag).toBe("BadRequest")
    }))

  it.scopedLive("decodes legacy charsets from the header and from <meta>", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const latin = yield* web.scrape({ url: `${site.origin}/latin1` })
      expect(latin.data.markdown).toBe("# Caf\u00e9\n\nNa\u00efve cr\u00e8me br\u00fbl\u00e9e \u2014 \u20ac5.")
      expect(latin.data.metadata).toMatchObject({ title: "Caf\u00e9", language: "fr" })
      const sjis = yield* web.scrape({ url: `${site.origin}/sjis` })
      expect(sjis.data.markdown).toBe("# \u65e5\u672c\u8a9e\n\n\u3053\u3093\u306b\u3061\u306f\u4e16\u754c")
      expect(sjis.data.metadata.title).toBe("\u65e5\u672c\u8a9e")
    }))

  it.scopedLive("redirects are followed and reported; 404 pages answer with their status; text stays text", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const moved = yield* web.scrape({ url: `${site.origin}/old-page` })
      expect(moved.data.metadata).toMatchObject({ sourceURL: `${site.origin}/old-page`, url: `${site.origin}/moved`, statusCode: 200 })
      const missing = yield* web.scrape({ url: `${site.origin}/missing` })
      expect(missing.data.metadata.statusCode).toBe(404)
      expect(missing.data.markdown).toBe("# Not found")
      const text = yield* web.scrape({ url: `${site.origin}/plain.txt` })
      expect(text.data.markdown).toBe("Just text.")
    }))

  it.scopedLive("custom headers and the mobile user agent reach the site", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      yield* web.scrape({ url: `${site.origin}/team`, mobile: true })
      expect(site.userAgents.get("/team")).toBe(LocalWeb.defaultMobileUserAgent)
      yield* web.scrape({ url: `${site.origin}/team/deep`, headers: { "User-Agent": "custom/1.0" } })
      expect(site.userAgents.get("/team/deep")).toBe("custom/1.0")
    }))

  it.scopedLive("caps: body size, redirects, time-out", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine({ ...loopback, maxBodyBytes: 50_000, maxRedirects: 3 })
      const big = yield* Effect.flip(web.scrape({ url: `${site.origin}/big` }))
      expect(big._tag).toBe("PayloadTooLarge")
      const loop = yield* Effect.flip(web.scrape({ url: `${site.origin}/loop` }))
      expect(loop).toMatchObject({ _tag: "BadRequest", code: "too_many_redirects" })
      expect(site.requests.filter((r) => r === "/loop")).toHaveLength(4)
      const slow = yield* Effect.flip(web.scrape({ url: `${site.origin}/slow` }))
      expect(slow).toMatchObject({ _tag: "TransportError", reason: "timeout" })
      const patient = yield* engine({ ...loopback, pageTimeout: `${slowMs * 3} millis` })
      const done = yield* patient.scrape({ url: `${site.origin}/slow` })
      expect(done.data.markdown).toBe("# Slow\n\nWorth the wait.")
    }))

  it.scopedLive("a PDF goes through the local document engine", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine(loopback, LocalFiles.layer())
      const pdf = yield* web.scrape({ url: `${site.origin}/files/report.pdf` })
      expect(pdf.data.metadata).toMatchObject({ statusCode: 200, sourceURL: `${site.origin}/files/report.pdf` })
      expect(pdf.data.markdown).toContain("Hello, world!")
    }))
})

describe("LocalWeb SSRF guard", () => {
  it.scopedLive("refuses loopback, private and link-local destinations unless allowed", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const strict = yield* engine({ politenessDelay: "1 millis" })
      const refused = yield* Effect.flip(strict.scrape({ url: `${site.origin}/` }))
      expect(refused).toMatchObject({ _tag: "BadRequest", code: "blocked" })
      // a host name is checked on the address it resolves to
      const port = new URL(site.origin).port
      const byName = yield* Effect.flip(strict.scrape({ url: `http://localhost:${port}/` }))
      expect(byName).toMatchObject({ _tag: "BadRequest", code: "blocked" })
      const crawl = yield* Effect.flip(strict.crawl({ url: `${site.origin}/` }))
      expect(crawl).toMatchObject({ _tag: "BadRequest", code: "blocked" })
      const map = yield* Effect.flip(strict.map({ url: `${site.origin}/` }))
      expect(map._tag).toBe("BadRequest")
      expect(site.requests).toEqual([])
      for (const url of ["http://10.1.2.3/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/"]) {
        expect(yield* Effect.flip(strict.scrape({ url }))).toMatchObject({ _tag: "BadRequest", code: "blocked" })
      }
      for (const url of ["file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "not a url"]) {
        expect(yield* Effect.flip(strict.scrape({ url }))).toMatchObject({ _tag: "BadRequest", code: "invalid_url" })
      }
      // every redirect hop is checked: an allowed site cannot bounce the engine to the metadata address
      const allowed = yield* engine()
      const bounced = yield* Effect.flip(allowed.scrape({ url: `${site.origin}/to-metadata` }))
      expect(bounced).toMatchObject({ _tag: "BadRequest", code: "blocked" })
      expect(bounced.message).toContain("169.254.169.254")
      // allowPrivate and host-name allow-list entries open loopback
      const open = yield* engine({ allowPrivate: true, politenessDelay: "1 millis" })
      expect((yield* open.scrape({ url: `http://localhost:${port}/team` })).data.metadata.title).toBe("Team")
      const named = yield* engine({ allowHosts: ["localhost"], politenessDelay: "1 millis" })
      expect((yield* named.scrape({ url: `http://localhost:${port}/team` })).data.metadata.title).toBe("Team")
    }))

  it("classifies addresses and allow-list entries", () => {
    expect(isPublicAddress("93.184.216.34")).toBe(true)
    expect(isPublicAddress("2606:4700::1111")).toBe(true)
    for (const a of ["127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "224.0.0.1"]) {
      expect(isPublicAddress(a)).toBe(false)
    }
    const policy = { allowPrivate: false, allowHosts: ["10.0.0.0/8", "*.corp.test", "::1"] }
    expect(isAllowed(policy, "x", "10.9.8.7")).toBe(true)
    expect(isAllowed(policy, "x", "192.168.0.1")).toBe(false)
    expect(isAllowed(policy, "wiki.corp.test", "192.168.0.1")).toBe(true)
    expect(isAllowed(policy, "[::1]", "::1")).toBe(true)
  })
})

describe("LocalWeb URL normalisation", () => {
  it("drops fragments and trailing slashes, sorts the query, lower-cases scheme and host", () => {
    expect(normalizeString("HTTP://Example.COM:80/a/b/?z=1&a=2#frag")).toBe("http://example.com/a/b?a=2&z=1")
    expect(normalizeString("https://example.com")).toBe("https://example.com/")
    expect(normalizeString("https://example.com/%7Euser/%c3%a9")).toBe("https://example.com/~user/%C3%A9")
    expect(normalizeString("https://example.com/?")).toBe("https://example.com/")
    expect(normalizeString("mailto:x@example.com")).toBeUndefined()
    expect(sameSite(new URL("https://www.example.com/"), new URL("https://example.com/x"))).toBe(true)
    expect(sameSite(new URL("https://example.com/"), new URL("https://docs.example.com/x"))).toBe(false)
    expect(sameSite(new URL("https://example.com/"), new URL("https://docs.example.com/x"), true)).toBe(true)
  })
})

describe("LocalWeb map", () => {
  it.scopedLive("lists the site's links from its sitemap and pages; search, limit, ignoreSitemap", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const all = yield* web.map({ url: `${site.origin}/` })
      const rel = (links: ReadonlyArray<string>) => links.map((l) => l.replace(site.origin, "")).sort()
      expect(all.success).toBe(true)
      expect(rel(all.links)).toEqual([
        "/",
        "/about",
        "/blog/",
        "/blog/post-1",
        "/blog/post-2?b=2&a=1",
        "/files/report.pdf",
        "/latin1",
        "/missing",
        "/old-page",
        "/orphan",
        "/sjis",
        "/slow",
        "/team",
        "/team/deeper"
      ])
      // robots.txt disallows /private/ (the home page links to it): not listed, unless robots is ignored
      expect(rel(all.links)).not.toContain("/private/secret")
      const ignoring = yield* engine({ ...loopback, respectRobots: false })
      expect(rel((yield* ignoring.map({ url: `${site.origin}/` })).links)).toContain("/private/secret")
      expect(all.links[0]).toBe(`${site.origin}/`)
      const blog = yield* web.map({ url: `${site.origin}/`, search: "blog" })
      expect(rel(blog.links)).toEqual(["/blog/", "/blog/post-1", "/blog/post-2?b=2&a=1"])
      const few = yield* web.map({ url: `${site.origin}/`, limit: 3 })
      expect(few.links).toEqual([`${site.origin}/`, `${site.origin}/about`, `${site.origin}/orphan`])
      const noSitemap = yield* web.map({ url: `${site.origin}/`, ignoreSitemap: true })
      expect(rel(noSitemap.links)).not.toContain("/orphan")
      expect(rel(noSitemap.links)).toContain("/team")
    }))
})
