/**
 * The local web engine against a real website on loopback (see `site.ts`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Exit, Fiber, Layer, Scope, Stream } from "effect"
import * as Upload from "../../../src/api/Upload.js"
import * as Web from "../../../src/api/Web.js"
import * as LocalWeb from "../../../src/engines/web/LocalWeb.js"
import * as RagError from "../../../src/RagError.js"
import { type Site, sitePages, slowMs, startSite } from "./site.js"

/** A document engine that records what it is given (the PDF path without the cost of pdf.js). */
const recordingUpload = () => {
  const files: Array<Upload.UploadFile> = []
  const notUsed = (name: string) =>
    Effect.fail(new RagError.BadRequest({ endpoint: name, message: `${name} is not used by the web engine` }))
  const layer = Layer.succeed(
    Upload.Upload,
    Upload.Upload.of({
      extract: (file) =>
        Effect.sync(() => {
          files.push(file)
          return { status: true, content: `Extracted ${file.name} (${file.data.byteLength} bytes)`, type: "pdf", error: "" }
        }),
      extractChunks: () => notUsed("extractChunks"),
      files: () => notUsed("files")
    })
  )
  return { files, layer }
}

/** Test settings: loopback allowed, short delays and time-outs. */
const testOptions: LocalWeb.Options = {
  allowHosts: ["127.0.0.1"],
  politenessDelay: "2 millis",
  pageTimeout: "2 seconds",
  concurrency: 4
}

const engine = (options: LocalWeb.Options = {}, upload = recordingUpload().layer) =>
  LocalWeb.make({ ...testOptions, ...options }).pipe(Effect.provide(upload))

/** Crawls to the end; returns the final record and all pages. */
const crawlAll = (web: Web.Service, request: Web.CrawlRequest) =>
  Effect.gen(function*() {
    const started = yield* web.crawl(request)
    const job = yield* web.waitForCrawl(started.id)
    const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(web.crawlPages(started.id)))
    return { started, job, pages }
  })

const paths = (site: Site, pages: ReadonlyArray<Web.CrawlPage>) =>
  pages.map((p) => (p.metadata.sourceURL ?? "").replace(site.origin, "")).sort()

/**
 * The requests the site has seen from the engine, once it has read every request sent so far: a
 * request the engine wrote just before a cancel reaches the site's handler a few event-loop turns
 * later (later still on a busy host), so the test's own request is answered first.
 */
const settledRequests = (site: Site) =>
  Effect.promise(async () => {
    await fetch(`${site.origin}/__settled`).then((r) => r.arrayBuffer())
    return site.requests.filter((r) => r !== "/__settled").length
  })

const depth1 = ["/about", "/blog/", "/files/report.pdf", "/latin1", "/missing", "/old-page", "/sjis", "/slow"]
const everything = sitePages

