/**
 * Request bodies read within limits. The platform's body reader concatenates a body of any
 * size into one string; these readers count bytes while the body streams in, stop at the
 * route's limit and at an idle pause, and answer with a wire error whose response closes the
 * connection (`Connection: close`), so a refused body is never read to its end.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { IncomingMessage } from "node:http"
import type { WireError } from "./wire-error.js"

/**
 * A wire error answered while the body may still be arriving: the connection is closed after
 * the response instead of being drained, so a client cannot make the server read a body it
 * has already refused.
 */
export const closing = (e: WireError): WireError => ({ ...e, headers: { ...e.headers, connection: "close" } })

/** The 413 of a body over `limit` bytes. */
export const bodyTooLarge = (endpoint: string, limit: number, what = "the body"): WireError =>
  closing({
    status: 413,
    message: `${endpoint}: ${what} is larger than the limit of ${limit} bytes`,
    type: "payload_too_large",
    code: "body_too_large"
  })

/** The 408 of a body that paused for longer than the idle time-out. */
export const bodyIdle = (endpoint: string, idleMs: number): WireError =>
  closing({
    status: 408,
    message: `${endpoint}: the request body sent nothing for ${Math.round(idleMs / 100) / 10} s`,
    type: "invalid_request_error",
    code: "body_timeout"
  })

/** The Node request under a platform request, when there is one. */
export const nodeRequest = (request: HttpServerRequest.HttpServerRequest): IncomingMessage | undefined =>
  request.source instanceof IncomingMessage ? request.source : undefined

/** How long a closing connection keeps discarding what the client still sends (ms). */
const lingerMs = 2_000
/** How much a closing connection discards at most before it is cut. */
const lingerBytes = 8 * 1024 * 1024

/**
 * Makes the connection of a request whose body was not read close gently once its response is
 * sent (a response with `Connection: close`): the server's side is ended and what the client
 * still sends is discarded for at most {@link lingerMs} and {@link lingerBytes}, then the socket
 * is destroyed. Cutting it at once, with the client's bytes unread, would reset it (RST) and
 * the client could lose the response; draining without a bound would let a client make the
 * server read a body of any size.
 */
export const lingerOnClose = (source: IncomingMessage): void => {
  const socket = source.socket as (IncomingMessage["socket"] & { destroySoon?: () => void }) | null
  if (socket === null || socket.destroyed) return
  socket.destroySoon = () => {
    let discarded = 0
    const cut = () => {
      clearTimeout(timer)
      socket.destroy()
    }
    const timer = setTimeout(cut, lingerMs)
    timer.unref()
    source.on("data", (chunk: Buffer) => {
      discarded += chunk.byteLength
      if (discarded > lingerBytes) cut()
    })
    source.resume()
    socket.once("end", cut)
    socket.once("close", () => clearTimeout(timer))
    socket.end()
  }
}

/** Whether a request announced a body (a length above zero, or chunked). */
export const hasBody = (source: IncomingMessage): boolean => {
  const length = source.headers["content-length"]
  if (length !== undefined) return Number(length) > 0
  return source.headers["transfer-encoding"] !== undefined
}

/** Settings of {@link stream}. */
export interface StreamOptions {
  readonly endpoint: string
  /** Bytes the body may have. */
  readonly maxBytes: number
  /** Longest pause between two pieces of the body (ms). */
  readonly idleMs: number
  /**
   * Called for every piece as it arrives (bytes counted, within the limit); a wire error it
   * returns ends the read with that error.
   */
  readonly onChunk: (chunk: Buffer) => WireError | undefined
}

/**
 * Reads the body of a Node request piece by piece within `maxBytes` and `idleMs`. Fails with
 * a closing 413 (over the limit, checked against `Content-Length` before anything is read),
 * a closing 408 (idle), the error of `onChunk`, or a 400 when the client goes away. On any
 * failure the request stops being read.
 */
