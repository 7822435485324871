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
 *   analyser the other adapters use (`internal/text.ts`: lower case, LanceDB's English stop
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
import { createHash } from "node:crypto"
import * as Optional from "../internal/optional.js"
import type * as RagError from "../RagError.js"
import { weightedTerms } from "./internal/bm25.js"
import * as Filters from "./internal/filter.js"
import * as Fusion from "./Fusion.js"
import { contentHash } from "./internal/hash.js"
import { stem, stopWords, terms, words } from "./TextAnalysis.js"
import {
  checkAccess,
  type Chunk,
  type Collection,
  CollectionNotFound,
  type CollectionSpec,
  checkChunkVector,
  checkSpec,
  checkVector,
  describeEmbedding,
  type DocumentEntry,
  documentIdField,
  EmbeddingMismatch,
  type FieldType,
  type Filter,
  type ReadScope,
  type ScopeOptions,
  type Hit,
  type HybridSearchOptions,
  InvalidInput,
  requireFullText,
  sameEmbedding,
  type Scalar,
  type SearchOptions,
  type Service as VectorStoreService,
  StoreError,
  type TermCounts,
  type TextQuery,
  type TextSearchOptions,
  type UpsertResult,
  VectorStore,
  type VectorStoreError
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
export interface Options {
  /** Host name or address (default `127.0.0.1`). */
  readonly host?: string | undefined
  /** Port (default 5432). */
  readonly port?: number | undefined
  /** Role (default: `pg`'s, i.e. `PGUSER` or the operating-system user). */
  readonly user?: string | undefined
  /** The role's password; omitted: `pg` reads `PGPASSWORD` or `~/.pgpass` itself. */
  readonly password?: Redacted.Redacted<string> | undefined
  /** Database (default: `pg`'s, i.e. `PGDATABASE` or the user name). */
  readonly database?: string | undefined
  /** TLS: `true` verifies the server's certificate, `"no-verify"` encrypts without verifying. */
  readonly ssl?: boolean | "no-verify" | undefined
  /** The schema that holds the collections (default `effect_rag`; created when missing). */
  readonly schema?: string | undefined
  /** Connections in the pool (default 4). */
  readonly maxConnections?: number | undefined
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
export const maxIndexedDimension = 2000

// =============================================================================
// The part of node-postgres the adapter uses (its own types stay out of the public API)
// =============================================================================

interface QueryResult {
  readonly rows: Array<Record<string, unknown>>
  readonly rowCount: number | null
}
interface Queryable {
  readonly query: (text: string, values?: ReadonlyArray<unknown>) => Promise<QueryResult>
}
interface PoolClient extends Queryable {
  readonly release: (error?: Error | boolean) => void
}
interface Pool extends Queryable {
  readonly connect: () => Promise<PoolClient>
  readonly end: () => Promise<void>
  readonly on: (event: "error", listener: (error: Error) => void) => unknown
}
type PoolConstructor = new(config: Record<string, unknown>) => Pool

const loadPg: Effect.Effect<PoolConstructor, StoreError | RagError.MissingPackage> = Optional.load(
  "postgres",
  () => import("pg"),
  (cause) => new StoreError({ op: "load", message: `cannot load pg: ${messageOf(cause)}`, cause })
).pipe(Effect.map((mod) => {
  const m = mod as unknown as { default?: { Pool: PoolConstructor }; Pool?: PoolConstructor }
  return (m.default?.Pool ?? m.Pool)!
}))

// =============================================================================
// Helpers
// =============================================================================

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const schemaPattern = /^[a-z_][a-z0-9_]{0,62}$/

/** A quoted identifier of ours (checked names and numbered tables only). */
const ident = (name: string): string => `"${name.replace(/"/g, "\"\"")}"`

/** A 32-bit key of a text (advisory locks). */
const key32 = (text: string): number => createHash("sha256").update(text).digest().readInt32BE(0)

/** The declared fields in column order: `f0`, `f1`, ... by sorted field name. */
const fieldColumns = (spec: CollectionSpec): ReadonlyArray<readonly [field: string, type: FieldType, column: string]> =>
  Object.keys(spec.fields ?? {}).sort().map((f, i) => [f, spec.fields![f]!, `f${i}`] as const)

const sqlType = (t: FieldType): string => (t === "number" ? "double precision" : t === "boolean" ? "boolean" : "text")

const vectorLiteral = (v: ArrayLike<number>): string => `[${Array.from(Float32Array.from(v as ArrayLike<number>)).join(",")}]`

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
export const compileFilter = (
  spec: CollectionSpec,
  filter: Filter,
  bind: (value: Scalar) => string
): Outcome<string, string> => {
  const problem = Filters.validate(spec, filter)
  if (problem !== undefined) return { _tag: "Left", left: problem }
  const columns = new Map<string, readonly [string, FieldType]>([[documentIdField, ["document_id", "string"]]])
  for (const [f, t, c] of fieldColumns(spec)) columns.set(f, [c, t])
  const col = (field: string): readonly [string, FieldType] => columns.get(field)!
  const go = (f: Filter): string => {
    switch (f._tag) {
      case "Compare": {
        const [c, t] = col(f.field)
        if (f.value === null) return `(${ident(c)} IS ${f.op === "=" ? "" : "NOT "}NULL)`
        const op = f.op === "!=" ? "<>" : f.op
        const collate = t === "string" && op !== "=" && op !== "<>" ? ` COLLATE "C"` : ""
        return `(${ident(c)}${collate} ${op} ${bind(f.value)})`
      }
      case "In": {
        const [c] = col(f.field)
        return `(${ident(c)} IN (${f.values.map(bind).join(", ")}))`
      }
      case "And":
        return `(${f.filters.map(go).join(" AND ")})`
      case "Or":
        return `(${f.filters.map(go).join(" OR ")})`
      case "Not":
        return `(NOT ${go(f.filter)})`
    }
  }
  return { _tag: "Right", right: go(filter) }
}

/**
 * A result or the message of what is wrong (`Left`).
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome<E, A> = { readonly _tag: "Left"; readonly left: E } | { readonly _tag: "Right"; readonly right: A }

/** Bound parameters of one statement. */
class Params {
  readonly values: Array<unknown> = []
  bind = (v: unknown): string => {
    this.values.push(v)
    return `$${this.values.length}`
  }
}

// =============================================================================
// Analysis (the same as the in-memory index's, see internal/bm25.ts)
// =============================================================================

interface Analysed {
  /** content terms: term -> [count, first word] */
  readonly content: Map<string, [number, string]>
  readonly contentLength: number
  readonly title: Map<string, [number, string]> | undefined
  readonly titleLength: number | undefined
}

const analyseChunk = (chunk: Chunk): Analysed => {
  const content = new Map<string, [number, string]>()
  let contentLength = 0
  const text = chunk.title === undefined || chunk.title === "" ? chunk.text : `${chunk.title}\n${chunk.text}`
  for (const w of words(text)) {
    if (w.length > 40 || stopWords.has(w)) continue
    const t = stem(w)
    const e = content.get(t)
    if (e === undefined) content.set(t, [1, w])
    else e[0]++
    contentLength++
  }
  if (chunk.title === undefined) return { content, contentLength, title: undefined, titleLength: undefined }
  const title = new Map<string, [number, string]>()
  const ts = terms(chunk.title)
  for (const t of ts) {
    const e = title.get(t)
    if (e === undefined) title.set(t, [1, t])
    else e[0]++
  }
  return { content, contentLength, title, titleLength: ts.length }
}

// =============================================================================
// Collections
// =============================================================================

interface Settings {
  readonly schema: string
  readonly batchSize: number
  readonly lockSpace: number
}

interface Stored {
  readonly id: number
  readonly spec: CollectionSpec
}

const k1 = 1.2
const b = 0.75

const makeCollection = (pool: Pool, settings: Settings, stored: Stored): Collection => {
  const { spec } = stored
  const s = ident(settings.schema)
  const chunks = `${s}.${ident(`chunks_${stored.id}`)}`
  const postings = `${s}.${ident(`postings_${stored.id}`)}`
  const collections = `${s}.collections`
  const fields = fieldColumns(spec)
  const indexed = spec.embedding !== undefined && spec.embedding.dimension <= maxIndexedDimension

  const fail = (op: string) => (cause: unknown) =>
    new StoreError({ op: `${spec.name}.${op}`, message: `${spec.name}.${op}: ${messageOf(cause)}`, cause })
  const run = (op: string, text: string, values?: ReadonlyArray<unknown>) =>
    Effect.tryPromise({ try: () => pool.query(text, values), catch: fail(op) })

  /** Runs `f` in a transaction holding the collection's write lock. */
  const locked = <A>(op: string, f: (c: Queryable) => Promise<A>) =>
    transaction(pool, fail(op), async (c) => {
      await c.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", [settings.lockSpace, stored.id])
      return f(c)
    })

  /**
   * The filter and the read scope as one predicate on the chunks table, applied before ranking
   * and the limit: a restricted scope reads the chunks whose access list shares an entry with it
   * (a chunk without a list is read only unrestricted). Every value is a bound parameter.
   */
  const where = (filter: Filter | undefined, params: Params, scope?: ReadScope | undefined): Effect.Effect<string, InvalidInput> => {
    let scoped = "TRUE"
    if (scope !== undefined && scope._tag === "Entries") {
      const problem = checkAccess(scope.entries)
      if (problem !== undefined) return Effect.fail(new InvalidInput({ message: problem }))
      scoped = `access && ${params.bind([...new Set(scope.entries)])}::text[]`
    }
    if (filter === undefined) return Effect.succeed(scoped)
    const r = compileFilter(spec, filter, params.bind)
    if (r._tag === "Left") return Effect.fail(new InvalidInput({ message: r.left }))
    return Effect.succeed(scoped === "TRUE" ? r.right : `(${scoped}) AND (${r.right})`)
  }

  const toHit = (r: Record<string, unknown>, score: number): Hit => ({
    id: String(r["id"]),
    documentId: String(r["document_id"]),
    text: String(r["text"] ?? ""),
    title: typeof r["title"] === "string" ? r["title"] : undefined,
    metadata: (r["metadata"] ?? {}) as Record<string, Scalar>,
    score
  })

  // ---------------------------------------------------------------------------
  // Writes
  // ---------------------------------------------------------------------------

  const checkChunk = (chunk: Chunk): Effect.Effect<void, VectorStoreError> =>
    Effect.gen(function*() {
      if (chunk.id === "") return yield* new InvalidInput({ message: "a chunk id must not be empty" })
      const accessProblem = checkAccess(chunk.access)
      if (accessProblem !== undefined) return yield* new InvalidInput({ message: `chunk ${chunk.id}: ${accessProblem}` })
      yield* checkChunkVector(spec, chunk)
      for (const [name, type] of fields) {
        const v = chunk.metadata?.[name] ?? null
        if (v !== null && (typeof v !== type || (type === "number" && !Number.isFinite(v)))) {
          return yield* new InvalidInput({ message: `chunk ${chunk.id}: metadata field ${name} must be a ${type}, got ${JSON.stringify(v)}` })
        }
      }
    })

  const columns = [
    "id",
    "document_id",
    "title",
    "text",
    "metadata",
    "content_hash",
    "content_len",
    "title_len",
    "access",
    ...fields.map(([, , c]) => c),
    ...(spec.embedding === undefined ? [] : ["vector"])
  ]
  const arrayTypes = [
    "text[]",
    "text[]",
    "text[]",
    "text[]",
    "jsonb[]",
    "text[]",
    "int[]",
    "int[]",
    "jsonb[]",
    ...fields.map(([, t]) => `${sqlType(t)}[]`),
    ...(spec.embedding === undefined ? [] : ["text[]"])
  ]
  const insertChunks = `INSERT INTO ${chunks} (${columns.map(ident).join(", ")}) SELECT ${
    columns.map((c) =>
      c === "vector"
        ? `t.${ident(c)}::vector`
        // an access list travels as a JSON array (unnest flattens arrays of arrays)
        : c === "access"
        ? `CASE WHEN t.access IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(t.access)) END`
        : `t.${ident(c)}`
    ).join(", ")
  } FROM unnest(${arrayTypes.map((t, i) => `$${i + 1}::${t}`).join(", ")}) AS t(${columns.map(ident).join(", ")})`
  const insertPostings = `INSERT INTO ${postings} (term, field, chunk_id, tf, len, word)
    SELECT * FROM unnest($1::text[], $2::smallint[], $3::text[], $4::int[], $5::int[], $6::text[])`

  const writeBatch = (batch: ReadonlyArray<Chunk>) =>
    locked("upsert", async (c) => {
      const hashes = batch.map(contentHash)
      const ids = batch.map((ch) => ch.id)
      const existing = new Map<string, string>()
      for (const r of (await c.query(`SELECT id, content_hash FROM ${chunks} WHERE id = ANY($1::text[])`, [ids])).rows) {
        existing.set(String(r["id"]), String(r["content_hash"]))
      }
      const write: Array<number> = []
      const replaced: Array<string> = []
      let inserted = 0
      let updated = 0
      batch.forEach((ch, i) => {
        const old = existing.get(ch.id)
        if (old === hashes[i]) return
        if (old === undefined) inserted++
        else {
          updated++
          replaced.push(ch.id)
        }
        write.push(i)
      })
      if (write.length === 0) return { inserted, updated }
      let dChunks = 0
      let dContent = 0
      let dTitled = 0
      let dTitle = 0
      if (replaced.length > 0) {
        await c.query(`DELETE FROM ${postings} WHERE chunk_id = ANY($1::text[])`, [replaced])
        const gone = await c.query(`DELETE FROM ${chunks} WHERE id = ANY($1::text[]) RETURNING content_len, title_len`, [replaced])
        for (const r of gone.rows) {
          dChunks--
          dContent -= Number(r["content_len"])
          if (r["title_len"] !== null) {
            dTitled--
            dTitle -= Number(r["title_len"])
          }
        }
      }
      const cols: Array<Array<unknown>> = columns.map(() => [])
      const p: [Array<string>, Array<number>, Array<string>, Array<number>, Array<number>, Array<string>] = [[], [], [], [], [], []]
      for (const i of write) {
        const ch = batch[i]!
        const a = analyseChunk(ch)
        const row: Array<unknown> = [
          ch.id,
          ch.documentId,
          ch.title ?? null,
          ch.text,
          JSON.stringify(ch.metadata ?? {}),
          hashes[i],
          a.contentLength,
          a.titleLength ?? null,
          ch.access === undefined ? null : JSON.stringify([...new Set(ch.access)]),
          ...fields.map(([f]) => ch.metadata?.[f] ?? null),
          ...(spec.embedding === undefined ? [] : [vectorLiteral(ch.vector!)])
        ]
        row.forEach((v, j) => cols[j]!.push(v))
        dChunks++
        dContent += a.contentLength
        if (a.titleLength !== undefined) {
          dTitled++
          dTitle += a.titleLength
        }
        const post = (field: number, m: Map<string, [number, string]>, len: number) => {
          for (const [term, [tf, word]] of m) {
            p[0].push(term)
            p[1].push(field)
            p[2].push(ch.id)
            p[3].push(tf)
            p[4].push(len)
            p[5].push(word)
          }
        }
        post(0, a.content, a.contentLength)
        if (a.title !== undefined) post(1, a.title, a.titleLength!)
      }
      await c.query(insertChunks, cols)
      if (p[0].length > 0) await c.query(insertPostings, p)
      await c.query(
        `UPDATE ${collections} SET n_chunks = n_chunks + $2, content_total = content_total + $3, n_titled = n_titled + $4, title_total = title_total + $5 WHERE id = $1`,
        [stored.id, dChunks, dContent, dTitled, dTitle]
      )
      return { inserted, updated }
    })

  const upsert = (input: ReadonlyArray<Chunk>) =>
    Effect.gen(function*() {
      // the last of several chunks with one id wins
      const byId = new Map<string, Chunk>()
      for (const ch of input) {
        yield* checkChunk(ch)
        byId.delete(ch.id)
        byId.set(ch.id, ch)
      }
      const all = [...byId.values()]
      let inserted = 0
      let updated = 0
      for (let i = 0; i < all.length; i += settings.batchSize) {
        const r = yield* writeBatch(all.slice(i, i + settings.batchSize))
        inserted += r.inserted
        updated += r.updated
      }
      return { inserted, updated } satisfies UpsertResult
    }).pipe(Effect.withSpan("PostgresStore.upsert", { attributes: { collection: spec.name, chunks: input.length } }))

  /** Deletes the chunks matching `condition` (with its parameters) and their postings. */
  const deleteMatching = (op: string, condition: string, params: Params) =>
    locked(op, async (c) => {
      const gone = await c.query(
        `WITH gone AS (DELETE FROM ${chunks} WHERE ${condition} RETURNING id, content_len, title_len),
          p AS (DELETE FROM ${postings} WHERE chunk_id IN (SELECT id FROM gone))
        SELECT count(*) AS n, coalesce(sum(content_len), 0) AS content, count(title_len) AS titled,
          coalesce(sum(title_len), 0) AS title FROM gone`,
        params.values
      )
      const r = gone.rows[0]!
      const n = Number(r["n"])
      if (n > 0) {
        await c.query(
          `UPDATE ${collections} SET n_chunks = n_chunks - $2, content_total = content_total - $3, n_titled = n_titled - $4, title_total = title_total - $5 WHERE id = $1`,
          [stored.id, n, Number(r["content"]), Number(r["titled"]), Number(r["title"])]
        )
      }
      return n
    })

  const deleteDocuments = (documentIds: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      if (documentIds.length === 0) return Effect.succeed(0)
      const params = new Params()
      return deleteMatching("deleteDocuments", `document_id = ANY(${params.bind([...documentIds])}::text[])`, params)
    })

  const deleteWhere = (filter: Filter) =>
    Effect.suspend(() => {
      const params = new Params()
      return where(filter, params).pipe(Effect.flatMap((cond) => deleteMatching("deleteWhere", cond, params)))
    })

  // ---------------------------------------------------------------------------
  // Searches
  // ---------------------------------------------------------------------------

  const searchText = (query: TextQuery, options: TextSearchOptions = {}) =>
    Effect.gen(function*() {
      yield* requireFullText(spec)
      const params = new Params()
      const q = weightedTerms(query)
      const termsP = params.bind([...q.keys()])
      const weightsP = params.bind([...q.values()])
      const boost = Math.max(0, options.titleBoost ?? 0)
      const boostP = params.bind(boost)
      const idP = params.bind(stored.id)
      const cond = yield* where(options.filter, params, options.scope)
      if (q.size === 0) return [] as ReadonlyArray<Hit>
      const limitP = params.bind(Math.max(1, options.limit ?? 10))
      const fieldsWanted = boost > 0 ? "(0, 1)" : "(0)"
      // BM25 per field, as internal/bm25.ts scores it:
      // weight × idf × tf (k1 + 1) / (tf + k1 (1 − b + b · len / avg)), the title's times the boost
      // float8 constants: a bare 1.2 is numeric in SQL, several times slower per posting
      const f = (x: number) => `${x}::float8`
      const scored = `
        WITH q(term, w) AS (SELECT * FROM unnest(${termsP}::text[], ${weightsP}::float8[])),
        st AS (SELECT n_chunks::float8 AS n0, content_total::float8 AS t0, n_titled::float8 AS n1, title_total::float8 AS t1
               FROM ${collections} WHERE id = ${idP}),
        hits AS (SELECT p.term, p.field, p.chunk_id, p.tf, p.len, q.w FROM ${postings} p JOIN q ON p.term = q.term
                 WHERE p.field IN ${fieldsWanted}),
        df AS (SELECT term, field, count(*)::float8 AS df FROM hits GROUP BY term, field),
        sc AS (
          SELECT h.chunk_id, sum(
            h.w * (CASE h.field WHEN 0 THEN ${f(1)} ELSE ${boostP}::float8 END)
            * ln(${f(1)} + ((CASE h.field WHEN 0 THEN st.n0 ELSE st.n1 END) - df.df + ${f(0.5)}) / (df.df + ${f(0.5)}))
            * h.tf * ${f(k1 + 1)} / (h.tf + ${f(k1)} * (${f(1 - b)} + ${f(b)} * h.len
              / greatest(${f(1e-9)}, CASE h.field WHEN 0 THEN st.t0 / greatest(${f(1)}, st.n0) ELSE st.t1 / greatest(${f(1)}, st.n1) END)))
          ) AS score
          FROM hits h JOIN df ON df.term = h.term AND df.field = h.field CROSS JOIN st
          GROUP BY h.chunk_id)`
      // equal scores in id order (sums in another order differ in the last bits); the best
      // `limit` are chosen before the rows are read, past the filter when there is one
      const order = `ORDER BY round(sc.score * 1e9::float8) DESC, sc.chunk_id LIMIT ${limitP}`
      const top = cond === "TRUE"
        ? `top AS (SELECT sc.chunk_id, sc.score FROM sc ${order})`
        : `top AS (SELECT sc.chunk_id, sc.score FROM sc JOIN ${chunks} c ON c.id = sc.chunk_id WHERE ${cond} ${order})`
      const sql = `${scored}, ${top}
        SELECT c.id, c.document_id, c.title, c.text, c.metadata, top.score
        FROM top JOIN ${chunks} c ON c.id = top.chunk_id
        ORDER BY round(top.score * 1e9::float8) DESC, c.id`
      const rows = yield* run("searchText", sql, params.values)
      return rows.rows.map((r) => toHit(r, Number(r["score"])))
    }).pipe(Effect.withSpan("PostgresStore.searchText", { attributes: { collection: spec.name } }))

  const searchVector = (vector: Float32Array | ReadonlyArray<number>, options: SearchOptions = {}) =>
    Effect.gen(function*() {
      yield* checkVector(spec, vector)
      const params = new Params()
      const vP = params.bind(vectorLiteral(vector))
      const cond = yield* where(options.filter, params, options.scope)
      const limit = Math.max(1, options.limit ?? 10)
      const limitP = params.bind(limit)
      const sql = `SELECT id, document_id, title, text, metadata, 1 - (vector <=> ${vP}::vector) AS score
        FROM ${chunks} WHERE ${cond} ORDER BY vector <=> ${vP}::vector LIMIT ${limitP}`
      const rows = yield* (indexed
        ? transaction(pool, fail("searchVector"), async (c) => {
          // the index's candidate list as long as the limit; a filter keeps scanning until `limit` match
          await c.query(
            "SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'strict_order', true)",
            [String(Math.min(1000, Math.max(40, limit)))]
          )
          return c.query(sql, params.values)
        })
        : run("searchVector", sql, params.values))
      // equal scores in id order, as the other adapters give them
      return rows.rows.map((r) => toHit(r, Number(r["score"])))
        .sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
    }).pipe(Effect.withSpan("PostgresStore.searchVector", { attributes: { collection: spec.name } }))

  const searchHybrid = Fusion.hybridSearch(searchText, searchVector)

  const count = (filter?: Filter, options: ScopeOptions = {}) =>
    Effect.gen(function*() {
      const params = new Params()
      const cond = yield* where(filter, params, options.scope)
      const r = yield* run("count", `SELECT count(*) AS n FROM ${chunks} WHERE ${cond}`, params.values)
      return Number(r.rows[0]!["n"])
    })

  const listDocuments = (options: ScopeOptions = {}) =>
    Effect.gen(function*() {
      const params = new Params()
      const cond = yield* where(undefined, params, options.scope)
      const r = yield* run(
        "listDocuments",
        `SELECT document_id, count(*) AS n FROM ${chunks} WHERE ${cond} GROUP BY document_id ORDER BY document_id`,
        params.values
      )
      return r.rows.map((x): DocumentEntry => ({ documentId: String(x["document_id"]), chunks: Number(x["n"]) }))
    })

  const optimize = () =>
    Effect.gen(function*() {
      yield* run("optimize", `VACUUM ANALYZE ${chunks}`)
      yield* run("optimize", `VACUUM ANALYZE ${postings}`)
    })

  const termCounts = (ids: ReadonlyArray<string>, options: ScopeOptions = {}) =>
    Effect.gen(function*() {
      const params = new Params()
      const idsP = params.bind([...ids])
      const cond = yield* where(undefined, params, options.scope)
      return yield* run(
        "termCounts",
        `SELECT c.id, p.term, p.tf, p.word FROM ${chunks} c LEFT JOIN ${postings} p ON p.chunk_id = c.id AND p.field = 0
         WHERE c.id = ANY(${idsP}::text[]) AND ${cond}`,
        params.values
      )
    }).pipe(Effect.map((r) => {
      const byId = new Map<string, { counts: Map<string, number>; words: Map<string, string>; length: number }>()
      for (const row of r.rows) {
        const id = String(row["id"])
        let e = byId.get(id)
        if (e === undefined) byId.set(id, e = { counts: new Map(), words: new Map(), length: 0 })
        if (row["term"] === null) continue
        const tf = Number(row["tf"])
        e.counts.set(String(row["term"]), tf)
        e.words.set(String(row["term"]), String(row["word"]))
        e.length += tf
      }
      return ids.map((id): TermCounts | undefined => byId.get(id))
    }))

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
    enforcesAccess: true
  }
}

