import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { clientLayer, formOf, startServer, testKey, type Handler } from "../support/server.js"

const embeddingsBody = {
  id: "req-1",
  object: "chunks",
  created: 1700000000,
  data: {
    success: true,
    data: {
      metadata: { title: "T", description: "D", language: "en" },
      chunks: [{ content: "Hello world", total_tokens: 2, from_page: 1 }]
    }
  },
  usage: { total_chunks: 1, total_extracted_text: 11, total_tokens: 2, total_pages: 1 },
  type: "pdf",
  error: ""
}

const withUpload = <A, E>(handler: Handler, f: (u: Upload.Service) => Effect.Effect<A, E>, uploadUrl = true) =>
  Effect.gen(function*() {
    const server = yield* startServer(handler)
    const base = yield* startServer(() => ({ status: 500, text: "base host must not be used for /upload" }))
    const result = yield* Effect.flatMap(Upload.Upload, f).pipe(
      Effect.provide(
        Upload.layer.pipe(
          Layer.provide(clientLayer(uploadUrl ? base.url : server.url, uploadUrl ? { uploadUrl: server.url } : {}))
        )
      )
    )
    return { server, base, result }
  })

const file: Upload.UploadFile = { name: "report.pdf", data: new TextEncoder().encode("%PDF-1.4 fake"), type: "application/pdf" }

describe("Upload", () => {
  it.scoped("sends every form field as the spec says, to the upload host", () =>
    Effect.gen(function*() {
      const { result, server, base } = yield* withUpload(
        () => ({ json: { status: true, content: "text", type: "pdf", error: "" } }),
        (u) =>
          u.extract(file, {
            enable_ocr: true,
            enable_vision: false,
            save_all: false,
            text_only: true,
            vision_only: false,
            page_based: true,
            images_only: false,
            remove_headers: true
          })
      )
      expect(result).toEqual({ status: true, content: "text", type: "pdf", error: "" })
      expect(base.received).toHaveLength(0)
      const req = server.received[0]!
      expect(req.method).toBe("POST")
      expect(req.path).toBe("/upload")
      expect(req.headers.authorization).toBe(`Bearer ${testKey}`)
      const form = yield* Effect.promise(() => formOf(req))
      const sent = form.get("file") as File
      expect(sent.name).toBe("report.pdf")
      expect(new Uint8Array(yield* Effect.promise(() => sent.arrayBuffer()))).toEqual(file.data)
      expect(Object.fromEntries([...form.entries()].filter(([k]) => k !== "file"))).toEqual({
        enable_ocr: "true",
        enable_vision: "false",
        save_all: "false",
        text_only: "true",
        vision_only: "false",
        page_based: "true",
        images_only: "false",
        remove_headers: "true"
      })
    }))

  it.scoped("embeddings mode sends extract_mode=embeddings and decodes the chunk result", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withUpload(() => ({ json: embeddingsBody }), (u) => u.extractChunks(file))
      expect(result.data.data.chunks[0]).toEqual({ content: "Hello world", total_tokens: 2, from_page: 1 })
      expect(result.usage.total_tokens).toBe(2)
      const form = yield* Effect.promise(() => formOf(server.received[0]!))
      expect(form.get("extract_mode")).toBe("embeddings")
      expect(form.has("enable_ocr")).toBe(false)
    }))

  it.scoped("/v1/files goes to the base host", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withUpload(
        () => ({ json: { status: true, content: "c", type: "text", error: "" } }),
        (u) => u.files({ name: "a.txt", data: new TextEncoder().encode("hi") }),
        false
      )
      expect(result.content).toBe("c")
      expect(server.received[0]?.path).toBe("/v1/files")
    }))

  it.scoped("a file over 50 MiB is refused and nothing is sent", () =>
    Effect.gen(function*() {
      const big: Upload.UploadFile = { name: "big.pdf", data: new Uint8Array(Upload.maxFileBytes + 1) }
      const { result, server } = yield* withUpload(() => ({ json: {} }), (u) => Effect.flip(u.extract(big)))
      expect(result._tag).toBe("PayloadTooLarge")
      if (result._tag === "PayloadTooLarge") expect(result.size).toBe(Upload.maxFileBytes + 1)
      expect(server.received).toHaveLength(0)
    }))

  for (const [status, tag] of [[400, "BadRequest"], [413, "PayloadTooLarge"], [500, "ServerError"]] as const) {
    it.scopedLive(`the upload error body with HTTP ${status} is ${tag}`, () =>
      Effect.gen(function*() {
        const { result } = yield* withUpload(
          () => ({ status, json: { status: false, content: "", type: "error", error: `reason ${status}` } }),
          (u) => Effect.flip(u.extract(file))
        )
        expect(result._tag).toBe(tag)
        expect(result.message).toContain(`reason ${status}`)
      }))
  }

  it.scoped("a 200 that says status:false is an ExtractionError", () =>
    Effect.gen(function*() {
      const { result } = yield* withUpload(
        () => ({ json: { status: false, content: "", type: "error", error: "OCR service unavailable" } }),
        (u) => Effect.flip(u.extract(file))
      )
      expect(result._tag).toBe("ExtractionError")
      expect(result.message).toContain("OCR service unavailable")
    }))

  it.scoped("a password is refused by the remote layer before sending", () =>
    Effect.gen(function*() {
      const { result, server } = yield* withUpload(
        () => ({ json: {} }),
        (u) => Effect.flip(u.extract(file, { password: Redacted.make("pw") }))
      )
      expect(result._tag).toBe("InvalidRequest")
      expect(server.received).toHaveLength(0)
    }))

  it.scoped("a malformed embeddings result is a DecodeError naming the field", () =>
    Effect.gen(function*() {
      const broken = { ...embeddingsBody, data: { success: true, data: { metadata: {}, chunks: [{ content: "x" }] } } }
      const { result } = yield* withUpload(() => ({ json: broken }), (u) => Effect.flip(u.extractChunks(file)))
      expect(result._tag).toBe("DecodeError")
      if (result._tag === "DecodeError") expect(result.path).toBe("data.data.chunks[0].total_tokens")
    }))
})
