/**
 * The self-hosted server's upload endpoints over real HTTP on loopback: the library's REMOTE
 * `Upload` client talks to OUR server, which serves the local document engine. Every file of
 * the shared corpus gives the same result (or the same typed error) through the wire as from
 * the engine directly. Also: the size limit (413 before the engine sees the file, without
 * reading an endless body to its end), bad forms (400), no engine (501), and bodies in memory
 * (slow senders hold no extraction slot; the byte budget; the idle time-out).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { failureStatus } from "../../src/server/internal/wire.js"
import { fixtureFile, manifest } from "../engines/fixtures.js"
import { type RawResponse, rawPost, zeros } from "../support/raw.js"
import { clientLayer, serveOurs, startServer } from "../support/server.js"
import { eventually, realSleep } from "../support/time.js"

// =============================================================================
// Helpers
// =============================================================================


/** The REMOTE upload client, pointed at a server for both hosts. */
const remoteAt = (url: string) => Effect.provide(Upload.make, clientLayer(url, { uploadUrl: url }))

/** The fields that differ per call of embeddings mode. */
const strip = (r: Upload.EmbeddingsResult) => ({ ...r, id: "", created: 0 })

const boundary = "----effect-rag-test-boundary"
const multipartHeaders = { "content-type": `multipart/form-data; boundary=${boundary}` }
const encoder = new TextEncoder()

