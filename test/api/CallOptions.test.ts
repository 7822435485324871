import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Exit, Fiber, Layer, Option, Stream } from "effect"
import * as CallOptions from "../../src/api/CallOptions.js"
import * as Chat from "../../src/api/Chat.js"
import * as Models from "../../src/api/Models.js"
import * as Music from "../../src/api/Music.js"
import * as Upload from "../../src/api/Upload.js"
import * as Video from "../../src/api/Video.js"
import * as Web from "../../src/api/Web.js"
import { clientLayer, startServer, testKey, type Reply, type TestServer } from "../support/server.js"
import { eventually, realSleep } from "../support/time.js"

const modelList = { object: "list", data: [{ id: "m1", object: "model", created: 1, owned_by: "x" }] }

const withModels = <A, E>(server: TestServer, f: (models: Models.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(Models.Models, f).pipe(
    Effect.provide(Models.layer.pipe(Layer.provide(clientLayer(server.url, { timeout: "60 seconds" }))))
  )

describe("CallOptions (per-call control)", () => {
  it.scopedLive("a per-call time-out applies to that call only", () =>
    Effect.gen(function*() {
      // a request marked "hang" is never answered; the others after 600 ms
      const server = yield* startServer((req) =>
        req.headers["x-case"] === "hang"
          ? new Promise<Reply>(() => {})
          : new Promise<Reply>((resolve) => setTimeout(() => resolve({ json: modelList }), 600))
      )
      const error = yield* withModels(server, (m) =>
        Effect.flip(m.list.pipe(CallOptions.withOptions({ timeout: "300 millis", maxRetries: 0, headers: { "x-case": "hang" } }))))
      expect(error._tag).toBe("TransportError")
      if (error._tag === "TransportError") {
        expect(error.reason).toBe("timeout")
        expect(error.message).toContain("300ms")
      }
      // the same service without options waits for a slower answer (layer time-out 60 s)
      const list = yield* withModels(server, (m) => m.list)
      expect(list.data[0]?.id).toBe("m1")
    }))

  it.scopedLive("extra headers reach the server on every attempt; maxRetries sets the attempts", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ status: 503, json: { error: { message: "busy" } } }))
      const none = yield* withModels(server, (m) =>
        Effect.flip(m.list.pipe(CallOptions.withOptions({ maxRetries: 0, headers: { "x-tenant": "acme" } }))))
      expect(none._tag).toBe("ServerError")
      expect(server.received).toHaveLength(1)
      yield* withModels(server, (m) =>
        Effect.flip(
          m.list.pipe(
            CallOptions.withOptions({ headers: { "x-tenant": "acme", authorization: "Bearer stolen" } }),
            // nested options merge: headers combine; the count comes from the outer one (the inner sets none)
            CallOptions.withOptions({ maxRetries: 3, headers: { "x-trace-tag": "run-7" } })
          )
        ))
      const retried = server.received.slice(1)
      expect(retried).toHaveLength(4)
      for (const r of retried) {
        expect(r.headers["x-tenant"]).toBe("acme")
        expect(r.headers["x-trace-tag"]).toBe("run-7")
        // the client owns Authorization: a per-call header never replaces it
        expect(r.headers.authorization).toBe(`Bearer ${testKey}`)
      }
    }))

  it.scopedLive("response metadata (status, request id, Idempotent-Replayed) is readable", () =>
    Effect.gen(function*() {
      let calls = 0
      const server = yield* startServer((req): Reply => {
        if (req.path === "/v1/video_generation") {
          calls++
          return calls === 1
            ? { status: 503, json: { error: { message: "busy" } }, headers: { "x-request-id": "req-1" } }
            : {
              json: { task_id: "t-1", base_resp: { status_code: 0, status_msg: "success" } },
              headers: { "x-request-id": "req-2", "idempotent-replayed": "true" }
            }
        }
        return { status: 404, json: { error: { message: "no route" } } }
      })
      const [submitted, all] = yield* Effect.flatMap(Video.Video, (v) =>
        CallOptions.withResponses(v.submit({ model: "T2V-01", prompt: "waves" }))).pipe(
          Effect.provide(Video.layer().pipe(Layer.provide(clientLayer(server.url))))
        )
      expect(submitted.task_id).toBe("t-1")
      expect(all.map((m) => [m.status, m.requestId, m.attempt])).toEqual([[503, "req-1", 1], [200, "req-2", 2]])
      expect(all[1]?.idempotentReplayed).toBe(true)
      expect(all[1]?.endpoint).toBe("POST /v1/video_generation")

      const [, last] = yield* withModels(server, (m) => CallOptions.withResponse(Effect.either(m.list)))
      expect(Option.map(last, (m) => m.status)).toEqual(Option.some(404))
    }))

  it.scopedLive("an abort signal cancels the request in flight and interrupts the call", () =>
    Effect.gen(function*() {
      let closed = false
      const server = yield* startServer((_req, res) => {
        res.on("close", () => (closed = true))
        // never answers
      })
      const controller = new AbortController()
      const fiber = yield* Effect.fork(withModels(server, (m) => m.list.pipe(CallOptions.withOptions({ signal: controller.signal }))))
      yield* eventually(() => server.received.length === 1, "the request")
      controller.abort()
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      yield* eventually(() => closed, "the connection closed by the client")
      expect(server.received).toHaveLength(1)
    }))
})

