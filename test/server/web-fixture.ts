/**
 * The set-up shared by the server's web tests (`web.test.ts`, `web-remote.test.ts`): the local
 * web engine as a server serves it, crawling the test website (`test/engines/web/site.ts`) over
 * loopback, with a document engine for the site's PDF.
 */
import { Effect, Layer } from "effect"
import * as Upload from "../../src/api/Upload.js"
import * as LocalWeb from "../../src/engines/web/LocalWeb.js"
import * as RagError from "../../src/RagError.js"

/** A document engine for the site's PDF (the web engine hands it non-HTML pages). */
export const upload = Layer.succeed(
  Upload.Upload,
  Upload.Upload.of({
    extract: (file) =>
      Effect.succeed({ status: true, content: `Extracted ${file.name} (${file.data.byteLength} bytes)`, type: "pdf", error: "" }),
    extractChunks: () => Effect.fail(new RagError.BadRequest({ endpoint: "extractChunks", message: "not used by the web engine" })),
    files: () => Effect.fail(new RagError.BadRequest({ endpoint: "files", message: "not used by the web engine" }))
  })
)

/**
 * Loopback allowed, short delays, two pages per crawl record (so every crawl crosses `next`
 * links), three pages read per map.
 */
export const engineOptions: LocalWeb.Options = {
  allowHosts: ["127.0.0.1"],
  politenessDelay: "2 millis",
  pageTimeout: "2 seconds",
  concurrency: 4,
  pageSize: 2,
  mapMaxPages: 3
}

/** The local web engine with {@link engineOptions}, its documents read by {@link upload}. */
export const localWeb = LocalWeb.layer(engineOptions).pipe(Layer.provide(upload))
