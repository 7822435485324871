/**
 * The content digest of a chunk, shared by the backends: an upsert leaves a chunk whose digest
 * did not change untouched. Kept apart from the LanceDB adapter so that backends without it
 * (the in-memory store) do not load the native LanceDB module.
 */
import { createHash } from "node:crypto"
import type { Chunk } from "../VectorStore.js"

/** A digest of everything stored for a chunk: document id, title, text, metadata and vector. */
export const contentHash = (chunk: Chunk): string => {
  const h = createHash("sha256")
  h.update(JSON.stringify([chunk.documentId, chunk.title ?? null, chunk.text, chunk.metadata ?? {}]))
  if (chunk.vector !== undefined) {
    const v = Float32Array.from(chunk.vector)
    h.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
  }
  return h.digest("base64url")
}
