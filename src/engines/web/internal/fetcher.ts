/**
 * The HTTP fetcher of the local web engine, on `node:http`/`node:https`.
 *
 * Redirects are followed by hand so that every hop is counted (cap) and SSRF-checked: the
 * scheme must stay http/https, literal IP hosts are checked before the request, host names
 * are checked on the addresses the socket connects to (`ssrf.guardedLookup`). Bodies are
 * decompressed (gzip, deflate, br) and capped on the decompressed size, so a compression bomb
 * stops at the cap. Cancellation is by `AbortSignal` (the Effect wrapper aborts on interrupt
 * and on the per-page time-out).
 */
import http from "node:http"
import https from "node:https"
import type { Readable } from "node:stream"
import zlib from "node:zlib"
import { type Blocked, checkHost, guardedLookup, type Policy } from "./ssrf.js"
import { parseHttpUrl } from "../../../internal/url.js"

/** Why a fetch failed. */
export type FetchFailureReason =
  | "invalid_url"
  | "blocked"
  | "too_many_redirects"
  | "too_large"
  | "unreachable"
  | "timeout"
  | "aborted"

/** The one error of {@link fetchUrl}. */
export class FetchFailure extends Error {
  override readonly name = "FetchFailure"
  constructor(
    readonly reason: FetchFailureReason,
    readonly url: string,
    message: string
  ) {
    super(message)
  }
}

/** The connection pools of one engine instance (destroyed with it). */
export interface Agents {
  readonly http: http.Agent
  readonly https: https.Agent
}

/** Creates keep-alive agents. */
export const makeAgents = (): Agents => ({
  http: new http.Agent({ keepAlive: true, maxSockets: 16 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 16 })
})

/** Destroys the agents' sockets. */
export const destroyAgents = (agents: Agents): void => {
  agents.http.destroy()
  agents.https.destroy()
}

/** How to fetch. */
export interface FetchOptions {
  readonly policy: Policy
  readonly agents: Agents
  readonly userAgent: string
  /** Extra request headers (a caller's `User-Agent` here wins over `userAgent`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Maximum decompressed body size in bytes. */
  readonly maxBytes: number
  /** Maximum number of redirects followed. */
  readonly maxRedirects: number
  /** The `Accept` header. */
  readonly accept?: string | undefined
  readonly signal: AbortSignal
}

/** A response, body read in full. */
export interface FetchResult {
  /** The URL asked for. */
  readonly requested: string
  /** The URL of the final response (after redirects). */
  readonly url: string
  /** The redirect hops followed, in order (the URLs redirected to). */
  readonly redirects: ReadonlyArray<string>
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  /** The media type, lower-cased, without parameters (`""` when absent). */
  readonly mediaType: string
  /** The `charset` parameter of `Content-Type`, when given. */
  readonly charset: string | undefined
  readonly body: Uint8Array
}

const redirectStatuses = new Set([301, 302, 303, 307, 308])

/** Splits a `Content-Type` value into media type and charset. */
export const parseContentType = (value: string | undefined): { mediaType: string; charset: string | undefined } => {
  if (!value) return { mediaType: "", charset: undefined }
  const [type, ...params] = value.split(";")
  let charset: string | undefined
  for (const p of params) {
    const m = /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(p)
    if (m) charset = m[1]
  }
  return { mediaType: (type ?? "").trim().toLowerCase(), charset }
}

const isBlocked = (e: unknown): e is Blocked => (e as Error | undefined)?.name === "Blocked"

interface Hop {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly stream: Readable
}

