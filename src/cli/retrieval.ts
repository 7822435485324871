/**
 * What `query` and `ask` share: the retrieval flags (`--limit`, `--mode`, `--filter`,
 * `--embedder`, `--reranker`, `--db`, `--collection`), their resolution through the wiring
 * (`Wiring.ts`), and the source locations both print. Not a command: commands never import
 * each other.
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Embeddings from "../api/Embeddings.js"
import type * as Answer from "../pipeline/Answer.js"
import { CollectionNotFound, VectorStore } from "../store/VectorStore.js"
import * as Wiring from "../Wiring.js"
import * as Shared from "./options.js"

// the modules a query runs, loaded on first use (see Shared.load)
const answerModule = Shared.load(() => import("../pipeline/Answer.js"))
const principalModule = Shared.load(() => import("../pipeline/Principal.js"))

// =============================================================================
// Options shared with `ask`
// =============================================================================

/** `--limit N`. */
export const limit = (fallback: number) =>
  Options.integer("limit").pipe(
    Options.withPseudoName("N"),
    Options.withDefault(fallback),
    Options.withDescription(`results to retrieve (default ${fallback})`)
  )

/** `--mode fulltext|vector|hybrid` (default: hybrid with an embedder, else full text). */
export const mode = Options.choice("mode", ["fulltext", "vector", "hybrid"]).pipe(
  Options.optional,
  Options.withDescription("retrieval mode (default: hybrid when an embedder is configured, else fulltext)")
)

/** `--filter key=value` (repeatable; also `!=`, `<`, `<=`, `>`, `>=`). */
export const filter = Options.text("filter").pipe(
  Options.withPseudoName("KEY=VALUE"),
  Options.repeated,
  Options.withDescription("metadata filter key=value (also != < <= > >=); repeatable, ANDed; the same key twice is ORed")
)

/** `--embedder`. */
export const embedder = Shared.embedder("must be the collection's")

/** `--reranker`. */
export const reranker = Options.text("reranker").pipe(
  Options.withPseudoName("NAME"),
  Options.optional,
  Options.withDescription("none | remote | onnx:DIR (default: $EFFECT_RAG_RERANKER or none)")
)

/** `--as ID`: the principal a query runs for. */
export const asPrincipal = Options.text("as").pipe(
  Options.withPseudoName("ID"),
  Options.optional,
  Options.withDescription("read as this principal: only chunks whose access list holds ID, a --group or * (default: the local operator reads every chunk)")
)

/** `--group NAME` (repeatable): the groups of the `--as` principal. */
export const group = Options.text("group").pipe(
  Options.withPseudoName("NAME"),
  Options.repeated,
  Options.withDescription("a group of the --as principal; repeatable")
)

/**
 * The principal layer of `--as` / `--group`: the local operator (unrestricted) without `--as`.
 * `--group` without `--as`, or a name that is not a valid access-list entry, is a usage error.
 */
export const resolvePrincipal = (flags: { readonly as: Option.Option<string>; readonly group: ReadonlyArray<string> }) =>
  Effect.gen(function*() {
    const Principal = yield* principalModule
    if (Option.isNone(flags.as)) {
      if (flags.group.length > 0) return yield* Effect.fail(new Shared.UsageError("--group needs --as ID"))
      return Principal.layerUnrestricted
    }
    const p = Principal.make(flags.as.value, flags.group)
    const problem = Principal.check(p)
    if (problem !== undefined) return yield* Effect.fail(new Shared.UsageError(`--as/--group: ${problem}`))
    return Principal.layer(p)
  })

/** What `query` and `ask` resolve from their retrieval flags. */
export interface RetrievalFlags {
  readonly db: Option.Option<string>
  readonly collection: Option.Option<string>
  readonly limit: number
  readonly mode: Option.Option<"fulltext" | "vector" | "hybrid">
  readonly filter: ReadonlyArray<string>
  readonly embedder: Option.Option<string>
  readonly reranker: Option.Option<string>
}

/** A usage problem of a flag (exit 2). */
export const UsageError = Shared.UsageError

/**
 * Resolves the retrieval flags into a store layer, the collection name and `QueryOptions`
 * (without the filter, which needs the collection's spec: see {@link withFilter}). Fails when
 * the database does not exist (nothing is created by a query) or an asked-for embedder or
 * reranker cannot be built (never replaced silently).
 */
