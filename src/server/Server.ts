/**
 * The self-hosted server: the API of the remote services (`docs/services.md`), on the same
 * wire, served from whatever services it is given. With the local layers
 * (`LocalFiles`, `LocalWeb`, a local embedder or reranker) it needs no key and no network; with
 * the remote layers it is a gateway. The remote client of this library talks to it unchanged.
 *
 * Every route looks its service up with `Effect.serviceOption`, so the server requires no
 * service: an endpoint whose service was not provided answers 501 with the wire error body.
 *
 * ```ts
 * const server = Server.layer({ port: 8080 }).pipe(
 *   Layer.provide(Layer.mergeAll(LocalFiles.layer(), LocalWeb.layer()))
 * )
 * Layer.launch(server).pipe(NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 */
import { HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Cause, Chunk, Effect, Layer, type Redacted } from "effect"
import { createServer } from "node:http"
import * as Access from "./internal/access.js"
import * as Firecrawl from "./internal/firecrawl.js"
import { hasBody, lingerOnClose, nodeRequest } from "./internal/body.js"
import * as Limits from "./internal/limits.js"
import * as Playground from "./internal/playground.js"
import * as State from "./internal/state.js"
import { clipEcho, errorResponse, tcpUrl } from "./internal/wire.js"
import * as CollectionRoutes from "./routes/collections.js"
import * as GenerativeRoutes from "./routes/generative.js"
import * as ModelRoutes from "./routes/models.js"
import * as UploadRoutes from "./routes/upload.js"
import * as WebRoutes from "./routes/web.js"
import * as WebV2Routes from "./routes/webV2.js"

/**
 * Options of the server.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends State.Options {
  /**
   * When set, every request must carry `Authorization: Bearer <key>` (else 401). Unset: the
   * server is open, which is only wise on loopback.
   */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /**
   * API keys mapped to principals and to the collections each may read or write (a keys file,
   * see `docs/server.md` and {@link parseKeys}). With keys, every request needs one of them or
   * `apiKey`; a key reads only the collections it lists, as its principal (deny by default).
   */
  readonly keys?: ReadonlyArray<Access.KeyGrant> | undefined
  /** What the collection routes retrieve with (embedder, reranker); the store comes from the context. */
  readonly collections?: CollectionRoutes.Options | undefined
  /** The limits on request bodies and model calls (`docs/server.md`); unset fields keep their defaults. */
  readonly limits?: Partial<Limits.Limits> | undefined
  /**
   * Serve the playground page at `/` (`docs/playground.md`). Its page, style sheet and script
   * hold no data and are served without a key; the page sends the key the user types with
   * every API call. Default false.
   */
  readonly playground?: boolean | undefined
}

export type { Limits } from "./internal/limits.js"
export type { KeyGrant } from "./internal/access.js"
/**
 * Parses a keys file's text (JSON); the failure message never holds a key.
 *
 * @since 0.1.0
 * @category utils
 */
export const parseKeys = Access.parseKeys
/**
 * The default limits.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultLimits: Limits.Limits = Limits.defaults

/**
 * Options of {@link layer}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListenOptions extends Options {
  /** Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Default 8080; 0 picks a free port. */
  readonly port?: number | undefined
  /** Log one line per request (method, path, status, time) through Effect's logger. Default false. */
  readonly logRequests?: boolean | undefined
}

/** The error body of a path: Firecrawl's on the Firecrawl routes, the wire body elsewhere. */
const errorResponseFor = (url: string) =>
  Firecrawl.isFirecrawlPath(new URL(url, "http://x").pathname) ? Firecrawl.errorResponse : errorResponse

/**
 * Refuses requests without a configured key (the key never appears in a response) and runs the
 * others as their caller (`internal/access.ts`): the operator on an open server or with
 * `apiKey`, the key's principal and collections with a key of `keys`.
 */
const authenticate = (apiKey: Redacted.Redacted<string> | undefined, keys: ReadonlyArray<Access.KeyGrant>, playground: boolean) =>
  HttpMiddleware.make((app) =>
    Effect.gen(function*() {
      if (apiKey === undefined && keys.length === 0) return yield* Effect.provideService(app, Access.CallerTag, Access.operator)
      const request = yield* HttpServerRequest.HttpServerRequest
      // the playground's assets hold no data; the page asks for the key and sends it with its API calls
      if (playground && request.method === "GET" && Playground.assetPaths.has(new URL(request.url, "http://x").pathname)) {
        return yield* Effect.provideService(app, Access.CallerTag, Access.anonymous)
      }
      const header = request.headers["authorization"] ?? ""
      const match = /^Bearer\s+(.+)$/i.exec(header)
      const caller = match === null ? undefined : Access.authenticate(match[1]!.trim(), apiKey, keys)
      if (caller === undefined) {
        return errorResponseFor(request.url)({
          status: 401,
          message: match === null ? "missing API key: send Authorization: Bearer <key>" : "invalid API key",
          type: "authentication_error",
          code: "invalid_api_key"
        })
      }
      return yield* Effect.provideService(app, Access.CallerTag, caller)
    })
  )

