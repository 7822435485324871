/**
 * What a `VectorStore` adapter outside this package needs to behave like the built-in ones:
 * the filter checks and in-memory evaluation, the analyser and BM25 of the full-text engines,
 * the content digest that makes `upsert` counts exact, and the fusion of hybrid search. The
 * PostgreSQL adapter is written on exactly these; see the guide to stores ("Write your own
 * adapter") and `effect-rag/testing` for the contract suite an adapter must pass.
 *
 * @example
 * ```ts
 * import { AdapterKit } from "effect-rag"
 *
 * const spec = { name: "docs", fields: { lang: "string" as const } }
 * AdapterKit.validateFilter(spec, { _tag: "Compare", field: "lang", op: "=", value: "en" }) // undefined: valid
 * AdapterKit.queryTerms("Running shoes") // Map { "run" => 1, "shoe" => 1 }
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Bm25 from "./internal/bm25.js"
import * as Filters from "./internal/filter.js"
import * as Hash from "./internal/hash.js"
import { type CollectionSpec, describeEmbedding, EmbeddingMismatch, InvalidInput, sameEmbedding } from "./VectorStore.js"

/**
 * Validates a filter against a collection's spec (declared fields only, values of the declared
 * type, finite numbers); returns the message of the first problem, or undefined when valid.
 * Compile a filter only after this, and take column names from the spec, never from the filter.
 *
 * @since 0.1.0
 * @category filters
 */
export const validateFilter = Filters.validate

/**
 * Evaluates a filter on one chunk's fields (`get` returns a field's value, `documentId`
 * included): the reference semantics every adapter's compiled filter must match.
 *
 * @since 0.1.0
 * @category filters
 */
export const matchesFilter = Filters.matches

/**
 * The weighted, stemmed terms of a text query as the full-text engines score them: a text's
 * words weigh 1 each, a weighted term its weight, a repeated word counts again.
 *
 * @since 0.1.0
 * @category full text
 */
export const queryTerms = Bm25.weightedTerms

export {
  /**
   * The in-memory BM25 index over a fixed list of rows (content and title fields, `k1` 1.2,
   * `b` 0.75, Lucene's IDF), scored as LanceDB's native index scores a boosted query.
   *
   * @since 0.1.0
   * @category full text
   */
  FieldIndex,
  /**
   * One row of a `FieldIndex`: the text BM25 scores (title + text) and the title alone.
   *
   * @since 0.1.0
   * @category full text
   */
  type FieldDoc,
  /**
   * A scored row of `FieldIndex.search`: its position in the rows the index was built from.
   *
   * @since 0.1.0
   * @category full text
   */
  type FieldHit
} from "./internal/bm25.js"

/**
 * A digest of everything stored for a chunk (document id, title, text, metadata, access list,
 * vector): an adapter compares it with the stored one so that an unchanged chunk is not
 * rewritten and `upsert` reports exact `{inserted, updated}` counts.
 *
 * @since 0.1.0
 * @category writes
 */
export const contentHash = Hash.contentHash

/**
 * The error of opening collection `requested.name` with an embedding other than the one it was
 * created with (`stored`), both described as `model (d-d)` or "no embedding (full-text only)".
 *
 * @since 0.1.0
 * @category collections
 */
export const embeddingMismatch = (requested: CollectionSpec, stored: CollectionSpec): EmbeddingMismatch =>
  new EmbeddingMismatch({
    collection: requested.name,
    expected: describeEmbedding(stored.embedding),
    actual: describeEmbedding(requested.embedding),
    message: `collection ${requested.name} was created with ${describeEmbedding(stored.embedding)}, not ${describeEmbedding(requested.embedding)}`
  })

/**
 * Whether an existing collection, stored with `stored`, can be opened as `requested` (what
 * `VectorStore.collection` does when the name exists): the same embedding, else
 * {@link embeddingMismatch}; and every field `requested` declares stored with the same type, else
 * `InvalidInput`. Fields stored but not requested are fine.
 *
 * @since 0.1.0
 * @category collections
 */
export const checkReopened = (
  stored: CollectionSpec,
  requested: CollectionSpec
): Effect.Effect<void, EmbeddingMismatch | InvalidInput> => {
  if (!sameEmbedding(stored.embedding, requested.embedding)) return Effect.fail(embeddingMismatch(requested, stored))
  for (const [f, t] of Object.entries(requested.fields ?? {})) {
    if (stored.fields?.[f] !== t) {
      return Effect.fail(
        new InvalidInput({
          message: `collection ${requested.name} has no ${t} field ${f} (declared: ${JSON.stringify(stored.fields ?? {})})`
        })
      )
    }
  }
  return Effect.void
}

export {
  /**
   * The analyser of the full-text engines: the Porter stem of a lower-case word.
   *
   * @since 0.1.0
   * @category full text
   */
  stem,
  /**
   * The English stop words the full-text engines drop (LanceDB's list).
   *
   * @since 0.1.0
   * @category full text
   */
  stopWords,
  /**
   * The stemmed terms of a text, stop words and words over 40 characters removed, in order.
   *
   * @since 0.1.0
   * @category full text
   */
  terms,
  /**
   * A text's lower-case words (letters and digits), in order.
   *
   * @since 0.1.0
   * @category full text
   */
  words
} from "./TextAnalysis.js"

export {
  /**
   * Fusion of a full-text and a vector result list into one (reciprocal rank or weighted).
   *
   * @since 0.1.0
   * @category hybrid
   */
  fuse,
  /**
   * A collection's `searchHybrid` from its `searchText` and `searchVector` (both searches at
   * once with the candidates, then {@link fuse}), as every built-in adapter builds it.
   *
   * @since 0.1.0
   * @category hybrid
   */
  hybridSearch
} from "./Fusion.js"
