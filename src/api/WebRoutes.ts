/**
 * THE route table of the web operations (crawl, crawl status, cancel, map, scrape, AI search).
 *
 * Services never hardcode a web path: they describe an operation with a {@link RouteInput} and
 * ask {@link webCall} for the `ApiHttp.Call`. Which call that is depends only on the configured
 * routing (`RagConfig.Settings.webRouting`, `EFFECT_RAG_WEB_ROUTES`), so a deployment is
 * targeted by configuration alone, with the same service code.
 *
 * ## `firecrawl` routing (the default; Firecrawl v1 paths)
 *
 * | operation | request |
 * |---|---|
 * | crawlStart | `POST {crawlUrl}/v1/crawl`, body = the crawl request |
 * | crawlStatus | `GET {crawlUrl}/v1/crawl/{id}`; a later batch: `GET <next link>` as given |
 * | crawlCancel | `DELETE {crawlUrl}/v1/crawl/{id}` |
 * | map | `POST {crawlUrl}/v1/map`, body = the map request |
 * | scrape | `POST {crawlUrl}/v1/scrape`, body = the scrape request |
 * | search | `POST {baseUrl}/v1/web`, body = `{model, params}` |
 *
 * ## `single` routing (one endpoint for everything)
 *
 * Every operation is `POST /v1/web` (on `crawlUrl`; AI search on `baseUrl`) with a JSON body
 * that names the operation in an `operation` field, merged at the top level with the
 * operation's own (encoded) fields:
 *
 * | operation | body |
 * |---|---|
 * | crawlStart | `{"operation": "crawl_start", "url": …, "maxDepth": …, …}` |
 * | crawlStatus | `{"operation": "crawl_status", "id": "<job id>"}` |
 * | crawlStatus, later batch | `{"operation": "crawl_status", "id": "<job id>", "next": "<next value>"}` |
 * | crawlCancel | `{"operation": "crawl_cancel", "id": "<job id>"}` |
 * | map | `{"operation": "map", "url": …, "search": …, …}` |
 * | scrape | `{"operation": "scrape", "url": …, "formats": …, …}` |
 * | search | `{"operation": "search", "model": "svc-ai-search", "params": {…}}` |
 *
 * Responses are the same resources in both routings. The `next` value of a crawl status
 * response is opaque in `single` routing: the client sends it back verbatim in the envelope
 * instead of fetching it, so that every web request goes through `POST /v1/web`. None of the
 * request schemas has an `operation` field, so the merge never overwrites a parameter.
 *
 * Authentication: crawl, status, cancel, map and scrape do not require a key (the service
 * description lists them as open); the key is sent when one is configured. AI search requires
 * one. Crawl start creates a task, so it carries an `Idempotency-Key`.
 *
 * @since 0.1.0
 */
import type { WebRouting } from "../RagConfig.js"
import type { Call, Host } from "./ApiHttp.js"

/**
 * The web operations, by name.
 *
 * @since 0.1.0
 * @category models
 */
export type WebOperation = "crawlStart" | "crawlStatus" | "crawlCancel" | "map" | "scrape" | "search"

/**
 * How one operation is sent in `firecrawl` routing. `{id}` in `path` is the crawl job id.
 *
 * @since 0.1.0
 * @category models
 */
export interface FirecrawlRoute {
  readonly method: Call["method"]
  readonly host: Host
  readonly path: string
}

/**
 * How one operation is sent in `single` routing: `POST /v1/web` with `operation` in the body.
 *
 * @since 0.1.0
 * @category models
 */
export interface SingleRoute {
  readonly host: Host
  /** The value of the body's `operation` field. */
  readonly operation: string
}

/**
 * One row of the route table.
 *
 * @since 0.1.0
 * @category models
 */
export interface RouteEntry {
  readonly firecrawl: FirecrawlRoute
  readonly single: SingleRoute
  /** Whether a key is needed (`required`) or only sent when configured (`optional`). */
  readonly auth: "required" | "optional"
  /** Whether the request creates a task (and so carries an `Idempotency-Key`). */
  readonly idempotent: boolean
}

