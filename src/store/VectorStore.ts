/**
 * The storage port of the retrieval core: collections of chunks with optional vectors and
 * metadata, searched by full text (BM25), by vector, or by both fused.
 *
 * A backend provides the {@link VectorStore} Tag. Two ship with effect-rag: the LanceDB adapter
 * (`LanceDbStore`, on local disk, the default) and an in-memory one (`MemoryStore`, for tests of
 * the code above the store). A third backend implements {@link Service} and {@link Collection}
 * with the semantics documented here; `VectorStoreContract` (`effect-rag/testing`) is the shared test suite.
 *
 * Collections are created with a {@link CollectionSpec}: an optional embedding (model id and
 * dimension; a collection without one stores no vectors and serves full-text search only) and
 * the declared metadata fields that filters may use. Reopening a collection with another
 * embedding model or dimension fails with {@link EmbeddingMismatch}; upserting a vector of the
 * wrong length fails the same way.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

// =============================================================================
// Data
// =============================================================================

/**
 * A metadata value.
 *
 * @since 0.1.0
 * @category models
 */
export type Scalar = string | number | boolean | null

/**
 * The type of a declared metadata field.
 *
 * @since 0.1.0
 * @category models
 */
export type FieldType = "string" | "number" | "boolean"

/**
 * One unit of retrieval: a piece of a document, with its optional vector.
 *
 * @since 0.1.0
 * @category models
 */
export interface Chunk {
  /** Unique within the collection; upserts are keyed by it. */
  readonly id: string
  /** The document the chunk belongs to (deletes and roll-ups go by it). */
  readonly documentId: string
  /** The text indexed for full-text search and returned in hits. */
  readonly text: string
  /** The document title, indexed as its own field (title matches can weigh more). */
  readonly title?: string | undefined
  /** The embedding; required when the collection has an embedding, refused otherwise. */
  readonly vector?: Float32Array | ReadonlyArray<number> | undefined
  /** Metadata; only declared fields can be filtered on, the rest is stored as is. */
  readonly metadata?: Readonly<Record<string, Scalar>> | undefined
  /**
   * Who may read the chunk: principal ids and group names (see {@link ReadScope}); the entry
   * {@link publicAccess} (`*`) makes it readable by every principal. Omitted: readable only
   * through the unrestricted scope. Never part of {@link Hit}, never reachable by a {@link Filter}.
   */
  readonly access?: ReadonlyArray<string> | undefined
}

/**
 * A search result. `score` is higher for better hits; its scale depends on the search kind.
 *
 * @since 0.1.0
 * @category models
 */
export interface Hit {
  readonly id: string
  readonly documentId: string
  readonly text: string
  readonly title: string | undefined
  readonly metadata: Readonly<Record<string, Scalar>>
  readonly score: number
}

/**
 * A metadata filter, compiled by each backend; values are data, never predicate text.
 *
 * @since 0.1.0
 * @category models
 */
export type Filter =
  | { readonly _tag: "Compare"; readonly field: string; readonly op: "=" | "!=" | "<" | "<=" | ">" | ">="; readonly value: Scalar }
  | { readonly _tag: "In"; readonly field: string; readonly values: ReadonlyArray<Scalar> }
  | { readonly _tag: "And"; readonly filters: ReadonlyArray<Filter> }
  | { readonly _tag: "Or"; readonly filters: ReadonlyArray<Filter> }
  | { readonly _tag: "Not"; readonly filter: Filter }

/**
 * Filter constructors. `field` is `documentId` or a declared metadata field.
 *
 * @since 0.1.0
 * @category utils
 */
