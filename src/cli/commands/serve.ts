/**
 * `effect-rag serve [--host H] [--port P] [--embedder none|use-lite|onnx:DIR|remote]
 * [--reranker none|onnx:DIR|remote] [--allow-private] [--config FILE]`: the self-hosted server of the API
 * (src/server/).
 *
 * It serves the local document engine (or the remote one with `EFFECT_RAG_UPLOAD=remote`), the
 * local web engine, the chosen embedder and reranker, and a model list of what it serves. With
 * `EFFECT_RAG_SERVER_KEY` set, every request needs `Authorization: Bearer <that key>`; without
 * it the server is open, so it binds to 127.0.0.1 unless `--host` says otherwise. An embedder or
 * reranker that was asked for and cannot load stops the start with its reason; endpoints with
 * nothing behind them answer 501.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import { Config, Console, Context, Effect, Layer, Option } from "effect"
import * as Embeddings from "../../api/Embeddings.js"
import * as Models from "../../api/Models.js"
import * as Rerank from "../../api/Rerank.js"
import * as LocalWeb from "../../engines/LocalWeb.js"
import * as Layers from "../../Layers.js"
import * as RagError from "../../RagError.js"
import * as Server from "../../server/Server.js"
import * as Shared from "../options.js"
import { resolveEmbedder, resolveReranker } from "./bench.js"

const host = Options.text("host").pipe(Options.withDefault("127.0.0.1"), Options.withDescription("address to bind"))
const port = Options.integer("port").pipe(Options.withDefault(8080), Options.withDescription("port (0: any free port)"))
const embedder = Options.text("embedder").pipe(
  Options.withDefault("none"),
  Options.withDescription("embedder behind POST /v1/embeddings: none, use-lite, onnx:DIR, remote")
)
const reranker = Options.text("reranker").pipe(
  Options.withDefault("none"),
  Options.withDescription("reranker behind POST /v1/rerank: none, onnx:DIR, remote")
)

const allowPrivate = Options.boolean("allow-private").pipe(
  Options.withDescription("let the web engine fetch private, loopback and link-local addresses (off: a client cannot make the server reach its own network)")
)

const refuse = (message: string) => new RagError.ConfigurationError({ endpoint: "serve", message })

/** The `serve` command. */
export const command = Command.make("serve", { host, port, embedder, reranker, allowPrivate, config: Shared.config }, (o) =>
  Effect.gen(function*() {
    const apiKey = yield* Config.option(Config.redacted("EFFECT_RAG_SERVER_KEY"))
    const e = yield* resolveEmbedder(o.embedder)
    if (o.embedder !== "none" && e.embedder === undefined) return yield* refuse(e.reason ?? o.embedder)
    const r = yield* resolveReranker(o.reranker)
    if (o.reranker !== "none" && r.reranker === undefined) return yield* refuse(r.reason ?? o.reranker)
    const models: Array<Models.ModelRecord> = [
      ...(e.embedder ? [{ id: e.embedder.service.defaultModel, object: "model", owned_by: "effect-rag", type: "embedding" }] : []),
      ...(r.reranker ? [{ id: r.reranker.service.defaultModel, object: "model", owned_by: "effect-rag", type: "rerank" }] : [])
    ]
    const services = Layer.mergeAll(
      // one document engine, shared by /upload and by the web engine (PDFs found while crawling)
      LocalWeb.layer({ allowPrivate: o.allowPrivate }).pipe(Layer.provideMerge(Layers.uploadFromConfig)),
      Models.layerList(models),
      e.embedder ? Layer.succeed(Embeddings.Embeddings, e.embedder.service) : Layer.empty,
      r.reranker ? Layer.succeed(Rerank.Rerank, r.reranker.service) : Layer.empty
    )
    const served = [
      "POST /upload",
      "POST /v1/files",
      "POST /v1/crawl, GET|DELETE /v1/crawl/{id}, POST /v1/map, POST /v1/scrape, POST /v1/web",
      "GET /v1/models",
      ...(e.embedder ? [`POST /v1/embeddings (${e.embedder.id})`] : []),
      ...(r.reranker ? [`POST /v1/rerank (${r.reranker.id})`] : [])
    ]
    yield* Console.error(
      `effect-rag serve: ${Option.isSome(apiKey) ? "key required (EFFECT_RAG_SERVER_KEY)" : "open (no EFFECT_RAG_SERVER_KEY)"}; serving ${served.join("; ")}`
    )
    // The server serves what is in its context. The CLI's context also holds the remote
    // services (for the other commands), so the server starts from an empty one: it serves
    // exactly the services above, never a remote API by accident.
    return yield* Layer.launch(
      Server.layer({ host: o.host, port: o.port, apiKey: Option.getOrUndefined(apiKey), logRequests: true }).pipe(
        Layer.provide(services)
      )
    ).pipe(Effect.mapInputContext((_: Context.Context<never>) => Context.empty()))
  }).pipe(Shared.withConfigFile(o.config))).pipe(Command.withDescription("Serve the API from the local engines (src/server/): upload, web, embeddings, rerank, models."))
