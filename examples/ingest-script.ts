/**
 * An ingestion script: files and folders into a LanceDB collection through the local engines
 * (extraction, chunking), full text only (no embedder, no network), then one query to check.
 *
 *   npx tsx examples/ingest-script.ts ../shared/fixtures/docs "How are documents chunked?"
 *
 * Re-running it over the same input writes nothing (documents are keyed by source and content
 * hash); `--prune`-like deletion of vanished files is `prune: true` in the request.
 * Database: `EFFECT_RAG_DB` (default `.effect-rag/db`; an `s3://…` URI works too, see
 * docs/stores.md), collection `default`, the same as the CLI (`effect-rag query … --db
 * .effect-rag/db` reads it).
 */
import { Console, Effect, Layer } from "effect"
import { Answer, Ingest, LanceDbStore, LocalFiles, Principal } from "effect-rag"

const args = process.argv.slice(2)
const question = args.length > 1 ? args.pop() : undefined
const collection = "default"

const program = Effect.gen(function*() {
  if (args.length === 0) return yield* Console.error("usage: tsx examples/ingest-script.ts PATH... [QUESTION]")
  const summary = yield* Ingest.run(
    { sources: args.map(Ingest.Source.parse), collection, exclude: ["node_modules", ".git"] },
    { onProgress: (e) => (e._tag === "Failed" ? Console.error(`failed: ${e.source}: ${e.error._tag}`) : Effect.void) }
  )
  yield* Console.log(
    `${summary.documents} document(s): ${summary.ingested} ingested, ${summary.skipped} unchanged, ${summary.failed} failed; ` +
      `${summary.chunks.total} chunks in ${collection}; ${summary.writes} write(s) in ${summary.durationMs} ms`
  )
  if (question !== undefined) {
    const result = yield* Answer.query(collection, question, { limit: 3 })
    for (const h of result.hits) {
      yield* Console.log(`[${h.n}] ${h.score.toFixed(3)} ${h.source}${h.page !== undefined ? `, page ${h.page}` : ""}\n    ${Answer.snippet(h.text, question)}`)
    }
  }
})

// EFFECT_RAG_DB (a folder or s3://…, with EFFECT_RAG_S3_* / AWS_* settings), as the CLI reads it
const services = Layer.mergeAll(LocalFiles.layer(), LanceDbStore.layerConfig, Principal.layerUnrestricted)

Effect.runPromise(program.pipe(Effect.provide(services))).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error))
  process.exitCode = 1
})
