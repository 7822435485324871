/**
 * The explicit state of one collection of the in-memory adapter, passed to every operation
 * (writes, full text, vector, reads): its spec, its rows by id, and the full-text index of the
 * rows as they are (built on the first search after a change, dropped by every change).
 */
import type { FieldIndex } from "../bm25.js"
import type { Chunk, CollectionSpec, Hit } from "../../VectorStore.js"

/** A stored chunk with its vector and the vector's norm (0 without one). */
export interface Row {
  readonly chunk: Chunk
  readonly vector: Float32Array | undefined
  readonly norm: number
}

/** The full-text index of the rows in `order`; `rowOf` maps a chunk id to its index row. */
export interface TextIndex {
  readonly index: FieldIndex
  readonly order: ReadonlyArray<Row>
  readonly rowOf: ReadonlyMap<string, number>
}

/** One collection. `rows` and `text` change with writes; nothing else does. */
export interface CollectionState {
  readonly spec: CollectionSpec
  readonly rows: Map<string, Row>
  /** The full-text index of `rows`, or undefined when a change has made it stale. */
  text: TextIndex | undefined
}

/** An empty collection. */
export const makeState = (spec: CollectionSpec): CollectionState => ({ spec, rows: new Map(), text: undefined })

/** Marks the full-text index stale (after any change to the rows). */
export const invalidate = (state: CollectionState): void => {
  state.text = undefined
}

/** The Euclidean norm of a vector. */
export const normOf = (v: Float32Array): number => {
  let s = 0
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!
  return Math.sqrt(s)
}

/** The hit of a chunk with `score`. */
export const toHit = (chunk: Chunk, score: number): Hit => ({
  id: chunk.id,
  documentId: chunk.documentId,
  text: chunk.text,
  title: chunk.title,
  metadata: chunk.metadata ?? {},
  score
})

/** Orders two ids (code-unit order). */
export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
