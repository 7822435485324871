/**
 * `POST /upload` and `POST /v1/files` (`../shared/spec/service-api.md` §1), served by whatever
 * `Upload` service the server was given (the local document engine, or the remote API as a
 * gateway). Without one, both answer 501.
 *
 * The multipart body is read into memory as it arrives (`internal/form.ts`), counted against
 * the server's upload byte budget. Every size is bounded while the body streams in: a file over
 * `Upload.maxFileBytes` is a 413 before the engine sees it, any other limit of the form a 400
 * naming it (the whole form is refused: no field is ever dropped), a body that pauses longer
 * than the idle time-out a 408, and nothing unbounded is buffered. Only the extraction holds a
 * slot of the upload bound: a slow sender holds none.
 *
 * Answers:
 * - a result: 200 with the `StandardResult` / `EmbeddingsResult`, encoded with the client's
 *   schemas;
 * - every failure: the upload error body of `wire-conventions.md`, `{status: false, content: "",
 *   type: "error", error}` (plus `code`), with the status the conventions give: an extraction
 *   failure 400 (encrypted, corrupt, unsupported, over a parse limit), 413 (too large) or 500
 *   (time-out, OCR or speech unavailable, other), carrying `reason`, the `ExtractionError`
 *   reason, so the remote client rebuilds the same typed error; a bad form (no `file` part, not
 *   multipart, a boolean field other than `true`/`false`, an `extract_mode` other than
 *   `default`/`embeddings`, `embeddings` on `/v1/files`) 400; a body over the limit 413 (and the
 *   connection is closed rather than drained), a body idle too long 408, the upload byte budget
 *   spent 503 with `Retry-After`; no upload service 501; any other typed error of
 *   the service its status (`fromError`). Unknown form fields are ignored.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, type Schema, type Scope } from "effect"
import * as Upload from "../../api/Upload.js"
import type * as RagError from "../../RagError.js"
import { nodeRequest } from "../internal/body.js"
import * as FormBody from "../internal/form.js"
import { ServerLimits } from "../internal/limits.js"
import * as State from "../internal/state.js"
import { clipped, fromError, jsonResponse, service, type WireError } from "../internal/wire.js"

// =============================================================================
// Limits
// =============================================================================

/**
 * Room for the part headers and the small form fields around the file. The parser counts a
 * part's headers in its size, so the part limit is the file limit plus this; the file's exact
 * size is checked once it is in.
 */
const formOverhead = 64 * 1024

/** A whole body larger than this is refused (413) without being read to its end. */
const maxBodyBytes = Upload.maxFileBytes + formOverhead

/** A form field's value: `true`, `false`, `embeddings`; anything long is not a field of this form. */
export const maxFieldBytes = 4 * 1024

/** The form has 10 parts at most (file, 8 booleans, extract_mode); a few unknown fields are tolerated. */
export const maxParts = 32

// =============================================================================
// Wire errors
// =============================================================================

const invalid = (endpoint: string, message: string, code = "invalid_request"): WireError => ({
  status: 400,
  message: `${endpoint}: ${message}`,
  type: "invalid_request_error",
  code
})

const tooLarge = (endpoint: string, what: string): WireError => ({
  status: 413,
  message: `${endpoint}: ${what}; the limit is ${Upload.maxFileBytes} bytes (50 MiB)`,
  type: "payload_too_large",
  code: "file_too_large"
})

// =============================================================================
// The form
// =============================================================================

/** The decoded form: the file, the options that were sent, and the extraction mode. */
interface Form {
  readonly file: Upload.UploadFile
  readonly options: Upload.UploadOptions
  readonly extractMode: "default" | "embeddings"
}

/** A single text field's value, `undefined` when absent; a repeated field or a file part is a 400. */
const textField = (endpoint: string, form: FormBody.Form, name: string) => {
  const values = form.fields.get(name)
  if (form.files.has(name) || (values !== undefined && values.length > 1)) {
    return Effect.fail(invalid(endpoint, `"${name}" must be sent once, as a text field`, "invalid_field"))
  }
  return Effect.succeed(values?.[0])
}

const isExtractMode = (mode: string): mode is Form["extractMode"] => mode === "default" || mode === "embeddings"

/** The boolean fields (`true` / `false`, exactly) and `extract_mode`. */
const readFields = (endpoint: string, form: FormBody.Form) =>
  Effect.gen(function*() {
    const options: { -readonly [K in (typeof Upload.booleanFields)[number]]?: boolean } = {}
    for (const name of Upload.booleanFields) {
      const value = yield* textField(endpoint, form, name)
      if (value === undefined) continue
      if (value !== "true" && value !== "false") {
        return yield* Effect.fail(
          invalid(endpoint, `"${name}" must be "true" or "false", not ${JSON.stringify(value.slice(0, 40))}`, "invalid_field")
        )
      }
      options[name] = value === "true"
    }
    // the API's default (service-api.md: enable_ocr false), not the local engine's own default
    // (which OCRs scanned PDF pages): a client of the service gets what the spec says
    options.enable_ocr ??= false
    const mode = (yield* textField(endpoint, form, "extract_mode")) ?? "default"
    if (!isExtractMode(mode)) {
      return yield* Effect.fail(
        invalid(endpoint, `"extract_mode" must be "default" or "embeddings", not ${JSON.stringify(mode.slice(0, 40))}`, "invalid_field")
      )
    }
    return { options: options as Upload.UploadOptions, extractMode: mode }
  })

