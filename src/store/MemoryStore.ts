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
import { FieldIndex, weightedTerms } from "./internal/bm25.js"
import * as Filters from "./internal/filter.js"
import { hybridSearch } from "./Fusion.js"
import { contentHash } from "./internal/hash.js"
import {
  type Chunk,
  type Collection,
  CollectionNotFound,
  type CollectionSpec,
  checkAccess,
  checkChunkVector,
  checkSpec,
  checkVector as checkCollectionVector,
  describeEmbedding,
  documentIdField,
  EmbeddingMismatch,
  type Filter,
  type Hit,
  InvalidInput,
  readable,
  requireFullText,
  type ReadScope,
  sameEmbedding,
  type Scalar,
  type ScopeOptions,
  type Service,
  type TextQuery,
  VectorStore
} from "./VectorStore.js"

interface Row {
  readonly chunk: Chunk
  readonly vector: Float32Array | undefined
  readonly norm: number
}

const normOf = (v: Float32Array): number => {
  let s = 0
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!
  return Math.sqrt(s)
}

const toHit = (chunk: Chunk, score: number): Hit => ({
  id: chunk.id,
  documentId: chunk.documentId,
  text: chunk.text,
  title: chunk.title,
  metadata: chunk.metadata ?? {},
  score
})

const makeCollection = (spec: CollectionSpec): Collection => {
  const rows = new Map<string, Row>()
  // the full-text index of the rows as they are, built on the first search after a change
  let text: { readonly index: FieldIndex; readonly order: ReadonlyArray<Row>; readonly rowOf: Map<string, number> } | undefined
  const textIndex = () => {
    if (text === undefined) {
      const order = [...rows.values()]
      const index = FieldIndex.build(order.map(({ chunk }) => ({
        title: chunk.title,
        content: chunk.title === undefined || chunk.title === "" ? chunk.text : `${chunk.title}\n${chunk.text}`
      })))
      text = { index, order, rowOf: new Map(order.map((r, i) => [r.chunk.id, i])) }
    }
    return text
  }
  const get = (chunk: Chunk) => (field: string): Scalar | undefined =>
    field === documentIdField ? chunk.documentId : chunk.metadata?.[field]
  // The filter and the read scope, one predicate applied before ranking and the limit.
  const checkFilter = (filter: Filter | undefined, scope?: ReadScope | undefined) => {
    const problem = filter === undefined ? undefined : Filters.validate(spec, filter)
    if (problem !== undefined) return Effect.fail(new InvalidInput({ message: problem }))
    const scoped = scope !== undefined && scope._tag === "Entries"
    const scopeProblem = scoped ? checkAccess(scope.entries) : undefined
    if (scopeProblem !== undefined) return Effect.fail(new InvalidInput({ message: scopeProblem }))
    return Effect.succeed((c: Chunk) =>
      (!scoped || readable(scope, c.access)) && (filter === undefined || Filters.matches(filter, get(c)))
    )
  }
  const checkVector = (v: ArrayLike<number>) => checkCollectionVector(spec, v)

  const remove = (ids: ReadonlyArray<string>) => {
    for (const id of ids) {
      rows.delete(id)
      text = undefined
    }
    return ids.length
  }

  const searchText = (
    query: TextQuery,
    options: { limit?: number | undefined; filter?: Filter | undefined; titleBoost?: number | undefined; scope?: ReadScope | undefined } = {}
  ) =>
    Effect.gen(function*() {
      yield* requireFullText(spec)
      const accept = yield* checkFilter(options.filter, options.scope)
      const q = weightedTerms(query)
      if (q.size === 0) return []
      const { index, order } = textIndex()
      const byId = (a: number, b: number) => {
        const x = order[a]!.chunk.id
        const y = order[b]!.chunk.id
        return x < y ? -1 : x > y ? 1 : 0
      }
      return index.search(q, options.titleBoost ?? 0, Math.max(1, options.limit ?? 10), (row) => accept(order[row]!.chunk), byId)
        .map((h) => toHit(order[h.row]!.chunk, h.score))
    })

  const searchVector = (
    vector: Float32Array | ReadonlyArray<number>,
    options: { limit?: number | undefined; filter?: Filter | undefined; scope?: ReadScope | undefined } = {}
  ) =>
    Effect.gen(function*() {
      yield* checkVector(vector)
      const accept = yield* checkFilter(options.filter, options.scope)
      const q = Float32Array.from(vector)
      const qn = normOf(q) || 1
      const scored: Array<Hit> = []
      for (const r of rows.values()) {
        if (r.vector === undefined || !accept(r.chunk)) continue
        let dot = 0
        for (let i = 0; i < q.length; i++) dot += q[i]! * r.vector[i]!
        scored.push(toHit(r.chunk, dot / (qn * (r.norm || 1))))
      }
      scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
      return scored.slice(0, Math.max(1, options.limit ?? 10))
    })

  return {
    spec,
    upsert: (chunks) =>
      Effect.gen(function*() {
        const prepared: Array<Row> = []
        for (const chunk of chunks) {
          if (chunk.id === "") return yield* new InvalidInput({ message: "a chunk id must not be empty" })
          const accessProblem = checkAccess(chunk.access)
          if (accessProblem !== undefined) return yield* new InvalidInput({ message: `chunk ${chunk.id}: ${accessProblem}` })
          yield* checkChunkVector(spec, chunk)
          for (const [name, type] of Object.entries(spec.fields ?? {})) {
            const v = chunk.metadata?.[name] ?? null
            if (v !== null && (typeof v !== type || (type === "number" && !Number.isFinite(v)))) {
              return yield* new InvalidInput({ message: `chunk ${chunk.id}: metadata field ${name} must be a ${type}, got ${JSON.stringify(v)}` })
            }
          }
          const vector = chunk.vector === undefined ? undefined : Float32Array.from(chunk.vector)
          prepared.push({ chunk, vector, norm: vector === undefined ? 0 : normOf(vector) })
        }
        let inserted = 0
        let updated = 0
        for (const r of prepared) {
          const old = rows.get(r.chunk.id)
          if (old !== undefined && contentHash(old.chunk) === contentHash(r.chunk)) continue
          if (old !== undefined) updated++
          else inserted++
          rows.set(r.chunk.id, r)
          text = undefined
        }
        return { inserted, updated }
      }),
    deleteDocuments: (documentIds) =>
      Effect.sync(() => {
        const set = new Set(documentIds)
        return remove([...rows.values()].filter((r) => set.has(r.chunk.documentId)).map((r) => r.chunk.id))
      }),
    deleteWhere: (filter) =>
      Effect.map(checkFilter(filter), (accept) => remove([...rows.values()].filter((r) => accept(r.chunk)).map((r) => r.chunk.id))),
    searchText,
    searchVector,
    searchHybrid: hybridSearch(searchText, searchVector),
    count: (filter, options: ScopeOptions = {}) =>
      Effect.map(checkFilter(filter, options.scope), (accept) => [...rows.values()].filter((r) => accept(r.chunk)).length),
    listDocuments: (options: ScopeOptions = {}) =>
      Effect.map(checkFilter(undefined, options.scope), (accept) => {
        const counts = new Map<string, number>()
        for (const r of rows.values()) {
          if (accept(r.chunk)) counts.set(r.chunk.documentId, (counts.get(r.chunk.documentId) ?? 0) + 1)
        }
        return [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([documentId, chunks]) => ({ documentId, chunks }))
      }),
    optimize: () => Effect.void,
    scan: (filter, options: ScopeOptions = {}) =>
      Effect.map(checkFilter(filter, options.scope), (accept) =>
        [...rows.values()].filter((r) => accept(r.chunk)).map((r) => toHit(r.chunk, 0))
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))),
    termCounts: (ids, options: ScopeOptions = {}) =>
      Effect.map(checkFilter(undefined, options.scope), (accept) => {
        const { index, order, rowOf } = textIndex()
        return ids.map((id) => {
          const row = rowOf.get(id)
          return row === undefined || !accept(order[row]!.chunk) ? undefined : index.contentTerms(row)
        })
      }),
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
        const c = makeCollection(spec)
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
