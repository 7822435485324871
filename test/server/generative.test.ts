/**
 * The server as a gateway for the generative endpoints, over real HTTP on loopback only:
 *
 *   library REMOTE client → OUR server (given the REMOTE services) → UPSTREAM fake (wire format)
 *
 * The upstream is the canned HTTP edge of test/support/server.ts; our server is `Server.layer`
 * with `Chat.layer`, `Images.layer`, `Video.layer` and `Music.layer` pointed at it. Also: with
 * no services, every generative route answers 501.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Layer, Ref, Schema, Stream } from "effect"
import type { ServerResponse } from "node:http"
import * as Chat from "../../src/api/Chat.js"
import * as Images from "../../src/api/Images.js"
import * as Music from "../../src/api/Music.js"
import * as Video from "../../src/api/Video.js"
import type * as RagConfig from "../../src/RagConfig.js"
import { clientLayer, type Received, type Reply, serveOurs, startServer } from "../support/server.js"

// =============================================================================
// Upstream fake
// =============================================================================

const ok = { status_code: 0, status_msg: "success" }

const completion = {
  id: "c1",
  object: "chat.completion",
  created: 1700000000,
  model: "chat-1",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: "Let me check.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }]
    },
    finish_reason: "tool_calls"
  }],
  usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 }
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: "c2",
    object: "chat.completion.chunk",
    created: 1700000001,
    model: "chat-1",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra
  })

/** The chunks of the streamed completion: text, a tool call in pieces, finish, usage. */
const streamed = [
  chunk({ role: "assistant", content: "" }),
  chunk({ content: "Hel" }),
  chunk({ content: "lo" }),
  chunk({ tool_calls: [{ index: 0, id: "call_9", type: "function", function: { name: "get_weather", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: "{\"city\":" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: "\"Oslo\"}" } }] }),
  chunk({}, "tool_calls"),
  JSON.stringify({
    id: "c2",
    object: "chat.completion.chunk",
    created: 1700000001,
    model: "chat-1",
    choices: [],
    usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }
  })
]

const sse = (res: ServerResponse, events: ReadonlyArray<string>) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  const text = events.map((e) => `data: ${e}\n\n`).join("")
  // awkward pieces, so events straddle TCP writes
  for (let i = 0; i < text.length; i += 17) res.write(text.slice(i, i + 17))
  res.end()
}

const limited: Reply = {
  status: 429,
  headers: { "retry-after": "7" },
  json: { error: { message: "slow down", type: "rate_limit_error", code: "rate_limited" } }
}
const broken: Reply = { status: 500, json: { error: { message: "upstream exploded", type: "server_error" } } }

/** The upstream: its behaviour is chosen by the request's `model` / `prompt`. */
const upstreamHandler = () => {
  let videoTasks = 0
  let musicTasks = 0
  let flaky = 0
  return (req: Received, res: ServerResponse): Reply | void => {
    const body = (req.json ?? {}) as Record<string, unknown>
    switch (req.path) {
      case "/v1/chat/completions": {
        if (body["model"] === "limited") return limited
        if (body["model"] === "broken") return broken
        if (body["stream"] !== true) return { json: completion }
        if (body["model"] === "midstream-error") {
          return sse(res, [
            streamed[1]!,
            JSON.stringify({ error: { message: "the model overloaded", type: "server_error", code: "overloaded" } })
          ])
        }
        if (body["model"] === "empty") return sse(res, ["[DONE]"])
        return sse(res, [...streamed, "[DONE]"])
      }
      case "/v1/images/generations":
        if (body["prompt"] === "limited") return limited
        return {
          json: {
            created: 1700000002,
            data: [{ url: "https://img.example/1.png", revised_prompt: "a red fox, studio light" }, { b64_json: "AAAA" }]
          }
        }
      case "/v1/video_generation":
        if (body["model"] === "refused") return { json: { base_resp: { status_code: 1002, status_msg: "quota exhausted" } } }
        if (body["model"] === "flaky" && flaky++ === 0) return broken
        return { json: { task_id: `task-${++videoTasks}`, base_resp: ok } }
      case "/v1/query/video_generation":
        return { json: { task_id: req.url.searchParams.get("task_id"), status: "Success", file_id: 9, base_resp: ok } }
      case "/v1/files/retrieve":
        if (req.url.searchParams.get("file_id") === "missing") {
          return { status: 404, json: { error: { message: "no such file", type: "not_found_error" } } }
        }
        return {
          json: {
            file: {
              file_id: 9,
              download_url: "https://storage.example/videos/file-9.mp4",
              filename: "file-9.mp4",
              bytes: 1024,
              created_at: 1700000003,
              purpose: "video_generation"
            },
            base_resp: ok
          }
        }
      case "/svc/submit/music":
        return { json: { status: "success", data: { task_id: `m-${++musicTasks}`, estimated_completion_time: 0 } } }
      default: {
        const match = /^\/svc\/music\/status\/(.+)$/.exec(req.path)
        if (match !== null) {
          const id = decodeURIComponent(match[1]!)
          return {
            json: {
              status: "completed",
              data: { task_id: id, audio_url: `https://storage.example/music/${id}.mp3`, cover_image: `https://storage.example/music/${id}.jpg`, title: "Song" }
            }
          }
        }
        return { status: 404, json: { error: { message: `no route ${req.path}` } } }
      }
    }
  }
}

