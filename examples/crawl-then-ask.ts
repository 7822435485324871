/**
 * Crawl a site with the local web engine, ingest its pages into a LanceDB collection, and ask
 * a question about it: the whole pipeline in one program.
 *
 *   npx tsx examples/crawl-then-ask.ts https://example.com "What is this site about?"
 *
 * Offline parts: crawling (the local engine honours robots.txt and a politeness delay),
 * extraction, chunking and LanceDB. The answer needs a chat model
 * (`EFFECT_RAG_CHAT_MODEL`, `EFFECT_RAG_BASE_URL`, `EFFECT_RAG_API_KEY`); without one the
 * program prints the cited retrieval results (`Answer.query`) instead, which need nothing.
 *
 * Options through the environment: `EFFECT_RAG_DB` (default `.effect-rag/crawl-db`),
 * `CRAWL_LIMIT` (pages, default 20), `CRAWL_ALLOW_PRIVATE=true` to crawl a loopback/LAN site.
 */
import { Console, Effect, Layer, Stream } from "effect"
import { Answer, ApiHttp, Chat, Ingest, LanceDbStore, LocalFiles, LocalWeb, Principal, RagConfig } from "effect-rag"

const [site, question] = process.argv.slice(2)
const collection = "site"
const chatModel = process.env["EFFECT_RAG_CHAT_MODEL"]

const program = Effect.gen(function*() {
  if (site === undefined || question === undefined) {
    return yield* Console.error("usage: tsx examples/crawl-then-ask.ts URL QUESTION")
  }
  // 1. crawl + ingest (idempotent: a second run skips unchanged pages)
  const summary = yield* Ingest.run(
    { sources: [Ingest.Source.site(site, { limit: Number(process.env["CRAWL_LIMIT"] ?? 20) })], collection },
    { onProgress: (e) => (e._tag === "Ingested" ? Console.error(`ingested ${e.source} (${e.chunks} chunks)`) : Effect.void) }
  )
  yield* Console.log(`${summary.ingested} page(s) ingested, ${summary.skipped} unchanged, ${summary.failed} failed; ${summary.chunks.total} chunks`)

  // 2. answer (streamed), or the cited retrieval results without a chat model
  if (chatModel === undefined) {
    const result = yield* Answer.query(collection, question, { limit: 5 })
    for (const h of result.hits) yield* Console.log(`[${h.n}] ${h.score.toFixed(3)} ${h.source}\n    ${Answer.snippet(h.text, question)}`)
    return
  }
  const answer = yield* Answer.askStream(collection, question).pipe(
    Stream.tap((e) => (e._tag === "Delta" ? Effect.sync(() => process.stdout.write(e.text)) : Effect.void)),
    Stream.runLast,
    Effect.flatMap((last) => (last._tag === "Some" && last.value._tag === "Done" ? Effect.succeed(last.value.answer) : Effect.dieMessage("no answer")))
  )
  yield* Console.log("\n\nSources:")
  for (const s of answer.cited) yield* Console.log(`[${s.n}] ${s.source}${s.title ? ` (${s.title})` : ""}`)
})

const upload = LocalFiles.layer()
const services = Layer.mergeAll(
  upload,
  // a local script reads every chunk; a multi-user program provides Principal.layer(Principal.make(id, groups))
  Principal.layerUnrestricted,
  LocalWeb.layer({ allowPrivate: process.env["CRAWL_ALLOW_PRIVATE"] === "true" }).pipe(Layer.provide(upload)),
  LanceDbStore.layerAt(process.env["EFFECT_RAG_DB"] ?? ".effect-rag/crawl-db"),
  Chat.layer({ model: chatModel }).pipe(Layer.provide(ApiHttp.layer), Layer.provide(RagConfig.layerConfig))
)

Effect.runPromise(program.pipe(Effect.provide(services))).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error))
  process.exitCode = 1
})
