/**
 * The web operations (crawl, crawl status, cancel, map, scrape) and AI search, served by
 * whatever `Web` and `Search` services the server was given, in both routings of the client's
 * route table (`src/api/WebRoutes.ts`), at once:
 *
 * - `firecrawl`: `POST /v1/crawl`, `GET /v1/crawl/:id`, `DELETE /v1/crawl/:id`, `POST /v1/map`,
 *   `POST /v1/scrape`, and AI search as `POST /v1/web` with `{model, params}`;
 * - `single`: `POST /v1/web` with an `operation` field (`crawl_start`, `crawl_status`,
 *   `crawl_cancel`, `map`, `scrape`, `search`) merged at the top level with the operation's
 *   fields. A body without `operation` that has `model` or `params` is AI search.
 *
 * Bodies are decoded with the client's own request schemas (a 400 names the field), responses
 * encoded with its response schemas, and typed errors answered with the status of their family
 * (an unknown crawl id is a 404). A service the server has none of answers 501. An option the
 * local engine cannot honour (browser `actions`, a `webhook`, ...) is a 400 naming it.
 *
 * The `firecrawl` paths answer as Firecrawl v1 does: `success` in every body, no `next` on the
 * last batch of a job, errors as `{"success": false, "error": "<text>", "code"}`, the idempotency
 * key in `Idempotency-Key` or `x-idempotency-key`, and `maxDepth` read with v1's depth model
 * (path segments beyond the start URL's) through the local engine's `crawlWith`, with v1's
 * `maxDiscoveryDepth`, `ignoreSitemap`, `crawlEntireDomain` (`allowBackwardLinks`),
 * `allowSubdomains`, `allowExternalLinks` and `ignoreQueryParameters`. `single` routing is the
 * library's own API: `maxDepth` is link hops, the record keeps `next: null`. The v2 surface is
 * in `webV2.ts`.
 *
 * ## Firecrawl v1 batch scrape
 *
 * `POST /v1/batch/scrape` (`{urls, ignoreInvalidURLs, ...v1 scrape options}` → `{success, id,
 * url, invalidURLs?}`) starts a job of the local engine as `POST /v2/batch/scrape` does
 * (`internal/jobs.ts`). The job is read like a v1 crawl: `GET /v1/batch/scrape/{id}` answers
 * the crawl status record (`success, status, total, completed, creditsUsed, expiresAt, next?,
 * data`) with `next` links to `/v1/batch/scrape/{id}?skip={n}`, `DELETE /v1/batch/scrape/{id}`
 * cancels it, and, as on Firecrawl, `GET /v1/crawl/{id}` reads it too (the 1.x SDK's
 * `batchScrapeUrls` polls that path).
 *
 * ## Crawl pagination
 *
 * How many pages one batch holds is the engine's: the local engine stops a batch at `pageSize`
 * pages or `pageBytes` bytes of page JSON, whichever comes first (`docs/server.md`). The
 * engine's `next` value never reaches the client as it is. The server rewrites it into a
 * link of its own, the status URL of the job on this server with the batch in the query:
 *
 * - `{origin}/v1/crawl/{id}?skip={n}` for a cursor of the local engine
 *   (`local://crawl/{id}?skip={n}`);
 * - `{origin}/v1/crawl/{id}?cursor={engine next, URL-encoded}` for any other engine's cursor,
 *   which is handed back to that engine's `crawlStatus` as it is.
 *
 * `{origin}` is `http(s)://` + the request's `Host` header (`https` when `X-Forwarded-Proto`
 * says so), or the server's bound address when the request has no usable `Host`, so the link
 * has the origin the client used and the client sends its key to it. In `firecrawl` routing
 * the client `GET`s that link as given; in `single` routing it sends it back as the opaque
 * `next` of a `crawl_status` envelope, and the server reads the same query from it (the link
 * must be the status URL of the envelope's `id`).
 *
 * The crawl start response's `url` is the job's status URL on this server.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { endpointOf, singlePath, type WebOperation, webRoutes } from "../../api/WebRoutes.js"
import * as Search from "../../api/Search.js"
import * as Web from "../../api/Web.js"
import * as WebCrawlScope from "../../api/WebCrawlScope.js"
import type { WebRouting } from "../../RagConfig.js"
import * as Firecrawl from "../internal/firecrawl.js"
import * as Jobs from "../internal/jobs.js"
import { ServerLimits } from "../internal/limits.js"
import * as State from "../internal/state.js"
import { badRequest, fromError, handle, jsonBody, jsonResponse, service, type WireError } from "../internal/wire.js"

const webEngine = "web engine"
const searchEngine = "AI search service"

// =============================================================================
// Request fields
// =============================================================================

/**
 * Where an operation's fields come from: the request body (`firecrawl` routing) or the
 * `single` envelope, already read. Either way a value that does not decode is a 400.
 */