// =============================================================================
// Our server
// =============================================================================


/** Starts the upstream, then our server as a gateway to it (server→upstream client options). */
const gateway = (upstreamOptions: RagConfig.Options = {}) =>
  Effect.gen(function*() {
    const upstream = yield* startServer(upstreamHandler())
    const services = Layer.mergeAll(Chat.layer(), Images.layer, Video.layer(), Music.layer()).pipe(
      Layer.provide(clientLayer(upstream.url, upstreamOptions))
    )
    const url = yield* serveOurs(services)
    return { upstream, url }
  })

/** The library's remote clients pointed at our server. */
const clients = (url: string, options: RagConfig.Options = {}) =>
  Effect.gen(function*() {
    const http = clientLayer(url, options)
    return {
      chat: yield* Effect.provide(Chat.make(), http),
      images: yield* Effect.provide(Images.make, http),
      video: yield* Effect.provide(Video.make({ pollInterval: "5 millis" }), http),
      music: yield* Effect.provide(Music.make({ pollInterval: "5 millis", maxFirstPollDelay: "1 millis" }), http)
    }
  })

const request = (model: string): Chat.ChatRequest => ({
  model,
  messages: [{ role: "user", content: "Weather in Oslo?" }],
  tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
  temperature: 0.1
})

const noRetries: RagConfig.Options = { maxRetries: 0 }

// =============================================================================
// Tests
// =============================================================================

