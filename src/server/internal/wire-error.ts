/**
 * The shape of an error on the wire (status, body fields, extra headers): its own module so
 * that the body reader (`body.ts`) and the error mapping (`wire.ts`) share it without importing
 * each other.
 */

/** A wire error: status, body and extra headers. */
export interface WireError {
  readonly status: number
  readonly message: string
  readonly type: string
  readonly code: string | null
  readonly headers?: Record<string, string>
}
