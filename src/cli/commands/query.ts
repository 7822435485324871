/**
 * `effect-rag query TEXT [--limit N] [--mode fulltext|vector|hybrid] [--filter key=value]...
 * [--embedder none|remote|use-lite|onnx:DIR] [--reranker none|remote|onnx:DIR] [--db DIR]
 * [--collection NAME] [--json] [--config FILE]`: retrieval over a collection, printed as cited
 * results (rank, score, source, page, snippet).
 *
 * Always works offline: with no embedder (`--embedder`, then `EFFECT_RAG_EMBEDDER`, then
 * `none`) the search is full text; with one, hybrid (when the collection holds vectors). A
 * reranker (`--reranker`, then `EFFECT_RAG_RERANKER`) reorders the top candidates. Filters
 * apply to the collection's declared metadata fields (an ingest declares `source`, `page`,
 * `type`, `source_hash`), e.g. `--filter page=3 --filter source=docs/guide.pdf`.
 *
 * `--as ID [--group NAME]...` runs the query for that principal: only chunks whose access list
 * holds the id, one of the groups or `*` are read. Without `--as` the local operator reads
 * every chunk.
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Answer from "../../pipeline/Answer.js"
import * as Shared from "../options.js"
import * as Wiring from "../../Wiring.js"
import { exitOnUsage, location, nonBlank, resolvePrincipal, resolveRetrieval, retrievalOptions, withFilter } from "../retrieval.js"

// the modules a query runs, loaded on first use (see Shared.load)
const answerModule = Shared.load(() => import("../../pipeline/Answer.js"))

// =============================================================================
// Output
// =============================================================================

/** The text table of a query result (`snippet` is `Answer.snippet`). */
export const formatResult = (r: Answer.QueryResult, snippet: typeof Answer.snippet): string => {
  if (r.hits.length === 0) return `no results for ${JSON.stringify(r.query)} in ${r.collection} (${r.mode})`
  const lines = [`${r.hits.length} result(s) for ${JSON.stringify(r.query)} in ${r.collection} (${r.mode}${r.reranked ? ", reranked" : ""})`, ""]
  for (const h of r.hits) {
    // a stored source or title is a file name or a page's: printed with its control characters escaped
    lines.push(`[${h.n}] ${h.score.toFixed(3)}  ${Shared.printable(location(h))}${h.title !== undefined && h.title !== h.source ? `  ${Shared.printable(h.title)}` : ""}`)
    lines.push(`    ${snippet(h.text, r.query)}`)
  }
  return lines.join("\n")
}

/** The `--json` form of a query result (every field of every hit). */
export const resultJson = (db: string, r: Answer.QueryResult) => ({ db: Wiring.displayUri(db), ...r })

// =============================================================================
// Command
// =============================================================================

/** The `query` command. */
export const command = Command.make(
  "query",
  {
    text: Args.text({ name: "TEXT" }).pipe(Args.withDescription("what to search for")),
    ...retrievalOptions(10)
  },
  (args) =>
    Effect.gen(function*() {
      const text = yield* nonBlank("the query", args.text)
      const resolved = yield* resolveRetrieval(args)
      const principal = yield* resolvePrincipal(args)
      const Answer = yield* answerModule
      const result = yield* Effect.gen(function*() {
        const { collection, options } = yield* withFilter(resolved.collection, resolved.options, args.filter)
        return yield* Answer.query(collection, text, options)
      }).pipe(Effect.provide(Layer.merge(resolved.store, principal)))
      yield* Console.log(args.json ? JSON.stringify(resultJson(resolved.db, result), null, 2) : formatResult(result, Answer.snippet))
    }).pipe(Shared.withConfigFile(args.config), exitOnUsage)
).pipe(Command.withDescription("Search a collection (offline full text; hybrid with an embedder) and print cited results."))
