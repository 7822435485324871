import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Duration, Effect, Fiber, Layer, Option, Redacted, TestClock } from "effect"
import { createServer } from "node:net"
import * as ApiHttp from "../../src/api/ApiHttp.js"
import { parseErrorBody, parseRetryAfter } from "../../src/api/ApiErrors.js"
import * as Models from "../../src/api/Models.js"
import * as RagConfig from "../../src/RagConfig.js"
import { clientLayer, startServer, testKey, type Handler } from "../support/server.js"

const modelList = { object: "list", data: [{ id: "m1", object: "model", created: 1, owned_by: "x" }] }

const listModels = (url: string, options: RagConfig.Options = {}) =>
  Effect.flatMap(Models.Models, (m) => m.list).pipe(
    Effect.provide(Models.layer.pipe(Layer.provide(clientLayer(url, options))))
  )

/** Replies with the given responses in turn, then repeats the last one. */
const sequence = (...replies: ReadonlyArray<ReturnType<Extract<Handler, (...a: any) => any>>>): Handler => {
  let i = 0
  return () => replies[Math.min(i++, replies.length - 1)]
}

describe("ApiHttp retries", () => {
  it.scopedLive("retries 503 and 429 (retry-after-ms) then succeeds", () =>
    Effect.gen(function*() {
      const server = yield* startServer(sequence(
        { status: 503, json: { error: { message: "busy", type: "server_error", code: null } } },
        { status: 429, json: { message: "slow down" }, headers: { "retry-after-ms": "5" } },
        { json: modelList }
      ))
      const list = yield* listModels(server.url)
      expect(list.data[0]?.id).toBe("m1")
      expect(server.received).toHaveLength(3)
    }))

  it.effect("waits exactly as long as Retry-After says (TestClock, no real sleep)", () =>
    Effect.gen(function*() {
      const firstSeen = yield* Deferred.make<void>()
      const server = yield* startServer(sequence(
        { status: 429, json: { error: "rate limited" }, headers: { "retry-after": "30" } },
        { json: modelList }
      ))
      // The policy's own backoff is tiny, so any wait of ~30 s can only come from the header.
      const fiber = yield* Effect.fork(
        listModels(server.url, { retryBaseDelay: "1 millis", maxRetries: 2 }).pipe(
          Effect.tap(() => Deferred.succeed(firstSeen, undefined))
        )
      )
      // progress, not a real-time window: the first request was answered and the client sleeps
      // until exactly Retry-After from now (a loaded host takes longer to get there; a fixed
      // real wait could adjust the clock before the sleep began)
      const retryAt = (yield* TestClock.currentTimeMillis) + 30_000
      yield* until(Effect.map(TestClock.sleeps(), (wakes) => server.received.length === 1 && Chunk.some(wakes, (t) => t === retryAt)))
      yield* TestClock.adjust("29 seconds")
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
      expect(server.received).toHaveLength(1)
      yield* TestClock.adjust("1 second")
      const list = yield* Fiber.join(fiber)
      expect(list.data).toHaveLength(1)
      expect(server.received).toHaveLength(2)
    }).pipe(Effect.scoped))

  it.scopedLive("500s exhaust the retries and fail with ServerError", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ status: 500, json: { error: { message: "boom" } } }))
      const error = yield* Effect.flip(listModels(server.url, { maxRetries: 3 }))
      expect(error._tag).toBe("ServerError")
      expect(server.received).toHaveLength(4)
      if (error._tag === "ServerError") expect(error.status).toBe(500)
    }))

  for (const status of [400, 401, 402, 404, 413]) {
    it.scopedLive(`never retries ${status}`, () =>
      Effect.gen(function*() {
        const server = yield* startServer(() => ({ status, json: { error: { message: "no" } } }))
        const error = yield* Effect.flip(listModels(server.url))
        expect(server.received).toHaveLength(1)
        expect(error._tag).toBe(
          ({ 400: "BadRequest", 401: "Unauthorized", 402: "PaymentRequired", 404: "NotFound", 413: "PayloadTooLarge" } as const)[
            status as 400
          ]
        )
      }))
  }

  it.scopedLive("retries 408 and 409", () =>
    Effect.gen(function*() {
      const server = yield* startServer(sequence({ status: 408, text: "" }, { status: 409, text: "" }, { json: modelList }))
      yield* listModels(server.url)
      expect(server.received).toHaveLength(3)
    }))
})

