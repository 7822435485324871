/**
 * The row codec of the PostgreSQL adapter: a chunk analysed for full text (the same analysis as
 * the in-memory index's, see `../bm25.ts`), encoded as the columns of one multi-row `INSERT`
 * (arrays `unnest`ed) with its postings, and a row read back as a {@link Hit}.
 */
import { stem, stopWords, terms, words } from "../../TextAnalysis.js"
import type { Chunk, CollectionSpec, FieldType, Hit, Scalar } from "../../VectorStore.js"
import { ident, sqlType, vectorLiteral } from "./sql.js"

/** The analysed fields of a chunk: term -> [count, first word], with the field lengths. */
export interface Analysed {
  readonly content: Map<string, [number, string]>
  readonly contentLength: number
  readonly title: Map<string, [number, string]> | undefined
  readonly titleLength: number | undefined
}

/** Analyses a chunk's `content` (title + text) and `title` fields. */
export const analyseChunk = (chunk: Chunk): Analysed => {
  const content = new Map<string, [number, string]>()
  let contentLength = 0
  const text = chunk.title === undefined || chunk.title === "" ? chunk.text : `${chunk.title}\n${chunk.text}`
  for (const w of words(text)) {
    if (w.length > 40 || stopWords.has(w)) continue
    const t = stem(w)
    const e = content.get(t)
    if (e === undefined) content.set(t, [1, w])
    else e[0]++
    contentLength++
  }
  if (chunk.title === undefined) return { content, contentLength, title: undefined, titleLength: undefined }
  const title = new Map<string, [number, string]>()
  const ts = terms(chunk.title)
  for (const t of ts) {
    const e = title.get(t)
    if (e === undefined) title.set(t, [1, t])
    else e[0]++
  }
  return { content, contentLength, title, titleLength: ts.length }
}

/** A chunks-table row (`id, document_id, title, text, metadata`, the score apart) as a hit. */
export const toHit = (r: Record<string, unknown>, score: number): Hit => ({
  id: String(r["id"]),
  documentId: String(r["document_id"]),
  text: String(r["text"] ?? ""),
  title: typeof r["title"] === "string" ? r["title"] : undefined,
  metadata: (r["metadata"] ?? {}) as Record<string, Scalar>,
  score
})

/** How the chunks of one collection are written: its columns and the statement. */
export interface RowCodec {
  readonly columns: ReadonlyArray<string>
  /** `INSERT … SELECT … FROM unnest($1::…[], …)`, one array per column. */
  readonly insertChunks: string
  /** The row of a chunk, in column order. */
  readonly encode: (chunk: Chunk, hash: string, analysed: Analysed) => Array<unknown>
}

/** The codec of the chunks table `chunks` of a collection with `spec` and its declared `fields`. */
export const rowCodec = (
  chunks: string,
  spec: CollectionSpec,
  fields: ReadonlyArray<readonly [field: string, type: FieldType, column: string]>
): RowCodec => {
  const vector = spec.embedding !== undefined
  const columns = [
    "id",
    "document_id",
    "title",
    "text",
    "metadata",
    "content_hash",
    "content_len",
    "title_len",
    "access",
    ...fields.map(([, , c]) => c),
    ...(vector ? ["vector"] : [])
  ]
  const arrayTypes = [
    "text[]",
    "text[]",
    "text[]",
    "text[]",
    "jsonb[]",
    "text[]",
    "int[]",
    "int[]",
    "jsonb[]",
    ...fields.map(([, t]) => `${sqlType(t)}[]`),
    ...(vector ? ["text[]"] : [])
  ]
  const selected = columns.map((c) =>
    c === "vector"
      ? `t.${ident(c)}::vector`
      // an access list travels as a JSON array (unnest flattens arrays of arrays)
      : c === "access"
      ? `CASE WHEN t.access IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(t.access)) END`
      : `t.${ident(c)}`
  ).join(", ")
  const insertChunks = `INSERT INTO ${chunks} (${columns.map(ident).join(", ")}) SELECT ${selected} FROM unnest(${
    arrayTypes.map((t, i) => `$${i + 1}::${t}`).join(", ")
  }) AS t(${columns.map(ident).join(", ")})`
  const encode = (ch: Chunk, hash: string, a: Analysed): Array<unknown> => [
    ch.id,
    ch.documentId,
    ch.title ?? null,
    ch.text,
    JSON.stringify(ch.metadata ?? {}),
    hash,
    a.contentLength,
    a.titleLength ?? null,
    ch.access === undefined ? null : JSON.stringify([...new Set(ch.access)]),
    ...fields.map(([f]) => ch.metadata?.[f] ?? null),
    ...(vector ? [vectorLiteral(ch.vector!)] : [])
  ]
  return { columns, insertChunks, encode }
}

/** The postings table's insert: six arrays (term, field, chunk, term count, field length, word). */
export const insertPostings = (postings: string): string =>
  `INSERT INTO ${postings} (term, field, chunk_id, tf, len, word)
    SELECT * FROM unnest($1::text[], $2::smallint[], $3::text[], $4::int[], $5::int[], $6::text[])`

/** The postings of a batch, column by column (the parameters of {@link insertPostings}). */
export class Postings {
  readonly columns: [Array<string>, Array<number>, Array<string>, Array<number>, Array<number>, Array<string>] = [
    [],
    [],
    [],
    [],
    [],
    []
  ]
  get size(): number {
    return this.columns[0].length
  }
  /** Adds the postings of a chunk: field 0 its content, field 1 its title. */
  add(chunkId: string, a: Analysed): void {
    this.addField(chunkId, 0, a.content, a.contentLength)
    if (a.title !== undefined) this.addField(chunkId, 1, a.title, a.titleLength!)
  }
  private addField(chunkId: string, field: number, m: Map<string, [number, string]>, len: number): void {
    const p = this.columns
    for (const [term, [tf, word]] of m) {
      p[0].push(term)
      p[1].push(field)
      p[2].push(chunkId)
      p[3].push(tf)
      p[4].push(len)
      p[5].push(word)
    }
  }
}
