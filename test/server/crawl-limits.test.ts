/**
 * The server's bounds on crawl work, over real HTTP on loopback with the local web engine: job
 * status paged by bytes (a `next` whenever the pages would exceed `pageBytes`, a page over it
 * recorded as failed), cancel and expiry deleting a job's spilled pages, the caps on a crawl's
 * `limit`, a batch's URLs and the jobs running at once (each refusal naming its `serve` flag),
 * the cap on input quoted in errors, and a batch with a private URL among public ones.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Upload from "../../src/api/Upload.js"
import * as LocalWeb from "../../src/engines/web/LocalWeb.js"
import * as RagError from "../../src/RagError.js"
import type * as Server from "../../src/server/Server.js"
import { type LargeSite, startLargeSite } from "../engines/web/large-site.js"
import { serveOurs } from "../support/server.js"

const upload = Layer.succeed(
  Upload.Upload,
  Upload.Upload.of({
    extract: () => Effect.fail(new RagError.BadRequest({ endpoint: "extract", message: "not used" })),
    extractChunks: () => Effect.fail(new RagError.BadRequest({ endpoint: "extractChunks", message: "not used" })),
    files: () => Effect.fail(new RagError.BadRequest({ endpoint: "files", message: "not used" }))
  })
)

const baseOptions: LocalWeb.Options = { allowHosts: ["127.0.0.1"], politenessDelay: "2 millis", pageTimeout: "10 seconds" }

/** A site of `pages` pages (of 64 or 128 KiB unless told), for the scope of the test. */
const site = (pages: number, options: { minBytes?: number; maxBytes?: number } = {}) =>
  Effect.acquireRelease(
    Effect.promise(() => startLargeSite({ pages, minBytes: options.minBytes ?? 60_000, maxBytes: options.maxBytes ?? 130_000 })),
    (s) => Effect.promise(() => s.close())
  )

/** A spill folder of the test's own, removed after it. */
const spillFolder = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "crawl-limits-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The files of the engine's spill folder (the one folder inside `dir`). */
const spilled = (dir: string): Array<{ name: string; size: number }> =>
  readdirSync(dir).flatMap((engineDir) =>
    readdirSync(join(dir, engineDir)).map((name) => ({ name, size: statSync(join(dir, engineDir, name)).size }))
  )

const serve = (options: LocalWeb.Options, server: Server.Options = {}) =>
  serveOurs(LocalWeb.layer({ ...baseOptions, ...options }).pipe(Layer.provide(upload)), server)

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly json: any
}

const call = (url: string, method: string, body?: unknown) =>
  Effect.promise(async (): Promise<Answer> => {
    const res = await fetch(url, {
      method,
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    })
    const text = await res.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.status, headers: res.headers, text, json }
  })

/** Polls a job's status until it leaves `scraping`. */
const settled = (statusUrl: string) =>
  Effect.gen(function*() {
    for (;;) {
      const answer = yield* call(statusUrl, "GET")
      if (answer.json.status !== "scraping") return answer
      yield* Effect.sleep("50 millis")
    }
  })

/** Polls until the job has recorded `n` pages. */
const recorded = (statusUrl: string, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 400; i++) {
      const answer = yield* call(statusUrl, "GET")
      if (answer.json.total >= n) return answer
      yield* Effect.sleep("50 millis")
    }
    throw new Error(`${statusUrl} never recorded ${n} pages`)
  })

const pageBytes = 100_000

