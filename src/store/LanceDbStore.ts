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
 *   A row is rewritten only when its `content_hash` (of document id, title, text, metadata and
 *   vector) changed, so re-upserting the same chunks changes nothing, not even the index.
 * - **Full text.** Native BM25 indexes on `text` and `title` (English stemming and stop words),
 *   created by the first write of a handle that finds them missing. Rows written after the last
 *   index update are still searched (flat), and indexes are brought up to date by `optimize()`,
 *   which the adapter runs itself after a write once this handle has written `reindexAfter`
 *   rows (default 20,000) or made more than `maxFragments` writes (default 64; each write adds
 *   a fragment) since the indexes were last brought up to date. The counts are kept in memory:
 *   a write costs no index statistics round trip. A bulk load (the ingest pipeline) calls
 *   `optimize()` once at its end.
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
 * `@lancedb/lancedb` 0.39 declares Node 22 in `engines`; it works on Node 20 (npm only warns).
 *
 * @since 0.1.0
 */
import * as lancedb from "@lancedb/lancedb"
import type * as Arrow from "apache-arrow"
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
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import * as Filters from "./internal/filter.js"
import * as AdapterKit from "./AdapterKit.js"
import * as Fusion from "./Fusion.js"
import * as Hash from "./internal/hash.js"
import { FieldIndex, weightedTerms } from "./internal/bm25.js"
import { ensureCpuThreads } from "./internal/lance-threads.js"
import { analyze } from "./TextAnalysis.js"
import { defaultDb, isObjectStoreUri } from "./StoreUri.js"
import {
  type Chunk,
  type Collection,
  CollectionNotFound,
  type CollectionSpec,
  checkChunkVector,
  checkSpec,
  checkVector as checkCollectionVector,
  describeEmbedding,
  type DocumentEntry,
  documentIdField,
  type Filter,
  type Hit,
  type HybridSearchOptions,
  checkAccess,
  InvalidInput,
  readable,
  type ReadScope,
  sameEmbedding,
  type Scalar,
  type ScopeOptions,
  type SearchOptions,
  type Service as VectorStoreService,
  StoreError,
  type TextQuery,
  type TextSearchOptions,
  type UpsertResult,
  VectorStore,
  type VectorStoreError
} from "./VectorStore.js"

// apache-arrow's CommonJS build, the instance LanceDB itself loads (its ES module build would be a
// second copy of the library: about 130 more files to load at start-up).
const arrow: typeof Arrow = createRequire(import.meta.url)("apache-arrow")

// =============================================================================
// Options
// =============================================================================

/**
 * How to reach an object store. The typed fields are the S3 ones; anything else LanceDB accepts
 * as a storage option (`timeout`, `google_service_account`, `azure_storage_account_name`, …)
 * goes into `options`. Unset fields fall back to what LanceDB reads from the environment itself
 * (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT`, …). Ignored for a local folder.
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

/** Options of the LanceDB adapter. */
export interface Options {
  /** The database: a folder (created when missing) or an object-store URI (`s3://bucket/prefix`). */
  readonly uri: string
  /** Object-store settings (endpoint, region, credentials); ignored for a local folder. */
  readonly storage?: StorageOptions | undefined
  /** Rows per merge-insert (default 4,096). */
  readonly batchSize?: number | undefined
  /** Rows at which a vector index is built (default 100,000). */
  readonly vectorIndexThreshold?: number | undefined
  /** Rows written by a handle after which a write triggers `optimize()` (default 20,000). */
  readonly reindexAfter?: number | undefined
  /** Writes of a handle after which a write triggers `optimize()` (default 64). */
  readonly maxFragments?: number | undefined
  /** Retries of a write that hit a commit conflict (default 8). */
  readonly writeRetries?: number | undefined
  /**
   * Collections of at most this many rows are searched by full text in memory (default
   * 20,000; 0: always LanceDB's index). See the module doc.
   */
  readonly memoryIndexRows?: number | undefined
}

export { isObjectStoreUri } from "./StoreUri.js"

/**
 * The LanceDB `storageOptions` of {@link StorageOptions} (snake_case keys, secrets unwrapped).
 * The result holds credentials in clear: hand it to LanceDB only, never print it.
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

/** The adapter's own service: the port plus what only LanceDB has. */
export interface Service extends VectorStoreService {
  /** The database: a folder or an object-store URI. */
  readonly uri: string
  /** The raw connection, for what the port does not cover (held by the layer's scope). */
  readonly connection: lancedb.Connection
}