export const Filter = {
  eq: (field: string, value: Scalar): Filter => ({ _tag: "Compare", field, op: "=", value }),
  ne: (field: string, value: Scalar): Filter => ({ _tag: "Compare", field, op: "!=", value }),
  lt: (field: string, value: number | string): Filter => ({ _tag: "Compare", field, op: "<", value }),
  lte: (field: string, value: number | string): Filter => ({ _tag: "Compare", field, op: "<=", value }),
  gt: (field: string, value: number | string): Filter => ({ _tag: "Compare", field, op: ">", value }),
  gte: (field: string, value: number | string): Filter => ({ _tag: "Compare", field, op: ">=", value }),
  in: (field: string, values: ReadonlyArray<Scalar>): Filter => ({ _tag: "In", field, values }),
  and: (...filters: ReadonlyArray<Filter>): Filter => ({ _tag: "And", filters }),
  or: (...filters: ReadonlyArray<Filter>): Filter => ({ _tag: "Or", filters }),
  not: (filter: Filter): Filter => ({ _tag: "Not", filter })
} as const

/**
 * The field name filters use for the document id.
 *
 * @since 0.1.0
 * @category utils
 */
export const documentIdField = "documentId"

/**
 * What a collection is created with.
 *
 * @since 0.1.0
 * @category models
 */
export interface CollectionSpec {
  /** Letters, digits, `_` and `-`, at most 64 characters. */
  readonly name: string
  /** The embedding model of the vectors; omitted: a full-text-only collection. */
  readonly embedding?: { readonly model: string; readonly dimension: number } | undefined
  /** Metadata fields that filters may use, with their types. */
  readonly fields?: Readonly<Record<string, FieldType>> | undefined
  /**
   * `false`: the collection is never searched by full text (bookkeeping, such as the ingest's
   * manifest), so a backend may keep no full-text index for it; its `searchText` and
   * `searchHybrid` fail with {@link InvalidInput}. Omitted or `true`: full text as usual. Fixed
   * when the collection is created (a later spec does not change it).
   */
  readonly fullText?: boolean | undefined
}

/**
 * A full-text query: a text analysed by the backend, or weighted words (each analysed too).
 *
 * @since 0.1.0
 * @category models
 */
export type TextQuery =
  | string
  | { readonly terms: ReadonlyArray<{ readonly text: string; readonly weight: number }> }

// =============================================================================
// Access
// =============================================================================

/**
 * Which chunks a read may see. `All`: every chunk (trusted local use; the default of every read
 * that names no scope). `Entries`: only the chunks whose access list holds at least one of the
 * entries (a principal's id, its groups and {@link publicAccess}); a chunk without an access list
 * is not among them. A backend applies the scope inside the query, with the filter, before
 * ranking and the limit, in every search, count, document listing and `termCounts`; a backend
 * that cannot must not set {@link Collection.enforcesAccess} (reads with an `Entries` scope then
 * fail, see {@link requireScope}).
 *
 * @since 0.1.0
 * @category models
 */
export type ReadScope =
  | { readonly _tag: "All" }
  | { readonly _tag: "Entries"; readonly entries: ReadonlyArray<string> }

/**
 * Read-scope constructors.
 *
 * @since 0.1.0
 * @category utils
 */
export const ReadScope = {
  all: { _tag: "All" } as ReadScope,
  entries: (entries: ReadonlyArray<string>): ReadScope => ({ _tag: "Entries", entries })
} as const

/**
 * The access-list entry that every principal matches: a chunk listing it is public.
 *
 * @since 0.1.0
 * @category utils
 */
export const publicAccess = "*"

/**
 * Options of the reads that take only a scope (`count`, `listDocuments`, `termCounts`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ScopeOptions {
  /** Which chunks the read may see (default {@link ReadScope.all}). */
  readonly scope?: ReadScope | undefined
}

