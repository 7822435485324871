/**
 * The server speaks to ports only: OUR server over the REMOTE `Web` layer and its crawl-scope
 * capability (`Web.layer`, `WebCrawlScope.crawlScopeLayer`), pointed at a second server of ours
 * that serves the local web engine, answers the Firecrawl v1 and v2 routes with the same content
 * as that local server does. Everything is real HTTP on loopback: the test website, the upstream
 * (local engine) server and the front (remote engine) server.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Web from "../../src/api/Web.js"
import * as WebCrawlScope from "../../src/api/WebCrawlScope.js"
import { sitePages, startSite } from "../engines/web/site.js"
import { clientLayer, serveOurs } from "../support/server.js"
import { localWeb } from "./web-fixture.js"

/** The remote web engine and its crawl scope, talking to `upstream` in `firecrawl` routing. */
const remoteWeb = (upstream: string) =>
  Layer.merge(Web.layer, WebCrawlScope.crawlScopeLayer).pipe(
    Layer.provide(clientLayer(upstream, { crawlUrl: upstream, webRouting: "firecrawl" }))
  )

const call = (url: string, init?: { method: string; body?: unknown }) =>
  Effect.promise(async () => {
    const res = await fetch(url, {
      method: init?.method ?? "GET",
      ...(init?.body !== undefined ? { body: JSON.stringify(init.body), headers: { "content-type": "application/json" } } : {})
    })
    return { status: res.status, json: (await res.json()) as Record<string, unknown> }
  })

const post = (url: string, body: unknown) => call(url, { method: "POST", body })

type Page = { readonly metadata: { readonly sourceURL?: string } }

/**
 * Every page of a job on a server: polls its status URL until the job is done, then follows
 * the `next` links the server sends (each on the same server); the links in order.
 */
const pagesOf = (statusUrl: string, origin: string) =>
  Effect.gen(function*() {
    let first = yield* call(statusUrl)
    for (let i = 0; first.json["status"] === "scraping" && i < 400; i++) {
      yield* Effect.sleep("50 millis")
      first = yield* call(statusUrl)
    }
    expect(first.status).toBe(200)
    expect(first.json["status"]).toBe("completed")
    const pages: Array<Page> = [...(first.json["data"] as Array<Page>)]
    const links: Array<string> = []
    let next = first.json["next"] as string | undefined
    while (next !== undefined) {
      expect(next.startsWith(`${origin}/`)).toBe(true)
      links.push(next.slice(origin.length))
      const batch = yield* call(next)
      expect(batch.status).toBe(200)
      pages.push(...(batch.json["data"] as Array<Page>))
      next = batch.json["next"] as string | undefined
    }
    const { data: _data, next: _next, ...record } = first.json
    return { record, links, pages: [...pages].sort((a, b) => (a.metadata.sourceURL ?? "").localeCompare(b.metadata.sourceURL ?? "")) }
  })

