import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Chat from "../../src/api/Chat.js"
import * as Search from "../../src/api/Search.js"
import * as Answer from "../../src/pipeline/Answer.js"
import * as Principal from "../../src/pipeline/Principal.js"
import { citationOf, parseCitations } from "../../src/pipeline/internal/answer-citations.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { Filter, VectorStore } from "../../src/store/VectorStore.js"
import { clientLayer, startServer } from "../support/server.js"
import { chatHandler, fillCollection, numberOf, searchReply } from "./answer-fixtures.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-answer-"))
const uri = join(root, "db")
beforeAll(() => Effect.runPromise(fillCollection(uri)))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const store = () => LanceDbStore.layer({ uri })
const chatAt = (url: string, model: string | null = "chat-1", apiKey?: string) =>
  Chat.layer({ model: model ?? undefined }).pipe(Layer.provide(clientLayer(url, apiKey === undefined ? {} : { apiKey })))

describe("Answer.query (offline)", () => {
  it.scopedLive("returns numbered hits with score, source, page, chunk and title", () =>
    Effect.gen(function*() {
      const r = yield* Answer.query("docs", "Fresnel lens lighthouse", { limit: 3 })
      expect(r.mode).toBe("fulltext")
      expect(r.hits.map((h) => h.n)).toEqual(r.hits.map((_, i) => i + 1))
      const top = r.hits[0]!
      expect(top).toMatchObject({ source: "guides/lighthouse.md", page: 1, chunk: 0, title: "Lighthouse optics" })
      expect(top.score).toBeGreaterThan(0)
      expect(r.hits.every((h, i) => i === 0 || r.hits[i - 1]!.score >= h.score)).toBe(true)
    }).pipe(Effect.provide(Layer.merge(store(), Principal.layerUnrestricted))))

  it.scopedLive("applies metadata filters, parsed from key=value with typed values", () =>
    Effect.gen(function*() {
      const c = yield* Effect.flatMap(VectorStore, (s) => s.open("docs"))
      const bySource = yield* Answer.query(c, "lighthouse", { filter: Filter.eq("source", "notes/keeper.txt") })
      expect(bySource.hits.length).toBe(1)
      expect(bySource.hits[0]!.source).toBe("notes/keeper.txt")

      const parsed = yield* Answer.parseFilters(["page=2", "source=reports/harbour.pdf", "source=guides/lighthouse.md"], c.spec)
      expect(parsed).toEqual({
        _tag: "And",
        filters: [
          { _tag: "Compare", field: "page", op: "=", value: 2 },
          { _tag: "In", field: "source", values: ["reports/harbour.pdf", "guides/lighthouse.md"] }
        ]
      })
      const onPage2 = yield* Answer.query(c, "lighthouse harbour lamp dredged", { filter: parsed })
      expect(onPage2.hits.map((h) => h.id).sort()).toEqual(["guides/lighthouse.md#1", "reports/harbour.pdf#1"])

      const unknown = yield* Effect.flip(Answer.parseFilters(["lang=en"], c.spec))
      expect(unknown._tag).toBe("InvalidFilter")
      expect(unknown.message).toContain("declared: chunk, documentId, page, source, title")
      const notNumber = yield* Effect.flip(Answer.parseFilters(["page=two"], c.spec))
      expect(notNumber.message).toContain("page is a number field")
    }).pipe(Effect.provide(Layer.merge(store(), Principal.layerUnrestricted))))

  it.scopedLive("vector or hybrid without an embedder is a configuration error, not a silent fallback", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(Answer.query("docs", "lens", { mode: "hybrid" }))
      expect(e._tag).toBe("ConfigurationError")
    }).pipe(Effect.provide(Layer.merge(store(), Principal.layerUnrestricted))))
})