/**
 * Checks an access-list entry: 1 to 256 characters, no control characters (backends may use
 * one as a separator). Returns a message or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkAccessEntry = (entry: string): string | undefined =>
  typeof entry !== "string" || entry.length === 0 || entry.length > 256
    ? `an access-list entry must be 1 to 256 characters, got ${JSON.stringify(entry)}`
    // eslint-disable-next-line no-control-regex
    : /[\u0000-\u001f\u007f]/.test(entry)
    ? `an access-list entry must not contain control characters, got ${JSON.stringify(entry)}`
    : undefined

/**
 * Checks every entry of an access list or a scope; returns a message or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkAccess = (entries: ReadonlyArray<string> | undefined): string | undefined => {
  for (const e of entries ?? []) {
    const m = checkAccessEntry(e)
    if (m !== undefined) return m
  }
  return undefined
}

/**
 * Whether a chunk's access list is readable in a scope (the reference semantics).
 *
 * @since 0.1.0
 * @category utils
 */
export const readable = (scope: ReadScope | undefined, access: ReadonlyArray<string> | undefined): boolean =>
  scope === undefined || scope._tag === "All" || (access !== undefined && access.some((a) => scope.entries.includes(a)))

/**
 * Fails unless the collection can apply the scope: a restricted scope on a collection whose
 * backend does not enforce access lists is refused (`StoreError`, op `access`), never ignored.
 * Also validates the scope's entries (`InvalidInput`).
 *
 * @since 0.1.0
 * @category utils
 */
export const requireScope = (collection: Collection, scope: ReadScope | undefined): Effect.Effect<void, StoreError | InvalidInput> => {
  if (scope === undefined || scope._tag === "All") return Effect.void
  const problem = checkAccess(scope.entries)
  if (problem !== undefined) return Effect.fail(new InvalidInput({ message: problem }))
  return collection.enforcesAccess === true
    ? Effect.void
    : Effect.fail(
      new StoreError({
        op: "access",
        message: `collection ${collection.spec.name}: this backend does not enforce access lists, so a restricted read is refused`
      })
    )
}

/**
 * Options shared by the searches.
 *
 * @since 0.1.0
 * @category models
 */
export interface SearchOptions extends ScopeOptions {
  /** Hits to return (default 10). */
  readonly limit?: number | undefined
  /** Only chunks matching the filter (applied before ranking). */
  readonly filter?: Filter | undefined
}

/**
 * Options of full-text search.
 *
 * @since 0.1.0
 * @category models
 */
export interface TextSearchOptions extends SearchOptions {
  /**
   * Extra weight of a title match (default 0: plain BM25 over title + text). With `w > 0` a
   * title match adds `w` times its own BM25 score on the title field.
   */
  readonly titleBoost?: number | undefined
}

/**
 * How hybrid search fuses its two candidate lists.
 *
 * @since 0.1.0
 * @category models
 */
export type Fusion =
  | { readonly _tag: "Rrf"; readonly k?: number | undefined; readonly textWeight?: number | undefined }
  | { readonly _tag: "Weighted"; readonly textWeight?: number | undefined }

/**
 * Options of hybrid search.
 *
 * @since 0.1.0
 * @category models
 */
export interface HybridSearchOptions extends TextSearchOptions {
  /** Default: weighted normalised scores with text weight 0.9, chosen by measurement (see `benchmarks/README.md`). */
  readonly fusion?: Fusion | undefined
  /** Candidates taken from each list before fusion (default max(limit, 100)). */
  readonly candidates?: number | undefined
}

/**
 * Result counts of an upsert.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpsertResult {
  readonly inserted: number
  readonly updated: number
}

/**
 * A document of a collection with its chunk count.
 *
 * @since 0.1.0
 * @category models
 */
export interface DocumentEntry {
  readonly documentId: string
  readonly chunks: number
}

// =============================================================================
// Errors
// =============================================================================

/**
 * The backend failed (I/O, a native error, a commit conflict that outlived its retries).
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly op: string
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * A collection that was opened for reading does not exist.
 *
 * @since 0.1.0
 * @category errors
 */
export class CollectionNotFound extends Data.TaggedError("CollectionNotFound")<{
  readonly name: string
  readonly message: string
}> {}

/**
 * A vector of another model or dimension than the collection's, or a vector search on a
 * collection created without an embedding.
 *
 * @since 0.1.0
 * @category errors
 */
