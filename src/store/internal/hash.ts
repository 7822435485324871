/**
 * The content digest of a chunk, shared by the backends: an upsert leaves a chunk whose digest
 * did not change untouched. Kept apart from the LanceDB adapter so that backends without it
 * (the in-memory store) do not load the native LanceDB module.
 */
import { createHash } from "node:crypto"
import type { Chunk } from "../VectorStore.js"

/**
 * A digest of everything stored for a chunk: document id, title, text, metadata, access list
 * and vector. A chunk without an access list digests as before access lists existed, so rows
 * written then are not rewritten by an unchanged upsert.
 */
export const contentHash = (chunk: Chunk): string => {
  const h = createHash("sha256")
  const base: Array<unknown> = [chunk.documentId, chunk.title ?? null, chunk.text, chunk.metadata ?? {}]
  if (chunk.access !== undefined) base.push({ access: [...new Set(chunk.access)].sort() })
  h.update(JSON.stringify(base))
  if (chunk.vector !== undefined) {
    const v = Float32Array.from(chunk.vector)
    h.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
  }
  return h.digest("base64url")
}
