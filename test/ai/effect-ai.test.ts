/**
 * An `@effect/ai` program (generateText with a tool, streamText, embedMany) against our server
 * over loopback:
 *
 *   @effect/ai program → RagLanguageModel / RagEmbeddingModel → library REMOTE client
 *     → OUR server (gateway, src/server) → UPSTREAM fake at the HTTP edge (wire format)
 */
import * as AiChat from "@effect/ai/Chat"
import * as EmbeddingModel from "@effect/ai/EmbeddingModel"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import type { ServerResponse } from "node:http"
import * as RagEmbeddingModel from "../../src/ai/RagEmbeddingModel.js"
import * as RagLanguageModel from "../../src/ai/RagLanguageModel.js"
import * as Chat from "../../src/api/Chat.js"
import * as Embeddings from "../../src/api/Embeddings.js"
import { clientLayer, type Received, type Reply, serveOurs, startServer } from "../support/server.js"

// =============================================================================
// Upstream fake (chat completions and embeddings wire format)
// =============================================================================

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({ id: "s1", object: "chat.completion.chunk", created: 1700000001, model: "chat-1", choices: [{ index: 0, delta, finish_reason: finish }] })

const sse = (res: ServerResponse, events: ReadonlyArray<string>) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  res.end(events.map((e) => `data: ${e}\n\n`).join(""))
}

/** A deterministic vector per text: [length, first char code, 1]. */
const vectorOf = (text: string) => [text.length, text.charCodeAt(0) || 0, 1]

const upstreamHandler = (req: Received, res: ServerResponse): Reply | void => {
  const body = (req.json ?? {}) as Record<string, any>
  if (req.path === "/v1/embeddings") {
    const input: Array<string> = typeof body.input === "string" ? [body.input] : body.input
    // answered in reverse order: placement must go by index
    return {
      json: {
        object: "list",
        model: body.model,
        data: input.map((text, index) => ({ object: "embedding", index, embedding: vectorOf(text) })).reverse(),
        usage: { prompt_tokens: input.length, total_tokens: input.length }
      }
    }
  }
  if (req.path !== "/v1/chat/completions") return { status: 404, json: { error: { message: "no route" } } }
  if (body.stream === true && Array.isArray(body.tools)) {
    // a tool call streamed in pieces
    return sse(res, [
      chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_7", type: "function", function: { name: "GetWeather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"city\":" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: "\"Oslo\"}" } }] }),
      chunk({}, "tool_calls"),
      "[DONE]"
    ])
  }
  if (body.stream === true) {
    return sse(res, [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Sunny " }),
      chunk({ content: "in Oslo." }),
      chunk({}, "stop"),
      JSON.stringify({ id: "s1", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } }),
      "[DONE]"
    ])
  }
  const messages: Array<Record<string, any>> = body.messages
  const toolReply = messages.find((m) => m.role === "tool")
  if (toolReply === undefined) {
    return {
      json: {
        id: "c1",
        object: "chat.completion",
        created: 1700000000,
        model: "chat-1",
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "call_1", type: "function", function: { name: "GetWeather", arguments: "{\"city\":\"Oslo\"}" } }]
          },
          finish_reason: "tool_calls"
        }],
        usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 }
      }
    }
  }
  const temperature = JSON.parse(toolReply.content).temperature
  return {
    json: {
      id: "c2",
      object: "chat.completion",
      created: 1700000002,
      model: "chat-1",
      choices: [{ index: 0, message: { role: "assistant", content: `It is ${temperature} °C in Oslo.` }, finish_reason: "stop" }],
      usage: { prompt_tokens: 30, completion_tokens: 8, total_tokens: 38 }
    }
  }
}

// =============================================================================
// The @effect/ai program
// =============================================================================

const GetWeather = Tool.make("GetWeather", {
  description: "The current weather of a city",
  parameters: { city: Schema.String },
  success: Schema.Struct({ temperature: Schema.Number })
})
const Tools = Toolkit.make(GetWeather)
const ToolsLive = Tools.toLayer({ GetWeather: ({ city }) => Effect.succeed({ temperature: city === "Oslo" ? 21 : 0 }) })

/** Our server as a gateway to the upstream, and the @effect/ai layers over clients of it. */
const setup = Effect.gen(function*() {
  const upstream = yield* startServer(upstreamHandler)
  const url = yield* serveOurs(
    Layer.mergeAll(Chat.layer(), Embeddings.layer()).pipe(Layer.provide(clientLayer(upstream.url)))
  )
  const ai = Layer.mergeAll(
    RagLanguageModel.layer({ model: "chat-1", config: { temperature: 0.2 } }),
    RagEmbeddingModel.layer({ model: "embed-1", maxBatchSize: 2 })
  ).pipe(Layer.provide(Layer.mergeAll(Chat.layer(), Embeddings.layer())), Layer.provide(clientLayer(url)))
  return { upstream, ai }
})