export class EmbeddingMismatch extends Data.TaggedError("EmbeddingMismatch")<{
  readonly collection: string
  readonly expected: string
  readonly actual: string
  readonly message: string
}> {}

/**
 * A chunk, filter, name or option is not valid (unknown field, wrong type, bad name, ...).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidInput extends Data.TaggedError("InvalidInput")<{
  readonly message: string
}> {}

/**
 * Every error of the port.
 *
 * @since 0.1.0
 * @category models
 */
export type VectorStoreError = StoreError | CollectionNotFound | EmbeddingMismatch | InvalidInput

// =============================================================================
// Service
// =============================================================================

/**
 * The analysed words of a stored chunk, for query expansion (see {@link Collection.termCounts}).
 *
 * @since 0.1.0
 * @category models
 */
export interface TermCounts {
  /** Analysed term (stem) -> its occurrences in title + text. */
  readonly counts: ReadonlyMap<string, number>
  /** Analysed term -> a word it comes from (what a weighted {@link TextQuery} sends back). */
  readonly words: ReadonlyMap<string, string>
  /** Number of analysed terms (stop words and words over 40 characters left out). */
  readonly length: number
}

/**
 * Options of {@link Collection.textCandidates}.
 *
 * @since 0.1.0
 * @category models
 */
export interface CandidateOptions extends ScopeOptions {
  /** Only chunks matching the filter. */
  readonly filter?: Filter | undefined
  /** How many of the query's best chunks (plain BM25 over title + text) to take (default 25). */
  readonly depth?: number | undefined
}

/**
 * A first pass's candidate chunks with a full-text scorer over them (see
 * {@link Collection.textCandidates}).
 *
 * @since 0.1.0
 * @category models
 */