export const stream = (source: IncomingMessage, options: StreamOptions): Effect.Effect<void, WireError> => {
  const { endpoint, idleMs, maxBytes } = options
  const announced = Number(source.headers["content-length"] ?? "")
  if (Number.isFinite(announced) && announced > maxBytes) return Effect.fail(bodyTooLarge(endpoint, maxBytes))
  if (source.readableEnded) return Effect.void
  return Effect.async<void, WireError>((resume) => {
    let bytes = 0
    let timer: ReturnType<typeof setTimeout> | undefined
    const arm = () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = setTimeout(() => stop(Effect.fail(bodyIdle(endpoint, idleMs))), idleMs)
    }
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer)
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onGone)
      source.off("aborted", onGone)
      source.off("close", onClose)
    }
    const stop = (result: Effect.Effect<void, WireError>) => {
      cleanup()
      discard(source)
      resume(result)
    }
    const onData = (chunk: Buffer) => {
      bytes += chunk.byteLength
      if (bytes > maxBytes) return stop(Effect.fail(bodyTooLarge(endpoint, maxBytes)))
      const refused = options.onChunk(chunk)
      if (refused !== undefined) return stop(Effect.fail(refused))
      arm()
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.void)
    }
    const onGone = () =>
      stop(Effect.fail(closing({
        status: 400,
        message: `${endpoint}: the client stopped sending the body`,
        type: "invalid_request_error",
        code: "body_incomplete"
      })))
    const onClose = () => {
      if (!source.readableEnded) onGone()
    }
    source.on("data", onData)
    source.once("end", onEnd)
    source.once("error", onGone)
    source.once("aborted", onGone)
    source.once("close", onClose)
    arm()
    return Effect.sync(() => {
      cleanup()
      discard(source)
    })
  })
}

/**
 * Lets the rest of a refused body flow into nothing until the connection closes (the response
 * says `Connection: close`, so Node closes it once the response is sent). Pausing instead would
 * leave unread bytes in the socket, and closing a socket with unread bytes resets it (RST), so
 * the client could lose the response.
 */
const discard = (source: IncomingMessage): void => {
  source.resume()
}

/**
 * The whole body of the request within `maxBytes` (see {@link stream}). A request that is not
 * a Node request is read by the platform with the same limit.
 */
export const read = (
  endpoint: string,
  maxBytes: number,
  idleMs: number
): Effect.Effect<Buffer, WireError, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const source = nodeRequest(request)
    if (source === undefined) {
      return request.arrayBuffer.pipe(
        HttpServerRequest.withMaxBodySize(Option.some(maxBytes)),
        Effect.map((b) => Buffer.from(b)),
        Effect.mapError(() => bodyTooLarge(endpoint, maxBytes))
      )
    }
    const cached = bodies.get(source)
    if (cached !== undefined) {
      return cached.byteLength > maxBytes ? Effect.fail(bodyTooLarge(endpoint, maxBytes)) : Effect.succeed(cached)
    }
    const chunks: Array<Buffer> = []
    return stream(source, {
      endpoint,
      maxBytes,
      idleMs,
      onChunk: (chunk) => {
        chunks.push(chunk)
        return undefined
      }
    }).pipe(Effect.map(() => {
      const body = Buffer.concat(chunks)
      bodies.set(source, body)
      return body
    }))
  })

/** Bodies already read, by request: a handler may read its body more than once (as the platform's own reader allows). */
const bodies = new WeakMap<object, Buffer>()

// =============================================================================
// JSON
// =============================================================================

/**
 * The deepest nesting of arrays and objects in a JSON text, stopping as soon as it passes
 * `limit` (one linear scan; strings skipped). The text need not be valid JSON.
 */
export const jsonDepth = (text: string, limit: number): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      depth++
      if (depth > deepest) {
        deepest = depth
        if (deepest > limit) return deepest
      }
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return deepest
}
