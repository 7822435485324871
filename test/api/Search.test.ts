import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Search from "../../src/api/Search.js"
import type * as RagConfig from "../../src/RagConfig.js"
import { clientLayer, startServer, testKey, type TestServer } from "../support/server.js"

const params: Search.SearchParams = {
  query: "What is retrieval-augmented generation?",
  chatModel: { provider: "openai", model: "chat-4o-mini" },
  embeddingModel: { provider: "jina", model: "jina-embeddings-v3" },
  focusMode: "webSearch",
  optimizationMode: "balanced",
  history: [["human", "Hi"], ["assistant", "Hello! Ask me anything."]]
}

const answer = {
  id: "search-1",
  object: "search.completion",
  created: 1_700_000_000,
  model: "svc-ai-search",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        content: "RAG retrieves documents and grounds the answer in them [1].",
        sources: [
          { pageContent: "RAG combines retrieval with generation.", metadata: { title: "RAG", url: "https://a.example/rag" } },
          { pageContent: "Second source.", metadata: { title: "More", url: "https://b.example/more" } }
        ],
        videos: [{ url: "https://v.example/1", img_src: "https://v.example/1.jpg", title: "Intro", iframe_src: "https://v.example/embed/1" }],
        images: null,
        suggestions: ["How does reranking help?", "What is a vector store?"]
      },
      finish_reason: "stop"
    }
  ],
  usage: {
    prompt_tokens: 120,
    completion_tokens: 40,
    total_tokens: 160,
    prompt_tokens_details: { cached_tokens: 0, text_tokens: 120, audio_tokens: 0, image_tokens: 0 },
    completion_tokens_details: { text_tokens: 40, audio_tokens: 0 }
  },
  system_fingerprint: "fp-1"
}

/** A server that must not be called. */
const untouched = () => startServer(() => ({ status: 500, json: { error: { message: "wrong host" } } }))

const run = <A, E>(
  hosts: { readonly base: TestServer; readonly crawl: TestServer },
  f: (search: Search.Service) => Effect.Effect<A, E>,
  options: RagConfig.Options = {}
) =>
  Effect.flatMap(Search.Search, f).pipe(
    Effect.provide(
      Search.layer.pipe(Layer.provide(clientLayer(hosts.base.url, { crawlUrl: hosts.crawl.url, ...options })))
    )
  )

describe("Search", () => {
  it.scoped("sends every param exactly to POST {baseUrl}/v1/web and decodes sources and suggestions", () =>
    Effect.gen(function*() {
      const crawl = yield* untouched()
      const base = yield* startServer(() => ({ json: answer }))
      const response = yield* run({ base, crawl }, (s) => s.search({ params }))

      expect(crawl.received).toHaveLength(0)
      expect(base.received).toHaveLength(1)
      const r = base.received[0]
      expect(`${r?.method} ${r?.path}`).toBe("POST /v1/web")
      expect(r?.headers.authorization).toBe(`Bearer ${testKey}`)
      expect(r?.json).toEqual({
        model: "svc-ai-search",
        params: {
          query: "What is retrieval-augmented generation?",
          chatModel: { provider: "openai", model: "chat-4o-mini" },
          embeddingModel: { provider: "jina", model: "jina-embeddings-v3" },
          focusMode: "webSearch",
          optimizationMode: "balanced",
          history: [["human", "Hi"], ["assistant", "Hello! Ask me anything."]]
        }
      })

      const message = response.choices[0]?.message
      expect(message?.content).toContain("RAG retrieves")
      expect(message?.sources).toEqual([
        { pageContent: "RAG combines retrieval with generation.", metadata: { title: "RAG", url: "https://a.example/rag" } },
        { pageContent: "Second source.", metadata: { title: "More", url: "https://b.example/more" } }
      ])
      expect(message?.suggestions).toEqual(["How does reranking help?", "What is a vector store?"])
      expect(message?.videos[0]?.iframe_src).toBe("https://v.example/embed/1")
      // `images: null` is tolerated as no images.
      expect(message?.images).toEqual([])
      expect(response.choices[0]?.finish_reason).toBe("stop")
      expect(response.usage?.prompt_tokens_details?.text_tokens).toBe(120)
      expect(response.usage?.completion_tokens_details?.text_tokens).toBe(40)
      expect(response.system_fingerprint).toBe("fp-1")
    }))

  it.scoped("a minimal response decodes with defaults", () =>
    Effect.gen(function*() {
      const crawl = yield* untouched()
      const base = yield* startServer(() => ({ json: { choices: [{ message: { content: "short" } }] } }))
      const response = yield* run({ base, crawl }, (s) => s.search({ params: { ...params, history: undefined } }))
      expect(response.choices[0]?.message).toEqual({
        role: "assistant",
        content: "short",
        sources: [],
        videos: [],
        images: [],
        suggestions: []
      })
      // An undefined optional field is not sent.
      expect(Object.keys((base.received[0]?.json as { params: object }).params)).not.toContain("history")
    }))

  it.scoped("a 401 whose message echoes the key comes back with the key scrubbed", () =>
    Effect.gen(function*() {
      const crawl = yield* untouched()
      const base = yield* startServer((req) => ({
        status: 401,
        json: { error: { message: `Invalid API key: ${req.headers.authorization}`, type: "auth_error", code: "invalid_key" } }
      }))
      const error = yield* Effect.flip(run({ base, crawl }, (s) => s.search({ params })))
      expect(error._tag).toBe("Unauthorized")
      expect(error.message).toContain("Invalid API key")
      expect(error.message).not.toContain(testKey)
      expect(JSON.stringify(error)).not.toContain(testKey)
      expect(String(error)).not.toContain(testKey)
      expect(base.received).toHaveLength(1)
    }))

  it.scoped("without an API key the search is refused before anything is sent", () =>
    Effect.gen(function*() {
      const crawl = yield* untouched()
      const base = yield* untouched()
      const error = yield* Effect.flip(run({ base, crawl }, (s) => s.search({ params }), { apiKey: undefined }))
      expect(error._tag).toBe("ConfigurationError")
      expect(base.received).toHaveLength(0)
    }))

  it.scoped("single routing sends the search envelope to POST {baseUrl}/v1/web", () =>
    Effect.gen(function*() {
      const crawl = yield* untouched()
      const base = yield* startServer(() => ({ json: answer }))
      const response = yield* run(
        { base, crawl },
        (s) => s.search({ model: "svc-ai-search-v2", params: { ...params, optimizationMode: "speed" } }),
        { webRouting: "single" }
      )
      expect(response.id).toBe("search-1")
      expect(crawl.received).toHaveLength(0)
      expect(`${base.received[0]?.method} ${base.received[0]?.path}`).toBe("POST /v1/web")
      expect(base.received[0]?.json).toEqual({
        operation: "search",
        model: "svc-ai-search-v2",
        params: { ...params, optimizationMode: "speed" }
      })
    }))
})
