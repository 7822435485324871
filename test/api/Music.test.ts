import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Ref, TestClock } from "effect"
import * as Music from "../../src/api/Music.js"
import { clientLayer, startServer, testKey, type Received, type Reply, type TestServer } from "../support/server.js"
import { eventually, realSleep, sleepPendingIn } from "../support/time.js"

// =============================================================================
// Helpers
// =============================================================================


const audioUrl = (taskId: string) => `https://storage.example/music/${taskId}.mp3`
const coverUrl = (taskId: string) => `https://storage.example/music/${taskId}.jpg`

const completed = (taskId: string) => ({
  status: "completed",
  data: { task_id: taskId, audio_url: audioUrl(taskId), cover_image: coverUrl(taskId) }
})

/**
 * A music server: every submission gets a new task id (`m-1`, `m-2`, …) and the given estimate;
 * the status queries of a task are answered with `statuses` in turn (repeating the last).
 */
const musicHandler = (statuses: (taskId: string) => ReadonlyArray<unknown>, estimate = 0) => {
  let tasks = 0
  const queries = new Map<string, number>()
  return (req: Received): Reply => {
    if (req.method === "POST" && req.path === "/svc/submit/music") {
      tasks++
      return { json: { status: "success", data: { task_id: `m-${tasks}`, estimated_completion_time: estimate } } }
    }
    const match = /^\/svc\/music\/status\/(.+)$/.exec(req.path)
    if (req.method === "GET" && match?.[1] !== undefined) {
      const taskId = decodeURIComponent(match[1])
      const n = queries.get(taskId) ?? 0
      queries.set(taskId, n + 1)
      const list = statuses(taskId)
      return { json: list[Math.min(n, list.length - 1)] }
    }
    return { status: 404, json: { error: { message: `no route ${req.path}` } } }
  }
}

const musicLayer = (server: TestServer, options?: Music.RemoteOptions, client?: Parameters<typeof clientLayer>[1]) =>
  Music.layer(options).pipe(Layer.provide(clientLayer(server.url, client)))

const run = <A, E>(server: TestServer, f: (s: Music.Service) => Effect.Effect<A, E>, options?: Music.RemoteOptions) =>
  Effect.flatMap(Music.Music, f).pipe(Effect.provide(musicLayer(server, options)))

const fast = { pollInterval: "5 millis" } as const

const submits = (server: TestServer) => server.received.filter((r) => r.path === "/svc/submit/music")

// =============================================================================
// Tests
// =============================================================================