describe("server over the remote Web layer", () => {
  it.scopedLive("scrape, map, crawl and batch scrape (v1 and v2) answer what the local server answers", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const local = yield* serveOurs(localWeb)
      const front = yield* serveOurs(remoteWeb(local))

      // scrape, both versions: the same document
      for (const path of ["/v1/scrape", "/v2/scrape"]) {
        const body = { url: `${site.origin}/about`, formats: ["markdown", "html", "links"] }
        const viaFront = yield* post(`${front}${path}`, body)
        expect(viaFront.status).toBe(200)
        expect(viaFront.json).toEqual((yield* post(`${local}${path}`, body)).json)
        expect(JSON.stringify(viaFront.json)).toContain("We write *tests*")
      }

      // map, both versions, v2 with each sitemap mode: the same links
      const v1Map = yield* post(`${front}/v1/map`, { url: `${site.origin}/` })
      expect(v1Map.status).toBe(200)
      expect(v1Map.json).toEqual((yield* post(`${local}/v1/map`, { url: `${site.origin}/` })).json)
      expect(v1Map.json["links"]).toEqual(expect.arrayContaining([`${site.origin}/about`, `${site.origin}/blog/post-1`]))
      for (const sitemap of ["include", "skip", "only"] as const) {
        const body = { url: `${site.origin}/`, sitemap }
        const viaFront = yield* post(`${front}/v2/map`, body)
        expect(viaFront.status).toBe(200)
        expect(viaFront.json).toEqual((yield* post(`${local}/v2/map`, body)).json)
        expect((viaFront.json["links"] as Array<unknown>).length).toBeGreaterThan(0)
      }

      // crawl, v1 (path depth) and v2 (discovery depth): the same pages, the front's own next links
      const crawls = [
        { version: "v1", body: { url: `${site.origin}/`, maxDepth: 5 } },
        { version: "v2", body: { url: `${site.origin}/`, maxDiscoveryDepth: 5, crawlEntireDomain: true } }
      ]
      for (const { body, version } of crawls) {
        const [viaFront, viaLocal] = yield* Effect.all([
          post(`${front}/${version}/crawl`, body),
          post(`${local}/${version}/crawl`, body)
        ])
        expect(viaFront.status).toBe(200)
        expect(viaLocal.status).toBe(200)
        expect(viaFront.json["url"]).toBe(`${front}/${version}/crawl/${viaFront.json["id"]}`)
        const [a, b] = yield* Effect.all(
          [pagesOf(viaFront.json["url"] as string, front), pagesOf(viaLocal.json["url"] as string, local)],
          { concurrency: 2 }
        )
        expect(a.links.length).toBeGreaterThan(0)
        // the same link paths, with the job's own id
        expect(a.links).toEqual(b.links.map((l) => l.replace(viaLocal.json["id"] as string, viaFront.json["id"] as string)))
        expect({ ...a.record, expiresAt: undefined }).toEqual({ ...b.record, expiresAt: undefined })
        expect(a.pages).toEqual(b.pages)
        expect(a.pages.map((p) => (p.metadata.sourceURL ?? "").replace(site.origin, "")).sort()).toEqual(sitePages)
      }

      // batch scrape, both versions: the same pages, read through the front's own next links
      const urls = ["/", "/about", "/team", "/blog/"].map((p) => `${site.origin}${p}`)
      for (const version of ["v1", "v2"]) {
        const body = { urls, formats: ["markdown"] }
        const [viaFront, viaLocal] = yield* Effect.all([
          post(`${front}/${version}/batch/scrape`, body),
          post(`${local}/${version}/batch/scrape`, body)
        ])
        expect(viaFront.status).toBe(200)
        expect(viaFront.json["url"]).toBe(`${front}/${version}/batch/scrape/${viaFront.json["id"]}`)
        const [a, b] = yield* Effect.all(
          [pagesOf(viaFront.json["url"] as string, front), pagesOf(viaLocal.json["url"] as string, local)],
          { concurrency: 2 }
        )
        expect(a.links).toEqual([`/${version}/batch/scrape/${viaFront.json["id"]}?skip=2`])
        expect(a.pages).toEqual(b.pages)
        expect(a.pages).toHaveLength(urls.length)
      }
    }), 60_000)

  it.scopedLive("without the crawl-scope capability the Firecrawl-only routes are a 501 and v1 passes through", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const local = yield* serveOurs(localWeb)
      const front = yield* serveOurs(Web.layer.pipe(Layer.provide(clientLayer(local, { crawlUrl: local, webRouting: "firecrawl" }))))

      const v2 = yield* post(`${front}/v2/map`, { url: `${site.origin}/` })
      expect(v2.status).toBe(501)
      expect(v2.json).toMatchObject({ success: false, error: expect.stringContaining("POST /v2/map: this server has no local web engine") })
      const body = { url: `${site.origin}/about`, formats: ["markdown"] }
      const v1 = yield* post(`${front}/v1/scrape`, body)
      expect(v1.status).toBe(200)
      expect(v1.json).toEqual((yield* post(`${local}/v1/scrape`, body)).json)
    }))
})
