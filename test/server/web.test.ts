/**
 * The self-hosted server's web operations over real HTTP on loopback, in both routings: the
 * library's own REMOTE `Web` (and `Search`) clients talk to OUR server, which serves the local
 * web engine crawling the test website (`test/engines/web/site.ts`). The engine's page size
 * is 2, so every crawl crosses several `next` links that the server issued.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Redacted, Schema, Stream } from "effect"
import * as ApiHttp from "../../src/api/ApiHttp.js"
import { webCall } from "../../src/api/WebRoutes.js"
import * as Search from "../../src/api/Search.js"
import * as Web from "../../src/api/Web.js"
import * as LocalWeb from "../../src/engines/web/LocalWeb.js"
import type { WebRouting } from "../../src/RagConfig.js"
import * as RagError from "../../src/RagError.js"
import { type Site, sitePages, startSite } from "../engines/web/site.js"
import { clientLayer, serveOurs, testKey } from "../support/server.js"
import { engineOptions, localWeb, upload } from "./web-fixture.js"

/** The client options that point every web operation at our server, in a routing. */
const clientOptions = (url: string, webRouting: WebRouting) => ({ crawlUrl: url, webRouting })

/** The remote `Web` client against our server. */
const remoteWeb = (url: string, routing: WebRouting) => Effect.provide(Web.make, clientLayer(url, clientOptions(url, routing)))

/** The raw client, for bodies the typed clients would refuse to send. */
const rawClient = (url: string, routing: WebRouting) => Effect.provide(ApiHttp.ApiHttp, clientLayer(url, clientOptions(url, routing)))

const paths = (site: Site, pages: ReadonlyArray<Web.CrawlPage>) =>
  pages.map((p) => (p.metadata.sourceURL ?? "").replace(site.origin, "")).sort()

/** Every page a crawl of the site from `/` attempts. */
const everything = sitePages

const searchRequest: Search.SearchRequest = {
  params: {
    query: "what is effect?",
    chatModel: { provider: "openai", model: "gpt-4o-mini" },
    embeddingModel: { provider: "openai", model: "text-embedding-3-small" },
    focusMode: "webSearch",
    optimizationMode: "speed"
  }
}

