/**
 * `effect-rag scrape URL`, `effect-rag crawl URL [--max-depth N] [--limit N] [--include P]...
 * [--exclude P]... [--sitemap include|skip|only] [--allow-private]` and `effect-rag map URL [--search Q] [--limit N]`, on the
 * local web engine. With `--json` each prints the spec's response shape: the scrape response,
 * the final crawl job record with every page (`next: null`), the map response.
 *
 * Wiring: the three commands are self-contained (each provides {@link webLayer} with the
 * `--allow-private` choice), so `Command.withSubcommands([scrapeCommand, crawlCommand,
 * mapCommand])` is all `main.ts` needs. The handlers {@link runScrape}, {@link runCrawl} and
 * {@link runMap} require only the `Web.Web` service, for a caller that wants another layer
 * (e.g. the remote client).
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Chunk from "effect/Chunk"
import type * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Web from "../../api/Web.js"
import * as RagError from "../../RagError.js"
import type * as LocalWeb from "../../engines/web/LocalWeb.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

/**
 * The web engine of `EFFECT_RAG_WEB` (`local`, the default, or `remote`) over the document
 * engine of `EFFECT_RAG_UPLOAD` for non-HTML pages: what the commands run on (`Wiring`, loaded
 * when a command runs). `allowPrivate` opens private and loopback addresses to the local engine
 * (off by default).
 */
export const webLayer = (options: LocalWeb.Options = {}): Layer.Layer<Web.Web, RagError.ConfigurationError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.all([Wiring.webEngine, Wiring.uploadEngine]),
      ([web, upload]) => Wiring.webLayer(web, options).pipe(Layer.provide(Wiring.uploadLayer(upload)))
    )
  )

/** `--sitemap` values: `LocalWeb.sitemapModes`, spelled here so the command loads no engine to parse. */
const sitemapModes = ["include", "skip", "only"] as const satisfies ReadonlyArray<LocalWeb.SitemapMode>

const json = Options.boolean("json").pipe(Options.withDescription("print the response as JSON (the spec's shape)"))
const allowPrivate = Options.boolean("allow-private").pipe(
  Options.withDescription("allow private, loopback and link-local addresses (refused by default: SSRF)")
)
const url = Args.text({ name: "URL" }).pipe(Args.withDescription("an http(s) URL"))
const print = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

// =============================================================================
// scrape
// =============================================================================

/** `scrape`: one page; Markdown on stdout, or the scrape response with `--json`. */
export const runScrape = (args: { readonly url: string; readonly json: boolean }) =>
  Effect.gen(function*() {
    const web = yield* Web.Web
    const response = yield* web.scrape({ url: args.url, formats: ["markdown", "links"] })
    if (args.json) return yield* print(response)
    yield* Console.log(response.data.markdown ?? "")
  })

/** `effect-rag scrape URL [--json] [--allow-private]`. */
export const scrapeCommand = Command.make("scrape", { url, json, allowPrivate }, (args) =>
  runScrape(args).pipe(Effect.provide(webLayer({ allowPrivate: args.allowPrivate })))).pipe(
    Command.withDescription("Scrape one page to Markdown with the local web engine")
  )

// =============================================================================
// crawl
// =============================================================================

/** The arguments of `crawl`. */
export interface CrawlArgs {
  readonly url: string
  readonly maxDepth: Option.Option<number>
  readonly limit: Option.Option<number>
  readonly include: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  /** How the sitemap is used (`include` when none); needs the local engine (`LocalWeb`). */
  readonly sitemap?: Option.Option<LocalWeb.SitemapMode> | undefined
  readonly json: boolean
}

/**
 * `crawl`: starts a job, waits for it, then reads every page. Prints one line per page
 * (status, URL, title) and a summary, or with `--json` the final job record with all pages.
 */
