/**
 * The stored state of an ingest: the collection specs, chunk ids, and the manifest (one
 * completion marker per document, in a companion collection `<name>__ingest`).
 *
 * A manifest row has `id` = the document id and `documentId` = `JSON [documentId, hash, chunks]`,
 * so that one `listDocuments()` scan of the manifest reads every marker (the port has no
 * projection scan), and `get(ids)` the markers of a few documents ({@link loadFor}). The manifest collection is internal: `collections list` hides it and
 * `collections drop` drops it with its collection.
 */
import { createHash } from "node:crypto"
import { stat } from "node:fs/promises"
import { resolve } from "node:path"
import { Effect } from "effect"
import {
  type Collection,
  type CollectionSpec,
  documentIdField,
  type FieldType,
  Filter,
  InvalidInput,
  type VectorStoreError
} from "../../store/VectorStore.js"
import * as Sources from "./ingest-sources.js"

/** The suffix of the manifest collection of a collection. */
export const manifestSuffix = "__ingest"

/** The manifest collection's name. */
export const manifestName = (collection: string): string => `${collection}${manifestSuffix}`

/** Whether a collection name is a manifest collection (names ending with `__ingest` are reserved for them). */
export const isManifest = (name: string): boolean => name.endsWith(manifestSuffix)

/** The refusal of a reserved name: the manifest of another collection, never a collection of its own. */
export const reservedName = (name: string): InvalidInput =>
  new InvalidInput({
    message: `${name} is the internal manifest of collection ${name.slice(0, -manifestSuffix.length)}: ` +
      `names ending with ${manifestSuffix} are reserved`
  })

/** The metadata fields the ingest declares (filterable by queries). */
export const fields: Readonly<Record<string, FieldType>> = {
  source: "string",
  source_hash: "string",
  page: "number",
  type: "string"
}

/** The spec of an ingest collection. */
export const collectionSpec = (
  name: string,
  embedding: CollectionSpec["embedding"]
): CollectionSpec => ({ name, fields, ...(embedding !== undefined ? { embedding } : {}) })

/**
 * The manifest collection's spec: no embedding, no fields, and no full text (it is read by
 * listing only, so the store keeps no full-text index for it).
 */
export const manifestSpec = (name: string): CollectionSpec => ({ name: manifestName(name), fullText: false })

/**
 * The content hash of a document: SHA-256 of the pipeline fingerprint (upload engine, embedder)
 * and the source bytes, 32 hex digits. A change of either replaces the document's chunks.
 */
export const contentHash = (fingerprint: string, data: Uint8Array): string =>
  createHash("sha256").update(fingerprint).update("\0").update(data).digest("hex").slice(0, 32)

/**
 * A chunk id: document id, hash and index. Deterministic, so a rerun after a crash re-upserts
 * the same ids (merge-insert: no duplicates), and the generations of a document never collide.
 */
export const chunkId = (documentId: string, hash: string, index: number): string =>
  `${documentId}#${hash.slice(0, 16)}-${index}`

/** A completion marker. */
export interface Marker {
  readonly hash: string
  readonly chunks: number
  /** A file's {@link statSignature} when it was read (absent for pages, and for files changed just before their read). */
  readonly sig?: string | undefined
}

/** The manifest row key of a marker. */
export const markerKey = (documentId: string, m: Marker): string =>
  JSON.stringify(m.sig === undefined ? [documentId, m.hash, m.chunks] : [documentId, m.hash, m.chunks, m.sig])

/** What a file's stat says about its content without reading it. */
export interface FileStat {
  readonly size: number
  readonly mtimeMs: number
  readonly ctimeMs: number
  readonly ino: number
}

/**
 * The stat signature of a file under a hash prefix (the pipeline fingerprint and access list):
 * size, modification and change times, inode. A rerun whose stat of a file gives the marker's
 * signature skips it without reading it, as git's index does. `ctime` cannot be set back by
 * tools that restore `mtime` (rsync, tar), and the prefix makes a new fingerprint or access list
 * read every file again.
 */
export const statSignature = (prefix: string, st: FileStat): string =>
  createHash("sha256").update(prefix).update(`\0${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`).digest("hex").slice(0, 24)

/**
 * How long before its read a file must have last changed for its signature to be recorded:
 * a write in the same clock tick as the read (file systems with 1-2 s time stamps) could leave
 * the same size and times with other bytes. Such a file is read again on the next run.
 */
export const racyWindowMs = 2_500

/** The signature to record for a file stat'ed just before a read that started at `readAt`, if it is safe to trust later. */
export const signatureToRecord = (prefix: string, st: FileStat, readAt: number): string | undefined =>
  Math.max(st.mtimeMs, st.ctimeMs) < readAt - racyWindowMs ? statSignature(prefix, st) : undefined

