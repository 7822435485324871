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
import * as Bm25 from "./internal/bm25.js"
import * as Filters from "./internal/filter.js"
import * as Hash from "./internal/hash.js"

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
  type FieldDoc,
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

export {
  /**
   * The analyser of the full-text engines: words, stop words, Porter stems.
   *
   * @since 0.1.0
   * @category full text
   */
  stem,
  stopWords,
  terms,
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
