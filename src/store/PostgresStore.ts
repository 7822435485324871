/**
 * The PostgreSQL adapter of the {@link VectorStore} port, on node-postgres (`pg`) with the
 * pgvector extension: collections live in a schema of an existing database (default
 * `effect_rag`), next to the data a team already keeps there.
 *
 * - **Tables.** `<schema>.collections` holds each collection's spec (so a reopened collection
 *   knows its embedding model and dimension) and its full-text statistics. Each collection has a
 *   `chunks_<n>` table (id, document id, title, text, metadata as `jsonb`, the content digest,
 *   the access list, one typed column per declared field, and `vector(d)` when it has an embedding) and a
 *   `postings_<n>` table (term, field, chunk, term count, field length, a surface word).
 * - **Full text.** PostgreSQL has no BM25, so the adapter analyses every chunk itself with the
 *   analyser the other adapters use (`TextAnalysis`: lower case, LanceDB's English stop
 *   words, Porter stems, words over 40 characters dropped) and stores the postings; a search
 *   computes BM25 in SQL over the postings of its terms, per field (`content` = title + text,
 *   and `title`), with the same constants as the in-memory index (`k1` 1.2, `b` 0.75, Lucene's
 *   IDF), so scores match the other adapters'. Document counts and total lengths per field are
 *   kept in the collection's row, updated in the same transaction as the rows.
 * - **Vectors.** An HNSW index with cosine distance (`vector_cosine_ops`), searched with
 *   `hnsw.iterative_scan = strict_order` and `hnsw.ef_search` raised to the limit, so a filtered
 *   query still returns `limit` hits. pgvector indexes `vector` columns of at most 2,000
 *   dimensions: a collection with a larger embedding is searched exactly (no index).
 * - **Writes** run in transactions that hold a per-collection advisory lock
 *   (`pg_advisory_xact_lock`), in batches of `batchSize` chunks: writers from any number of
 *   processes take turns, counts are exact (a chunk whose digest did not change is left alone),
 *   and a crash loses at most the batch in flight (rolled back whole).
 * - **Filters** compile to SQL with every value a bound parameter ({@link compileFilter}); column
 *   names come from the collection's spec, never from the filter.
 * - **Access lists** are a `text[]` column (null for a chunk without one, read only by
 *   unrestricted reads); a restricted read scope is the predicate `access && $n::text[]` ANDed
 *   with the filter in every read (searches, counts, listDocuments, termCounts), before ranking
 *   and the limit. The list is part of the content digest, so a changed list is an update.
 *
 * `pg` is an optional peer dependency (`npm install pg@^8.23.1`): without it, the layer fails
 * with `RagError.MissingPackage` carrying that line. The database needs the `vector` extension
 * (`CREATE EXTENSION vector`, done by the adapter when its role may) for collections with an
 * embedding; full-text-only collections work without it.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as RagError from "../RagError.js"
import * as AdapterKit from "./AdapterKit.js"
import * as Fusion from "./Fusion.js"
import * as Client from "./internal/postgres/client.js"
import * as FullText from "./internal/postgres/fulltext.js"
import * as Reads from "./internal/postgres/reads.js"
import * as Schema from "./internal/postgres/schema.js"
import * as Sql from "./internal/postgres/sql.js"
import { type CollectionState, makeState, type Settings, type Stored } from "./internal/postgres/state.js"
import * as VectorSearch from "./internal/postgres/vector.js"
import * as Write from "./internal/postgres/write.js"
import {
  checkSpec,
  type Collection,
  CollectionNotFound,
  type CollectionSpec,
  type Filter,
  InvalidInput,
  type Scalar,
  type Service as VectorStoreService,
  StoreError,
  VectorStore
} from "./VectorStore.js"

// =============================================================================
// Options
// =============================================================================

/**
 * Where the database is and how the adapter uses it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Client.ConnectOptions {
  /** The schema that holds the collections (default `effect_rag`; created when missing). */
  readonly schema?: string | undefined
  /** Chunks per write transaction (default 500). */
  readonly batchSize?: number | undefined
}

