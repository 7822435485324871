/**
 * A self-hosted server of the API from the local engines, embedded in an app: upload and
 * extraction, the web operations, and USE-lite embeddings behind `POST /v1/embeddings`, on
 * 127.0.0.1:8080. Any client of the API (this library's remote layers included) can use it.
 *
 *   npx tsx examples/self-hosted-server.ts
 *   curl -F file=@report.pdf -F extract_mode=embeddings http://127.0.0.1:8080/upload
 *
 * `effect-rag serve` does the same from the command line.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Layer } from "effect"
import { LocalFiles, LocalWeb, Server } from "effect-rag"
import { UseLiteEmbeddings } from "effect-rag/use-lite"

const services = Layer.mergeAll(
  // one document engine for /upload and for PDFs the web engine finds
  LocalWeb.layer().pipe(Layer.provideMerge(LocalFiles.layer())),
  UseLiteEmbeddings.layer()
)

Layer.launch(Server.layer({ port: 8080, logRequests: true }).pipe(Layer.provide(services))).pipe(NodeRuntime.runMain)