for (const routing of ["firecrawl", "single"] as const) {
  describe(`server: web operations (${routing} routing)`, () => {
    it.scopedLive("scrape and map give what the local engine gives", () =>
      Effect.gen(function*() {
        const site = yield* startSite
        const url = yield* serveOurs(localWeb)
        const remote = yield* remoteWeb(url, routing)
        const direct = yield* LocalWeb.make(engineOptions).pipe(Effect.provide(upload))

        const request: Web.ScrapeRequest = { url: `${site.origin}/about`, formats: ["markdown", "html", "links"] }
        const viaServer = yield* remote.scrape(request)
        expect(viaServer).toEqual(yield* direct.scrape(request))
        expect(viaServer.data.markdown).toContain("We write *tests*")
        expect(viaServer.data.metadata).toMatchObject({ title: "About", description: "About description", language: "en", statusCode: 200 })
        // a redirect is followed and reported, through the wire too
        const moved = yield* remote.scrape({ url: `${site.origin}/old-page` })
        expect(moved.data.metadata).toMatchObject({ title: "Moved", url: `${site.origin}/moved`, sourceURL: `${site.origin}/old-page` })

        const mapped = yield* remote.map({ url: `${site.origin}/` })
        expect(mapped).toEqual(yield* direct.map({ url: `${site.origin}/` }))
        expect(mapped.links).toEqual(expect.arrayContaining(
          ["/", "/about", "/blog/", "/orphan", "/team", "/blog/post-1"].map((p) => `${site.origin}${p}`)
        ))
        expect((yield* remote.map({ url: `${site.origin}/`, search: "post" })).links).toEqual(
          expect.arrayContaining([`${site.origin}/blog/post-1`])
        )
      }))

    it.scopedLive("a crawl returns every page of the site across the server's next links (key sent to them)", () =>
      Effect.gen(function*() {
        const site = yield* startSite
        // with a key required, following a next link only works when it has the client's origin
        const url = yield* serveOurs(localWeb, { apiKey: Redacted.make(testKey) })
        const remote = yield* remoteWeb(url, routing)

        const started = yield* remote.crawl({ url: `${site.origin}/` })
        expect(started.success).toBe(true)
        expect(started.url).toBe(`${url}/v1/crawl/${started.id}`)

        const job = yield* remote.waitForCrawl(started.id, { interval: "50 millis" })
        expect(job.status).toBe("completed")
        expect(job.total).toBe(everything.length)
        expect(job.completed).toBe(everything.length - 2) // /missing (404) and /slow (time-out)
        // the first batch: two pages, and an absolute link on this server to the next one
        expect(job.data).toHaveLength(2)
        expect(job.next).toBe(`${url}/v1/crawl/${started.id}?skip=2`)

        const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(remote.crawlPages(started.id)))
        expect(paths(site, pages)).toEqual(everything)
        const missing = pages.find((p) => p.metadata.sourceURL === `${site.origin}/missing`)
        expect(missing?.metadata).toMatchObject({ statusCode: 404, error: "HTTP 404" })
        const about = pages.find((p) => p.metadata.sourceURL === `${site.origin}/about`)
        expect(about?.markdown).toContain("We write *tests*")
      }))

    it.scopedLive("a running crawl is cancelled; an unknown job is NotFound", () =>
      Effect.gen(function*() {
        const site = yield* startSite
        const url = yield* serveOurs(localWeb)
        const remote = yield* remoteWeb(url, routing)

        // /slow answers after the page time-out: the crawl is still running when cancelled
        const started = yield* remote.crawl({ url: `${site.origin}/slow` })
        const cancelled = yield* remote.cancel(started.id)
        expect(cancelled.status).toBe("cancelled")
        expect((yield* remote.crawlStatus(started.id)).status).toBe("cancelled")
        const failed = yield* Effect.flip(remote.waitForCrawl(started.id, { interval: "20 millis" }))
        expect(failed._tag === "TaskFailed" ? failed.status : failed._tag).toBe("cancelled")

        for (const lookup of [remote.crawlStatus("no-such-job"), remote.cancel("no-such-job")] as Array<Effect.Effect<unknown, RagError.ApiError>>) {
          const e = yield* Effect.flip(lookup)
          expect(e._tag).toBe("NotFound")
          expect(e.message).toContain("no crawl job no-such-job")
        }
        const pages = yield* Effect.flip(Stream.runCollect(remote.crawlPages("no-such-job")))
        expect(pages._tag).toBe("NotFound")
      }))

    it.scopedLive("bad requests are BadRequest naming the field; AI search with no Search service is a 501", () =>
      Effect.gen(function*() {
        const site = yield* startSite
        const url = yield* serveOurs(localWeb)
        const remote = yield* remoteWeb(url, routing)
        const http = yield* rawClient(url, routing)

        // a scrape body without `url`, sent through the route table of the routing
        const noUrl = yield* Effect.flip(
          http.json(webCall(routing, "scrape", { body: { formats: ["markdown"] } }), Web.ScrapeResponse)
        )
        expect(noUrl._tag).toBe("BadRequest")
        expect(noUrl.message).toMatch(/invalid request at url: is missing/)
        const badLimit = yield* Effect.flip(
          http.json(webCall(routing, "crawlStart", { body: { url: `${site.origin}/`, limit: -1 } }), Web.CrawlStarted)
        )
        expect(badLimit._tag).toBe("BadRequest")
        expect(badLimit.message).toContain("at limit")

        // what the engine refuses comes back as the same typed error
        const format = yield* Effect.flip(remote.scrape({ url: `${site.origin}/`, formats: ["screenshot"] }))
        expect(format._tag).toBe("BadRequest")
        expect(format.message).toContain("unsupported formats screenshot")
        const scheme = yield* Effect.flip(remote.map({ url: "ftp://127.0.0.1/" }))
        expect(scheme._tag).toBe("BadRequest")

        // no Search service behind the server: a 501, which the client reads as a ServerError
        const search = yield* Effect.provide(Search.make, clientLayer(url, clientOptions(url, routing)))
        const e = yield* Effect.flip(search.search(searchRequest))
        expect(e._tag).toBe("ServerError")
        expect(e._tag === "ServerError" ? e.status : 0).toBe(501)
        expect(e.message).toContain("no AI search service configured")
      }))
  })
}

