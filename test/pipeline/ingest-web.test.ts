/**
 * URL and site sources: the ingest pipeline over the local web engine against the real
 * loopback site of the crawler tests, into real LanceDB.
 */
import { afterAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { rmSync } from "node:fs"
import { join } from "node:path"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as LocalWeb from "../../src/engines/web/LocalWeb.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { startSite } from "../engines/web/site.js"
import { documentCounts, dumpTable, tempDir } from "./fixtures/ingest-helpers.js"

const roots: Array<string> = []
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})

describe("Ingest from the web", () => {
  it("ingests a page and a crawled site; a rerun writes nothing", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function*() {
          const site = yield* startSite
          const root = tempDir("web")
          roots.push(root)
          const files = LocalFiles.layer({ isolation: "inline" })
          const layer = Layer.mergeAll(
            files,
            LocalWeb.layer({ allowPrivate: true, politenessDelay: "1 millis" }).pipe(Layer.provide(files)),
            LanceDbStore.layer({ uri: join(root, "db") })
          )
          const request: Ingest.Request = {
            collection: "web",
            sources: [
              Ingest.Source.url(`${site.origin}/blog/post-1#top`),
              Ingest.Source.site(`${site.origin}/team`, { maxDepth: 2 })
            ]
          }
          const first = yield* Ingest.run(request, { batchWindow: 50 }).pipe(Effect.provide(layer))
          // The one broken link of the site is reported with its status, not a failure; the rest is stored.
          expect(first.failures).toEqual([])
          expect(first.brokenPages).toEqual([{ site: `${site.origin}/team`, url: `${site.origin}/missing`, statusCode: 404 }])
          const rows = yield* Effect.promise(() => dumpTable(join(root, "db"), "web"))
          const docs = Object.keys(documentCounts(rows)).sort()
          // The page's fragment is normalised away. The crawl from /team reaches, within two link
          // hops, the team pages and (through the home page) the site's first level, the PDF
          // through the document engine, never the robots.txt-disallowed /private/secret, nor
          // /orphan that only the sitemap lists (links reach further than two hops).
          const paths = ["/", "/about", "/blog", "/blog/post-1", "/files/report.pdf", "/latin1", "/moved", "/sjis", "/slow", "/team", "/team/deep", "/team/deeper"]
          expect(docs).toEqual(paths.map((p) => `${site.origin}${p}`).sort())
          expect(rows.some((r) => r.text.includes("First post."))).toBe(true)
          expect(rows.some((r) => r.text.includes("The bottom."))).toBe(true)

          const second = yield* Ingest.run(request, { batchWindow: 50 }).pipe(Effect.provide(layer))
          expect(second).toMatchObject({ ingested: 0, failed: 0, writes: 0 })
        })
      )
    ))
})
