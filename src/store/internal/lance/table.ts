/**
 * One LanceDB table as the adapter's modules see it: the table, its collection's spec and the
 * adapter's settings, the error mapping and retries of its calls, whether it has the `access`
 * column (the one piece of state shared by reads and writes), and the predicate of a filter
 * and a read scope.
 */
import type * as lancedb from "@lancedb/lancedb"
import * as Effect from "effect/Effect"
import type * as Schedule from "effect/Schedule"
import * as Filters from "../filter.js"
import {
  checkAccess,
  type CollectionSpec,
  type Filter,
  InvalidInput,
  type ReadScope,
  StoreError,
  type VectorStoreError
} from "../../VectorStore.js"
import { accessColumn, hasAccessColumn, scopeSql } from "./rows.js"

/** The adapter's settings, resolved from its options. */
export interface Settings {
  readonly batchSize: number
  readonly vectorIndexThreshold: number
  readonly idIndexThreshold: number
  readonly reindexAfter: number
  readonly maxFragments: number
  readonly reindexFraction: number
  readonly memoryIndexRows: number
  readonly textCandidateRows: number
  readonly retry: Schedule.Schedule<unknown, VectorStoreError>
}

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** A LanceDB failure of `op` as a `StoreError`. */
export const storeError = (op: string) => (cause: unknown) =>
  new StoreError({ op, message: `${op}: ${messageOf(cause)}`, cause })

/** Whether a LanceDB error is a commit conflict worth another attempt. */
export const isConflict = (e: VectorStoreError): boolean =>
  e._tag === "StoreError" &&
  /conflict|retryable|concurrent|too many|was modified|preempted/i.test(e.message)

/** A collection's table and what every operation on it shares. */
export class LanceTable {
  /**
   * Whether the table has the `access` column (a table created before access lists has not,
   * until a write adds it; another process may add it: a restricted read checks again).
   */
  private hasAccess: boolean

  constructor(
    readonly table: lancedb.Table,
    readonly spec: CollectionSpec,
    readonly settings: Settings,
    accessKnown: boolean
  ) {
    this.hasAccess = accessKnown
  }

  /** `f`, its failure a `StoreError` of `<collection>.<op>`. */
  attempt<A>(op: string, f: () => Promise<A>): Effect.Effect<A, StoreError> {
    return Effect.tryPromise({ try: f, catch: storeError(`${this.spec.name}.${op}`) })
  }

  /** A write: {@link attempt}, retried on commit conflicts. */
  write<A>(op: string, f: () => Promise<A>): Effect.Effect<A, VectorStoreError> {
    return this.attempt(op, f).pipe(Effect.retry(this.settings.retry))
  }

  /** Whether the table had the `access` column when last seen. */
  get withAccess(): boolean {
    return this.hasAccess
  }

  /** Reads the schema: whether the table has the `access` column now. */
  readonly accessColumnNow: Effect.Effect<boolean, StoreError> = Effect.suspend(() =>
    this.attempt("schema", () => this.table.schema()).pipe(
      Effect.map(hasAccessColumn),
      Effect.tap((has) => Effect.sync(() => (this.hasAccess = has)))
    )
  )

  /** Adds the `access` column (all null) to a table created before access lists. */
  readonly evolveAccess: Effect.Effect<void, VectorStoreError> = Effect.suspend(() =>
    this.hasAccess ? Effect.void : Effect.gen(this, function*() {
      if (yield* this.accessColumnNow) return
      yield* this.write("addColumns(access)", async () => {
        const fields = (await this.table.schema()).fields
        if (!fields.some((f) => f.name === accessColumn)) {
          await this.table.addColumns([{ name: accessColumn, valueSql: "CAST(NULL AS STRING)" }])
        }
      })
      this.hasAccess = true
    })
  )

  /** The filter and the scope as one predicate (undefined: every row). */
  where(filter: Filter | undefined, scope?: ReadScope | undefined): Effect.Effect<string | undefined, InvalidInput | StoreError> {
    return Effect.gen(this, function*() {
      const parts: Array<string> = []
      if (filter !== undefined) {
        const problem = Filters.validate(this.spec, filter)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        parts.push(Filters.toSql(filter))
      }
      if (scope !== undefined && scope._tag === "Entries") {
        const problem = checkAccess(scope.entries)
        if (problem !== undefined) return yield* new InvalidInput({ message: problem })
        // no access column: no chunk has a list, so a restricted read matches nothing
        parts.push(this.hasAccess || (yield* this.accessColumnNow) ? scopeSql(scope.entries) : "(1 = 0)")
      }
      return parts.length === 0 ? undefined : parts.length === 1 ? parts[0] : `(${parts.join(" AND ")})`
    })
  }
}
