/**
 * Collection-wide BM25 statistics of one table for the candidate scorer (`candidates.ts`): the
 * rows, the mean length of `content` and `title`, and each term's document frequency in both.
 *
 * They are estimated from a sample: all rows of a table of at most `sampleRows` rows, else
 * `sampleRows` rows spread evenly over the table, their frequencies scaled to its size. A term
 * the sample misses estimates at 0 (the scorer never takes a frequency below the term's count
 * among its candidates). A sample is good while the table's row count stays within a tenth of
 * the count it was drawn at (the row count is read again whenever the table's version changes;
 * the version is asked at most once a second, and at once after this handle's own writes),
 * and while the rows written since it was drawn (or read) stay within a tenth of that count too:
 * documents replaced by as many others leave the count as it was and change the words. The rows
 * written are those each `optimize()` of the handle took into the indexes ({@link TermStats.noteWritten},
 * called through `upkeep.ts`'s `onIndexed`: the handle's own writes and the backlog earlier processes left); rows
 * written by other processes since are not seen until an `optimize()` of this handle.
 *
 * The sample's counts are persisted in a side table, `<collection>.terms` (one row per term:
 * its sampled frequency in `content` and in `title`, plus three header rows of the totals; a
 * collection name has no `.`, so it never names a collection): a handle with no good sample in
 * memory reads the header and, per query, only the terms it has not looked up yet
 * (`term IN (…)`), until `lookupsBeforeFullRead` lookups, when it reads the whole table once.
 * The first handle that finds no good sample there (or an explicit `optimize()`, the end of an
 * ingest) draws one and writes the side table (a failed write, e.g. a read-only store, only
 * costs the next process a new sample).
 */
import type * as lancedb from "@lancedb/lancedb"
import * as Effect from "effect/Effect"
import { terms } from "../../TextAnalysis.js"
import type { StoreError } from "../../VectorStore.js"
import type { LanceTable } from "./table.js"

/** A field's collection-wide statistics: rows holding it, their mean length, a term's document frequency. */
export interface FieldStats {
  readonly rows: number
  readonly avgLength: number
  readonly df: (term: string) => number
}

/** The statistics of both full-text fields. */
export interface IndexStats {
  readonly content: FieldStats
  readonly title: FieldStats
}

/** Rows read for the statistics (all rows of a table up to this size). */
export const defaultSampleRows = 5_000

/** Term counts of one field over the sampled rows. */
interface FieldCounts {
  readonly df: Map<string, number>
  /** Sampled rows holding the field, and their summed length in terms. */
  present: number
  length: number
}

/** The sample's counts and the table size it was drawn at. */
export interface Sample {
  readonly content: FieldCounts
  readonly title: FieldCounts
  /** Rows read. */
  readonly rows: number
  /** The table's rows when they were read. */
  readonly tableRows: number
}

const emptyCounts = (): FieldCounts => ({ df: new Map(), present: 0, length: 0 })

const count = (field: FieldCounts, text: string) => {
  const ts = terms(text)
  field.present++
  field.length += ts.length
  for (const t of new Set(ts)) field.df.set(t, (field.df.get(t) ?? 0) + 1)
}

/** Counts sampled rows (their `content` and `title` columns). */
export const countSample = (rows: ReadonlyArray<Record<string, unknown>>, tableRows: number): Sample => {
  const content = emptyCounts()
  const title = emptyCounts()
  for (const r of rows) {
    count(content, String(r["content"] ?? ""))
    if (typeof r["title"] === "string") count(title, r["title"])
  }
  return { content, title, rows: rows.length, tableRows }
}

/** The collection-wide statistics a sample gives for a table of `tableRows` rows. */
export const indexStats = (sample: Sample, tableRows: number): IndexStats => {
  const scale = tableRows / Math.max(1, sample.rows)
  const field = (f: FieldCounts): FieldStats => ({
    rows: f.present * scale,
    avgLength: f.length / Math.max(1, f.present),
    df: (term: string) => (f.df.get(term) ?? 0) * scale
  })
  return { content: field(sample.content), title: field(sample.title) }
}

/** Evenly spread offsets of `n` rows out of `total`. */
export const spread = (n: number, total: number): Array<number> => {
  const out: Array<number> = []
  for (let i = 0; i < n; i++) out.push(Math.floor((i * total) / n))
  return out
}

/** The side table of a collection's sampled statistics (see the module doc). */
export const statsTableName = (collection: string): string => `${collection}.terms`

/** Header rows of the side table (a term never holds a space): `[content, title]` values. */
const header = { rows: " rows", present: " present", length: " length" } as const

/** Where a handle keeps the side table: its connection's open and write (undefined: none). */
export interface StatsTableAccess {
  readonly open: () => Promise<lancedb.Table | undefined>
  readonly write: (rows: Array<Record<string, unknown>>) => Promise<void>
}

