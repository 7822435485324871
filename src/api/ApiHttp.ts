/**
 * THE HTTP client of effect-rag: host per endpoint family, bearer auth, time-outs, retries with
 * backoff that honours `Retry-After`, idempotency keys, and the mapping of every failure to an
 * `ApiError`. Every remote service is built on {@link ApiHttp}. The per-call options of
 * `CallOptions` (time-out, retries, headers, abort signal, response listener) are read when a
 * call starts; every attempt is an OpenTelemetry client span.
 */
// deep imports: the `@effect/platform` barrel loads the HTTP server, router, workers etc. (start-up time)
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import * as RagConfig from "../RagConfig.js"
import * as RagError from "../RagError.js"
import * as CallOptions from "./CallOptions.js"
import { decodeError, fromStatus, issuePath, parseErrorBody, parseRetryAfter } from "./ApiErrors.js"
import * as Sse from "./internal/sse.js"

/**
 * Which configured host a call goes to.
 *
 * @since 0.1.0
 * @category models
 */
export type Host = "base" | "upload" | "crawl"

/**
 * A request body: JSON (already encoded) or multipart form data.
 *
 * @since 0.1.0
 * @category models
 */
export type Body =
  | { readonly _tag: "Json"; readonly value: unknown }
  | { readonly _tag: "FormData"; readonly value: FormData }

/**
 * One API call, described as data.
 *
 * @since 0.1.0
 * @category models
 */
export interface Call {
  /** Label used in errors and spans, e.g. `POST /v1/embeddings`. */
  readonly endpoint: string
  readonly method: "GET" | "POST" | "DELETE"
  readonly host: Host
  /** A path on the host, or an absolute URL (pagination links). */
  readonly path: string
  readonly urlParams?: Readonly<Record<string, string>> | undefined
  readonly body?: Body | undefined
  /** `required` (default) fails without a key; `optional` sends it when there is one. */
  readonly auth?: "required" | "optional" | undefined
  /** Which time-out applies: the default one, the upload one, or the stream one. */
  readonly timeout?: "default" | "upload" | "stream" | undefined
  /** Send an `Idempotency-Key` header, the same on every retry of this call. */
  readonly idempotent?: boolean | undefined
}

/**
 * The client every remote service uses.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly settings: RagConfig.Settings
  /** Sends the call (with retries) and decodes the 2xx JSON body with `schema`. */
  readonly json: <A, I>(call: Call, schema: Schema.Schema<A, I>) => Effect.Effect<A, RagError.ApiError>
  /** Sends the call (with retries until the response starts) and decodes its body as SSE. */
  readonly sse: (call: Call) => Stream.Stream<Sse.SseEvent, RagError.ApiError>
  /** Sends the call and returns the raw 2xx body bytes. */
  readonly bytes: (call: Call) => Effect.Effect<Uint8Array, RagError.ApiError>
  /** Encodes a request value exactly with its schema. */
  readonly encode: <A, I>(
    endpoint: string,
    schema: Schema.Schema<A, I>,
    value: A
  ) => Effect.Effect<I, RagError.InvalidRequest>
  /** Removes the API key from a text (for messages that may echo it). */
  readonly scrub: (text: string) => string
}

/**
 * The client's Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class ApiHttp extends Context.Tag("effect-rag/api/ApiHttp")<ApiHttp, Service>() {}

const headerRecord = (response: HttpClientResponse.HttpClientResponse): Record<string, string | undefined> =>
  response.headers as Record<string, string | undefined>

/**
 * The retry policy: exponential backoff with jitter, `Retry-After` honoured, retryable errors
 * only; `maxRetries` (a per-call override) replaces the configured count.
 *
 * @since 0.1.0
 * @category utils
 */
export const retryPolicy = (settings: RagConfig.Settings, maxRetries: number = settings.maxRetries) =>
  Schedule.exponential(settings.retryBaseDelay).pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(Math.max(0, Math.floor(maxRetries)))),
    Schedule.whileInput((error: RagError.ApiError) => RagError.isRetryable(error)),
    Schedule.passthrough,
    Schedule.modifyDelay((error, delay) =>
      Duration.min(
        error._tag === "RateLimited" && error.retryAfter !== undefined ? error.retryAfter : delay,
        settings.maxRetryDelay
      )
    )
  )

/**
 * The `Idempotency-Key` of the task-creating calls (video, music, crawl start) made inside
 * `Effect.locally(IdempotencyKey, Option.some(key))`. By default each call makes its own key. A
 * gateway (this library's server) passes its client's key on, so a retry that reaches the
 * upstream through it is recognised there too.
 *
 * @since 0.1.0
 * @category context
 */
export const IdempotencyKey: FiberRef.FiberRef<Option.Option<string>> = FiberRef.unsafeMake(Option.none<string>())