describe("@effect/ai over our server", () => {
  it.scopedLive("generateText with a tool, then the answer that uses its result", () =>
    Effect.gen(function*() {
      const { ai, upstream } = yield* setup
      const { first, second } = yield* Effect.gen(function*() {
        const session = yield* AiChat.empty
        const first = yield* session.generateText({ prompt: "What is the weather in Oslo?", toolkit: Tools })
        const second = yield* session.generateText({ prompt: [], toolkit: Tools })
        return { first, second }
      }).pipe(Effect.provide(ToolsLive), Effect.provide(ai))

      expect(first.toolCalls.map((c) => [c.name, c.params])).toEqual([["GetWeather", { city: "Oslo" }]])
      expect(first.toolResults.map((r) => r.result)).toEqual([{ temperature: 21 }])
      expect(first.finishReason).toBe("tool-calls")
      expect(first.usage.totalTokens).toBe(26)
      expect(second.text).toBe("It is 21 °C in Oslo.")
      expect(second.finishReason).toBe("stop")

      // what reached the upstream through our server: the tool as a function tool, then the
      // assistant's call and the tool's result as chat messages
      const sent = upstream.received.filter((r) => r.path === "/v1/chat/completions").map((r) => r.json as any)
      expect(sent[0].model).toBe("chat-1")
      expect(sent[0].temperature).toBe(0.2)
      expect(sent[0].tools[0].function.name).toBe("GetWeather")
      expect(sent[0].tools[0].function.description).toBe("The current weather of a city")
      expect(sent[0].tools[0].function.parameters.properties.city.type).toBe("string")
      expect(sent[0].messages).toEqual([{ role: "user", content: "What is the weather in Oslo?" }])
      expect(sent[1].messages.slice(1)).toEqual([
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "GetWeather", arguments: "{\"city\":\"Oslo\"}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"temperature\":21}" }
      ])
    }))

  it.scopedLive("streamText yields text deltas and a finish part with usage", () =>
    Effect.gen(function*() {
      const { ai, upstream } = yield* setup
      const parts = Chunk.toReadonlyArray(
        yield* Stream.runCollect(LanguageModel.streamText({ prompt: "Weather?" })).pipe(Effect.provide(ai))
      )
      const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
      expect(text).toBe("Sunny in Oslo.")
      const finish = parts.find((p) => p.type === "finish")
      expect(finish?.type === "finish" && finish.reason).toBe("stop")
      expect(finish?.type === "finish" && finish.usage.totalTokens).toBe(8)
      expect((upstream.received.at(-1)?.json as any).stream).toBe(true)
    }))

  it.scopedLive("streamText with a toolkit: the streamed call is joined, run, and its result streamed", () =>
    Effect.gen(function*() {
      const { ai } = yield* setup
      const parts = Chunk.toReadonlyArray(
        yield* Stream.runCollect(LanguageModel.streamText({ prompt: "Weather in Oslo?", toolkit: Tools })).pipe(
          Effect.provide(ToolsLive),
          Effect.provide(ai)
        )
      )
      const deltas = parts.flatMap((p) => (p.type === "tool-params-delta" ? [p.delta] : [])).join("")
      expect(deltas).toBe("{\"city\":\"Oslo\"}")
      const call = parts.find((p) => p.type === "tool-call")
      expect(call?.type === "tool-call" && [call.id, call.name, call.params]).toEqual(["call_7", "GetWeather", { city: "Oslo" }])
      const result = parts.find((p) => p.type === "tool-result")
      expect(result?.type === "tool-result" && result.result).toEqual({ temperature: 21 })
      const finish = parts.find((p) => p.type === "finish")
      expect(finish?.type === "finish" && finish.reason).toBe("tool-calls")
    }))

  it.scopedLive("embedMany returns one vector per input, in input order", () =>
    Effect.gen(function*() {
      const { ai, upstream } = yield* setup
      const texts = ["alpha", "be", "gamma!"]
      const vectors = yield* Effect.flatMap(EmbeddingModel.EmbeddingModel, (m) => m.embedMany(texts)).pipe(
        Effect.provide(ai)
      )
      expect(vectors).toEqual(texts.map(vectorOf))
      const sent = upstream.received.filter((r) => r.path === "/v1/embeddings").map((r) => r.json as any)
      expect(sent.every((b) => b.model === "embed-1")).toBe(true)
    }))
})
