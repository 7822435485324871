/**
 * The SDKs people already use, unchanged, against `effect-rag serve` (the real command in a
 * child process, on loopback): `openai` through `--gateway` to a fake upstream at the HTTP
 * edge, and `@mendable/firecrawl-js` (4.x: its v2 client and its v1 client; 1.x, the last
 * generation with only v1, as the `firecrawl-js-v1` alias) on the local web engine crawling the
 * test website (`test/engines/web/site.ts`). Every call of the compatibility table of
 * `docs/server.md` is here, with the SDK's own error class for 400, 401 and 404.
 *
 * The crawls check each Firecrawl version's depth model on the same site: v1 `maxDepth` counts
 * path segments, v2 `maxDiscoveryDepth` counts discovery order with the sitemap's pages at 0.
 */
import Firecrawl, { FirecrawlAppV1, SdkError } from "@mendable/firecrawl-js"
import { Effect, Exit, Scope } from "effect"
import FirecrawlApp1x, { type BatchScrapeResponse, type BatchScrapeStatusResponse, FirecrawlError } from "firecrawl-js-v1"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Site, sitePages, startSite } from "../engines/web/site.js"
import { startServe } from "../support/cli.js"
import { type Received, startServer, type TestServer } from "../support/server.js"

const serverKey = "sdk-test-server-key"
const upstreamKey = "sdk-test-upstream-key"

// =============================================================================
// The fake upstream (OpenAI-shaped)
// =============================================================================

const completion = {
  id: "c1",
  object: "chat.completion",
  created: 1700000000,
  model: "chat-1",
  system_fingerprint: "fp_upstream",
  choices: [{ index: 0, message: { role: "assistant", content: "hello from upstream", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }
}

const chunk = (content: string | undefined, finish: string | null = null) =>
  JSON.stringify({
    id: "c2",
    object: "chat.completion.chunk",
    created: 1700000001,
    model: "chat-1",
    system_fingerprint: "fp_upstream",
    choices: [{ index: 0, delta: content === undefined ? {} : { content }, finish_reason: finish }]
  })

const usageChunk = JSON.stringify({
  id: "c2",
  object: "chat.completion.chunk",
  created: 1700000001,
  model: "chat-1",
  choices: [],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }
})

/** Little-endian float32 base64, as OpenAI answers `encoding_format: "base64"`. */
const base64Floats = (xs: ReadonlyArray<number>) => Buffer.from(new Float32Array(xs).buffer).toString("base64")

const upstreamHandler = (req: Received, res: import("node:http").ServerResponse) => {
  const body = (req.json ?? {}) as Record<string, unknown>
  switch (req.path) {
    case "/v1/models":
      return { json: { object: "list", data: [{ id: "chat-1", object: "model", created: 1690000000, owned_by: "upstream" }] } }
    case "/v1/chat/completions": {
      if (body["stream"] !== true) return { json: completion }
      const usage = (body["stream_options"] as { include_usage?: boolean } | undefined)?.include_usage === true
      res.writeHead(200, { "content-type": "text/event-stream" })
      for (const e of [chunk("Hel"), chunk("lo"), chunk(undefined, "stop"), ...(usage ? [usageChunk] : []), "[DONE]"]) {
        res.write(`data: ${e}\n\n`)
      }
      res.end()
      return
    }
    case "/v1/embeddings": {
      const inputs = Array.isArray(body["input"]) ? body["input"] as Array<string> : [String(body["input"])]
      const vector = (i: number) => [i + 0.5, -1, 0.25]
      return {
        json: {
          object: "list",
          model: body["model"],
          data: inputs.map((_, i) => ({
            object: "embedding",
            index: i,
            embedding: body["encoding_format"] === "base64" ? base64Floats(vector(i)) : vector(i)
          })),
          usage: { prompt_tokens: 2, total_tokens: 2 }
        }
      }
    }
    case "/v1/images/generations":
      return { json: { created: 1700000002, data: [{ b64_json: "AAAA", revised_prompt: "a red fox" }] } }
    default:
      return { status: 404, json: { error: { message: `no route ${req.path}`, type: "not_found_error" } } }
  }
}

// =============================================================================
// Set-up: the site, the upstream, `effect-rag serve`
// =============================================================================

let scope: Scope.CloseableScope
let site: Site
let upstream: TestServer
let serve: Awaited<ReturnType<typeof startServe>>

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  site = await Effect.runPromise(Scope.extend(startSite, scope))
  upstream = await Effect.runPromise(Scope.extend(startServer(upstreamHandler), scope))
  serve = await startServe(["--gateway", "--allow-private", "--embedder", "remote"], {
    EFFECT_RAG_SERVER_KEY: serverKey,
    EFFECT_RAG_BASE_URL: upstream.url,
    EFFECT_RAG_API_KEY: upstreamKey,
    EFFECT_RAG_EMBEDDING_MODEL: "emb-1",
    EFFECT_RAG_EMBEDDING_DIMENSION: "3"
  })
}, 120_000)

