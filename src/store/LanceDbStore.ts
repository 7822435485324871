/**
 * The LanceDB adapter of the {@link VectorStore} port: one table per collection, in a folder on
 * local disk or under an object-store URI (`s3://bucket/prefix`, `gs://…`, `az://…`).
 *
 * - **Where.** `uri` is a folder (created when missing) or an object-store URI, opened with
 *   {@link StorageOptions} (endpoint, region, credentials as `Redacted`, `allow_http`, and any
 *   other LanceDB storage option). {@link layerAt} and {@link layerConfig} read them from the
 *   configuration (`EFFECT_RAG_S3_*`, `AWS_*`, `EFFECT_RAG_STORAGE_OPTIONS`: see
 *   {@link storageConfig}). How commits behave on object storage: `docs/stores.md`.
 * - **Schema.** `id`, `document_id`, `title`, `text`, `metadata` (JSON of all metadata), one
 *   typed column `f_<name>` per declared field, and `vector` (`FixedSizeList<Float32>`) when
 *   the collection has an embedding. The spec is stored in the Arrow schema metadata, so a
 *   reopened table knows its embedding model and dimension.
 * - **Upserts** are merge-inserts keyed by `id`, in batches of `batchSize` rows (default 4,096:
 *   every batch is one commit, one new fragment and one duplicate check, so fewer is faster).
 *   From `idIndexThreshold` rows (default 100,000) `id` has a BTREE index (created by a
 *   handle's first write or the next `optimize()` that finds the table that large, kept by
 *   `optimize()`): the duplicate check (`id IN (…)`) reads it instead of scanning the table,
 *   and the merge-insert's join by `id` costs less with it too (measured: 2-3× less CPU per
 *   512-row batch at 300,000 rows). Below that, the index costs more than the scan it saves.
 *   From the same size `document_id` has one too: the delete of a re-ingested document's older
 *   generation, deletes by document and the count of one document's chunks read it.
 *   A row is rewritten only when its `content_hash` (of document id, title, text, metadata
 *   and vector) changed, so re-upserting the same chunks changes nothing, not even the index.
 * - **Full text.** Native BM25 indexes on `content` and `title` (English stemming and stop
 *   words), created by the first write of a handle that finds them missing; none for a
 *   collection created with `fullText: false` (its text searches fail with `InvalidInput`).
 *   Rows written after the last index update are still searched (flat), and indexes are
 *   brought up to date by `optimize()`, which the adapter runs itself after a write once
 *   `reindexAfter` rows (default 20,000) are outside the full-text index or more than
 *   `maxFragments` small fragments (default 64; each write adds one) have piled up, both
 *   thresholds growing with the table once `reindexFraction` (default 0.25) of its indexed
 *   rows is more than `reindexAfter`: an `optimize()` rewrites the full-text index, in
 *   proportion to the table, so at fixed thresholds a bulk load is quadratic. A handle
 *   reads that backlog from the table at its first write (index and fragment statistics, so
 *   what earlier processes left counts: a run of one-file ingests reaches the thresholds as one
 *   long-lived handle would) and counts its own writes in memory after that: later writes cost
 *   no statistics round trip. A bulk load (the ingest pipeline) calls `optimize()` once at its
 *   end.
 * - **Full text in memory.** A collection of at most `memoryIndexRows` rows (default 20,000; 0:
 *   never) is searched by full text in memory: the handle's first search reads the rows' hit
 *   columns and builds a `FieldIndex` (`internal/bm25.ts`: BM25 on `content` and on `title`,
 *   summed as LanceDB sums the two matches), and every search first asks the table for its
 *   version (a fraction of a millisecond), reading the rows again when a write has changed it,
 *   so other connections' writes are seen as with LanceDB's index. Filters run on the rows'
 *   metadata with the SQL predicate's three-valued logic. The same BM25, analyzer choices as
 *   LanceDB's (its stop words; Porter where LanceDB uses Snowball's stemmer), a fraction of the
 *   time per query; the price is the read at the first search after a change (about 0.5 s for
 *   5,000 abstracts). `termCounts` hands RM3 the hits' analysed terms from that index.
 *   Above the bound, the handle asks for the table's version at most once a second.
 * - **Query expansion over candidates.** Above `textCandidateRows` rows (default 20,000; 0:
 *   whenever LanceDB's index answers) `textCandidates` gives `Retrieve` the query's best chunks
 *   from LanceDB's index with a BM25 scorer over them (`internal/lance/candidates.ts`), so RM3's
 *   second pass is ranked in memory, not searched again. Its term statistics are sampled
 *   (`internal/lance/stats.ts`) and persisted in the side table `<name>.terms` (never listed as
 *   a collection, dropped with it), brought up to date by an explicit `optimize()` (an
 *   ingest's end) and by the first search that finds them stale.
 * - **Vector index.** Below `vectorIndexThreshold` rows (default 100,000) search is exact (flat
 *   cosine). At the threshold the adapter builds an `IVF_HNSW_SQ` index with cosine distance
 *   (no PQ training loss, good recall at this size), kept current by `optimize()`.
 * - **Concurrency.** LanceDB resolves commit conflicts of concurrent writers itself in most
 *   cases; the ones it gives up on (`commit conflict`, `retryable`, `too many concurrent
 *   writers`) are retried here with jittered exponential backoff (`writeRetries`, default 8).
 *   The connection reads with strong consistency (`readConsistencyInterval: 0`), so a handle
 *   sees other processes' writes.
 * - **Filters** compile to escaped SQL predicates (`internal/filter.ts`).
 * - **Access lists** are stored in the `access` column (the entries between `\u001f`
 *   separators; null for a chunk without a list). A restricted {@link ReadScope} becomes a
 *   predicate ANDed with the filter in every query (`strpos` of each separated entry), so it
 *   applies before ranking and the limit; the in-memory full-text engine applies the same test.
 *   A table created before access lists has no `access` column: it is added (all null) by the
 *   first write of a handle that finds it missing, and a restricted read of a table without it
 *   matches nothing.
 *
 * The adapter's insides are in `internal/lance/`, one module per concern over one shared
 * `LanceTable` (`table.ts`: the table, spec, settings, error mapping and retries, the `access`
 * column's state, predicates): `rows.ts` (the Arrow schema and encoding, rows as hits),
 * `write.ts` (merge-inserts, duplicate repair, deletes), `upkeep.ts` (index creation and the
 * `optimize()` counts), `fulltext.ts` (queries against LanceDB's index), `memory.ts` (the
 * in-memory full-text engine and its per-version snapshot), `read.ts` (vector search, count,
 * listing, scan).
 *
 * @since 0.1.0
 */
