/**
 * `POST /upload` and `POST /v1/files` (`../shared/spec/service-api.md` §1), served by whatever
 * `Upload` service the server was given (the local document engine, or the remote API as a
 * gateway). Without one, both answer 501.
 *
 * The multipart body is parsed by `@effect/platform` and the `file` part is written to a temp
 * directory of the request's own scope (removed as soon as the bytes are read, and in any case
 * when the request ends). Every size is bounded while the body streams in: a file over
 * `Upload.maxFileBytes` is a 413 before the engine sees it, and nothing unbounded is buffered.
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
 *   connection is closed rather than drained); no upload service 501; any other typed error of
 *   the service its status (`fromError`). Unknown form fields are ignored.
 */
import { FileSystem, HttpRouter, HttpServerRequest, HttpServerResponse, Multipart } from "@effect/platform"
import { Duration, Effect, Option, type Schema } from "effect"
import { IncomingMessage } from "node:http"
import * as Upload from "../../api/Upload.js"
import type * as RagError from "../../RagError.js"
import * as State from "../internal/state.js"
import { fromError, jsonResponse, service, type WireError } from "../internal/wire.js"

// =============================================================================
// Limits
// =============================================================================

/**
 * Room for the part headers and the small form fields around the file. The parser counts a
 * part's headers in its size, so the part limit is the file limit plus this; the file's exact
 * size is checked once it is on disk.
 */
const formOverhead = 64 * 1024

/** A whole body larger than this is refused (413) without being read to its end. */
const maxBodyBytes = Upload.maxFileBytes + formOverhead

/** A form field's value: `true`, `false`, `embeddings`; anything long is not a field of this form. */
const maxFieldBytes = 4 * 1024

/** The form has 10 parts at most (file, 8 booleans, extract_mode); a few unknown fields are tolerated. */
const maxParts = 32

// =============================================================================
// Wire errors
// =============================================================================

/**
 * For an error answered while the body may still be arriving: the connection is closed after
 * the response (`Connection: close`) instead of being drained, so a client cannot make the
 * server read an unbounded body it has already refused.
 */
const closing = (e: WireError): WireError => ({ ...e, headers: { ...e.headers, connection: "close" } })

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

const serverError = (endpoint: string, message: string): WireError => ({
  status: 500,
  message: `${endpoint}: ${message}`,
  type: "server_error",
  code: null
})

/** The `_tag` (and `limit`) of a multipasta parser error, when `cause` is one. */
const parserError = (cause: unknown): { readonly tag: string; readonly limit?: unknown } | undefined => {
  if (typeof cause !== "object" || cause === null || !("_tag" in cause) || typeof cause._tag !== "string") {
    return undefined
  }
  const limit = "limit" in cause ? cause.limit : undefined
  return { tag: cause._tag, limit }
}

/**
 * A multipart error as a wire error. A limit reached inside the file part reaches us through
 * the file's stream, wrapped as `InternalError`: the parser error in its `cause` says which.
 */
const multipartError = (endpoint: string) => (e: Multipart.MultipartError): WireError => {
  const parser = parserError(e.cause)
  const limit = e.reason === "FileTooLarge"
    ? "MaxPartSize"
    : e.reason === "BodyTooLarge"
    ? "MaxTotalSize"
    : e.reason === "FieldTooLarge"
    ? "MaxFieldSize"
    : e.reason === "TooManyParts"
    ? "MaxParts"
    : parser?.tag === "ReachedLimit"
    ? parser.limit
    : undefined
  switch (limit) {
    case "MaxPartSize":
      return closing(tooLarge(endpoint, "the file is too large"))
    case "MaxTotalSize":
      return closing(tooLarge(endpoint, "the body is too large"))
    case "MaxFieldSize":
      return closing(invalid(endpoint, `a form field is over ${maxFieldBytes} bytes (is the file sent without a filename?)`))
    case "MaxParts":
      return closing(invalid(endpoint, `the form has more than ${maxParts} parts`))
  }
  if (e.reason === "Parse" || parser !== undefined) {
    return closing(invalid(endpoint, `the multipart body is malformed (${parser?.tag ?? e.reason})`, "invalid_multipart"))
  }
  return closing(serverError(endpoint, "the upload could not be stored"))
}

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
const textField = (endpoint: string, form: Multipart.Persisted, name: string) => {
  const value = form[name]
  if (value === undefined || typeof value === "string") return Effect.succeed(value)
  return Effect.fail(invalid(endpoint, `"${name}" must be sent once, as a text field`, "invalid_field"))
}

const isExtractMode = (mode: string): mode is Form["extractMode"] => mode === "default" || mode === "embeddings"

/** The boolean fields (`true` / `false`, exactly) and `extract_mode`. */
const readFields = (endpoint: string, form: Multipart.Persisted) =>
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
    const mode = (yield* textField(endpoint, form, "extract_mode")) ?? "default"
    if (!isExtractMode(mode)) {
      return yield* Effect.fail(
        invalid(endpoint, `"extract_mode" must be "default" or "embeddings", not ${JSON.stringify(mode.slice(0, 40))}`, "invalid_field")
      )
    }
    return { options: options as Upload.UploadOptions, extractMode: mode }
  })