type Fields = <A, I>(
  endpoint: string,
  schema: Schema.Schema<A, I>
) => Effect.Effect<A, WireError, HttpServerRequest.HttpServerRequest>

/** The fields of a `firecrawl` request: its JSON body. */
const fromBody: Fields = (endpoint, schema) => jsonBody(endpoint, schema)

/** The fields of a `single` request: the envelope, whose `operation` field is ignored. */
const fromEnvelope = (json: unknown): Fields => (endpoint, schema) =>
  Schema.decodeUnknown(schema)(json).pipe(Effect.mapError((e) => badRequest(endpoint, e)))

/** A 400 naming the field, worded as {@link badRequest} words a schema failure. */
const invalid = (endpoint: string, path: string, message: string): WireError => ({
  status: 400,
  message: `${endpoint}: invalid request at ${path}: ${message}`,
  type: "invalid_request_error",
  code: "invalid_request"
})

/** The `single` envelope of a crawl status request. */
const StatusEnvelope = Schema.Struct({
  /** The crawl job id. */
  id: Schema.String,
  /** The `next` value of a previous status response of this server. */
  next: Schema.optional(Schema.String)
})

/** The `single` envelope of a crawl cancel request. */
const CancelEnvelope = Schema.Struct({
  /** The crawl job id. */
  id: Schema.String
})

// =============================================================================
// Crawl batches and links
// =============================================================================

/** Which batch of a crawl job a status request asks for: the query of a `next` link. */
const Batch = Schema.Struct({
  /** Pages to skip (read by the engine's cursor codec, `WebCrawlScope`). */
  skip: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
  /** Another engine's cursor, handed back to it as it is. */
  cursor: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
})
type Batch = typeof Batch.Type

/**
 * What the engine's `crawlStatus` is given for a batch of job `id`: a `skip` goes through the
 * engine's cursor codec (the crawl-scope capability); without one it is refused.
 */
const engineCursor = (
  endpoint: string,
  scope: Option.Option<WebCrawlScope.Service>,
  id: string,
  batch: Batch
): Effect.Effect<string, WireError> => {
  if (batch.cursor !== undefined) return Effect.succeed(batch.cursor)
  if (batch.skip === undefined || batch.skip === 0) return Effect.succeed(id)
  return Option.match(scope, {
    onNone: () => Effect.fail(invalid(endpoint, "skip", "this server's web engine has no cursor codec (use the next link it sent)")),
    onSome: (codec) => Effect.succeed(codec.nextCursor(id, batch.skip!))
  })
}

/**
 * The kinds of job of the v1 routes: a crawl (`/v1/crawl/{id}`, in the route table) or a batch
 * scrape (`/v1/batch/scrape/{id}`, Firecrawl-only). Both are jobs of the same engine, read
 * alike.
 */
type JobKind = "crawl" | "batch"

/** The path of job `id` on this server (a crawl's from the route table). */
const statusPath = (id: string, kind: JobKind = "crawl"): string =>
  kind === "batch"
    ? Jobs.batchPath("v1", id)
    : webRoutes.crawlStatus.firecrawl.path.replace("{id}", encodeURIComponent(id))

/** This server's `next` link for the engine's `next` value of job `id`. */
const nextLink = (
  scope: Option.Option<WebCrawlScope.Service>,
  origin: string,
  id: string,
  engineNext: string,
  kind: JobKind
): string => {
  const cursor = Option.getOrUndefined(scope)?.parseCursor(engineNext)
  const query = cursor !== undefined && cursor.id === id
    ? `skip=${cursor.skip}`
    : `cursor=${encodeURIComponent(engineNext)}`
  return `${origin}${statusPath(id, kind)}?${query}`
}