import * as lancedb from "@lancedb/lancedb"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import { mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as AdapterKit from "./AdapterKit.js"
import * as Fusion from "./Fusion.js"
import * as Hash from "./internal/hash.js"
import { ensureCpuThreads } from "./internal/lance-threads.js"
import * as FullText from "./internal/lance/fulltext.js"
import { CandidateEngine } from "./internal/lance/candidates.js"
import { MemoryEngine } from "./internal/lance/memory.js"
import { statsTable, statsTableName } from "./internal/lance/stats.js"
import * as Read from "./internal/lance/read.js"
import { hasAccessColumn, parseSpec, schemaOf, specKey } from "./internal/lance/rows.js"
import * as Lance from "./internal/lance/table.js"
import { IndexUpkeep } from "./internal/lance/upkeep.js"
import { Writer } from "./internal/lance/write.js"
import { defaultDb, isObjectStoreUri } from "./StoreUri.js"
import {
  type Collection,
  CollectionNotFound,
  type CollectionSpec,
  checkSpec,
  InvalidInput,
  requireFullText,
  sameEmbedding,
  type Service as VectorStoreService,
  type StoreError,
  type TextQuery,
  type TextSearchOptions,
  VectorStore,
  type VectorStoreError
} from "./VectorStore.js"

// =============================================================================
// Options
// =============================================================================

/**
 * How to reach an object store. The typed fields are the S3 ones; anything else LanceDB accepts
 * as a storage option (`timeout`, `google_service_account`, `azure_storage_account_name`, …)
 * goes into `options`. Unset fields fall back to what LanceDB reads from the environment itself
 * (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT`, …). Ignored for a local folder.
 *
 * @since 0.1.0
 * @category models
 */
export interface StorageOptions {
  /** The S3 endpoint (e.g. `http://127.0.0.1:9000` for a local server). */
  readonly endpoint?: string | undefined
  /** The S3 region (most S3-compatible servers want one; any name they accept). */
  readonly region?: string | undefined
  readonly accessKeyId?: string | undefined
  readonly secretAccessKey?: Redacted.Redacted<string> | undefined
  readonly sessionToken?: Redacted.Redacted<string> | undefined
  /** Plain-HTTP endpoints (default: true when `endpoint` starts with `http://`, else false). */
  readonly allowHttp?: boolean | undefined
  /** Further LanceDB storage options, passed as they are (a `Redacted` value is unwrapped only here). */
  readonly options?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
}

/**
 * Options of the LanceDB adapter.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The database: a folder (created when missing) or an object-store URI (`s3://bucket/prefix`). */
  readonly uri: string
  /** Object-store settings (endpoint, region, credentials); ignored for a local folder. */
  readonly storage?: StorageOptions | undefined
  /** Rows per merge-insert (default 4,096). */
  readonly batchSize?: number | undefined
  /** Rows at which a vector index is built (default 100,000). */
  readonly vectorIndexThreshold?: number | undefined
  /** Rows at which the `id` column gets a BTREE index (default 100,000; 0: from the first write). */
  readonly idIndexThreshold?: number | undefined
  /** Rows written by a handle after which a write triggers `optimize()` (default 20,000). */
  readonly reindexAfter?: number | undefined
  /** Writes of a handle after which a write triggers `optimize()` (default 64). */
  readonly maxFragments?: number | undefined
  /**
   * The share of the indexed rows past which `reindexAfter` and `maxFragments` grow with the
   * table (default 0.25: a table of 400,000 indexed rows is optimized after 100,000 more rows or
   * 320 writes). An `optimize()` costs in proportion to the table; fixed thresholds make a bulk
   * load's optimizes quadratic in its size. 0: fixed thresholds.
   */
  readonly reindexFraction?: number | undefined
  /** Retries of a write that hit a commit conflict (default 8). */
  readonly writeRetries?: number | undefined
  /**
   * Collections of at most this many rows are searched by full text in memory (default
   * 20,000; 0: always LanceDB's index). See the module doc.
   */
  readonly memoryIndexRows?: number | undefined
  /**
   * Collections of more rows than this, searched through LanceDB's index, run query expansion
   * (RM3) over the first pass's candidates in memory (default 20,000; 0: whenever LanceDB's
   * index answers). See the module doc.
   */
  readonly textCandidateRows?: number | undefined
}