describe("server: crawl status paged by bytes", () => {
  it.scopedLive("next whenever a batch would exceed pageBytes; a page over it is a failed page naming the flag", () =>
    Effect.gen(function*() {
      const s: LargeSite = yield* site(10, { minBytes: 30_000, maxBytes: 100_000 })
      const url = yield* serve({ pageBytes })
      for (const [start, status] of [["/v2/crawl", "/v2/crawl"], ["/v1/crawl", "/v1/crawl"]] as const) {
        const started = yield* call(`${url}${start}`, "POST", { url: s.start, limit: 11 })
        expect(started.status).toBe(200)
        const first = yield* settled(`${url}${status}/${started.json.id}`)
        expect(first.json).toMatchObject({ success: true, status: "completed", total: 11 })
        const sources: Array<string> = []
        const tooLarge: Array<string> = []
        let batch: Answer | undefined = first
        let batches = 0
        while (batch !== undefined) {
          batches++
          const data = batch.json.data as Array<{ markdown?: string; metadata: { sourceURL: string; error?: string } }>
          expect(data.length).toBeGreaterThan(0)
          // the pages of one batch, as JSON, stay within the bound
          const bytes = data.reduce((n, page) => n + Buffer.byteLength(JSON.stringify(page)), 0)
          expect(bytes).toBeLessThanOrEqual(pageBytes)
          for (const page of data) {
            sources.push(page.metadata.sourceURL)
            if (page.metadata.error !== undefined) {
              expect(page.markdown).toBeUndefined()
              expect(page.metadata.error).toContain("page_too_large")
              expect(page.metadata.error).toContain("effect-rag serve --crawl-page-bytes")
              tooLarge.push(page.metadata.sourceURL)
            }
          }
          batch = batch.json.next === undefined ? undefined : yield* call(batch.json.next, "GET")
        }
        expect(new Set(sources).size).toBe(11)
        // the 128 KiB pages are over the bound, the 64 KiB ones (and the index) are served
        const large = Array.from({ length: 10 }, (_, i) => i).filter((i) => s.sizeOf(i) > pageBytes)
        expect(large.length).toBeGreaterThan(0)
        expect(tooLarge.sort()).toEqual(large.map((i) => `${s.origin}/p/${i}`).sort())
        expect(first.json.completed).toBe(11 - large.length)
        // no count bound was reached (pageSize 100): every next came from the byte bound, and
        // two pages of 64 KiB never share a batch of 100,000 bytes
        const small = 10 - large.length
        expect(small).toBeGreaterThan(1)
        expect(batches).toBeGreaterThanOrEqual(small)
      }
    }))
})

describe("server: cancel and expiry free a job's spilled pages", () => {
  it.scopedLive("status after cancel is small and the spill file is gone; an expired job's file too", () =>
    Effect.gen(function*() {
      const s = yield* site(12)
      const dir = yield* spillFolder
      const url = yield* serve({ spillDir: dir, politenessDelay: "250 millis" })
      const started = yield* call(`${url}/v2/crawl`, "POST", { url: s.start, limit: 13 })
      const statusUrl = `${url}/v2/crawl/${started.json.id}`
      yield* recorded(statusUrl, 3)
      const files = spilled(dir)
      expect(files.map((f) => f.name)).toEqual([`${started.json.id}.jsonl`])
      expect(files[0]!.size).toBeGreaterThan(2 * 60_000)

      const cancelled = yield* call(statusUrl, "DELETE")
      expect(cancelled.json).toEqual({ success: true, status: "cancelled" })
      const after = yield* call(statusUrl, "GET")
      expect(after.json).toMatchObject({ success: true, status: "cancelled", data: [] })
      expect(after.json.next).toBeUndefined()
      expect(after.text.length).toBeLessThan(400)
      expect(spilled(dir)).toEqual([])

      // expiry: a finished job past its retention is forgotten with its file
      const shortDir = yield* spillFolder
      const shortUrl = yield* serve({ spillDir: shortDir, retention: "300 millis" })
      const short = yield* call(`${shortUrl}/v2/crawl`, "POST", { url: s.start, limit: 3 })
      const shortStatus = `${shortUrl}/v2/crawl/${short.json.id}`
      expect((yield* settled(shortStatus)).json.status).toBe("completed")
      expect(spilled(shortDir)).toHaveLength(1)
      yield* Effect.sleep("500 millis")
      expect((yield* call(shortStatus, "GET")).status).toBe(404)
      expect(spilled(shortDir)).toEqual([])
    }))
})