afterAll(async () => {
  await serve?.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

/** The site's pages of a crawl, as paths, sorted. */
const paths = (docs: ReadonlyArray<{ metadata?: { sourceURL?: string | undefined } | undefined }>) =>
  docs.map((d) => (d.metadata?.sourceURL ?? "").replace(site.origin, "")).sort()

/** The error a promise rejects with. */
const rejection = async (p: Promise<unknown>): Promise<unknown> => {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error("the call did not fail")
}

/** The upstream requests to a path. */
const sent = (path: string) => upstream.received.filter((r) => r.path === path).map((r) => r.json as Record<string, unknown>)

// =============================================================================
// openai
// =============================================================================

describe("openai SDK against effect-rag serve --gateway", () => {
  const client = () => new OpenAI({ apiKey: serverKey, baseURL: `${serve.url}/v1`, maxRetries: 0 })

  it("models: the server's embedder and the upstream's models, each with created", async () => {
    const ids: Array<string> = []
    for await (const model of client().models.list()) {
      expect(typeof model.created).toBe("number")
      ids.push(model.id)
    }
    expect(ids).toEqual(["emb-1", "chat-1"])
  }, 30_000)

  it("embeddings: base64 (the SDK's default) and float", async () => {
    const b64 = await client().embeddings.create({ model: "emb-1", input: ["a", "b"] })
    expect(b64.data.map((d) => d.embedding)).toEqual([[0.5, -1, 0.25], [1.5, -1, 0.25]])
    const floats = await client().embeddings.create({ model: "emb-1", input: "a", encoding_format: "float", dimensions: 3 })
    expect(floats.data[0]!.embedding).toEqual([0.5, -1, 0.25])
  }, 30_000)

  it("chat: every request field reaches the upstream, its answer comes back as written", async () => {
    const r = await client().chat.completions.create({
      model: "chat-1",
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }],
      seed: 7,
      n: 1,
      response_format: { type: "json_object" },
      logprobs: false,
      presence_penalty: 0.5,
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }]
    })
    expect(r.choices[0]!.message.content).toBe("hello from upstream")
    expect(r.system_fingerprint).toBe("fp_upstream")
    expect(sent("/v1/chat/completions").at(-1)).toMatchObject({
      seed: 7,
      n: 1,
      response_format: { type: "json_object" },
      logprobs: false,
      presence_penalty: 0.5,
      tools: [{ type: "function", function: { name: "lookup" } }]
    })
  }, 30_000)

  it("chat streaming with stream_options.include_usage: the usage chunk arrives", async () => {
    const stream = await client().chat.completions.create({
      model: "chat-1",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true }
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | null | undefined
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? ""
      if (c.usage) usage = c.usage
    }
    expect(text).toBe("Hello")
    expect(usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 })
    expect(sent("/v1/chat/completions").at(-1)).toMatchObject({ stream: true, stream_options: { include_usage: true } })
  }, 30_000)

  it("images: the request's fields reach the upstream", async () => {
    const r = await client().images.generate({ model: "img-1", prompt: "a fox", n: 1, size: "256x256", response_format: "b64_json", style: "vivid" })
    expect(r.data?.[0]?.b64_json).toBe("AAAA")
    expect(sent("/v1/images/generations").at(-1)).toMatchObject({ size: "256x256", response_format: "b64_json", style: "vivid" })
  }, 30_000)

  it("errors: 401 AuthenticationError, 400 BadRequestError, 404 NotFoundError", async () => {
    const wrongKey = new OpenAI({ apiKey: "wrong", baseURL: `${serve.url}/v1`, maxRetries: 0 })
    expect(await rejection(wrongKey.models.list())).toBeInstanceOf(OpenAI.AuthenticationError)
    const bad = await rejection(client().chat.completions.create({ model: "chat-1" } as never))
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError)
    expect((bad as Error).message).toContain("messages")
    expect(await rejection(client().models.retrieve("nope"))).toBeInstanceOf(OpenAI.NotFoundError)
  }, 30_000)
})

