/**
 * `effect-rag bench retrieval --dataset DIR [--json FILE] [--embedder none|remote|use-lite|onnx:DIR]
 * [--passage-words N]`: the retrieval benchmark of `src/bench/Runner.ts`.
 *
 * Embedders: `none` (default; full-text modes only), `remote` (the `/v1/embeddings` layer of the
 * client, configured from `EFFECT_RAG_*`; model from `EFFECT_RAG_EMBEDDING_MODEL`, dimension
 * from `EFFECT_RAG_EMBEDDING_DIMENSION`). `use-lite` and `onnx:DIR` are reported as skipped
 * with the reason until their local layers exist.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Layer } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import * as Embeddings from "../../api/Embeddings.js"
import * as ApiHttp from "../../api/internal/ApiHttp.js"
import * as Runner from "../../bench/Runner.js"
import { sharedPath } from "../../internal/shared.js"
import * as RagConfig from "../../RagConfig.js"

/** An embedder chosen by name, or the reason there is none. */
export interface ResolvedEmbedder {
  readonly embedder: Runner.Options["embedder"]
  readonly reason: string | undefined
}

/**
 * Resolves `--embedder`. Never falls back silently: an embedder that cannot be built yields no
 * embedder and the reason, which the benchmark prints for the skipped modes.
 */
export const resolveEmbedder = (spec: string): Effect.Effect<ResolvedEmbedder> =>
  Effect.gen(function*() {
    if (spec === "none") return { embedder: undefined, reason: "no embedder configured (--embedder none)" }
    if (spec === "remote") {
      const model = process.env["EFFECT_RAG_EMBEDDING_MODEL"]
      const dimension = Number(process.env["EFFECT_RAG_EMBEDDING_DIMENSION"] ?? "NaN")
      if (!Number.isInteger(dimension) || dimension <= 0) {
        return {
          embedder: undefined,
          reason: "--embedder remote needs EFFECT_RAG_EMBEDDING_DIMENSION (and EFFECT_RAG_EMBEDDING_MODEL) to create the collection"
        }
      }
      const service = yield* Embeddings.make({ model, dimension }).pipe(
        Effect.provide(ApiHttp.layer.pipe(Layer.provide(RagConfig.layerConfig))),
        Effect.either
      )
      if (service._tag === "Left") return { embedder: undefined, reason: `remote embedder: ${String(service.left)}` }
      return { embedder: { id: `remote:${service.right.defaultModel}`, service: service.right }, reason: undefined }
    }
    if (spec === "use-lite" || spec.startsWith("onnx:")) {
      return { embedder: undefined, reason: `embedder ${spec}: its local layer is not available in this build` }
    }
    return { embedder: undefined, reason: `unknown embedder ${JSON.stringify(spec)} (none, remote, use-lite, onnx:DIR)` }
  })

const dataset = Options.directory("dataset").pipe(
  Options.withDefault(process.env["EFFECT_RAG_BENCH_DATASET"] ?? sharedPath("bench", "scifact")),
  Options.withDescription("a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
)
const json = Options.file("json").pipe(Options.optional, Options.withDescription("write the JSON report here"))
const embedder = Options.text("embedder").pipe(
  Options.withDefault("none"),
  Options.withDescription("none | remote | use-lite | onnx:DIR")
)
const passageWords = Options.integer("passage-words").pipe(
  Options.withDefault(0),
  Options.withDescription("split documents into passages of about N words (0: whole documents)")
)

/** `bench retrieval`. */
export const retrieval = Command.make("retrieval", { dataset, json, embedder, passageWords }, (o) =>
  Effect.gen(function*() {
    const e = yield* resolveEmbedder(o.embedder)
    const report = yield* Runner.run({
      dataset: resolve(o.dataset),
      passageWords: o.passageWords,
      embedder: e.embedder,
      noEmbedderReason: e.reason
    })
    yield* Effect.sync(() => console.log(Runner.table(report)))
    if (o.json._tag === "Some") {
      const path = resolve(o.json.value)
      yield* Effect.sync(() => {
        mkdirSync(dirname(path), { recursive: true })
        writeFileSync(path, JSON.stringify(report, null, 2) + "\n")
        console.log(`wrote ${path}`)
      })
    }
  })).pipe(Command.withDescription("retrieval quality and speed on a BEIR folder"))

/** `bench` with its subcommands. */
export const command = Command.make("bench").pipe(
  Command.withDescription("benchmarks"),
  Command.withSubcommands([retrieval])
)
