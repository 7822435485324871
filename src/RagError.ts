/**
 * The one error model of effect-rag.
 *
 * Every remote call fails with an {@link ApiError}: a tagged error per HTTP status family, a
 * transport error, or a decode error naming the endpoint and the field path. Errors are
 * `Schema.TaggedError`s so that the self-hosted server can re-encode them on the wire.
 *
 * No error text ever contains the API key: messages that come from a server are scrubbed of
 * it before they are stored (see `ApiHttp`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const common = {
  /** The operation that failed, e.g. `POST /v1/embeddings`. */
  endpoint: Schema.String,
  /** A human-readable explanation (never contains the API key). */
  message: Schema.String
}

const details = {
  /** The error `type` of the wire error body, when the server sent one. */
  type: Schema.optional(Schema.String),
  /** The error `code` of the wire error body, when the server sent one. */
  code: Schema.optional(Schema.NullOr(Schema.String))
}

/**
 * HTTP 400: invalid parameters or file format. Not retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  ...common,
  ...details
}) {}

/**
 * HTTP 401: the API key is missing, invalid or revoked. Not retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  ...common,
  ...details
}) {}

/**
 * HTTP 402: not enough credits. Not retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class PaymentRequired extends Schema.TaggedError<PaymentRequired>()("PaymentRequired", {
  ...common,
  ...details
}) {}

/**
 * HTTP 404: the resource (task, file, crawl job, path) does not exist. Not retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  ...common,
  ...details
}) {}

/**
 * HTTP 413, or a payload refused before it was sent because it exceeds a known limit
 * (`limit` and `size` in bytes are set then). Not retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  ...common,
  ...details,
  size: Schema.optional(Schema.Number),
  limit: Schema.optional(Schema.Number)
}) {}

/**
 * HTTP 429. `retryAfter` is what the server asked for (`Retry-After` / `retry-after-ms`).
 *
 * @since 0.1.0
 * @category errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...common,
  ...details,
  retryAfter: Schema.optional(Schema.DurationFromMillis)
}) {}

/**
 * HTTP 5xx. 500, 502, 503 and 504 are retried.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", {
  ...common,
  ...details,
  status: Schema.Number
}) {}

/**
 * Any other non-2xx status (408 and 409 are retried, the rest are not).
 *
 * @since 0.1.0
 * @category errors
 */
export class UnexpectedStatus extends Schema.TaggedError<UnexpectedStatus>()("UnexpectedStatus", {
  ...common,
  ...details,
  status: Schema.Number
}) {}

/**
 * What a chat stream had delivered before it broke off: the text so far, the tool calls begun
 * (arguments possibly cut short), and the token usage when a usage chunk had arrived.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PartialCompletion = Schema.Struct({
  content: Schema.String,
  tool_calls: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, arguments: Schema.String })),
  usage: Schema.optional(Schema.Struct({
    prompt_tokens: Schema.optional(Schema.Number),
    completion_tokens: Schema.optional(Schema.Number),
    total_tokens: Schema.optional(Schema.Number)
  })),
  /** How many chunks had been delivered. */
  chunks: Schema.Number
})
/**
 * @since 0.1.0
 * @category models
 */
export type PartialCompletion = typeof PartialCompletion.Type

/**
 * The host could not be reached, the connection broke, or the request timed out. Retried,
 * except a stream that breaks after data was delivered (a retry would repeat that data): it
 * fails with reason `aborted` (or `timeout` when it went silent) and, for a chat stream,
 * `partial` holds what had arrived.
 *
 * @since 0.1.0
 * @category errors
 */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  ...common,
  reason: Schema.Literal("unreachable", "timeout", "aborted"),
  partial: Schema.optional(PartialCompletion)
}) {}

/**
 * A 2xx response (or a streamed chunk) whose body does not decode. `path` is the field path
 * where decoding failed, e.g. `data[0].embedding`.
 *
 * @since 0.1.0
 * @category errors
 */