/**
 * What every call of one client shares: the settings, the platform client, the configured
 * hosts and their origins (the only ones the key is sent to), and the scrubber of error texts.
 */
interface Client {
  readonly settings: RagConfig.Settings
  readonly httpClient: HttpClient.HttpClient
  readonly hosts: Record<Host, string>
  readonly trustedOrigins: ReadonlySet<string>
  readonly scrub: (text: string) => string
}

const timeoutOf = (client: Client, call: Call, options: CallOptions.Options): Duration.Duration =>
  options.timeout !== undefined
    ? Duration.decode(options.timeout)
    : call.timeout === "upload"
    ? client.settings.uploadTimeout
    : call.timeout === "stream"
    ? client.settings.streamTimeout
    : client.settings.timeout

/**
 * Fails with `TransportError` `timeout` when `self` takes longer than the call's time-out; the
 * message is the endpoint followed by `what(time-out)`.
 */
const timeoutAs = (client: Client, call: Call, options: CallOptions.Options, what: (after: Duration.Duration) => string) => {
  const after = timeoutOf(client, call, options)
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | RagError.TransportError, R> =>
    Effect.timeoutFail(self, {
      duration: after,
      onTimeout: () => new RagError.TransportError({ endpoint: call.endpoint, reason: "timeout", message: `${call.endpoint} ${what(after)}` })
    })
}

const buildRequest = (client: Client, call: Call, idempotencyKey: string | undefined, options: CallOptions.Options) =>
  Effect.gen(function*() {
    const absolute = /^https?:\/\//i.test(call.path)
    const url = absolute ? call.path : client.hosts[call.host] + (call.path.startsWith("/") ? "" : "/") + call.path
    // Never send the key to a host the configuration does not name (e.g. a `next` link
    // pointing elsewhere).
    let origin = ""
    try {
      origin = new URL(url).origin
    } catch {
      return yield* new RagError.InvalidRequest({
        endpoint: call.endpoint,
        path: "url",
        message: client.scrub(`${call.endpoint}: invalid URL ${url}`)
      })
    }
    const sendKey = client.trustedOrigins.has(origin)
    if (Option.isNone(client.settings.apiKey) && (call.auth ?? "required") === "required") {
      return yield* new RagError.ConfigurationError({
        endpoint: call.endpoint,
        message: `${call.endpoint} needs an API key: set EFFECT_RAG_API_KEY or pass apiKey to RagConfig.layer`
      })
    }
    let request = HttpClientRequest.make(call.method)(url).pipe(HttpClientRequest.acceptJson)
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (!reservedHeaders.has(name.toLowerCase())) request = HttpClientRequest.setHeader(request, name, value)
    }
    if (call.urlParams) request = HttpClientRequest.setUrlParams(request, call.urlParams)
    if (sendKey && Option.isSome(client.settings.apiKey)) {
      request = HttpClientRequest.bearerToken(request, client.settings.apiKey.value)
    }
    if (idempotencyKey !== undefined) request = HttpClientRequest.setHeader(request, "idempotency-key", idempotencyKey)
    if (call.body?._tag === "Json") {
      request = HttpClientRequest.bodyText(request, JSON.stringify(call.body.value), "application/json")
    } else if (call.body?._tag === "FormData") {
      request = HttpClientRequest.bodyFormData(request, call.body.value)
    }
    return request
  })

/** One attempt: send, wait for the status line, map non-2xx to errors. */
const attempt = (client: Client, ctx: Attempt) =>
  Effect.gen(function*() {
    const { call, options } = ctx
    const request = yield* buildRequest(client, call, ctx.idempotencyKey, options)
    const response = yield* client.httpClient.execute(request).pipe(
      timeoutAs(client, call, options, (after) => `timed out after ${Duration.format(after)}`),
      Effect.catchTags({
        RequestError: (error) =>
          Effect.fail(
            new RagError.TransportError({
              endpoint: call.endpoint,
              reason: "unreachable",
              message: client.scrub(`${call.endpoint}: could not reach ${hostOf(request.url)}: ${causeText(error.cause)}`)
            })
          ),
        ResponseError: (error) =>
          Effect.fail(
            new RagError.TransportError({
              endpoint: call.endpoint,
              reason: "aborted",
              message: client.scrub(`${call.endpoint}: the response from ${hostOf(request.url)} broke off: ${causeText(error.cause)}`)
            })
          )
      })
    )
    yield* Effect.annotateCurrentSpan("http.response.status_code", response.status)
    if (options.onResponse !== undefined) {
      const headers = headerRecord(response) as Record<string, string>
      options.onResponse(CallOptions.metadataOf(call.endpoint, response.status, headers, ctx.number))
    }
    if (response.status >= 200 && response.status < 300) return response
    const text = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
    const now = yield* Clock.currentTimeMillis
    const body = parseErrorBody(text, `HTTP ${response.status}`)
    return yield* Effect.fail(
      fromStatus(
        call.endpoint,
        response.status,
        { ...body, message: client.scrub(body.message) },
        parseRetryAfter(headerRecord(response), now)
      )
    )
  })

