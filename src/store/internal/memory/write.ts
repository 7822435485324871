/**
 * Writes of the in-memory adapter: upsert (every chunk validated before any is stored; an
 * unchanged chunk, by content hash, is left as it is) and deletes. Each change drops the
 * full-text index.
 */
import * as Effect from "effect/Effect"
import { contentHash } from "../hash.js"
import {
  type Chunk,
  checkAccess,
  checkChunkVector,
  type CollectionSpec,
  type EmbeddingMismatch,
  type Filter,
  InvalidInput,
  type UpsertResult
} from "../../VectorStore.js"
import { accepting } from "./scope.js"
import { type CollectionState, invalidate, normOf, type Row } from "./state.js"

/** The row of a chunk, or why the chunk cannot be stored. */
const prepare = (spec: CollectionSpec, chunk: Chunk): Effect.Effect<Row, InvalidInput | EmbeddingMismatch> =>
  Effect.gen(function*() {
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
    return { chunk, vector, norm: vector === undefined ? 0 : normOf(vector) }
  })

/** The collection's `upsert`: nothing is stored unless every chunk is valid. */
export const upsert = (state: CollectionState, chunks: ReadonlyArray<Chunk>) =>
  Effect.gen(function*() {
    const prepared: Array<Row> = []
    for (const chunk of chunks) prepared.push(yield* prepare(state.spec, chunk))
    let inserted = 0
    let updated = 0
    for (const r of prepared) {
      const old = state.rows.get(r.chunk.id)
      if (old !== undefined && contentHash(old.chunk) === contentHash(r.chunk)) continue
      if (old !== undefined) updated++
      else inserted++
      state.rows.set(r.chunk.id, r)
      invalidate(state)
    }
    return { inserted, updated } satisfies UpsertResult
  })

/** Deletes the rows of these ids (ids of stored rows); returns how many. */
const remove = (state: CollectionState, ids: ReadonlyArray<string>): number => {
  for (const id of ids) {
    state.rows.delete(id)
    invalidate(state)
  }
  return ids.length
}

/** The collection's `deleteDocuments`. */
export const deleteDocuments = (state: CollectionState, documentIds: ReadonlyArray<string>): Effect.Effect<number> =>
  Effect.sync(() => {
    const set = new Set(documentIds)
    return remove(state, [...state.rows.values()].filter((r) => set.has(r.chunk.documentId)).map((r) => r.chunk.id))
  })

/** The collection's `deleteWhere`. */
export const deleteWhere = (state: CollectionState, filter: Filter): Effect.Effect<number, InvalidInput> =>
  Effect.map(
    accepting(state.spec, filter),
    (accept) => remove(state, [...state.rows.values()].filter((r) => accept(r.chunk)).map((r) => r.chunk.id))
  )