/** The one `file` part, within the file limit. */
const readFile = (endpoint: string, form: FormBody.Form) =>
  Effect.gen(function*() {
    const parts = form.files.get("file")
    if (parts === undefined || parts.length !== 1 || form.fields.has("file")) {
      return yield* Effect.fail(
        invalid(endpoint, parts === undefined && !form.fields.has("file") ? `the form has no "file" part` : `"file" must be one file part (with a filename)`, "missing_file")
      )
    }
    const part = parts[0]!
    if (part.data.byteLength > Upload.maxFileBytes) {
      return yield* Effect.fail(tooLarge(endpoint, `${part.name} is ${part.data.byteLength} bytes`))
    }
    const file: Upload.UploadFile = { name: part.name, data: part.data, type: part.contentType }
    return file
  })

/**
 * Reads the multipart form of the request within the limits (`form.ts`). The bytes stay
 * counted against the server's upload budget until the request's scope closes.
 */
const readForm = (endpoint: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const contentType = request.headers["content-type"] ?? ""
    if (!/^multipart\/form-data\s*;.*boundary=/i.test(contentType)) {
      return yield* Effect.fail(
        invalid(endpoint, `the body must be multipart/form-data with a "file" part`, "invalid_content_type")
      )
    }
    const source = nodeRequest(request)
    if (source === undefined) {
      return yield* Effect.fail(invalid(endpoint, "this server reads uploads from Node requests only", "invalid_request"))
    }
    const limits = yield* ServerLimits
    const budget = yield* State.uploadBytes
    const form = yield* FormBody.read(endpoint, source, contentType, {
      maxParts,
      maxFieldBytes,
      maxPartBytes: maxBodyBytes,
      maxBodyBytes,
      idleMs: limits.bodyIdleMs
    }, budget)
    const file = yield* readFile(endpoint, form)
    const { extractMode, options } = yield* readFields(endpoint, form)
    return { file, options, extractMode } satisfies Form
  })

// =============================================================================
// Answers
// =============================================================================

/**
 * The upload error body of `wire-conventions.md`, `{status: false, content: "", type: "error",
 * error}`, for every failure of the upload routes, plus two extensions: `code`, and for an
 * extraction failure `reason` (the `ExtractionError` reason, which the remote client reads back
 * into the same typed error).
 */
const uploadErrorResponse = (e: WireError, reason?: RagError.ExtractionError["reason"]) =>
  HttpServerResponse.unsafeJson(
    { status: false, content: "", type: "error", error: e.message, code: e.code, ...(reason ? { reason } : {}) },
    { status: e.status, headers: e.headers ?? {} }
  )

/** Runs an upload handler: its wire errors answered in the upload error body. */
const handleUpload = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, WireError | RagError.ExtractionError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Exclude<R, Scope.Scope>> =>
  Effect.catchAll(Effect.scoped(effect), (e) =>
    "_tag" in e && e._tag === "ExtractionError"
      ? Effect.map(clipped(fromError(e)), (wire) => uploadErrorResponse(wire, e.reason))
      : Effect.map(clipped(e as WireError), (wire) => uploadErrorResponse(wire)))

/** Runs one upload call: its result encoded with `schema`; an extraction failure as itself; any other error its status. */
const answer = <A, I>(
  call: Effect.Effect<A, Upload.UploadError>,
  schema: Schema.Schema<A, I>
): Effect.Effect<HttpServerResponse.HttpServerResponse, WireError | RagError.ExtractionError> =>
  Effect.matchEffect(call, {
    onFailure: (e): Effect.Effect<never, WireError | RagError.ExtractionError> =>
      e._tag === "ExtractionError" ? Effect.fail(e) : Effect.fail(fromError(e)),
    onSuccess: (result) => jsonResponse(schema, result)
  })

const upload = "POST /upload"
const files = "POST /v1/files"

/** The routes of the upload endpoints. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post(
    "/upload",
    handleUpload(Effect.gen(function*() {
      const svc = yield* service(Upload.Upload, upload, "document engine")
      const { extractMode, file, options } = yield* readForm(upload)
      // at most `maxConcurrentUploads` files are extracted at once; a body still arriving holds no slot
      return yield* State.upload(
        extractMode === "embeddings"
          ? answer(svc.extractChunks(file, options), Upload.EmbeddingsResult)
          : answer(svc.extract(file, options), Upload.StandardResult)
      )
    }))
  ),
  HttpRouter.post(
    "/v1/files",
    handleUpload(Effect.gen(function*() {
      const svc = yield* service(Upload.Upload, files, "document engine")
      const { extractMode, file, options } = yield* readForm(files)
      if (extractMode === "embeddings") {
        return yield* Effect.fail(
          invalid(files, `"extract_mode=embeddings" is served by POST /upload; /v1/files answers the standard result`, "invalid_field")
        )
      }
      return yield* State.upload(answer(svc.files(file, options), Upload.StandardResult))
    }))
  )
)