/**
 * The path every operation is sent to in `single` routing.
 *
 * @since 0.1.0
 * @category constants
 */
export const singlePath = "/v1/web"

/**
 * The route table: the only place that knows the web paths.
 *
 * @since 0.1.0
 * @category constants
 */
export const webRoutes: { readonly [K in WebOperation]: RouteEntry } = {
  crawlStart: {
    firecrawl: { method: "POST", host: "crawl", path: "/v1/crawl" },
    single: { host: "crawl", operation: "crawl_start" },
    auth: "optional",
    idempotent: true
  },
  crawlStatus: {
    firecrawl: { method: "GET", host: "crawl", path: "/v1/crawl/{id}" },
    single: { host: "crawl", operation: "crawl_status" },
    auth: "optional",
    idempotent: false
  },
  crawlCancel: {
    firecrawl: { method: "DELETE", host: "crawl", path: "/v1/crawl/{id}" },
    single: { host: "crawl", operation: "crawl_cancel" },
    auth: "optional",
    idempotent: false
  },
  map: {
    firecrawl: { method: "POST", host: "crawl", path: "/v1/map" },
    single: { host: "crawl", operation: "map" },
    auth: "optional",
    idempotent: false
  },
  scrape: {
    firecrawl: { method: "POST", host: "crawl", path: "/v1/scrape" },
    single: { host: "crawl", operation: "scrape" },
    auth: "optional",
    idempotent: false
  },
  search: {
    firecrawl: { method: "POST", host: "base", path: "/v1/web" },
    single: { host: "base", operation: "search" },
    auth: "required",
    idempotent: false
  }
}

/**
 * What an operation is about: a job id, a `next` cursor, and/or an encoded JSON body.
 *
 * @since 0.1.0
 * @category models
 */
export interface RouteInput {
  /** The crawl job id (crawlStatus, crawlCancel). */
  readonly id?: string | undefined
  /** The `next` value of a previous crawl status response (crawlStatus, later batches). */
  readonly next?: string | undefined
  /** The request, already encoded by its schema (crawlStart, map, scrape, search). */
  readonly body?: Readonly<Record<string, unknown>> | undefined
}

/**
 * The label of an operation in errors and spans, e.g. `GET /v1/crawl/{id}` or `POST /v1/web (map)`.
 *
 * @since 0.1.0
 * @category utils
 */
export const endpointOf = (routing: WebRouting, operation: WebOperation): string => {
  const entry = webRoutes[operation]
  return routing === "single"
    ? `POST ${singlePath} (${entry.single.operation})`
    : `${entry.firecrawl.method} ${entry.firecrawl.path}`
}

/**
 * Builds the `ApiHttp.Call` of an operation under the given routing.
 *
 * @since 0.1.0
 * @category utils
 */
export const webCall = (routing: WebRouting, operation: WebOperation, input: RouteInput = {}): Call => {
  const entry = webRoutes[operation]
  const endpoint = endpointOf(routing, operation)
  const common = { endpoint, auth: entry.auth, idempotent: entry.idempotent } as const
  if (routing === "single") {
    return {
      ...common,
      method: "POST",
      host: entry.single.host,
      path: singlePath,
      body: {
        _tag: "Json",
        value: {
          operation: entry.single.operation,
          ...(input.id !== undefined ? { id: input.id } : {}),
          ...(input.next !== undefined ? { next: input.next } : {}),
          ...input.body
        }
      }
    }
  }
  const route = entry.firecrawl
  // A `next` link is fetched as it is: an absolute URL (the client sends the key only to
  // configured origins) or a path on the operation's host.
  const path = input.next ?? route.path.replace("{id}", encodeURIComponent(input.id ?? ""))
  return {
    ...common,
    method: route.method,
    host: route.host,
    path,
    body: input.body !== undefined ? { _tag: "Json", value: input.body } : undefined
  }
}
