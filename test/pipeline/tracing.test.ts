/**
 * OpenTelemetry: the spans of one ingest and one ask, collected with the SDK's in-memory
 * exporter through `@effect/opentelemetry`. Real parts: the document engine, LanceDB in a temp
 * folder, the remote Embeddings and Chat clients over loopback to test servers.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, it } from "@effect/vitest"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Chat from "../../src/api/Chat.js"
import * as Embeddings from "../../src/api/Embeddings.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as Answer from "../../src/pipeline/Answer.js"
import * as Principal from "../../src/pipeline/Principal.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { clientLayer, startServer, testKey } from "../support/server.js"
import { chatHandler } from "./answer-fixtures.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-tracing-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Text that must never appear in a span attribute. */
const secretText = "Zanzibar-quokka-7731 is the keeper's private passphrase"

/** An embeddings server: deterministic 4-dimension vectors; the first call gets a 503. */
const embeddingsServer = () => {
  let calls = 0
  return startServer((req) => {
    if (req.path !== "/v1/embeddings") return { status: 404, json: { error: { message: "no route" } } }
    if (++calls === 1) return { status: 503, json: { error: { message: "warming up" } } }
    const input = (req.json as { input: string | Array<string> }).input
    const texts = typeof input === "string" ? [input] : input
    return {
      json: {
        object: "list",
        data: texts.map((t, index) => ({ object: "embedding", index, embedding: [t.length % 7, 1, 0.5, 0.25] })),
        model: "embed-1",
        usage: { prompt_tokens: texts.length * 3, total_tokens: texts.length * 3 }
      }
    }
  })
}

/**
 * The SDK's in-memory exporter, keeping its spans when the provider shuts down (the layer's
 * scope closes before the test reads them; the stock one clears them on shutdown).
 */
class KeepingExporter extends InMemorySpanExporter {
  override shutdown(): Promise<void> {
    return Promise.resolve()
  }
}

const byName = (spans: ReadonlyArray<ReadableSpan>, name: string) => spans.filter((s) => s.name === name)
const parentOf = (spans: ReadonlyArray<ReadableSpan>, span: ReadableSpan) =>
  spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId)
/** Whether `ancestor` is above `span` in the tree. */
const isUnder = (spans: ReadonlyArray<ReadableSpan>, span: ReadableSpan, ancestor: ReadableSpan): boolean => {
  for (let p = parentOf(spans, span); p !== undefined; p = parentOf(spans, p)) {
    if (p.spanContext().spanId === ancestor.spanContext().spanId) return true
  }
  return false
}

describe("tracing (OpenTelemetry in-memory exporter)", () => {
  it.scopedLive("one ingest and one ask: stage spans, HTTP client spans with semantic-convention attributes", () =>
    Effect.gen(function*() {
      const exporter = new KeepingExporter()
      const otel = NodeSdk.layer(() => ({
        resource: { serviceName: "effect-rag-test" },
        spanProcessor: new SimpleSpanProcessor(exporter)
      }))
      const docs = join(root, "docs")
      const db = join(root, "db")
      yield* Effect.promise(async () => {
        const { mkdir } = await import("node:fs/promises")
        await mkdir(docs, { recursive: true })
      })
      writeFileSync(join(docs, "keeper.txt"), `The lighthouse keeper logged every storm.\n\n${secretText}\n`)
      const embedServer = yield* embeddingsServer()
      const chatServer = yield* startServer(chatHandler)

      const embeddings = yield* Effect.provide(Embeddings.make({ model: "embed-1", dimension: 4 }), clientLayer(embedServer.url))
      const services = Layer.mergeAll(
        LocalFiles.layer({ isolation: "inline" }),
        LanceDbStore.layer({ uri: db }),
        Chat.layer({ model: "chat-1" }).pipe(Layer.provide(clientLayer(chatServer.url))),
        Principal.layerUnrestricted
      )
      yield* Effect.gen(function*() {
        const summary = yield* Ingest.run(
          { collection: "traced", sources: [Ingest.Source.path(docs)] },
          { embedder: { id: "embed-1", service: embeddings }, batchWindow: 50 }
        )
        expect(summary.ingested).toBe(1)
        const answer = yield* Answer.ask("traced", "Who logged every storm?", { limit: 2 })
        expect(answer.text.length).toBeGreaterThan(0)
      }).pipe(Effect.provide(services), Effect.provide(otel))

      const spans = exporter.getFinishedSpans()
      const one = (name: string) => {
        const found = byName(spans, name)
        expect(found.length, `span ${name}`).toBeGreaterThan(0)
        return found[0]!
      }

      // --- ingest: the stages under the run ---------------------------------------
      const run = one("Ingest.run")
      for (const stage of ["Ingest.enumerate", "Ingest.load", "Ingest.extract", "Ingest.embed", "Ingest.write"]) {
        expect(isUnder(spans, one(stage), run), `${stage} under Ingest.run`).toBe(true)
      }
      // the embedding call under the embed stage, one client span per HTTP attempt
      const embed = one("Ingest.embed")
      const embedCalls = byName(spans, "POST /v1/embeddings").filter((s) => isUnder(spans, s, embed))
      expect(embedCalls.map((s) => s.attributes["http.response.status_code"])).toEqual([503, 200])
      const [failed, retried] = embedCalls
      expect(failed!.attributes).toMatchObject({
        "http.request.method": "POST",
        "url.path": "/v1/embeddings",
        "server.address": "127.0.0.1",
        "effect_rag.attempt": 1,
        "error.type": "ServerError"
      })
      expect(retried!.attributes).toMatchObject({ "effect_rag.attempt": 2, "http.request.resend_count": 1 })
      expect(typeof retried!.attributes["effect_rag.retry.wait_ms"]).toBe("number")
      expect(retried!.kind).toBe(2) // SpanKind.CLIENT
      const create = byName(spans, "Embeddings.create").find((s) => isUnder(spans, s, embed))!
      expect(create.attributes).toMatchObject({ "gen_ai.operation.name": "embeddings", "gen_ai.request.model": "embed-1" })

      // --- ask: query, then the chat stream ----------------------------------------
      const ask = one("Answer.ask")
      expect(isUnder(spans, one("Retrieve.retrieve"), ask)).toBe(true)
      const chatSpans = byName(spans, "Chat.stream").filter((s) => isUnder(spans, s, ask))
      expect(chatSpans.length).toBeGreaterThan(0)
      expect(chatSpans[0]!.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "chat-1" })
      const chatCalls = byName(spans, "POST /v1/chat/completions").filter((s) => isUnder(spans, s, ask))
      expect(chatCalls.length).toBe(chatServer.received.length)
      for (const s of chatCalls) expect(s.attributes["http.response.status_code"]).toBe(200)

      // --- no key, no document text, no question in any attribute ----------------------
      const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events.map((e) => e.attributes)]))
      expect(everything).not.toContain(testKey)
      expect(everything).not.toContain("Zanzibar")
      expect(everything).not.toContain("keeper logged")
      expect(everything).not.toContain("Who logged every storm")
    }))
})