/**
 * The adapter's own service: the port plus where it is connected.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends VectorStoreService {
  /** `postgres://user@host:port/database` (never with the password). */
  readonly location: string
  /** The schema of the collections. */
  readonly schema: string
}

/**
 * The adapter's Tag (the layer provides it and {@link VectorStore}).
 *
 * @since 0.1.0
 * @category context
 */
export class PostgresStore extends Context.Tag("effect-rag/store/PostgresStore")<PostgresStore, Service>() {}

/**
 * The default schema.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSchema = "effect_rag"

/**
 * pgvector's largest dimension an HNSW index on a `vector` column takes.
 *
 * @since 0.1.0
 * @category utils
 */
export const maxIndexedDimension = Sql.maxIndexedDimension

// =============================================================================
// Filters
// =============================================================================

/**
 * Compiles a filter to a SQL condition on the chunks table. Values go to `bind` (which returns
 * its `$n` placeholder); a field is `documentId` or a declared field, whose column comes from
 * the spec: a name that is neither is refused, never spliced. Comparisons of missing values are
 * not matches, nor are their negations (SQL's three-valued logic in a `WHERE`, as the other
 * adapters evaluate it). Strings compare in code-point order (`COLLATE "C"`).
 *
 * @since 0.1.0
 * @category utils
 */
export const compileFilter: (
  spec: CollectionSpec,
  filter: Filter,
  bind: (value: Scalar) => string
) => Outcome<string, string> = Sql.compileFilter

/**
 * A result or the message of what is wrong (`Left`).
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome<E, A> = { readonly _tag: "Left"; readonly left: E } | { readonly _tag: "Right"; readonly right: A }

// =============================================================================
// Collections
// =============================================================================

/** The port's collection over one stored collection: each operation a module of internal/postgres. */
const makeCollection = (state: CollectionState): Collection => {
  const searchText: Collection["searchText"] = (query, options) => FullText.searchText(state, query, options)
  const searchVector: Collection["searchVector"] = (vector, options) => VectorSearch.searchVector(state, vector, options)
  return {
    spec: state.spec,
    upsert: (chunks) => Write.upsert(state, chunks),
    deleteDocuments: (documentIds) => Write.deleteDocuments(state, documentIds),
    deleteWhere: (filter) => Write.deleteWhere(state, filter),
    searchText,
    searchVector,
    searchHybrid: Fusion.hybridSearch(searchText, searchVector),
    count: (filter, options) => Reads.count(state, filter, options),
    listDocuments: (options) => Reads.listDocuments(state, options),
    get: (ids, options) => Reads.get(state, ids, options),
    optimize: () => Reads.optimize(state),
    termCounts: (ids, options) => FullText.termCounts(state, ids, options),
    enforcesAccess: true
  }
}

// =============================================================================
// Constructor and layers
// =============================================================================

/**
 * Connects a pool (closed with the scope) and sets up the schema when missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Service, StoreError | RagError.MissingPackage, Scope.Scope> =>
  Effect.gen(function*() {
    const schema = options.schema ?? defaultSchema
    if (!Sql.schemaPattern.test(schema)) {
      return yield* new StoreError({ op: "connect", message: `schema ${JSON.stringify(schema)} must match ${Sql.schemaPattern}` })
    }
    const location = Client.describeLocation(options)
    const pool = yield* Client.openPool(options)
    const settings: Settings = {
      schema,
      batchSize: Math.max(1, options.batchSize ?? 500),
      lockSpace: Client.key32(`effect-rag:${schema}`)
    }
    const catalog = Schema.makeCatalog(pool, settings, location)
    yield* Schema.ensureSchema(catalog)
    const open = (stored: Stored): Collection => makeCollection(makeState(pool, settings, stored))

    const collection = (requested: CollectionSpec) =>
      Effect.gen(function*() {
        const problem = checkSpec(requested)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        const found = yield* Schema.findStored(catalog, "collection", requested.name)
        const stored = found ?? (yield* Schema.createCollection(catalog, requested))
        yield* AdapterKit.checkReopened(stored.spec, requested)
        return open(stored)
      }).pipe(Effect.withSpan("PostgresStore.collection", { attributes: { name: requested.name } }))

    const service: Service = {
      backend: "postgres",
      location,
      schema,
      collection,
      open: (name) =>
        Schema.findStored(catalog, "open", name).pipe(
          Effect.flatMap((stored) =>
            stored === undefined
              ? Effect.fail(new CollectionNotFound({ name, message: `no collection ${name} in ${location} (schema ${schema})` }))
              : Effect.succeed(open(stored))
          )
        ),
      list: () => Schema.listNames(catalog),
      drop: (name) => Schema.dropCollection(catalog, name)
    }
    return service
  })

/**
 * A layer providing {@link PostgresStore} and the {@link VectorStore} port.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<PostgresStore | VectorStore, StoreError | RagError.MissingPackage> =>
  Layer.scopedContext(
    make(options).pipe(Effect.map((s) => Context.make(PostgresStore, s).pipe(Context.add(VectorStore, s))))
  )

// =============================================================================
// URLs and configuration
// =============================================================================

/**
 * Whether `uri` names a PostgreSQL database (`postgres://` or `postgresql://`).
 *
 * @since 0.1.0
 * @category utils
 */
