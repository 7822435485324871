/**
 * The server side of the wire conventions (`../shared/spec/wire-conventions.md`): typed errors
 * to status codes and error bodies, request bodies decoded against the client's own schemas, and
 * responses encoded with them. It is the inverse of `src/api/ApiErrors.ts`: whatever the
 * server sends, the client reads back as the same tagged error.
 */
import { HttpServerResponse } from "@effect/platform"
import { type Context, Duration, Effect, Option, type ParseResult, Schema } from "effect"
import { issuePath } from "../../api/ApiErrors.js"
import * as RagError from "../../RagError.js"
import * as Body from "./body.js"
import { named, ServerLimits } from "./limits.js"
import type { WireError } from "./wire-error.js"

export type { WireError } from "./wire-error.js"

/** The error body every endpoint but upload uses. */
export const errorBody = (e: WireError) => ({ error: { message: e.message, type: e.type, code: e.code } })

/** The response for a wire error. */
export const errorResponse = (e: WireError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(errorBody(e), { status: e.status, headers: e.headers ?? {} })

/** A 400 for a request that does not decode, naming the field. */
export const badRequest = (endpoint: string, error: ParseResult.ParseError): WireError => {
  const { message, path } = issuePath(error)
  return {
    status: 400,
    message: `${endpoint}: invalid request at ${path === "" ? "<root>" : path}: ${message}`,
    type: "invalid_request_error",
    code: "invalid_request"
  }
}

/** A 501 for an endpoint this server has no engine for. */
export const notServed = (endpoint: string, what: string): WireError => ({
  status: 501,
  message: `${endpoint}: this server has no ${what} configured`,
  type: "not_implemented",
  code: "not_configured"
})

/**
 * Maps a typed error of a service to the status its family has on the wire. Errors of an
 * upstream service (the server proxying a remote API) keep their family: a 429 stays a 429 with
 * its `Retry-After`; an upstream 5xx or transport failure is a 502 (504 for a time-out).
 */
export const fromError = (e: RagError.ApiError | RagError.ExtractionError | RagError.TaskFailed): WireError => {
  const wire = wireOf(e)
  return { ...wire, message: serveTerms(wire.message) }
}

/**
 * A message in the terms of the server's operator: where an engine names a library option
 * that `effect-rag serve` sets with a flag, the flag is named beside it. The web engine refuses
 * a private, loopback or link-local address naming its options `allowPrivate or allowHosts`;
 * `serve` opens those addresses with `--allow-private`. A message already in these terms is
 * left as it is.
 */
export const serveTerms = (message: string): string =>
  message
    .replace(
      /\ballowPrivate or allowHosts\b(?!, the LocalWeb options)/g,
      "allowPrivate or allowHosts, the LocalWeb options, or with effect-rag serve --allow-private"
    )
    .replace(/\(pageBytes, the LocalWeb option\)/g, "(pageBytes, the LocalWeb option, or effect-rag serve --crawl-page-bytes)")

/**
 * A message that quotes at most `chars` characters of any one run of it without white space
 * (a URL, a field's value): a longer run is cut, its length said and the limit named. A
 * message still longer than four such runs (a quoted value with spaces in it) is cut too.
 * The message of a 900 KB URL stays about 1 KiB.
 */
export const clipEcho = (message: string, chars: number): string => {
  if (message.length <= chars) return message
  const limit = named("echoChars")
  const runs = message.replace(
    new RegExp(`\\S{${chars + 1},}`, "g"),
    (run) => `${run.slice(0, chars)}… (${run.length} characters, cut at ${chars}: ${limit})`
  )
  const most = 4 * chars + 512
  return runs.length <= most ? runs : `${runs.slice(0, most)}… (a message of ${runs.length} characters, cut: ${limit})`
}

/** A wire error whose message quotes no more of the client's input than `echoChars` allows. */
export const clipped = (e: WireError): Effect.Effect<WireError> =>
  Effect.map(ServerLimits, (limits) => {
    const message = clipEcho(e.message, limits.echoChars)
    return message === e.message ? e : { ...e, message }
  })

const wireOf = (e: RagError.ApiError | RagError.ExtractionError | RagError.TaskFailed): WireError => {
  const code = "code" in e && typeof e.code === "string" ? e.code : null
  const type = (fallback: string) => ("type" in e && typeof e.type === "string" ? e.type : fallback)
  switch (e._tag) {
    case "BadRequest":
      return { status: 400, message: e.message, type: type("invalid_request_error"), code }
    case "InvalidRequest":
      return { status: 400, message: e.message, type: "invalid_request_error", code: e.path === "" ? null : e.path }
    case "Unauthorized":
      return { status: 401, message: e.message, type: type("authentication_error"), code }
    case "PaymentRequired":
      return { status: 402, message: e.message, type: type("payment_required"), code }
    case "NotFound":
      return { status: 404, message: e.message, type: type("not_found_error"), code }
    case "PayloadTooLarge":
      return { status: 413, message: e.message, type: type("payload_too_large"), code }
    case "RateLimited": {
      const after = e.retryAfter === undefined ? undefined : Math.ceil(Duration.toMillis(e.retryAfter) / 1000)
      return {
        status: 429,
        message: e.message,
        type: type("rate_limit_error"),
        code,
        ...(after === undefined ? {} : { headers: { "retry-after": String(after) } })
      }
    }
    case "ServerError":
    case "UnexpectedStatus":
    case "DecodeError":
      return { status: 502, message: e.message, type: "upstream_error", code: null }
    case "TransportError":
      return { status: e.reason === "timeout" ? 504 : 502, message: e.message, type: "upstream_error", code: e.reason }
    case "ConfigurationError":
      return { status: 501, message: e.message, type: "not_implemented", code: "not_configured" }
    case "TaskFailed":
      return { status: 500, message: e.message, type: "task_failed", code: e.status }
    case "ExtractionError":
      return { status: failureStatus(e.reason), message: e.message, type: "extraction_error", code: e.reason }
  }
}

/**
 * The status of an extraction failure, as `wire-conventions.md` fixes it for upload: 400 for
 * a file that cannot be read as given (encrypted, corrupt, unsupported, over a parse limit),
 * 413 too large, 500 a processing error (time-out, OCR or speech not available, other).
 */
export const failureStatus = (reason: RagError.ExtractionError["reason"]): number => {
  switch (reason) {
    case "too_large":
      return 413
    case "timeout":
    case "ocr_unavailable":
    case "speech_unavailable":
    case "processing_failed":
      return 500
    default:
      return 400
  }
}


/**
 * Which limit a JSON body is read within: `json` (the web and generation routes) or `model`
 * (embeddings, rerank, chat; see `limits.ts`).
 */
export type BodySize = "json" | "model"

/**
 * Reads a JSON request body against a schema, within the route's size limit and the idle
 * time-out (a closing 413 / 408, the body not read further). A body that is not JSON, nests
 * deeper than the depth limit, or does not decode is a 400. An empty body reads as `null`.
 */
export const jsonBody = <A, I>(endpoint: string, schema: Schema.Schema<A, I>, size: BodySize = "json") =>
  Effect.gen(function*() {
    const limits = yield* ServerLimits
    const maxBytes = size === "model" ? limits.modelBodyBytes : limits.jsonBodyBytes
    const bytes = yield* Body.read(endpoint, maxBytes, limits.bodyIdleMs)
    const text = bytes.toString("utf8")
    if (Body.jsonDepth(text, limits.jsonDepth) > limits.jsonDepth) {
      return yield* Effect.fail<WireError>({
        status: 400,
        message: `${endpoint}: the body nests arrays and objects deeper than ${limits.jsonDepth} levels`,
        type: "invalid_request_error",
        code: "json_too_deep"
      })
    }
    const json = yield* Effect.try({
      try: (): unknown => (text.trim() === "" ? null : JSON.parse(text)),
      catch: (): WireError => ({
        status: 400,
        message: `${endpoint}: the body is not JSON`,
        type: "invalid_request_error",
        code: "invalid_json"
      })
    })
    return yield* Schema.decodeUnknown(schema)(json).pipe(Effect.mapError((e) => badRequest(endpoint, e)))
  })

/** A JSON response encoded with the response schema. */
export const jsonResponse = <A, I>(schema: Schema.Schema<A, I>, value: A, status = 200) =>
  Schema.encode(schema)(value).pipe(
    Effect.orDie, // our own values always encode; a failure here is a bug
    Effect.map((body) => HttpServerResponse.unsafeJson(body, { status }))
  )

/** Runs a handler whose failures are wire errors, answering them in the error body. */
export const handle = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, WireError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.catchAll(effect, (e) => Effect.map(clipped(e), errorResponse))

/** The service of the Tag, or a 501 saying this server has none (no Tag requirement: the server serves what it was given). */
export const service = <I, S>(tag: Context.Tag<I, S>, endpoint: string, what: string) =>
  Effect.flatMap(Effect.serviceOption(tag), (service) =>
    Option.match(service, {
      onNone: () => Effect.fail(notServed(endpoint, what)),
      onSome: (s) => Effect.succeed(s)
    }))

/** The base URL of a TCP address (IPv6 hosts in brackets). */
export const tcpUrl = (hostname: string, port: number): string =>
  `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`
