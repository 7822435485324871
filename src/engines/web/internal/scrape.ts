/**
 * Scrape: one URL fetched (through {@link Politeness}) and turned into a page: HTML to
 * Markdown / HTML / links with its metadata, plain text kept, other documents (PDF, DOCX, ...)
 * extracted by the `Upload` service. Also the checks every entry point makes first: the URL
 * (http(s), address policy) and the scrape options (formats, selectors).
 */
import { Effect } from "effect"
import type * as Upload from "../../../api/Upload.js"
import type * as Web from "../../../api/Web.js"
import type { WebOperation } from "../../../api/WebRoutes.js"
import { parseHttpUrl } from "../../../internal/url.js"
import * as RagError from "../../../RagError.js"
import { endpoint, extractionError, fetchError, PageFailure } from "./errors.js"
import type { FetchResult } from "./fetcher.js"
import { decodePage, invalidSelector, isHtml, processHtml } from "./html.js"
import type { Politeness } from "./politeness.js"
import type { Settings } from "./settings.js"
import { precheck } from "./ssrf.js"

/** The formats a page can be scraped to (`rawHtml` is the unfiltered page in `html`). */
export const supportedFormats: ReadonlySet<string> = new Set(["markdown", "html", "rawHtml", "links"])

/** A scraped page and the links to follow from it. */
export interface Scraped {
  readonly page: Web.CrawlPage
  /** The final URL (after redirects). */
  readonly finalUrl: string
  /** Links of the page (absolute), for crawling and mapping. */
  readonly links: ReadonlyArray<string>
}

/** Per-request options. */
export interface PageOptions extends Web.ScrapeOptions {
  readonly sourceURL: string
}

const defaultFormats = ["markdown"] as const

/** The error of unsupported formats or an invalid selector in scrape options, if any. */
export const checkScrapeOptions = (op: WebOperation, o: Web.ScrapeOptions | undefined): RagError.BadRequest | undefined => {
  const unknown = (o?.formats ?? []).filter((f) => !supportedFormats.has(f))
  if (unknown.length > 0) {
    return new RagError.BadRequest({
      endpoint: endpoint(op),
      message: `unsupported formats ${unknown.join(", ")} (the local engine supports ${[...supportedFormats].join(", ")})`
    })
  }
  const bad = invalidSelector([...(o?.includeTags ?? []), ...(o?.excludeTags ?? [])])
  return bad === undefined ? undefined : new RagError.BadRequest({ endpoint: endpoint(op), message: bad })
}

const fileName = (url: string, mediaType: string): string => {
  const last = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "") || "download"
  if (/\.[a-z0-9]{2,5}$/i.test(last)) return last
  const ext: Record<string, string> = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.ms-excel": ".xls",
    "text/csv": ".csv",
    "application/json": ".json",
    "image/png": ".png",
    "image/jpeg": ".jpg"
  }
  return last + (ext[mediaType] ?? "")
}

const isText = (mediaType: string): boolean =>
  mediaType === "text/plain" || mediaType === "text/markdown" || mediaType === "text/x-markdown"

/** An HTML response (by media type, or by its first bytes when it has none) as a page. */
const htmlPage = (res: FetchResult, o: PageOptions, formats: ReadonlySet<string>, base: Web.CrawlPage["metadata"]): Scraped | undefined => {
  if (!isHtml(res.mediaType) && !(res.mediaType === "" && /^\s*</.test(Buffer.from(res.body.subarray(0, 256)).toString("latin1")))) {
    return undefined
  }
  const { text } = decodePage(res.body, res.charset)
  const page = processHtml(text, res.url, o)
  return {
    finalUrl: res.url,
    links: page.links,
    page: {
      ...(formats.has("markdown") ? { markdown: page.markdown } : {}),
      ...(formats.has("html") ? { html: page.html } : formats.has("rawHtml") ? { html: text } : {}),
      ...(formats.has("links") ? { links: [...page.links] } : {}),
      metadata: {
        ...(page.title !== undefined ? { title: page.title } : {}),
        ...(page.description !== undefined ? { description: page.description } : {}),
        ...(page.language !== undefined ? { language: page.language } : {}),
        ...base
      }
    }
  }
}

