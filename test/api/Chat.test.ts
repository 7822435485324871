import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import type { ServerResponse } from "node:http"
import * as Chat from "../../src/api/Chat.js"
import { clientLayer, startServer, testKey, type Handler } from "../support/server.js"

const sse = (res: ServerResponse, events: ReadonlyArray<string>, splitAt?: number) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  const text = events.map((e) => `data: ${e}\n\n`).join("")
  // Write in awkward pieces so that events straddle TCP writes.
  const step = splitAt ?? text.length
  for (let i = 0; i < text.length; i += step) res.write(text.slice(i, i + step))
  res.end()
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })

const withChat = <A, E>(handler: Handler, f: (chat: Chat.Service) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const server = yield* startServer(handler)
    const result = yield* Effect.flatMap(Chat.Chat, f).pipe(
      Effect.provide(Chat.layer().pipe(Layer.provide(clientLayer(server.url))))
    )
    return { server, result }
  })

const request: Chat.ChatRequest = {
  model: "chat-1",
  messages: [
    { role: "system", content: "Be brief." },
    {
      role: "user",
      content: [
        { type: "text", text: "What is in this image?" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA", detail: "auto" } }
      ]
    }
  ]
}

describe("Chat", () => {
  it.scoped("create sends the request exactly and decodes the completion", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withChat(
        () => ({
          json: {
            id: "c1",
            object: "chat.completion",
            created: 1,
            model: "chat-1",
            choices: [{ index: 0, message: { role: "assistant", content: "A cat." }, finish_reason: "stop" }],
            usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
            unknown_field: true
          }
        }),
        (chat) => chat.create({ ...request, temperature: 0.2, max_tokens: 20 })
      )
      expect(result.choices[0]?.message.content).toBe("A cat.")
      expect(result.usage?.total_tokens).toBe(11)
      expect(server.received[0]?.json).toEqual({ ...request, temperature: 0.2, max_tokens: 20, stream: false })
      expect(server.received[0]?.headers.authorization).toBe(`Bearer ${testKey}`)
    }))

  it.scoped("tools and tool-result messages round-trip", () =>
    Effect.gen(function*() {
      const tools: ReadonlyArray<Chat.Tool> = [{
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather for a city",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        }
      }]
      const { result, server } = yield* withChat(
        () => ({
          json: {
            choices: [{
              index: 0,
              message: {
                role: "assistant",
                content: null,
                tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }]
              },
              finish_reason: "tool_calls"
            }]
          }
        }),
        (chat) =>
          chat.create({
            model: "chat-1",
            tools,
            messages: [
              { role: "user", content: "Weather in Oslo?" },
              { role: "assistant", content: null, tool_calls: [{ id: "call_0", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
              { role: "tool", tool_call_id: "call_0", content: "{\"error\":\"city required\"}" }
            ]
          })
      )
      expect(result.choices[0]?.message.tool_calls?.[0]?.function.arguments).toBe("{\"city\":\"Oslo\"}")
      const sent = server.received[0]?.json as { tools: unknown; messages: Array<{ role: string }> }
      expect(sent.tools).toEqual(tools)
      expect(sent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"])
    }))

  it.scoped("stream parses SSE split across writes and folds tool-call pieces by index", () =>
    Effect.gen(function*() {
      const events = [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Checking " }),
        chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "get_", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "lookup", arguments: "{\"q\":" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { name: "weather", arguments: "{\"city\":" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: "\"Oslo\"}" } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: "\"x\"}" } }] }),
        chunk({ content: "the weather." }, "tool_calls"),
        "[DONE]"
      ]
      const { result, server } = yield* withChat(
        (_req, res) => sse(res, events, 7),
        (chat) => Chat.foldStream(chat.stream(request))
      )
      expect((server.received[0]?.json as { stream: boolean }).stream).toBe(true)
      expect(result.content).toBe("Checking the weather.")
      expect(result.finish_reason).toBe("tool_calls")
      expect(result.tool_calls).toEqual([
        { id: "call_a", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } },
        { id: "call_b", type: "function", function: { name: "lookup", arguments: "{\"q\":\"x\"}" } }
      ])
    }))

  it.scoped("textDeltas yields the text pieces in order", () =>
    Effect.gen(function*() {
      const { result } = yield* withChat(
        (_req, res) => sse(res, [chunk({ content: "Hel" }), chunk({ content: "lo" }), "[DONE]"]),
        (chat) => Stream.runCollect(Chat.textDeltas(chat.stream(request)))
      )
      expect(Chunk.toReadonlyArray(result)).toEqual(["Hel", "lo"])
    }))

  it.scoped("an error event inside the stream is a StreamError, after the chunks before it", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const { result } = yield* withChat(
        (_req, res) =>
          sse(res, [
            chunk({ content: "partial" }),
            JSON.stringify({ error: { message: "model overloaded", type: "server_error", code: "overloaded" } })
          ]),
        (chat) =>
          chat.stream(request).pipe(
            Stream.tap((c) => Effect.sync(() => seen.push(c.choices[0]?.delta.content ?? ""))),
            Stream.runDrain,
            Effect.flip
          )
      )
      expect(seen).toEqual(["partial"])
      expect(result._tag).toBe("StreamError")
      if (result._tag === "StreamError") {
        expect(result.message).toContain("model overloaded")
        expect(result.code).toBe("overloaded")
      }
    }))

  it.scoped("a chunk that does not decode is a DecodeError naming the field", () =>
    Effect.gen(function*() {
      const { result } = yield* withChat(
        (_req, res) => sse(res, [JSON.stringify({ choices: [{ index: "zero", delta: {} }] })]),
        (chat) => Effect.flip(Stream.runDrain(chat.stream(request)))
      )
      expect(result._tag).toBe("DecodeError")
      if (result._tag === "DecodeError") expect(result.path).toBe("choices[0].index")
    }))

  it.scoped("a chunk without choices is a DecodeError (an empty choices array is a usage chunk)", () =>
    Effect.gen(function*() {
      const { result } = yield* withChat(
        (_req, res) =>
          sse(res, [
            chunk({ content: "kept" }),
            JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }),
            JSON.stringify({ object: "chat.completion.chunk", id: "x" })
          ]),
        (chat) => Effect.flip(Stream.runDrain(chat.stream(request)))
      )
      expect(result._tag).toBe("DecodeError")
      if (result._tag === "DecodeError") {
        expect(result.path).toBe("choices")
        expect(result.endpoint).toBe("POST /v1/chat/completions")
      }
    }))

  it.scoped("stream sends stream_options; create leaves it out", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withChat(
        (req, res) =>
          (req.json as { stream?: boolean }).stream
            ? sse(res, [
              chunk({ content: "Hi" }, "stop"),
              JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }),
              "[DONE]"
            ])
            : { json: { choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }] } },
        (chat) =>
          Effect.zip(
            Chat.foldStream(chat.stream({ ...request, stream_options: { include_usage: true } })),
            chat.create({ ...request, stream_options: { include_usage: true } })
          )
      )
      expect(server.received[0]?.json).toEqual({ ...request, stream: true, stream_options: { include_usage: true } })
      expect(server.received[1]?.json).toEqual({ ...request, stream: false })
      expect(result[0].content).toBe("Hi")
      expect(result[0].usage?.total_tokens).toBe(6)
    }))

  it.scoped("a stream that breaks after deltas is a TransportError aborted with the partial text, not retried", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withChat(
        (_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.write(`data: ${chunk({ role: "assistant", content: "The answer " })}\n\n`)
          res.write(`data: ${chunk({ content: "is 4" })}\n\n`)
          // then the connection closes mid-stream (after the written data, without the end of
          // the chunked body)
          res.socket?.end()
        },
        (chat) => Effect.flip(Stream.runDrain(chat.stream(request)))
      )
      expect(result._tag).toBe("TransportError")
      if (result._tag === "TransportError") {
        expect(result.reason).toBe("aborted")
        expect(result.partial?.content).toBe("The answer is 4")
        expect(result.partial?.chunks).toBe(2)
        expect(result.message).not.toContain(testKey)
      }
      expect(server.received).toHaveLength(1)
    }))

  it.scoped("a stream whose body ends cleanly but without [DONE] was cut off: TransportError aborted with the partial", () =>
    Effect.gen(function*() {
      const { result } = yield* withChat(
        (_req, res) => sse(res, [chunk({ role: "assistant", content: "The answer " }), chunk({ content: "is" })]),
        (chat) => Effect.flip(Stream.runDrain(chat.stream(request)))
      )
      expect(result._tag).toBe("TransportError")
      if (result._tag === "TransportError") {
        expect(result.reason).toBe("aborted")
        expect(result.message).toContain("without [DONE]")
        expect(result.partial?.content).toBe("The answer is")
      }
    }))

  it.scoped("a server that ignores stream: true and answers one JSON completion is a DecodeError, never an empty answer", () =>
    Effect.gen(function*() {
      const completion = {
        id: "c1",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "Hi" } }]
      }
      const { result } = yield* withChat(
        (_req, res) => {
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify(completion))
        },
        (chat) => Effect.flip(Stream.runDrain(chat.stream(request)))
      )
      expect(result._tag).toBe("DecodeError")
      expect(result.message).toContain("not a server-sent event stream")
    }))

  it.scoped("a 400 before the stream starts is a BadRequest, not retried", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withChat(
        () => ({ status: 400, json: { error: { message: "bad model", type: "invalid_request_error", code: null } } }),
        (chat) => Effect.flip(Stream.runDrain(chat.stream(request)))
      )
      expect(result._tag).toBe("BadRequest")
      expect(server.received).toHaveLength(1)
    }))
})