describe("server: web envelopes and links", () => {
  it.scopedLive("a crawl start retried with the same Idempotency-Key gets the first job, in both routings", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const url = yield* serveOurs(localWeb)
      const start = (path: string, body: Record<string, unknown>, key?: string) =>
        Effect.promise(async () => {
          const r = await fetch(`${url}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
            body: JSON.stringify(body)
          })
          return (await r.json()) as { id: string }
        })
      const crawl = { url: `${site.origin}/`, limit: 2 }
      const first = yield* start("/v1/crawl", crawl, "key-1")
      const retry = yield* start("/v1/crawl", crawl, "key-1")
      expect(retry.id).toBe(first.id)
      // the same key through the single routing is the same call
      const enveloped = yield* start("/v1/web", { operation: "crawl_start", ...crawl }, "key-1")
      expect(enveloped.id).toBe(first.id)
      const other = yield* start("/v1/crawl", crawl, "key-2")
      const none = yield* start("/v1/crawl", crawl)
      expect(new Set([first.id, other.id, none.id]).size).toBe(3)
    }))

  it.scopedLive("single routing: an unknown or missing operation and a foreign next are 400; firecrawl: a bad skip", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const url = yield* serveOurs(localWeb)
      const http = yield* rawClient(url, "single")
      const post = (value: unknown) =>
        Effect.flip(http.json({ endpoint: "POST /v1/web", method: "POST", host: "crawl", path: "/v1/web", body: { _tag: "Json", value }, auth: "optional" }, Schema.Unknown))

      const unknownOp = yield* post({ operation: "screenshot", url: `${site.origin}/` })
      expect(unknownOp._tag).toBe("BadRequest")
      expect(unknownOp.message).toContain("at operation: unknown operation \"screenshot\"")
      const noOp = yield* post({ url: `${site.origin}/` })
      expect(noOp._tag).toBe("BadRequest")
      expect(noOp.message).toContain("at operation: is missing")
      const notJson = yield* Effect.flip(
        http.json({ endpoint: "POST /v1/web", method: "POST", host: "crawl", path: "/v1/web", body: { _tag: "Json", value: "not an object" }, auth: "optional" }, Schema.Unknown)
      )
      expect(notJson._tag).toBe("BadRequest")

      const remote = yield* remoteWeb(url, "single")
      const started = yield* remote.crawl({ url: `${site.origin}/blog/`, maxDepth: 1 })
      const job = yield* remote.waitForCrawl(started.id, { interval: "20 millis" })
      expect(job.next).toBe(`${url}/v1/crawl/${started.id}?skip=2`)
      // the next value must be a link of this job
      const foreign = yield* post({ operation: "crawl_status", id: started.id, next: `${url}/v1/crawl/other-job?skip=2` })
      expect(foreign._tag).toBe("BadRequest")
      expect(foreign.message).toContain("at next")
      const status = yield* post({ operation: "crawl_status" })
      expect(status.message).toContain("at id: is missing")
      // the issued link works when echoed back
      const second = yield* http.json(
        webCall("single", "crawlStatus", { id: started.id, next: job.next ?? "" }),
        Web.CrawlJob
      )
      expect(second.data.length).toBeGreaterThan(0)
      expect(second.data[0]).not.toEqual(job.data[0])

      // behind a TLS proxy, the links keep the scheme the client used
      const proxied = yield* Effect.promise(() =>
        fetch(`${url}/v1/crawl/${started.id}`, { headers: { "x-forwarded-proto": "https" } }).then((r) => r.json())
      )
      expect(proxied).toMatchObject({ next: `${url.replace("http://", "https://")}/v1/crawl/${started.id}?skip=2` })

      const firecrawl = yield* rawClient(url, "firecrawl")
      const badSkip = yield* Effect.flip(
        firecrawl.json(webCall("firecrawl", "crawlStatus", { id: started.id, next: `${url}/v1/crawl/${started.id}?skip=two` }), Web.CrawlJob)
      )
      expect(badSkip._tag).toBe("BadRequest")
      expect(badSkip.message).toContain("at skip")
    }))

  it.scopedLive("another engine's opaque cursors are carried in the server's own links, in both routings", () =>
    Effect.gen(function*() {
      const page = (n: number): Web.CrawlPage => ({ markdown: `page ${n}`, metadata: { sourceURL: `https://example.test/${n}` } })
      const batches: Record<string, Web.CrawlJob> = {
        "job-1": { status: "completed", total: 3, completed: 3, next: "opaque/after 1", data: [page(1)] },
        "opaque/after 1": { status: "completed", total: 3, completed: 3, next: "opaque/after 2", data: [page(2)] },
        "opaque/after 2": { status: "completed", total: 3, completed: 3, next: null, data: [page(3)] }
      }
      const notUsed = (name: string) => Effect.fail(new RagError.BadRequest({ endpoint: name, message: `${name} is not used here` }))
      const engine = Layer.succeed(
        Web.Web,
        Web.Web.of({
          crawl: () => Effect.succeed({ success: true, id: "job-1" }),
          crawlStatus: (id) =>
            id in batches
              ? Effect.succeed(batches[id]!)
              : Effect.fail(new RagError.NotFound({ endpoint: "crawlStatus", message: `no crawl job ${id}` })),
          crawlPages: () => Stream.fail(new RagError.BadRequest({ endpoint: "crawlPages", message: "not used here" })),
          waitForCrawl: () => notUsed("waitForCrawl"),
          cancel: () => notUsed("cancel"),
          map: () => notUsed("map"),
          scrape: () => notUsed("scrape")
        })
      )
      const url = yield* serveOurs(engine)
      for (const routing of ["firecrawl", "single"] as const) {
        const remote = yield* remoteWeb(url, routing)
        const started = yield* remote.crawl({ url: "https://example.test/" })
        expect(started.url).toBe(`${url}/v1/crawl/job-1`)
        expect((yield* remote.crawlStatus("job-1")).next).toBe(
          `${url}/v1/crawl/job-1?cursor=${encodeURIComponent("opaque/after 1")}`
        )
        const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(remote.crawlPages("job-1")))
        expect(pages.map((p) => p.markdown)).toEqual(["page 1", "page 2", "page 3"])
      }
    }))
})