/** The multipart head of a file part. */
const fileHead = (name: string, type = "application/octet-stream") =>
  encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n`
  )

/** Text field parts then the closing boundary (after a file part's bytes). */
const closing = (fields: Record<string, string> | ReadonlyArray<readonly [string, string]> = {}) =>
  encoder.encode(
    (Array.isArray(fields) ? fields : Object.entries(fields))
      .map(([k, v]) => `\r\n--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}`)
      .join("") + `\r\n--${boundary}--\r\n`
  )

/** A multipart body: one file part of `size` zero bytes, then `fields`. */
async function* fileBody(name: string, size: number, fields: Record<string, string> = {}): AsyncGenerator<Uint8Array> {
  yield fileHead(name)
  yield* zeros(size)
  yield closing(fields)
}

/** A body given whole. */
async function* whole(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes
}

/** The upload error body of `wire-conventions.md` (plus `code`), with `status`. */
const expectUploadError = (response: RawResponse, status: number) => {
  expect(response.status).toBe(status)
  expect(response.json).toEqual({ status: false, content: "", type: "error", error: expect.any(String), code: expect.anything() })
}

/** A stand-in engine that records what reached it. */
const recordingEngine = () => {
  const calls: Array<{ method: string; name: string; type: string | undefined; size: number }> = []
  const record = (method: string) => (file: Upload.UploadFile, options?: Upload.UploadOptions) =>
    Effect.sync((): Upload.StandardResult => {
      calls.push({
        method,
        name: file.name,
        type: file.type,
        size: file.data.byteLength
      })
      return { status: true, content: JSON.stringify(options ?? {}), type: "text", error: "" }
    })
  const service = Upload.Upload.of({
    extract: record("extract"),
    files: record("files"),
    extractChunks: () => Effect.die(new Error("not used"))
  })
  return { calls, layer: Layer.succeed(Upload.Upload, service) }
}

// =============================================================================
// The corpus through the wire
// =============================================================================

/** One engine, served by our server, and the remote client pointed at it. */
class Corpus extends Context.Tag("test/server/upload/Corpus")<Corpus, {
  readonly local: Upload.Service
  readonly remote: Upload.Service
  readonly url: string
}>() {}

const corpus = Layer.scoped(
  Corpus,
  Effect.gen(function*() {
    // two extraction processes: each test runs the engine directly and through the server at once
    const local = yield* LocalFiles.make({ timeout: "60 seconds", concurrency: 2 })
    const url = yield* serveOurs(Layer.succeed(Upload.Upload, local))
    const remote = yield* remoteAt(url)
    return { local, remote, url }
  })
)

const isImage = (format: string) => format === "png" || format === "jpg"

/**
 * Standard mode: by pages, so that `pages` crosses the wire too. `enable_ocr` explicit: the
 * server reads a form without it with the API's default (false), the engine called directly
 * with its own (scanned PDF pages OCR'd), and the corpus has a PDF whose text layer is garbage.
 */
const standard: Upload.UploadOptions = { page_based: true, enable_ocr: false }

layer(corpus, { excludeTestServices: true, timeout: "60 seconds" })("server: the shared corpus through the wire", (it) => {
  for (const entry of manifest.filter((e) => e.expect === "ok")) {
    it.effect(`${entry.path}: the same standard and embeddings results as the engine's`, () =>
      Effect.gen(function*() {
        const { local, remote } = yield* Corpus
        const file = fixtureFile(entry.path)
        const [direct, viaServer] = yield* Effect.all([local.extract(file, standard), remote.extract(file, standard)], {
          concurrency: 2
        })
        expect(viaServer).toStrictEqual(direct)
        expect(viaServer.pages?.length).toBeGreaterThan(0) // page_based reached the engine
        // an image without OCR is a data URL: chunking megabytes of base64 would only cost time
        const chunked = { enable_ocr: isImage(entry.format) }
        const [chunksDirect, chunksViaServer] = yield* Effect.all(
          [local.extractChunks(file, chunked), remote.extractChunks(file, chunked)],
          { concurrency: 2 }
        )
        expect(strip(chunksViaServer)).toStrictEqual(strip(chunksDirect))
        expect(chunksViaServer.data.data.chunks.length).toBeGreaterThan(0)
      }))
  }

  for (const entry of manifest.filter((e) => e.expect === "error")) {
    it.effect(`${entry.path}: the same ExtractionError as the engine's, in both modes`, () =>
      Effect.gen(function*() {
        const { local, remote } = yield* Corpus
        const file = fixtureFile(entry.path)
        const direct = yield* Effect.flip(local.extract(file))
        expect(direct._tag).toBe("ExtractionError")
        if (direct._tag !== "ExtractionError") return
        const calls: Array<Effect.Effect<unknown, Upload.UploadError>> = [
          remote.extract(file),
          remote.extractChunks(file),
          remote.files(file)
        ]
        for (const call of calls) {
          const viaServer = yield* Effect.flip(call)
          expect(viaServer._tag).toBe("ExtractionError")
          if (viaServer._tag !== "ExtractionError") return
          expect(viaServer.reason).toBe(direct.reason)
          expect(viaServer.file).toBe(direct.file)
          expect(viaServer.message).toContain(direct.message)
        }
      }))
  }

  it.effect("an extraction failure is the conventions' upload error body with its status, plus reason, in both modes", () =>
    Effect.gen(function*() {
      const { url } = yield* Corpus
      const corrupt = fixtureFile("pdf/bug1020226-corrupt.pdf")
      const body = (mode?: string) =>
        Effect.gen(function*() {
          const fields: Record<string, string> = mode ? { extract_mode: mode } : {}
          const bytes = new Uint8Array([...fileHead(corrupt.name, "application/pdf"), ...corrupt.data, ...closing(fields)])
          return yield* rawPost(`${url}/upload`, multipartHeaders, whole(bytes))
        })
      for (const mode of [undefined, "embeddings"]) {
        const r = yield* body(mode)
        // wire-conventions.md: 400 unsupported or bad request, 413 too large, 500 processing
        expect(r.status).toBe(400)
        expect(r.json).toEqual({
          status: false,
          content: "",
          type: "error",
          error: expect.stringContaining("PDF"),
          code: "corrupt",
          reason: "corrupt"
        })
      }
    }))

  it("extraction failures get the conventions' statuses", () => {
    expect(failureStatus("password_required")).toBe(400)
    expect(failureStatus("corrupt")).toBe(400)
    expect(failureStatus("unsupported")).toBe(400)
    expect(failureStatus("too_large")).toBe(413)
    expect(failureStatus("timeout")).toBe(500)
    expect(failureStatus("speech_unavailable")).toBe(500)
  })

  it.effect("/v1/files answers the standard result; images_only, page_based and \"false\" pass through", () =>
    Effect.gen(function*() {
      const { local, remote } = yield* Corpus
      const pdf = fixtureFile("pdf/TAMReview.pdf")
      const imagesOnly = yield* remote.files(pdf, { images_only: true, page_based: true })
      expect(imagesOnly).toStrictEqual(yield* local.files(pdf, { images_only: true, page_based: true }))
      expect(imagesOnly.pages?.length).toBeGreaterThan(0)
      // without OCR: pages 2-23 of this PDF are glyph soup, which the engine would OCR by default
      const text = yield* local.files(pdf, { enable_ocr: false })
      expect(imagesOnly.content).not.toBe(text.content)
      // enable_vision "false": the local engine then has no vision warning to give for an image
      const png = fixtureFile("png/testocr.png")
      const noVision = yield* remote.extract(png, { enable_vision: false })
      expect(noVision).toStrictEqual(yield* local.extract(png, { enable_vision: false }))
      expect(noVision.warnings ?? []).not.toContainEqual(expect.stringContaining("enable_vision"))
      expect((yield* remote.extract(png)).warnings).toContainEqual(expect.stringContaining("enable_vision"))
      // a JSON document sent with its JSON type is a file part too, not a form field
      const json = { ...fixtureFile("json/us_presidents.json"), type: "application/json" }
      expect(yield* remote.files(json)).toStrictEqual(yield* local.files(json))
    }))

  it.effect("an error of the engine that is not an extraction failure keeps its family", () =>
    Effect.gen(function*() {
      const { remote } = yield* Corpus
      // text_only and images_only exclude each other: the engine's InvalidRequest is a 400
      const e = yield* Effect.flip(remote.extract(fixtureFile("json/us_presidents.json"), { text_only: true, images_only: true }))
      expect(e._tag).toBe("BadRequest")
      expect(e.message).toContain("exclude each other")
    }))
})

