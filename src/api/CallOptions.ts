/**
 * Per-call control of the remote services: time-out, retries, extra headers and an abort
 * signal for the calls of one effect or stream, and the metadata (status, headers such as a
 * request id or `Idempotent-Replayed`) of the responses it received.
 *
 * The settings of `RagConfig` are the defaults of every call; {@link withOptions} overrides them
 * for the calls made while one effect runs, whatever service makes them (they travel in a
 * `FiberRef`, like `Effect.locally`), so no layer is rebuilt:
 *
 * ```ts
 * const reply = chat.create(request).pipe(
 *   CallOptions.withOptions({ timeout: "5 minutes", maxRetries: 0, headers: { "x-tenant": "acme" } }),
 *   CallOptions.withResponse // → [ChatCompletion, Option<ResponseMetadata>]
 * )
 * ```
 *
 * Aborting: interrupting the fiber aborts the HTTP request in flight (the idiomatic way, e.g.
 * `Effect.timeout`, `Fiber.interrupt`, a losing `Effect.race`); `signal` does the same for code
 * outside Effect, and the call then ends interrupted.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { dual } from "effect/Function"

/**
 * The per-call settings; everything left out keeps the layer's setting.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The time-out of each attempt (waiting for the response, then reading its body), instead
   * of the configured one of the call's kind (default, upload or stream).
   */
  readonly timeout?: Duration.DurationInput | undefined
  /** Retries after the first attempt (0: no retry), instead of `RagConfig`'s `maxRetries`. */
  readonly maxRetries?: number | undefined
  /**
   * Extra request headers (a tenant id, a trace header, …), sent on every attempt. They never
   * replace `Authorization`, `Idempotency-Key` or `Content-Type`, which the client owns.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Aborts the call when it fires: the request in flight is cancelled and the call interrupted. */
  readonly signal?: AbortSignal | undefined
  /**
   * Called with the metadata of every HTTP response (2xx or not, retries included) as it
   * arrives: the way to read a stream's response headers (see {@link withResponses} for effects).
   */
  readonly onResponse?: ((metadata: ResponseMetadata) => void) | undefined
}

/**
 * The options that apply to the calls of the current fiber (none by default).
 *
 * @since 0.1.0
 * @category context
 */
export const CurrentOptions: FiberRef.FiberRef<Options> = FiberRef.unsafeMake<Options>({})

/**
 * Merges `next` over `base`: later values win, headers are combined.
 *
 * @since 0.1.0
 * @category utils
 */
export const merge = (base: Options, next: Options): Options => ({
  timeout: next.timeout ?? base.timeout,
  maxRetries: next.maxRetries ?? base.maxRetries,
  headers: base.headers === undefined && next.headers === undefined
    ? undefined
    : { ...base.headers, ...next.headers },
  signal: next.signal ?? base.signal,
  onResponse: base.onResponse === undefined || next.onResponse === undefined
    ? next.onResponse ?? base.onResponse
    : ((b, n) => (metadata: ResponseMetadata) => {
      b(metadata)
      n(metadata)
    })(base.onResponse, next.onResponse)
})

/**
 * Runs `self` with `options` applying to every API call it makes (nested `withOptions` merge,
 * the inner one winning).
 *
 * @since 0.1.0
 * @category utils
 */
export const withOptions: {
  (options: Options): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, options: Options): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, options: Options): Effect.Effect<A, E, R> =>
    Effect.locallyWith(self, CurrentOptions, (current) => merge(current, options))
)

/**
 * {@link withOptions} for a stream (e.g. `Chat.stream`): the options hold while it runs.
 *
 * @since 0.1.0
 * @category utils
 */
export const withOptionsStream: {
  (options: Options): <A, E, R>(self: Stream.Stream<A, E, R>) => Stream.Stream<A, E, R>
  <A, E, R>(self: Stream.Stream<A, E, R>, options: Options): Stream.Stream<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Stream.Stream<A, E, R>, options: Options): Stream.Stream<A, E, R> =>
    Stream.unwrapScoped(
      Effect.as(Effect.locallyScopedWith(CurrentOptions, (current) => merge(current, options)), self)
    )
)

// =============================================================================
// Response metadata
// =============================================================================

/**
 * What one HTTP response said besides its body.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResponseMetadata {
  /** The operation, e.g. `POST /v1/chat/completions`. */
  readonly endpoint: string
  /** The HTTP status. */
  readonly status: number
  /** The response headers, names in lower case. */
  readonly headers: Readonly<Record<string, string>>
  /** `x-request-id` (or `request-id`), when the server sent one. */
  readonly requestId: string | undefined
  /**
   * `Idempotent-Replayed`: `true` when the server answered a retried task creation from its
   * record of the first one; `undefined` when the header is absent.
   */
  readonly idempotentReplayed: boolean | undefined
  /** 1 for the first attempt of the call, 2 for its first retry, … */
  readonly attempt: number
}

/**
 * Builds the metadata of a response from its status and headers.
 *
 * @since 0.1.0
 * @category utils
 */
export const metadataOf = (
  endpoint: string,
  status: number,
  headers: Readonly<Record<string, string>>,
  attempt: number
): ResponseMetadata => {
  const replayed = headers["idempotent-replayed"]
  return {
    endpoint,
    status,
    headers,
    requestId: headers["x-request-id"] ?? headers["request-id"],
    idempotentReplayed: replayed === undefined ? undefined : replayed.trim().toLowerCase() === "true",
    attempt
  }
}

/**
 * Runs `self` and returns its result with the metadata of every HTTP response its calls
 * received, in order (retried attempts and failed responses included).
 *
 * @since 0.1.0
 * @category utils
 */
export const withResponses = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, ReadonlyArray<ResponseMetadata>], E, R> =>
  Effect.suspend(() => {
    const seen: Array<ResponseMetadata> = []
    return Effect.map(
      withOptions(self, { onResponse: (metadata) => seen.push(metadata) }),
      (a) => [a, seen as ReadonlyArray<ResponseMetadata>] as const
    )
  })

/**
 * Runs `self` and returns its result with the metadata of the last HTTP response it received
 * (the one the result was decoded from, for a single call); `None` when it made no call.
 *
 * @since 0.1.0
 * @category utils
 */
export const withResponse = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, Option.Option<ResponseMetadata>], E, R> =>
  Effect.map(withResponses(self), ([a, all]) => [a, Option.fromNullable(all[all.length - 1])] as const)