describe("server: the Firecrawl SDKs follow the server's next links (page size 2)", () => {
  /** Runs a promise in an Effect test. */
  const run = <A>(f: () => Promise<A>) => Effect.promise(f)

  it.scopedLive("v2 getCrawlStatus and batch status page through every batch; so does v1 crawlUrl", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const url = yield* serveOurs(localWeb, { apiKey: Redacted.make(testKey) })
      const { default: Firecrawl, FirecrawlAppV1 } = yield* run(() => import("@mendable/firecrawl-js"))
      const v2 = new Firecrawl({ apiKey: testKey, apiUrl: url })
      const crawled = yield* run(() => v2.crawl(`${site.origin}/blog/`, { pollInterval: 1, timeout: 60 }))
      expect(crawled.status).toBe("completed")
      expect(crawled.next).toBeNull()
      expect(paths(site, crawled.data as Array<Web.CrawlPage>)).toEqual(["/blog/", "/blog/post-1", "/blog/post-2?b=2&a=1"])
      // one batch at a time: the first has a next link on this server, the last none
      const first = yield* run(() => v2.getCrawlStatus(crawled.id, { autoPaginate: false }))
      expect(first.data).toHaveLength(2)
      expect(first.next).toBe(`${url}/v2/crawl/${crawled.id}?skip=2`)
      const raw = yield* run(() =>
        fetch(`${url}/v2/crawl/${crawled.id}?skip=2`, { headers: { authorization: `Bearer ${testKey}` } }).then((r) => r.json())
      )
      expect(raw).toMatchObject({ success: true, status: "completed", data: [{ metadata: { sourceURL: expect.any(String) } }] })
      expect(raw).not.toHaveProperty("next")

      const urls = ["/", "/about", "/team"].map((p) => `${site.origin}${p}`)
      const batch = yield* run(() => v2.batchScrape(urls, { pollInterval: 1, timeout: 60 }))
      expect(batch.data.map((d) => d.metadata?.sourceURL)).toEqual(urls)

      // v1's crawlUrl polls, then follows every next link of the completed job
      const v1 = new FirecrawlAppV1({ apiKey: testKey, apiUrl: url })
      const all = yield* run(() => v1.crawlUrl(`${site.origin}/blog/`, {}, 1))
      expect(all).toMatchObject({ success: true, status: "completed" })
      expect(paths(site, (all as { data: Array<Web.CrawlPage> }).data)).toEqual(["/blog/", "/blog/post-1", "/blog/post-2?b=2&a=1"])
    }))

  it.scopedLive("v2 without the local web engine is a 501 in Firecrawl's error body; v2 request fields are checked", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const bare = yield* serveOurs(Layer.empty)
      const res = yield* run(() => fetch(`${bare}/v2/scrape`, { method: "POST", body: JSON.stringify({ url: site.origin }) }))
      expect(res.status).toBe(501)
      expect(yield* run(() => res.json())).toMatchObject({ success: false, error: expect.stringContaining("local web engine") })
      const url = yield* serveOurs(localWeb)
      const post = (path: string, body: unknown) =>
        run(() =>
          fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: await r.json() }))
        )
      expect(yield* post("/v2/crawl", { url: site.origin, sitemap: "sometimes" })).toMatchObject({
        status: 400,
        json: { success: false, error: expect.stringContaining("sitemap") }
      })
      expect(yield* post("/v2/crawl", { url: site.origin, webhook: "https://hooks.example/x" })).toMatchObject({
        status: 400,
        json: { success: false, error: expect.stringContaining("webhook is not supported") }
      })
      expect(yield* post("/v2/scrape", { url: site.origin, formats: ["markdown", { type: "screenshot", fullPage: true }] })).toMatchObject({
        status: 400,
        json: { success: false, error: expect.stringContaining("screenshot") }
      })
      expect(yield* post("/v2/batch/scrape", { urls: ["not a url", `${site.origin}/about`], ignoreInvalidURLs: true })).toMatchObject({
        status: 200,
        json: { success: true, invalidURLs: ["not a url"] }
      })
      // a path under /v2/ that is not served: a 404 in Firecrawl's body
      expect(yield* run(() => fetch(`${url}/v2/extract`, { method: "POST", body: "{}" }).then((r) => r.json()))).toMatchObject({
        success: false,
        error: expect.stringContaining("no route")
      })
    }))
})