// =============================================================================
// @mendable/firecrawl-js
// =============================================================================

/**
 * Firecrawl v2, `maxDiscoveryDepth: 2` from `/`: the start page and the sitemap's pages (0,
 * among them `/team/deeper`, four link hops deep), the pages they link to (1), the pages those
 * link to (2): the whole site but what robots.txt disallows. The CLI's `--max-depth 2` (link
 * hops) returns neither `/team/deep`, `/team/deeper` nor `/orphan`.
 */
const v2Depth2 = sitePages

/**
 * Firecrawl v1, `maxDepth: 1` from `/`: pages of at most one path segment, however many links
 * away (`/team` is two hops from `/`), and none of two (`/blog/post-1` is two hops too).
 */
const v1Depth1 = ["/", "/about", "/blog/", "/latin1", "/missing", "/old-page", "/orphan", "/sjis", "/slow", "/team"].sort()

describe("@mendable/firecrawl-js v2 client against effect-rag serve", () => {
  const client = () => new Firecrawl({ apiKey: serverKey, apiUrl: serve.url })

  it("scrape: markdown, links and rawHtml", async () => {
    const doc = await client().scrape(`${site.origin}/about`, { formats: ["markdown", "links", { type: "rawHtml" }] })
    expect(doc.markdown).toContain("# About")
    expect(doc.links).toContain(`${site.origin}/team`)
    expect(doc.rawHtml).toContain("<table>")
    expect(doc.metadata).toMatchObject({ title: "About", statusCode: 200, sourceURL: `${site.origin}/about` })
  }, 30_000)

  it("map: the sitemap only; a limit", async () => {
    const only = await client().map(`${site.origin}/`, { sitemap: "only" })
    expect(only.links.map((l) => l.url.replace(site.origin, ""))).toEqual(["/", "/about", "/orphan", "/team/deeper"])
    const two = await client().map(`${site.origin}/`, { limit: 2 })
    expect(two.links).toEqual([{ url: `${site.origin}/` }, { url: `${site.origin}/about` }])
  }, 30_000)

  it("crawl: maxDiscoveryDepth counts discovery order, the sitemap's pages at 0", async () => {
    const job = await client().crawl(`${site.origin}/`, { maxDiscoveryDepth: 2, pollInterval: 1, timeout: 120 })
    expect(job.status).toBe("completed")
    expect(paths(job.data)).toEqual(v2Depth2)
    // the 404 is reported with its status, with no content
    const missing = job.data.find((d) => d.metadata?.sourceURL === `${site.origin}/missing`)
    expect(missing?.metadata).toMatchObject({ statusCode: 404 })
    expect(missing?.markdown).toBeUndefined()
  }, 120_000)

  it("startCrawl, getCrawlStatus, cancelCrawl; an unknown job is a 404 SdkError", async () => {
    const started = await client().startCrawl(`${site.origin}/team`, { limit: 2 })
    expect(started.url).toBe(`${serve.url}/v2/crawl/${started.id}`)
    const status = await client().getCrawlStatus(started.id)
    expect(["scraping", "completed"]).toContain(status.status)
    expect(typeof (await client().cancelCrawl(started.id))).toBe("boolean")
    const unknown = await rejection(client().getCrawlStatus("no-such-job"))
    expect(unknown).toBeInstanceOf(SdkError)
    expect((unknown as SdkError).status).toBe(404)
    expect((unknown as SdkError).message).toContain("no crawl job no-such-job")
  }, 60_000)

  it("batchScrape: pages in order; the x-idempotency-key of a retried start gets the same job", async () => {
    const urls = [`${site.origin}/blog/post-1`, `${site.origin}/about`]
    const job = await client().batchScrape(urls, { options: { formats: ["markdown"] }, pollInterval: 1, timeout: 60 })
    expect(job.status).toBe("completed")
    expect(job.data.map((d) => d.metadata?.sourceURL)).toEqual(urls)
    expect(job.data[0]!.markdown).toContain("First post.")
    const first = await client().startBatchScrape(urls, { idempotencyKey: "batch-key-1" })
    const again = await client().startBatchScrape(urls, { idempotencyKey: "batch-key-1" })
    expect(again.id).toBe(first.id)
    expect(first.url).toBe(`${serve.url}/v2/batch/scrape/${first.id}`)
  }, 60_000)

  it("startBatchScrape skips invalid URLs when asked; getBatchScrapeStatus; an unknown batch is a 404 SdkError", async () => {
    const started = await client().startBatchScrape([`${site.origin}/team`, "not a url"], { ignoreInvalidURLs: true })
    expect(started.invalidURLs).toEqual(["not a url"])
    const status = await client().getBatchScrapeStatus(started.id)
    expect(["scraping", "completed"]).toContain(status.status)
    expect(typeof (await client().cancelBatchScrape(started.id))).toBe("boolean")
    const invalid = await rejection(client().startBatchScrape(["not a url"]))
    expect(invalid).toBeInstanceOf(SdkError)
    expect((invalid as SdkError).status).toBe(400)
    expect((invalid as SdkError).message).toContain("invalid URLs not a url")
    const unknown = await rejection(client().getBatchScrapeStatus("no-such-batch"))
    expect(unknown).toBeInstanceOf(SdkError)
    expect((unknown as SdkError).status).toBe(404)
    expect((unknown as SdkError).message).toContain("no crawl job no-such-batch")
  }, 60_000)

  it("errors: an option the engine cannot honour is a 400 naming it; a wrong key a 401; both with a text message", async () => {
    const actions = await rejection(client().scrape(`${site.origin}/about`, { actions: [{ type: "wait", milliseconds: 10 }] }))
    expect(actions).toBeInstanceOf(SdkError)
    expect((actions as SdkError).status).toBe(400)
    expect((actions as SdkError).message).toContain("actions is not supported")
    const prompt = await rejection(client().startCrawl(`${site.origin}/`, { prompt: "only the blog" }))
    expect((prompt as SdkError).status).toBe(400)
    expect((prompt as SdkError).message).toContain("prompt")
    const wrongKey = await rejection(new Firecrawl({ apiKey: "wrong", apiUrl: serve.url }).scrape(`${site.origin}/about`))
    expect(wrongKey).toBeInstanceOf(SdkError)
    expect((wrongKey as SdkError).status).toBe(401)
    expect((wrongKey as SdkError).message).toBe("invalid API key")
  }, 30_000)
})

