/**
 * An in-memory implementation of the {@link VectorStore} port, for tests of the code above the
 * store and for small throw-away collections. Same validation and errors as the LanceDB
 * adapter; full text is the index of `internal/bm25.ts` the LanceDB adapter searches small
 * collections with (BM25 on title + text plus a boosted title, rebuilt on the first search after
 * a change), vector search is exact cosine. Nothing is persisted.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option, Ref } from "effect"
import { hybridSearch } from "./Fusion.js"
import * as FullText from "./internal/memory/fulltext.js"
import * as Reads from "./internal/memory/reads.js"
import { type CollectionState, makeState } from "./internal/memory/state.js"
import * as VectorSearch from "./internal/memory/vector.js"
import * as Write from "./internal/memory/write.js"
import {
  type Collection,
  CollectionNotFound,
  checkSpec,
  describeEmbedding,
  EmbeddingMismatch,
  InvalidInput,
  sameEmbedding,
  type Service,
  VectorStore
} from "./VectorStore.js"

/** The port's collection over one collection's state: each operation a module of internal/memory. */
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
    searchHybrid: hybridSearch(searchText, searchVector),
    count: (filter, options) => Reads.count(state, filter, options),
    listDocuments: (options) => Reads.listDocuments(state, options),
    optimize: () => Effect.void,
    scan: (filter, options) => Reads.scan(state, filter, options),
    get: (ids, options) => Reads.get(state, ids, options),
    termCounts: (ids, options) => FullText.termCounts(state, ids, options),
    enforcesAccess: true
  }
}

/**
 * Builds an empty in-memory store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Service> = Effect.gen(function*() {
  const collections = yield* Ref.make(new Map<string, Collection>())
  const open = (name: string) =>
    Effect.flatMap(Ref.get(collections), (m) =>
      Option.match(Option.fromNullable(m.get(name)), {
        onNone: () => Effect.fail(new CollectionNotFound({ name, message: `no collection ${name} in memory` })),
        onSome: Effect.succeed
      }))
  return VectorStore.of({
    backend: "memory",
    collection: (spec) =>
      Effect.gen(function*() {
        const problem = checkSpec(spec)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        const m = yield* Ref.get(collections)
        const existing = m.get(spec.name)
        if (existing !== undefined) {
          if (!sameEmbedding(existing.spec.embedding, spec.embedding)) {
            return yield* new EmbeddingMismatch({
              collection: spec.name,
              expected: describeEmbedding(existing.spec.embedding),
              actual: describeEmbedding(spec.embedding),
              message: `collection ${spec.name} was created with ${describeEmbedding(existing.spec.embedding)}, not ${describeEmbedding(spec.embedding)}`
            })
          }
          return existing
        }
        const c = makeCollection(makeState(spec))
        yield* Ref.update(collections, (mm) => new Map(mm).set(spec.name, c))
        return c
      }),
    open,
    list: () => Effect.map(Ref.get(collections), (m) => [...m.keys()].sort()),
    drop: (name) => Ref.update(collections, (m) => {
      const n = new Map(m)
      n.delete(name)
      return n
    })
  })
})

/**
 * A layer with a fresh in-memory store.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<VectorStore> = Layer.effect(VectorStore, make)
