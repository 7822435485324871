/**
 * `effect-rag bench retrieval --dataset DIR [--json FILE] [--embedder none|remote|use-lite|onnx:DIR]
 * [--passage-words N]`: the retrieval benchmark of `src/bench/Runner.ts`.
 *
 * Embedders (`--embedder`, default `none`: full-text modes only) and rerankers (`--reranker`,
 * default `none`) are built by name by the wiring (`Wiring.resolveEmbedder`,
 * `Wiring.resolveReranker`: `none`, `remote`, `use-lite`, `onnx:DIR`). An embedder or reranker
 * that cannot be built is never replaced by another: its modes are reported as skipped with the
 * reason.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Effect from "effect/Effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { sharedPath } from "../../internal/shared.js"
import type * as Retrieve from "../../pipeline/Retrieve.js"
import { defaultTextWeight } from "../../store/Fusion.js"
import type { Fusion } from "../../store/VectorStore.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

/**
 * Parses a fusion: `rrf` or `rrf:K` or `rrf:K:TEXT_WEIGHT` (reciprocal rank fusion, the text
 * list weighted), or `weighted:W` (min-max-normalised scores, W on full text).
 */
export const parseFusion = (spec: string): Fusion | undefined => {
  const [kind, a, b] = spec.split(":")
  const num = (x: string | undefined, d: number) => (x === undefined || x === "" ? d : Number(x))
  if (kind === "rrf") {
    const k = num(a, 60)
    const textWeight = num(b, 1)
    return Number.isFinite(k) && k > 0 && Number.isFinite(textWeight) && textWeight >= 0 ? { _tag: "Rrf", k, textWeight } : undefined
  }
  if (kind === "weighted") {
    const textWeight = num(a, defaultTextWeight)
    return Number.isFinite(textWeight) && textWeight >= 0 && textWeight <= 1 ? { _tag: "Weighted", textWeight } : undefined
  }
  return undefined
}

/** The fusions measured by `--fusion-sweep`. */
export const fusionSweep: ReadonlyArray<{ readonly name: string; readonly fusion: Fusion }> = [
  "rrf:60",
  "rrf:60:2",
  "rrf:60:4",
  "weighted:0.5",
  "weighted:0.6",
  "weighted:0.7",
  "weighted:0.8",
  "weighted:0.9"
].map((name) => ({ name, fusion: parseFusion(name)! }))

/**
 * The full-text grid behind the defaults (`--fulltext-sweep` of `benchmarks/retrieval.ts`): title
 * boost, then RM3 as `docs/terms/original weight`, around the default (title 0.3, RM3 10/20/0.7).
 */
export const fullTextSweep: ReadonlyArray<{ readonly name: string; readonly fullText: Retrieve.FullTextOptions }> = [
  { name: "title 0.3", fullText: { titleBoost: 0.3, feedback: false } },
  ...([
    [5, 10, 0.7],
    [10, 10, 0.7],
    [5, 20, 0.7],
    [10, 15, 0.7],
    [10, 30, 0.7],
    [10, 20, 0.6],
    [10, 20, 0.8]
  ] as const).map(([docs, terms, originalWeight]) => ({
    name: `title 0.3 + rm3 ${docs}/${terms}/${originalWeight}`,
    fullText: { titleBoost: 0.3, feedback: { docs, terms, originalWeight } }
  })),
  { name: "title 0.2 + rm3 10/20/0.7", fullText: { titleBoost: 0.2 } },
  { name: "title 0.5 + rm3 10/20/0.7", fullText: { titleBoost: 0.5 } }
]

const dataset = Options.directory("dataset").pipe(
  Options.withDefault(process.env["EFFECT_RAG_BENCH_DATASET"] ?? sharedPath("bench", "scifact")),
  Options.withDescription("a BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/test.tsv)")
)
const json = Options.file("json").pipe(Options.optional, Options.withDescription("write the JSON report here"))
const embedder = Options.text("embedder").pipe(
  Options.withDefault("none"),
  Options.withDescription("none | remote | use-lite | onnx:DIR")
)
const reranker = Options.text("reranker").pipe(
  Options.withDefault("none"),
  Options.withDescription("none | remote | onnx:DIR (a cross-encoder folder)")
)
const fusion = Options.text("fusion").pipe(
  Options.optional,
  Options.withDescription("hybrid fusion: rrf[:K[:TEXT_WEIGHT]] | weighted:W (default: the store's)")
)
const sweep = Options.boolean("fusion-sweep").pipe(
  Options.withDescription("also measure hybrid with several fusions on the same index")
)
const passageWords = Options.integer("passage-words").pipe(
  Options.withDefault(0),
  Options.withDescription("split documents into passages of about N words (0: whole documents)")
)

/** `bench retrieval`. */
export const retrieval = Command.make(
  "retrieval",
  { dataset, json, embedder, reranker, fusion, sweep, passageWords },
  (o) =>
  Effect.scoped(Effect.gen(function*() {
    const f = o.fusion._tag === "Some" ? parseFusion(o.fusion.value) : undefined
    if (o.fusion._tag === "Some" && f === undefined) {
      return yield* Effect.fail(new Error(`--fusion ${o.fusion.value}: expected rrf[:K[:TEXT_WEIGHT]] or weighted:W`))
    }
    const Runner = yield* Shared.load(() => import("../../bench/Runner.js"))
    const e = yield* Shared.asUsage("bench")(Wiring.resolveEmbedder(o.embedder))
    const r = yield* Shared.asUsage("bench")(Wiring.resolveReranker(o.reranker))
    const report = yield* Runner.run({
      dataset: resolve(o.dataset),
      passageWords: o.passageWords,
      embedder: e.embedder,
      noEmbedderReason: e.reason,
      reranker: r.reranker,
      noRerankerReason: r.reason,
      fusion: f,
      fusionSweep: o.sweep ? fusionSweep : undefined
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
  }))).pipe(Command.withDescription("retrieval quality and speed on a BEIR folder"))

/** `bench` with its subcommands. */
export const command = Command.make("bench").pipe(
  Command.withDescription("benchmarks"),
  Command.withSubcommands([retrieval])
)