describe("Music", () => {
  it.scopedLive("walks queued → processing → completed and returns the audio and cover URLs", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        musicHandler((id) => [{ status: "queued", data: { task_id: id } }, { status: "processing", data: { task_id: id } }, completed(id)])
      )
      const seen = yield* Ref.make<Array<string>>([])
      const result = yield* run(server, (m) =>
        m.generate(
          { prompt: "a calm lo-fi track", tags: "lofi,chill", title: "Rain" },
          { onProgress: (p) => Ref.update(seen, (xs) => [...xs, `${p.poll}:${p.status}`]) }
        ), fast)

      expect(result).toEqual({
        taskId: "m-1",
        audioUrl: audioUrl("m-1"),
        coverImage: coverUrl("m-1"),
        data: { task_id: "m-1", audio_url: audioUrl("m-1"), cover_image: coverUrl("m-1") }
      })
      expect(yield* Ref.get(seen)).toEqual(["1:queued", "2:processing", "3:completed"])
      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /svc/submit/music",
        "GET /svc/music/status/m-1",
        "GET /svc/music/status/m-1",
        "GET /svc/music/status/m-1"
      ])
      const [submit, ...rest] = server.received
      // Encoded exactly: no `mv` invented when the caller gave none.
      expect(submit?.json).toEqual({ prompt: "a calm lo-fi track", tags: "lofi,chill", title: "Rain" })
      expect(submit?.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/)
      for (const r of rest) expect(r.headers["idempotency-key"]).toBeUndefined()
      for (const r of server.received) expect(r.headers.authorization).toBe(`Bearer ${testKey}`)
    }))

  it.scopedLive("status failed is a TaskFailed carrying the task id and the reason", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        musicHandler((id) => [{ status: "processing" }, { status: "failed", data: { task_id: id, error: "vocals rejected" } }])
      )
      const error = yield* Effect.flip(run(server, (m) => m.generate({ prompt: "x", mv: "v4" }), fast))
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.status).toBe("failed")
        expect(error.taskId).toBe("m-1")
        expect(error.message).toContain("vocals rejected")
      }
      expect(submits(server)[0]?.json).toEqual({ prompt: "x", mv: "v4" })
    }))

  it.scopedLive("a completed status without audio_url is a DecodeError naming the field", () =>
    Effect.gen(function*() {
      const server = yield* startServer(musicHandler(() => [{ status: "completed", data: { cover_image: "c" } }]))
      const error = yield* Effect.flip(run(server, (m) => m.generate({ prompt: "x" }), fast))
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") expect(error.path).toBe("data.audio_url")
    }))

  it.scopedLive("the 51st generation waits for a permit and is not sent until one frees", () =>
    Effect.gen(function*() {
      // Status queries of a task are held open until the test releases the task.
      const released = new Set<string>()
      const held = new Map<string, () => void>()
      let releaseAll = false
      let tasks = 0
      const server = yield* startServer((req): Reply | Promise<Reply> => {
        if (req.path === "/svc/submit/music") {
          tasks++
          return { json: { status: "success", data: { task_id: `m-${tasks}`, estimated_completion_time: 0 } } }
        }
        const taskId = req.path.slice("/svc/music/status/".length)
        if (releaseAll || released.has(taskId)) return { json: completed(taskId) }
        return new Promise<Reply>((resolve) => held.set(taskId, () => resolve({ json: completed(taskId) })))
      })
      const release = (taskId: string) => {
        released.add(taskId)
        held.get(taskId)?.()
        held.delete(taskId)
      }

      yield* Effect.gen(function*() {
        const music = yield* Music.Music
        expect(music.maxInFlight).toBe(50)
        const fibers = yield* Effect.forEach(
          Array.from({ length: 51 }, (_, i) => i),
          (i) => Effect.fork(music.generate({ prompt: `song ${i}` })),
          { concurrency: "unbounded" }
        )

        yield* eventually(() => held.size === 50, "50 generations polling")
        // Give the 51st every chance to (wrongly) go out.
        yield* realSleep(200)
        expect(submits(server)).toHaveLength(50)
        expect(tasks).toBe(50)

        release("m-7")
        yield* eventually(() => submits(server).length === 51, "the 51st submission")
        const prompts = submits(server).map((r) => (r.json as { prompt: string }).prompt)
        expect(new Set(prompts).size).toBe(51)

        releaseAll = true
        for (const taskId of [...held.keys()]) release(taskId)
        const results = yield* Effect.forEach(fibers, Fiber.join)
        expect(results.map((r) => r.taskId).sort()).toEqual(Array.from({ length: 51 }, (_, i) => `m-${i + 1}`).sort())
        for (const r of results) expect(r.audioUrl).toBe(audioUrl(r.taskId))
      }).pipe(Effect.provide(musicLayer(server, fast)))
    }))

  it.scopedLive("the Idempotency-Key stays the same across a retried submission", () =>
    Effect.gen(function*() {
      let submitsSeen = 0
      const inner = musicHandler((id) => [completed(id)])
      const server = yield* startServer((req) => {
        if (req.path === "/svc/submit/music" && submitsSeen++ === 0) {
          return { status: 503, json: { error: { message: "busy", type: "server_error", code: null } } }
        }
        return inner(req)
      })
      const [result, second] = yield* run(server, (m) =>
        Effect.all([m.generate({ prompt: "retry me" }), m.submit({ prompt: "another" })]), fast)

      expect(result.audioUrl).toBe(audioUrl("m-1"))
      expect(second.data.task_id).toBe("m-2")
      const keys = submits(server).map((r) => r.headers["idempotency-key"])
      expect(keys).toHaveLength(3)
      expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/)
      // The retry repeats the key of its call; a new call gets a new key.
      expect(keys[1]).toBe(keys[0])
      expect(keys[2]).not.toBe(keys[0])
      expect(submits(server).map((r) => r.json)).toEqual([
        { prompt: "retry me" },
        { prompt: "retry me" },
        { prompt: "another" }
      ])
    }))

  it.scopedLive("a refused submission without a task id is a TaskFailed", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: { status: "error", message: "too many active generations" } }))
      const error = yield* Effect.flip(run(server, (m) => m.generate({ prompt: "x" }), fast))
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.status).toBe("error")
        expect(error.message).toContain("too many active generations")
      }
      expect(server.received).toHaveLength(1)
    }))

  it.scoped("polls first after estimated_completion_time capped at 60 s, then every 5 s (TestClock)", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        musicHandler((id) => [{ status: "processing" }, completed(id)], /* estimate, seconds */ 120)
      )
      // A 90 s request time-out keeps its TestClock sleeps apart from the 60 s first-poll sleep.
      const fiber = yield* Effect.fork(
        Effect.flatMap(Music.Music, (m) => m.generate({ prompt: "x" })).pipe(
          Effect.provide(musicLayer(server, {}, { timeout: "90 seconds" }))
        )
      )

      yield* eventually(() => server.received.length === 1, "the submission")
      yield* eventually(() => sleepPendingIn(60_000), "the capped first-poll sleep")
      yield* TestClock.adjust("59 seconds")
      yield* realSleep(50)
      expect(server.received).toHaveLength(1)

      yield* TestClock.adjust("1 second")
      yield* eventually(() => server.received.length === 2, "the first status query")
      yield* eventually(() => sleepPendingIn(5_000), "the 5 s poll sleep")
      yield* TestClock.adjust("4 seconds")
      yield* realSleep(50)
      expect(server.received).toHaveLength(2)

      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      expect(result.taskId).toBe("m-1")
      expect(server.received.map((r) => r.path)).toEqual([
        "/svc/submit/music",
        "/svc/music/status/m-1",
        "/svc/music/status/m-1"
      ])
    }))
})