describe("Answer.ask (loopback chat server: SSE, tool call, citations)", () => {
  it.scopedLive("streams deltas, runs the tool round and maps citations to sources", () =>
    Effect.gen(function*() {
      const server = yield* startServer(chatHandler)
      const events = yield* Stream.runCollect(
        Answer.askStream("docs", "Who invented the Fresnel lens?", { limit: 2 })
      ).pipe(Effect.provide(Layer.mergeAll(store(), chatAt(server.url), Principal.layerUnrestricted)))
      const list = Chunk.toReadonlyArray(events)

      // the event order: initial sources, the tool call and its sources, deltas, the answer
      expect(list.map((e) => e._tag).filter((t, i, a) => a[i - 1] !== t)).toEqual(["Sources", "ToolCall", "Sources", "Delta", "Done"])
      const deltas = list.filter((e) => e._tag === "Delta").map((e) => e.text)
      expect(deltas.length).toBe(5)
      const done = list[list.length - 1]!
      if (done._tag !== "Done") throw new Error("no Done event")
      const answer = done.answer
      expect(answer.text).toBe(deltas.join(""))

      // round 1: numbered sources in the prompt, the tool offered
      expect(server.received.length).toBe(2)
      const first = server.received[0]!.json as Chat.ChatRequest & { stream: boolean }
      expect(first.stream).toBe(true)
      expect(first.model).toBe("chat-1")
      expect(first.tools?.[0]?.function.name).toBe("search_documents")
      expect(first.tool_choice).toBe("auto")
      const prompt = String(first.messages[1]!.content)
      expect(prompt).toMatch(/^Sources:\n\n\[1\] Lighthouse optics \(guides\/lighthouse\.md, page 1\)\nThe Fresnel lens was invented/)
      expect(prompt).toContain("Question: Who invented the Fresnel lens?")
      expect(String(first.messages[0]!.content)).toContain("[1]")

      // round 2: the assistant's tool call and the tool result (new sources numbered after the first ones)
      const second = server.received[1]!.json as Chat.ChatRequest
      const assistant = second.messages[2]!
      expect(assistant).toMatchObject({ role: "assistant", tool_calls: [{ id: "call_1", function: { name: "search_documents", arguments: "{\"query\": \"harbour dredged\"}" } }] })
      const tool = second.messages[3]!
      expect(tool).toMatchObject({ role: "tool", tool_call_id: "call_1" })
      const harbourN = numberOf(String((tool as { content: string }).content), "reports/harbour.pdf")
      expect(harbourN).toBeGreaterThan(2)
      expect(answer.searches).toEqual([{ query: "harbour dredged", sources: expect.arrayContaining([harbourN]) }])

      // citations: [1] -> the lens chunk, [harbourN] -> the harbour chunk, 99 -> nothing
      expect(answer.cited.map((s) => [s.n, s.source, s.page, s.chunk])).toEqual([
        [1, "guides/lighthouse.md", 1, 0],
        [harbourN, "reports/harbour.pdf", 2, 1]
      ])
      expect(answer.unknownCitations).toEqual([99])
      expect(answer.citations.map((c) => c.n)).toEqual([1, harbourN, 99])
      expect(answer.citations[2]!.source).toBeUndefined()
      expect(answer.usage).toEqual({ promptTokens: 300, completionTokens: 40 })
      expect(answer.finishReason).toBe("stop")
      expect(JSON.parse(JSON.stringify(answer)).cited.length).toBe(2)
    }))

  it.scopedLive("without tools: one round, no tool offered, answer through ask", () =>
    Effect.gen(function*() {
      const server = yield* startServer((req, res) =>
        chatHandler({ ...req, json: { ...(req.json as object), messages: [...(req.json as { messages: Array<unknown> }).messages, { role: "tool", content: "" }] } }, res)
      )
      const answer = yield* Answer.ask("docs", "Who invented the Fresnel lens?", { tools: false, model: "other-model" }).pipe(
        Effect.provide(Layer.mergeAll(store(), chatAt(server.url), Principal.layerUnrestricted))
      )
      const body = server.received[0]!.json as Chat.ChatRequest
      expect(body.tools).toBeUndefined()
      expect(body.model).toBe("other-model")
      expect(server.received.length).toBe(1)
      expect(answer.cited[0]).toMatchObject({ n: 1, source: "guides/lighthouse.md" })
      expect(answer.searches).toEqual([])
    }))

  it.scopedLive("the last allowed round forbids more tool calls (tool_choice none)", () =>
    Effect.gen(function*() {
      const server = yield* startServer(chatHandler)
      const answer = yield* Answer.ask("docs", "Who invented the Fresnel lens?", { maxToolRounds: 0 }).pipe(
        Effect.provide(Layer.mergeAll(store(), chatAt(server.url), Principal.layerUnrestricted))
      )
      // maxToolRounds 0: no tool offered, and a tool call from the server is not followed
      expect((server.received[0]!.json as Chat.ChatRequest).tools).toBeUndefined()
      expect(server.received.length).toBe(1)
      expect(answer.text).toBe("")
    }))

  it.scopedLive("no chat model: a typed error that says how to configure one, before any request", () =>
    Effect.gen(function*() {
      const server = yield* startServer(chatHandler)
      const error = yield* Effect.flip(Answer.ask("docs", "Who?").pipe(Effect.provide(Layer.mergeAll(store(), chatAt(server.url, null), Principal.layerUnrestricted))))
      expect(error).toBeInstanceOf(Answer.ChatNotConfigured)
      expect(error._tag).toBe("ChatNotConfigured")
      if (error._tag !== "ChatNotConfigured") return
      expect(error.reason).toBe("model")
      for (const v of ["EFFECT_RAG_CHAT_MODEL", "EFFECT_RAG_BASE_URL", "EFFECT_RAG_API_KEY"]) expect(error.message).toContain(v)
      expect(server.received.length).toBe(0)
    }))

  it.scopedLive("no API key: the same typed error (reason apiKey)", () =>
    Effect.gen(function*() {
      const server = yield* startServer(chatHandler)
      const error = yield* Effect.flip(
        Answer.ask("docs", "Who?").pipe(Effect.provide(Layer.mergeAll(store(), chatAt(server.url, "chat-1", ""), Principal.layerUnrestricted)))
      )
      expect(error._tag).toBe("ChatNotConfigured")
      if (error._tag !== "ChatNotConfigured") return
      expect(error.reason).toBe("apiKey")
      expect(error.message).toContain("EFFECT_RAG_API_KEY")
      expect(server.received.length).toBe(0)
    }))

  it.scopedLive("an error event inside the stream fails the answer with StreamError", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.end(`data: ${JSON.stringify({ error: { message: "overloaded", type: "server_error" } })}\n\n`)
      })
      const error = yield* Effect.flip(
        Answer.ask("docs", "Who?", { tools: false }).pipe(Effect.provide(Layer.mergeAll(store(), chatAt(server.url), Principal.layerUnrestricted)))
      )
      expect(error._tag).toBe("StreamError")
    }))
})