export class DecodeError extends Schema.TaggedError<DecodeError>()("DecodeError", {
  ...common,
  path: Schema.String
}) {}

/**
 * A request that does not encode against its schema (a programming error of the caller).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  ...common,
  path: Schema.String
}) {}

/**
 * The configuration does not allow the call, e.g. no API key for an endpoint that needs one.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConfigurationError extends Schema.TaggedError<ConfigurationError>()(
  "ConfigurationError",
  { ...common }
) {}

/**
 * An error event inside a chat completion stream.
 *
 * @since 0.1.0
 * @category errors
 */
export class StreamError extends Schema.TaggedError<StreamError>()("StreamError", {
  ...common,
  ...details
}) {}

/**
 * An asynchronous task (video, music, crawl) ended in failure, or its submission was refused
 * by a non-zero `base_resp.status_code`.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskFailed extends Schema.TaggedError<TaskFailed>()("TaskFailed", {
  ...common,
  taskId: Schema.optional(Schema.String),
  status: Schema.String,
  statusCode: Schema.optional(Schema.Number)
}) {}

/**
 * A document could not be extracted. `reason` says why, so callers can tell an encrypted file
 * from a corrupt one; `empty` is a non-empty document that yields no text (never a success with
 * empty content). Produced by the local document engine, and by the remote client when an
 * upload error body carries a known `reason` (this library's server sends one); another
 * server's upload errors keep their HTTP error family (`processing_failed` for a 200 with
 * `status: false`).
 *
 * @since 0.1.0
 * @category errors
 */
export class ExtractionError extends Schema.TaggedError<ExtractionError>()("ExtractionError", {
  /** The file name (never the full path of a temp file). */
  file: Schema.String,
  reason: Schema.Literal(
    "password_required",
    "wrong_password",
    "corrupt",
    "unsupported",
    "too_large",
    "timeout",
    "ocr_unavailable",
    "speech_unavailable",
    "limit_exceeded",
    "processing_failed",
    "empty"
  ),
  message: Schema.String
}) {}

/**
 * An optional part of the package is used but its package is not installed. `install` is the
 * exact `npm install` line that adds it; the message says the same.
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingPackage extends Schema.TaggedError<MissingPackage>()("MissingPackage", {
  /** The optional part: `onnx`, `useLite`, `queue`, `ai` or `ocr`. */
  part: Schema.String,
  /** The packages of the part that are not installed. */
  packages: Schema.Array(Schema.String),
  /** The `npm install …` line that installs the part. */
  install: Schema.String,
  message: Schema.String
}) {}

/**
 * Everything a remote call of the API can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type ApiError =
  | BadRequest
  | Unauthorized
  | PaymentRequired
  | NotFound
  | PayloadTooLarge
  | RateLimited
  | ServerError
  | UnexpectedStatus
  | TransportError
  | DecodeError
  | InvalidRequest
  | ConfigurationError

/**
 * Schema of {@link ApiError}, for re-encoding errors on the wire.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApiError = Schema.Union(
  BadRequest,
  Unauthorized,
  PaymentRequired,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServerError,
  UnexpectedStatus,
  TransportError,
  DecodeError,
  InvalidRequest,
  ConfigurationError
)

/**
 * HTTP statuses that are worth another attempt (besides transport failures).
 *
 * @since 0.1.0
 * @category utils
 */
export const retryableStatuses: ReadonlySet<number> = new Set([408, 409, 429, 500, 502, 503, 504])

/**
 * Whether the client retries after this error.
 *
 * @since 0.1.0
 * @category utils
 */
export const isRetryable = (error: ApiError): boolean => {
  switch (error._tag) {
    case "TransportError":
    case "RateLimited":
      return true
    case "ServerError":
    case "UnexpectedStatus":
      return retryableStatuses.has(error.status)
    default:
      return false
  }
}