describe("@mendable/firecrawl-js v1 client against effect-rag serve", () => {
  const client = () => new FirecrawlAppV1({ apiKey: serverKey, apiUrl: serve.url })

  it("scrapeUrl and mapUrl", async () => {
    const scraped = await client().scrapeUrl(`${site.origin}/about`, { formats: ["markdown"] })
    expect(scraped).toMatchObject({ success: true, markdown: expect.stringContaining("# About") })
    const mapped = await client().mapUrl(`${site.origin}/`, { limit: 3 })
    expect(mapped).toEqual({ success: true, links: [`${site.origin}/`, `${site.origin}/about`, `${site.origin}/orphan`] })
  }, 30_000)

  it("crawlUrl: maxDepth counts path segments; the last batch has no next", async () => {
    const job = await client().crawlUrl(`${site.origin}/`, { maxDepth: 1 }, 1)
    expect(job).toMatchObject({ success: true, status: "completed" })
    const data = (job as { data: Array<{ metadata?: { sourceURL?: string } }> }).data
    expect(paths(data)).toEqual(v1Depth1)
    expect(job).not.toHaveProperty("next")
  }, 120_000)

  it("batchScrapeUrls: the pages in the order of the URLs", async () => {
    const urls = [`${site.origin}/blog/post-1`, `${site.origin}/about`]
    const job = await client().batchScrapeUrls(urls, { formats: ["markdown"] }, 1)
    expect(job).toMatchObject({ success: true, status: "completed" })
    expect((job as { data: Array<{ metadata?: { sourceURL?: string } }> }).data.map((d) => d.metadata?.sourceURL)).toEqual(urls)
  }, 60_000)

  it("asyncCrawlUrl with an idempotency key, checkCrawlStatus(id, true), cancelCrawl", async () => {
    const first = await client().asyncCrawlUrl(`${site.origin}/team`, { limit: 2 }, "crawl-key-1")
    const again = await client().asyncCrawlUrl(`${site.origin}/team`, { limit: 2 }, "crawl-key-1")
    expect(first).toMatchObject({ success: true })
    expect((again as { id: string }).id).toBe((first as { id: string }).id)
    const status = await client().checkCrawlStatus((first as { id: string }).id, true)
    expect(status).toMatchObject({ success: true })
    const cancelled = await client().cancelCrawl((first as { id: string }).id)
    expect(cancelled).toHaveProperty("status")
  }, 60_000)

  it("errors: FirecrawlError with the status and the text of the server's error", async () => {
    // checkCrawlStatus wraps every failure in a FirecrawlError of status 500; the text keeps the 404
    const unknown = await rejection(client().checkCrawlStatus("no-such-job"))
    expect((unknown as Error).constructor.name).toBe("FirecrawlError")
    expect((unknown as Error).message).toContain("Status code: 404")
    const refused = await rejection(
      client().asyncCrawlUrl(`${site.origin}/`, { scrapeOptions: { actions: [{ type: "wait", milliseconds: 5 }] } } as never)
    )
    expect((refused as { statusCode: number }).statusCode).toBe(400)
    expect((refused as Error).message).toContain("scrapeOptions.actions is not supported")
    expect((refused as Error).message).not.toContain("[object Object]")
    const wrongKey = await rejection(new FirecrawlAppV1({ apiKey: "wrong", apiUrl: serve.url }).scrapeUrl(`${site.origin}/about`, {}))
    expect((wrongKey as { statusCode: number }).statusCode).toBe(401)
  }, 30_000)
})