describe("Answer.askWithSearch (AI search path)", () => {
  it.scopedLive("sends the question to AI search and maps its citations to its sources", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: searchReply }))
      const answer = yield* Answer.askWithSearch("When was the first Fresnel lens used?", { focusMode: "academicSearch" }).pipe(
        Effect.provide(Layer.merge(Search.layer.pipe(Layer.provide(clientLayer(server.url))), Principal.layerUnrestricted))
      )
      const body = server.received[0]!.json as Search.SearchRequest
      expect(body.params).toMatchObject({
        query: "When was the first Fresnel lens used?",
        focusMode: "academicSearch",
        chatModel: Answer.defaultSearchChatModel
      })
      expect(answer.via).toBe("search")
      expect(answer.cited.map((s) => s.source)).toEqual(["https://example.org/fresnel", "https://example.org/cordouan"])
      expect(answer.cited[0]).toMatchObject({ n: 2, title: "Fresnel lens", text: "A Fresnel lens concentrates light." })
      expect(answer.unknownCitations).toEqual([])
    }))
})

describe("citation helpers", () => {
  it("parses single, grouped and ranged citations, not markdown links", () => {
    const marks = parseCitations("A [1]. B [2, 3]; C [4-6] and [7][8]. See [docs](http://x) and [9](http://y).")
    expect(marks.map((m) => m.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
  })

  it("reads metadata defensively", () => {
    expect(citationOf({ id: "d#3", documentId: "d", title: undefined, metadata: { url: "https://x", from_page: 4 } }))
      .toEqual({ source: "https://x", page: 4, place: "page 4", chunk: 3, title: undefined })
    expect(citationOf({ id: "c1", documentId: "doc-a", title: "T", metadata: {} }))
      .toEqual({ source: "doc-a", page: undefined, place: undefined, chunk: undefined, title: "T" })
  })
})
