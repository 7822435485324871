/**
 * A raw HTTP client for tests of the server's limits: it writes a body chunk by chunk (with
 * backpressure, without `Content-Length` unless given) and reads the response while it writes,
 * so a test sees how much of a body the server took before it answered.
 */
import { Effect } from "effect"
import * as http from "node:http"

/** A response read by the raw client. */
export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly json: unknown
  /** Body bytes handed to the socket before the response ended. */
  readonly written: number
}

/**
 * POSTs a body (written chunk by chunk, with backpressure, without `Content-Length` unless
 * given) with `node:http`, and reads the response. Writing stops once the response is in;
 * a connection the server closes after answering is not an error. Interrupting it aborts the
 * request.
 */
export const rawPost = (url: string, headers: Record<string, string>, body: AsyncIterable<Uint8Array>) =>
  Effect.async<RawResponse, Error>((resume) => {
    const req = http.request(url, { method: "POST", headers })
    let written = 0
    let settled = false
    req.on("response", (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        settled = true
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown = text
        try {
          json = JSON.parse(text)
        } catch {
          // not JSON: keep the text
        }
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, json, written }))
      })
    })
    req.on("error", (error) => {
      if (!settled) {
        settled = true
        resume(Effect.fail(error))
      }
    })
    void (async () => {
      for await (const chunk of body) {
        if (settled || req.destroyed) return
        written += chunk.byteLength
        if (!req.write(chunk)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              req.off("drain", done)
              req.off("close", done)
              resolve()
            }
            req.on("drain", done)
            req.on("close", done)
          })
        }
      }
      if (!req.destroyed) req.end()
    })().catch(() => undefined)
    return Effect.sync(() => req.destroy())
  })


/** `size` zero bytes in 64 KiB chunks. */
export async function* zeros(size: number): AsyncGenerator<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024)
  for (let left = size; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left)
}

