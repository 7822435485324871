/**
 * The in-memory full-text engine of one table handle: for a table of at most `memoryIndexRows`
 * rows, its rows and a `FieldIndex` (`../bm25.ts`) held for the table version they were read
 * at. Every search asks the table for its version first (a fraction of a millisecond) and reads
 * the rows again when a write, of this process or another, has changed it; a table last seen
 * above the bound is asked again at most once every `aboveBoundRecheckMs` (LanceDB's index
 * answers it, current on every read).
 */
import * as Effect from "effect/Effect"
import { FieldIndex, weightedTerms } from "../bm25.js"
import * as Filters from "../filter.js"
import {
  checkAccess,
  documentIdField,
  type Hit,
  InvalidInput,
  readable,
  type Scalar,
  type ScopeOptions,
  type StoreError,
  type TextQuery,
  type TextSearchOptions
} from "../../VectorStore.js"
import { accessColumn, contentOf, decodeAccess, hitColumns, toHit } from "./rows.js"
import type { LanceTable } from "./table.js"

/**
 * How long a table seen above the size bound is taken to stay above it before its version is
 * asked again (a table that shrinks below the bound is searched in memory from then on).
 */
export const aboveBoundRecheckMs = 1000

/** A collection's rows and their full-text index, held in memory for one table version. */
interface MemoryText {
  readonly rows: ReadonlyArray<Record<string, unknown>>
  readonly index: FieldIndex
  /** Chunk id -> row. */
  readonly rowOf: ReadonlyMap<string, number>
  /** Parsed `metadata` per row, filled on first use by a filter. */
  readonly metadata: Array<Record<string, Scalar> | undefined>
  /** Whether the rows were read with their access lists (the table had the column). */
  readonly withAccess: boolean
}

const visible = (memory: MemoryText, row: number, scope: ScopeOptions["scope"]): boolean =>
  scope === undefined || scope._tag !== "Entries" ||
  (memory.withAccess && readable(scope, decodeAccess(memory.rows[row]![accessColumn])))

/** The best hits of the in-memory index under the options' filter and scope. */
const search = (memory: MemoryText, query: TextQuery, options: TextSearchOptions): ReadonlyArray<Hit> => {
  const q = weightedTerms(query)
  if (q.size === 0) return []
  const { index, metadata, rows } = memory
  const filter = options.filter
  const scoped = options.scope !== undefined && options.scope._tag === "Entries"
  const matchesFilter = filter === undefined ? undefined : (row: number) => {
    const r = rows[row]!
    const get = (field: string): Scalar | undefined => {
      if (field === documentIdField) return String(r["document_id"])
      if (field === "__id") return String(r["id"])
      let m = metadata[row]
      if (m === undefined) m = metadata[row] = toHit(r, 0).metadata
      return m[field]
    }
    return Filters.matches(filter, get)
  }
  // the scope first, as the SQL predicate does: rows read without the column have no list
  const accept = !scoped
    ? matchesFilter
    : (row: number) => visible(memory, row, options.scope) && (matchesFilter === undefined || matchesFilter(row))
  const idOf = (row: number) => String(rows[row]!["id"])
  const byId = (a: number, b: number) => {
    const x = idOf(a)
    const y = idOf(b)
    return x < y ? -1 : x > y ? 1 : 0
  }
  return index.search(q, options.titleBoost ?? 0, Math.max(1, options.limit ?? 10), accept, byId)
    .map((h) => toHit(rows[h.row]!, h.score))
}

/** The in-memory engine of one table handle: the snapshot of the last version read. */
export class MemoryEngine {
  /** The rows and index of the table version they were read at; `memory` undefined above the size bound. */
  private snapshot: { readonly version: number; readonly memory: MemoryText | undefined } | undefined
  /** When the table was last seen above the size bound (`performance.now()`). */
  private aboveAt = Number.NEGATIVE_INFINITY
  private readonly snapshotLock = Effect.unsafeMakeSemaphore(1)

  constructor(private readonly t: LanceTable) {}

  private readRows(): Effect.Effect<MemoryText, StoreError> {
    const t = this.t
    return Effect.flatMap(t.accessColumnNow, (withAccess) => t.attempt("readRows", async (): Promise<MemoryText> => {
      const columns = withAccess ? [...hitColumns, accessColumn] : [...hitColumns]
      const rows = (await t.table.query().select(columns).toArray()) as Array<Record<string, unknown>>
      const index = FieldIndex.build(rows.map((r) => {
        const title = typeof r["title"] === "string" ? r["title"] : undefined
        // the `content` column's value (see toRow), not read from the table a second time
        return { title, content: contentOf(title, String(r["text"] ?? "")) }
      }))
      const rowOf = new Map(rows.map((r, i) => [String(r["id"]), i]))
      return { rows, index, rowOf, metadata: new Array(rows.length), withAccess }
    }))
  }

  /** The engine for the table's current version, read when the table changed; undefined above the size bound. */
  private current(): Effect.Effect<MemoryText | undefined, StoreError> {
    const t = this.t
    return Effect.gen(this, function*() {
      if (t.settings.memoryIndexRows === 0) return undefined
      // Above the bound LanceDB's index answers, current on every read: the version (a round trip
      // into LanceDB per search) is asked again only after `aboveBoundRecheckMs`.
      if (performance.now() - this.aboveAt < aboveBoundRecheckMs) return undefined
      // the version first: rows read after it are at least that new
      const version = yield* t.attempt("version", () => t.table.version())
      if (this.snapshot?.version === version) {
        if (this.snapshot.memory === undefined) this.aboveAt = performance.now()
        return this.snapshot.memory
      }
      return yield* this.snapshotLock.withPermits(1)(Effect.gen(this, function*() {
        if (this.snapshot?.version === version) return this.snapshot.memory
        const rows = yield* t.attempt("countRows", () => t.table.countRows())
        const memory = rows > t.settings.memoryIndexRows ? undefined : yield* this.readRows()
        this.snapshot = { version, memory }
        this.aboveAt = memory === undefined ? performance.now() : Number.NEGATIVE_INFINITY
        return memory
      }))
    })
  }

  /** The search of the in-memory engine; undefined when the table is above the size bound (or the engine is off). */
  search(query: TextQuery, options: TextSearchOptions): Effect.Effect<ReadonlyArray<Hit> | undefined, StoreError> {
    return Effect.map(this.current(), (memory) => (memory === undefined ? undefined : search(memory, query, options)))
  }

  /** The analysed terms of the hits' content, from the last version read (the ids come from a search that has just checked it). */
  termCounts(ids: ReadonlyArray<string>, options: ScopeOptions = {}) {
    return Effect.gen(this, function*() {
      const scope = options.scope
      if (scope !== undefined && scope._tag === "Entries") {
        const problem = checkAccess(scope.entries)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
      }
      const memory = this.snapshot?.memory
      return ids.map((id) => {
        const row = memory?.rowOf.get(id)
        if (row === undefined || !visible(memory!, row, scope)) return undefined
        return memory!.index.contentTerms(row)
      })
    })
  }
}
