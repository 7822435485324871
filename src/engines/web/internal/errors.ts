/**
 * The web engine's failures as the API error family: a fetch failure, a document that could not
 * be extracted, and a page that failed inside a job (recorded as a page with `metadata.error`).
 */
import type * as Upload from "../../../api/Upload.js"
import type * as Web from "../../../api/Web.js"
import { endpointOf, type WebOperation } from "../../../api/WebRoutes.js"
import * as RagError from "../../../RagError.js"
import type { FetchFailure } from "./fetcher.js"

/** The Firecrawl endpoint of an operation, as errors name it. */
export const endpoint = (op: WebOperation): string => endpointOf("firecrawl", op)

/** Maps a fetch failure to the API error family (scrape, map, crawl start). */
export const fetchError = (op: WebOperation, e: FetchFailure, maxBytes: number): RagError.ApiError => {
  const ep = endpoint(op)
  switch (e.reason) {
    case "invalid_url":
    case "blocked":
    case "too_many_redirects":
      return new RagError.BadRequest({ endpoint: ep, message: e.message, code: e.reason })
    case "too_large":
      return new RagError.PayloadTooLarge({ endpoint: ep, message: e.message, code: e.reason, limit: maxBytes })
    case "timeout":
      return new RagError.TransportError({ endpoint: ep, message: e.message, reason: "timeout" })
    case "aborted":
      return new RagError.TransportError({ endpoint: ep, message: e.message, reason: "aborted" })
    case "unreachable":
      return new RagError.TransportError({ endpoint: ep, message: e.message, reason: "unreachable" })
  }
}

/** A page that could not be scraped (recorded in a crawl, an `ApiError` for scrape). */
export class PageFailure {
  readonly _tag = "PageFailure"
  constructor(
    readonly error: RagError.ApiError,
    readonly statusCode: number | undefined,
    readonly finalUrl: string | undefined
  ) {}
}

/** Maps a failed document extraction (a PDF, DOCX, ... page) to the API error family. */
export const extractionError = (op: WebOperation, e: Upload.UploadError): RagError.ApiError => {
  if (e._tag !== "ExtractionError") return e
  const ep = endpoint(op)
  // the engines' messages start with the file name already ("download: …" for a URL ending in "/")
  const message = e.message.startsWith(`${e.file}: `) ? e.message : `${e.file}: ${e.message}`
  switch (e.reason) {
    case "too_large":
    case "limit_exceeded":
      return new RagError.PayloadTooLarge({ endpoint: ep, message, code: e.reason })
    case "password_required":
    case "wrong_password":
    case "corrupt":
    case "unsupported":
      return new RagError.BadRequest({ endpoint: ep, message, code: e.reason })
    default:
      return new RagError.ServerError({ endpoint: ep, message, code: e.reason, status: 500 })
  }
}

/** The page a job records for a URL that failed: its status and final URL when known, the error. */
export const failedPage = (sourceURL: string, f: PageFailure): Web.CrawlPage => ({
  metadata: {
    sourceURL,
    ...(f.statusCode !== undefined ? { statusCode: f.statusCode } : {}),
    ...(f.finalUrl !== undefined && f.finalUrl !== sourceURL ? { url: f.finalUrl } : {}),
    error: f.error.message
  }
})
