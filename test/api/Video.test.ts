import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Ref, TestClock } from "effect"
import * as Video from "../../src/api/Video.js"
import { clientLayer, startServer, testKey, type Received, type Reply, type TestServer } from "../support/server.js"
import { eventually, realSleep, sleepPendingIn } from "../support/time.js"

// =============================================================================
// Helpers
// =============================================================================


const ok = { status_code: 0, status_msg: "success" }
const downloadUrl = "https://storage.example/videos/file-9.mp4"

/**
 * A video server: accepts one task (`task-1`), answers the status queries with `statuses` in
 * turn (repeating the last), and serves `file-9` (or `retrieve` when given).
 */
const videoHandler = (statuses: ReadonlyArray<unknown>, retrieve?: (req: Received) => Reply) => {
  let query = 0
  return (req: Received): Reply => {
    switch (req.path) {
      case "/v1/video_generation":
        return { json: { task_id: "task-1", base_resp: ok } }
      case "/v1/query/video_generation":
        return { json: statuses[Math.min(query++, statuses.length - 1)] }
      case "/v1/files/retrieve":
        return retrieve !== undefined
          ? retrieve(req)
          : {
            json: {
              file: { file_id: 9, download_url: downloadUrl, filename: "file-9.mp4", bytes: 1024, purpose: "video_generation" },
              base_resp: ok
            }
          }
      default:
        return { status: 404, json: { error: { message: `no route ${req.path}` } } }
    }
  }
}

const run = <A, E>(server: TestServer, f: (s: Video.Service) => Effect.Effect<A, E>, options?: Video.RemoteOptions) =>
  Effect.flatMap(Video.Video, f).pipe(Effect.provide(Video.layer(options).pipe(Layer.provide(clientLayer(server.url)))))

const fast = { pollInterval: "5 millis" } as const

// =============================================================================
// Tests
// =============================================================================