/** Reads the batch out of a `next` link this server issued for job `id` (`single` routing). */
const batchOfNext = (endpoint: string, id: string, next: string): Effect.Effect<Batch, WireError> =>
  Effect.gen(function*() {
    const url = yield* Effect.try({
      try: () => new URL(next, "http://server.invalid"),
      catch: () => invalid(endpoint, "next", "not a link this server issued")
    })
    if (url.pathname !== statusPath(id)) {
      return yield* Effect.fail(invalid(endpoint, "next", `not a link of crawl ${id}`))
    }
    return yield* Schema.decodeUnknown(Batch)(HttpServerRequest.searchParamsFromURL(url)).pipe(
      Effect.mapError((e) => badRequest(endpoint, e))
    )
  })

/** Reads which batch a status request asks for (from the query, or from the envelope's `next`). */
type BatchOf = (endpoint: string) => Effect.Effect<Batch, WireError, HttpServerRequest.ParsedSearchParams>

/** The batch asked for by the query of a `GET /v1/crawl/:id` (`firecrawl` routing). */
const batchOfQuery: BatchOf = (endpoint) =>
  HttpServerRequest.schemaSearchParams(Batch).pipe(Effect.mapError((e) => badRequest(endpoint, e)))

// =============================================================================
// Operations (shared by both routings)
// =============================================================================

/**
 * A Firecrawl v1 crawl request: the library's request (its `maxDepth` read as Firecrawl v1 reads
 * it, path segments beyond the start URL's) and v1's scope fields.
 */
const V1CrawlRequest = Schema.Struct({
  ...Web.CrawlRequest.fields,
  /** Firecrawl's discovery depth (start page and sitemap pages 0). */
  maxDiscoveryDepth: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  /** Do not read the sitemap. */
  ignoreSitemap: Schema.optional(Schema.Boolean),
  /** Do not tell apart URLs that differ only in their query. */
  ignoreQueryParameters: Schema.optional(Schema.Boolean),
  /** Follow links outside the start URL's path (siblings, parents). */
  crawlEntireDomain: Schema.optional(Schema.Boolean),
  /** The former name of `crawlEntireDomain`. */
  allowBackwardLinks: Schema.optional(Schema.Boolean),
  /** Follow links to other sites. */
  allowExternalLinks: Schema.optional(Schema.Boolean),
  /** Follow links to subdomains. */
  allowSubdomains: Schema.optional(Schema.Boolean)
})

/** Firecrawl v1's default `maxDepth`. */
const v1DefaultMaxDepth = 10

/**
 * Starts a crawl on the Firecrawl v1 route with v1's depth model: through the engine's
 * crawl-scope capability (`WebCrawlScope.crawlWith`) when it has one, else the request goes to the `Web` service as it is (a
 * remote Firecrawl reads it the same way).
 */
const v1Crawl = (endpoint: string, web: Web.Service) =>
  Effect.gen(function*() {
    const decoded = yield* Firecrawl.decodeBody(endpoint, V1CrawlRequest, "job")
    const limit = yield* Jobs.crawlLimit(endpoint, decoded.limit)
    const request = { ...decoded, ...(limit !== undefined ? { limit } : {}) }
    const scope = yield* Effect.serviceOption(WebCrawlScope.WebCrawlScope)
    if (Option.isNone(scope)) return web.crawl(request)
    return scope.value.crawlWith(request, {
      maxPathDepth: request.maxDepth ?? v1DefaultMaxDepth,
      maxDiscoveryDepth: request.maxDiscoveryDepth,
      sitemap: request.ignoreSitemap === true ? "skip" : "include",
      childPathsOnly: !(request.crawlEntireDomain === true || request.allowBackwardLinks === true),
      subdomains: request.allowSubdomains,
      externalLinks: request.allowExternalLinks,
      ignoreQueryParameters: request.ignoreQueryParameters
    })
  })