/** Runs `f` in a transaction on one pooled connection; rolls back on failure. */
const transaction = <A>(pool: Pool, onError: (cause: unknown) => StoreError, f: (c: Queryable) => Promise<A>) =>
  Effect.tryPromise({
    try: async () => {
      const c = await pool.connect()
      try {
        await c.query("BEGIN")
        const a = await f(c)
        await c.query("COMMIT")
        c.release()
        return a
      } catch (e) {
        try {
          await c.query("ROLLBACK")
          c.release()
        } catch {
          c.release(true) // a connection that cannot roll back is not reused
        }
        throw e
      }
    },
    catch: onError
  })

// =============================================================================
// Constructor and layers
// =============================================================================

const describeLocation = (options: Options): string =>
  `postgres://${options.user === undefined ? "" : `${options.user}@`}${options.host ?? "127.0.0.1"}:${options.port ?? 5432}/${options.database ?? ""}`

/**
 * Connects a pool (closed with the scope) and sets up the schema when missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Service, StoreError | RagError.MissingPackage, import("effect/Scope").Scope> =>
  Effect.gen(function*() {
    const schema = options.schema ?? defaultSchema
    if (!schemaPattern.test(schema)) {
      return yield* new StoreError({ op: "connect", message: `schema ${JSON.stringify(schema)} must match ${schemaPattern}` })
    }
    const location = describeLocation(options)
    const Pool = yield* loadPg
    const password = options.password
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const p = new Pool({
          host: options.host ?? "127.0.0.1",
          port: options.port ?? 5432,
          ...(options.user === undefined ? {} : { user: options.user }),
          ...(options.database === undefined ? {} : { database: options.database }),
          // a function: the clear text exists only while a connection authenticates
          ...(password === undefined ? {} : { password: () => Redacted.value(password) }),
          ...(options.ssl === undefined || options.ssl === false
            ? {}
            : { ssl: options.ssl === "no-verify" ? { rejectUnauthorized: false } : true }),
          max: Math.max(1, options.maxConnections ?? 4)
        })
        // an idle connection that breaks is dropped by the pool; without a listener it would crash the process
        p.on("error", () => undefined)
        return p
      }),
      (p) => Effect.promise(() => p.end().catch(() => undefined))
    )
    const settings: Settings = { schema, batchSize: Math.max(1, options.batchSize ?? 500), lockSpace: key32(`effect-rag:${schema}`) }
    const s = ident(schema)
    const collectionsTable = `${s}.collections`
    const setupError = (op: string) => (cause: unknown) =>
      new StoreError({ op, message: `${op} (${location}): ${messageOf(cause)}`, cause })
    // one setup at a time across processes (CREATE ... IF NOT EXISTS races otherwise)
    const setupLocked = <A>(op: string, f: (c: Queryable) => Promise<A>) =>
      transaction(pool, setupError(op), async (c) => {
        await c.query("SELECT pg_advisory_xact_lock($1::int, 0)", [settings.lockSpace])
        return f(c)
      })

    yield* setupLocked("connect", async (c) => {
      // created only when missing: CREATE SCHEMA needs the CREATE privilege on the database even
      // when the schema exists, which a role given only the schema may not have
      const exists = await c.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])
      if (exists.rows.length === 0) await c.query(`CREATE SCHEMA ${s}`)
      await c.query(`CREATE TABLE IF NOT EXISTS ${collectionsTable} (
        id serial PRIMARY KEY,
        name text COLLATE "C" NOT NULL UNIQUE,
        spec jsonb NOT NULL,
        n_chunks bigint NOT NULL DEFAULT 0,
        content_total bigint NOT NULL DEFAULT 0,
        n_titled bigint NOT NULL DEFAULT 0,
        title_total bigint NOT NULL DEFAULT 0)`)
    })

    const read = (c: Queryable, name: string): Promise<Stored | undefined> =>
      c.query(`SELECT id, spec FROM ${collectionsTable} WHERE name = $1`, [name]).then((r) => {
        const row = r.rows[0]
        return row === undefined ? undefined : { id: Number(row["id"]), spec: { ...(row["spec"] as CollectionSpec), name } }
      })

    const mismatch = (name: string, stored: CollectionSpec, requested: CollectionSpec) =>
      new EmbeddingMismatch({
        collection: name,
        expected: describeEmbedding(stored.embedding),
        actual: describeEmbedding(requested.embedding),
        message: `collection ${name} was created with ${describeEmbedding(stored.embedding)}, not ${describeEmbedding(requested.embedding)}`
      })

    const checkStored = (stored: Stored, requested: CollectionSpec): Effect.Effect<Collection, VectorStoreError> => {
      if (!sameEmbedding(stored.spec.embedding, requested.embedding)) return Effect.fail(mismatch(requested.name, stored.spec, requested))
      for (const [f, t] of Object.entries(requested.fields ?? {})) {
        if (stored.spec.fields?.[f] !== t) {
          return Effect.fail(
            new InvalidInput({
              message: `collection ${requested.name} has no ${t} field ${f} (declared: ${JSON.stringify(stored.spec.fields ?? {})})`
            })
          )
        }
      }
      return Effect.succeed(makeCollection(pool, settings, stored))
    }

    const create = (requested: CollectionSpec) =>
      setupLocked("createCollection", async (c): Promise<Stored> => {
        const existing = await read(c, requested.name)
        if (existing !== undefined) return existing
        const spec: CollectionSpec = {
          name: requested.name,
          ...(requested.embedding === undefined ? {} : { embedding: { ...requested.embedding } }),
          ...(requested.fields === undefined ? {} : { fields: { ...requested.fields } }),
          ...(requested.fullText === false ? { fullText: false } : {})
        }
        if (spec.embedding !== undefined) await c.query("CREATE EXTENSION IF NOT EXISTS vector")
        const r = await c.query(`INSERT INTO ${collectionsTable} (name, spec) VALUES ($1, $2) RETURNING id`, [spec.name, JSON.stringify(spec)])
        const id = Number(r.rows[0]!["id"])
        const chunks = `${s}.${ident(`chunks_${id}`)}`
        const postings = `${s}.${ident(`postings_${id}`)}`
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
        return { id, spec }
      })

    const collection = (requested: CollectionSpec) =>
      Effect.gen(function*() {
        const problem = checkSpec(requested)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        const found = yield* Effect.tryPromise({ try: () => read(pool, requested.name), catch: setupError("collection") })
        const stored = found ?? (yield* create(requested))
        return yield* checkStored(stored, requested)
      }).pipe(Effect.withSpan("PostgresStore.collection", { attributes: { name: requested.name } }))

    const service: Service = {
      backend: "postgres",
      location,
      schema,
      collection,
      open: (name) =>
        Effect.tryPromise({ try: () => read(pool, name), catch: setupError("open") }).pipe(
          Effect.flatMap((stored) =>
            stored === undefined
              ? Effect.fail(new CollectionNotFound({ name, message: `no collection ${name} in ${location} (schema ${schema})` }))
              : Effect.succeed(makeCollection(pool, settings, stored))
          )
        ),
      list: () =>
        Effect.tryPromise({
          try: () => pool.query(`SELECT name FROM ${collectionsTable} ORDER BY name`),
          catch: setupError("list")
        }).pipe(Effect.map((r) => r.rows.map((x) => String(x["name"])))),
      drop: (name) =>
        setupLocked("drop", async (c) => {
          const stored = await read(c, name)
          if (stored === undefined) return
          // writers of the collection finish first
          await c.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", [settings.lockSpace, stored.id])
          await c.query(`DROP TABLE IF EXISTS ${s}.${ident(`postings_${stored.id}`)}, ${s}.${ident(`chunks_${stored.id}`)}`)
          await c.query(`DELETE FROM ${collectionsTable} WHERE id = $1`, [stored.id])
        })
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