describe("LocalWeb crawl", () => {
  it.scopedLive("crawls the whole site breadth-first: robots, sitemap, dedup, failures recorded", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const upload = recordingUpload()
      const web = yield* engine({}, upload.layer)
      const { started, job, pages } = yield* crawlAll(web, { url: `${site.origin}/` })
      expect(started.success).toBe(true)
      expect(started.url).toBe(`${site.origin}/`)
      expect(paths(site, pages)).toEqual(everything)
      expect(job.status).toBe("completed")
      // /missing (404) and /slow (time-out) failed; the job did not
      expect(job.total).toBe(everything.length)
      expect(job.completed).toBe(everything.length - 2)
      expect(job.creditsUsed).toBe(everything.length - 2)
      expect(Date.parse(job.expiresAt ?? "")).toBeGreaterThan(Date.now())
      expect(job.next).toBeNull()
      const by = (path: string) => pages.find((p) => p.metadata.sourceURL === `${site.origin}${path}`)!
      expect(by("/missing").metadata).toMatchObject({ statusCode: 404, error: "HTTP 404" })
      expect(by("/missing").markdown).toBeUndefined()
      expect(by("/slow").metadata.error).toContain("did not answer within")
      expect(by("/slow").metadata.statusCode).toBeUndefined()
      // the redirect is followed and reported
      expect(by("/old-page").metadata).toMatchObject({ statusCode: 200, url: `${site.origin}/moved`, title: "Moved" })
      expect(by("/old-page").markdown).toBe("# Moved\n\nThe page moved here.")
      // non-HTML went through the document engine, bytes intact
      expect(by("/files/report.pdf").markdown).toBe(`Extracted report.pdf (${site.pdf.byteLength} bytes)`)
      expect(upload.files.map((f) => [f.name, f.type])).toEqual([["report.pdf", "application/pdf"]])
      expect(Buffer.from(upload.files[0]!.data).equals(Buffer.from(site.pdf))).toBe(true)
      // robots.txt honoured: the disallowed page was never requested; nothing was fetched twice
      expect(site.requests).not.toContain("/private/secret")
      const fetched = site.requests.filter((r) => r !== "/robots.txt" && r !== "/sitemap.xml")
      expect(new Set(fetched).size).toBe(fetched.length)
      expect(site.userAgents.get("/")).toBe(LocalWeb.defaultUserAgent)
    }))

  it.scopedLive("maxDepth bounds the link hops; a sitemap page beyond them is not returned, a sitemap-only page once links run out", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const at = (maxDepth: number) =>
        Effect.map(crawlAll(web, { url: `${site.origin}/`, maxDepth }), ({ pages }) => paths(site, pages))
      expect(yield* at(0)).toEqual(["/"])
      expect(yield* at(1)).toEqual(["/", ...depth1].sort())
      // /team/deeper is in the sitemap but four hops deep; /orphan is known only to the sitemap,
      // and links reach further than the limit: it may lie beyond it, so it is not fetched
      expect(yield* at(2)).toEqual(["/", ...depth1, "/blog/post-1", "/blog/post-2?b=2&a=1", "/team"].sort())
      expect(yield* at(3)).toEqual(everything.filter((p) => p !== "/team/deeper" && p !== "/orphan"))
      // at four hops the links run out: every page is found, then the sitemap's /orphan
      expect(yield* at(4)).toEqual(everything)
    }))

  it.scopedLive("crawlWith: the Firecrawl depth models and the sitemap modes", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const crawlWith = (scope: LocalWeb.CrawlScope, url = `${site.origin}/`) =>
        Effect.gen(function*() {
          const started = yield* web.crawlWith({ url }, scope)
          yield* web.waitForCrawl(started.id)
          return paths(site, Chunk.toReadonlyArray(yield* Stream.runCollect(web.crawlPages(started.id))))
        })
      // discovery order: the start page and the sitemap's pages are depth 0
      expect(yield* crawlWith({ maxDiscoveryDepth: 0 })).toEqual(["/", "/about", "/orphan", "/team/deeper"])
      expect(yield* crawlWith({ maxDiscoveryDepth: 1 })).toEqual(
        ["/", ...depth1, "/orphan", "/team", "/team/deeper"].sort()
      )
      expect(yield* crawlWith({ maxDiscoveryDepth: 1, sitemap: "skip" })).toEqual(["/", ...depth1].sort())
      expect(yield* crawlWith({ sitemap: "only" })).toEqual(["/", "/about", "/orphan", "/team/deeper"])
      // path depth (v1 maxDepth): segments beyond the start URL's, whatever the links
      expect(yield* crawlWith({ maxPathDepth: 1 })).toEqual(
        ["/", "/about", "/blog/", "/latin1", "/missing", "/old-page", "/orphan", "/sjis", "/slow", "/team"].sort()
      )
      // child paths only (Firecrawl's crawlEntireDomain: false)
      expect(yield* crawlWith({ childPathsOnly: true }, `${site.origin}/team`)).toEqual(["/team", "/team/deep", "/team/deeper"])
      // link hops with the sitemap as the only source of returned pages
      expect(yield* crawlWith({ maxHops: 1, sitemap: "only" })).toEqual(["/", "/about"])
    }))

  it.scopedLive("limit takes the first pages in breadth-first discovery order", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const { job, pages } = yield* crawlAll(web, { url: site.origin, limit: 3 })
      expect(paths(site, pages)).toEqual(["/", "/about", "/blog/"])
      expect(job.total).toBe(3)
    }))

  it.scopedLive("includePaths and excludePaths filter discovered URLs (the start URL is always crawled)", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine()
      const blog = yield* crawlAll(web, { url: `${site.origin}/`, includePaths: ["^/blog"] })
      expect(paths(site, blog.pages)).toEqual(["/", "/blog/", "/blog/post-1", "/blog/post-2?b=2&a=1"])
      const noTeam = yield* crawlAll(web, {
        url: `${site.origin}/`,
        excludePaths: ["^/team", "\\.pdf$", "^/slow"]
      })
      expect(paths(site, noTeam.pages)).toEqual(
        everything.filter((p) => !p.startsWith("/team") && p !== "/files/report.pdf" && p !== "/slow")
      )
      const bad = yield* Effect.flip(web.crawl({ url: site.origin, includePaths: ["(unclosed"] }))
      expect(bad._tag).toBe("BadRequest")
    }))

  it.scopedLive("respectRobots: false crawls what robots.txt disallows; a disallowed start fails the job", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const ignoring = yield* engine({ respectRobots: false })
      const { pages } = yield* crawlAll(ignoring, { url: `${site.origin}/`, maxDepth: 1 })
      expect(paths(site, pages)).toContain("/private/secret")
      // robots.txt is not read, the default /sitemap.xml still is
      expect(paths(site, pages)).toEqual(["/", ...depth1, "/private/secret"].sort())
      expect(site.requests).not.toContain("/robots.txt")

      const blocked = yield* engine({ userAgent: "blocked-bot/1.0" })
      const started = yield* blocked.crawl({ url: `${site.origin}/` })
      const failure = yield* Effect.flip(blocked.waitForCrawl(started.id))
      expect(failure._tag).toBe("TaskFailed")
      const record = yield* blocked.crawlStatus(started.id)
      expect(record.status).toBe("failed")
      expect(record.error).toContain("robots.txt disallows the start URL")
    }))

  it.scopedLive("pages a large job through next cursors that crawlStatus understands", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine({ pageSize: 4 })
      const { job, pages } = yield* crawlAll(web, { url: `${site.origin}/` })
      expect(job.data).toHaveLength(4)
      expect(job.next).toBe(LocalWeb.nextCursor(LocalWeb.parseCursor(job.next!).id, 4))
      const second = yield* web.crawlStatus(job.next!)
      expect(second.data).toHaveLength(4)
      expect(second.data[0]).toEqual(pages[4])
      expect(pages).toHaveLength(everything.length)
      expect(paths(site, pages)).toEqual(everything)
      // the last batch has no next
      let cursor: string | null = job.next
      let last = job
      while (cursor !== null) {
        last = yield* web.crawlStatus(cursor)
        cursor = last.next
      }
      expect(last.data.length).toBeGreaterThan(0)
      expect(last.data.length).toBeLessThanOrEqual(4)
    }))

  it.scopedLive("cancel interrupts a running crawl; unknown ids are NotFound", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const web = yield* engine({ politenessDelay: "200 millis", pageTimeout: "5 seconds" })
      const started = yield* web.crawl({ url: `${site.origin}/` })
      const waiting = yield* Effect.fork(Effect.either(web.waitForCrawl(started.id)))
      yield* Effect.sleep("300 millis")
      expect((yield* web.crawlStatus(started.id)).status).toBe("scraping")
      const cancelled = yield* web.cancel(started.id)
      expect(cancelled).toEqual({ status: "cancelled", success: true })
      const waited = yield* Fiber.join(waiting)
      expect(waited._tag === "Left" && waited.left._tag).toBe("TaskFailed")
      const record = yield* web.crawlStatus(started.id)
      expect(record.status).toBe("cancelled")
      expect(record.total).toBeLessThan(everything.length)
      const requestsAtCancel = yield* settledRequests(site)
      yield* Effect.sleep("400 millis")
      expect(yield* settledRequests(site)).toBe(requestsAtCancel)
      expect((yield* Effect.flip(web.crawlStatus("nope")))._tag).toBe("NotFound")
      expect((yield* Effect.flip(web.cancel("nope")))._tag).toBe("NotFound")
      expect((yield* Effect.flip(web.waitForCrawl("nope")))._tag).toBe("NotFound")
    }))

  it.scopedLive("closing the layer's scope interrupts its crawls", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        LocalWeb.layer({ ...testOptions, politenessDelay: "200 millis" }).pipe(Layer.provide(recordingUpload().layer)),
        scope
      )
      const web = Context.get(context, Web.Web)
      const started = yield* web.crawl({ url: `${site.origin}/` })
      yield* Effect.sleep("300 millis")
      expect((yield* web.crawlStatus(started.id)).status).toBe("scraping")
      yield* Scope.close(scope, Exit.void)
      const requestsAtClose = yield* settledRequests(site)
      yield* Effect.sleep("500 millis")
      expect(yield* settledRequests(site)).toBe(requestsAtClose)
      expect((yield* web.crawlStatus(started.id)).status).toBe("cancelled")
    }))
})