/** The side table of `collection` through `connection`. */
export const statsTable = (connection: lancedb.Connection, collection: string): StatsTableAccess => {
  const name = statsTableName(collection)
  return {
    open: async () => ((await connection.tableNames()).includes(name) ? connection.openTable(name) : undefined),
    write: async (rows) => {
      // "create" when missing: LanceDB's overwrite of a missing table logs a warning
      const exists = (await connection.tableNames()).includes(name)
      await connection.createTable(name, rows, { mode: exists ? "overwrite" : "create" })
    }
  }
}

/** A sample as the side table's rows. */
export const sampleRows = (sample: Sample): Array<Record<string, unknown>> => {
  const out: Array<Record<string, unknown>> = [
    { term: header.rows, content: sample.rows, title: sample.tableRows },
    { term: header.present, content: sample.content.present, title: sample.title.present },
    { term: header.length, content: sample.content.length, title: sample.title.length }
  ]
  const terms = new Set([...sample.content.df.keys(), ...sample.title.df.keys()])
  for (const term of terms) out.push({ term, content: sample.content.df.get(term) ?? 0, title: sample.title.df.get(term) ?? 0 })
  return out
}

const sqlList = (terms: Iterable<string>): string => [...terms].map((t) => `'${t.replace(/'/g, "''")}'`).join(", ")

/**
 * The statistics a scorer needs: both fields' rows and mean length, and the document
 * frequencies of the terms it asks for (looked up in the side table when they come from it).
 */
export interface StatsView {
  readonly content: { readonly rows: number; readonly avgLength: number }
  readonly title: { readonly rows: number; readonly avgLength: number }
  readonly frequencies: (terms: ReadonlyArray<string>) => Effect.Effect<(field: "content" | "title", term: string) => number, StoreError>
}

/** The view of a sample held in memory. */
const memoryView = (sample: Sample, tableRows: number): StatsView => {
  const stats = indexStats(sample, tableRows)
  const df = (field: "content" | "title", term: string) => stats[field].df(term)
  return { content: stats.content, title: stats.title, frequencies: () => Effect.succeed(df) }
}

/** A sample in the side table: its totals, and the frequencies looked up so far. */
interface Persisted {
  readonly table: lancedb.Table
  readonly sampled: number
  readonly drawnAt: number
  readonly present: readonly [number, number]
  readonly length: readonly [number, number]
  readonly known: Map<string, readonly [number, number]>
  /** Lookups made so far; `complete`: every term read (`known` is the whole table). */
  lookups: number
  complete: boolean
}

/**
 * Term lookups a handle makes in the side table before it reads the whole table instead: a
 * one-shot query reads only its terms, a long-lived handle soon holds them all.
 */
export const lookupsBeforeFullRead = 8

/**
 * How long a handle takes the table's row count as current before it asks the table's version
 * again (a LanceDB round trip per query otherwise); its own writes make it ask at once. The count
 * only picks the search path and scales the statistics: the candidates themselves come from
 * LanceDB's index, current on every read. The in-memory engine's `aboveBoundRecheckMs` likewise.
 */
export const versionRecheckMs = 1000

/** The table's row count per version and the statistics of one table handle (see the module doc). */
export class TermStats {
  private rowsAt: { readonly version: number; readonly rows: number } | undefined
  /** When the version was last asked (`performance.now()`). */
  private checkedAt = Number.NEGATIVE_INFINITY
  private sample: Sample | undefined
  private persisted: Persisted | undefined
  /** Rows written to the table as {@link noteWritten} counted them. */
  private written = 0
  /** The rows written ({@link noteWritten}) when the sample was drawn, and when the side table's was read. */
  private sampleMark = 0
  private persistedMark = 0
  private readonly lock = Effect.unsafeMakeSemaphore(1)

  constructor(
    private readonly t: LanceTable,
    private readonly side: StatsTableAccess | undefined,
    private readonly sampleSize = defaultSampleRows
  ) {}

  /**
   * The table's rows (its version asked first, at most once every `versionRecheckMs` unless this
   * handle wrote since; counted again when the version changed).
   */
  readonly rows: Effect.Effect<number, StoreError> = Effect.suspend(() => {
    const known = this.rowsAt
    if (known !== undefined && performance.now() - this.checkedAt < versionRecheckMs) return Effect.succeed(known.rows)
    return Effect.flatMap(this.t.attempt("version", () => this.t.table.version()), (version) => {
      this.checkedAt = performance.now()
      if (this.rowsAt?.version === version) return Effect.succeed(this.rowsAt.rows)
      return Effect.map(this.t.attempt("countRows", () => this.t.table.countRows()), (rows) => {
        this.rowsAt = { version, rows }
        return rows
      })
    })
  })

