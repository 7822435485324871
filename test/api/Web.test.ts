import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import * as Web from "../../src/api/Web.js"
import type * as RagConfig from "../../src/RagConfig.js"
import { clientLayer, startServer, testKey, type Received, type TestServer } from "../support/server.js"

/** A page as the server sends it. */
const page = (n: number) => ({
  markdown: `# Page ${n}`,
  html: `<h1>Page ${n}</h1>`,
  links: [`https://example.com/${n + 1}`],
  metadata: {
    title: `Page ${n}`,
    description: `About ${n}`,
    language: "en",
    sourceURL: `https://example.com/${n}`,
    statusCode: 200,
    ogTitle: "ignored extra field"
  }
})

/** A server that must not be called (the main host, when web calls belong on the crawl host). */
const untouched = () => startServer(() => ({ status: 500, json: { error: { message: "wrong host" } } }))

/** The Web service with the main API on `base` and crawling on `crawl`. */
const run = <A, E>(
  hosts: { readonly base: TestServer; readonly crawl: TestServer },
  f: (web: Web.Service) => Effect.Effect<A, E>,
  options: RagConfig.Options = {}
) =>
  Effect.flatMap(Web.Web, f).pipe(
    Effect.provide(Web.layer.pipe(Layer.provide(clientLayer(hosts.base.url, { crawlUrl: hosts.crawl.url, ...options }))))
  )

const jsonOf = (r: Received | undefined) => r?.json