// =============================================================================
// Limits, bad requests, no engine
// =============================================================================

describe("server: upload limits and bad requests", () => {
  it.scopedLive("a file of exactly 50 MiB is accepted; one over is refused by the client before sending", () =>
    Effect.gen(function*() {
      const engine = recordingEngine()
      const url = yield* serveOurs(engine.layer)
      const remote = yield* remoteAt(url)
      const atLimit: Upload.UploadFile = { name: "big.bin", data: new Uint8Array(Upload.maxFileBytes), type: "application/x-test" }
      const result = yield* remote.extract(atLimit, { text_only: true })
      // what was sent, and the API's default for enable_ocr (false), which the form left out
      expect(JSON.parse(result.content)).toEqual({ text_only: true, enable_ocr: false })
      expect(engine.calls).toEqual([{ method: "extract", name: "big.bin", type: "application/x-test", size: Upload.maxFileBytes }])
      const over = yield* Effect.flip(remote.extract({ name: "big.bin", data: new Uint8Array(51 * 1024 * 1024) }))
      expect(over._tag).toBe("PayloadTooLarge")
      expect(engine.calls).toHaveLength(1)
    }))

  it.scopedLive("a body just over the limit is a 413 in the upload error body; the engine never sees it", () =>
    Effect.gen(function*() {
      const engine = recordingEngine()
      const url = yield* serveOurs(engine.layer)
      // streamed (no Content-Length): the parser takes it in, the size on disk refuses it
      const streamed = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("big.pdf", Upload.maxFileBytes + 1))
      expectUploadError(streamed, 413)
      // with Content-Length (fetch of a FormData): refused from the header, before reading
      const form = new FormData()
      form.append("file", new Blob([new Uint8Array(Upload.maxFileBytes + 1)]), "big.pdf")
      const response = yield* Effect.promise(() => fetch(`${url}/v1/files`, { method: "POST", body: form }))
      expect(response.status).toBe(413)
      expect(yield* Effect.promise(() => response.json())).toEqual({
        status: false,
        content: "",
        type: "error",
        error: expect.stringContaining("limit"),
        code: "file_too_large"
      })
      expect(engine.calls).toEqual([])
    }))

  it.scopedLive("an endless body is refused once over the limit, not read to its end", () =>
    Effect.gen(function*() {
      const engine = recordingEngine()
      const url = yield* serveOurs(engine.layer)
      const total = 4 * Upload.maxFileBytes
      const response = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("endless.pdf", total))
      expectUploadError(response, 413)
      expect(response.headers["connection"]).toBe("close") // the rest is not drained
      expect(response.written).toBeLessThan(total / 2)
      expect(engine.calls).toEqual([])
      // the server still serves
      const ok = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("small.txt", 10, { page_based: "false" }))
      expect(ok.status).toBe(200)
      expect(engine.calls.map((c) => [c.name, c.size])).toEqual([["small.txt", 10]])
    }))

  it.scopedLive("a form without a file, a body that is not multipart, a bad boolean: 400 in the upload error body", () =>
    Effect.gen(function*() {
      const engine = recordingEngine()
      const url = yield* serveOurs(engine.layer)
      const noFile = yield* rawPost(`${url}/upload`, multipartHeaders, whole(closing({ page_based: "true" }).subarray(2)))
      expectUploadError(noFile, 400)
      expect(noFile.json).toMatchObject({ code: "missing_file", error: expect.stringContaining("\"file\"") })
      const notMultipart = yield* rawPost(`${url}/upload`, { "content-type": "application/json" }, whole(encoder.encode("{}")))
      expectUploadError(notMultipart, 400)
      const badBoolean = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("a.txt", 3, { page_based: "yes" }))
      expectUploadError(badBoolean, 400)
      expect(badBoolean.json).toMatchObject({ error: expect.stringContaining("page_based") })
      const badMode = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("a.txt", 3, { extract_mode: "fast" }))
      expectUploadError(badMode, 400)
      const repeated = yield* rawPost(
        `${url}/upload`,
        multipartHeaders,
        whole(new Uint8Array([...fileHead("a.txt"), ...encoder.encode("abc"), ...closing([["text_only", "true"], ["text_only", "false"]])]))
      )
      expectUploadError(repeated, 400)
      expect(repeated.json).toMatchObject({ error: expect.stringContaining("once") })
      const truncated = yield* rawPost(`${url}/upload`, multipartHeaders, whole(new Uint8Array([...fileHead("a.txt"), 1, 2, 3])))
      expectUploadError(truncated, 400)
      // a file sent as a text field (no filename) is no file
      const asField = encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc`)
      const noFilename = yield* rawPost(`${url}/upload`, multipartHeaders, whole(new Uint8Array([...asField, ...closing()])))
      expectUploadError(noFilename, 400)
      expect(noFilename.json).toMatchObject({ code: "missing_file" })
      const embeddingsOnFiles = yield* rawPost(`${url}/v1/files`, multipartHeaders, fileBody("a.txt", 3, { extract_mode: "embeddings" }))
      expectUploadError(embeddingsOnFiles, 400)
      expect(engine.calls).toEqual([])
      // unknown fields are ignored
      const unknownField = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("a.txt", 3, { text_only: "true", language: "de" }))
      expect(unknownField.status).toBe(200)
      expect(engine.calls.map((c) => c.name)).toEqual(["a.txt"])
    }))

  it.scopedLive("a server given no Upload service answers 501", () =>
    Effect.gen(function*() {
      const url = yield* serveOurs(Layer.empty)
      const remote = yield* remoteAt(url)
      const file = fixtureFile("json/us_presidents.json")
      const calls: Array<Effect.Effect<unknown, Upload.UploadError>> = [
        remote.extract(file),
        remote.extractChunks(file),
        remote.files(file)
      ]
      for (const call of calls) {
        const e = yield* Effect.flip(call)
        expect(e._tag).toBe("ServerError")
        expect(e._tag === "ServerError" ? e.status : 0).toBe(501)
        expect(e.message).toContain("no document engine configured")
      }
      const raw = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("a.txt", 3))
      expectUploadError(raw, 501)
    }))
})

// =============================================================================
// Bodies in memory: slow senders and the byte budget
// =============================================================================

describe("server: upload bodies in memory", () => {
  /** A body that sends a file's first `size` bytes, then waits for `gate` before closing the form. */
  async function* pausedBody(size: number, gate: Promise<void>): AsyncGenerator<Uint8Array> {
    yield fileHead("paused.txt", "text/plain")
    yield* zeros(size)
    await gate
    yield closing()
  }

  it.scopedLive("slow senders hold no extraction slot; a budget spent is a 503, given back when a client goes away", () =>
    Effect.gen(function*() {
      const engine = recordingEngine()
      const mib = 1024 * 1024
      const url = yield* serveOurs(engine.layer, { maxConcurrentUploads: 1, limits: { uploadBytesInFlight: 3 * mib } })
      // two clients that send 1 MiB and stall: with one extraction slot, neither holds it
      const stalled = yield* Effect.forEach(
        [1, 2],
        () => Effect.fork(rawPost(`${url}/upload`, multipartHeaders, pausedBody(mib, new Promise<void>(() => {})))),
        { concurrency: "unbounded" }
      )
      yield* realSleep(300)
      const small = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("small.txt", 10))
      expect(small.status).toBe(200)
      // 2 MiB held: one more MiB and a half is over the 3 MiB budget
      const over = yield* rawPost(`${url}/upload`, multipartHeaders, fileBody("big.txt", 1.5 * mib))
      expectUploadError(over, 503)
      expect(over.headers["retry-after"]).toBe("5")
      expect(engine.calls.map((c) => c.name)).toEqual(["small.txt"])
      // the stalled clients go away: their bytes are given back
      yield* Effect.forEach(stalled, Fiber.interrupt)
      yield* eventually(
        () =>
          rawPost(`${url}/upload`, multipartHeaders, fileBody("big.txt", 1.5 * mib)).pipe(
            Effect.map((r) => r.status === 200),
            Effect.orElseSucceed(() => false)
          ),
        "the budget given back"
      )
      expect(engine.calls.map((c) => [c.name, c.size])).toEqual([["small.txt", 10], ["big.txt", 1.5 * mib]])
    }))

  it.scopedLive("a body that pauses longer than the idle time-out is a 408, and the connection is closed", () =>
    Effect.gen(function*() {
      const engine = recordingEngine()
      const url = yield* serveOurs(engine.layer, { limits: { bodyIdleMs: 300 } })
      const response = yield* rawPost(`${url}/upload`, multipartHeaders, pausedBody(1024, new Promise<void>(() => {})))
      expectUploadError(response, 408)
      expect(response.headers["connection"]).toBe("close")
      expect(engine.calls).toEqual([])
    }))
})

// =============================================================================
// The client's reading of `reason`
// =============================================================================

describe("client: the reason of a failed result", () => {
  const failing = (body: Record<string, unknown>) =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: body }))
      const remote = yield* remoteAt(server.url)
      return yield* Effect.flip(remote.extract({ name: "a.pdf", data: new Uint8Array([1]) }))
    })
  const base = { status: false, content: "", type: "error", error: "no" }

  it.scoped("a known reason is kept; an unknown or malformed one falls back to processing_failed", () =>
    Effect.gen(function*() {
      for (
        const [reason, expected] of [
          ["wrong_password", "wrong_password"],
          ["a-new-reason", "processing_failed"],
          [42, "processing_failed"],
          [undefined, "processing_failed"]
        ] as const
      ) {
        const e = yield* failing(reason === undefined ? base : { ...base, reason })
        expect(e._tag).toBe("ExtractionError")
        expect(e._tag === "ExtractionError" ? e.reason : "").toBe(expected)
      }
    }))

  it.scoped("an error status with the upload error body and a known reason is that ExtractionError; without one, the HTTP family", () =>
    Effect.gen(function*() {
      const answer = (status: number, body: Record<string, unknown>) =>
        Effect.gen(function*() {
          const server = yield* startServer(() => ({ status, json: body }))
          const remote = yield* remoteAt(server.url)
          return { server, e: yield* Effect.flip(remote.extract({ name: "a.pdf", data: new Uint8Array([1]) })) }
        })
      const locked = yield* answer(400, { ...base, error: "the PDF is encrypted", reason: "password_required" })
      expect(locked.e._tag === "ExtractionError" ? [locked.e.reason, locked.e.file] : locked.e._tag).toEqual(["password_required", "a.pdf"])
      expect(locked.server.received).toHaveLength(1) // a 400 is not retried
      const slow = yield* answer(500, { ...base, error: "time-out", reason: "timeout" })
      expect(slow.e._tag === "ExtractionError" ? slow.e.reason : slow.e._tag).toBe("timeout")
      const plain = yield* answer(400, { ...base, error: "bad file" })
      expect(plain.e._tag).toBe("BadRequest")
      const odd = yield* answer(400, { ...base, error: "bad file", reason: "a-new-reason" })
      expect(odd.e._tag).toBe("BadRequest")
    }))
})

describe("server: the upload bound", () => {
  it.scopedLive("with maxConcurrentUploads 1, uploads are extracted one at a time, and all are answered", () =>
    Effect.gen(function*() {
      let running = 0
      let most = 0
      const slow = (file: Upload.UploadFile) =>
        Effect.gen(function*() {
          running++
          most = Math.max(most, running)
          yield* Effect.sleep("50 millis")
          running--
          return { status: true, content: file.name, type: "text", error: "" } satisfies Upload.StandardResult
        })
      const engine = Layer.succeed(Upload.Upload, Upload.Upload.of({ extract: slow, files: slow, extractChunks: () => Effect.die(new Error("not used")) }))
      const url = yield* serveOurs(engine, { maxConcurrentUploads: 1 })
      const post = (name: string) =>
        Effect.promise(async () => {
          const form = new FormData()
          form.append("file", new Blob(["x"]), name)
          return (await (await fetch(`${url}/upload`, { method: "POST", body: form })).json()) as { content: string }
        })
      const answers = yield* Effect.all(["a.txt", "b.txt", "c.txt"].map(post), { concurrency: "unbounded" })
      expect(answers.map((a) => a.content).sort()).toEqual(["a.txt", "b.txt", "c.txt"])
      expect(most).toBe(1)
    }))
})
