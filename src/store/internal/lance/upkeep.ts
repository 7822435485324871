/**
 * Index upkeep of one table handle: the full-text indexes (unless the spec says
 * `fullText: false`), and past their thresholds the `id` and `document_id` BTREEs and the
 * vector index, created when missing (at a handle's first write, and at every `optimize()`),
 * and `optimize()` run after a write once `reindexAfter` rows are unindexed or more than
 * `maxFragments` writes (small fragments) were made since the indexes were last brought up to
 * date. A handle's first write reads that backlog from the table (index and fragment
 * statistics: whatever earlier processes left), later writes add to it in memory: a write
 * costs no statistics round trip after the first.
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
  /** Rows the indexes covered after the last `optimize()` (or, before one, as first read). */
  private indexedRows = 0

  /**
   * @param onIndexed told the rows each `optimize()` took into the indexes (the collection's
   *   term statistics count them, `stats.ts`)
   */
  constructor(private readonly t: LanceTable, private readonly onIndexed: (rows: number) => void = () => {}) {}

  private indexedColumns(): Effect.Effect<Set<string>, StoreError> {
    return this.t.attempt("listIndices", () => this.t.table.listIndices()).pipe(
      Effect.map((ix) => new Set(ix.flatMap((i) => i.columns)))
    )
  }

  /**
   * Creates the missing indexes: the FTS indexes unless the spec says `fullText: false`; past
   * `idIndexThreshold` rows the `id` BTREE (the duplicate check and the merge-insert's join read
   * it instead of scanning the table) and the `document_id` BTREE (the older-generation delete
   * of a re-ingested document, deletes by document and counts of one document read it); past
   * `vectorIndexThreshold` rows the vector index. True
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
      if (!have.has("document_id") && (yield* rows) >= settings.idIndexThreshold) {
        yield* this.t.write("createIndex(document_id)", () =>
          table.createIndex("document_id", { config: lancedb.Index.btree(), replace: true }))
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
      // the rows now covered; a failed count keeps the estimate (the optimize itself is done)
      this.indexedRows = yield* this.t.attempt("countRows", () => this.t.table.countRows()).pipe(
        Effect.orElseSucceed(() => this.indexedRows + this.unindexedRows)
      )
      this.indexed = true
      this.onIndexed(this.unindexedRows)
      this.unindexedRows = 0
      this.writesSinceOptimize = 0
    }).pipe(Effect.withSpan("LanceDbStore.optimize", { attributes: { collection: this.t.spec.name } }))
  }

  /**
   * What the table holds that its indexes do not cover, as stored (other handles' and earlier
   * processes' writes count too): the rows of the full-text indexes' (or, without them, the `id`
   * index's) backlog, and the table's small fragments (those compaction would merge). Read at a handle's first write, so that a run
   * of small writes by short-lived processes (one changed file per `effect-rag ingest`) reaches
   * `reindexAfter` / `maxFragments` as one long-lived handle would.
   */
  private backlog(): Effect.Effect<
    { readonly rows: number; readonly fragments: number; readonly tableRows: number },
    StoreError
  > {
    const { table, spec } = this.t
    return Effect.gen(this, function*() {
      const names = (yield* this.t.attempt("listIndices", () => table.listIndices()))
        .filter((i) => (spec.fullText === false ? i.columns.includes("id") : i.indexType === "FTS"))
        .map((i) => i.name)
      let rows = 0
      for (const name of names) {
        const stats = yield* this.t.attempt("indexStats", () => table.indexStats(name))
        rows = Math.max(rows, stats?.numUnindexedRows ?? 0)
      }
      const stats = yield* this.t.attempt("stats", () => table.stats())
      return { rows, fragments: stats.fragmentStats.numSmallFragments, tableRows: stats.numRows }
    })
  }

  /**
   * After a write of `rows` rows: at the handle's first write, create missing indexes and take
   * the stored backlog (see {@link backlog}); optimize when rows or fragments pile up.
   */
  maintain(rows: number): Effect.Effect<void, VectorStoreError> {
    return Effect.gen(this, function*() {
      this.writesSinceOptimize++
      this.unindexedRows += rows
      if (!this.indexed) {
        if (yield* this.ensureIndexes()) {
          // a new index covers every row (at a handle's first write: this handle's rows)
          this.indexedRows += this.unindexedRows
          this.unindexedRows = 0
        } else {
          // the stored backlog already holds this write's rows and fragment; the write is
          // committed, so a failed statistics read only leaves this handle's own counts
          const stored = yield* this.backlog().pipe(
            Effect.orElseSucceed(() => ({ rows: 0, fragments: 0, tableRows: this.unindexedRows }))
          )
          this.unindexedRows = Math.max(this.unindexedRows, stored.rows)
          this.writesSinceOptimize = Math.max(this.writesSinceOptimize, stored.fragments)
          this.indexedRows = Math.max(0, stored.tableRows - this.unindexedRows)
        }
        this.indexed = true
      }
      const { reindexAfter, maxFragments } = this.t.settings
      const scale = this.scale()
      if (this.unindexedRows >= reindexAfter * scale || this.writesSinceOptimize > maxFragments * scale) {
        yield* this.optimize()
      }
    })
  }

  /**
   * The factor (≥ 1) of both thresholds: 1 while `reindexFraction` of the indexed rows is at
   * most `reindexAfter`, then in proportion to the indexed rows (with the defaults, from 80,000
   * rows on the backlog may reach a quarter of the table, and the writes as many times 64).
   */
  scale(): number {
    const { reindexAfter, reindexFraction } = this.t.settings
    return Math.max(1, (this.indexedRows * reindexFraction) / reindexAfter)
  }
}
