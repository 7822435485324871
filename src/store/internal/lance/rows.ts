/**
 * The LanceDB adapter's rows: the Arrow schema of a collection (its spec in the schema metadata),
 * a chunk as a row, rows as an Arrow table in the table's column order, a row as a hit, and the
 * `access` column's encoding. Pure functions, no state.
 */
import type * as Arrow from "apache-arrow"
import { createRequire } from "node:module"
import * as Filters from "../filter.js"
import * as Hash from "../hash.js"
import {
  type Chunk,
  checkAccess,
  type CollectionSpec,
  describeEmbedding,
  type Hit,
  type Scalar
} from "../../VectorStore.js"

// apache-arrow's CommonJS build, the instance LanceDB itself loads (its ES module build would be a
// second copy of the library: about 130 more files to load at start-up).
const arrow: typeof Arrow = createRequire(import.meta.url)("apache-arrow")

/** The schema metadata key of the collection's spec. */
export const specKey = "effect_rag.spec"

/** The column of the access lists, and the separator around each entry (entries hold no control characters). */
export const accessColumn = "access"
const accessSep = "\u001f"

/** The columns a hit is made of (the declared field columns are in `metadata` too: not read). */
export const hitColumns: ReadonlyArray<string> = ["id", "document_id", "title", "text", "metadata"]

const encodeAccess = (access: ReadonlyArray<string> | undefined): string | null =>
  access === undefined ? null : accessSep + [...new Set(access)].sort().join(accessSep) + accessSep

/** The entries of a stored access list (undefined: no list). */
export const decodeAccess = (raw: unknown): ReadonlyArray<string> | undefined =>
  typeof raw === "string" ? raw.split(accessSep).filter((e) => e !== "") : undefined