describe("server: caps on crawl work, each refusal naming its serve flag", () => {
  it.scopedLive("crawl limit, batch size, jobs running at once", () =>
    Effect.gen(function*() {
      const s = yield* site(6)
      const url = yield* serve({ politenessDelay: "300 millis" }, { limits: { crawlLimit: 50, batchUrls: 3, crawlJobs: 1 } })

      for (const path of ["/v1/crawl", "/v2/crawl"]) {
        const huge = yield* call(`${url}${path}`, "POST", { url: s.start, limit: 99_999_999_999 })
        expect(huge.status).toBe(400)
        expect(huge.json).toMatchObject({ success: false, code: "limit_exceeded" })
        expect(huge.json.error).toContain("crawlLimit, effect-rag serve --max-crawl-limit")
      }
      const single = yield* call(`${url}/v1/web`, "POST", { operation: "crawl_start", url: s.start, limit: 51 })
      expect(single.status).toBe(400)
      expect(single.json.error.message).toContain("--max-crawl-limit")

      const urls = Array.from({ length: 4 }, (_, i) => `${s.origin}/p/${i}`)
      for (const path of ["/v1/batch/scrape", "/v2/batch/scrape"]) {
        const big = yield* call(`${url}${path}`, "POST", { urls })
        expect(big.status).toBe(400)
        expect(big.json).toMatchObject({ success: false, code: "limit_exceeded" })
        expect(big.json.error).toContain("4 URLs, more than 3")
        expect(big.json.error).toContain("batchUrls, effect-rag serve --max-batch-urls")
      }

      // one job at a time: a second start is a 429 with Retry-After, until the first ends
      const first = yield* call(`${url}/v2/crawl`, "POST", { url: s.start, limit: 7 })
      expect(first.status).toBe(200)
      for (const [path, body] of [["/v2/crawl", { url: s.start }], ["/v1/crawl", { url: s.start }], ["/v2/batch/scrape", { urls: urls.slice(0, 2) }]] as const) {
        const busy = yield* call(`${url}${path}`, "POST", body)
        expect(busy.status).toBe(429)
        expect(busy.headers.get("retry-after")).toBe("5")
        expect(busy.json).toMatchObject({ success: false, code: "too_many_jobs" })
        expect(busy.json.error).toContain("crawlJobs, effect-rag serve --max-crawl-jobs")
      }
      yield* call(`${url}/v2/crawl/${first.json.id}`, "DELETE")
      const next = yield* call(`${url}/v2/batch/scrape`, "POST", { urls: urls.slice(0, 2) })
      expect(next.status).toBe(200)
    }))

  it.scopedLive("a 900 KB URL is not echoed whole in an error", () =>
    Effect.gen(function*() {
      const long = `not-a-url-${"x".repeat(900_000)}`
      for (const limits of [{}, { echoChars: 200 }]) {
        const url = yield* serve({}, { limits })
        const answers = [
          yield* call(`${url}/v1/scrape`, "POST", { url: long }),
          yield* call(`${url}/v2/scrape`, "POST", { url: long }),
          yield* call(`${url}/v2/crawl`, "POST", { url: long }),
          yield* call(`${url}/v2/batch/scrape`, "POST", { urls: [long] }),
          yield* call(`${url}/v1/web`, "POST", { operation: "scrape", url: long })
        ]
        // a path of 10,000 characters (about what Node's header limit lets through) in a 404 and a 405
        const path = `/v2/${"p".repeat(10_000)}`
        answers.push(yield* call(`${url}${path}`, "GET"), yield* call(`${url}/v2/crawl`, "PUT"))
        const most = "echoChars" in limits ? 2_000 : 6_000
        const notFound = answers[5]!
        expect(notFound.status).toBe(404)
        expect(notFound.text.length).toBeLessThan(most)
        expect(notFound.text).toContain("10004 characters")
        answers.splice(5, 2)
        for (const answer of answers) {
          expect(answer.status).toBe(400)
          expect(answer.text.length).toBeLessThan(most)
          expect(answer.text).toContain("900010 characters")
          expect(answer.text).toContain("echoChars, effect-rag serve --max-echo-chars")
        }
      }
    }))
})

