/**
 * `effect-rag eval build` and `effect-rag eval run`: retrieval measured on your own collection
 * (`src/bench/Eval.ts`).
 *
 * - `eval build [--db DIR] [--collection C] --out DIR [--size N] [--seed S] [--method
 *   auto|known-item|generated] [--model M] [--questions N]`: a BEIR folder of judged queries made
 *   from the collection. `auto` (the default) asks the chat model when one is configured
 *   (`--model`, else `EFFECT_RAG_CHAT_MODEL`), else makes known-item queries offline.
 * - `eval run [--db DIR] --set DIR [--modes fulltext,hybrid,...] [--collections A,B]
 *   [--embedder ...] [--reranker ...] [--json FILE] [--baseline FILE] [--answers N [--judge] --model M]`:
 *   the modes side by side with 95 % paired-bootstrap intervals; exit 4 when `--baseline` shows
 *   a significant regression; `--answers N` also asks N questions and reports citation precision.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import type * as Eval from "../../bench/Eval.js"
import type * as Retrieve from "../../pipeline/Retrieve.js"
import { VectorStore } from "../../store/VectorStore.js"
import * as Shared from "../options.js"
import { resolveRetrieval } from "../retrieval.js"

const evalModule = Shared.load(() => import("../../bench/Eval.js"))

// =============================================================================
// eval build
// =============================================================================

const positive = (name: string, n: number) =>
  Number.isInteger(n) && n > 0 ? Effect.succeed(n) : Effect.fail(new Shared.UsageError(`--${name} must be a positive integer`))

/** The remote Chat layer, configured from the environment and the config file. */
const chatLayer = (model: string) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const Chat = yield* Shared.load(() => import("../../api/Chat.js"))
    const ApiHttp = yield* Shared.load(() => import("../../api/ApiHttp.js"))
    const RagConfig = yield* Shared.load(() => import("../../RagConfig.js"))
    return Chat.layer({ model }).pipe(Layer.provide(ApiHttp.layer), Layer.provide(RagConfig.layerConfig))
  }))

/** `--model`, of both subcommands: what the model is for, and its default. */
const modelOption = (what: string) =>
  Options.text("model").pipe(Options.withPseudoName("MODEL"), Options.optional, Options.withDescription(`${what} (default: $EFFECT_RAG_CHAT_MODEL)`))

/** The chat model: `--model`, else `EFFECT_RAG_CHAT_MODEL` (environment or config file). */
const chatModel = (given: Option.Option<string>) => Option.isSome(given) ? Effect.succeed(given) : Shared.setting("EFFECT_RAG_CHAT_MODEL")

/** `eval build`. */
export const buildCommand = Command.make(
  "build",
  {
    out: Options.text("out").pipe(Options.withPseudoName("DIR"), Options.withDescription("the folder to write the set to (BEIR layout + manifest.json)")),
    size: Options.integer("size").pipe(Options.withPseudoName("N"), Options.withDefault(50), Options.withDescription("chunks to sample (default 50)")),
    seed: Options.integer("seed").pipe(Options.withPseudoName("S"), Options.withDefault(1), Options.withDescription("seed of the sampling (default 1)")),
    method: Options.choice("method", ["auto", "known-item", "generated"]).pipe(
      Options.withDefault("auto" as const),
      Options.withDescription("auto (default: generated when a chat model is configured, else known-item) | known-item | generated")
    ),
    model: modelOption("the chat model that writes questions"),
    questions: Options.integer("questions").pipe(Options.withPseudoName("N"), Options.withDefault(1), Options.withDescription("questions per chunk with a model (default 1)")),
    db: Shared.db,
    collection: Shared.collection,
    config: Shared.config
  },
  (args) =>
    Effect.gen(function*() {
      const size = yield* positive("size", args.size)
      const questions = yield* positive("questions", args.questions)
      const resolved = yield* resolveRetrieval({
        db: args.db,
        collection: args.collection,
        limit: 10,
        mode: Option.none(),
        filter: [],
        embedder: Option.some("none"),
        reranker: Option.some("none")
      })
      const model = yield* chatModel(args.model)
      const method = args.method === "auto" ? (Option.isSome(model) ? "generated" : "known-item") : args.method
      if (method === "generated" && Option.isNone(model)) {
        return yield* Effect.fail(new Shared.UsageError("--method generated needs a chat model: pass --model or set EFFECT_RAG_CHAT_MODEL"))
      }
      const Eval = yield* evalModule
      const out = resolve(args.out)
      const set = yield* Effect.gen(function*() {
        const c = yield* Effect.flatMap(VectorStore, (s) => s.open(resolved.collection))
        return method === "generated"
          ? yield* Eval.buildWithModel(c, { size, seed: args.seed, questionsPerChunk: questions, model: Option.getOrUndefined(model) }).pipe(
            Effect.provide(chatLayer(Option.getOrElse(model, () => "")))
          )
          : yield* Eval.build(c, { size, seed: args.seed })
      }).pipe(Effect.provide(resolved.store))
      yield* Eval.writeSet(out, set)
      const m = set.manifest
      const rejected = Object.entries(m.rejected).filter(([, n]) => n > 0).map(([why, n]) => `${n} ${why}`)
      yield* Console.log(
        [
          `wrote ${m.queries} ${m.method} queries from ${m.sampledChunks} chunks (${m.documents} documents, ${m.chunks} chunks in ${m.collection}) to ${out}`,
          m.method === "generated"
            ? `model ${m.model}, prompt ${m.promptVersion}, seed ${m.seed}${rejected.length > 0 ? `; rejected: ${rejected.join(", ")}` : ""}`
            : `seed ${m.seed}; known-item queries (distinctive words of each chunk) are easier than real questions and favour full text`
        ].join("\n")
      )
    }).pipe(Shared.withConfigFile(args.config), Shared.exitOnUsage)
).pipe(Command.withDescription("Build a judged test set (BEIR folder) from a collection."))