const crawlStart = (routing: WebRouting, fields: Fields) =>
  Effect.gen(function*() {
    const endpoint = endpointOf(routing, "crawlStart")
    const web = yield* service(Web.Web, endpoint, webEngine)
    const start = routing === "firecrawl"
      ? yield* v1Crawl(endpoint, web)
      : yield* Effect.gen(function*() {
        const request = yield* fields(endpoint, Web.CrawlRequest)
        const limit = yield* Jobs.crawlLimit(endpoint, request.limit)
        return web.crawl({ ...request, ...(limit !== undefined ? { limit } : {}) })
      })
    // a retry of the same call (same Idempotency-Key) gets the first job, not a second one
    const key = yield* Firecrawl.idempotencyKey
    const started = yield* State.idempotent("crawlStart", key, Jobs.gated(endpoint, Effect.mapError(start, fromError)))
    const base = yield* Firecrawl.origin
    return yield* jsonResponse(Web.CrawlStarted, { ...started, url: `${base}${statusPath(started.id)}` })
  })

/** The label of a status or cancel request of a job, in errors. */
const jobEndpoint = (routing: WebRouting, operation: "crawlStatus" | "crawlCancel", kind: JobKind): string =>
  kind === "batch"
    ? `${operation === "crawlStatus" ? "GET" : "DELETE"} /v1/batch/scrape/{id}`
    : endpointOf(routing, operation)

/**
 * A batch of a job's pages: the library's record in `single` routing (`next: null` on the last
 * batch), Firecrawl's (`Jobs.record`) on the v1 paths, with `next` a link of this server to the
 * following batch of the same kind of job.
 */
const crawlStatus = (routing: WebRouting, id: string, batch: BatchOf, kind: JobKind = "crawl") =>
  Effect.gen(function*() {
    const endpoint = jobEndpoint(routing, "crawlStatus", kind)
    const web = yield* service(Web.Web, endpoint, webEngine)
    const scope = yield* Effect.serviceOption(WebCrawlScope.WebCrawlScope)
    const cursor = yield* engineCursor(endpoint, scope, id, yield* batch(endpoint))
    const job = yield* web.crawlStatus(cursor).pipe(Effect.mapError(fromError))
    const base = yield* Firecrawl.origin
    const next = job.next === null || job.next === "" ? null : nextLink(scope, base, id, job.next, kind)
    if (routing === "single") {
      const limits = yield* ServerLimits
      return yield* jsonResponse(Web.CrawlJob, { ...Jobs.inServeTerms(job, limits.echoChars), next })
    }
    return HttpServerResponse.unsafeJson(yield* Jobs.record(job, next))
  })

const crawlCancel = (routing: WebRouting, id: string, kind: JobKind = "crawl") =>
  Effect.gen(function*() {
    const endpoint = jobEndpoint(routing, "crawlCancel", kind)
    const web = yield* service(Web.Web, endpoint, webEngine)
    const response = yield* web.cancel(id).pipe(Effect.mapError(fromError))
    return yield* jsonResponse(Web.CancelResponse, response)
  })

const map = (routing: WebRouting, fields: Fields) =>
  Effect.gen(function*() {
    const endpoint = endpointOf(routing, "map")
    const web = yield* service(Web.Web, endpoint, webEngine)
    const request = yield* fields(endpoint, Web.MapRequest)
    const limit = yield* Jobs.mapLimit(endpoint, request.limit)
    const response = yield* web.map({ ...request, limit }).pipe(Effect.mapError(fromError))
    return yield* jsonResponse(Web.MapResponse, response)
  })

const scrape = (routing: WebRouting, fields: Fields) =>
  Effect.gen(function*() {
    const endpoint = endpointOf(routing, "scrape")
    const web = yield* service(Web.Web, endpoint, webEngine)
    const refusal = Firecrawl.refused(endpoint, yield* fields(endpoint, Schema.Unknown), "scrape")
    if (refusal !== undefined) return yield* Effect.fail(refusal)
    const request = yield* fields(endpoint, Web.ScrapeRequest)
    const response = yield* web.scrape(request).pipe(Effect.mapError(fromError))
    return yield* jsonResponse(Web.ScrapeResponse, response)
  })

const search = (routing: WebRouting, fields: Fields) =>
  Effect.gen(function*() {
    const endpoint = endpointOf(routing, "search")
    const svc = yield* service(Search.Search, endpoint, searchEngine)
    const request = yield* fields(endpoint, Search.SearchRequest)
    const response = yield* svc.search(request).pipe(Effect.mapError(fromError))
    return yield* jsonResponse(Search.SearchResponse, response)
  })

// =============================================================================
// `single` routing: POST /v1/web
// =============================================================================