describe("Video", () => {
  it.scopedLive("walks Queueing → Processing → Success, then retrieves the file", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        videoHandler([
          { task_id: "task-1", status: "Queueing", base_resp: ok },
          { task_id: "task-1", status: "Processing", base_resp: ok },
          { task_id: "task-1", status: "Success", file_id: "file-9", base_resp: ok }
        ])
      )
      const seen = yield* Ref.make<Array<string>>([])
      const result = yield* run(server, (v) =>
        v.generate(
          { model: "T2V-01-Director", prompt: "a fox in the snow [Truck left, Pan right]" },
          { ...fast, onProgress: (p) => Ref.update(seen, (xs) => [...xs, `${p.poll}:${p.status}:${p.taskId}`]) }
        ))

      expect(result.taskId).toBe("task-1")
      expect(result.fileId).toBe("file-9")
      expect(result.downloadUrl).toBe(downloadUrl)
      expect(result.file.filename).toBe("file-9.mp4")
      expect(yield* Ref.get(seen)).toEqual(["1:Queueing:task-1", "2:Processing:task-1", "3:Success:task-1"])

      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /v1/video_generation",
        "GET /v1/query/video_generation",
        "GET /v1/query/video_generation",
        "GET /v1/query/video_generation",
        "GET /v1/files/retrieve"
      ])
      const [submit, ...rest] = server.received
      expect(submit?.json).toEqual({ model: "T2V-01-Director", prompt: "a fox in the snow [Truck left, Pan right]" })
      expect(submit?.headers["idempotency-key"]).toMatch(/^[0-9a-f-]{36}$/)
      for (const r of rest) expect(r.headers["idempotency-key"]).toBeUndefined()
      for (const r of server.received) expect(r.headers.authorization).toBe(`Bearer ${testKey}`)
      expect(rest.slice(0, 3).map((r) => r.url.searchParams.get("task_id"))).toEqual(["task-1", "task-1", "task-1"])
      expect(rest[3]?.url.searchParams.get("file_id")).toBe("file-9")
    }))

  it.scopedLive("unknown and Preparing statuses are in progress; a numeric file_id becomes a string", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        videoHandler([{ status: "Preparing" }, { status: "Rendering" }, { status: "Success", file_id: 176844028768320 }])
      )
      const result = yield* run(server, (v) => v.generate({ model: "T2V-01", prompt: "waves" }), fast)
      expect(result.fileId).toBe("176844028768320")
      expect(server.received.filter((r) => r.path === "/v1/query/video_generation")).toHaveLength(3)
      expect(server.received.at(-1)?.url.searchParams.get("file_id")).toBe("176844028768320")
    }))

  it.scopedLive("status Fail is a TaskFailed carrying the task id, and no file is retrieved", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        videoHandler([{ status: "Processing", base_resp: ok }, { status: "Fail", base_resp: { status_code: 0, status_msg: "generation failed" } }])
      )
      const error = yield* Effect.flip(run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" }), fast))
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.status).toBe("Fail")
        expect(error.taskId).toBe("task-1")
        expect(error.message).toContain("generation failed")
        expect(error.endpoint).toBe("GET /v1/query/video_generation")
      }
      expect(server.received.some((r) => r.path === "/v1/files/retrieve")).toBe(false)
    }))

  it.scopedLive("status Fail with status_msg success does not quote it as the reason", () =>
    Effect.gen(function*() {
      const server = yield* startServer(videoHandler([{ status: "Fail", base_resp: ok }]))
      const error = yield* Effect.flip(run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" }), fast))
      expect(error._tag).toBe("TaskFailed")
      expect(error.message).toBe("video task task-1 failed (status Fail; the service gave no reason)")
      expect(error.message).not.toContain("success")
    }))

  it.scopedLive("a non-zero base_resp.status_code on submission is a TaskFailed with status_msg", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({
        json: { task_id: "", base_resp: { status_code: 1008, status_msg: "insufficient balance" } }
      }))
      const error = yield* Effect.flip(run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" }), fast))
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.statusCode).toBe(1008)
        expect(error.status).toBe("Rejected")
        expect(error.taskId).toBeUndefined()
        expect(error.message).toContain("insufficient balance")
        expect(error.endpoint).toBe("POST /v1/video_generation")
      }
      // Refused at submission: no polling at all.
      expect(server.received).toHaveLength(1)
    }))

  it.scopedLive("a non-zero base_resp.status_code on a status query is a TaskFailed too", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        videoHandler([{ status: "Queueing", base_resp: ok }, { base_resp: { status_code: 2013, status_msg: "invalid task_id" } }])
      )
      const error = yield* Effect.flip(run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" }), fast))
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.statusCode).toBe(2013)
        expect(error.taskId).toBe("task-1")
        expect(error.message).toContain("invalid task_id")
      }
    }))

  it.scopedLive("HTTP 404 on retrieve is NotFound and is not retried", () =>
    Effect.gen(function*() {
      const server = yield* startServer(
        videoHandler([{ status: "Success", file_id: "gone" }], () => ({
          status: 404,
          json: { error: { message: "file not found", type: "not_found", code: null } }
        }))
      )
      const error = yield* Effect.flip(run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" }), fast))
      expect(error._tag).toBe("NotFound")
      if (error._tag === "NotFound") {
        expect(error.endpoint).toBe("GET /v1/files/retrieve")
        expect(error.message).toContain("file not found")
      }
      expect(server.received.filter((r) => r.path === "/v1/files/retrieve")).toHaveLength(1)
    }))

  it.scopedLive("first_frame_image is sent exactly; bare base64 is refused before sending", () =>
    Effect.gen(function*() {
      const server = yield* startServer(videoHandler([{ status: "Success", file_id: "file-9" }]))
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff])
      const image = Video.imageDataUrl(png, "image/png")
      expect(image).toBe("data:image/png;base64,iVBORw0KGgr/")

      const submitted = yield* run(server, (v) =>
        v.submit({ model: "I2V-01", prompt: "the cat turns its head", first_frame_image: image }))
      expect(submitted.task_id).toBe("task-1")
      expect(server.received[0]?.json).toEqual({
        model: "I2V-01",
        prompt: "the cat turns its head",
        first_frame_image: "data:image/png;base64,iVBORw0KGgr/"
      })

      yield* run(server, (v) =>
        v.submit({ model: "I2V-01", prompt: "p", first_frame_image: "https://img.example/first.jpg" }))
      expect((server.received[1]?.json as { first_frame_image: string }).first_frame_image).toBe(
        "https://img.example/first.jpg"
      )

      const error = yield* Effect.flip(
        run(server, (v) => v.submit({ model: "I2V-01", prompt: "p", first_frame_image: "iVBORw0KGgr/" }))
      )
      expect(error._tag).toBe("InvalidRequest")
      if (error._tag === "InvalidRequest") expect(error.path).toBe("first_frame_image")
      expect(server.received).toHaveLength(2)
    }))

  it.scopedLive("gives up after maxWait with TaskFailed TimedOut", () =>
    Effect.gen(function*() {
      const server = yield* startServer(videoHandler([{ status: "Processing" }]))
      const error = yield* Effect.flip(
        run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" }, { pollInterval: "20 millis", maxWait: "150 millis" }))
      )
      expect(error._tag).toBe("TaskFailed")
      if (error._tag === "TaskFailed") {
        expect(error.status).toBe("TimedOut")
        expect(error.taskId).toBe("task-1")
      }
      expect(server.received.filter((r) => r.path === "/v1/query/video_generation").length).toBeGreaterThan(1)
    }))

  it.scoped("polls every 10 seconds by default (TestClock)", () =>
    Effect.gen(function*() {
      const server = yield* startServer(videoHandler([{ status: "Queueing" }, { status: "Success", file_id: "file-9" }]))
      const fiber = yield* Effect.fork(run(server, (v) => v.generate({ model: "T2V-01", prompt: "x" })))

      // Submission and the first query happen at once; then the fiber sleeps 10 s.
      yield* eventually(() => server.received.length === 2, "submit and first query")
      yield* eventually(() => sleepPendingIn(10_000), "the 10 s poll sleep")
      yield* TestClock.adjust("9999 millis")
      yield* realSleep(50)
      expect(server.received).toHaveLength(2)

      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      expect(result.downloadUrl).toBe(downloadUrl)
      expect(server.received.map((r) => r.path)).toEqual([
        "/v1/video_generation",
        "/v1/query/video_generation",
        "/v1/query/video_generation",
        "/v1/files/retrieve"
      ])
    }))
})