  /** Counts `rows` rows written to the table (at each `optimize()` of the handle: the rows it indexed). */
  noteWritten(rows: number): void {
    this.written += rows
  }

  /** This handle wrote: the next {@link rows} asks the table's version again. */
  wrote(): void {
    this.checkedAt = Number.NEGATIVE_INFINITY
  }

  private readSample(tableRows: number): Effect.Effect<Sample, StoreError> {
    const { sampleSize, t } = this
    return t.attempt("sampleRows", async () => {
      const columns = ["content", "title"]
      const rows = tableRows <= sampleSize
        ? await t.table.query().select(columns).toArray()
        : await t.table.takeOffsets(spread(sampleSize, tableRows)).select(columns).toArray()
      return countSample(rows as Array<Record<string, unknown>>, tableRows)
    })
  }

  /** The side table's sample, when there is one (its header read). */
  private readPersisted(): Effect.Effect<Persisted | undefined, StoreError> {
    const side = this.side
    if (side === undefined) return Effect.succeed(undefined)
    return this.t.attempt("readStats", async () => {
      const table = await side.open()
      if (table === undefined) return undefined
      const rows = await table.query().where(`term IN (${sqlList(Object.values(header))})`).select(["term", "content", "title"]).toArray()
      const at = new Map(rows.map((r) => [String(r["term"]), [Number(r["content"]), Number(r["title"])] as const]))
      const [sampled, drawnAt] = at.get(header.rows) ?? []
      const present = at.get(header.present)
      const length = at.get(header.length)
      if (sampled === undefined || drawnAt === undefined || present === undefined || length === undefined) return undefined
      return { table, sampled, drawnAt, present, length, known: new Map(), lookups: 0, complete: false }
    })
  }

  /** The view of the side table's sample: frequencies looked up per term, once per handle. */
  private persistedView(p: Persisted, tableRows: number): StatsView {
    const scale = tableRows / Math.max(1, p.sampled)
    const field = (i: 0 | 1) => ({ rows: p.present[i] * scale, avgLength: p.length[i] / Math.max(1, p.present[i]) })
    const df = (field: "content" | "title", term: string) => (p.known.get(term)?.[field === "content" ? 0 : 1] ?? 0) * scale
    return {
      content: field(0),
      title: field(1),
      frequencies: (terms) => {
        const missing = p.complete ? [] : terms.filter((term) => !p.known.has(term))
        if (missing.length === 0) return Effect.succeed(df)
        const all = ++p.lookups > lookupsBeforeFullRead
        return this.t.attempt("readStats", async () => {
          const q = p.table.query().select(["term", "content", "title"])
          const rows = await (all ? q : q.where(`term IN (${sqlList(new Set(missing))})`)).toArray()
          for (const term of missing) p.known.set(term, [0, 0])
          for (const r of rows) p.known.set(String(r["term"]), [Number(r["content"]), Number(r["title"])])
          if (all) p.complete = true
          return df
        })
      }
    }
  }

  /** The statistics for a table of `tableRows` rows (see the module doc). */
  current(tableRows: number): Effect.Effect<StatsView, StoreError> {
    // within a tenth of the rows it was drawn at, and of as many rows written since
    const good = (drawnAt: number | undefined, mark: number) =>
      drawnAt !== undefined && Math.abs(tableRows - drawnAt) <= drawnAt / 10 && this.written - mark <= drawnAt / 10
    const known = (): StatsView | undefined =>
      good(this.sample?.tableRows, this.sampleMark) ? memoryView(this.sample!, tableRows)
      : good(this.persisted?.drawnAt, this.persistedMark) ? this.persistedView(this.persisted!, tableRows)
      : undefined
    const now = known()
    if (now !== undefined) return Effect.succeed(now)
    return this.lock.withPermits(1)(Effect.gen(this, function*() {
      const again = known()
      if (again !== undefined) return again
      if (this.persisted === undefined) {
        // a side table that cannot be read (missing, unreadable, its connection closed) is none
        // rows written count from this handle's own last sample when it has one: the side table
        // may still hold that sample (written by this handle), which those rows made stale
        this.persistedMark = this.sample !== undefined ? this.sampleMark : this.written
        this.persisted = yield* Effect.orElseSucceed(this.readPersisted(), () => undefined)
        if (good(this.persisted?.drawnAt, this.persistedMark)) return this.persistedView(this.persisted!, tableRows)
      }
      this.sampleMark = this.written
      const sample = yield* this.readSample(tableRows)
      this.sample = sample
      if (this.side !== undefined) {
        // best effort: a store this process cannot write still answers, from its own sample
        yield* Effect.ignore(this.t.attempt("writeStats", () => this.side!.write(sampleRows(sample))))
        this.persisted = undefined
      }
      return memoryView(sample, tableRows)
    }))
  }
}