describe("CallOptions on a stream", () => {
  const chunk = (content: string) => JSON.stringify({ choices: [{ index: 0, delta: { content } }] })
  const request: Chat.ChatRequest = { model: "chat-1", messages: [{ role: "user", content: "hi" }] }

  it.scopedLive("a stream's response metadata reaches onResponse; its headers go out", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream", "x-request-id": "req-stream-1" })
        res.end(`data: ${chunk("Hi")}\n\ndata: [DONE]\n\n`)
      })
      const seen: Array<CallOptions.ResponseMetadata> = []
      const text = yield* Effect.flatMap(Chat.Chat, (chat) =>
        Chat.foldStream(
          chat.stream(request).pipe(
            CallOptions.withOptionsStream({ headers: { "x-tenant": "acme" }, onResponse: (m) => seen.push(m) })
          )
        )).pipe(Effect.provide(Chat.layer().pipe(Layer.provide(clientLayer(server.url)))))
      expect(text.content).toBe("Hi")
      expect(seen.map((m) => [m.status, m.requestId])).toEqual([[200, "req-stream-1"]])
      expect(server.received[0]?.headers["x-tenant"]).toBe("acme")
    }))

  it.scopedLive("an abort signal ends a running stream interrupted", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write(`data: ${chunk("first")}\n\n`)
        // then nothing more
      })
      const controller = new AbortController()
      const got: Array<string> = []
      const fiber = yield* Effect.fork(
        Effect.flatMap(Chat.Chat, (chat) =>
          Stream.runForEach(
            Chat.textDeltas(chat.stream(request).pipe(CallOptions.withOptionsStream({ signal: controller.signal }))),
            (t) => Effect.sync(() => got.push(t))
          )).pipe(Effect.provide(Chat.layer().pipe(Layer.provide(clientLayer(server.url)))))
      )
      yield* eventually(() => got.length === 1, "the first delta")
      controller.abort()
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(got).toEqual(["first"])
    }))
})

describe("strict decoding of results", () => {
  it.scoped("a map response without links is a DecodeError naming endpoint and path", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: { success: true } }))
      const error = yield* Effect.flatMap(Web.Web, (w) => Effect.flip(w.map({ url: "https://example.com" }))).pipe(
        Effect.provide(Web.layer.pipe(Layer.provide(clientLayer(server.url))))
      )
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") {
        expect(error.endpoint).toBe("POST /v1/map")
        expect(error.path).toBe("links")
      }
    }))

  it.scoped("an upload result without content is a DecodeError, not empty text", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: { status: true, type: "text", error: "" } }))
      const error = yield* Effect.flatMap(Upload.Upload, (u) =>
        Effect.flip(u.extract({ name: "a.txt", data: new TextEncoder().encode("hello") }))).pipe(
          Effect.provide(Upload.layer.pipe(Layer.provide(clientLayer(server.url))))
        )
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") expect(error.path).toBe("content")
    }))
})

