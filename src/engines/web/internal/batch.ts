/**
 * Batch scrape: a list of URLs scraped as one background job, read like a crawl job, its
 * pages in the order of the URLs (one reserved slot per URL).
 */
import { Effect } from "effect"
import type * as Web from "../../../api/Web.js"
import { parseHttpUrl } from "../../../internal/url.js"
import * as RagError from "../../../RagError.js"
import { endpoint, failedPage, PageFailure } from "./errors.js"
import type { Job, Store } from "./jobs.js"
import type { Jobs } from "./job-service.js"
import { checkScrapeOptions, type Scraper } from "./scrape.js"
import type { Settings } from "./settings.js"
import { precheck } from "./ssrf.js"

/** What a batch scrape needs of its engine. */
export interface BatchDeps {
  readonly settings: Settings
  readonly scraper: Scraper
  readonly jobs: Jobs
  readonly store: Store
}

/** The URLs of a batch as http(s) URLs without fragments, or the error of the first that is not one. */
const parseTargets = (urls: ReadonlyArray<string>): Effect.Effect<Array<URL>, RagError.BadRequest> =>
  Effect.suspend(() => {
    const targets: Array<URL> = []
    for (const input of urls) {
      const url = parseHttpUrl(input)
      if (url === undefined) {
        return Effect.fail(
          new RagError.BadRequest({ endpoint: endpoint("scrape"), message: `not an http(s) URL: ${input}`, code: "invalid_url" })
        )
      }
      url.hash = ""
      targets.push(url)
    }
    return Effect.succeed(targets)
  })

/** The address policy, once per host: the refusal of each refused host. */
const refusalsOf = (s: Settings, hosts: ReadonlyArray<string>): Effect.Effect<Map<string, RagError.BadRequest>> =>
  Effect.gen(function*() {
    const refusals = new Map<string, RagError.BadRequest>()
    yield* Effect.forEach(
      hosts,
      (host) =>
        Effect.promise(() => precheck(s.policy, host)).pipe(Effect.map((refusal) => {
          if (refusal !== undefined) {
            refusals.set(host, new RagError.BadRequest({ endpoint: endpoint("scrape"), message: refusal.message, code: "blocked" }))
          }
        })),
      { concurrency: 8, discard: true }
    )
    return refusals
  })

/** Scrapes every target into its slot of the job (a refused host's URLs are failed pages). */
const scrapeAll = (
  deps: BatchDeps,
  job: Job,
  targets: ReadonlyArray<URL>,
  refusals: ReadonlyMap<string, RagError.BadRequest>,
  options: Web.ScrapeOptions
): Effect.Effect<void, string> =>
  Effect.forEach(
    targets,
    (target, slot) => {
      const url = target.href
      const refusal = refusals.get(target.hostname)
      const page = refusal === undefined
        ? deps.scraper.scrapePage("scrape", url, { ...options, sourceURL: url })
        : Effect.fail(new PageFailure(refusal, undefined, undefined))
      return page.pipe(
        Effect.either,
        Effect.flatMap((result) => {
          job.total++
          if (result._tag === "Left") return deps.jobs.recordPage(job, failedPage(url, result.left), slot)
          return Effect.map(deps.jobs.recordPage(job, result.right.page, slot), (served) => {
            if (served) job.completed++
          })
        })
      )
    },
    { concurrency: deps.settings.concurrency, discard: true }
  )

/** `batchScrape` of the engine. */
export const makeBatchScrape = (deps: BatchDeps) =>
  Effect.fn("LocalWeb.batchScrape")(function*(urls: ReadonlyArray<string>, options: Web.ScrapeOptions = {}) {
    yield* deps.jobs.sweep
    const invalid = checkScrapeOptions("scrape", options)
    if (invalid) return yield* invalid
    const targets = yield* parseTargets(urls)
    // a refused URL is a failed page and the others are scraped; a batch of refused URLs only
    // is refused as a scrape of one is
    const hosts = [...new Set(targets.map((t) => t.hostname))]
    const refusals = yield* refusalsOf(deps.settings, hosts)
    if (refusals.size === hosts.length && hosts.length > 0) return yield* refusals.get(hosts[0]!)!
    const job = yield* deps.jobs.newJob(targets[0]?.href ?? "")
    // one slot per URL: pages in the order of the request, whatever order they finish in
    deps.store.reserve(job, targets.length)
    yield* deps.jobs.runJob(job, scrapeAll(deps, job, targets, refusals, options))
    return { success: true, id: job.id, url: job.url } satisfies Web.CrawlStarted as Web.CrawlStarted
  })
