/**
 * Reading error bodies and status codes into the tagged errors of `RagError`. This is the one
 * place that knows which status means what.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as RagError from "../RagError.js"

/**
 * The message, type and code of an error body, in any of the accepted shapes.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorBody {
  readonly message: string
  readonly type?: string | undefined
  readonly code?: string | null | undefined
}

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/**
 * Reads `{"error": {"message", "type", "code"}}`, `{"error": "text"}`, `{"message": "text"}`
 * and the upload error body `{"status": false, "type": "error", "error": "text"}` (whose
 * `reason`, when present, is returned as the code). Anything else becomes its raw text,
 * shortened.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseErrorBody = (text: string, fallback: string): ErrorBody => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    const trimmed = text.trim()
    return { message: trimmed === "" ? fallback : trimmed.slice(0, 500) }
  }
  if (typeof json === "object" && json !== null) {
    const o = json as Record<string, unknown>
    const error = o["error"]
    if (typeof error === "object" && error !== null) {
      const e = error as Record<string, unknown>
      const code = e["code"]
      return {
        message: str(e["message"]) ?? fallback,
        type: str(e["type"]),
        code: typeof code === "string" ? code : typeof code === "number" ? String(code) : code === null ? null : undefined
      }
    }
    // the upload error body; `reason` (an extension of this library's server) becomes the code
    if (typeof error === "string" && error !== "") {
      return typeof o["reason"] === "string" ? { message: error, code: o["reason"] } : { message: error }
    }
    const message = str(o["message"]) ?? str(o["detail"]) ?? str(o["status_msg"])
    if (message !== undefined && message !== "") return { message }
  }
  return { message: text.trim().slice(0, 500) || fallback }
}

/**
 * Parses `retry-after-ms` (milliseconds) or `Retry-After` (seconds or an HTTP date) into a
 * duration. `now` is the current time in milliseconds, for HTTP dates.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseRetryAfter = (
  headers: Readonly<Record<string, string | undefined>>,
  now: number
): Option.Option<Duration.Duration> => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined) {
    const n = Number(ms)
    if (Number.isFinite(n) && n >= 0) return Option.some(Duration.millis(n))
  }
  const ra = headers["retry-after"]
  if (ra === undefined || ra.trim() === "") return Option.none()
  const seconds = Number(ra)
  if (Number.isFinite(seconds)) return seconds >= 0 ? Option.some(Duration.millis(seconds * 1000)) : Option.none()
  const date = Date.parse(ra)
  if (Number.isNaN(date)) return Option.none()
  return Option.some(Duration.millis(Math.max(0, date - now)))
}

/**
 * Maps a non-2xx status and its body to the tagged error of its family.
 *
 * @since 0.1.0
 * @category utils
 */
export const fromStatus = (
  endpoint: string,
  status: number,
  body: ErrorBody,
  retryAfter: Option.Option<Duration.Duration>
): RagError.ApiError => {
  const base = {
    endpoint,
    message: `${endpoint} failed with HTTP ${status}: ${body.message}`,
    type: body.type,
    code: body.code
  }
  switch (status) {
    case 400:
      return new RagError.BadRequest(base)
    case 401:
      return new RagError.Unauthorized(base)
    case 402:
      return new RagError.PaymentRequired(base)
    case 404:
      return new RagError.NotFound(base)
    case 413:
      return new RagError.PayloadTooLarge(base)
    case 429:
      return new RagError.RateLimited({ ...base, retryAfter: Option.getOrUndefined(retryAfter) })
    default:
      return status >= 500
        ? new RagError.ServerError({ ...base, status })
        : new RagError.UnexpectedStatus({ ...base, status })
  }
}

/**
 * Formats a parse error's first issue path as `a.b[0].c` (empty string for the root).
 *
 * @since 0.1.0
 * @category utils
 */
export const issuePath = (error: ParseResult.ParseError): { path: string; message: string } => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const first = issues[0]
  if (first === undefined) return { path: "", message: error.message }
  const path = first.path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join("")
  return { path, message: first.message }
}

/**
 * A DecodeError naming the endpoint and the field path of the first issue.
 *
 * @since 0.1.0
 * @category utils
 */
export const decodeError = (endpoint: string, error: ParseResult.ParseError): RagError.DecodeError => {
  const { message, path } = issuePath(error)
  return new RagError.DecodeError({
    endpoint,
    path,
    message: `${endpoint} returned a body that does not decode at ${path === "" ? "<root>" : path}: ${message}`
  })
}