describe("crawl paging", () => {
  const page = (n: number) => ({ markdown: `# ${n}`, metadata: { sourceURL: `https://example.com/${n}` } })

  it.live("crawlPages waits for a running job, then pages until a batch without next", () =>
    Effect.gen(function*() {
      let polls = 0
      const server = yield* startServer((req): Reply => {
        if (req.url.searchParams.get("skip") === null) {
          polls++
          return polls < 3
            ? { json: { status: "scraping", total: 2, completed: polls - 1, data: [] } }
            : { json: { status: "completed", total: 2, completed: 2, data: [page(1)], next: `${server.url}/v1/crawl/job-1?skip=1` } }
        }
        // the last batch has no `next` at all
        return { json: { status: "completed", total: 2, completed: 2, data: [page(2)] } }
      })
      const pages = yield* Effect.flatMap(Web.Web, (w) => Stream.runCollect(w.crawlPages("job-1", { interval: "5 millis" }))).pipe(
        Effect.provide(Web.layer.pipe(Layer.provide(clientLayer(server.url))))
      )
      expect(Chunk.toReadonlyArray(pages).map((p) => p.markdown)).toEqual(["# 1", "# 2"])
      expect(polls).toBe(3)
    }).pipe(Effect.scoped))

  it.live("after waitForCrawl, crawlPages with the job does not fetch the first batch again", () =>
    Effect.gen(function*() {
      const server = yield* startServer((req): Reply =>
        req.url.searchParams.get("skip") === null
          ? { json: { status: "completed", total: 2, completed: 2, data: [page(1)], next: `${server.url}/v1/crawl/job-1?skip=1` } }
          : { json: { status: "completed", total: 2, completed: 2, data: [page(2)], next: null } }
      )
      const pages = yield* Effect.flatMap(Web.Web, (w) =>
        Effect.flatMap(w.waitForCrawl("job-1"), (job) => Stream.runCollect(w.crawlPages("job-1", { job })))).pipe(
          Effect.provide(Web.layer.pipe(Layer.provide(clientLayer(server.url))))
        )
      expect(Chunk.toReadonlyArray(pages).map((p) => p.markdown)).toEqual(["# 1", "# 2"])
      expect(server.received.map((r) => r.url.search)).toEqual(["", "?skip=1"])
    }).pipe(Effect.scoped))
})

describe("music budget per key", () => {
  it.scopedLive("two layers for the same key share one budget, and the raw submit respects it", () =>
    Effect.gen(function*() {
      let tasks = 0
      const finished = new Set<string>()
      let finishAll = false
      const server = yield* startServer((req): Reply => {
        if (req.path === "/svc/submit/music") {
          tasks++
          return { json: { status: "success", data: { task_id: `m-${tasks}`, estimated_completion_time: 0 } } }
        }
        const taskId = req.path.slice("/svc/music/status/".length)
        return finishAll || finished.has(taskId)
          ? { json: { status: "completed", data: { task_id: taskId, audio_url: `https://s/${taskId}.mp3` } } }
          : { json: { status: "processing" } }
      })
      const options = { maxInFlight: 2, pollInterval: "5 millis" } as const
      // two independent layers (two services), same host and key
      const a = yield* Layer.build(Music.layer(options).pipe(Layer.provide(clientLayer(server.url))))
      const b = yield* Layer.build(Music.layer(options).pipe(Layer.provide(clientLayer(server.url))))
      const musicA = Context.get(a, Music.Music)
      const musicB = Context.get(b, Music.Music)

      const first = yield* Effect.fork(musicA.generate({ prompt: "one" }))
      const second = yield* musicB.submit({ prompt: "two" })
      yield* eventually(() => tasks === 2, "two submissions")
      // the budget (2) is full across both layers: a third submit, raw or not, waits
      const third = yield* Effect.fork(musicB.submit({ prompt: "three" }))
      const fourth = yield* Effect.fork(musicA.generate({ prompt: "four" }))
      yield* realSleep(150)
      expect(tasks).toBe(2)

      // the raw submission's task finishes: a status query that sees it frees its place
      finished.add(second.data.task_id)
      yield* musicB.status(second.data.task_id)
      yield* eventually(() => tasks === 3, "the third submission")
      yield* realSleep(100)
      expect(tasks).toBe(3)

      finishAll = true
      yield* Fiber.join(first)
      yield* musicB.release((yield* Fiber.join(third)).data.task_id)
      const result = yield* Fiber.join(fourth)
      expect(result.taskId).toBe("m-4")
      expect(result.audioUrl).toBe("https://s/m-4.mp3")
      expect(tasks).toBe(4)
    }))
})