describe("firecrawl-js 1.x (firecrawl-js-v1) against effect-rag serve", () => {
  const client = () => new FirecrawlApp1x({ apiKey: serverKey, apiUrl: serve.url })

  /** The status of a batch once it is no longer scraping. */
  const finished = async (id: string) => {
    for (let i = 0; i < 200; i++) {
      const status = await client().checkBatchScrapeStatus(id)
      if (!status.success || status.status !== "scraping") return status
      await new Promise((ok) => setTimeout(ok, 100))
    }
    throw new Error(`batch ${id} still scraping`)
  }

  it("batchScrapeUrls: v1 documents, in the order of the URLs", async () => {
    const urls = [`${site.origin}/blog/post-1`, `${site.origin}/about`, `${site.origin}/`]
    const job = await client().batchScrapeUrls(urls, { formats: ["markdown", "links"] }, 1)
    expect(job).toMatchObject({ success: true, status: "completed", total: 3, completed: 3 })
    const data = (job as BatchScrapeStatusResponse).data
    expect(data.map((d) => d.metadata?.sourceURL)).toEqual(urls)
    expect(data[0]!.markdown).toContain("First post.")
    expect(data[1]!.links).toContain(`${site.origin}/team`)
    expect(data[1]!.metadata).toMatchObject({ title: "About", statusCode: 200 })
  }, 60_000)

  it("asyncBatchScrapeUrls (idempotency key, invalid URLs skipped), then checkBatchScrapeStatus", async () => {
    const urls = [`${site.origin}/about`, "not a url", `${site.origin}/team`]
    const started = await client().asyncBatchScrapeUrls(urls, { formats: ["markdown"] }, "v1-batch-key", undefined, true) as BatchScrapeResponse
    const again = await client().asyncBatchScrapeUrls(urls, { formats: ["markdown"] }, "v1-batch-key", undefined, true) as BatchScrapeResponse
    const id = started.id ?? ""
    expect(started).toEqual({ success: true, id, url: `${serve.url}/v1/batch/scrape/${id}`, invalidURLs: ["not a url"] })
    expect(again.id).toBe(id)

    const status = await finished(id)
    expect(status).toMatchObject({ success: true, status: "completed", total: 2, completed: 2, creditsUsed: 2 })
    const done = status as BatchScrapeStatusResponse
    expect(Number.isNaN(done.expiresAt.getTime())).toBe(false)
    expect(done.next).toBeUndefined()
    expect(done.data.map((d) => d.metadata?.sourceURL)).toEqual([`${site.origin}/about`, `${site.origin}/team`])
    expect(done.data[0]!.markdown).toContain("# About")
    // every page at once, through the v1 crawl path too (where 1.x's batchScrapeUrls polls)
    expect((await client().checkBatchScrapeStatus(id, true) as BatchScrapeStatusResponse).data).toHaveLength(2)
    expect(await client().checkCrawlStatus(id)).toMatchObject({ success: true, status: "completed", total: 2 })
  }, 60_000)

  it("errors: FirecrawlError with the text of the server's Firecrawl error body, never [object Object]", async () => {
    // a 400 on start: 1.x puts the body's `error` text in its message
    const invalid = await rejection(client().asyncBatchScrapeUrls(["not a url"]))
    expect(invalid).toBeInstanceOf(FirecrawlError)
    expect((invalid as FirecrawlError).statusCode).toBe(400)
    expect((invalid as FirecrawlError).message).toContain("invalid URLs not a url")
    const refused = await rejection(client().batchScrapeUrls([`${site.origin}/about`], { actions: [{ type: "wait", milliseconds: 5 }] } as never))
    expect((refused as FirecrawlError).statusCode).toBe(400)
    expect((refused as FirecrawlError).message).toContain("actions is not supported")
    // a Firecrawl path this server does not serve: a 404 in Firecrawl's body, its text in the error
    const search = await rejection(client().search("effect"))
    expect((search as FirecrawlError).statusCode).toBe(404)
    expect((search as FirecrawlError).message).toContain("Error: no route for POST /v1/search")
    expect((search as FirecrawlError).message).not.toContain("[object Object]")
    // an unknown batch: a 404 in Firecrawl's body (1.x's status check reports a 404 by its
    // status only: it reads the body's text for 400, 402, 403, 408, 409 and 500)
    const unknown = await rejection(client().checkBatchScrapeStatus("no-such-batch"))
    expect((unknown as FirecrawlError).message).toContain("Status code: 404")
    const raw = await fetch(`${serve.url}/v1/batch/scrape/no-such-batch`, { headers: { authorization: `Bearer ${serverKey}` } })
    expect(raw.status).toBe(404)
    expect(await raw.json()).toEqual({ success: false, error: expect.stringContaining("no crawl job no-such-batch") })
  }, 30_000)
})