/**
 * Whether a database URI names an object store (`scheme://…` other than `file://`) rather than a
 * folder (re-exported from `StoreUri`).
 *
 * @since 0.1.0
 * @category uri
 */
export { isObjectStoreUri } from "./StoreUri.js"

/**
 * The LanceDB `storageOptions` of {@link StorageOptions} (snake_case keys, secrets unwrapped).
 * The result holds credentials in clear: hand it to LanceDB only, never print it.
 *
 * @since 0.1.0
 * @category utils
 */
export const lanceStorageOptions = (storage: StorageOptions | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  if (storage === undefined) return out
  for (const [k, v] of Object.entries(storage.options ?? {})) out[k] = Redacted.isRedacted(v) ? Redacted.value(v) : v
  if (storage.endpoint !== undefined) out["aws_endpoint"] = storage.endpoint
  if (storage.region !== undefined) out["aws_region"] = storage.region
  if (storage.accessKeyId !== undefined) out["aws_access_key_id"] = storage.accessKeyId
  if (storage.secretAccessKey !== undefined) out["aws_secret_access_key"] = Redacted.value(storage.secretAccessKey)
  if (storage.sessionToken !== undefined) out["aws_session_token"] = Redacted.value(storage.sessionToken)
  const allowHttp = storage.allowHttp ?? (storage.endpoint !== undefined && /^http:\/\//i.test(storage.endpoint) ? true : undefined)
  if (allowHttp !== undefined) out["allow_http"] = String(allowHttp)
  return out
}

/**
 * The adapter's own service: the port plus what only LanceDB has.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service extends VectorStoreService {
  /** The database: a folder or an object-store URI. */
  readonly uri: string
  /** The raw connection, for what the port does not cover (held by the layer's scope). */
  readonly connection: lancedb.Connection
}