describe("server: generative endpoints as a gateway", () => {
  it.scopedLive("chat create round-trips content, tool calls and usage; the upstream gets the request", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* gateway()
      const { chat } = yield* clients(url)
      const result = yield* chat.create(request("chat-1"))
      expect(result).toEqual(Schema.decodeUnknownSync(Chat.ChatCompletion)(completion))
      expect(result.choices[0]?.message.content).toBe("Let me check.")
      expect(result.choices[0]?.message.tool_calls?.[0]?.function).toEqual({ name: "get_weather", arguments: "{\"city\":\"Oslo\"}" })
      expect(result.usage).toEqual({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 })
      expect(upstream.received[0]?.json).toEqual({ ...request("chat-1"), stream: false })
    }))

  it.scopedLive("chat streaming yields the upstream's chunks one for one and ends with [DONE]", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* gateway()
      const { chat } = yield* clients(url)
      const got = Chunk.toReadonlyArray(yield* Stream.runCollect(chat.stream(request("chat-1"))))
      expect(got).toEqual(streamed.map((e) => Schema.decodeUnknownSync(Chat.ChatChunk)(JSON.parse(e))))
      const folded = yield* Chat.foldStream(chat.stream(request("chat-1")))
      expect(folded.content).toBe("Hello")
      expect(folded.tool_calls).toEqual([
        { id: "call_9", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }
      ])
      expect(folded.finish_reason).toBe("tool_calls")
      expect(folded.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })
      expect(upstream.received[0]?.json).toEqual({ ...request("chat-1"), stream: true })

      // the raw wire: text/event-stream, one `data:` event per chunk, then [DONE]
      const raw = yield* Effect.promise(() =>
        fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ...request("chat-1"), stream: true })
        })
      )
      expect(raw.headers.get("content-type")).toContain("text/event-stream")
      const text = yield* Effect.promise(() => raw.text())
      const events = text.split("\n\n").filter((e) => e !== "")
      expect(events).toHaveLength(streamed.length + 1)
      expect(events.every((e) => e.startsWith("data: "))).toBe(true)
      expect(events.at(-1)).toBe("data: [DONE]")

      // an upstream stream with no chunk: an empty stream, properly ended
      expect(Chunk.size(yield* Stream.runCollect(chat.stream(request("empty"))))).toBe(0)
    }))

  it.scopedLive("an upstream error mid-stream reaches the client as StreamError after the chunks before it", () =>
    Effect.gen(function*() {
      const { url } = yield* gateway()
      const { chat } = yield* clients(url)
      const seen = yield* Ref.make<Array<string>>([])
      const e = yield* Effect.flip(
        Stream.runDrain(
          Chat.textDeltas(chat.stream(request("midstream-error"))).pipe(Stream.tap((t) => Ref.update(seen, (s) => [...s, t])))
        )
      )
      expect(yield* Ref.get(seen)).toEqual(["Hel"])
      expect(e._tag).toBe("StreamError")
      if (e._tag === "StreamError") {
        expect(e.message).toBe("POST /v1/chat/completions: the stream reported an error: the model overloaded")
        expect([e.type, e.code]).toEqual(["server_error", "overloaded"])
      }
    }))

  it.scopedLive("upstream 429 stays RateLimited with Retry-After (create, stream, images); upstream 500 is a 502", () =>
    Effect.gen(function*() {
      const { url } = yield* gateway(noRetries)
      const { chat, images } = yield* clients(url, noRetries)
      for (
        const e of [
          yield* Effect.flip(chat.create(request("limited"))),
          yield* Effect.flip(Stream.runDrain(chat.stream(request("limited")))),
          yield* Effect.flip(images.generate({ prompt: "limited" }))
        ]
      ) {
        expect(e._tag).toBe("RateLimited")
        if (e._tag === "RateLimited") {
          expect(e.retryAfter === undefined ? undefined : Duration.toSeconds(e.retryAfter)).toBe(7)
          expect(e.message).toContain("slow down")
        }
      }
      for (const e of [yield* Effect.flip(chat.create(request("broken"))), yield* Effect.flip(Stream.runDrain(chat.stream(request("broken"))))]) {
        expect(e._tag === "ServerError" ? e.status : e._tag).toBe(502)
      }
    }))

  it.scopedLive("image generation round-trips", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* gateway()
      const { images } = yield* clients(url)
      const req: Images.ImageRequest = { prompt: "a red fox", n: 2, size: "1024x1792", quality: "hd", style: "vivid", model: "img-1" }
      const result = yield* images.generate(req)
      expect(result).toEqual({
        created: 1700000002,
        data: [{ url: "https://img.example/1.png", revised_prompt: "a red fox, studio light" }, { b64_json: "AAAA" }]
      })
      expect(upstream.received[0]?.json).toEqual(req)
    }))

  it.scopedLive("video submit → query → retrieve round-trips; Idempotency-Key replays; refusals keep base_resp", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* gateway()
      const { video } = yield* clients(url)
      const submits = () => upstream.received.filter((r) => r.path === "/v1/video_generation")

      const submitted = yield* video.submit({ model: "T2V-01", prompt: "a fox runs" })
      expect(submitted).toEqual({ task_id: "task-1", base_resp: ok })
      expect(submits()[0]?.json).toEqual({ model: "T2V-01", prompt: "a fox runs" })
      const status = yield* video.query("task-1")
      expect(status).toEqual({ task_id: "task-1", status: "Success", file_id: 9, base_resp: ok })
      const file = yield* video.retrieve("9")
      expect(file).toEqual({
        file_id: 9,
        download_url: "https://storage.example/videos/file-9.mp4",
        filename: "file-9.mp4",
        bytes: 1024,
        created_at: 1700000003,
        purpose: "video_generation"
      })
      const whole = yield* video.generate({ model: "T2V-01", prompt: "again" })
      expect([whole.taskId, whole.fileId, whole.downloadUrl]).toEqual(["task-2", "9", "https://storage.example/videos/file-9.mp4"])

      // a retried submission (same Idempotency-Key) gets the first task; the upstream sees one submit
      const before = submits().length
      const post = (key: string) =>
        Effect.promise(() =>
          fetch(`${url}/v1/video_generation`, {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": key },
            body: JSON.stringify({ model: "T2V-01", prompt: "once" })
          }).then((r) => r.json())
        )
      const [a, b] = yield* Effect.all([post("k-1"), post("k-1")], { concurrency: 2 })
      expect(a).toEqual({ task_id: "task-3", base_resp: ok })
      expect(b).toEqual(a)
      expect(submits().length).toBe(before + 1)
      expect(yield* post("k-2")).toEqual({ task_id: "task-4", base_resp: ok })

      // the client's key is passed on: the upstream saw "k-1" and "k-2"
      expect(submits().slice(-2).map((r) => r.headers["idempotency-key"])).toEqual(["k-1", "k-2"])

      // the client's key reaches the upstream, the same on our server's retry of a failed attempt
      const flaky = yield* video.submit({ model: "flaky", prompt: "p" })
      expect(flaky.task_id).toBe("task-5")
      const [first, retry] = submits().slice(-2)
      expect(first?.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/)
      expect(retry?.headers["idempotency-key"]).toBe(first?.headers["idempotency-key"])

      // a refusal (non-zero base_resp.status_code) reaches the client as the same TaskFailed
      const refused = yield* Effect.flip(video.submit({ model: "refused", prompt: "p" }))
      expect(refused._tag).toBe("TaskFailed")
      if (refused._tag === "TaskFailed") {
        expect(refused.statusCode).toBe(1002)
        expect(refused.message).toBe("POST /v1/video_generation: base_resp.status_code 1002: quota exhausted")
      }
      // an unknown file is a 404; a missing query parameter a 400
      expect((yield* Effect.flip(video.retrieve("missing")))._tag).toBe("NotFound")
      const noId = yield* Effect.promise(() => fetch(`${url}/v1/query/video_generation`))
      expect(noId.status).toBe(400)
    }))

  it.scopedLive("music submit and status round-trip", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* gateway()
      const { music } = yield* clients(url)
      const submitted = yield* music.submit({ prompt: "calm piano", tags: "ambient", title: "Song", mv: "v5" })
      expect(submitted).toEqual({ status: "success", data: { task_id: "m-1", estimated_completion_time: 0 } })
      expect(upstream.received[0]?.json).toEqual({ prompt: "calm piano", tags: "ambient", title: "Song", mv: "v5" })
      expect(upstream.received[0]?.headers["idempotency-key"]).toBeDefined()
      const status = yield* music.status("m-1")
      expect(status).toEqual({
        status: "completed",
        data: {
          task_id: "m-1",
          audio_url: "https://storage.example/music/m-1.mp3",
          cover_image: "https://storage.example/music/m-1.jpg",
          title: "Song"
        }
      })
      const whole = yield* music.generate({ prompt: "again" })
      expect([whole.taskId, whole.audioUrl]).toEqual(["m-2", "https://storage.example/music/m-2.mp3"])
    }))

  it.scopedLive("with no services, every generative route answers 501 saying so", () =>
    Effect.gen(function*() {
      const url = yield* serveOurs(Layer.empty)
      const routes: ReadonlyArray<readonly [string, string, string]> = [
        ["POST", "/v1/chat/completions", "no chat completion engine"],
        ["POST", "/v1/images/generations", "no image generation engine"],
        ["POST", "/v1/video_generation", "no video generation engine"],
        ["GET", "/v1/query/video_generation?task_id=t", "no video generation engine"],
        ["GET", "/v1/files/retrieve?file_id=f", "no video generation engine"],
        ["POST", "/svc/submit/music", "no music generation engine"],
        ["GET", "/svc/music/status/m-1", "no music generation engine"]
      ]
      for (const [method, path, says] of routes) {
        const r = yield* Effect.promise(() =>
          fetch(`${url}${path}`, { method, ...(method === "POST" ? { body: "{}", headers: { "content-type": "application/json" } } : {}) })
        )
        expect([path, r.status]).toEqual([path, 501])
        const body = (yield* Effect.promise(() => r.json())) as { error: { message: string; type: string; code: string } }
        expect(body.error.message).toContain(says)
        expect([body.error.type, body.error.code]).toEqual(["not_implemented", "not_configured"])
      }
      const { chat } = yield* clients(url, noRetries)
      const e = yield* Effect.flip(Stream.runDrain(chat.stream(request("m"))))
      expect(e._tag === "ServerError" ? [e.status, e.message.includes("no chat completion engine")] : e._tag).toEqual([501, true])
    }))
})