describe("ApiHttp errors and secrets", () => {
  it.scopedLive("401 whose body echoes the key: the key appears in no error text", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({
        status: 401,
        json: { error: { message: `Invalid API key ${testKey}`, type: "auth", code: "invalid_key" } }
      }))
      const error = yield* Effect.flip(listModels(server.url))
      expect(error._tag).toBe("Unauthorized")
      const texts = [error.message, String(error), JSON.stringify(error), error.toString()]
      for (const text of texts) expect(text).not.toContain(testKey)
      expect(error.message).toContain("[redacted]")
    }))

  it.scopedLive("credentials written into the base URL appear in no error text", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: modelList }))
      const withCredentials = server.url.replace("http://", "http://alice:s3cret-pass@")
      const error = yield* Effect.flip(listModels(withCredentials, { maxRetries: 0 }))
      for (const text of [error.message, String(error), JSON.stringify(error)]) expect(text).not.toContain("s3cret-pass")
    }))

  it.scopedLive("unreachable host: TransportError after the retries", () =>
    Effect.gen(function*() {
      // A port that was just free: nothing listens there.
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const s = createServer().listen(0, "127.0.0.1", () => {
            const p = (s.address() as { port: number }).port
            s.close(() => resolve(p))
          })
        })
      )
      const error = yield* Effect.flip(listModels(`http://127.0.0.1:${port}`))
      expect(error._tag).toBe("TransportError")
      if (error._tag === "TransportError") expect(error.reason).toBe("unreachable")
      expect(error.message).not.toContain(testKey)
    }))

  it.scopedLive("a slow server times out with TransportError(timeout)", () =>
    Effect.gen(function*() {
      const server = yield* startServer(async () => {
        await new Promise((r) => setTimeout(r, 2000))
        return { json: modelList }
      })
      const error = yield* Effect.flip(listModels(server.url, { timeout: "100 millis", maxRetries: 0 }))
      expect(error._tag).toBe("TransportError")
      if (error._tag === "TransportError") expect(error.reason).toBe("timeout")
    }))

  it.scopedLive("a missing key fails with ConfigurationError only when the call needs it", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: modelList }))
      const layer = Models.layer.pipe(
        Layer.provide(ApiHttp.layer),
        Layer.provide(RagConfig.layer({ baseUrl: server.url }))
      )
      const error = yield* Effect.flip(Effect.flatMap(Models.Models, (m) => m.list).pipe(Effect.provide(layer)))
      expect(error._tag).toBe("ConfigurationError")
      expect(server.received).toHaveLength(0)
    }))

  it.scopedLive("a non-JSON 200 is a DecodeError naming the endpoint", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ text: "<html>oops</html>" }))
      const error = yield* Effect.flip(listModels(server.url))
      expect(error._tag).toBe("DecodeError")
      expect(error.message).toContain("GET /v1/models")
    }))

  it.scopedLive("both model list shapes decode", () =>
    Effect.gen(function*() {
      const server = yield* startServer(sequence(
        { json: modelList },
        { json: { data: [{ id: "e1", name: "Embedder", type: "embedding" }] } }
      ))
      const a = yield* listModels(server.url)
      const b = yield* listModels(server.url)
      expect(a.data[0]?.owned_by).toBe("x")
      expect(b.data[0]).toEqual({ id: "e1", name: "Embedder", type: "embedding" })
    }))

  it("config toString and JSON never show the key", () => {
    const settings = RagConfig.make({ apiKey: "sk-very-secret-123" })
    expect(String(settings.apiKey)).not.toContain("sk-very-secret")
    expect(JSON.stringify(settings)).not.toContain("sk-very-secret")
    expect(Option.map(settings.apiKey, Redacted.value)).toEqual(Option.some("sk-very-secret-123"))
  })
})

describe("error bodies and Retry-After", () => {
  it("reads the three error body shapes and the upload shape", () => {
    expect(parseErrorBody(JSON.stringify({ error: { message: "m", type: "t", code: "c" } }), "f")).toEqual({
      message: "m",
      type: "t",
      code: "c"
    })
    expect(parseErrorBody(JSON.stringify({ error: "text" }), "f")).toEqual({ message: "text" })
    expect(parseErrorBody(JSON.stringify({ message: "text2" }), "f")).toEqual({ message: "text2" })
    expect(parseErrorBody(JSON.stringify({ status: false, content: "", type: "error", error: "too big" }), "f"))
      .toEqual({ message: "too big" })
    expect(parseErrorBody("", "fallback")).toEqual({ message: "fallback" })
  })

  it("parses Retry-After seconds, HTTP dates and retry-after-ms", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    const ms = (o: Option.Option<Duration.Duration>) => Option.map(o, Duration.toMillis)
    expect(ms(parseRetryAfter({ "retry-after": "7" }, now))).toEqual(Option.some(7000))
    expect(ms(parseRetryAfter({ "retry-after": "Thu, 01 Jan 2026 00:00:12 GMT" }, now))).toEqual(Option.some(12000))
    expect(ms(parseRetryAfter({ "retry-after-ms": "250", "retry-after": "9" }, now))).toEqual(Option.some(250))
    expect(parseRetryAfter({ "retry-after": "soon" }, now)).toEqual(Option.none())
  })
})

/** Polls `done` in real time until it holds; no deadline (the test's time-out catches a hang). */
const until = (done: Effect.Effect<boolean>): Effect.Effect<void> =>
  Effect.gen(function*() {
    while (!(yield* done)) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
  })