/**
 * The adapter's Tag (the layer provides it and {@link VectorStore}).
 *
 * @since 0.1.0
 * @category context
 */
export class LanceDbStore extends Context.Tag("effect-rag/store/LanceDbStore")<LanceDbStore, Service>() {}

// =============================================================================
// Helpers
// =============================================================================

/**
 * Whether a LanceDB error is a commit conflict worth another attempt.
 *
 * @since 0.1.0
 * @category errors
 */
export const isConflict = Lance.isConflict

/**
 * A digest of everything stored for a chunk (see `internal/hash.ts`).
 *
 * @since 0.1.0
 * @category utils
 */
export const contentHash = Hash.contentHash

/**
 * The default of {@link Options.memoryIndexRows}.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMemoryIndexRows = 20_000

// =============================================================================
// Collections
// =============================================================================

/**
 * A collection over one table: the modules of `internal/lance/` over one shared
 * {@link Lance.LanceTable} (the table, its spec, the settings, the `access` column's state).
 */
const makeCollection = (
  table: lancedb.Table,
  spec: CollectionSpec,
  settings: Lance.Settings,
  accessKnown: boolean,
  connection: lancedb.Connection
): Collection => {
  const t = new Lance.LanceTable(table, spec, settings, accessKnown)
  const candidates = new CandidateEngine(t, statsTable(connection, spec.name))
  // the term statistics follow rows replaced: they count the rows each optimize() indexed
  const upkeep = new IndexUpkeep(t, (rows) => candidates.stats.noteWritten(rows))
  const writer = new Writer(t, upkeep)
  const memory = new MemoryEngine(t)
  const wrote = Effect.sync(() => candidates.stats.wrote())

  const searchText = (query: TextQuery, options: TextSearchOptions = {}) =>
    Effect.gen(function*() {
      yield* requireFullText(spec)
      const predicate = yield* t.where(options.filter, options.scope)
      const inMemory = yield* memory.search(query, options)
      if (inMemory !== undefined) return inMemory
      return yield* FullText.searchIndex(t, query, options, predicate)
    }).pipe(Effect.withSpan("LanceDbStore.searchText", { attributes: { collection: spec.name } }))

  const searchVector = (vector: Float32Array | ReadonlyArray<number>, options = {}) => Read.searchVector(t, vector, options)

  return {
    spec,
    // this handle's writes make the candidate path ask the table's row count again at once
    upsert: (chunks) => Effect.ensuring(writer.upsert(chunks), wrote),
    deleteDocuments: (ids) => Effect.ensuring(writer.deleteDocuments(ids), wrote),
    deleteWhere: (filter) => Effect.ensuring(writer.deleteWhere(filter), wrote),
    searchText,
    searchVector,
    searchHybrid: Fusion.hybridSearch(searchText, searchVector),
    count: (filter, options) => Read.count(t, filter, options),
    listDocuments: (options) => Read.listDocuments(t, options),
    // an explicit optimize (an ingest's end) also brings the persisted term statistics up to date
    optimize: () => Effect.zipLeft(upkeep.optimize(), candidates.refresh()),
    termCounts: (ids, options) => memory.termCounts(ids, options),
    textCandidates: (query, options) => Effect.zipRight(requireFullText(spec), candidates.candidates(query, options)),
    scan: (filter, options) => Read.scan(t, filter, options),
    get: (ids, options) => Read.get(t, ids, options),
    enforcesAccess: true
  }
}