export const runCrawl = (args: CrawlArgs) =>
  Effect.gen(function*() {
    const web = yield* Web.Web
    const request: Web.CrawlRequest = {
      url: args.url,
      ...(Option.isSome(args.maxDepth) ? { maxDepth: args.maxDepth.value } : {}),
      ...(Option.isSome(args.limit) ? { limit: args.limit.value } : {}),
      ...(args.include.length > 0 ? { includePaths: args.include } : {}),
      ...(args.exclude.length > 0 ? { excludePaths: args.exclude } : {})
    }
    const sitemap = args.sitemap ?? Option.none()
    const started = Option.isNone(sitemap)
      ? yield* web.crawl(request)
      : yield* Effect.flatMap(Wiring.localWebEngine, ({ defaultMaxDepth, engine }) =>
        Option.isNone(engine)
          ? Effect.fail(
            new RagError.ConfigurationError({
              endpoint: "crawl",
              message: "--sitemap needs the local web engine (LocalWeb.layer)"
            })
          )
          : engine.value.crawlWith(request, {
            maxHops: Option.getOrElse(args.maxDepth, () => defaultMaxDepth),
            sitemap: sitemap.value
          }))
    const job = yield* web.waitForCrawl(started.id, { interval: Duration.millis(250) })
    const pages = Chunk.toReadonlyArray(yield* Stream.runCollect(web.crawlPages(started.id)))
    const record: Web.CrawlJob = { ...job, next: null, data: pages }
    if (args.json) return yield* print(record)
    for (const page of pages) {
      const m = page.metadata
      const status = m.error !== undefined ? `ERR ${m.statusCode ?? "---"}` : String(m.statusCode ?? "")
      yield* Console.log(`${status.padEnd(7)} ${m.sourceURL ?? ""}${m.title ? `  ${m.title}` : ""}${m.error ? `  (${Shared.forCli(m.error)})` : ""}`)
    }
    yield* Console.log(`${job.status}: ${job.completed} of ${job.total} pages crawled`)
  })

/** `effect-rag crawl URL [--max-depth N] [--limit N] [--include P]... [--exclude P]... [--sitemap MODE] [--allow-private] [--json]`. */
export const crawlCommand = Command.make(
  "crawl",
  {
    url,
    maxDepth: Options.integer("max-depth").pipe(
      Options.optional,
      Options.withDescription("link hops from the start page (default 10); a page only deeper is never returned, even if the sitemap lists it")
    ),
    limit: Options.integer("limit").pipe(Options.optional, Options.withDescription("most pages (default 1000)")),
    include: Options.text("include").pipe(
      Options.repeated,
      Options.withDescription("path pattern (regular expression) to include; repeatable")
    ),
    exclude: Options.text("exclude").pipe(
      Options.repeated,
      Options.withDescription("path pattern (regular expression) to exclude; repeatable")
    ),
    sitemap: Options.choice("sitemap", sitemapModes).pipe(
      Options.optional,
      Options.withDescription(
        "include (default): the sitemap's pages too once links run out; skip: links only; only: the start page and the sitemap's pages within --max-depth"
      )
    ),
    allowPrivate,
    json
  },
  (args) => runCrawl(args).pipe(Effect.provide(webLayer({ allowPrivate: args.allowPrivate })))
).pipe(Command.withDescription("Crawl a site with the local web engine (robots.txt honoured, polite)"))

// =============================================================================
// map
// =============================================================================

/** The arguments of `map`. */
export interface MapArgs {
  readonly url: string
  readonly search: Option.Option<string>
  readonly limit: Option.Option<number>
  readonly json: boolean
}

/** `map`: the site's links, one a line, or the map response with `--json`. */
export const runMap = (args: MapArgs) =>
  Effect.gen(function*() {
    const web = yield* Web.Web
    const response = yield* web.map({
      url: args.url,
      ...(Option.isSome(args.search) ? { search: args.search.value } : {}),
      ...(Option.isSome(args.limit) ? { limit: args.limit.value } : {})
    })
    if (args.json) return yield* print(response)
    for (const link of response.links) yield* Console.log(link)
  })

/** `effect-rag map URL [--search Q] [--limit N] [--allow-private] [--json]`. */
export const mapCommand = Command.make(
  "map",
  {
    url,
    search: Options.text("search").pipe(Options.optional, Options.withDescription("keep links containing these words")),
    limit: Options.integer("limit").pipe(Options.optional, Options.withDescription("most links (default 5000)")),
    allowPrivate,
    json
  },
  (args) => runMap(args).pipe(Effect.provide(webLayer({ allowPrivate: args.allowPrivate })))
).pipe(Command.withDescription("List a site's links (sitemaps and pages) with the local web engine"))