const parseKey = (key: string): [string, Marker] | undefined => {
  try {
    const v: unknown = JSON.parse(key)
    if (Array.isArray(v) && typeof v[0] === "string" && typeof v[1] === "string" && typeof v[2] === "number") {
      return [v[0], typeof v[3] === "string" ? { hash: v[1], chunks: v[2], sig: v[3] } : { hash: v[1], chunks: v[2] }]
    }
  } catch {
    // not a marker
  }
  return undefined
}

/** What is stored before a run: the markers, and the chunk count of every document. */
export interface StoredState {
  readonly markers: Map<string, Marker>
  /** Chunks per document in the collection (a document with chunks and no marker is partial). */
  readonly chunkCounts: Map<string, number>
}

/** Reads the stored state: one scan of the manifest, one of the collection (ids only). */
export const load = (main: Collection, manifest: Collection): Effect.Effect<StoredState, VectorStoreError> =>
  Effect.gen(function*() {
    const markers = new Map<string, Marker>()
    for (const d of yield* manifest.listDocuments()) {
      const parsed = parseKey(d.documentId)
      if (parsed !== undefined) markers.set(parsed[0], parsed[1])
    }
    const chunkCounts = new Map<string, number>()
    for (const d of yield* main.listDocuments()) chunkCounts.set(d.documentId, d.chunks)
    return { markers, chunkCounts }
  })

/**
 * Reads the stored state of these documents only: their markers by id from the manifest (one
 * lookup) and their chunk counts (one count each). Undefined when the manifest's store cannot
 * look rows up by id (`Collection.get` is optional): then {@link load} reads it all.
 */
export const loadFor = (
  main: Collection,
  manifest: Collection,
  documentIds: ReadonlyArray<string>
): Effect.Effect<StoredState | undefined, VectorStoreError> =>
  Effect.gen(function*() {
    if (manifest.get === undefined) return undefined
    const ids = [...new Set(documentIds)]
    const markers = new Map<string, Marker>()
    for (const row of yield* manifest.get(ids)) {
      const parsed = parseKey(row.documentId)
      if (parsed !== undefined && parsed[0] === row.id) markers.set(parsed[0], parsed[1])
    }
    const chunkCounts = new Map<string, number>()
    for (const id of ids) {
      const n = yield* main.count(Filter.eq(documentIdField, id))
      if (n > 0) chunkCounts.set(id, n)
    }
    return { markers, chunkCounts }
  })

/**
 * Documents a run names one by one at most for its stored state to be read for them alone
 * ({@link loadFor}); more, or a folder or a site, read the whole state ({@link load}).
 */
export const namedLimit = 64

/** A source as {@link namedDocuments} reads it (the pipeline's `SourceSpec`). */
type NamedSource =
  | { readonly _tag: "Path"; readonly path: string }
  | { readonly _tag: "Url"; readonly url: string }
  | { readonly _tag: "Site" }

/**
 * The documents a run's sources name one by one (files, or paths that are missing, by the id
 * the walk gives them; pages by their normalised URL), when there are at most
 * {@link namedLimit} of them; undefined when a source is a folder or a site (which the run must
 * walk or crawl to know) or there are more.
 */
export const namedDocuments = (sources: ReadonlyArray<NamedSource>): Effect.Effect<ReadonlyArray<string> | undefined> =>
  Effect.promise(async () => {
    if (sources.length > namedLimit) return undefined
    const ids: Array<string> = []
    for (const s of sources) {
      if (s._tag === "Site") return undefined
      if (s._tag === "Url") {
        const id = Sources.urlDocumentId(s.url)
        if (id !== undefined) ids.push(id)
        continue
      }
      const abs = resolve(s.path)
      const info = await stat(abs).catch(() => undefined)
      if (info?.isDirectory() === true) return undefined
      ids.push(Sources.fileDocumentId(abs))
    }
    return ids
  })

/** The marker of a document stored complete (its chunks all there), whatever its hash. */
export const completeMarker = (state: StoredState, documentId: string): Marker | undefined => {
  const m = state.markers.get(documentId)
  return m !== undefined && (state.chunkCounts.get(documentId) ?? 0) === m.chunks ? m : undefined
}

/** Whether a document is stored complete with this hash (its marker matches and its chunks are all there). */
export const isComplete = (state: StoredState, documentId: string, hash: string): boolean => {
  const m = state.markers.get(documentId)
  return m !== undefined && m.hash === hash && (state.chunkCounts.get(documentId) ?? 0) === m.chunks
}