/** One request, no redirect handling. Resolves when the headers arrive. */
const request = (url: URL, options: FetchOptions): Promise<Hop> =>
  new Promise((resolve, reject) => {
    const blocked = checkHost(options.policy, url.hostname)
    if (blocked) return reject(new FetchFailure("blocked", url.href, blocked.message))
    const isHttps = url.protocol === "https:"
    const headers: Record<string, string> = {
      "user-agent": options.userAgent,
      accept: options.accept ?? "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
      "accept-encoding": "gzip, deflate, br"
    }
    for (const [k, v] of Object.entries(options.headers ?? {})) headers[k.toLowerCase()] = v
    const req = (isHttps ? https : http).request(url, {
      method: "GET",
      headers,
      agent: isHttps ? options.agents.https : options.agents.http,
      lookup: guardedLookup(options.policy) as unknown as http.RequestOptions["lookup"],
      signal: options.signal
    })
    req.on("response", (res) => resolve({ status: res.statusCode ?? 0, headers: res.headers, stream: res }))
    req.on("error", (e) => {
      if (isBlocked(e)) return reject(new FetchFailure("blocked", url.href, e.message))
      if (options.signal.aborted || (e as Error).name === "AbortError") {
        return reject(new FetchFailure("aborted", url.href, `the request to ${url.href} was aborted`))
      }
      reject(new FetchFailure("unreachable", url.href, `cannot fetch ${url.href}: ${(e as Error).message}`))
    })
    req.end()
  })

/** Reads a body through its decoder, failing past `maxBytes`. */
const readBody = (hop: Hop, url: string, options: FetchOptions): Promise<Uint8Array> =>
  new Promise((resolve, reject) => {
    const declared = Number(hop.headers["content-length"] ?? "NaN")
    const encoding = String(hop.headers["content-encoding"] ?? "").trim().toLowerCase()
    const tooLarge = () =>
      new FetchFailure("too_large", url, `the response of ${url} exceeds the body cap of ${options.maxBytes} bytes`)
    if (encoding === "" && Number.isFinite(declared) && declared > options.maxBytes) {
      hop.stream.destroy()
      return reject(tooLarge())
    }
    let stream: Readable = hop.stream
    if (encoding === "gzip" || encoding === "x-gzip") stream = hop.stream.pipe(zlib.createGunzip())
    else if (encoding === "deflate") stream = hop.stream.pipe(zlib.createInflate())
    else if (encoding === "br") stream = hop.stream.pipe(zlib.createBrotliDecompress())
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    const fail = (e: Error) => {
      if (done) return
      done = true
      hop.stream.destroy()
      if (stream !== hop.stream) stream.destroy()
      reject(e)
    }
    stream.on("data", (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > options.maxBytes) return fail(tooLarge())
      chunks.push(chunk)
    })
    stream.on("error", (e) =>
      fail(
        options.signal.aborted
          ? new FetchFailure("aborted", url, `the request to ${url} was aborted`)
          : new FetchFailure("unreachable", url, `cannot read the response of ${url}: ${e.message}`)
      ))
    hop.stream.on("aborted", () => fail(new FetchFailure("unreachable", url, `the response of ${url} was cut`)))
    stream.on("end", () => {
      if (done) return
      done = true
      const all = Buffer.concat(chunks)
      resolve(new Uint8Array(all.buffer, all.byteOffset, all.byteLength))
    })
  })

/**
 * Fetches a URL with GET, following at most `maxRedirects` redirects (each hop checked), and
 * reads the body (capped). Rejects with a {@link FetchFailure}. Non-2xx responses resolve: the
 * status is the caller's to judge.
 */
export const fetchUrl = async (input: string, options: FetchOptions): Promise<FetchResult> => {
  let url = parseHttpUrl(input)
  if (url === undefined) throw new FetchFailure("invalid_url", input, `not an http(s) URL: ${input}`)
  const redirects: Array<string> = []
  for (;;) {
    const hop = await request(url, options)
    const location = hop.headers.location
    if (redirectStatuses.has(hop.status) && location) {
      hop.stream.resume() // drain so that the socket returns to the pool
      const next = parseHttpUrl(location, url)
      if (next === undefined) {
        throw new FetchFailure("invalid_url", url.href, `${url.href} redirects to a refused URL: ${location}`)
      }
      if (redirects.length >= options.maxRedirects) {
        hop.stream.destroy()
        throw new FetchFailure(
          "too_many_redirects",
          input,
          `${input} redirects more than ${options.maxRedirects} times`
        )
      }
      redirects.push(next.href)
      url = next
      continue
    }
    const body = await readBody(hop, url.href, options)
    const { charset, mediaType } = parseContentType(hop.headers["content-type"])
    return { requested: input, url: url.href, redirects, status: hop.status, headers: hop.headers, mediaType, charset, body }
  }
}