/** A page without links: its text (when Markdown is asked for) and the base metadata. */
const linklessPage = (res: FetchResult, formats: ReadonlySet<string>, base: Web.CrawlPage["metadata"], markdown: string): Scraped => ({
  finalUrl: res.url,
  links: [],
  page: {
    ...(formats.has("markdown") ? { markdown } : {}),
    ...(formats.has("links") ? { links: [] } : {}),
    metadata: base
  }
})

/**
 * Turns a response into a page (HTML processed, text kept, documents extracted). With
 * `linksOnly` (map), documents are not extracted: only HTML has links.
 */
const toPage = (
  upload: Upload.Service,
  op: WebOperation,
  res: FetchResult,
  o: PageOptions,
  linksOnly: boolean
): Effect.Effect<Scraped, PageFailure> =>
  Effect.gen(function*() {
    const formats = new Set<string>(o.formats ?? defaultFormats)
    const base = {
      sourceURL: o.sourceURL,
      statusCode: res.status,
      ...(res.redirects.length > 0 ? { url: res.url } : {})
    }
    const html = htmlPage(res, o, formats, base)
    if (html !== undefined) return html
    if (isText(res.mediaType)) return linklessPage(res, formats, base, decodePage(res.body, res.charset).text.trim())
    if (linksOnly) return { finalUrl: res.url, links: [], page: { metadata: base } }
    const file: Upload.UploadFile = {
      name: fileName(res.url, res.mediaType),
      data: res.body,
      ...(res.mediaType !== "" ? { type: res.mediaType } : {})
    }
    const result = yield* upload.extract(file).pipe(
      Effect.mapError((e) => new PageFailure(extractionError(op, e), res.status, res.url))
    )
    if (!result.status) {
      return yield* Effect.fail(
        new PageFailure(
          new RagError.BadRequest({
            endpoint: endpoint(op),
            message: `${file.name}: ${result.error || "the document could not be extracted"}`
          }),
          res.status,
          res.url
        )
      )
    }
    return linklessPage(res, formats, base, result.content)
  })

/** Fetching and processing pages for one engine. */
export interface Scraper {
  /** Fetches and processes one page (politely). */
  readonly scrapePage: (op: WebOperation, url: string, o: PageOptions, linksOnly?: boolean) => Effect.Effect<Scraped, PageFailure>
  /** The URL of a request when it is http(s) and the address policy allows its host. */
  readonly precheckUrl: (op: WebOperation, input: string) => Effect.Effect<URL, RagError.BadRequest>
  /** `Web.Service.scrape`. */
  readonly scrape: (request: Web.ScrapeRequest) => Effect.Effect<Web.ScrapeResponse, RagError.ApiError>
}

/** The scraper of one engine. */
export const makeScraper = (s: Settings, polite: Politeness, upload: Upload.Service): Scraper => {
  const scrapePage = (op: WebOperation, url: string, o: PageOptions, linksOnly = false) =>
    polite.fetchPage(url, { headers: o.headers, mobile: o.mobile, polite: true }).pipe(
      Effect.mapError((e) => new PageFailure(fetchError(op, e, s.maxBodyBytes), undefined, undefined)),
      Effect.flatMap((res) => toPage(upload, op, res, o, linksOnly))
    )

  const precheckUrl = (op: WebOperation, input: string) =>
    Effect.gen(function*() {
      const url = parseHttpUrl(input)
      if (url === undefined) {
        return yield* new RagError.BadRequest({
          endpoint: endpoint(op),
          message: `not an http(s) URL: ${input}`,
          code: "invalid_url"
        })
      }
      const blocked = yield* Effect.promise(() => precheck(s.policy, url.hostname))
      if (blocked) return yield* new RagError.BadRequest({ endpoint: endpoint(op), message: blocked.message, code: "blocked" })
      return url
    })

  const scrape = Effect.fn("LocalWeb.scrape")(function*(request: Web.ScrapeRequest) {
    const url = yield* precheckUrl("scrape", request.url)
    const invalid = checkScrapeOptions("scrape", request)
    if (invalid) return yield* invalid
    url.hash = ""
    const scraped = yield* scrapePage("scrape", url.href, { ...request, sourceURL: request.url }).pipe(
      Effect.mapError((f) => f.error)
    )
    return { success: true, data: scraped.page } satisfies Web.ScrapeResponse as Web.ScrapeResponse
  })

  return { scrapePage, precheckUrl, scrape }
}