export const isPostgresUrl = (uri: string): boolean => /^postgres(ql)?:\/\//i.test(uri)

/**
 * {@link Options} from a connection URL: `postgres://user[:password]@host[:port]/database`, with
 * the query parameters `schema` (default `effect_rag`) and `sslmode` (`disable`, `require`:
 * encrypted without verifying, `verify-ca`/`verify-full`: verified). The password, when the URL
 * has one, becomes `Redacted`. Another scheme or a URL that does not parse is `Left` with a
 * message that never repeats the URL (nor so its password).
 *
 * @since 0.1.0
 * @category utils
 */
export const optionsFromUrl = (url: string): Outcome<string, Options> => {
  if (!isPostgresUrl(url)) return { _tag: "Left", left: "a PostgreSQL URL starts with postgres:// or postgresql://" }
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return { _tag: "Left", left: "not a valid postgres:// URL (postgres://user@host:port/database)" }
  }
  const sslmode = u.searchParams.get("sslmode")
  const database = decodeURIComponent(u.pathname.replace(/^\//, ""))
  const port = u.port === "" ? undefined : Number(u.port)
  return {
    _tag: "Right",
    right: {
      host: u.hostname === "" ? undefined : u.hostname.replace(/^\[(.*)\]$/, "$1"),
      port,
      user: u.username === "" ? undefined : decodeURIComponent(u.username),
      password: u.password === "" ? undefined : Redacted.make(decodeURIComponent(u.password)),
      database: database === "" ? undefined : database,
      schema: u.searchParams.get("schema") ?? undefined,
      ssl: sslmode === null || sslmode === "disable" || sslmode === "prefer" || sslmode === "allow"
        ? undefined
        : sslmode === "require" || sslmode === "no-verify"
        ? "no-verify"
        : true
    }
  }
}

/**
 * The store at a `postgres://` URL (see {@link optionsFromUrl}); a URL without a password takes
 * `PGPASSWORD` from the configuration (read as `Redacted`), and `options` may set anything the
 * URL does not. A URL that {@link optionsFromUrl} refuses fails the layer with `StoreError`.
 * This is what a store URI maps to.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromUrl = (
  url: string,
  options: Omit<Options, "host" | "port" | "user" | "database"> = {}
): Layer.Layer<PostgresStore | VectorStore, StoreError | RagError.MissingPackage | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const parsed = optionsFromUrl(url)
    if (parsed._tag === "Left") return yield* new StoreError({ op: "connect", message: parsed.left })
    const fromEnv = yield* Config.option(Config.redacted("PGPASSWORD"))
    const password = parsed.right.password ?? options.password ?? Option.getOrUndefined(fromEnv)
    return layer({
      ...options,
      ...Object.fromEntries(Object.entries(parsed.right).filter(([, v]) => v !== undefined)),
      ...(password === undefined ? {} : { password })
    })
  }))