/** The `file` part, read from its temp file once its size is known to be within the limit. */
const readFile = (endpoint: string, form: Multipart.Persisted) =>
  Effect.gen(function*() {
    const parts = form["file"]
    if (parts === undefined) {
      return yield* Effect.fail(invalid(endpoint, `the form has no "file" part`, "missing_file"))
    }
    if (typeof parts === "string" || parts.length !== 1 || !Multipart.isPersistedFile(parts[0])) {
      return yield* Effect.fail(
        invalid(endpoint, `"file" must be one file part (with a filename)`, "missing_file")
      )
    }
    const part = parts[0]
    const fs = yield* FileSystem.FileSystem
    const failed = () => serverError(endpoint, "the uploaded file could not be read back")
    const info = yield* Effect.mapError(fs.stat(part.path), failed)
    if (Number(info.size) > Upload.maxFileBytes) {
      return yield* Effect.fail(tooLarge(endpoint, `${part.name} is ${info.size} bytes`))
    }
    const bytes = yield* Effect.mapError(fs.readFile(part.path), failed)
    // Node's FileSystem gives a Buffer; the service takes a Uint8Array (a view, no copy)
    const data = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const file: Upload.UploadFile = { name: part.name, data, type: part.contentType }
    return file
  })

/** How long parsing may still take once the whole body is in (only the last buffers are left to write). */
const parseGrace = Duration.seconds(2)

/**
 * Succeeds once the request body has been read to its end (Node requests; never for others).
 *
 * Why: multipasta reports a parse error to a file part's stream with a bare `emit("error")`.
 * When nobody listens to that stream yet (a body that ends inside a small file part), the error
 * is lost and the part never ends, so the parse would wait for as long as the client keeps the
 * connection open. Once the body is in, the parser has had everything it needs: a parse still
 * pending a while later is a malformed body.
 */
const bodyEnded = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> => {
  const source = request.source
  if (!(source instanceof IncomingMessage)) return Effect.never
  return Effect.async<void>((resume) => {
    if (source.readableEnded) return resume(Effect.void)
    const done = () => resume(Effect.void)
    source.once("end", done)
    return Effect.sync(() => source.off("end", done))
  })
}

/**
 * Reads the multipart form of the request within the limits. The temp files live in a scope
 * of their own, closed once the file's bytes are in memory (the request's scope would also
 * remove them, but only after the extraction and the response).
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
    // refuse a body announced as too large before reading any of it
    const length = Number(request.headers["content-length"] ?? "")
    if (Number.isFinite(length) && length > maxBodyBytes) {
      return yield* Effect.fail(closing(tooLarge(endpoint, `the body is ${length} bytes`)))
    }
    return yield* Effect.scoped(
      Effect.gen(function*() {
        const form = yield* request.multipart.pipe(
          Multipart.withLimits({
            maxParts: Option.some(maxParts),
            maxFieldSize: maxFieldBytes,
            maxFileSize: Option.some(maxBodyBytes),
            maxTotalSize: Option.some(maxBodyBytes),
            // every part with a filename is a file, whatever its type (a JSON document too)
            fieldMimeTypes: []
          }),
          Effect.mapError(multipartError(endpoint)),
          Effect.raceFirst(
            bodyEnded(request).pipe(
              Effect.zipRight(Effect.sleep(parseGrace)),
              Effect.zipRight(Effect.fail(closing(invalid(endpoint, "the multipart body ends inside a part", "invalid_multipart"))))
            )
          )
        )
        const file = yield* readFile(endpoint, form)
        const { extractMode, options } = yield* readFields(endpoint, form)
        return { file, options, extractMode } satisfies Form
      })
    )
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
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.catchAll(effect, (e) =>
    Effect.succeed(
      "_tag" in e && e._tag === "ExtractionError"
        ? uploadErrorResponse(fromError(e), e.reason)
        : uploadErrorResponse(e as WireError)
    ))

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
      // at most `maxConcurrentUploads` files are read and extracted at once (each may be 50 MiB)
      return yield* State.upload(Effect.gen(function*() {
        const { extractMode, file, options } = yield* readForm(upload)
        return yield* extractMode === "embeddings"
          ? answer(svc.extractChunks(file, options), Upload.EmbeddingsResult)
          : answer(svc.extract(file, options), Upload.StandardResult)
      }))
    }))
  ),
  HttpRouter.post(
    "/v1/files",
    handleUpload(Effect.gen(function*() {
      const svc = yield* service(Upload.Upload, files, "document engine")
      return yield* State.upload(Effect.gen(function*() {
        const { extractMode, file, options } = yield* readForm(files)
        if (extractMode === "embeddings") {
          return yield* Effect.fail(
            invalid(files, `"extract_mode=embeddings" is served by POST /upload; /v1/files answers the standard result`, "invalid_field")
          )
        }
        return yield* answer(svc.files(file, options), Upload.StandardResult)
      }))
    }))
  )
)
