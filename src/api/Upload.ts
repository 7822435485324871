/**
 * File upload and extraction (`POST {uploadUrl}/upload`, multipart) and simple uploads
 * (`POST {baseUrl}/v1/files`).
 *
 * Two result types: {@link StandardResult} (`extract`) and {@link EmbeddingsResult}
 * (`extractChunks`, `extract_mode=embeddings`). The local document engine provides the same
 * {@link Upload} Tag, so local and remote are swapped by changing one layer.
 *
 * A file over 50 MiB is refused before any byte is sent.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { basename } from "node:path"
import { describeKind, readRegularFile } from "../internal/files.js"
import * as RagError from "../RagError.js"
import { ApiHttp } from "./ApiHttp.js"

/**
 * The service's file size limit: 50 MiB.
 *
 * @since 0.1.0
 * @category utils
 */
export const maxFileBytes = 50 * 1024 * 1024

// =============================================================================
// Inputs
// =============================================================================

/**
 * A file to upload: its name (extension matters), bytes and optional MIME type.
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadFile {
  readonly name: string
  readonly data: Uint8Array
  readonly type?: string | undefined
}

/**
 * The processing options: the form fields of the service, with the wire names. Omitted
 * fields are not sent, so the service defaults apply (`enable_vision` and `remove_headers`
 * default to true, the rest to false).
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadOptions {
  readonly enable_ocr?: boolean | undefined
  readonly enable_vision?: boolean | undefined
  readonly save_all?: boolean | undefined
  readonly text_only?: boolean | undefined
  readonly vision_only?: boolean | undefined
  readonly page_based?: boolean | undefined
  readonly images_only?: boolean | undefined
  readonly remove_headers?: boolean | undefined
  /**
   * The password of an encrypted document. Not a wire field: only the local engine can use
   * it; the remote layer refuses a call that sets it rather than drop it silently.
   */
  readonly password?: Redacted.Redacted<string> | undefined
}

/**
 * The boolean form fields, in the order the service lists them.
 *
 * @since 0.1.0
 * @category utils
 */
export const booleanFields = [
  "enable_ocr",
  "enable_vision",
  "save_all",
  "text_only",
  "vision_only",
  "page_based",
  "images_only",
  "remove_headers"
] as const

// =============================================================================
// Results
// =============================================================================

/**
 * Content of one page, slide or sheet (`page_based` results).
 *
 * @since 0.1.0
 * @category schemas
 */
export const PageContent = Schema.Struct({
  /** 1-based page, slide or sheet number. */
  page: Schema.Int,
  /** Sheet name or slide title, when there is one. */
  name: Schema.optional(Schema.String),
  content: Schema.String
})
/**
 * @since 0.1.0
 * @category models
 */
export type PageContent = typeof PageContent.Type

/** The reasons of {@link RagError.ExtractionError}. */
const FailureReason = RagError.ExtractionError.fields.reason
type FailureReason = typeof FailureReason.Type

/**
 * The `reason` extension of a failed result: the {@link RagError.ExtractionError} reason this
 * library's server adds to `error`. Decoded tolerantly: a value that is not a known reason
 * (another server, a newer reason) decodes as absent instead of failing the whole result.
 */
const ReasonField = Schema.optional(
  Schema.transform(Schema.Unknown, Schema.UndefinedOr(FailureReason), {
    strict: true,
    decode: (u) => (Schema.is(FailureReason)(u) ? u : undefined),
    encode: (reason) => reason
  })
)

/**
 * The standard-mode result. `status`, `content`, `type` and `error` are the service's fields;
 * `pages` (with `page_based`) and `warnings` (options that could not act, e.g. vision without
 * a vision model) are extensions that a client of the spec can ignore, and so are `reason`
 * (on a failed result from this library's server: why, as an ExtractionError reason) and
 * `format` (the file's own format where `type` names the spec's category: `xls`, `html`,
 * `markdown`, `notebook` …; set by the local engine).
 *
 * @since 0.1.0
 * @category schemas
 */
export const StandardResult = Schema.Struct({
  status: Schema.Boolean,
  /** Required (the empty string on failure): a result without it is a `DecodeError`, never empty text. */
  content: Schema.String,
  type: Schema.String,
  format: Schema.optional(Schema.String),
  error: Schema.optionalWith(Schema.String, { default: () => "" }),
  pages: Schema.optional(Schema.Array(PageContent)),
  warnings: Schema.optional(Schema.Array(Schema.String)),
  reason: ReasonField
})
/**
 * @since 0.1.0
 * @category models
 */
export type StandardResult = typeof StandardResult.Type

