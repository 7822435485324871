/**
 * Schema creation of the PostgreSQL adapter: the schema and its `collections` table (created
 * when missing), each collection's `chunks_<n>` and `postings_<n>` tables with their indexes,
 * reading a collection's stored spec and dropping a collection. Setup runs one at a time across
 * processes (the advisory lock `(lockSpace, 0)`: `CREATE … IF NOT EXISTS` races otherwise).
 */
import * as Effect from "effect/Effect"
import { type CollectionSpec, StoreError } from "../../VectorStore.js"
import { lockedTransaction, messageOf, type Pool, type Queryable } from "./client.js"
import { fieldColumns, ident, maxIndexedDimension, sqlType, tablesOf } from "./sql.js"
import type { Settings, Stored } from "./state.js"

/** The schema of an open store: where its collections are listed. */
export interface Catalog {
  readonly pool: Pool
  readonly settings: Settings
  /** `postgres://user@host:port/database`, for messages. */
  readonly location: string
  /** `<schema>.collections`. */
  readonly collections: string
}

/** The catalog of `settings.schema`. */
export const makeCatalog = (pool: Pool, settings: Settings, location: string): Catalog => ({
  pool,
  settings,
  location,
  collections: `${ident(settings.schema)}.collections`
})

/** The error of setup operation `op`. */
export const setupError = (catalog: Catalog, op: string) => (cause: unknown) =>
  new StoreError({ op, message: `${op} (${catalog.location}): ${messageOf(cause)}`, cause })

const setupLocked = <A>(catalog: Catalog, op: string, f: (c: Queryable) => Promise<A>) =>
  lockedTransaction(catalog.pool, [catalog.settings.lockSpace, 0], setupError(catalog, op), f)

/** Creates the schema and the `collections` table when missing. */
export const ensureSchema = (catalog: Catalog) =>
  setupLocked(catalog, "connect", async (c) => {
    const schema = catalog.settings.schema
    // created only when missing: CREATE SCHEMA needs the CREATE privilege on the database even
    // when the schema exists, which a role given only the schema may not have
    const exists = await c.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])
    if (exists.rows.length === 0) await c.query(`CREATE SCHEMA ${ident(schema)}`)
    await c.query(`CREATE TABLE IF NOT EXISTS ${catalog.collections} (
        id serial PRIMARY KEY,
        name text COLLATE "C" NOT NULL UNIQUE,
        spec jsonb NOT NULL,
        n_chunks bigint NOT NULL DEFAULT 0,
        content_total bigint NOT NULL DEFAULT 0,
        n_titled bigint NOT NULL DEFAULT 0,
        title_total bigint NOT NULL DEFAULT 0)`)
  })

/** The stored collection `name`, if there is one. */
export const readStored = (catalog: Catalog, c: Queryable, name: string): Promise<Stored | undefined> =>
  c.query(`SELECT id, spec FROM ${catalog.collections} WHERE name = $1`, [name]).then((r) => {
    const row = r.rows[0]
    return row === undefined ? undefined : { id: Number(row["id"]), spec: { ...(row["spec"] as CollectionSpec), name } }
  })

/** {@link readStored} on the pool, failing as setup operation `op`. */
export const findStored = (catalog: Catalog, op: string, name: string) =>
  Effect.tryPromise({ try: () => readStored(catalog, catalog.pool, name), catch: setupError(catalog, op) })

/** The names of the collections, sorted. */
export const listNames = (catalog: Catalog) =>
  Effect.tryPromise({
    try: () => catalog.pool.query(`SELECT name FROM ${catalog.collections} ORDER BY name`),
    catch: setupError(catalog, "list")
  }).pipe(Effect.map((r) => r.rows.map((x) => String(x["name"]))))

/** Creates the tables of collection `id` with `spec`. */
const createTables = async (catalog: Catalog, c: Queryable, id: number, spec: CollectionSpec) => {
  const { chunks, postings } = tablesOf(catalog.settings.schema, id)
  const typed = fieldColumns(spec).map(([, t, col]) => `, ${ident(col)} ${sqlType(t)}`).join("")
  const vector = spec.embedding === undefined ? "" : `, vector vector(${spec.embedding.dimension}) NOT NULL`
  await c.query(`CREATE TABLE ${chunks} (
          id text COLLATE "C" PRIMARY KEY,
          document_id text COLLATE "C" NOT NULL,
          title text,
          text text NOT NULL,
          metadata jsonb NOT NULL,
          content_hash text NOT NULL,
          content_len int NOT NULL,
          title_len int,
          access text[]${typed}${vector})`)
  await c.query(`CREATE INDEX ON ${chunks} (document_id)`)
  if (spec.embedding !== undefined && spec.embedding.dimension <= maxIndexedDimension) {
    await c.query(`CREATE INDEX ON ${chunks} USING hnsw (vector vector_cosine_ops)`)
  }
  await c.query(`CREATE TABLE ${postings} (
          term text COLLATE "C" NOT NULL,
          field smallint NOT NULL,
          chunk_id text COLLATE "C" NOT NULL,
          tf int NOT NULL,
          len int NOT NULL,
          word text NOT NULL,
          -- the columns BM25 reads are in the index: a search reads no table page (after a vacuum)
          PRIMARY KEY (term, field, chunk_id) INCLUDE (tf, len))`)
  await c.query(`CREATE INDEX ON ${postings} (chunk_id)`)
}

/** The collection `requested.name`: the stored one when another caller created it first, else a new one. */
export const createCollection = (catalog: Catalog, requested: CollectionSpec) =>
  setupLocked(catalog, "createCollection", async (c): Promise<Stored> => {
    const existing = await readStored(catalog, c, requested.name)
    if (existing !== undefined) return existing
    const spec: CollectionSpec = {
      name: requested.name,
      ...(requested.embedding === undefined ? {} : { embedding: { ...requested.embedding } }),
      ...(requested.fields === undefined ? {} : { fields: { ...requested.fields } }),
      ...(requested.fullText === false ? { fullText: false } : {})
    }
    if (spec.embedding !== undefined) await c.query("CREATE EXTENSION IF NOT EXISTS vector")
    const r = await c.query(`INSERT INTO ${catalog.collections} (name, spec) VALUES ($1, $2) RETURNING id`, [spec.name, JSON.stringify(spec)])
    const id = Number(r.rows[0]!["id"])
    await createTables(catalog, c, id, spec)
    return { id, spec }
  })

/** Drops the collection `name` (nothing when there is none), after its writers finish. */
export const dropCollection = (catalog: Catalog, name: string) =>
  setupLocked(catalog, "drop", async (c) => {
    const stored = await readStored(catalog, c, name)
    if (stored === undefined) return
    // writers of the collection finish first
    await c.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", [catalog.settings.lockSpace, stored.id])
    const { chunks, postings } = tablesOf(catalog.settings.schema, stored.id)
    await c.query(`DROP TABLE IF EXISTS ${postings}, ${chunks}`)
    await c.query(`DELETE FROM ${catalog.collections} WHERE id = $1`, [stored.id])
  })