export interface TextCandidates {
  /**
   * The best `limit` candidates (default 10) for a query, scored as {@link Collection.searchText}
   * scores a chunk (BM25 over title + text with the collection's term statistics, `titleBoost`
   * times BM25 over the title added).
   */
  readonly search: (
    query: TextQuery,
    options?: { readonly limit?: number | undefined; readonly titleBoost?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<Hit>, VectorStoreError>
  /** The analysed terms of candidates, by id, as {@link Collection.termCounts} gives them (undefined: not a candidate). */
  readonly termCounts: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<TermCounts | undefined>, VectorStoreError>
}

/**
 * One collection. Methods are safe to call concurrently, and from several processes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Collection {
  /** The spec the collection was created with (as stored, not as requested). */
  readonly spec: CollectionSpec
  /**
   * Inserts or replaces chunks by id, in bounded batches. Upserting the same chunks again
   * leaves the collection as it was. Fails with `EmbeddingMismatch` on a vector of the wrong
   * dimension, `InvalidInput` on an undeclared-typed metadata value.
   */
  readonly upsert: (chunks: ReadonlyArray<Chunk>) => Effect.Effect<UpsertResult, VectorStoreError>
  /** Deletes every chunk of these documents; returns how many chunks went. */
  readonly deleteDocuments: (documentIds: ReadonlyArray<string>) => Effect.Effect<number, VectorStoreError>
  /** Deletes every chunk matching the filter; returns how many went. */
  readonly deleteWhere: (filter: Filter) => Effect.Effect<number, VectorStoreError>
  /** BM25 full-text search. Works on every collection. */
  readonly searchText: (query: TextQuery, options?: TextSearchOptions) => Effect.Effect<ReadonlyArray<Hit>, VectorStoreError>
  /** Nearest neighbours by cosine similarity (`score` = 1 - cosine distance). */
  readonly searchVector: (
    vector: Float32Array | ReadonlyArray<number>,
    options?: SearchOptions
  ) => Effect.Effect<ReadonlyArray<Hit>, VectorStoreError>
  /** Full-text and vector candidates fused (see {@link Fusion}). */
  readonly searchHybrid: (
    query: { readonly text: TextQuery; readonly vector: Float32Array | ReadonlyArray<number> },
    options?: HybridSearchOptions
  ) => Effect.Effect<ReadonlyArray<Hit>, VectorStoreError>
  /** Number of chunks (matching the filter, readable in the scope). */
  readonly count: (filter?: Filter, options?: ScopeOptions) => Effect.Effect<number, VectorStoreError>
  /** Every document id with its chunk count (of the chunks readable in the scope), sorted by id. */
  readonly listDocuments: (options?: ScopeOptions) => Effect.Effect<ReadonlyArray<DocumentEntry>, VectorStoreError>
  /** Compacts storage and brings indexes up to date (backends without storage: no-op). */
  readonly optimize: () => Effect.Effect<void, VectorStoreError>
  /**
   * Optional: the analysed terms of chunks as the full-text engine holds them, by id (undefined
   * for an id it does not hold). Query expansion (`Retrieve`'s RM3) uses them for the hits of a
   * search it has just made instead of analysing their texts again. An id not readable in the
   * scope is undefined, as an id it does not hold.
   */
  readonly termCounts?: (
    ids: ReadonlyArray<string>,
    options?: ScopeOptions
  ) => Effect.Effect<ReadonlyArray<TermCounts | undefined>, VectorStoreError>
  /**
   * Optional: the chunks (matching the filter, readable in the scope) a full-text search for
   * `query` ranks best, its first `depth`, with a scorer that ranks them for any further query in
   * memory, so query expansion (`Retrieve`'s RM3) runs its second pass without a second search of
   * the collection. `undefined` when the backend's own search is as cheap (a small collection):
   * the caller then uses {@link searchText}. The term statistics of the scorer (document
   * frequencies, mean lengths) may be estimated from a sample of the collection's rows.
   */
  readonly textCandidates?: (query: TextQuery, options?: CandidateOptions) => Effect.Effect<TextCandidates | undefined, VectorStoreError>
  /**
   * True when the backend stores access lists and applies a {@link ReadScope} inside every read
   * (see {@link requireScope}). A backend without it serves only unrestricted reads.
   */
  readonly enforcesAccess?: boolean | undefined
  /**
   * Optional: every chunk (matching the filter, readable in the scope) with its text, title and
   * metadata, no vector (`score` 0), sorted by id. For whole-collection work such as building
   * an evaluation set (`Eval.build`), not for queries: it reads every row.
   */
  readonly scan?: (filter?: Filter, options?: ScopeOptions) => Effect.Effect<ReadonlyArray<Hit>, VectorStoreError>
  /**
   * Optional: the chunks with these ids that the collection holds (readable in the scope), with
   * their text, title and metadata, no vector (`score` 0), sorted by id; an id it does not hold
   * is left out. A lookup of a few ids, not a scan of the collection (the ingest pipeline reads
   * the completion markers of the few documents a run names with it).
   */
  readonly get?: (ids: ReadonlyArray<string>, options?: ScopeOptions) => Effect.Effect<ReadonlyArray<Hit>, VectorStoreError>
}

/**
 * The store: a set of named collections.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** A short backend name, e.g. `lancedb` or `memory`. */
  readonly backend: string
  /**
   * Opens a collection, creating it when missing. Fails with `EmbeddingMismatch` when it exists
   * with another embedding model or dimension, `InvalidInput` on a bad name or field.
   */
  readonly collection: (spec: CollectionSpec) => Effect.Effect<Collection, VectorStoreError>
  /** Opens an existing collection with the spec it was created with. */
  readonly open: (name: string) => Effect.Effect<Collection, VectorStoreError>
  /** Names of the collections. */
  readonly list: () => Effect.Effect<ReadonlyArray<string>, VectorStoreError>
  /** Drops a collection (no error when it does not exist). */
  readonly drop: (name: string) => Effect.Effect<void, VectorStoreError>
}

/**
 * The Tag of the port.
 *
 * @since 0.1.0
 * @category context
 */
