/**
 * Index upkeep of one table handle: the full-text indexes (unless the spec says
 * `fullText: false`), and past their thresholds the `id` BTREE and the vector index, created
 * when missing (at a handle's first write, and at every `optimize()`), and
 * `optimize()` run after a write once this handle has written `reindexAfter` rows or made more
 * than `maxFragments` writes since the indexes were last brought up to date. The counts are this handle's, kept in memory: a write costs no index
 * statistics round trip.
 */
import * as lancedb from "@lancedb/lancedb"
import * as Effect from "effect/Effect"
import type { StoreError, VectorStoreError } from "../../VectorStore.js"
import type { LanceTable } from "./table.js"

/** The counts of one handle's index upkeep. */
export class IndexUpkeep {
  /** Whether the indexes are known to exist. */
  private indexed = false
  /** Rows written since the indexes were last brought up to date. */
  private unindexedRows = 0
  /** Writes (fragments) since the last `optimize()`. */
  private writesSinceOptimize = 0

  constructor(private readonly t: LanceTable) {}

  private indexedColumns(): Effect.Effect<Set<string>, StoreError> {
    return this.t.attempt("listIndices", () => this.t.table.listIndices()).pipe(
      Effect.map((ix) => new Set(ix.flatMap((i) => i.columns)))
    )
  }

  /**
   * Creates the missing indexes: the FTS indexes unless the spec says `fullText: false`; past
   * `idIndexThreshold` rows the `id` BTREE (the duplicate check and the merge-insert's join read
   * it instead of scanning the table); past `vectorIndexThreshold` rows the vector index. True
   * when it created an index that `maintain` counts (the FTS indexes, or the `id` index of a
   * collection without them): a new index covers every row.
   */
  ensureIndexes(): Effect.Effect<boolean, VectorStoreError> {
    const { table, spec, settings } = this.t
    return Effect.gen(this, function*() {
      const have = yield* this.indexedColumns()
      const rows = yield* Effect.cached(this.t.attempt("countRows", () => table.countRows()))
      let created = false
      for (const column of spec.fullText === false ? [] : ["content", "title"]) {
        if (!have.has(column)) {
          yield* this.t.write(`createIndex(${column})`, () =>
            table.createIndex(column, { config: lancedb.Index.fts({ withPosition: false }), replace: true }))
          created = true
        }
      }
      if (!have.has("id") && (yield* rows) >= settings.idIndexThreshold) {
        yield* this.t.write("createIndex(id)", () => table.createIndex("id", { config: lancedb.Index.btree(), replace: true }))
        created ||= spec.fullText === false
      }
      if (spec.embedding !== undefined && !have.has("vector") && (yield* rows) >= settings.vectorIndexThreshold) {
        yield* this.t.write("createIndex(vector)", () =>
          table.createIndex("vector", { config: lancedb.Index.hnswSq({ distanceType: "cosine" }), replace: true }))
      }
      return created
    })
  }

  /** Creates missing indexes, brings every index up to date and compacts the table. */
  optimize(): Effect.Effect<void, VectorStoreError> {
    return Effect.gen(this, function*() {
      yield* this.ensureIndexes()
      yield* this.t.write("optimize", () => this.t.table.optimize({ cleanupOlderThan: new Date(Date.now() - 60_000) }))
      this.indexed = true
      this.unindexedRows = 0
      this.writesSinceOptimize = 0
    }).pipe(Effect.withSpan("LanceDbStore.optimize", { attributes: { collection: this.t.spec.name } }))
  }

  /** After a write of `rows` rows: create missing indexes once, optimize when rows or fragments pile up. */
  maintain(rows: number): Effect.Effect<void, VectorStoreError> {
    return Effect.gen(this, function*() {
      this.writesSinceOptimize++
      this.unindexedRows += rows
      if (!this.indexed) {
        if (yield* this.ensureIndexes()) this.unindexedRows = 0 // a new index covers every row
        this.indexed = true
      }
      if (this.unindexedRows >= this.t.settings.reindexAfter || this.writesSinceOptimize > this.t.settings.maxFragments) {
        yield* this.optimize()
      }
    })
  }
}
