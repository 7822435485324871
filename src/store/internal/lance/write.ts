/**
 * The write path of one table handle: upserts in batches — appended when the table holds none of
 * a batch's ids, else merge-inserts keyed by `id` — the repair of duplicates left by concurrent
 * writers, deletes, and the index upkeep after each.
 * Writes of this process to the table go one at a time (`writeLock`); other processes' writes
 * are LanceDB's commit conflicts, retried (see `table.ts`).
 */
import * as Effect from "effect/Effect"
import * as Filters from "../filter.js"
import {
  type Chunk,
  checkChunkVector,
  type Filter,
  InvalidInput,
  type StoreError,
  type UpsertResult,
  type VectorStoreError
} from "../../VectorStore.js"
import { accessColumn, toArrow, toRow } from "./rows.js"
import type { LanceTable } from "./table.js"
import type { IndexUpkeep } from "./upkeep.js"

/** The chunks of one batch as rows, the last of several chunks with one id winning; or the message of a bad chunk. */
const batchRows = (t: LanceTable, batch: ReadonlyArray<Chunk>) =>
  Effect.gen(function*() {
    const rows: Array<Record<string, unknown>> = []
    const seen = new Map<string, number>()
    for (const chunk of batch) {
      yield* checkChunkVector(t.spec, chunk)
      const row = toRow(t.spec, chunk)
      if (typeof row === "string") return yield* new InvalidInput({ message: row })
      // The last of several chunks with one id in a batch wins (merge-insert would duplicate).
      const at = seen.get(chunk.id)
      if (at === undefined) {
        seen.set(chunk.id, rows.length)
        rows.push(row)
      } else rows[at] = row
    }
    return rows
  })

/** The write path of one table handle. */
export class Writer {
  /** Writes of this process to this table go one at a time (other processes: see upsert). */
  private readonly writeLock = Effect.unsafeMakeSemaphore(1)
  /**
   * The table's column order, read once (not before every batch): it changes only when the
   * `access` column is added, so it is read again when that differs from when it was read.
   */
  private order: { readonly names: Array<string>; readonly withAccess: boolean } | undefined

  constructor(private readonly t: LanceTable, private readonly upkeep: IndexUpkeep) {}

  private columnOrder(): Effect.Effect<Array<string>, StoreError> {
    const order = this.order
    if (order !== undefined && order.withAccess === this.t.withAccess) return Effect.succeed(order.names)
    return Effect.map(this.t.attempt("schema", () => this.t.table.schema()), (schema) => {
      const names = schema.fields.map((f) => f.name)
      this.order = { names, withAccess: names.includes(accessColumn) }
      return names
    })
  }

  private locked<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> {
    return this.writeLock.withPermits(1)(effect)
  }

  /** One batch: merge-insert, then the duplicate check and repair. */
  private upsertBatch(batch: ReadonlyArray<Chunk>) {
    const t = this.t
    return Effect.gen(this, function*() {
      yield* t.evolveAccess
      const rows = yield* batchRows(t, batch)
      const data = toArrow(t.spec, rows, yield* this.columnOrder())
      const merge = () =>
        t.table.mergeInsert("id")
          // An unchanged chunk is left alone: no rewrite, no index churn.
          .whenMatchedUpdateAll({ where: "target.content_hash <> source.content_hash" })
          .whenNotMatchedInsertAll()
          .execute(data)
      const idsSql = Filters.toSql({ _tag: "In", field: "__id", values: rows.map((r) => r["id"] as string) })
      // A batch of ids the table does not hold yet (a first ingest, new documents) is appended:
      // a merge-insert joins the batch against the `id` of every row, a cost that grows with the
      // table (measured, 512 new rows: 62-159 ms CPU at 54,116 rows and 132-271 ms at 324,696,
      // an append 31-72 and 46-63 ms; benchmarks/README.md, "Scale").
      const held = yield* t.attempt("countRows", () => t.table.countRows(idsSql))
      const result: { readonly numInsertedRows: number; readonly numUpdatedRows: number } = held === 0
        ? yield* this.locked(t.write("add", () => t.table.add(data).then(() => ({ numInsertedRows: rows.length, numUpdatedRows: 0 }))))
        : yield* this.locked(t.write("mergeInsert", merge))
      // Two writers (other processes, other connections) inserting the same new id at once
      // can both succeed (both appends, or both merge-inserts): check the batch's ids and repair
      // duplicates (delete, merge again).
      for (let round = 0; round < 5; round++) {
        const present = yield* t.attempt("countRows", () => t.table.countRows(idsSql))
        if (present <= rows.length) break
        yield* this.locked(
          t.write("repairDuplicates", () => t.table.delete(idsSql)).pipe(Effect.zipRight(t.write("mergeInsert", merge)))
        )
      }
      return result
    })
  }

  /** Upserts chunks in batches of `batchSize`; index upkeep once at the end. */
  upsert(chunks: ReadonlyArray<Chunk>): Effect.Effect<UpsertResult, VectorStoreError> {
    const t = this.t
    return Effect.gen(this, function*() {
      let inserted = 0
      let updated = 0
      for (let i = 0; i < chunks.length; i += t.settings.batchSize) {
        const result = yield* this.upsertBatch(chunks.slice(i, i + t.settings.batchSize))
        inserted += result.numInsertedRows
        updated += result.numUpdatedRows
      }
      yield* this.upkeep.maintain(inserted + updated)
      return { inserted, updated } satisfies UpsertResult
    }).pipe(Effect.withSpan("LanceDbStore.upsert", { attributes: { collection: t.spec.name, chunks: chunks.length } }))
  }

  private deleteBy(op: string, predicate: string): Effect.Effect<number, VectorStoreError> {
    return this.t.write(op, () => this.t.table.delete(predicate)).pipe(
      Effect.map((r) => r.numDeletedRows),
      Effect.tap(() => this.upkeep.maintain(0))
    )
  }

  /** Deletes the chunks of the documents, 256 documents per delete. */
  deleteDocuments(documentIds: ReadonlyArray<string>): Effect.Effect<number, VectorStoreError> {
    return Effect.gen(this, function*() {
      let total = 0
      for (let i = 0; i < documentIds.length; i += 256) {
        const ids = documentIds.slice(i, i + 256)
        if (ids.length === 0) continue
        total += yield* this.deleteBy("deleteDocuments", Filters.toSql({ _tag: "In", field: "documentId", values: ids }))
      }
      return total
    })
  }

  /** Deletes the chunks a filter matches. */
  deleteWhere(filter: Filter): Effect.Effect<number, VectorStoreError> {
    return this.t.where(filter).pipe(Effect.flatMap((sql) => this.deleteBy("deleteWhere", sql!)))
  }
}