/**
 * One chunk of an embeddings-mode result. `from_sheet` (the name of the sheet a spreadsheet
 * chunk comes from), `section` (the heading the chunk sits under) and `ocr` (true when the
 * chunk's page was read by OCR) are extensions that a client of the spec can ignore.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Chunk = Schema.Struct({
  content: Schema.String,
  total_tokens: Schema.Int,
  from_page: Schema.Int,
  from_sheet: Schema.optional(Schema.String),
  section: Schema.optional(Schema.String),
  ocr: Schema.optional(Schema.Boolean)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Chunk = typeof Chunk.Type

/**
 * Document metadata of an embeddings-mode result. `properties` (the document's own fields, such
 * as Markdown front matter or a notebook's kernel, as strings) is an extension.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DocumentMetadata = Schema.Struct({
  title: Schema.optionalWith(Schema.String, { default: () => "" }),
  description: Schema.optionalWith(Schema.String, { default: () => "" }),
  language: Schema.optionalWith(Schema.String, { default: () => "" }),
  properties: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})
/**
 * @since 0.1.0
 * @category models
 */
export type DocumentMetadata = typeof DocumentMetadata.Type

/**
 * The embeddings-mode result: the service's shape, plus the `warnings` and `reason`
 * extensions of {@link StandardResult}.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EmbeddingsResult = Schema.Struct({
  id: Schema.String,
  object: Schema.String,
  created: Schema.Int,
  data: Schema.Struct({
    success: Schema.Boolean,
    data: Schema.Struct({
      metadata: DocumentMetadata,
      chunks: Schema.Array(Chunk)
    })
  }),
  usage: Schema.Struct({
    total_chunks: Schema.Int,
    total_extracted_text: Schema.Int,
    total_tokens: Schema.Int,
    total_pages: Schema.Int
  }),
  type: Schema.String,
  format: Schema.optional(Schema.String),
  error: Schema.optionalWith(Schema.String, { default: () => "" }),
  warnings: Schema.optional(Schema.Array(Schema.String)),
  reason: ReasonField
})
/**
 * @since 0.1.0
 * @category models
 */
export type EmbeddingsResult = typeof EmbeddingsResult.Type

/**
 * What an upload can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type UploadError = RagError.ApiError | RagError.ExtractionError

// =============================================================================
// Service
// =============================================================================

/**
 * The upload service; remote and local layers provide it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Extracts a file (standard mode). */
  readonly extract: (file: UploadFile, options?: UploadOptions) => Effect.Effect<StandardResult, UploadError>
  /** Extracts and chunks a file (`extract_mode=embeddings`). */
  readonly extractChunks: (
    file: UploadFile,
    options?: UploadOptions
  ) => Effect.Effect<EmbeddingsResult, UploadError>
  /** A simple upload (`POST /v1/files`); answers the standard result. */
  readonly files: (file: UploadFile, options?: UploadOptions) => Effect.Effect<StandardResult, UploadError>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Upload extends Context.Tag("effect-rag/api/Upload")<Upload, Service>() {}

// =============================================================================
// Helpers
// =============================================================================

const tooLarge = (endpoint: string, name: string, size: number) =>
  new RagError.PayloadTooLarge({
    endpoint,
    message: `${name} is ${size} bytes; the limit is ${maxFileBytes} bytes (50 MiB)`,
    size,
    limit: maxFileBytes
  })

/**
 * Reads a file from disk, refusing one over 50 MiB from its size alone (it is never read).
 * The path is a string, or the bytes of a name that is not UTF-8 (a `Buffer` from
 * `readdir(…, { encoding: "buffer" })`; `name` is then the printable name). Only a regular file
 * is read: a FIFO, socket or device is refused from its type without waiting for a writer (it is
 * opened with `O_NONBLOCK`). The read can be interrupted (a time-out, a stop signal): the file is
 * closed when the blocked call returns. A file that cannot be read fails with `BadRequest`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromPath = (
  path: string | Uint8Array,
  name: string = typeof path === "string" ? basename(path) : basename(Buffer.from(path).toString("utf8"))
): Effect.Effect<UploadFile, RagError.PayloadTooLarge | RagError.BadRequest> =>
  Effect.async<UploadFile, RagError.PayloadTooLarge | RagError.BadRequest>((resume) => {
    const endpoint = "read file"
    let abandoned = false
    const bytes = typeof path === "string" ? path : Buffer.from(path.buffer, path.byteOffset, path.byteLength)
    readRegularFile(bytes, maxFileBytes, () => abandoned).then(
      (r) => {
        if (abandoned) return
        if ("data" in r) {
          const data = r.data
          return resume(Effect.succeed({ name, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) }))
        }
        switch (r._tag) {
          case "Special":
            return resume(Effect.fail(new RagError.BadRequest({ endpoint, message: `${name} is ${describeKind(r.kind)}, not a regular file` })))
          case "NotAFile":
            return resume(Effect.fail(new RagError.BadRequest({ endpoint, message: `${name} is not a file` })))
          case "TooLarge":
            return resume(Effect.fail(tooLarge(endpoint, name, r.size)))
        }
      },
      (cause: unknown) => {
        if (abandoned) return
        resume(Effect.fail(new RagError.BadRequest({ endpoint, message: `cannot read ${name}: ${(cause as Error)?.message ?? cause}` })))
      }
    )
    return Effect.sync(() => {
      abandoned = true
    })
  })

/**
 * Checks the size limit (used by every layer before any work or transfer).
 *
 * @since 0.1.0
 * @category utils
 */
