/**
 * The write path of the PostgreSQL adapter: upserts in batches of `batchSize` chunks, each batch
 * one transaction holding the collection's write lock (`pg_advisory_xact_lock`), so writers of
 * any number of processes take turns, counts are exact (a chunk whose digest did not change is
 * left alone) and a crash loses at most the batch in flight; deletes by document or filter. The
 * full-text statistics in the collection's row change in the same transaction as the rows.
 */
import * as Effect from "effect/Effect"
import { contentHash } from "../hash.js"
import {
  checkAccess,
  checkChunkVector,
  type Chunk,
  type Filter,
  InvalidInput,
  type UpsertResult,
  type VectorStoreError
} from "../../VectorStore.js"
import type { Queryable } from "./client.js"
import { analyseChunk, insertPostings, Postings } from "./codec.js"
import { Params } from "./sql.js"
import { type CollectionState, locked, type StatsDelta, updateStats, where } from "./state.js"

const checkChunk = (state: CollectionState, chunk: Chunk): Effect.Effect<void, VectorStoreError> =>
  Effect.gen(function*() {
    if (chunk.id === "") return yield* new InvalidInput({ message: "a chunk id must not be empty" })
    const accessProblem = checkAccess(chunk.access)
    if (accessProblem !== undefined) return yield* new InvalidInput({ message: `chunk ${chunk.id}: ${accessProblem}` })
    yield* checkChunkVector(state.spec, chunk)
    for (const [name, type] of state.fields) {
      const v = chunk.metadata?.[name] ?? null
      if (v !== null && (typeof v !== type || (type === "number" && !Number.isFinite(v)))) {
        return yield* new InvalidInput({ message: `chunk ${chunk.id}: metadata field ${name} must be a ${type}, got ${JSON.stringify(v)}` })
      }
    }
  })

/** Which chunks of a batch to write (new or changed digests) and which of them replace rows. */
interface Plan {
  readonly write: ReadonlyArray<number>
  readonly replaced: ReadonlyArray<string>
  readonly inserted: number
  readonly updated: number
}

const plan = (batch: ReadonlyArray<Chunk>, hashes: ReadonlyArray<string>, existing: ReadonlyMap<string, string>): Plan => {
  const write: Array<number> = []
  const replaced: Array<string> = []
  let inserted = 0
  let updated = 0
  batch.forEach((ch, i) => {
    const old = existing.get(ch.id)
    if (old === hashes[i]) return
    if (old === undefined) inserted++
    else {
      updated++
      replaced.push(ch.id)
    }
    write.push(i)
  })
  return { write, replaced, inserted, updated }
}

/** The stored digests of the chunks `ids`. */
const storedHashes = async (state: CollectionState, c: Queryable, ids: ReadonlyArray<string>) => {
  const existing = new Map<string, string>()
  const r = await c.query(`SELECT id, content_hash FROM ${state.tables.chunks} WHERE id = ANY($1::text[])`, [ids])
  for (const row of r.rows) existing.set(String(row["id"]), String(row["content_hash"]))
  return existing
}

/** Deletes the rows and postings of the chunks `ids`, subtracting them from `delta`. */
const removeReplaced = async (state: CollectionState, c: Queryable, ids: ReadonlyArray<string>, delta: StatsDelta) => {
  const { chunks, postings } = state.tables
  await c.query(`DELETE FROM ${postings} WHERE chunk_id = ANY($1::text[])`, [ids])
  const gone = await c.query(`DELETE FROM ${chunks} WHERE id = ANY($1::text[]) RETURNING content_len, title_len`, [ids])
  for (const r of gone.rows) {
    delta.chunks--
    delta.content -= Number(r["content_len"])
    if (r["title_len"] !== null) {
      delta.titled--
      delta.title -= Number(r["title_len"])
    }
  }
}