describe("server: the cap on a map's limit, and input quoted by an upload error", () => {
  it.scopedLive("a map over mapLimit is a 400 naming --max-map-limit, on v1, v2 and single routing", () =>
    Effect.gen(function*() {
      const s = yield* site(3, { minBytes: 1_000, maxBytes: 2_000 })
      const url = yield* serve({}, { limits: { mapLimit: 40 } })
      for (const path of ["/v1/map", "/v2/map"]) {
        const huge = yield* call(`${url}${path}`, "POST", { url: s.start, limit: 99_999_999_999 })
        expect(huge.status).toBe(400)
        expect(huge.json).toMatchObject({ success: false, code: "limit_exceeded" })
        expect(huge.json.error).toContain("mapLimit, effect-rag serve --max-map-limit")
        const fine = yield* call(`${url}${path}`, "POST", { url: s.start, limit: 40 })
        expect(fine.status).toBe(200)
        expect(fine.json.links.length).toBeGreaterThan(0)
      }
      const single = yield* call(`${url}/v1/web`, "POST", { operation: "map", url: s.start, limit: 41 })
      expect(single.status).toBe(400)
      expect(single.json.error.message).toContain("--max-map-limit")
    }))

  it.scopedLive("an upload whose file name is 10,000 characters: the error quotes at most echoChars of it", () =>
    Effect.gen(function*() {
      const echoing = Layer.succeed(
        Upload.Upload,
        Upload.Upload.of({
          extract: (file) =>
            Effect.fail(new RagError.ExtractionError({ file: file.name, reason: "unsupported", message: `cannot read ${file.name}` })),
          extractChunks: () => Effect.fail(new RagError.BadRequest({ endpoint: "extractChunks", message: "not used" })),
          files: () => Effect.fail(new RagError.BadRequest({ endpoint: "files", message: "not used" }))
        })
      )
      const url = yield* serveOurs(echoing, { limits: { echoChars: 100 } })
      const name = `${"n".repeat(10_000)}.xyz`
      const answer = yield* Effect.promise(async () => {
        const form = new FormData()
        form.append("file", new Blob(["hello"]), name)
        const res = await fetch(`${url}/upload`, { method: "POST", body: form })
        return { status: res.status, text: await res.text() }
      })
      expect(answer.status).toBe(400)
      expect(answer.text.length).toBeLessThan(1_500)
      expect(answer.text).toContain("10004 characters")
    }))
})

describe("server: a batch with a private URL among public ones", () => {
  it.scopedLive("the private URL is a failed page naming the flag; the others are scraped, in order", () =>
    Effect.gen(function*() {
      const s = yield* site(2, { minBytes: 1_000, maxBytes: 2_000 })
      const url = yield* serve({})
      const urls = [`${s.origin}/p/0`, "http://10.1.2.3/private", `${s.origin}/p/1`]
      const started = yield* call(`${url}/v2/batch/scrape`, "POST", { urls })
      expect(started.status).toBe(200)
      const done = yield* settled(`${url}/v2/batch/scrape/${started.json.id}`)
      expect(done.json).toMatchObject({ status: "completed", total: 3, completed: 2 })
      const data = done.json.data as Array<{ markdown?: string; metadata: { sourceURL: string; error?: string } }>
      expect(data.map((p) => p.metadata.sourceURL)).toEqual(urls)
      expect(data[0]!.markdown).toContain("Page 0")
      expect(data[2]!.markdown).toContain("Page 1")
      expect(data[1]!.markdown).toBeUndefined()
      expect(data[1]!.metadata.error).toContain("effect-rag serve --allow-private")
      // only private URLs: refused as a scrape of one is
      const only = yield* call(`${url}/v2/batch/scrape`, "POST", { urls: ["http://10.1.2.3/a", "http://192.168.0.1/b"] })
      expect(only.status).toBe(400)
      expect(only.json).toMatchObject({ success: false, code: "blocked" })
    }))
})