/**
 * Runs `f` once per attempt, with retries, each attempt in its own client span (OpenTelemetry
 * HTTP attribute names; the URL's path only, never its query or credentials). One key per
 * call, the same on each of its retries: the caller's (see `IdempotencyKey`) or a new one.
 * The per-call options (see `CallOptions`) are read once, when the call starts.
 */
const withRetries = <A>(client: Client, call: Call, f: (attempt: Attempt) => Effect.Effect<A, RagError.ApiError>) =>
  Effect.gen(function*() {
    const options = yield* FiberRef.get(CallOptions.CurrentOptions)
    const given = yield* FiberRef.get(IdempotencyKey)
    const idempotencyKey = call.idempotent ? Option.getOrElse(given, () => randomUUID()) : undefined
    const target = spanTarget(call.path, client.hosts[call.host])
    let number = 0
    let lastEnd: number | undefined
    const once = Effect.suspend(() => {
      number += 1
      const ctx: Attempt = { call, options, idempotencyKey, number }
      return Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (lastEnd !== undefined) yield* Effect.annotateCurrentSpan("effect_rag.retry.wait_ms", now - lastEnd)
        return yield* f(ctx)
      }).pipe(
        Effect.tapError((error) => Effect.annotateCurrentSpan("error.type", error._tag)),
        Effect.ensuring(Effect.flatMap(Clock.currentTimeMillis, (t) => Effect.sync(() => (lastEnd = t)))),
        Effect.withSpan(`${call.method} ${call.endpoint.replace(/^[A-Z]+ /, "")}`, {
          kind: "client",
          attributes: {
            "http.request.method": call.method,
            "url.path": target.path,
            "server.address": target.address,
            ...(target.port !== undefined ? { "server.port": target.port } : {}),
            "effect_rag.endpoint": call.endpoint,
            "effect_rag.attempt": number,
            ...(number > 1 ? { "http.request.resend_count": number - 1 } : {})
          }
        })
      )
    })
    return yield* once.pipe(
      Effect.retry(retryPolicy(client.settings, options.maxRetries)),
      abortable(options.signal)
    )
  })

const readBody = (client: Client, call: Call, options: CallOptions.Options, response: HttpClientResponse.HttpClientResponse) =>
  response.arrayBuffer.pipe(
    timeoutAs(client, call, options, () => "timed out while reading the response body"),
    Effect.catchTag("ResponseError", (error) =>
      Effect.fail(
        new RagError.TransportError({
          endpoint: call.endpoint,
          reason: "aborted",
          message: client.scrub(`${call.endpoint}: the response body broke off: ${causeText(error.cause)}`)
        })
      )
    ),
    Effect.map((buffer) => new Uint8Array(buffer))
  )

const json = <A, I>(client: Client, call: Call, schema: Schema.Schema<A, I>): Effect.Effect<A, RagError.ApiError> => {
  const decode = Schema.decodeUnknown(schema, { onExcessProperty: "ignore" })
  return withRetries(client, call, (ctx) =>
    Effect.gen(function*() {
      const response = yield* attempt(client, ctx)
      const bytes = yield* readBody(client, call, ctx.options, response)
      const text = new TextDecoder().decode(bytes)
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        return yield* new RagError.DecodeError({
          endpoint: call.endpoint,
          path: "",
          message: `${call.endpoint} returned a body that is not JSON (${bytes.length} bytes)`
        })
      }
      return yield* decode(parsed).pipe(Effect.mapError((error) => decodeError(call.endpoint, error)))
    })
  ).pipe(Effect.withSpan("ApiHttp.json", { attributes: { endpoint: call.endpoint } }))
}

const bytes = (client: Client, call: Call): Effect.Effect<Uint8Array, RagError.ApiError> =>
  withRetries(client, call, (ctx) => Effect.flatMap(attempt(client, ctx), (response) => readBody(client, call, ctx.options, response)))