/** Inserts the chunks `batch[i]` for each `i` of `write`, with their postings, adding them to `delta`. */
const insertRows = async (
  state: CollectionState,
  c: Queryable,
  rows: { readonly batch: ReadonlyArray<Chunk>; readonly hashes: ReadonlyArray<string>; readonly write: ReadonlyArray<number> },
  delta: StatsDelta
) => {
  const cols: Array<Array<unknown>> = state.codec.columns.map(() => [])
  const postings = new Postings()
  for (const i of rows.write) {
    const ch = rows.batch[i]!
    const a = analyseChunk(ch)
    state.codec.encode(ch, rows.hashes[i]!, a).forEach((v, j) => cols[j]!.push(v))
    delta.chunks++
    delta.content += a.contentLength
    if (a.titleLength !== undefined) {
      delta.titled++
      delta.title += a.titleLength
    }
    postings.add(ch.id, a)
  }
  await c.query(state.codec.insertChunks, cols)
  if (postings.size > 0) await c.query(insertPostings(state.tables.postings), postings.columns)
}

/** Writes one batch (distinct ids) in one locked transaction. */
const writeBatch = (state: CollectionState, batch: ReadonlyArray<Chunk>) =>
  locked(state, "upsert", async (c) => {
    const hashes = batch.map(contentHash)
    const p = plan(batch, hashes, await storedHashes(state, c, batch.map((ch) => ch.id)))
    if (p.write.length === 0) return { inserted: p.inserted, updated: p.updated }
    const delta: StatsDelta = { chunks: 0, content: 0, titled: 0, title: 0 }
    if (p.replaced.length > 0) await removeReplaced(state, c, p.replaced, delta)
    await insertRows(state, c, { batch, hashes, write: p.write }, delta)
    await updateStats(state, c, delta)
    return { inserted: p.inserted, updated: p.updated }
  })

/** The collection's `upsert`. */
export const upsert = (state: CollectionState, input: ReadonlyArray<Chunk>) =>
  Effect.gen(function*() {
    // the last of several chunks with one id wins
    const byId = new Map<string, Chunk>()
    for (const ch of input) {
      yield* checkChunk(state, ch)
      byId.delete(ch.id)
      byId.set(ch.id, ch)
    }
    const all = [...byId.values()]
    const size = state.settings.batchSize
    let inserted = 0
    let updated = 0
    for (let i = 0; i < all.length; i += size) {
      const r = yield* writeBatch(state, all.slice(i, i + size))
      inserted += r.inserted
      updated += r.updated
    }
    return { inserted, updated } satisfies UpsertResult
  }).pipe(Effect.withSpan("PostgresStore.upsert", { attributes: { collection: state.spec.name, chunks: input.length } }))

/** Deletes the chunks matching `condition` (with its parameters) and their postings. */
const deleteMatching = (state: CollectionState, op: string, condition: string, params: Params) =>
  locked(state, op, async (c) => {
    const { chunks, postings } = state.tables
    const gone = await c.query(
      `WITH gone AS (DELETE FROM ${chunks} WHERE ${condition} RETURNING id, content_len, title_len),
          p AS (DELETE FROM ${postings} WHERE chunk_id IN (SELECT id FROM gone))
        SELECT count(*) AS n, coalesce(sum(content_len), 0) AS content, count(title_len) AS titled,
          coalesce(sum(title_len), 0) AS title FROM gone`,
      params.values
    )
    const r = gone.rows[0]!
    const n = Number(r["n"])
    if (n > 0) {
      await updateStats(state, c, { chunks: -n, content: -Number(r["content"]), titled: -Number(r["titled"]), title: -Number(r["title"]) })
    }
    return n
  })

/** The collection's `deleteDocuments`. */
export const deleteDocuments = (state: CollectionState, documentIds: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    if (documentIds.length === 0) return Effect.succeed(0)
    const params = new Params()
    return deleteMatching(state, "deleteDocuments", `document_id = ANY(${params.bind([...documentIds])}::text[])`, params)
  })

/** The collection's `deleteWhere`. */
export const deleteWhere = (state: CollectionState, filter: Filter) =>
  Effect.suspend(() => {
    const params = new Params()
    return where(state, filter, params).pipe(Effect.flatMap((cond) => deleteMatching(state, "deleteWhere", cond, params)))
  })
