/**
 * A `multipart/form-data` body read into memory within limits, with `multipasta`'s parser (the
 * one under `@effect/platform`'s multipart) driven directly: every limit reached anywhere in
 * the form (a field too long, too many parts, a file too large, a body that pauses or ends
 * inside a part) fails the whole form with an error naming it. No part is ever dropped: a
 * form is either read whole or refused.
 *
 * The bytes held are counted against a budget shared by the server's uploads (see
 * `state.ts`), taken as they arrive and given back when the request's scope closes.
 */
import * as Multipasta from "multipasta"
import { Effect, type Scope } from "effect"
import type { IncomingMessage } from "node:http"
import * as Body from "./body.js"
import type { WireError } from "./wire.js"

/** The limits of one form. */
export interface FormLimits {
  /** Parts in the form. */
  readonly maxParts: number
  /** Bytes of one text field. */
  readonly maxFieldBytes: number
  /** Bytes of one file part (its headers included). */
  readonly maxPartBytes: number
  /** Bytes of the whole body. */
  readonly maxBodyBytes: number
  /** Longest pause of the body (ms). */
  readonly idleMs: number
}

/** One file part, its bytes in memory. */
export interface FilePart {
  readonly key: string
  readonly name: string
  readonly contentType: string
  readonly data: Uint8Array
}

/** The parts of a form, in order, by name. */
export interface Form {
  readonly fields: ReadonlyMap<string, ReadonlyArray<string>>
  readonly files: ReadonlyMap<string, ReadonlyArray<FilePart>>
}

/** A budget of bytes shared by concurrent readers. */
export interface Budget {
  /** Takes `n` bytes; false (nothing taken) when that would go over. */
  readonly take: (n: number) => boolean
  /** Gives `n` bytes back. */
  readonly give: (n: number) => void
}

const invalid = (endpoint: string, message: string, code: string): WireError =>
  Body.closing({ status: 400, message: `${endpoint}: ${message}`, type: "invalid_request_error", code })

/** A parser error as the wire error naming it. */
const parserError = (endpoint: string, limits: FormLimits, e: Multipasta.MultipartError): WireError => {
  switch (e._tag) {
    case "ReachedLimit":
      switch (e.limit) {
        case "MaxParts":
          return invalid(endpoint, `the form has more than ${limits.maxParts} parts (limit maxParts)`, "too_many_parts")
        case "MaxFieldSize":
          return invalid(
            endpoint,
            `a form field is over ${limits.maxFieldBytes} bytes (limit maxFieldBytes; is a file sent without a filename?)`,
            "field_too_large"
          )
        case "MaxPartSize":
          return Body.bodyTooLarge(endpoint, limits.maxPartBytes, "the file")
        case "MaxTotalSize":
          return Body.bodyTooLarge(endpoint, limits.maxBodyBytes)
      }
      break
    case "EndNotReached":
      return invalid(endpoint, "the multipart body ends inside a part", "invalid_multipart")
    case "InvalidBoundary":
      return invalid(endpoint, "the multipart body has no boundary", "invalid_multipart")
    case "BadHeaders":
    case "InvalidDisposition":
      return invalid(endpoint, `the multipart body is malformed (${e._tag})`, "invalid_multipart")
  }
}

/**
 * Reads the multipart form of a Node request (`contentType` is its `Content-Type`). Fails with
 * a wire error that closes the connection when any limit is reached, the body is malformed or
 * pauses too long, or the budget is spent (503 with `Retry-After`).
 */
export const read = (
  endpoint: string,
  source: IncomingMessage,
  contentType: string,
  limits: FormLimits,
  budget: Budget
): Effect.Effect<Form, WireError, Scope.Scope> =>
  Effect.gen(function*() {
    let held = 0
    yield* Effect.addFinalizer(() => Effect.sync(() => budget.give(held)))
    const fields = new Map<string, Array<string>>()
    const files = new Map<string, Array<FilePart>>()
    let failure: WireError | undefined
    let done = false
    const parser = Multipasta.make({
      headers: { "content-type": contentType },
      // every part with a filename is a file, whatever its type (a JSON document too)
      isFile: (info) => info.filename !== undefined,
      maxParts: limits.maxParts,
      maxFieldSize: limits.maxFieldBytes,
      maxPartSize: limits.maxPartBytes,
      maxTotalSize: limits.maxBodyBytes,
      onField: (info, value) => {
        const list = fields.get(info.name) ?? []
        list.push(Multipasta.decodeField(info, value))
        fields.set(info.name, list)
      },
      onFile: (info) => {
        const chunks: Array<Uint8Array> = []
        return (chunk) => {
          if (chunk !== null) return void chunks.push(chunk)
          // a plain Uint8Array view of the bytes (no copy of a single piece)
          const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
          const data = new Uint8Array(whole.buffer, whole.byteOffset, whole.byteLength)
          const list = files.get(info.name) ?? []
          list.push({ key: info.name, name: info.filename ?? info.name, contentType: info.contentType, data })
          files.set(info.name, list)
        }
      },
      onError: (e) => {
        failure ??= parserError(endpoint, limits, e)
      },
      onDone: () => {
        done = true
      }
    })
    if (failure !== undefined) return yield* Effect.fail(failure)
    yield* Body.stream(source, {
      endpoint,
      maxBytes: limits.maxBodyBytes,
      idleMs: limits.idleMs,
      onChunk: (chunk) => {
        if (!budget.take(chunk.byteLength)) {
          return Body.closing({
            status: 503,
            message: `${endpoint}: the server holds as many upload bytes as it may; retry shortly`,
            type: "server_busy",
            code: "uploads_busy",
            headers: { "retry-after": "5" }
          })
        }
        held += chunk.byteLength
        // the parser calls back synchronously: a limit reached in this piece is known at once
        if (!done) parser.write(chunk)
        return failure
      }
    })
    if (failure === undefined && !done) parser.end()
    if (failure !== undefined) return yield* Effect.fail(failure)
    if (!done) return yield* Effect.fail(invalid(endpoint, "the multipart body has no closing boundary", "invalid_multipart"))
    return { fields, files } satisfies Form
  })