const sse = (client: Client, call: Call): Stream.Stream<Sse.SseEvent, RagError.ApiError> =>
  Stream.unwrap(
    withRetries(client, call, (ctx) => Effect.map(attempt(client, ctx), (response) => ({ response, options: ctx.options }))).pipe(
      Effect.map(({ options, response }) =>
        Sse.decode(
          response.stream.pipe(
            Stream.mapError(
              (error) =>
                new RagError.TransportError({
                  endpoint: call.endpoint,
                  reason: "aborted",
                  message: client.scrub(`${call.endpoint}: the stream broke off: ${causeText(error.cause)}`)
                })
            ),
            // Idle time-out: a stream that goes silent for longer than the request time-out fails.
            Stream.timeoutFail(
              () =>
                new RagError.TransportError({
                  endpoint: call.endpoint,
                  reason: "timeout",
                  message: `${call.endpoint}: no data for ${Duration.format(options.timeout ?? client.settings.timeout)}`
                }),
              options.timeout ?? client.settings.timeout
            ),
            Stream.decodeText()
          )
        ).pipe(
          (events) => options.signal === undefined ? events : Stream.interruptWhen(events, abortable(options.signal)(Effect.never))
        )
      )
    )
  )

const encode = <A, I>(endpoint: string, schema: Schema.Schema<A, I>, value: A) =>
  Schema.encode(schema)(value).pipe(
    Effect.mapError((error: ParseResult.ParseError) => {
      const { message, path } = issuePath(error)
      return new RagError.InvalidRequest({
        endpoint,
        path,
        message: `${endpoint}: the request does not encode at ${path === "" ? "<root>" : path}: ${message}`
      })
    })
  )

/**
 * Builds the client from settings and an `HttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
  const settings = yield* RagConfig.RagConfig
  const httpClient = yield* HttpClient.HttpClient
  const keyText = Option.map(settings.apiKey, Redacted.value)
  // the key, and any credentials written into a URL (`http://user:password@host`), never reach
  // an error text: the URL a request failed on is often quoted by the platform's own message
  const scrub = (text: string): string =>
    Option.match(keyText, {
      onNone: () => text,
      onSome: (key) => (key.length >= 4 ? text.split(key).join("[redacted]") : text)
    }).replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@]+@/gi, "$1[redacted]@")
  const hosts: Record<Host, string> = { base: settings.baseUrl, upload: settings.uploadUrl, crawl: settings.crawlUrl }
  const trustedOrigins = new Set(
    Object.values(hosts).flatMap((h) => {
      try {
        return [new URL(h).origin]
      } catch {
        return []
      }
    })
  )
  const client: Client = { settings, httpClient, hosts, trustedOrigins, scrub }
  return ApiHttp.of({
    settings,
    json: (call, schema) => json(client, call, schema),
    sse: (call) => sse(client, call),
    bytes: (call) => bytes(client, call),
    encode,
    scrub
  })
})

/** One attempt of a call, as `withRetries` hands it to the code that sends it. */
interface Attempt {
  readonly call: Call
  readonly options: CallOptions.Options
  readonly idempotencyKey: string | undefined
  /** 1 for the first attempt, 2 for the first retry, … */
  readonly number: number
}

/** Headers the client owns: per-call headers never replace them. */
const reservedHeaders: ReadonlySet<string> = new Set(["authorization", "idempotency-key", "content-type", "content-length"])

/** Fails the effect as interrupted (cancelling its request) when `signal` fires. */
const abortable = (signal: AbortSignal | undefined) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  signal === undefined
    ? self
    : Effect.suspend(() =>
      signal.aborted
        ? Effect.interrupt
        : Effect.raceFirst(
          self,
          Effect.async<never>((resume) => {
            const onAbort = () => resume(Effect.interrupt)
            signal.addEventListener("abort", onAbort, { once: true })
            return Effect.sync(() => signal.removeEventListener("abort", onAbort))
          })
        )
    )

/** The span attributes of a call's target: host, port and path (no query, no credentials). */
const spanTarget = (path: string, host: string): { address: string; port: number | undefined; path: string } => {
  try {
    const url = new URL(/^https?:\/\//i.test(path) ? path : host + (path.startsWith("/") ? "" : "/") + path)
    return { address: url.hostname, port: url.port === "" ? undefined : Number(url.port), path: url.pathname }
  } catch {
    return { address: "", port: undefined, path: "" }
  }
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).host
  } catch {
    return url
  }
}

const causeText = (cause: unknown): string => {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause
    const code = typeof inner === "object" && inner !== null ? (inner as { code?: unknown }).code : undefined
    return typeof code === "string" ? `${cause.message} (${code})` : cause.message
  }
  return String(cause)
}

/**
 * The client over a given `HttpClient` (tests, custom transports).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithoutHttpClient: Layer.Layer<ApiHttp, never, RagConfig.RagConfig | HttpClient.HttpClient> =
  Layer.effect(ApiHttp, make)

/**
 * The client on Node's built-in `fetch`. (Not `NodeHttpClient.layerUndici`: the `undici`
 * package it loads has its own `FormData` class and rejects the global one that multipart
 * uploads build.)
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ApiHttp, never, RagConfig.RagConfig> = layerWithoutHttpClient.pipe(
  Layer.provide(FetchHttpClient.layer)
)