describe("server: Firecrawl v1 batch scrape (page size 2)", () => {
  /** Runs a promise in an Effect test. */
  const run = <A>(f: () => Promise<A>) => Effect.promise(f)

  /** A request's status, `Allow` header and JSON body. */
  const call = (url: string, method: string, body?: unknown, headers: Record<string, string> = {}) =>
    run(async () => {
      const r = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      return { status: r.status, allow: r.headers.get("allow"), json: (await r.json()) as Record<string, unknown> }
    })

  it.scopedLive("started as v2 starts it; read as a v1 crawl, its next links under /v1/batch/scrape; the 1.x SDK pages through them", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const url = yield* serveOurs(localWeb, { apiKey: Redacted.make(testKey) })
      const auth = { authorization: `Bearer ${testKey}` }
      const { default: FirecrawlApp } = yield* run(() => import("firecrawl-js-v1"))
      const v1 = new FirecrawlApp({ apiKey: testKey, apiUrl: url })
      const urls = ["/team", "/", "/about"].map((p) => `${site.origin}${p}`)

      const started = yield* call(`${url}/v1/batch/scrape`, "POST", { urls, formats: ["markdown"] }, auth)
      expect(started.status).toBe(200)
      const id = String(started.json["id"])
      expect(started.json).toEqual({ success: true, id, url: `${url}/v1/batch/scrape/${id}` })
      let first = yield* call(`${url}/v1/batch/scrape/${id}`, "GET", undefined, auth)
      while (first.json["status"] === "scraping") {
        yield* Effect.sleep("50 millis")
        first = yield* call(`${url}/v1/batch/scrape/${id}`, "GET", undefined, auth)
      }
      expect(first.json).toMatchObject({
        success: true,
        status: "completed",
        total: 3,
        completed: 3,
        creditsUsed: 3,
        expiresAt: expect.any(String),
        next: `${url}/v1/batch/scrape/${id}?skip=2`
      })
      expect((first.json["data"] as Array<Web.CrawlPage>).map((d) => d.metadata.sourceURL)).toEqual(urls.slice(0, 2))
      const last = yield* call(`${url}/v1/batch/scrape/${id}?skip=2`, "GET", undefined, auth)
      expect(last.json).not.toHaveProperty("next")
      expect((last.json["data"] as Array<Web.CrawlPage>).map((d) => d.metadata.sourceURL)).toEqual(urls.slice(2))

      // 1.x follows the next links: checkBatchScrapeStatus with every page, and batchScrapeUrls
      // (which polls /v1/crawl/{id}, as on Firecrawl)
      const all = yield* run(() => v1.checkBatchScrapeStatus(id, true))
      expect((all as { data: Array<Web.CrawlPage> }).data.map((d) => d.metadata.sourceURL)).toEqual(urls)
      const scraped = yield* run(() => v1.batchScrapeUrls(urls, { formats: ["markdown"] }, 1))
      expect((scraped as { data: Array<Web.CrawlPage> }).data.map((d) => d.metadata.sourceURL)).toEqual(urls)

      // the status query is checked as a crawl's is, under the batch's own label
      expect(yield* call(`${url}/v1/batch/scrape/${id}?skip=two`, "GET", undefined, auth)).toMatchObject({
        status: 400,
        json: { success: false, error: expect.stringContaining("GET /v1/batch/scrape/{id}: invalid request at skip") }
      })
      // URLs: checked, or skipped and listed with ignoreInvalidURLs
      expect(yield* call(`${url}/v1/batch/scrape`, "POST", { urls: ["ftp://x/", `${site.origin}/`] }, auth)).toMatchObject({
        status: 400,
        json: { success: false, error: expect.stringContaining("invalid URLs ftp://x/") }
      })
      expect(yield* call(`${url}/v1/batch/scrape`, "POST", { urls: ["ftp://x/", `${site.origin}/`], ignoreInvalidURLs: true }, auth))
        .toMatchObject({ status: 200, json: { success: true, invalidURLs: ["ftp://x/"] } })
      // v1 formats are names: v2's {type} objects are a 400
      expect(yield* call(`${url}/v1/batch/scrape`, "POST", { urls: [`${site.origin}/`], formats: [{ type: "markdown" }] }, auth))
        .toMatchObject({ status: 400, json: { success: false, error: expect.stringContaining("formats") } })
    }))

  it.scopedLive("DELETE cancels a running batch; an unknown batch is a 404 and no engine a 501, in Firecrawl's body", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const url = yield* serveOurs(localWeb)
      // /slow answers after the page time-out: the batch is still running when cancelled
      const started = yield* call(`${url}/v1/batch/scrape`, "POST", { urls: [`${site.origin}/slow`] })
      const id = String(started.json["id"])
      expect(yield* call(`${url}/v1/batch/scrape/${id}`, "DELETE")).toMatchObject({ status: 200, json: { status: "cancelled" } })
      expect(yield* call(`${url}/v1/batch/scrape/${id}`, "GET")).toMatchObject({ status: 200, json: { success: true, status: "cancelled" } })
      for (const method of ["GET", "DELETE"]) {
        expect(yield* call(`${url}/v1/batch/scrape/no-such-batch`, method)).toEqual({
          status: 404,
          allow: null,
          json: { success: false, error: expect.stringContaining("no crawl job no-such-batch") }
        })
      }
      const bare = yield* serveOurs(Layer.empty)
      expect(yield* call(`${bare}/v1/batch/scrape`, "POST", { urls: [`${site.origin}/`] })).toMatchObject({
        status: 501,
        json: { success: false, error: expect.stringContaining("POST /v1/batch/scrape: this server has no local web engine configured") }
      })
    }))
})