export const checkSize = (endpoint: string, file: UploadFile): Effect.Effect<void, RagError.PayloadTooLarge> =>
  file.data.byteLength > maxFileBytes ? Effect.fail(tooLarge(endpoint, file.name, file.data.byteLength)) : Effect.void

/**
 * Builds the multipart form: `file`, then the boolean fields as `true`/`false`, then `extract_mode`.
 *
 * @since 0.1.0
 * @category utils
 */
export const toFormData = (
  file: UploadFile,
  options: UploadOptions,
  extractMode: "default" | "embeddings" | undefined
): FormData => {
  const form = new FormData()
  form.append("file", new Blob([file.data], { type: file.type ?? "application/octet-stream" }), file.name)
  for (const field of booleanFields) {
    const value = options[field]
    if (value !== undefined) form.append(field, value ? "true" : "false")
  }
  if (extractMode !== undefined) form.append("extract_mode", extractMode)
  return form
}

/**
 * A 200 whose body says `status: false` (`data.success: false` in embeddings mode) is a
 * failure reported by the service: an ExtractionError with the body's `reason` when it carries
 * a known one (this library's server does), else `processing_failed`.
 */
const failedResult = (
  endpoint: string,
  file: UploadFile,
  result: { readonly error: string; readonly reason?: FailureReason | undefined }
) =>
  new RagError.ExtractionError({
    file: file.name,
    reason: result.reason ?? "processing_failed",
    message: `${endpoint}: the service could not process ${file.name}: ${result.error || "no reason given"}`
  })

/**
 * An error status (400, 413, 500) whose upload error body carries a known `reason` (this
 * library's server sends one) is that ExtractionError; any other error stays what it is.
 */
const extractionFailure = (endpoint: string, file: UploadFile, e: RagError.ApiError): UploadError => {
  const code = "code" in e ? e.code : undefined
  return (e._tag === "BadRequest" || e._tag === "PayloadTooLarge" || e._tag === "ServerError") && Schema.is(FailureReason)(code)
    ? new RagError.ExtractionError({ file: file.name, reason: code, message: e.message })
    : e
}

// =============================================================================
// Remote layer
// =============================================================================

/**
 * Builds the remote service on {@link ApiHttp}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
  const http = yield* ApiHttp

  const send = <A, I>(
    endpoint: string,
    host: "upload" | "base",
    path: string,
    file: UploadFile,
    options: UploadOptions,
    extractMode: "default" | "embeddings" | undefined,
    schema: Schema.Schema<A, I>
  ): Effect.Effect<A, UploadError> =>
    Effect.gen(function*() {
      yield* checkSize(endpoint, file)
      if (options.password !== undefined) {
        return yield* new RagError.InvalidRequest({
          endpoint,
          path: "password",
          message: `${endpoint}: the remote upload endpoint takes no password; decrypt the file first or use the local engine`
        })
      }
      return yield* http.json(
        {
          endpoint,
          method: "POST",
          host,
          path,
          auth: "optional",
          timeout: "upload",
          body: { _tag: "FormData", value: toFormData(file, options, extractMode) }
        },
        schema
      ).pipe(Effect.mapError((e) => extractionFailure(endpoint, file, e)))
    })

  const extract = (file: UploadFile, options: UploadOptions = {}) =>
    send("POST /upload", "upload", "/upload", file, options, undefined, StandardResult).pipe(
      Effect.filterOrFail((r) => r.status, (r) => failedResult("POST /upload", file, r)),
      Effect.withSpan("Upload.extract", { attributes: { file: file.name } })
    )

  const extractChunks = (file: UploadFile, options: UploadOptions = {}) =>
    send("POST /upload", "upload", "/upload", file, options, "embeddings", EmbeddingsResult).pipe(
      Effect.filterOrFail((r) => r.data.success, (r) => failedResult("POST /upload", file, r)),
      Effect.withSpan("Upload.extractChunks", { attributes: { file: file.name } })
    )

  const files = (file: UploadFile, options: UploadOptions = {}) =>
    send("POST /v1/files", "base", "/v1/files", file, options, undefined, StandardResult).pipe(
      Effect.filterOrFail((r) => r.status, (r) => failedResult("POST /v1/files", file, r)),
      Effect.withSpan("Upload.files", { attributes: { file: file.name } })
    )

  return Upload.of({ extract, extractChunks, files })
})

/**
 * The remote layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Upload, never, ApiHttp> = Layer.effect(Upload, make)