/** The predicate of a restricted scope over the `access` column (entries validated). */
export const scopeSql = (entries: ReadonlyArray<string>): string =>
  entries.length === 0
    ? "(1 = 0)"
    : `(\`${accessColumn}\` IS NOT NULL AND (${
      [...new Set(entries)].map((e) => `strpos(\`${accessColumn}\`, ${Filters.literal(accessSep + e + accessSep)}) > 0`).join(" OR ")
    }))`

// Booleans are stored as Int8 0/1: apache-arrow 18's IPC writer sends an all-null Bool column
// with an empty value buffer, which LanceDB rejects.
const fieldType = (t: string): Arrow.DataType =>
  t === "number" ? new arrow.Float64() : t === "boolean" ? new arrow.Int8() : new arrow.Utf8()

/** The Arrow schema of a collection, its spec in the metadata. */
export const schemaOf = (spec: CollectionSpec): Arrow.Schema => {
  const fields: Array<Arrow.Field> = [
    new arrow.Field("id", new arrow.Utf8(), false),
    new arrow.Field("document_id", new arrow.Utf8(), false),
    new arrow.Field("title", new arrow.Utf8(), true),
    new arrow.Field("text", new arrow.Utf8(), false),
    // title + text: the field plain BM25 scores (the title alone is indexed too, for boosting)
    new arrow.Field("content", new arrow.Utf8(), false),
    new arrow.Field("metadata", new arrow.Utf8(), false),
    new arrow.Field("content_hash", new arrow.Utf8(), false),
    new arrow.Field(accessColumn, new arrow.Utf8(), true)
  ]
  for (const [name, type] of Object.entries(spec.fields ?? {})) {
    fields.push(new arrow.Field(Filters.fieldColumn(name), fieldType(type), true))
  }
  if (spec.embedding !== undefined) {
    fields.push(
      new arrow.Field(
        "vector",
        new arrow.FixedSizeList(spec.embedding.dimension, new arrow.Field("item", new arrow.Float32(), true)),
        false
      )
    )
  }
  return new arrow.Schema(fields, new Map([[specKey, JSON.stringify(spec)]]))
}

/** The spec stored in a table's schema (undefined: not an effect-rag table). */
export const parseSpec = (name: string, schema: Arrow.Schema): CollectionSpec | undefined => {
  const raw = schema.metadata.get(specKey)
  if (raw === undefined) return undefined
  try {
    const s = JSON.parse(raw) as CollectionSpec
    return { ...s, name }
  } catch {
    return undefined
  }
}

/** Whether a schema has the `access` column. */
export const hasAccessColumn = (schema: Arrow.Schema): boolean => schema.fields.some((f) => f.name === accessColumn)

/** The `content` column's value: title and text, the field plain BM25 scores. */
export const contentOf = (title: string | undefined, text: string): string =>
  title === undefined || title === "" ? text : `${title}\n${text}`

/** A chunk as a row, or the message of what is wrong with it. */
export const toRow = (spec: CollectionSpec, chunk: Chunk): Record<string, unknown> | string => {
  if (chunk.id === "") return "a chunk id must not be empty"
  const accessProblem = checkAccess(chunk.access)
  if (accessProblem !== undefined) return `chunk ${chunk.id}: ${accessProblem}`
  const row: Record<string, unknown> = {
    id: chunk.id,
    document_id: chunk.documentId,
    title: chunk.title ?? null,
    text: chunk.text,
    content: contentOf(chunk.title, chunk.text),
    metadata: JSON.stringify(chunk.metadata ?? {}),
    [accessColumn]: encodeAccess(chunk.access)
  }
  for (const [name, type] of Object.entries(spec.fields ?? {})) {
    const v = chunk.metadata?.[name] ?? null
    if (v !== null && typeof v !== type) {
      return `chunk ${chunk.id}: metadata field ${name} must be a ${type}, got ${JSON.stringify(v)}`
    }
    if (type === "number" && v !== null && !Number.isFinite(v)) return `chunk ${chunk.id}: metadata field ${name} is not finite`
    row[Filters.fieldColumn(name)] = v
  }
  if (spec.embedding !== undefined) {
    if (chunk.vector === undefined) return `chunk ${chunk.id}: the collection ${spec.name} needs a vector (${describeEmbedding(spec.embedding)})`
    row["vector"] = chunk.vector
  }
  row["content_hash"] = Hash.contentHash(chunk)
  return row
}

// Columns are built by hand: apache-arrow 18's row builder leaves buffers short when a nullable
// column ends in nulls (LanceDB then rejects the batch: "Need at least N bytes in buffers[0]").

const validity = (values: ReadonlyArray<unknown>): { bitmap: Uint8Array; nullCount: number } => {
  const bitmap = new Uint8Array(Math.max(1, Math.ceil(values.length / 8)))
  let nullCount = 0
  values.forEach((v, i) => {
    if (v === null || v === undefined) nullCount++
    else bitmap[i >> 3]! |= 1 << (i & 7)
  })
  return { bitmap, nullCount }
}

const utf8Data = (values: ReadonlyArray<unknown>): Arrow.Data => {
  const encoder = new TextEncoder()
  const parts = values.map((v) => (typeof v === "string" ? encoder.encode(v) : new Uint8Array(0)))
  const offsets = new Int32Array(values.length + 1)
  parts.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length))
  const data = new Uint8Array(Math.max(1, offsets[values.length]!))
  parts.forEach((p, i) => data.set(p, offsets[i]!))
  const { bitmap, nullCount } = validity(values)
  return arrow.makeData({ type: new arrow.Utf8(), length: values.length, nullCount, nullBitmap: bitmap, valueOffsets: offsets, data })
}

const float64Data = (values: ReadonlyArray<unknown>): Arrow.Data => {
  const data = new Float64Array(values.length)
  values.forEach((v, i) => (data[i] = typeof v === "number" ? v : 0))
  const { bitmap, nullCount } = validity(values)
  return arrow.makeData({ type: new arrow.Float64(), length: values.length, nullCount, nullBitmap: bitmap, data })
}

const int8Data = (values: ReadonlyArray<unknown>): Arrow.Data => {
  const data = new Int8Array(values.length)
  values.forEach((v, i) => (data[i] = v === true ? 1 : 0))
  const { bitmap, nullCount } = validity(values)
  return arrow.makeData({ type: new arrow.Int8(), length: values.length, nullCount, nullBitmap: bitmap, data })
}

const vectorData = (type: Arrow.FixedSizeList, values: ReadonlyArray<unknown>): Arrow.Data => {
  const dim = type.listSize
  const flat = new Float32Array(values.length * dim)
  values.forEach((v, i) => flat.set(v as ArrayLike<number>, i * dim))
  const child = arrow.makeData({ type: new arrow.Float32(), length: flat.length, nullCount: 0, data: flat })
  return arrow.makeData({ type, length: values.length, nullCount: 0, child })
}

/** Rows as one Arrow record batch, its columns in the table's `order` (when given). */
export const toArrow = (spec: CollectionSpec, rows: ReadonlyArray<Record<string, unknown>>, order?: ReadonlyArray<string>): Arrow.Table => {
  // LanceDB 0.29's merge-insert takes the batch's columns by position: they follow the table's
  // order (a column added to an older table comes last there)
  const rank = (name: string) => (order === undefined || !order.includes(name) ? Number.MAX_SAFE_INTEGER : order.indexOf(name))
  const specSchema = schemaOf(spec)
  const schema = order === undefined ? specSchema : new arrow.Schema([...specSchema.fields].sort((a, b) => rank(a.name) - rank(b.name)), specSchema.metadata)
  const children = schema.fields.map((f) => {
    const values = rows.map((r) => r[f.name] ?? null)
    if (f.type instanceof arrow.Utf8) return utf8Data(values)
    if (f.type instanceof arrow.Float64) return float64Data(values)
    if (f.type instanceof arrow.Int8) return int8Data(values)
    return vectorData(f.type as Arrow.FixedSizeList, values)
  })
  const struct = arrow.makeData({ type: new arrow.Struct(schema.fields), length: rows.length, nullCount: 0, children })
  return new arrow.Table([new arrow.RecordBatch(schema, struct)])
}

/** A row read back (at least {@link hitColumns}) as a hit with `score`. */
export const toHit = (row: Record<string, unknown>, score: number): Hit => {
  let metadata: Record<string, Scalar> = {}
  try {
    metadata = JSON.parse(String(row["metadata"] ?? "{}")) as Record<string, Scalar>
  } catch {
    metadata = {}
  }
  const title = row["title"]
  return {
    id: String(row["id"]),
    documentId: String(row["document_id"]),
    text: String(row["text"] ?? ""),
    title: typeof title === "string" ? title : undefined,
    metadata,
    score
  }
}

/** Hits with equal scores in id order: the same query gives the same list whichever fragment holds a row. */
export const byScoreThenId = (a: Hit, b: Hit): number => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