/**
 * Every route of the API.
 *
 * @since 0.1.0
 * @category utils
 */
export const router = HttpRouter.empty.pipe(
  HttpRouter.concat(ModelRoutes.routes),
  HttpRouter.concat(UploadRoutes.routes),
  HttpRouter.concat(WebRoutes.routes),
  HttpRouter.concat(WebV2Routes.routes),
  HttpRouter.concat(GenerativeRoutes.routes)
)

/** A router path (`/v2/crawl/:id`, `*`) as a pattern of the request paths it serves (a trailing `/` too, as the router does). */
const pathPattern = (path: string): RegExp => {
  const segments = path.split("/").map((segment) =>
    segment === "*" ? ".*" : segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  )
  return new RegExp(`^${segments.join("/")}/?$`)
}

/** Every route of {@link router}: its method and the pattern of its path. */
const routeMethods = Chunk.toReadonlyArray(router.routes).map((route) => ({
  method: route.method,
  pattern: pathPattern(route.path)
}))

/** The methods {@link router} serves at a path (none: the path is not served). */
const methodsAt = (path: string): ReadonlyArray<string> => [
  ...new Set(routeMethods.filter((r) => r.method !== "*" && r.pattern.test(path)).map((r) => r.method))
]

/**
 * Anything else: a 404 in the error body of its path. On a Firecrawl path that is served with
 * other methods, a 405 in Firecrawl's body with an `Allow` header listing them; the library's
 * own paths keep their 404.
 */
const notFound = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { echoChars } = yield* Limits.ServerLimits
  const path = new URL(request.url, "http://x").pathname
  const quoted = clipEcho(path, echoChars)
  const allowed = Firecrawl.isFirecrawlPath(path) ? methodsAt(path) : []
  if (allowed.length > 0) {
    return Firecrawl.errorResponse({
      status: 405,
      message: `${request.method} is not allowed on ${quoted} (allowed: ${allowed.join(", ")})`,
      type: "invalid_request_error",
      code: "method_not_allowed",
      headers: { allow: allowed.join(", ") }
    })
  }
  return errorResponseFor(request.url)({
    status: 404,
    message: `no route for ${request.method} ${quoted}`,
    type: "not_found_error",
    code: null
  })
})

/**
 * Closes the connection after any response given while the request body is still unread (a
 * 401, a 404, a 413, an early 400): the client cannot make the server drain a body it did not
 * want. A request whose body was read keeps its connection.
 */
const closeUnreadBodies = HttpMiddleware.make((app) =>
  Effect.gen(function*() {
    const response = yield* app
    const source = nodeRequest(yield* HttpServerRequest.HttpServerRequest)
    if (source === undefined || source.readableEnded || !hasBody(source)) return response
    lingerOnClose(source)
    return HttpServerResponse.setHeader(response, "connection", "close")
  })
)

/**
 * A defect (a bug, or an error no route expected) is answered 500 with the error body of its
 * path and logged, never an empty 500 or a crash.
 */
const answerDefects = HttpMiddleware.make((app) =>
  Effect.catchAllCause(app, (cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause)
      : Effect.logError("unexpected failure while serving a request", cause).pipe(
        Effect.zipRight(HttpServerRequest.HttpServerRequest),
        Effect.map((request) =>
          errorResponseFor(request.url)({
            status: 500,
            message: "the server failed unexpectedly while answering this request",
            type: "server_error",
            code: null,
            headers: { connection: "close" }
          })
        )
      ))
)

/**
 * The HTTP app: the routes, key check, 404s and 405s in the error body of their path, and the limits of `options`.
 *
 * @since 0.1.0
 * @category utils
 */
export const app = (options: Options = {}) =>
  router.pipe(
    HttpRouter.concat(CollectionRoutes.routes(options.collections)),
    options.playground === true ? HttpRouter.concat(Playground.routes) : (r) => r,
    HttpRouter.all("*", notFound),
    answerDefects,
    authenticate(options.apiKey, options.keys ?? [], options.playground === true),
    closeUnreadBodies,
    Effect.provideService(Limits.ServerLimits, Limits.resolve(options.limits))
  )

/**
 * Serves {@link app} on a Node HTTP server in the layer's scope.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ListenOptions = {}) =>
  (options.logRequests ? HttpServer.serve(app(options), HttpMiddleware.logger) : HttpServer.serve(app(options))).pipe(
    HttpServer.withLogAddress,
    // upload bound and Idempotency-Key replay, one per server
    Layer.provide(Layer.effect(
      State.ServerState,
      State.make(options, Limits.resolve(options.limits).uploadBytesInFlight)
    )),
    // the HttpServer stays in the output, so callers can read the bound address (`baseUrl`)
    Layer.provideMerge(NodeHttpServer.layer(() => createServer(), {
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 8080
    }))
  )

/**
 * The address a running server listens on, as a base URL (for tests and logs).
 *
 * @since 0.1.0
 * @category utils
 */
export const baseUrl = HttpServer.addressWith((address) =>
  Effect.succeed(
    address._tag === "TcpAddress" ? tcpUrl(address.hostname, address.port) : `unix://${address.path}`
  )
)