/**
 * The default fusion of hybrid search (see `Fusion.ts`).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultFusion = Fusion.defaultFusion

// =============================================================================
// Constructor and layers
// =============================================================================

const settingsOf = (options: Options): Lance.Settings => ({
  batchSize: Math.max(1, options.batchSize ?? 4096),
  vectorIndexThreshold: Math.max(1, options.vectorIndexThreshold ?? 100_000),
  idIndexThreshold: Math.max(0, options.idIndexThreshold ?? 100_000),
  reindexAfter: Math.max(1, options.reindexAfter ?? 20_000),
  maxFragments: Math.max(1, options.maxFragments ?? 64),
  reindexFraction: Math.max(0, options.reindexFraction ?? 0.25),
  memoryIndexRows: Math.max(0, options.memoryIndexRows ?? defaultMemoryIndexRows),
  textCandidateRows: Math.max(0, options.textCandidateRows ?? defaultMemoryIndexRows),
  retry: Schedule.exponential("20 millis").pipe(
    Schedule.jittered,
    Schedule.intersect(Schedule.recurs(Math.max(0, options.writeRetries ?? 8))),
    Schedule.whileInput((e: VectorStoreError) => isConflict(e))
  )
})

/** Opens the connection (a local folder is created when missing); strong read consistency. */
const connect = (options: Options): Effect.Effect<lancedb.Connection, StoreError> => {
  const remote = isObjectStoreUri(options.uri)
  return Effect.tryPromise({
    try: async () => {
      if (!remote) mkdirSync(/^file:\/\//i.test(options.uri) ? fileURLToPath(options.uri) : options.uri, { recursive: true })
      return lancedb.connect(options.uri, {
        readConsistencyInterval: 0,
        ...(remote ? { storageOptions: lanceStorageOptions(options.storage) } : {})
      })
    },
    catch: Lance.storeError("connect")
  })
}

/**
 * Connects to the database in `options.uri`; the connection closes with the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const settings = settingsOf(options)
    ensureCpuThreads() // before LanceDB starts its CPU pool: see internal/lance-threads.ts
    const connection = yield* Effect.acquireRelease(connect(options), (db) => Effect.sync(() => db.close()))
    // One handle per table name, shared by every caller of this layer.
    const open = new Map<string, Collection>()
    const attempt = <A>(op: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: Lance.storeError(op) })

    const openExisting = (name: string): Effect.Effect<Option.Option<Collection>, VectorStoreError> =>
      Effect.gen(function*() {
        const cached = open.get(name)
        if (cached !== undefined) return Option.some(cached)
        const names = yield* attempt("tableNames", () => connection.tableNames())
        if (!names.includes(name)) return Option.none()
        const table = yield* attempt("openTable", () => connection.openTable(name))
        const schema = yield* attempt("schema", () => table.schema())
        const spec = parseSpec(name, schema)
        if (spec === undefined) {
          return yield* new InvalidInput({ message: `table ${name} was not created by effect-rag (no ${specKey} in its schema)` })
        }
        const c = makeCollection(table, spec, settings, hasAccessColumn(schema), connection)
        open.set(name, c)
        return Option.some(c)
      })

    const collection = (requested: CollectionSpec) =>
      Effect.gen(function*() {
        const problem = checkSpec(requested)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        const existing = yield* openExisting(requested.name)
        if (Option.isSome(existing)) {
          yield* AdapterKit.checkReopened(existing.value.spec, requested)
          return existing.value
        }
        const table = yield* attempt("createTable", () =>
          connection.createEmptyTable(requested.name, schemaOf(requested), { mode: "create", existOk: true }))
        // Another writer may have created it first: read back what is stored.
        const schema = yield* attempt("schema", () => table.schema())
        const spec = parseSpec(requested.name, schema) ?? requested
        if (!sameEmbedding(spec.embedding, requested.embedding)) return yield* AdapterKit.embeddingMismatch(requested, spec)
        const c = makeCollection(table, spec, settings, hasAccessColumn(schema), connection)
        open.set(requested.name, c)
        return c
      }).pipe(Effect.withSpan("LanceDbStore.collection", { attributes: { name: requested.name } }))

    const service: Service = {
      backend: "lancedb",
      uri: options.uri,
      connection,
      collection,
      open: (name) =>
        openExisting(name).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new CollectionNotFound({ name, message: `no collection ${name} in ${options.uri}` })),
            onSome: Effect.succeed
          }))
        ),
      // a name with a `.` is a collection's side table (`<name>.terms`), never a collection
      list: () => attempt("tableNames", () => connection.tableNames()).pipe(Effect.map((names) => names.filter((n) => !n.includes(".")))),
      drop: (name) =>
        Effect.gen(function*() {
          open.delete(name)
          const names = yield* attempt("tableNames", () => connection.tableNames())
          if (names.includes(name)) yield* attempt("dropTable", () => connection.dropTable(name))
          if (names.includes(statsTableName(name))) yield* attempt("dropTable", () => connection.dropTable(statsTableName(name)))
        })
    }
    return service
  })

/**
 * A layer providing {@link LanceDbStore} and the {@link VectorStore} port.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<LanceDbStore | VectorStore, StoreError> =>
  Layer.scopedContext(
    make(options).pipe(Effect.map((s) => Context.make(LanceDbStore, s).pipe(Context.add(VectorStore, s))))
  )

// =============================================================================
// Configuration
// =============================================================================

const optionalString = (name: string) => Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s !== "")))

/**
 * {@link StorageOptions} from the configuration (the environment by default; the CLI adds its
 * config file):
 *
 * | variable | meaning |
 * |---|---|
 * | `EFFECT_RAG_S3_ENDPOINT` | S3 endpoint (`http://…` allows plain HTTP) |
 * | `EFFECT_RAG_S3_REGION` | S3 region |
 * | `EFFECT_RAG_S3_ALLOW_HTTP` | `true`/`false`: plain-HTTP endpoints |
 * | `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` | credentials (read as `Redacted`; LanceDB reads the same names from the environment itself) |
 * | `EFFECT_RAG_STORAGE_OPTIONS` | a JSON object of further LanceDB storage options (`{"timeout":"60s"}`) |
 *
 * Fails with a `ConfigError` when `EFFECT_RAG_STORAGE_OPTIONS` is not a JSON object of strings.
 *
 * @since 0.1.0
 * @category utils
 */
export const storageConfig: Config.Config<StorageOptions> = Config.all({
  endpoint: optionalString("EFFECT_RAG_S3_ENDPOINT"),
  region: optionalString("EFFECT_RAG_S3_REGION"),
  allowHttp: Config.option(Config.boolean("EFFECT_RAG_S3_ALLOW_HTTP")),
  accessKeyId: optionalString("AWS_ACCESS_KEY_ID"),
  secretAccessKey: Config.option(Config.redacted("AWS_SECRET_ACCESS_KEY")),
  sessionToken: Config.option(Config.redacted("AWS_SESSION_TOKEN")),
  options: optionalString("EFFECT_RAG_STORAGE_OPTIONS").pipe(
    Config.mapOrFail((raw) => {
      if (Option.isNone(raw)) return Either.right({})
      try {
        const parsed: unknown = JSON.parse(raw.value)
        if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) &&
          Object.values(parsed).every((v) => typeof v === "string" || typeof v === "number" || typeof v === "boolean")) {
          return Either.right(Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)])))
        }
      } catch {
        // reported below
      }
      return Either.left(ConfigError.InvalidData([], `EFFECT_RAG_STORAGE_OPTIONS must be a JSON object of strings, e.g. {"timeout":"60s"}`))
    })
  )
}).pipe(Config.map((c): StorageOptions => ({
  endpoint: Option.getOrUndefined(c.endpoint),
  region: Option.getOrUndefined(c.region),
  allowHttp: Option.getOrUndefined(c.allowHttp),
  accessKeyId: Option.getOrUndefined(c.accessKeyId),
  secretAccessKey: Option.getOrUndefined(Option.filter(c.secretAccessKey, (r) => Redacted.value(r) !== "")),
  sessionToken: Option.getOrUndefined(Option.filter(c.sessionToken, (r) => Redacted.value(r) !== "")),
  options: c.options
})))

/**
 * LanceDB at `uri` (a folder or an object-store URI) with the storage options of
 * {@link storageConfig}, read from the current configuration when the layer is built.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAt = (
  uri: string,
  options: Omit<Options, "uri" | "storage"> = {}
): Layer.Layer<LanceDbStore | VectorStore, StoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(storageConfig, (storage) => layer({ ...options, uri, storage })))

/**
 * The same with the database from `EFFECT_RAG_DB` (a folder or an object-store URI; default
 * `.effect-rag/db`, the CLI's default).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<LanceDbStore | VectorStore, StoreError | ConfigError.ConfigError> =
  Layer.unwrapEffect(
    optionalString("EFFECT_RAG_DB").pipe(
      Effect.map((uri) => layerAt(Option.getOrElse(uri, () => defaultDb)))
    )
  )