/** The operations by their `single` name, from the route table. */
const operations = Object.fromEntries(
  (Object.keys(webRoutes) as Array<WebOperation>).map((op) => [webRoutes[op].single.operation, op])
) as Readonly<Record<string, WebOperation>>

/** The `operation` field of a `single` envelope: one of {@link operations}. */
const Operation = Schema.String.pipe(
  Schema.filter((name) => Object.hasOwn(operations, name), {
    message: (issue) => `unknown operation ${JSON.stringify(issue.actual)} (one of ${Object.keys(operations).join(", ")})`
  })
)

/** An envelope that may name its operation (without one, it is AI search or a 400). */
const Envelope = Schema.Struct({ operation: Schema.optional(Operation) })

const single = `POST ${singlePath}`

/** `POST /v1/web`: a `single` envelope, or AI search as `{model, params}` (both routings). */
const webEndpoint = Effect.gen(function*() {
  const json = yield* jsonBody(single, Schema.Unknown)
  const fields = fromEnvelope(json)
  const envelope = yield* fields(single, Envelope)
  if (envelope.operation === undefined) {
    const isSearch = typeof json === "object" && json !== null && ("model" in json || "params" in json)
    if (isSearch) return yield* search("firecrawl", fields)
    return yield* Effect.fail(invalid(single, "operation", `is missing (one of ${Object.keys(operations).join(", ")})`))
  }
  const operation = operations[envelope.operation]!
  switch (operation) {
    case "crawlStart":
      return yield* crawlStart("single", fields)
    case "crawlStatus": {
      const endpoint = endpointOf("single", "crawlStatus")
      const { id, next } = yield* fields(endpoint, StatusEnvelope)
      return yield* crawlStatus(
        "single",
        id,
        (ep) => next === undefined ? Effect.succeed<Batch>({}) : batchOfNext(ep, id, next)
      )
    }
    case "crawlCancel": {
      const { id } = yield* fields(endpointOf("single", "crawlCancel"), CancelEnvelope)
      return yield* crawlCancel("single", id)
    }
    case "map":
      return yield* map("single", fields)
    case "scrape":
      return yield* scrape("single", fields)
    case "search":
      return yield* search("single", fields)
  }
})

// =============================================================================
// Routes
// =============================================================================

/** The `firecrawl` path of an operation, as a router path (`{id}` → `:id`). */
const routePath = (operation: WebOperation): HttpRouter.PathInput => {
  const path = webRoutes[operation].firecrawl.path.replace("{id}", ":id")
  return path.startsWith("/") ? (path as `/${string}`) : `/${path}`
}

/** The job id of a `/v1/crawl/:id` route. */
const jobId = Effect.map(HttpRouter.params, (params) => params["id"] ?? "")

/** The routes of the web operations and AI search, in both routings. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post(routePath("crawlStart"), Firecrawl.handle(crawlStart("firecrawl", fromBody))),
  HttpRouter.get(
    routePath("crawlStatus"),
    Firecrawl.handle(Effect.flatMap(jobId, (id) => crawlStatus("firecrawl", id, batchOfQuery)))
  ),
  HttpRouter.del(routePath("crawlCancel"), Firecrawl.handle(Effect.flatMap(jobId, (id) => crawlCancel("firecrawl", id)))),
  HttpRouter.post(routePath("map"), Firecrawl.handle(map("firecrawl", fromBody))),
  HttpRouter.post(routePath("scrape"), Firecrawl.handle(scrape("firecrawl", fromBody))),
  // Firecrawl v1 batch scrape: started as v2 starts it, read and cancelled as a v1 crawl
  HttpRouter.post("/v1/batch/scrape", Firecrawl.handle(Jobs.batchScrapeStart("v1"))),
  HttpRouter.get(
    "/v1/batch/scrape/:id",
    Firecrawl.handle(Effect.flatMap(jobId, (id) => crawlStatus("firecrawl", id, batchOfQuery, "batch")))
  ),
  HttpRouter.del("/v1/batch/scrape/:id", Firecrawl.handle(Effect.flatMap(jobId, (id) => crawlCancel("firecrawl", id, "batch")))),
  // AI search (`firecrawl` routing) and every `single` operation share the path
  HttpRouter.post(singlePath as `/${string}`, handle(webEndpoint))
)