export const resolveRetrieval = (flags: RetrievalFlags) =>
  Effect.gen(function*() {
    if (!Number.isInteger(flags.limit) || flags.limit < 1) return yield* Effect.fail(new UsageError("--limit must be a positive integer"))
    const db = yield* Wiring.dbUri(flags.db)
    const collection = yield* Shared.resolveCollection(flags.collection)
    if (Either.isLeft(Shared.existingDbFolder(db))) {
      return yield* new CollectionNotFound({
        name: collection,
        message: `no database at ${db}: run \`effect-rag ingest PATH --db ${db}\` first, or pass --db`
      })
    }
    const embedderSpec = yield* Wiring.embedderSpec(flags.embedder)
    const rerankerSpec = yield* Wiring.rerankerSpec(flags.reranker)
    let embeddings: Embeddings.Service | undefined
    if (embedderSpec !== "none") {
      const e = yield* Shared.asUsage("query")(Wiring.resolveEmbedder(embedderSpec))
      if (e.embedder === undefined) return yield* Effect.fail(new Error(e.reason ?? `cannot build the embedder ${embedderSpec}`))
      const { id, service } = e.embedder
      // An ingest stores the embedder's id (e.g. `use-lite`, `remote:MODEL`) as the collection's
      // embedding model; report the same id so that retrieval's model check compares like with like.
      embeddings = { ...service, embed: (texts, options) => Effect.map(service.embed(texts, options), (r) => ({ ...r, model: id })) }
    }
    const reranked = rerankerSpec === "none" ? undefined : yield* Shared.asUsage("query")(Wiring.resolveReranker(rerankerSpec))
    if (reranked !== undefined && reranked.reranker === undefined) {
      return yield* Effect.fail(new Error(reranked.reason ?? `cannot build the reranker ${rerankerSpec}`))
    }
    const options: Answer.QueryOptions = {
      limit: flags.limit,
      mode: Option.getOrUndefined(flags.mode),
      embeddings,
      reranker: reranked?.reranker?.service
    }
    // One process, one question: LanceDB's own full-text index answers at once, where the
    // in-memory index would first read every row (it pays off only in a long-lived handle).
    return { db, collection, options, store: Wiring.storeLayer(db, { memoryIndexRows: 0 }) }
  })

/** Opens the collection and adds the parsed `--filter`s to the options. */
export const withFilter = (collection: string, options: Answer.QueryOptions, expressions: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const Answer = yield* answerModule
    const c = yield* Effect.flatMap(VectorStore, (s) => s.open(collection))
    const f = yield* Answer.parseFilters(expressions, c.spec)
    // A collection with vectors but no embedder: full text, said once on stderr (not an error).
    if (options.embeddings === undefined && options.mode === undefined && c.spec.embedding !== undefined) {
      yield* Console.error(`(collection ${collection} holds ${c.spec.embedding.model} vectors; no --embedder given: full-text search)`)
    }
    return { collection: c, options: { ...options, filter: f } }
  })

/** Where a source is: `source, page P, chunk C` (`sheet "Name"` for a spreadsheet, `slide S` for slides). */
export const location = (s: Answer.Source): string =>
  [s.source, s.place, s.chunk !== undefined ? `chunk ${s.chunk}` : undefined]
    .filter((x) => x !== undefined)
    .join(", ")

/** Prints a {@link UsageError} and exits 2; other errors go to the CLI's handler (exit 1). */
export const exitOnUsage = Shared.exitOnUsage

/** Refuses an empty or blank search text (exit 2): it can match nothing and says nothing. */
export const nonBlank = (what: string, text: string): Effect.Effect<string, Shared.UsageError> =>
  text.trim() === "" ? Effect.fail(new Shared.UsageError(`${what} is empty: give the text to search for`)) : Effect.succeed(text)

/** The options `query` and `ask` share: retrieval, collection and output. */
export const retrievalOptions = (defaultLimit: number) => ({
  limit: limit(defaultLimit),
  mode,
  filter,
  embedder,
  reranker,
  as: asPrincipal,
  group,
  db: Shared.db,
  collection: Shared.collection,
  json: Shared.json,
  config: Shared.config
})