describe("server: Firecrawl error bodies on every Firecrawl path", () => {
  /** A request's status, `Allow` header and JSON body. */
  const call = (url: string, method: string, body?: unknown) =>
    Effect.promise(async () => {
      const r = await fetch(url, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      return { status: r.status, allow: r.headers.get("allow"), json: (await r.json()) as unknown }
    })

  it.scopedLive("a wrong method on a served path is a 405 with Allow, an unknown path a 404, both in Firecrawl's body; the library's paths keep theirs", () =>
    Effect.gen(function*() {
      const url = yield* serveOurs(localWeb)
      const notAllowed: ReadonlyArray<readonly [string, string, string]> = [
        ["GET", "/v1/scrape", "POST"],
        ["GET", "/v1/crawl", "POST"],
        ["PUT", "/v1/crawl/abc", "GET, DELETE"],
        ["GET", "/v1/batch/scrape", "POST"],
        ["POST", "/v1/batch/scrape/abc", "GET, DELETE"],
        ["GET", "/v1/map/", "POST"],
        ["GET", "/v2/scrape", "POST"],
        ["PATCH", "/v2/crawl/abc", "GET, DELETE"],
        ["GET", "/v2/batch/scrape", "POST"],
        ["DELETE", "/v2/map", "POST"]
      ]
      for (const [method, path, allow] of notAllowed) {
        expect(yield* call(`${url}${path}`, method)).toEqual({
          status: 405,
          allow,
          json: { success: false, error: `${method} is not allowed on ${path} (allowed: ${allow})`, code: "method_not_allowed" }
        })
      }
      for (const [method, path] of [["POST", "/v1/search"], ["POST", "/v1/extract"], ["GET", "/v1/crawl/abc/errors"], ["POST", "/v2/extract"], ["GET", "/v2"]]) {
        expect(yield* call(`${url}${path}`, method!, method === "POST" ? {} : undefined)).toEqual({
          status: 404,
          allow: null,
          json: { success: false, error: `no route for ${method} ${path}` }
        })
      }
      // the library's own API: a 404 in the wire error body, whatever the method
      for (const [method, path] of [["GET", "/v1/nothing-here"], ["GET", "/v1/embeddings"], ["GET", "/v1/web"], ["GET", "/upload"]]) {
        expect(yield* call(`${url}${path}`, method!)).toEqual({
          status: 404,
          allow: null,
          json: { error: { message: `no route for ${method} ${path}`, type: "not_found_error", code: null } }
        })
      }
    }))

  it.scopedLive("a defect behind a Firecrawl path is a 500 in Firecrawl's body", () =>
    Effect.gen(function*() {
      const dies = () => Effect.die(new Error("boom"))
      const engine = Layer.succeed(
        Web.Web,
        Web.Web.of({
          crawl: dies,
          crawlStatus: dies,
          crawlPages: () => Stream.die(new Error("boom")),
          waitForCrawl: dies,
          cancel: dies,
          map: dies,
          scrape: dies
        })
      )
      const url = yield* serveOurs(engine)
      expect(yield* call(`${url}/v1/crawl/abc`, "GET")).toEqual({
        status: 500,
        allow: null,
        json: { success: false, error: "the server failed unexpectedly while answering this request" }
      })
      // the library's own path keeps the wire body
      expect(yield* call(`${url}/v1/web`, "POST", { operation: "crawl_status", id: "abc" })).toMatchObject({
        status: 500,
        json: { error: { type: "server_error" } }
      })
    }))

  it.scopedLive("a refused private target names the engine's option and the serve flag that opens it, on every route", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const { allowHosts: _, ...closed } = engineOptions
      const url = yield* serveOurs(LocalWeb.layer(closed).pipe(Layer.provide(upload)))
      const hint = "(allow them with allowPrivate or allowHosts, the LocalWeb options, or with effect-rag serve --allow-private)"
      const requests: ReadonlyArray<readonly [string, unknown]> = [
        ["/v1/scrape", { url: `${site.origin}/about` }],
        ["/v1/crawl", { url: `${site.origin}/` }],
        ["/v1/map", { url: `${site.origin}/` }],
        ["/v1/batch/scrape", { urls: [`${site.origin}/about`] }],
        ["/v2/scrape", { url: `${site.origin}/about` }],
        ["/v2/batch/scrape", { urls: [`${site.origin}/about`] }]
      ]
      for (const [path, body] of requests) {
        expect(yield* call(`${url}${path}`, "POST", body)).toMatchObject({
          status: 400,
          json: { success: false, error: expect.stringContaining(hint), code: "blocked" }
        })
      }
      // the library's own client reads the same text from the wire body
      const remote = yield* remoteWeb(url, "single")
      const e = yield* Effect.flip(remote.scrape({ url: `${site.origin}/about` }))
      expect(e._tag).toBe("BadRequest")
      expect(e.message).toContain(hint)
    }))
})
