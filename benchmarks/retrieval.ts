/**
 * `npm run bench:retrieval [-- --dataset DIR] [--json FILE] [--embedder none|use-lite|onnx:DIR|remote]
 *  [--reranker none|remote|onnx:DIR] [--fusion rrf[:K[:W]]|weighted:W] [--fusion-sweep] [--fulltext-sweep]
 *  [--passage-words N]`
 *
 * Runs the retrieval benchmark (src/bench/Runner.ts) on a BEIR folder (default: the shared
 * SciFact, or $EFFECT_RAG_BENCH_DATASET), prints the table and writes the JSON report
 * (default benchmarks/results/retrieval.json).
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { resolve } from "node:path"
import * as Runner from "../src/bench/Runner.js"
import { fullTextSweep, fusionSweep, parseFusion, resolveEmbedder, resolveReranker } from "../src/cli/commands/bench.js"
import { sharedPath } from "../src/internal/shared.js"
import { resultsPath, writeReport } from "./internal/results.js"

const args = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? undefined : args[i + 1]
}
const dataset = resolve(flag("dataset") ?? process.env["EFFECT_RAG_BENCH_DATASET"] ?? sharedPath("bench", "scifact"))
const jsonPath = resolve(flag("json") ?? resultsPath("retrieval"))
const embedderSpec = flag("embedder") ?? "none"
const passageWords = Number(flag("passage-words") ?? "0")
const rerankerSpec = flag("reranker") ?? "none"
const fusionSpec = flag("fusion")
const fusion = fusionSpec === undefined ? undefined : parseFusion(fusionSpec)
if (fusionSpec !== undefined && fusion === undefined) {
  console.error(`--fusion ${fusionSpec}: expected rrf[:K[:TEXT_WEIGHT]] or weighted:W`)
  process.exit(2)
}
const sweep = args.includes("--fusion-sweep")
const textSweep = args.includes("--fulltext-sweep")

const program = Effect.gen(function*() {
  const embedder = yield* resolveEmbedder(embedderSpec)
  const reranker = yield* resolveReranker(rerankerSpec)
  const report = yield* Runner.run({
    dataset,
    passageWords,
    embedder: embedder.embedder,
    noEmbedderReason: embedder.reason,
    reranker: reranker.reranker,
    noRerankerReason: reranker.reason,
    fusion,
    fusionSweep: sweep ? fusionSweep : undefined,
    fullTextSweep: textSweep ? fullTextSweep : undefined,
    log: (line) => process.stderr.write(`\r${line}`.padEnd(60))
  })
  process.stderr.write("\n")
  console.log(Runner.table(report))
  writeReport(jsonPath, report)
  console.log(`wrote ${jsonPath}`)
}).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

NodeRuntime.runMain(program)
