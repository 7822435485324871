/**
 * The web commands end to end against the loopback site (`--allow-private` opens loopback).
 */
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Console, Effect } from "effect"
import { crawlCommand, mapCommand, scrapeCommand } from "../../../src/cli/commands/web.js"
import { forCli } from "../../../src/cli/options.js"
import { startSite } from "./site.js"

/** Runs a command with `argv` and returns what it printed. */
const run = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>, argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const base = yield* Effect.console
    // the current console, with `log` captured
    const console: Console.Console = Object.assign(Object.create(base) as Console.Console, {
      log: (...args: ReadonlyArray<unknown>) => Effect.sync(() => void lines.push(args.map(String).join(" ")))
    })
    yield* Command.run(command, { name: "effect-rag", version: "0.1.0" })(["node", "effect-rag", ...argv]).pipe(
      Effect.withConsole(console),
      Effect.provide(NodeContext.layer)
    )
    return lines.join("\n")
  })

describe("web commands", () => {
  it.scopedLive("scrape, crawl and map print the spec's shapes with --json", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const scraped = JSON.parse(yield* run(scrapeCommand, ["--json", "--allow-private", `${site.origin}/about`]))
      expect(scraped.success).toBe(true)
      expect(scraped.data.metadata.title).toBe("About")
      expect(scraped.data.markdown).toContain("# About")

      const refused = yield* Effect.flip(run(scrapeCommand, [`${site.origin}/about`]))
      expect(refused).toMatchObject({ _tag: "BadRequest", code: "blocked" })
      // printed in the command line's terms; a server's refusal (naming serve's flag) as it is
      expect(forCli((refused as { message: string }).message)).toContain("(allow them with --allow-private)")
      const fromServer = "are blocked (allow them with allowPrivate or allowHosts, the LocalWeb options, or with effect-rag serve --allow-private)"
      expect(forCli(fromServer)).toBe(fromServer)

      const job = JSON.parse(
        yield* run(crawlCommand, ["--max-depth", "0", "--json", "--allow-private", `${site.origin}/`])
      )
      expect(job).toMatchObject({ status: "completed", total: 1, completed: 1, next: null })
      expect(job.data.map((p: { metadata: { sourceURL: string } }) => p.metadata.sourceURL)).toEqual([`${site.origin}/`])

      const mapped = JSON.parse(
        yield* run(mapCommand, ["--limit", "2", "--json", "--allow-private", `${site.origin}/`])
      )
      expect(mapped).toEqual({ success: true, links: [`${site.origin}/`, `${site.origin}/about`] })

      const text = yield* run(crawlCommand, ["--max-depth", "0", "--allow-private", `${site.origin}/`])
      expect(text).toContain("completed: 1 of 1 pages crawled")

      const only = JSON.parse(
        yield* run(crawlCommand, ["--max-depth", "0", "--sitemap", "only", "--json", "--allow-private", `${site.origin}/`])
      )
      expect(only.data.map((p: { metadata: { sourceURL: string } }) => p.metadata.sourceURL)).toEqual([`${site.origin}/`])
      const badMode = yield* Effect.flip(run(crawlCommand, ["--sitemap", "sometimes", "--allow-private", `${site.origin}/`]))
      expect(JSON.stringify(badMode)).toContain("include, skip, only")
    }))

  it.scopedLive("crawl --max-depth 2 of a site with a sitemap: exactly the pages within two link hops that robots.txt allows and that answered 200", () =>
    Effect.gen(function*() {
      const site = yield* startSite
      const job = JSON.parse(yield* run(crawlCommand, ["--max-depth", "2", "--json", "--allow-private", `${site.origin}/`]))
      type Page = { metadata: { sourceURL: string; statusCode?: number; error?: string }; markdown?: string }
      const rel = (pages: Array<Page>) => pages.map((p) => p.metadata.sourceURL.replace(site.origin, "")).sort()
      const ok = job.data.filter((p: Page) => p.metadata.error === undefined)
      // the sitemap lists /team/deeper (four hops) and /orphan (no link reaches it): neither is
      // returned, since links reach beyond two hops; /private/secret is disallowed by robots.txt
      expect(rel(ok)).toEqual(
        ["/", "/about", "/blog/", "/blog/post-1", "/blog/post-2?b=2&a=1", "/files/report.pdf", "/latin1", "/old-page", "/sjis", "/slow", "/team"].sort()
      )
      expect(ok.every((p: Page) => p.metadata.statusCode === 200)).toBe(true)
      // the page that answered 404 is reported with its status, never as a document
      const failed = job.data.filter((p: Page) => p.metadata.error !== undefined)
      expect(failed).toEqual([{ metadata: { sourceURL: `${site.origin}/missing`, statusCode: 404, error: "HTTP 404" } }])
    }))
})
