/**
 * A real HTTP server on a loopback port, started by a test. It is the only mock of the
 * remote API: tests give it a handler that speaks the wire format and read what it received.
 */
import { Effect, Layer, type Scope } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as ApiHttp from "../../src/api/ApiHttp.js"
import * as RagConfig from "../../src/RagConfig.js"
import * as Server from "../../src/server/Server.js"

/** A request as the server received it, body included. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly url: URL
  readonly headers: IncomingMessage["headers"]
  readonly body: Buffer
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly json: unknown
}

/** A handler: may write the response itself (streams) or return a simple reply. */
export type Handler = (
  req: Received,
  res: ServerResponse
) => void | Reply | Promise<void | Reply>

/** A simple reply: status, JSON (or text) body and headers. */
export interface Reply {
  readonly status?: number
  readonly json?: unknown
  readonly text?: string
  readonly headers?: Record<string, string>
}

/** The running server. */
export interface TestServer {
  readonly url: string
  readonly received: Array<Received>
}

const parseJson = (body: Buffer): unknown => {
  try {
    return JSON.parse(body.toString("utf8"))
  } catch {
    return undefined
  }
}

/** Starts a server on 127.0.0.1 (random port); stops it when the scope closes. */
export const startServer = (handler: Handler): Effect.Effect<TestServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.async<{ server: ReturnType<typeof createServer>; state: TestServer }>((resume) => {
      const received: Array<Received> = []
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const body = Buffer.concat(chunks)
          const url = new URL(req.url ?? "/", "http://127.0.0.1")
          const r: Received = {
            method: req.method ?? "GET",
            path: url.pathname,
            url,
            headers: req.headers,
            body,
            json: parseJson(body)
          }
          received.push(r)
          Promise.resolve(handler(r, res)).then(
            (reply) => {
              if (reply && !res.headersSent) {
                const isJson = reply.json !== undefined
                res.writeHead(reply.status ?? 200, {
                  "content-type": isJson ? "application/json" : "text/plain",
                  ...reply.headers
                })
                res.end(isJson ? JSON.stringify(reply.json) : reply.text ?? "")
              }
            },
            (error) => {
              res.writeHead(599)
              res.end(String(error))
            }
          )
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ server, state: { url: `http://127.0.0.1:${port}`, received } }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ state }) => state))

/** Parses the multipart body the server received with the platform's own parser (undici). */
export const formOf = (req: Received): Promise<FormData> =>
  new Request("http://x/", {
    method: "POST",
    headers: { "content-type": String(req.headers["content-type"]) },
    body: req.body
  }).formData()

/** A fast retry policy so failure tests do not sleep for real. */
export const fastRetries: RagConfig.Options = { retryBaseDelay: "1 millis", maxRetries: 2 }

/** The client (`ApiHttp`) pointed at a test server. */
export const clientLayer = (url: string, options: RagConfig.Options = {}): Layer.Layer<ApiHttp.ApiHttp> =>
  ApiHttp.layer.pipe(Layer.provide(RagConfig.layer({ apiKey: "sk-test-secret-key", baseUrl: url, ...fastRetries, ...options })))

/** The API key the test client sends. */
export const testKey = "sk-test-secret-key"

/**
 * Starts OUR server (src/server/) on a free loopback port with the given services, for the
 * scope of the test; its base URL.
 */
export const serveOurs = <R>(services: Layer.Layer<R>, options: Server.Options = {}) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(Server.layer({ ...options, port: 0 }).pipe(Layer.provide(services)))
    return yield* Effect.provide(Server.baseUrl, ctx)
  })