/** The adapter's Tag (the layer provides it and {@link VectorStore}). */
export class LanceDbStore extends Context.Tag("effect-rag/store/LanceDbStore")<LanceDbStore, Service>() {}

const specKey = "effect_rag.spec"

/** The column of the access lists, and the separator around each entry (entries hold no control characters). */
const accessColumn = "access"
const accessSep = "\u001f"

const encodeAccess = (access: ReadonlyArray<string> | undefined): string | null =>
  access === undefined ? null : accessSep + [...new Set(access)].sort().join(accessSep) + accessSep

const decodeAccess = (raw: unknown): ReadonlyArray<string> | undefined =>
  typeof raw === "string" ? raw.split(accessSep).filter((e) => e !== "") : undefined

/** The predicate of a restricted scope over the `access` column (entries validated). */
const scopeSql = (entries: ReadonlyArray<string>): string =>
  entries.length === 0
    ? "(1 = 0)"
    : `(\`${accessColumn}\` IS NOT NULL AND (${
      [...new Set(entries)].map((e) => `strpos(\`${accessColumn}\`, ${Filters.literal(accessSep + e + accessSep)}) > 0`).join(" OR ")
    }))`

// =============================================================================
// Helpers
// =============================================================================

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const storeError = (op: string) => (cause: unknown) =>
  new StoreError({ op, message: `${op}: ${messageOf(cause)}`, cause })

/** Whether a LanceDB error is a commit conflict worth another attempt. */
export const isConflict = (e: VectorStoreError): boolean =>
  e._tag === "StoreError" &&
  /conflict|retryable|concurrent|too many|was modified|preempted/i.test(e.message)

// Booleans are stored as Int8 0/1: apache-arrow 18's IPC writer sends an all-null Bool column
// with an empty value buffer, which LanceDB rejects.
const fieldType = (t: string): Arrow.DataType =>
  t === "number" ? new arrow.Float64() : t === "boolean" ? new arrow.Int8() : new arrow.Utf8()

const schemaOf = (spec: CollectionSpec): Arrow.Schema => {
  const fields: Array<Arrow.Field> = [
    new arrow.Field("id", new arrow.Utf8(), false),
    new arrow.Field("document_id", new arrow.Utf8(), false),
    new arrow.Field("title", new arrow.Utf8(), true),
    new arrow.Field("text", new arrow.Utf8(), false),
    // title + text: the field plain BM25 scores (the title alone is indexed too, for boosting)
    new arrow.Field("content", new arrow.Utf8(), false),
    new arrow.Field("metadata", new arrow.Utf8(), false),
    new arrow.Field("content_hash", new arrow.Utf8(), false),
    new arrow.Field(accessColumn, new arrow.Utf8(), true)
  ]
  for (const [name, type] of Object.entries(spec.fields ?? {})) {
    fields.push(new arrow.Field(Filters.fieldColumn(name), fieldType(type), true))
  }
  if (spec.embedding !== undefined) {
    fields.push(
      new arrow.Field(
        "vector",
        new arrow.FixedSizeList(spec.embedding.dimension, new arrow.Field("item", new arrow.Float32(), true)),
        false
      )
    )
  }
  return new arrow.Schema(fields, new Map([[specKey, JSON.stringify(spec)]]))
}

const parseSpec = (name: string, schema: Arrow.Schema): CollectionSpec | undefined => {
  const raw = schema.metadata.get(specKey)
  if (raw === undefined) return undefined
  try {
    const s = JSON.parse(raw) as CollectionSpec
    return { ...s, name }
  } catch {
    return undefined
  }
}

/** A digest of everything stored for a chunk (see `internal/hash.ts`). */
export const contentHash = Hash.contentHash

const toRow = (spec: CollectionSpec, chunk: Chunk): Record<string, unknown> | string => {
  if (chunk.id === "") return "a chunk id must not be empty"
  const accessProblem = checkAccess(chunk.access)
  if (accessProblem !== undefined) return `chunk ${chunk.id}: ${accessProblem}`
  const row: Record<string, unknown> = {
    id: chunk.id,
    document_id: chunk.documentId,
    title: chunk.title ?? null,
    text: chunk.text,
    content: chunk.title === undefined || chunk.title === "" ? chunk.text : `${chunk.title}\n${chunk.text}`,
    metadata: JSON.stringify(chunk.metadata ?? {}),
    [accessColumn]: encodeAccess(chunk.access)
  }
  for (const [name, type] of Object.entries(spec.fields ?? {})) {
    const v = chunk.metadata?.[name] ?? null
    if (v !== null && typeof v !== type) {
      return `chunk ${chunk.id}: metadata field ${name} must be a ${type}, got ${JSON.stringify(v)}`
    }
    if (type === "number" && v !== null && !Number.isFinite(v)) return `chunk ${chunk.id}: metadata field ${name} is not finite`
    row[Filters.fieldColumn(name)] = v
  }
  if (spec.embedding !== undefined) {
    if (chunk.vector === undefined) return `chunk ${chunk.id}: the collection ${spec.name} needs a vector (${describeEmbedding(spec.embedding)})`
    row["vector"] = chunk.vector
  }
  row["content_hash"] = contentHash(chunk)
  return row
}

// Columns are built by hand: apache-arrow 18's row builder leaves buffers short when a nullable
// column ends in nulls (LanceDB then rejects the batch: "Need at least N bytes in buffers[0]").

const validity = (values: ReadonlyArray<unknown>): { bitmap: Uint8Array; nullCount: number } => {
  const bitmap = new Uint8Array(Math.max(1, Math.ceil(values.length / 8)))
  let nullCount = 0
  values.forEach((v, i) => {
    if (v === null || v === undefined) nullCount++
    else bitmap[i >> 3]! |= 1 << (i & 7)
  })
  return { bitmap, nullCount }
}

const utf8Data = (values: ReadonlyArray<unknown>): Arrow.Data => {
  const encoder = new TextEncoder()
  const parts = values.map((v) => (typeof v === "string" ? encoder.encode(v) : new Uint8Array(0)))
  const offsets = new Int32Array(values.length + 1)
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length))
  const data = new Uint8Array(Math.max(1, offsets[values.length]!))
  parts.forEach((p, i) => data.set(p, offsets[i]!))
  const { bitmap, nullCount } = validity(values)
  return arrow.makeData({ type: new arrow.Utf8(), length: values.length, nullCount, nullBitmap: bitmap, valueOffsets: offsets, data })
}

const float64Data = (values: ReadonlyArray<unknown>): Arrow.Data => {
  const data = new Float64Array(values.length)
  values.forEach((v, i) => (data[i] = typeof v === "number" ? v : 0))
  const { bitmap, nullCount } = validity(values)
  return arrow.makeData({ type: new arrow.Float64(), length: values.length, nullCount, nullBitmap: bitmap, data })
}

const int8Data = (values: ReadonlyArray<unknown>): Arrow.Data => {
  const data = new Int8Array(values.length)
  values.forEach((v, i) => (data[i] = v === true ? 1 : 0))
  const { bitmap, nullCount } = validity(values)
  return arrow.makeData({ type: new arrow.Int8(), length: values.length, nullCount, nullBitmap: bitmap, data })
}

const vectorData = (type: Arrow.FixedSizeList, values: ReadonlyArray<unknown>): Arrow.Data => {
  const dim = type.listSize
  const flat = new Float32Array(values.length * dim)
  values.forEach((v, i) => flat.set(v as ArrayLike<number>, i * dim))
  const child = arrow.makeData({ type: new arrow.Float32(), length: flat.length, nullCount: 0, data: flat })
  return arrow.makeData({ type, length: values.length, nullCount: 0, child })
}

const toArrow = (spec: CollectionSpec, rows: ReadonlyArray<Record<string, unknown>>, order?: ReadonlyArray<string>): Arrow.Table => {
  // LanceDB 0.29's merge-insert takes the batch's columns by position: they follow the table's
  // order (a column added to an older table comes last there)
  const rank = (name: string) => (order === undefined || !order.includes(name) ? Number.MAX_SAFE_INTEGER : order.indexOf(name))
  const specSchema = schemaOf(spec)
  const schema = order === undefined ? specSchema : new arrow.Schema([...specSchema.fields].sort((a, b) => rank(a.name) - rank(b.name)), specSchema.metadata)
  const children = schema.fields.map((f) => {
    const values = rows.map((r) => r[f.name] ?? null)
    if (f.type instanceof arrow.Utf8) return utf8Data(values)
    if (f.type instanceof arrow.Float64) return float64Data(values)
    if (f.type instanceof arrow.Int8) return int8Data(values)
    return vectorData(f.type as Arrow.FixedSizeList, values)
  })
  const struct = arrow.makeData({ type: new arrow.Struct(schema.fields), length: rows.length, nullCount: 0, children })
  return new arrow.Table([new arrow.RecordBatch(schema, struct)])
}

const toHit = (row: Record<string, unknown>, score: number): Hit => {
  let metadata: Record<string, Scalar> = {}
  try {
    metadata = JSON.parse(String(row["metadata"] ?? "{}")) as Record<string, Scalar>
  } catch {
    metadata = {}
  }
  const title = row["title"]
  return {
    id: String(row["id"]),
    documentId: String(row["document_id"]),
    text: String(row["text"] ?? ""),
    title: typeof title === "string" ? title : undefined,
    metadata,
    score
  }
}

/** The columns a hit is made of (the declared field columns are in `metadata` too: not read). */
const hitColumns = ["id", "document_id", "title", "text", "metadata"]

/** The default of {@link Options.memoryIndexRows}. */
export const defaultMemoryIndexRows = 20_000

/** A collection's rows and their full-text index, held in memory for one table version. */
interface MemoryText {
  readonly rows: ReadonlyArray<Record<string, unknown>>
  readonly index: FieldIndex
  /** Chunk id -> row. */
  readonly rowOf: ReadonlyMap<string, number>
  /** Parsed `metadata` per row, filled on first use by a filter. */
  readonly metadata: Array<Record<string, Scalar> | undefined>
  /** Whether the rows were read with their access lists (the table had the column). */
  readonly withAccess: boolean
}



// =============================================================================
// Collections
// =============================================================================

interface Settings {
  readonly batchSize: number
  readonly vectorIndexThreshold: number
  readonly reindexAfter: number
  readonly maxFragments: number
  readonly memoryIndexRows: number
  readonly retry: Schedule.Schedule<unknown, VectorStoreError>
}

const makeCollection = (table: lancedb.Table, spec: CollectionSpec, settings: Settings, accessKnown: boolean): Collection => {
  // Writes of this process to this table go one at a time (other processes: see upsert).
  const writeLock = Effect.unsafeMakeSemaphore(1)
  const attempt = <A>(op: string, f: () => Promise<A>): Effect.Effect<A, StoreError> =>
    Effect.tryPromise({ try: f, catch: storeError(`${spec.name}.${op}`) })
  const write = <A>(op: string, f: () => Promise<A>): Effect.Effect<A, VectorStoreError> =>
    attempt(op, f).pipe(Effect.retry(settings.retry))

  // Whether the table has the `access` column (a table created before access lists has not,
  // until a write adds it; another process may add it: a restricted read checks again).
  let hasAccess = accessKnown
  const hasAccessColumn = attempt("schema", () => table.schema()).pipe(
    Effect.map((schema) => schema.fields.some((f) => f.name === accessColumn)),
    Effect.tap((has) => Effect.sync(() => (hasAccess = has)))
  )
  /** Adds the `access` column (all null) to a table created before access lists. */
  const evolveAccess: Effect.Effect<void, VectorStoreError> = Effect.suspend(() =>
    hasAccess ? Effect.void : Effect.gen(function*() {
      if (yield* hasAccessColumn) return
      yield* write("addColumns(access)", async () => {
        const fields = (await table.schema()).fields
        if (!fields.some((f) => f.name === accessColumn)) {
          await table.addColumns([{ name: accessColumn, valueSql: "CAST(NULL AS STRING)" }])
        }
      })
      hasAccess = true
    })
  )

  /** The filter and the scope as one predicate (undefined: every row). */
  const where = (filter: Filter | undefined, scope?: ReadScope | undefined): Effect.Effect<string | undefined, InvalidInput | StoreError> =>
    Effect.gen(function*() {
      const parts: Array<string> = []
      if (filter !== undefined) {
        const problem = Filters.validate(spec, filter)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        parts.push(Filters.toSql(filter))
      }
      if (scope !== undefined && scope._tag === "Entries") {
        const problem = checkAccess(scope.entries)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        // no access column: no chunk has a list, so a restricted read matches nothing
        parts.push(hasAccess || (yield* hasAccessColumn) ? scopeSql(scope.entries) : "(1 = 0)")
      }
      return parts.length === 0 ? undefined : parts.length === 1 ? parts[0] : `(${parts.join(" AND ")})`
    })

  const checkVector = (v: ArrayLike<number>) => checkCollectionVector(spec, v)

  // ---------------------------------------------------------------------------
  // Index maintenance
  // ---------------------------------------------------------------------------

  const ftsIndexed = (): Effect.Effect<Set<string>, StoreError> =>
    attempt("listIndices", () => table.listIndices()).pipe(Effect.map((ix) => new Set(ix.flatMap((i) => i.columns))))

  // Index upkeep, counted by this handle (see the module doc): whether the indexes are known to
  // exist, and the rows and writes since they were last brought up to date.
  let indexed = false
  let unindexedRows = 0
  let writesSinceOptimize = 0

  /**
   * Creates the FTS indexes (and the vector index past the threshold) when missing; true when it
   * created the FTS indexes (they then cover every row).
   */
  const ensureIndexes = Effect.gen(function*() {
    const have = yield* ftsIndexed()
    let created = false
    for (const column of ["content", "title"]) {
      if (!have.has(column)) {
        yield* write(`createIndex(${column})`, () =>
          table.createIndex(column, { config: lancedb.Index.fts({ withPosition: false }), replace: true }))
        created = true
      }
    }
    if (spec.embedding !== undefined && !have.has("vector")) {
      const rows = yield* attempt("countRows", () => table.countRows())
      if (rows >= settings.vectorIndexThreshold) {
        yield* write("createIndex(vector)", () =>
          table.createIndex("vector", { config: lancedb.Index.hnswSq({ distanceType: "cosine" }), replace: true }))
      }
    }
    return created
  })

  const optimize = () =>
    Effect.gen(function*() {
      yield* ensureIndexes
      yield* write("optimize", () => table.optimize({ cleanupOlderThan: new Date(Date.now() - 60_000) }))
      indexed = true
      unindexedRows = 0
      writesSinceOptimize = 0
    }).pipe(Effect.withSpan("LanceDbStore.optimize", { attributes: { collection: spec.name } }))

  /** After a write of `rows` rows: create missing indexes once, optimize when rows or fragments pile up. */
  const maintain = (rows: number) =>
    Effect.gen(function*() {
      writesSinceOptimize++
      unindexedRows += rows
      if (!indexed) {
        if (yield* ensureIndexes) unindexedRows = 0 // a new index covers every row
        indexed = true
      }
      if (unindexedRows >= settings.reindexAfter || writesSinceOptimize > settings.maxFragments) {
        yield* optimize()
      }
    })

  // ---------------------------------------------------------------------------
  // Writes
  // ---------------------------------------------------------------------------

  // The table's column order, read once (not before every batch): it changes only when the
  // `access` column is added, so it is read again when `hasAccess` differs from when it was read.
  let order: { readonly names: Array<string>; readonly withAccess: boolean } | undefined
  const columnOrder: Effect.Effect<Array<string>, StoreError> = Effect.suspend(() =>
    order !== undefined && order.withAccess === hasAccess ? Effect.succeed(order.names) : Effect.map(
      attempt("schema", () => table.schema()),
      (schema) => {
        const names = schema.fields.map((f) => f.name)
        order = { names, withAccess: names.includes(accessColumn) }
        return names
      }
    ))

  const upsert = (chunks: ReadonlyArray<Chunk>) =>
    Effect.gen(function*() {
      let inserted = 0
      let updated = 0
      for (let i = 0; i < chunks.length; i += settings.batchSize) {
        const batch = chunks.slice(i, i + settings.batchSize)
        const rows: Array<Record<string, unknown>> = []
        const seen = new Map<string, number>()
        yield* evolveAccess
        for (const chunk of batch) {
          yield* checkChunkVector(spec, chunk)
          const row = toRow(spec, chunk)
          if (typeof row === "string") return yield* new InvalidInput({ message: row })
          // The last of several chunks with one id in a batch wins (merge-insert would duplicate).
          const at = seen.get(chunk.id)
          if (at === undefined) {
            seen.set(chunk.id, rows.length)
            rows.push(row)
          } else rows[at] = row
        }
        const data = toArrow(spec, rows, yield* columnOrder)
        const merge = () =>
          table.mergeInsert("id")
            // An unchanged chunk is left alone: no rewrite, no index churn.
            .whenMatchedUpdateAll({ where: "target.content_hash <> source.content_hash" })
            .whenNotMatchedInsertAll()
            .execute(data)
        const result = yield* writeLock.withPermits(1)(write("mergeInsert", merge))
        inserted += result.numInsertedRows
        updated += result.numUpdatedRows
        // Two writers (other processes, other connections) inserting the same new id at once
        // can both succeed: check the batch's ids and repair duplicates (delete, merge again).
        const idsSql = Filters.toSql({ _tag: "In", field: "__id", values: rows.map((r) => r["id"] as string) })
        for (let round = 0; round < 5; round++) {
          const present = yield* attempt("countRows", () => table.countRows(idsSql))
          if (present <= rows.length) break
          yield* writeLock.withPermits(1)(
            write("repairDuplicates", () => table.delete(idsSql)).pipe(Effect.zipRight(write("mergeInsert", merge)))
          )
        }
      }
      yield* maintain(inserted + updated)
      return { inserted, updated } satisfies UpsertResult
    }).pipe(Effect.withSpan("LanceDbStore.upsert", { attributes: { collection: spec.name, chunks: chunks.length } }))

  const deleteBy = (op: string, predicate: string) =>
    write(op, () => table.delete(predicate)).pipe(
      Effect.map((r) => r.numDeletedRows),
      Effect.tap(() => maintain(0))
    )

  const deleteDocuments = (documentIds: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      let total = 0
      for (let i = 0; i < documentIds.length; i += 256) {
        const ids = documentIds.slice(i, i + 256)
        if (ids.length === 0) continue
        total += yield* deleteBy("deleteDocuments", Filters.toSql({ _tag: "In", field: "documentId", values: ids }))
      }
      return total
    })

  const deleteWhere = (filter: Filter) =>
    where(filter).pipe(Effect.flatMap((sql) => deleteBy("deleteWhere", sql!)))

  // ---------------------------------------------------------------------------
  // Searches
  // ---------------------------------------------------------------------------

  const ftsQuery = (query: TextQuery, titleBoost: number): lancedb.FullTextQuery | undefined => {
    const parts: Array<{ text: string; weight: number }> = typeof query === "string"
      ? [{ text: query, weight: 1 }]
      : query.terms.filter((t) => t.weight > 0)
    // Each term once, with the sum of its weights: a word the query repeats counts as often as it
    // appears, as in the in-memory index (LanceDB releases differ on whether one match counts a
    // repeated word once or each time). Words the analyzer drops are left out (a match of
    // dropped words alone makes LanceDB fail).
    const byTerm = new Map<string, { word: string; weight: number }>()
    for (const p of parts) {
      for (const t of analyze(p.text)) {
        const e = byTerm.get(t.term)
        if (e === undefined) byTerm.set(t.term, { word: t.word, weight: p.weight })
        else e.weight += p.weight
      }
    }
    if (byTerm.size === 0) return undefined
    // Words of one weight go in one match: a match of several words scores the sum of theirs, and
    // LanceDB's time grows with the clauses of a boolean query.
    const groups = new Map<number, Array<string>>()
    for (const { word, weight } of byTerm.values()) {
      const g = groups.get(weight)
      if (g === undefined) groups.set(weight, [word])
      else g.push(word)
    }
    const matches = [...groups].map(([weight, texts]) => ({ text: texts.join(" "), weight }))
    // one clause: a plain match (a boolean query of one clause costs LanceDB about 1.6× as much)
    if (matches.length === 1 && titleBoost <= 0) return new lancedb.MatchQuery(matches[0]!.text, "content", { boost: matches[0]!.weight })
    const clauses: Array<[lancedb.Occur, lancedb.FullTextQuery]> = []
    for (const p of matches) {
      clauses.push([lancedb.Occur.Should, new lancedb.MatchQuery(p.text, "content", { boost: p.weight })])
      if (titleBoost > 0) {
        clauses.push([lancedb.Occur.Should, new lancedb.MatchQuery(p.text, "title", { boost: p.weight * titleBoost })])
      }
    }
    return new lancedb.BooleanQuery(clauses)
  }

  // The in-memory engine: the rows and index of the table version they were read at; `undefined`
  // when that version had more rows than `memoryIndexRows`.
  let snapshot: { readonly version: number; readonly memory: MemoryText | undefined } | undefined
  const snapshotLock = Effect.unsafeMakeSemaphore(1)

  const readMemory = Effect.flatMap(hasAccessColumn, (withAccess) => attempt("readRows", async (): Promise<MemoryText> => {
    const rows = (await table.query().select(withAccess ? [...hitColumns, accessColumn] : hitColumns).toArray()) as Array<Record<string, unknown>>
    const index = FieldIndex.build(rows.map((r) => {
      const title = typeof r["title"] === "string" ? r["title"] : undefined
      const text = String(r["text"] ?? "")
      // the `content` column's value (see toRow), not read from the table a second time
      return { title, content: title === undefined || title === "" ? text : `${title}\n${text}` }
    }))
    const rowOf = new Map(rows.map((r, i) => [String(r["id"]), i]))
    return { rows, index, rowOf, metadata: new Array(rows.length), withAccess }
  }))

  /** The in-memory engine for the table's current version, read when the table changed; undefined above the size bound. */
  const memoryText: Effect.Effect<MemoryText | undefined, StoreError> = Effect.gen(function*() {
    if (settings.memoryIndexRows === 0) return undefined
    // the version first: rows read after it are at least that new
    const version = yield* attempt("version", () => table.version())
    if (snapshot?.version === version) return snapshot.memory
    return yield* snapshotLock.withPermits(1)(Effect.gen(function*() {
      if (snapshot?.version === version) return snapshot.memory
      const rows = yield* attempt("countRows", () => table.countRows())
      const memory = rows > settings.memoryIndexRows ? undefined : yield* readMemory
      snapshot = { version, memory }
      return memory
    }))
  })

  const searchMemory = (memory: MemoryText, query: TextQuery, options: TextSearchOptions): ReadonlyArray<Hit> => {
    const q = weightedTerms(query)
    if (q.size === 0) return []
    const { index, metadata, rows } = memory
    const filter = options.filter
    const scope = options.scope
    const scoped = scope !== undefined && scope._tag === "Entries"
    const matchesFilter = filter === undefined ? undefined : (row: number) => {
      const r = rows[row]!
      const get = (field: string): Scalar | undefined => {
        if (field === documentIdField) return String(r["document_id"])
        if (field === "__id") return String(r["id"])
        let m = metadata[row]
        if (m === undefined) m = metadata[row] = toHit(r, 0).metadata
        return m[field]
      }
      return Filters.matches(filter, get)
    }
    // the scope first, as the SQL predicate does: rows read without the column have no list
    const accept = !scoped
      ? matchesFilter
      : (row: number) =>
        memory.withAccess && readable(scope, decodeAccess(rows[row]![accessColumn])) &&
        (matchesFilter === undefined || matchesFilter(row))
    const idOf = (row: number) => String(rows[row]!["id"])
    const byId = (a: number, b: number) => {
      const x = idOf(a)
      const y = idOf(b)
      return x < y ? -1 : x > y ? 1 : 0
    }
    return index.search(q, options.titleBoost ?? 0, Math.max(1, options.limit ?? 10), accept, byId)
      .map((h) => toHit(rows[h.row]!, h.score))
  }

  // The rows of the last version read: the ids come from a search that has just checked it.
  const termCounts = (ids: ReadonlyArray<string>, options: ScopeOptions = {}) =>
    Effect.gen(function*() {
      const scope = options.scope
      if (scope !== undefined && scope._tag === "Entries") {
        const problem = checkAccess(scope.entries)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
      }
      const memory = snapshot?.memory
      return ids.map((id) => {
        const row = memory?.rowOf.get(id)
        if (row === undefined) return undefined
        if (scope !== undefined && scope._tag === "Entries" && !(memory!.withAccess && readable(scope, decodeAccess(memory!.rows[row]![accessColumn])))) {
          return undefined
        }
        return memory!.index.contentTerms(row)
      })
    })

  const searchText = (query: TextQuery, options: TextSearchOptions = {}) =>
    Effect.gen(function*() {
      const predicate = yield* where(options.filter, options.scope)
      const memory = yield* memoryText
      if (memory !== undefined) return searchMemory(memory, query, options)
      const q = ftsQuery(query, options.titleBoost ?? 0)
      if (q === undefined) return [] as ReadonlyArray<Hit>
      const limit = Math.max(1, options.limit ?? 10)
      const rows = yield* attempt("searchText", () => {
        let s = (table.search(q) as lancedb.Query).select([...hitColumns, "_score"]).limit(limit)
        if (predicate !== undefined) s = s.where(predicate)
        return s.toArray() as Promise<Array<Record<string, unknown>>>
      })
      // equal scores in id order: the same query gives the same list whichever fragment holds a row
      return rows.map((r) => toHit(r, Number(r["_score"] ?? 0)))
        .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    }).pipe(Effect.withSpan("LanceDbStore.searchText", { attributes: { collection: spec.name } }))

  const searchVector = (vector: Float32Array | ReadonlyArray<number>, options: SearchOptions = {}) =>
    Effect.gen(function*() {
      yield* checkVector(vector)
      const predicate = yield* where(options.filter, options.scope)
      const limit = Math.max(1, options.limit ?? 10)
      const rows = yield* attempt("searchVector", () => {
        let s = table.vectorSearch(Array.from(vector)).distanceType("cosine").select([...hitColumns, "_distance"]).limit(limit)
        if (predicate !== undefined) s = s.where(predicate)
        return s.toArray() as Promise<Array<Record<string, unknown>>>
      })
      return rows.map((r) => toHit(r, 1 - Number(r["_distance"] ?? 1)))
    }).pipe(Effect.withSpan("LanceDbStore.searchVector", { attributes: { collection: spec.name } }))

  const searchHybrid = Fusion.hybridSearch(searchText, searchVector)

  const count = (filter?: Filter, options: ScopeOptions = {}) =>
    where(filter, options.scope).pipe(Effect.flatMap((sql) => attempt("count", () => table.countRows(sql))))

  const listDocuments = (options: ScopeOptions = {}) =>
    Effect.flatMap(where(undefined, options.scope), (predicate) => attempt("listDocuments", async () => {
      const counts = new Map<string, number>()
      const q = table.query().select(["document_id"])
      for await (const batch of predicate === undefined ? q : q.where(predicate)) {
        const col = batch.getChild("document_id")
        if (col === null) continue
        for (let i = 0; i < batch.numRows; i++) {
          const id = String(col.get(i))
          counts.set(id, (counts.get(id) ?? 0) + 1)
        }
      }
      return [...counts.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([documentId, chunks]): DocumentEntry => ({ documentId, chunks }))
    }))

  const scan = (filter?: Filter, options: ScopeOptions = {}) =>
    Effect.gen(function*() {
      const predicate = yield* where(filter, options.scope)
      const rows = yield* attempt("scan", () => {
        let q = table.query().select(hitColumns)
        if (predicate !== undefined) q = q.where(predicate)
        return q.toArray() as Promise<Array<Record<string, unknown>>>
      })
      return rows.map((r) => toHit(r, 0)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    })

  return {
    spec,
    upsert,
    deleteDocuments,
    deleteWhere,
    searchText,
    searchVector,
    searchHybrid,
    count,
    listDocuments,
    optimize,
    termCounts,
    scan,
    enforcesAccess: true
  }
}

/** The default fusion of hybrid search (see `Fusion.ts`). */
export const defaultFusion = Fusion.defaultFusion

// =============================================================================
// Constructor and layers
// =============================================================================

/** Connects to the database in `options.uri`; the connection closes with the scope. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const settings: Settings = {
      batchSize: Math.max(1, options.batchSize ?? 4096),
      vectorIndexThreshold: Math.max(1, options.vectorIndexThreshold ?? 100_000),
      reindexAfter: Math.max(1, options.reindexAfter ?? 20_000),
      maxFragments: Math.max(1, options.maxFragments ?? 64),
      memoryIndexRows: Math.max(0, options.memoryIndexRows ?? defaultMemoryIndexRows),
      retry: Schedule.exponential("20 millis").pipe(
        Schedule.jittered,
        Schedule.intersect(Schedule.recurs(Math.max(0, options.writeRetries ?? 8))),
        Schedule.whileInput((e: VectorStoreError) => isConflict(e))
      )
    }
    const remote = isObjectStoreUri(options.uri)
    ensureCpuThreads() // before LanceDB starts its CPU pool: see internal/lance-threads.ts
    const connection = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          if (!remote) mkdirSync(/^file:\/\//i.test(options.uri) ? fileURLToPath(options.uri) : options.uri, { recursive: true })
          return lancedb.connect(options.uri, {
            readConsistencyInterval: 0,
            ...(remote ? { storageOptions: lanceStorageOptions(options.storage) } : {})
          })
        },
        catch: storeError("connect")
      }),
      (db) => Effect.sync(() => db.close())
    )
    // One handle per table name, shared by every caller of this layer.
    const open = new Map<string, Collection>()
    const attempt = <A>(op: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: storeError(op) })

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
        const c = makeCollection(table, spec, settings, schema.fields.some((f) => f.name === accessColumn))
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
        const c = makeCollection(table, spec, settings, schema.fields.some((f) => f.name === accessColumn))
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
      list: () => attempt("tableNames", () => connection.tableNames()),
      drop: (name) =>
        Effect.gen(function*() {
          open.delete(name)
          const names = yield* attempt("tableNames", () => connection.tableNames())
          if (names.includes(name)) yield* attempt("dropTable", () => connection.dropTable(name))
        })
    }
    return service
  })

/** A layer providing {@link LanceDbStore} and the {@link VectorStore} port. */
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
 */
export const layerAt = (
  uri: string,
  options: Omit<Options, "uri" | "storage"> = {}
): Layer.Layer<LanceDbStore | VectorStore, StoreError | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(storageConfig, (storage) => layer({ ...options, uri, storage })))

/**
 * The same with the database from `EFFECT_RAG_DB` (a folder or an object-store URI; default
 * `.effect-rag/db`, the CLI's default).
 */
export const layerConfig: Layer.Layer<LanceDbStore | VectorStore, StoreError | ConfigError.ConfigError> =
  Layer.unwrapEffect(
    optionalString("EFFECT_RAG_DB").pipe(
      Effect.map((uri) => layerAt(Option.getOrElse(uri, () => defaultDb)))
    )
  )
