/**
 * Firecrawl jobs on the wire, shared by the v1 routes (`web.ts`) and the v2 routes
 * (`webV2.ts`): the job record a status request answers, and the start of a batch scrape.
 *
 * A batch scrape is one job of the local engine (`LocalWeb.batchScrape`), read like a crawl
 * job. Both API versions start it the same way and differ only in their scrape options (v1:
 * format names; v2: names or `{type}` objects) and in the links they answer:
 *
 * | Route | Request | Response |
 * | --- | --- | --- |
 * | `POST /v1/batch/scrape`, `POST /v2/batch/scrape` | `{urls, ignoreInvalidURLs, ...scrape options}` | `{success, id, url, invalidURLs?}` |
 *
 * `url` is the job's status URL on this server (`/v1/batch/scrape/{id}` or
 * `/v2/batch/scrape/{id}`). A URL that is not http(s) is a 400 naming it, unless
 * `ignoreInvalidURLs` is true: then it is skipped and listed in `invalidURLs`, and a request
 * left with no URL is a 400. A retry with the same idempotency key gets the first job.
 */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"
import * as Web from "../../api/Web.js"
import * as LocalWeb from "../../engines/LocalWeb.js"
import * as Firecrawl from "./firecrawl.js"
import * as State from "./state.js"
import { fromError, serveTerms, service, type WireError } from "./wire.js"

/** The Firecrawl API versions. */
export type Version = "v1" | "v2"

/** The status path of a batch scrape job of an API version. */
export const batchPath = (version: Version, id: string): string => `/${version}/batch/scrape/${encodeURIComponent(id)}`

/**
 * A job record as Firecrawl answers it: `success: true`, and no `next` on the last batch (the
 * SDKs follow any `next` key). The reasons of failed pages are in the server's terms
 * (`serveTerms`). The library's own record (`single` routing) keeps `next: null`.
 */
export const record = (job: Web.CrawlJob, next: string | null) =>
  Schema.encode(Web.CrawlJob)({ ...inServeTerms(job), next }).pipe(
    Effect.orDie, // our own values always encode
    Effect.map(({ next, ...rest }) => ({ success: true, ...rest, ...(next === null ? {} : { next }) }))
  )

/** A job whose failed pages' reasons are in the server's terms. */
export const inServeTerms = (job: Web.CrawlJob): Web.CrawlJob =>
  job.data.some((page) => page.metadata.error !== undefined)
    ? {
      ...job,
      data: job.data.map((page) =>
        page.metadata.error === undefined ? page : { ...page, metadata: { ...page.metadata, error: serveTerms(page.metadata.error) } }
      )
    }
    : job

// =============================================================================
// Batch scrape start
// =============================================================================

const engineName = "local web engine"

/** The body of a batch scrape of an API version: the URLs and that version's scrape options. */
const batchRequest = (version: Version) =>
  Schema.Struct({
    urls: Schema.NonEmptyArray(Schema.String),
    ignoreInvalidURLs: Schema.optional(Schema.Boolean),
    ...(version === "v1" ? Web.ScrapeOptions.fields : Firecrawl.ScrapeOptions.fields)
  })

const isHttp = (u: string) => /^https?:\/\//i.test(u.trim()) && URL.canParse(u.trim())

const invalid = (endpoint: string, message: string): WireError => ({
  status: 400,
  message: `${endpoint}: ${message}`,
  type: "invalid_request_error",
  code: "invalid_request"
})

/** `POST /{version}/batch/scrape`: starts a batch scrape job on the local web engine. */
export const batchScrapeStart = (version: Version) =>
  Effect.gen(function*() {
    const endpoint = `POST /${version}/batch/scrape`
    const engine = yield* service(LocalWeb.LocalWeb, endpoint, engineName)
    const { ignoreInvalidURLs, urls, ...rest } = yield* Firecrawl.decodeBody(endpoint, batchRequest(version), "batch")
    const { options } = yield* Firecrawl.engineOptions(endpoint, rest, true)
    const invalidURLs = urls.filter((u) => !isHttp(u))
    if (invalidURLs.length > 0 && ignoreInvalidURLs !== true) {
      return yield* Effect.fail(invalid(endpoint, `invalid URLs ${invalidURLs.join(", ")} (set ignoreInvalidURLs to skip them)`))
    }
    const valid = urls.filter(isHttp)
    if (valid.length === 0) return yield* Effect.fail(invalid(endpoint, "no valid URL"))
    const key = yield* Firecrawl.idempotencyKey
    const job = yield* State.idempotent(`batchScrape.${version}`, key, engine.batchScrape(valid, options)).pipe(
      Effect.mapError(fromError)
    )
    const origin = yield* Firecrawl.origin
    return HttpServerResponse.unsafeJson({
      success: true,
      id: job.id,
      url: `${origin}${batchPath(version, job.id)}`,
      ...(ignoreInvalidURLs === true ? { invalidURLs } : {})
    })
  })