describe("Web (firecrawl routing)", () => {
  it.scopedLive("crawl start sends exactly the encoded body, with one Idempotency-Key across retries", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      let calls = 0
      const crawl = yield* startServer(() =>
        ++calls === 1
          ? { status: 503, json: { error: { message: "busy" } } }
          : { json: { success: true, id: "job-1", url: "https://example.com" } }
      )
      const request: Web.CrawlRequest = {
        url: "https://example.com",
        maxDepth: 2,
        includePaths: ["/docs/*"],
        excludePaths: ["/blog/*"],
        limit: 50,
        scrapeOptions: {
          formats: ["markdown", "html"],
          onlyMainContent: true,
          removeBase64Images: true,
          mobile: false,
          waitFor: 500,
          headers: { "x-test": "1" },
          includeTags: ["article"],
          excludeTags: ["nav"]
        }
      }
      const started = yield* run({ base, crawl }, (web) => web.crawl(request))
      expect(started).toEqual({ success: true, id: "job-1", url: "https://example.com" })
      expect(base.received).toHaveLength(0)
      expect(crawl.received).toHaveLength(2)
      for (const r of crawl.received) {
        expect(r.method).toBe("POST")
        expect(r.path).toBe("/v1/crawl")
        expect(r.headers.authorization).toBe(`Bearer ${testKey}`)
        expect(r.json).toEqual(request)
      }
      const keys = crawl.received.map((r) => r.headers["idempotency-key"])
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/)
      expect(keys[1]).toBe(keys[0])
    }))

  it.scoped("crawl pages follow next over 3 batches into one stream", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer((req) => {
        const skip = Number(req.url.searchParams.get("skip") ?? "0")
        const batches: Record<number, Array<number>> = { 0: [1, 2], 2: [3, 4], 4: [5] }
        const origin = `http://${req.headers.host}`
        return {
          json: {
            status: "completed",
            total: 5,
            completed: 5,
            creditsUsed: 5,
            expiresAt: "2030-01-01T00:00:00.000Z",
            next: skip < 4 ? `${origin}/v1/crawl/job-1?skip=${skip + 2}` : null,
            data: (batches[skip] ?? []).map(page)
          }
        }
      })
      const pages = yield* run({ base, crawl }, (web) => Stream.runCollect(web.crawlPages("job-1")))
      expect(Chunk.toReadonlyArray(pages).map((p) => p.markdown)).toEqual([1, 2, 3, 4, 5].map((n) => `# Page ${n}`))
      expect(Chunk.unsafeGet(pages, 2).metadata).toEqual({
        title: "Page 3",
        description: "About 3",
        language: "en",
        sourceURL: "https://example.com/3",
        statusCode: 200
      })
      expect(crawl.received.map((r) => `${r.method} ${r.path}${r.url.search}`)).toEqual([
        "GET /v1/crawl/job-1",
        "GET /v1/crawl/job-1?skip=2",
        "GET /v1/crawl/job-1?skip=4"
      ])
      expect(base.received).toHaveLength(0)
    }))

  it.scoped("a next link on another origin is followed without the API key", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const other = yield* startServer(() => ({ json: { status: "completed", next: null, data: [page(2)] } }))
      const crawl = yield* startServer(() => ({
        json: { status: "completed", total: 2, completed: 2, next: `${other.url}/batch/2`, data: [page(1)] }
      }))
      const pages = yield* run({ base, crawl }, (web) => Stream.runCollect(web.crawlPages("job-1")))
      expect(Chunk.toReadonlyArray(pages).map((p) => p.metadata.title)).toEqual(["Page 1", "Page 2"])
      expect(crawl.received[0]?.headers.authorization).toBe(`Bearer ${testKey}`)
      expect(other.received.map((r) => r.path)).toEqual(["/batch/2"])
      expect(other.received[0]?.headers.authorization).toBeUndefined()
    }))

  it.scoped("a next link that repeats ends the stream with an error instead of looping", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer((req) => ({
        json: { status: "completed", next: `http://${req.headers.host}/v1/crawl/job-1?skip=1`, data: [page(1)] }
      }))
      const error = yield* Effect.flip(run({ base, crawl }, (web) => Stream.runDrain(web.crawlPages("job-1"))))
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") expect(error.path).toBe("next")
      expect(crawl.received).toHaveLength(2)
    }))

  it.live("waitForCrawl polls a job from scraping to completed", () =>
    Effect.scoped(Effect.gen(function*() {
      const base = yield* untouched()
      let calls = 0
      const crawl = yield* startServer(() => {
        calls++
        return {
          json: calls < 3
            ? { status: "scraping", total: 4, completed: calls, next: null, data: [] }
            : { status: "completed", total: 4, completed: 4, creditsUsed: 4, next: null, data: [page(1)] }
        }
      })
      const job = yield* run({ base, crawl }, (web) => web.waitForCrawl("job-1", { interval: "5 millis" }))
      expect(job.status).toBe("completed")
      expect(job.completed).toBe(4)
      expect(job.data.map((p) => p.markdown)).toEqual(["# Page 1"])
      expect(crawl.received).toHaveLength(3)
      for (const r of crawl.received) expect(`${r.method} ${r.path}`).toBe("GET /v1/crawl/job-1")
    })))

  it.live("waitForCrawl fails with TaskFailed when the job fails (reason scrubbed of the key)", () =>
    Effect.scoped(Effect.gen(function*() {
      const base = yield* untouched()
      let calls = 0
      const crawl = yield* startServer(() => ({
        json: ++calls < 2
          ? { status: "scraping", total: 1, completed: 0, data: [] }
          : { status: "failed", total: 1, completed: 0, data: [], error: `robots.txt denied (key ${testKey})` }
      }))
      const error = yield* Effect.flip(
        run({ base, crawl }, (web) => web.waitForCrawl("job-1", { interval: "5 millis" }))
      )
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.taskId).toBe("job-1")
        expect(error.status).toBe("failed")
        expect(error.endpoint).toBe("GET /v1/crawl/{id}")
        expect(error.message).toContain("robots.txt denied")
        expect(error.message).not.toContain(testKey)
      }
      expect(crawl.received).toHaveLength(2)
    })))

  it.scoped("cancel sends DELETE with the id escaped", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({ json: { status: "cancelled" } }))
      const result = yield* run({ base, crawl }, (web) => web.cancel("job/1"))
      expect(result.status).toBe("cancelled")
      expect(crawl.received.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(["DELETE /v1/crawl/job%2F1"])
      expect(crawl.received[0]?.body.length).toBe(0)
    }))

  it.scoped("map sends exactly the encoded body and decodes the links", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({
        json: { success: true, links: ["https://example.com/a", "https://example.com/b"] }
      }))
      const request: Web.MapRequest = {
        url: "https://example.com",
        search: "docs",
        ignoreSitemap: true,
        includeSubdomains: false,
        limit: 10
      }
      const result = yield* run({ base, crawl }, (web) => web.map(request))
      expect(result).toEqual({ success: true, links: ["https://example.com/a", "https://example.com/b"] })
      expect(`${crawl.received[0]?.method} ${crawl.received[0]?.path}`).toBe("POST /v1/map")
      expect(jsonOf(crawl.received[0])).toEqual(request)
      expect(crawl.received[0]?.headers["idempotency-key"]).toBeUndefined()
    }))

  it.scoped("scrape sends exactly the encoded body and decodes the page", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({ json: { success: true, data: page(7) } }))
      const request: Web.ScrapeRequest = {
        url: "https://example.com/7",
        formats: ["markdown", "links"],
        onlyMainContent: true,
        includeTags: ["main"],
        excludeTags: ["footer"],
        headers: { cookie: "a=b" },
        waitFor: 0,
        mobile: true,
        removeBase64Images: false
      }
      const result = yield* run({ base, crawl }, (web) => web.scrape(request))
      expect(result.data.markdown).toBe("# Page 7")
      expect(result.data.links).toEqual(["https://example.com/8"])
      expect(result.data.metadata.statusCode).toBe(200)
      expect(`${crawl.received[0]?.method} ${crawl.received[0]?.path}`).toBe("POST /v1/scrape")
      expect(jsonOf(crawl.received[0])).toEqual(request)
    }))

  it.scoped("web calls work without an API key and send no Authorization header", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({ json: { success: true, links: [] } }))
      const result = yield* run({ base, crawl }, (web) => web.map({ url: "https://example.com" }), { apiKey: undefined })
      expect(result.links).toEqual([])
      expect(crawl.received).toHaveLength(1)
      expect(crawl.received[0]?.headers.authorization).toBeUndefined()
    }))

  it.scoped("402 is PaymentRequired and is not retried", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({
        status: 402,
        json: { error: { message: "Insufficient credits", type: "payment_required", code: null } }
      }))
      const error = yield* Effect.flip(run({ base, crawl }, (web) => web.crawl({ url: "https://example.com" })))
      expect(error._tag).toBe("PaymentRequired")
      if (error._tag === "PaymentRequired") {
        expect(error.endpoint).toBe("POST /v1/crawl")
        expect(error.message).toContain("Insufficient credits")
        expect(error.type).toBe("payment_required")
      }
      expect(crawl.received).toHaveLength(1)
    }))

  it.scoped("a malformed crawl record is a decode error naming the field path", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({
        json: {
          status: "completed",
          total: 2,
          completed: 2,
          next: null,
          data: [page(1), { markdown: "x", metadata: { title: "t", statusCode: "200" } }]
        }
      }))
      const error = yield* Effect.flip(run({ base, crawl }, (web) => web.crawlStatus("job-1")))
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") {
        expect(error.path).toBe("data[1].metadata.statusCode")
        expect(error.endpoint).toBe("GET /v1/crawl/{id}")
        expect(error.message).toContain("data[1].metadata.statusCode")
      }
    }))

  it.scoped("an invalid request is refused before anything is sent", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* untouched()
      const error = yield* Effect.flip(run({ base, crawl }, (web) => web.crawl({ url: "https://example.com", limit: 0 })))
      expect(error._tag).toBe("InvalidRequest")
      if (error._tag === "InvalidRequest") expect(error.path).toBe("limit")
      expect(crawl.received).toHaveLength(0)
    }))
})

