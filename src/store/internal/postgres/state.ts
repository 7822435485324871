/**
 * The explicit state of one open collection of the PostgreSQL adapter, built once when the
 * collection is opened and passed to every operation (writes, searches, reads): the pool, the
 * stored spec, its tables, columns and statements, and how errors, the write lock and the
 * read predicate are made. Nothing in it changes after it is built.
 */
import * as Effect from "effect/Effect"
import { checkAccess, type CollectionSpec, type FieldType, type Filter, InvalidInput, type ReadScope, StoreError } from "../../VectorStore.js"
import { lockedTransaction, messageOf, type Pool, type Queryable } from "./client.js"
import { rowCodec, type RowCodec } from "./codec.js"
import { compileFilter, fieldColumns, maxIndexedDimension, type Params, type Tables, tablesOf } from "./sql.js"

/** How the adapter uses the database (from its options). */
export interface Settings {
  readonly schema: string
  /** Chunks per write transaction. */
  readonly batchSize: number
  /** The first key of the adapter's advisory locks (from the schema name). */
  readonly lockSpace: number
}

/** A collection's row in `<schema>.collections`. */
export interface Stored {
  readonly id: number
  readonly spec: CollectionSpec
}

/** One open collection. */
export interface CollectionState {
  readonly pool: Pool
  readonly settings: Settings
  readonly id: number
  readonly spec: CollectionSpec
  readonly tables: Tables
  /** The declared fields: name, type, column. */
  readonly fields: ReadonlyArray<readonly [field: string, type: FieldType, column: string]>
  /** Whether the vectors have an HNSW index (an embedding of at most {@link maxIndexedDimension}). */
  readonly indexed: boolean
  readonly codec: RowCodec
}

/** The state of the stored collection `stored`. */
export const makeState = (pool: Pool, settings: Settings, stored: Stored): CollectionState => {
  const { spec } = stored
  const tables = tablesOf(settings.schema, stored.id)
  const fields = fieldColumns(spec)
  return {
    pool,
    settings,
    id: stored.id,
    spec,
    tables,
    fields,
    indexed: spec.embedding !== undefined && spec.embedding.dimension <= maxIndexedDimension,
    codec: rowCodec(tables.chunks, spec, fields)
  }
}

/** The error of operation `op` on the collection. */
export const fail = (state: CollectionState, op: string) => (cause: unknown) =>
  new StoreError({ op: `${state.spec.name}.${op}`, message: `${state.spec.name}.${op}: ${messageOf(cause)}`, cause })

/** One statement on the pool. */
export const run = (state: CollectionState, op: string, text: string, values?: ReadonlyArray<unknown>) =>
  Effect.tryPromise({ try: () => state.pool.query(text, values), catch: fail(state, op) })

/** Runs `f` in a transaction holding the collection's write lock (writers of any process take turns). */
export const locked = <A>(state: CollectionState, op: string, f: (c: Queryable) => Promise<A>) =>
  lockedTransaction(state.pool, [state.settings.lockSpace, state.id], fail(state, op), f)

/**
 * The filter and the read scope as one predicate on the chunks table, applied before ranking
 * and the limit: a restricted scope reads the chunks whose access list shares an entry with it
 * (a chunk without a list is read only unrestricted). Every value is a bound parameter.
 */
export const where = (
  state: CollectionState,
  filter: Filter | undefined,
  params: Params,
  scope?: ReadScope | undefined
): Effect.Effect<string, InvalidInput> => {
  let scoped = "TRUE"
  if (scope !== undefined && scope._tag === "Entries") {
    const problem = checkAccess(scope.entries)
    if (problem !== undefined) return Effect.fail(new InvalidInput({ message: problem }))
    scoped = `access && ${params.bind([...new Set(scope.entries)])}::text[]`
  }
  if (filter === undefined) return Effect.succeed(scoped)
  const r = compileFilter(state.spec, filter, params.bind)
  if (r._tag === "Left") return Effect.fail(new InvalidInput({ message: r.left }))
  return Effect.succeed(scoped === "TRUE" ? r.right : `(${scoped}) AND (${r.right})`)
}

/** Changes of the full-text statistics kept in the collection's row. */
export interface StatsDelta {
  chunks: number
  content: number
  titled: number
  title: number
}

/** Adds `delta` to the collection's statistics, in the transaction of `c`. */
export const updateStats = (state: CollectionState, c: Queryable, delta: StatsDelta) =>
  c.query(
    `UPDATE ${state.tables.collections} SET n_chunks = n_chunks + $2, content_total = content_total + $3, n_titled = n_titled + $4, title_total = title_total + $5 WHERE id = $1`,
    [state.id, delta.chunks, delta.content, delta.titled, delta.title]
  )
