/**
 * The connection side of the PostgreSQL adapter: the part of node-postgres (`pg`) it uses (its
 * own types stay out of the public API), loading `pg` as an optional peer dependency, the pool
 * (opened and closed with a scope) and transactions on one pooled connection.
 */
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import * as Optional from "../../../internal/optional.js"
import type * as RagError from "../../../RagError.js"
import { StoreError } from "../../VectorStore.js"

/** The rows of a statement. */
export interface QueryResult {
  readonly rows: Array<Record<string, unknown>>
  readonly rowCount: number | null
}

/** A pool or one of its connections. */
export interface Queryable {
  readonly query: (text: string, values?: ReadonlyArray<unknown>) => Promise<QueryResult>
}

interface PoolClient extends Queryable {
  readonly release: (error?: Error | boolean) => void
}

/** `pg`'s `Pool`, as far as the adapter uses it. */
export interface Pool extends Queryable {
  readonly connect: () => Promise<PoolClient>
  readonly end: () => Promise<void>
  readonly on: (event: "error", listener: (error: Error) => void) => unknown
}

type PoolConstructor = new(config: Record<string, unknown>) => Pool

/** The message of a thrown value. */
export const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** A 32-bit key of a text (advisory locks). */
export const key32 = (text: string): number => createHash("sha256").update(text).digest().readInt32BE(0)

const loadPg: Effect.Effect<PoolConstructor, StoreError | RagError.MissingPackage> = Optional.load(
  "postgres",
  () => import("pg"),
  (cause) => new StoreError({ op: "load", message: `cannot load pg: ${messageOf(cause)}`, cause })
).pipe(Effect.map((mod) => {
  const m = mod as unknown as { default?: { Pool: PoolConstructor }; Pool?: PoolConstructor }
  return (m.default?.Pool ?? m.Pool)!
}))

/** Where the database is: the connection fields of the adapter's options (`PostgresStore.Options` extends it). */
export interface ConnectOptions {
  /** Host name or address (default `127.0.0.1`). */
  readonly host?: string | undefined
  /** Port (default 5432). */
  readonly port?: number | undefined
  /** Role (default: `pg`'s, i.e. `PGUSER` or the operating-system user). */
  readonly user?: string | undefined
  /** The role's password; omitted: `pg` reads `PGPASSWORD` or `~/.pgpass` itself. */
  readonly password?: Redacted.Redacted<string> | undefined
  /** Database (default: `pg`'s, i.e. `PGDATABASE` or the user name). */
  readonly database?: string | undefined
  /** TLS: `true` verifies the server's certificate, `"no-verify"` encrypts without verifying. */
  readonly ssl?: boolean | "no-verify" | undefined
  /** Connections in the pool (default 4). */
  readonly maxConnections?: number | undefined
}

/** `postgres://user@host:port/database` (never with the password). */
export const describeLocation = (options: ConnectOptions): string =>
  `postgres://${options.user === undefined ? "" : `${options.user}@`}${options.host ?? "127.0.0.1"}:${options.port ?? 5432}/${options.database ?? ""}`

const poolConfig = (options: ConnectOptions): Record<string, unknown> => {
  const password = options.password
  return {
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 5432,
    ...(options.user === undefined ? {} : { user: options.user }),
    ...(options.database === undefined ? {} : { database: options.database }),
    // a function: the clear text exists only while a connection authenticates
    ...(password === undefined ? {} : { password: () => Redacted.value(password) }),
    ...(options.ssl === undefined || options.ssl === false
      ? {}
      : { ssl: options.ssl === "no-verify" ? { rejectUnauthorized: false } : true }),
    max: Math.max(1, options.maxConnections ?? 4)
  }
}

/** Loads `pg` and opens a pool, ended when the scope closes. No connection is made yet. */
export const openPool = (options: ConnectOptions): Effect.Effect<Pool, StoreError | RagError.MissingPackage, Scope.Scope> =>
  Effect.flatMap(loadPg, (PoolClass) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const p = new PoolClass(poolConfig(options))
        // an idle connection that breaks is dropped by the pool; without a listener it would crash the process
        p.on("error", () => undefined)
        return p
      }),
      (p) => Effect.promise(() => p.end().catch(() => undefined))
    ))

/** Runs `f` in a transaction on one pooled connection; rolls back on failure. */
export const transaction = <A>(pool: Pool, onError: (cause: unknown) => StoreError, f: (c: Queryable) => Promise<A>) =>
  Effect.tryPromise({
    try: async () => {
      const c = await pool.connect()
      try {
        await c.query("BEGIN")
        const a = await f(c)
        await c.query("COMMIT")
        c.release()
        return a
      } catch (e) {
        try {
          await c.query("ROLLBACK")
          c.release()
        } catch {
          c.release(true) // a connection that cannot roll back is not reused
        }
        throw e
      }
    },
    catch: onError
  })

/** Runs `f` in a transaction that first takes the advisory lock `(space, key)`, held until it ends. */
export const lockedTransaction = <A>(
  pool: Pool,
  lock: readonly [space: number, key: number],
  onError: (cause: unknown) => StoreError,
  f: (c: Queryable) => Promise<A>
) =>
  transaction(pool, onError, async (c) => {
    await c.query("SELECT pg_advisory_xact_lock($1::int, $2::int)", lock)
    return f(c)
  })
