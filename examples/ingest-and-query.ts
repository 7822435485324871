/**
 * A complete program: ingest a folder into a LanceDB collection with the local engines, then
 * search it and print cited hits. No API key, no network. It imports the package by name, as an
 * application does (`npm install effect-rag effect@3`); `npm test` type-checks it.
 *
 *   npx tsx examples/ingest-and-query.ts ../shared/fixtures/docs "trace-based compilation"
 */
import { Console, Effect, Layer } from "effect"
import { Answer, Ingest, LanceDbStore, LocalFiles, Principal } from "effect-rag"

const [folder = "docs", question = "How are documents chunked?"] = process.argv.slice(2)

const program = Effect.gen(function*() {
  // 1. Ingest: sources (paths, URLs, sites) into a collection. Idempotent: a rerun skips
  //    unchanged documents; one bad document is reported and the run goes on.
  const summary = yield* Ingest.run(
    {
      sources: [Ingest.Source.path(folder)], // also Ingest.Source.url(...), Ingest.Source.site(...)
      collection: "notes",
      exclude: ["node_modules", ".git"]
    },
    {
      // default: no embedder (full-text BM25 only); pass { id, service } to store vectors too
      onProgress: (event) => event._tag === "Failed" ? Console.error(`skipped ${event.source}: ${event.error.message}`) : Effect.void
    }
  )
  yield* Console.log(`${summary.ingested} ingested, ${summary.skipped} unchanged, ${summary.failed} failed; ${summary.chunks.total} chunks`)

  // 2. Query: full text by default; hybrid when given an embedder and the collection has vectors.
  const result = yield* Answer.query("notes", question, { limit: 5 })
  for (const hit of result.hits) {
    const where = [hit.source, hit.page !== undefined ? `page ${hit.page}` : undefined].filter(Boolean).join(", ")
    yield* Console.log(`[${hit.n}] ${hit.score.toFixed(3)} ${where}\n    ${Answer.snippet(hit.text, question)}`)
  }
})

// The embedded defaults: the local document engine (extraction in worker processes, small plain
// text in this one) and LanceDB in a folder on disk. Swap LocalFiles.layer() for the remote Upload layer to extract through
// the API instead; swap LanceDbStore for another VectorStore adapter.
// the local user reads every chunk (Principal.layer(Principal.make(id, groups)) restricts a query)
const services = Layer.mergeAll(LocalFiles.layer(), LanceDbStore.layer({ uri: ".effect-rag/example-db" }), Principal.layerUnrestricted)

Effect.runPromise(program.pipe(Effect.provide(services))).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error))
  process.exitCode = 1
})