describe("Web (single routing)", () => {
  it.scoped("every operation is POST /v1/web on the crawl host with the operation envelope", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer((req) => {
        const body = req.json as { operation: string; next?: string }
        switch (body.operation) {
          case "crawl_start":
            return { json: { success: true, id: "job-9", url: "https://example.com" } }
          case "crawl_status": {
            const batch = body.next === undefined ? 1 : Number(body.next.replace("cursor-", ""))
            return {
              json: {
                status: "completed",
                total: 3,
                completed: 3,
                next: batch < 3 ? `cursor-${batch + 1}` : null,
                data: [page(batch)]
              }
            }
          }
          case "crawl_cancel":
            return { json: { status: "cancelled" } }
          case "map":
            return { json: { success: true, links: ["https://example.com/a"] } }
          case "scrape":
            return { json: { success: true, data: page(7) } }
          default:
            return { status: 400, json: { error: { message: `unknown operation ${body.operation}` } } }
        }
      })
      const results = yield* run(
        { base, crawl },
        (web) =>
          Effect.all({
            started: web.crawl({ url: "https://example.com", limit: 3, scrapeOptions: { formats: ["markdown"] } }),
            status: web.crawlStatus("job-9"),
            pages: Stream.runCollect(web.crawlPages("job-9")),
            done: web.waitForCrawl("job-9", { interval: "5 millis" }),
            cancelled: web.cancel("job-9"),
            mapped: web.map({ url: "https://example.com", limit: 5 }),
            scraped: web.scrape({ url: "https://example.com/7", formats: ["markdown"] })
          }),
        { webRouting: "single" }
      )
      expect(results.started.id).toBe("job-9")
      expect(results.status.next).toBe("cursor-2")
      expect(Chunk.toReadonlyArray(results.pages).map((p) => p.markdown)).toEqual(["# Page 1", "# Page 2", "# Page 3"])
      expect(results.done.status).toBe("completed")
      expect(results.cancelled.status).toBe("cancelled")
      expect(results.mapped.links).toEqual(["https://example.com/a"])
      expect(results.scraped.data.markdown).toBe("# Page 7")

      expect(base.received).toHaveLength(0)
      for (const r of crawl.received) expect(`${r.method} ${r.path}`).toBe("POST /v1/web")
      expect(crawl.received.map((r) => r.json)).toEqual([
        { operation: "crawl_start", url: "https://example.com", limit: 3, scrapeOptions: { formats: ["markdown"] } },
        { operation: "crawl_status", id: "job-9" },
        { operation: "crawl_status", id: "job-9" },
        { operation: "crawl_status", id: "job-9", next: "cursor-2" },
        { operation: "crawl_status", id: "job-9", next: "cursor-3" },
        { operation: "crawl_status", id: "job-9" },
        { operation: "crawl_cancel", id: "job-9" },
        { operation: "map", url: "https://example.com", limit: 5 },
        { operation: "scrape", url: "https://example.com/7", formats: ["markdown"] }
      ])
      expect(crawl.received[0]?.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/)
      expect(crawl.received[1]?.headers["idempotency-key"]).toBeUndefined()
    }))

  it.scoped("errors carry the single-route endpoint label", () =>
    Effect.gen(function*() {
      const base = yield* untouched()
      const crawl = yield* startServer(() => ({ status: 402, json: { error: "no credits" } }))
      const error = yield* Effect.flip(
        run({ base, crawl }, (web) => web.map({ url: "https://example.com" }), { webRouting: "single" })
      )
      expect(error._tag).toBe("PaymentRequired")
      expect(error.endpoint).toBe("POST /v1/web (map)")
    }))
})