export class VectorStore extends Context.Tag("effect-rag/store/VectorStore")<VectorStore, Service>() {}

// =============================================================================
// Validation shared by backends
// =============================================================================

const namePattern = /^[A-Za-z0-9_-]{1,64}$/
const fieldPattern = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/

/**
 * Checks a collection spec (name, embedding, field names); returns a message or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkSpec = (spec: CollectionSpec): string | undefined => {
  if (!namePattern.test(spec.name)) return `collection name ${JSON.stringify(spec.name)} must match ${namePattern}`
  if (spec.embedding !== undefined) {
    const d = spec.embedding.dimension
    if (!Number.isInteger(d) || d <= 0) return `embedding dimension must be a positive integer, got ${d}`
    if (spec.embedding.model === "") return "embedding model must not be empty"
  }
  if (spec.fullText !== undefined && typeof spec.fullText !== "boolean") return `fullText must be a boolean, got ${JSON.stringify(spec.fullText)}`
  for (const [field, type] of Object.entries(spec.fields ?? {})) {
    if (!fieldPattern.test(field)) return `metadata field ${JSON.stringify(field)} must match ${fieldPattern}`
    if (field === documentIdField) return `metadata field ${documentIdField} is reserved`
    if (type !== "string" && type !== "number" && type !== "boolean") return `metadata field ${field}: unknown type ${String(type)}`
  }
  return undefined
}

/**
 * Describes an embedding for error messages.
 *
 * @since 0.1.0
 * @category utils
 */
export const describeEmbedding = (e: CollectionSpec["embedding"]): string =>
  e === undefined ? "no embedding (full-text only)" : `${e.model} (${e.dimension}-d)`

/**
 * Whether two embeddings are the same model and dimension.
 *
 * @since 0.1.0
 * @category utils
 */
export const sameEmbedding = (a: CollectionSpec["embedding"], b: CollectionSpec["embedding"]): boolean =>
  a === undefined ? b === undefined : b !== undefined && a.model === b.model && a.dimension === b.dimension

/**
 * Fails with {@link InvalidInput} on a collection created with `fullText: false`: the check an
 * adapter's `searchText` runs first.
 *
 * @since 0.1.0
 * @category utils
 */
export const requireFullText = (spec: CollectionSpec): Effect.Effect<void, InvalidInput> =>
  spec.fullText === false
    ? Effect.fail(new InvalidInput({ message: `collection ${spec.name} was created without full text (fullText: false): it cannot be searched by text` }))
    : Effect.void

/**
 * Fails unless `vector` fits the collection: a collection created without an embedding takes no
 * vectors at all, one with an embedding only vectors of its dimension.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkVector = (spec: CollectionSpec, vector: ArrayLike<number>): Effect.Effect<void, EmbeddingMismatch> =>
  spec.embedding !== undefined && vector.length === spec.embedding.dimension
    ? Effect.void
    : Effect.fail(
      new EmbeddingMismatch({
        collection: spec.name,
        expected: describeEmbedding(spec.embedding),
        actual: `a ${vector.length}-d vector`,
        message: spec.embedding === undefined
          ? `collection ${spec.name} was created without an embedding: it serves full-text search only`
          : `collection ${spec.name} holds ${describeEmbedding(spec.embedding)} vectors, got a ${vector.length}-d one`
      })
    )

/**
 * Checks a chunk to be written: it carries a vector exactly when the collection has an embedding.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkChunkVector = (spec: CollectionSpec, chunk: Chunk): Effect.Effect<void, EmbeddingMismatch> =>
  chunk.vector !== undefined
    ? checkVector(spec, chunk.vector)
    : spec.embedding === undefined
    ? Effect.void
    : Effect.fail(
      new EmbeddingMismatch({
        collection: spec.name,
        expected: describeEmbedding(spec.embedding),
        actual: "no vector",
        message: `chunk ${chunk.id}: the collection ${spec.name} needs a vector (${describeEmbedding(spec.embedding)})`
      })
    )