// =============================================================================
// eval run
// =============================================================================

/** The modes `eval run` knows; each may take `+rerank`. */
export const modes = ["fulltext", "fulltext-plain", "vector", "hybrid"] as const

const list = (s: string) => s.split(",").map((x) => x.trim()).filter((x) => x !== "")

const settings0 = (r: Eval.RunReport) => `${r.settings[0]!.name} on ${r.settings[0]!.collection}`

/** `eval run`. */
export const runCommand = Command.make(
  "run",
  {
    set: Options.text("set").pipe(Options.withPseudoName("DIR"), Options.withDescription("the set folder (from eval build, or any BEIR folder)")),
    modes: Options.text("modes").pipe(
      Options.withPseudoName("LIST"),
      Options.withDefault("fulltext"),
      Options.withDescription("comma-separated: fulltext, fulltext-plain, vector, hybrid, each optionally +rerank (default fulltext); the first is the reference")
    ),
    collections: Options.text("collections").pipe(
      Options.withPseudoName("A,B"),
      Options.optional,
      Options.withDescription("collections to run on (default: --collection, else the set's)")
    ),
    embedder: Shared.embedder("needed by vector and hybrid; must be the collections'"),
    reranker: Options.text("reranker").pipe(Options.withPseudoName("NAME"), Options.optional, Options.withDescription("none | remote | onnx:DIR: needed by +rerank modes")),
    recallK: Options.integer("recall-k").pipe(Options.withPseudoName("K"), Options.withDefault(100), Options.withDescription("the k of Recall@k (default 100)")),
    resamples: Options.integer("resamples").pipe(Options.withPseudoName("N"), Options.withDefault(1000), Options.withDescription("bootstrap resamples (default 1000)")),
    seed: Options.integer("seed").pipe(Options.withPseudoName("S"), Options.withDefault(1), Options.withDescription("bootstrap seed (default 1)")),
    json: Options.text("json").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("also write the run (per-query figures included) as JSON")),
    baseline: Options.text("baseline").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      Options.withDescription("a run saved with --json: exit 4 when a metric is significantly lower")
    ),
    answers: Options.integer("answers").pipe(
      Options.withPseudoName("N"),
      Options.withDefault(0),
      Options.withDescription("also ask the first N questions with the chat model (first mode, first collection) and report citation precision (default 0: none)")
    ),
    model: modelOption("the chat model of --answers"),
    judge: Options.boolean("judge").pipe(
      Options.withDescription("with --answers: the chat model judges each cited sentence (one call per sentence) instead of the lexical support score")
    ),
    db: Shared.db,
    collection: Shared.collection,
    config: Shared.config
  },
  (args) =>
    Effect.gen(function*() {
      const recallK = yield* positive("recall-k", args.recallK)
      if (!Number.isInteger(args.answers) || args.answers < 0) return yield* Effect.fail(new Shared.UsageError("--answers must be 0 or a positive integer"))
      const model = yield* chatModel(args.model)
      if (args.answers > 0 && Option.isNone(model)) {
        return yield* Effect.fail(new Shared.UsageError("--answers needs a chat model: pass --model or set EFFECT_RAG_CHAT_MODEL"))
      }
      if (args.judge && args.answers === 0) return yield* Effect.fail(new Shared.UsageError("--judge goes with --answers N"))
      const resamples = yield* positive("resamples", args.resamples)
      const wanted = list(args.modes)
      if (wanted.length === 0) return yield* Effect.fail(new Shared.UsageError("--modes is empty"))
      for (const m of wanted) {
        if (!(modes as ReadonlyArray<string>).includes(m.replace(/\+rerank$/, ""))) {
          return yield* Effect.fail(new Shared.UsageError(`--modes: unknown mode ${JSON.stringify(m)} (${modes.join(", ")}, each optionally +rerank)`))
        }
      }
      // the baseline is read first: a bad path is a usage error before anything runs
      const saved = yield* Option.match(args.baseline, {
        onNone: () => Effect.succeed(undefined),
        onSome: (file) =>
          Effect.try({
            try: () => JSON.parse(readFileSync(resolve(file), "utf8")) as Eval.RunReport,
            catch: (e) => new Shared.UsageError(`--baseline ${file}: ${e instanceof Error ? e.message : String(e)}`)
          })
      })
      const Eval = yield* evalModule
      const set = yield* Eval.readSet(resolve(args.set))
      const needsEmbedder = wanted.some((m) => /^(vector|hybrid)/.test(m))
      const needsReranker = wanted.some((m) => m.endsWith("+rerank"))
      const resolved = yield* resolveRetrieval({
        db: args.db,
        collection: args.collection,
        limit: 10,
        mode: Option.none(),
        filter: [],
        embedder: needsEmbedder ? args.embedder : Option.some("none"),
        reranker: needsReranker ? args.reranker : Option.some("none")
      })
      if (needsEmbedder && resolved.options.embeddings === undefined) {
        return yield* Effect.fail(new Shared.UsageError("--modes vector/hybrid need an embedder: pass --embedder (the one the collection was ingested with)"))
      }
      if (needsReranker && resolved.options.reranker === undefined) {
        return yield* Effect.fail(new Shared.UsageError("--modes …+rerank need a reranker: pass --reranker"))
      }
      const names = Option.match(args.collections, {
        onSome: list,
        onNone: () => [Option.isSome(args.collection) || set.manifest === undefined ? resolved.collection : set.manifest.collection]
      })
      const Retrieve = yield* Shared.load(() => import("../../pipeline/Retrieve.js"))
      // the operator's measurement: every chunk is read, as by the benchmarks
      const Principal = yield* Shared.load(() => import("../../pipeline/Principal.js"))
      const report0 = yield* Effect.gen(function*() {
        const store = yield* VectorStore
        const settings: Array<Eval.Setting> = []
        for (const name of names) {
          const collection = yield* store.open(name)
          for (const m of wanted) {
            const base = m.replace(/\+rerank$/, "") as (typeof modes)[number]
            const retrieve: Eval.Setting["retrieve"] = {
              mode: base === "fulltext-plain" ? "fulltext" : base,
              ...(base === "fulltext-plain" ? { fullText: Retrieve.plainFullText } : {}),
              ...(base === "vector" || base === "hybrid" ? { embeddings: resolved.options.embeddings } : {}),
              ...(m.endsWith("+rerank") ? { reranker: resolved.options.reranker } : {})
            } satisfies Omit<Retrieve.Options, "limit" | "groupBy">
            settings.push({ name: names.length > 1 ? `${name}/${m}` : m, collection, retrieve })
          }
        }
        const run = yield* Eval.run(set, settings, { recallK, resamples, seed: args.seed })
        if (args.answers === 0 || Option.isNone(model)) return { run, citations: undefined }
        const first = settings[0]!
        const citations = yield* Eval.citationPrecision(set, first.collection, {
          model: model.value,
          mode: first.retrieve.mode,
          embeddings: first.retrieve.embeddings,
          reranker: first.retrieve.reranker,
          retrieve: { fullText: first.retrieve.fullText },
          questions: args.answers,
          judge: args.judge ? { model: model.value } : undefined,
          resamples,
          seed: args.seed
        }).pipe(Effect.provide(chatLayer(model.value)), Effect.provide(Principal.layerUnrestricted))
        return { run, citations }
      }).pipe(Effect.provide(resolved.store))
      const { citations } = report0
      const report = report0.run
      yield* Console.log(Eval.table(report))
      if (citations !== undefined) yield* Console.log(`\nanswers by ${Option.getOrElse(model, () => "")} (${settings0(report)}): ${Eval.citationLine(citations)}`)
      if (Option.isSome(args.json)) {
        const path = resolve(args.json.value)
        yield* Effect.sync(() => {
          mkdirSync(dirname(path), { recursive: true })
          writeFileSync(path, JSON.stringify(citations === undefined ? report : { ...report, citations }) + "\n")
        })
        yield* Console.log(`wrote ${path}`)
      }
      if (saved !== undefined) {
        const rows = yield* Eval.compareWithBaseline(report, saved)
        yield* Console.log(`\n${Eval.baselineTable(rows, report.recallK)}`)
        const regressions = rows.filter((r) => r.regression)
        if (regressions.length > 0) {
          yield* Console.error(`effect-rag: ${regressions.length} significant regression(s) against the baseline: ${regressions.map((r) => `${r.setting} ${r.metric}`).join(", ")}`)
          yield* Shared.setExitCode(Shared.ExitCode.regression)
        }
      }
    }).pipe(Shared.withConfigFile(args.config), Shared.exitOnUsage)
).pipe(Command.withDescription("Run retrieval modes on a test set: metrics with 95 % intervals side by side (exit 4 on a regression vs --baseline)."))

/** `eval` with its subcommands. */
export const command = Command.make("eval").pipe(
  Command.withDescription("Measure retrieval on your own collection: build a test set, run and compare modes"),
  Command.withSubcommands([buildCommand, runCommand])
)
