/**
 * effect-rag: every endpoint of the AI API as a typed Effect service, local engines behind the
 * same Tags, a pluggable vector store (LanceDB by default), and retrieval.
 *
 * Optional parts have their own entry points and optional peer dependencies:
 * `effect-rag/onnx` (ONNX embeddings and rerank), `effect-rag/use-lite` (USE-lite embeddings),
 * `effect-rag/queue` (the ingest queue) and `effect-rag/ai` (the `@effect/ai` adapters).
 *
 * @example
 * ```ts
 * import { Console, Effect, Layer } from "effect"
 * import { Answer, Ingest, LanceDbStore, LocalFiles, Principal } from "effect-rag"
 *
 * const program = Effect.gen(function*() {
 *   // ingest a folder into a collection (idempotent: a rerun skips unchanged documents)
 *   const summary = yield* Ingest.run({ sources: [Ingest.Source.path("docs")], collection: "notes" })
 *   yield* Console.log(`${summary.ingested} ingested, ${summary.chunks.total} chunks`)
 *   // full-text search (hybrid when given an embedder), with cited hits
 *   const result = yield* Answer.query("notes", "How are documents chunked?", { limit: 5 })
 *   for (const hit of result.hits) yield* Console.log(`[${hit.n}] ${hit.source}: ${Answer.snippet(hit.text, result.query)}`)
 * })
 *
 * // the local document engine, LanceDB in a folder on disk, and a reader of every chunk
 * const services = Layer.mergeAll(LocalFiles.layer(), LanceDbStore.layer({ uri: ".effect-rag/db" }), Principal.layerUnrestricted)
 * Effect.runPromise(program.pipe(Effect.provide(services)))
 * ```
 *
 * @since 0.1.0
 */
export * as CallOptions from "./api/CallOptions.js"
export * as Chat from "./api/Chat.js"
export * as Embeddings from "./api/Embeddings.js"
export * as Images from "./api/Images.js"
export * as ApiHttp from "./api/ApiHttp.js"
export * as Models from "./api/Models.js"
export * as Music from "./api/Music.js"
export * as Rerank from "./api/Rerank.js"
export * as Search from "./api/Search.js"
export * as Upload from "./api/Upload.js"
export * as Video from "./api/Video.js"
export * as Web from "./api/Web.js"
export * as WebCrawlScope from "./api/WebCrawlScope.js"
export * as Layers from "./Layers.js"
export * as Wiring from "./Wiring.js"
export * as RagConfig from "./RagConfig.js"
export * as RagError from "./RagError.js"
export * as VectorStore from "./store/VectorStore.js"
export * as LanceDbStore from "./store/LanceDbStore.js"
export * as MemoryStore from "./store/MemoryStore.js"
export * as AdapterKit from "./store/AdapterKit.js"
export * as Retrieve from "./pipeline/Retrieve.js"
export * as Ingest from "./pipeline/Ingest.js"
export * as Answer from "./pipeline/Answer.js"
export * as AnswerCheck from "./pipeline/AnswerCheck.js"
export * as Eval from "./bench/Eval.js"
export * as Principal from "./pipeline/Principal.js"
export * as LocalFiles from "./engines/documents/LocalFiles.js"
export * as LocalWeb from "./engines/web/LocalWeb.js"
export * as Server from "./server/Server.js"
