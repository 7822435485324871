/**
 * Ingestion spread over worker processes through a job queue: BullMQ on Redis.
 *
 * - {@link enqueue} enumerates the sources (as `Ingest.run` does) and adds one job per document
 *   to the collection's queue. The job id is the document id, so enqueueing a document that is
 *   already in the queue (waiting, running, done or failed) adds nothing.
 * - {@link worker} (any number of processes, on any machine that reaches Redis and the store)
 *   takes jobs, loads, extracts, chunks and embeds each document with the stages of the
 *   single-process ingest (`internal/ingest-stages.ts`), and writes the results by the same
 *   loss-free protocol (upsert the chunks, delete other generations, seal the marker).
 * - {@link status} counts the queue's jobs and lists the failed ones with their typed errors.
 *
 * ## Writes: batched, one writer per collection
 * A worker collects the documents it has prepared into a batch (up to `batchDocuments`, or what
 * arrived within `batchWindow`) and writes the batch while holding the collection's writer lock
 * in Redis (`SET NX PX`, renewed while held, released by token). So the store sees one commit
 * sequence per collection, each a few large writes, and never two writers racing for the same
 * table version. A job completes only after its batch's marker is sealed: a worker that dies
 * before leaves the job active, BullMQ's stalled-job check hands it to another worker, and the
 * redo rewrites the same chunk ids (merge-insert: no duplicates) and seals it. A worker that
 * dies while holding the lock holds it at most `writerLockMs` more.
 *
 * ## Failures
 * A document that fails (unreadable, extraction, embedding or store error) fails its job; BullMQ
 * retries it with exponential backoff (`attempts`, `backoff`), then keeps it in the failed set
 * with its error as `Tag (reason): message`, which {@link status} parses back.
 *
 * @since 0.1.0
 */
import type { Job, RedisClient, RedisOptions, Worker as BullWorker } from "bullmq"
import { Cause, Chunk as C, Data, Deferred, Duration, Effect, FiberSet, Option, Queue, Redacted, Runtime, Schedule, type Scope, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { realpathSync } from "node:fs"
import { createConnection } from "node:net"
import { basename, dirname, join as joinPath, resolve as resolvePath } from "node:path"
import * as Upload from "../api/Upload.js"
import * as Web from "../api/Web.js"
import type * as RagError from "../RagError.js"
import { VectorStore, type VectorStoreError } from "../store/VectorStore.js"
import * as Stages from "./internal/ingest-stages.js"
import * as Optional from "../internal/optional.js"
import * as State from "./internal/ingest-state.js"
import type { DocumentError, Failure, Request } from "./Ingest.js"

// =============================================================================
// Configuration, errors
// =============================================================================

/**
 * Where the queue is: a Redis URL. `redis://[user:password@]host[:port][/db]` (`rediss://` for
 * TLS), or a Unix socket `unix:///path/to/redis.sock[?db=N]` (also `redis+unix://`). A URL
 * that could not mean what it says (a socket path under `redis://`, a path that is not a
 * database number, a query or a fragment) is refused with `QueueError` `invalid_url`.
 *
 * @since 0.1.0
 * @category models
 */
export interface QueueConfig {
  /** The Redis URL; it may hold credentials, so it is `Redacted` and never printed. */
  readonly url: Redacted.Redacted<string>
  /** The key prefix in Redis (default `effect-rag`). */
  readonly prefix?: string | undefined
}

/**
 * A queue operation failed. `reason`: `invalid_url` (a URL that cannot mean what it says, or a
 * database the server does not have), `connection` (Redis unreachable), `operation` (a command
 * failed), `store_mismatch` (the queue belongs to another store or collection: nothing was
 * taken or created), `queue_lost` (Redis came back without the queue's data, e.g. restarted
 * empty: its jobs are gone).
 *
 * @since 0.1.0
 * @category errors
 */
export class QueueError extends Data.TaggedError("QueueError")<{
  readonly reason: "invalid_url" | "connection" | "operation" | "store_mismatch" | "queue_lost"
  /** Never holds the URL's credentials. */
  readonly message: string
}> {}

/** The queue of a collection is named after it. */
const queueName = (collection: string): string => collection

interface Connection {
  readonly options: RedisOptions
  /** The URL without credentials, for messages. */
  readonly display: string
  /** The database number (checked against the server once connected). */
  readonly db: number
  /** A Unix socket path, else a TCP host and port. */
  readonly target: { readonly path: string } | { readonly host: string; readonly port: number }
}

const invalidUrl = (message: string) => new QueueError({ reason: "invalid_url", message })

/** Database numbers as Redis numbers them (`databases` in redis.conf; 16 by default). */
const parseDb = (s: string, where: string): number => {
  if (!/^\d{1,9}$/.test(s)) throw invalidUrl(`the queue URL's database must be a number (${where}), not ${JSON.stringify(s)}`)
  return Number(s)
}

/**
 * Parses a queue URL (throws {@link QueueError} `invalid_url`). ioredis reads `redis:///x.sock`
 * as 127.0.0.1:6379 and ignores a path it cannot parse: such URLs are refused here.
 */
const parseUrl = (raw: string): Connection => {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw invalidUrl("the queue URL is not a URL (expected redis://HOST:PORT[/DB], rediss://… or unix:///path/to/redis.sock)")
  }
  if (u.hash !== "") throw invalidUrl("the queue URL has a fragment (#…): nothing may follow the database number")
  const auth = {
    ...(u.username !== "" ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password !== "" ? { password: decodeURIComponent(u.password) } : {})
  }
  // reconnect within 2 s once Redis is back (BullMQ's default waits up to 20 s between tries)
  const retryStrategy = (times: number) => Math.min(250 * times, 2000)
  if (u.protocol === "unix:" || u.protocol === "redis+unix:") {
    if (u.host !== "") throw invalidUrl(`${u.protocol}// takes a socket path and no host: ${u.protocol}///path/to/redis.sock`)
    const path = decodeURIComponent(u.pathname)
    if (path === "" || path.endsWith("/")) throw invalidUrl(`${u.protocol}// needs the socket's path, e.g. ${u.protocol}///run/redis/redis.sock`)
    const extra = [...u.searchParams.keys()].filter((k) => k !== "db")
    if (extra.length > 0) throw invalidUrl(`the queue URL takes only ?db=N after a socket path, not ${extra.join(", ")}`)
    const db = parseDb(u.searchParams.get("db") ?? "0", "?db=N")
    return {
      options: { path, db, ...auth, retryStrategy },
      display: `${u.protocol}//${path}${db !== 0 ? `?db=${db}` : ""}`,
      db,
      target: { path }
    }
  }
  if (u.protocol !== "redis:" && u.protocol !== "rediss:") {
    throw invalidUrl(`the queue URL must start with redis://, rediss:// or unix://, not ${u.protocol}//`)
  }
  if (u.hostname === "") {
    throw invalidUrl(`${u.protocol}// needs a host (${u.protocol}//HOST:PORT[/DB]); for a Unix socket write unix:///path/to/redis.sock`)
  }
  if (u.search !== "") throw invalidUrl(`the queue URL takes no query (?…): ${u.protocol}//HOST:PORT[/DB]`)
  const m = /^\/?(.*)$/.exec(u.pathname)![1]!
  const db = m === "" ? 0 : parseDb(m, `${u.protocol}//HOST:PORT/DB`)
  const port = u.port === "" ? 6379 : Number(u.port)
  return {
    options: {
      host: u.hostname,
      port,
      db,
      ...auth,
      ...(u.protocol === "rediss:" ? { tls: {} } : {}),
      retryStrategy
    },
    display: `${u.protocol}//${u.host}${db !== 0 ? `/${db}` : ""}`,
    db,
    target: { host: u.hostname.replace(/^\[(.*)\]$/, "$1"), port }
  }
}

const connection = (config: QueueConfig): Effect.Effect<Connection, QueueError> =>
  Effect.try({
    try: () => parseUrl(Redacted.value(config.url)),
    catch: (e) => (e instanceof QueueError ? e : invalidUrl(`the queue URL cannot be read: ${clean(e)}`))
  })

/** Error messages from ioredis may name the host, never the password; strip URL credentials anyway. */
const clean = (e: unknown): string => (e instanceof Error ? e.message : String(e)).replace(/\/\/[^/@\s]*@/g, "//")

const operation = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, QueueError> =>
  Effect.tryPromise({ try: f, catch: (e) => new QueueError({ reason: "operation", message: `${what}: ${clean(e)}` }) })

/** BullMQ, an optional peer dependency: not installed is {@link RagError.MissingPackage} with its install line. */
const loadBull = Optional.load("queue", () => import("bullmq"), (e) => new QueueError({ reason: "operation", message: `cannot load bullmq: ${clean(e)}` }))

const reachable = (conn: Connection): Effect.Effect<void, QueueError> =>
  Effect.async<void, QueueError>((resume) => {
    const socket = createConnection(conn.target)
    socket.setTimeout(10_000)
    const fail = (why: string) => {
      socket.destroy()
      resume(Effect.fail(new QueueError({ reason: "connection", message: `cannot reach Redis at ${conn.display}: ${why}` })))
    }
    socket.once("connect", () => {
      socket.end()
      resume(Effect.void)
    })
    socket.once("timeout", () => fail("no answer in 10 s"))
    socket.once("error", (e) => fail(clean(e)))
    return Effect.sync(() => void socket.destroy())
  })

/**
 * Opens a BullMQ queue of a collection (closed with the scope); fails when Redis does not answer
 * within 10 s, or has no database of the URL's number. `persistent`: commands wait for Redis
 * through an outage (a worker) instead of failing after ioredis's 20 reconnection tries.
 */
const openQueue = (config: QueueConfig, collection: string, persistent = false) =>
  Effect.gen(function*() {
    // the package first: one that is not installed says so before any connection is tried
    const bull = yield* loadBull
    const conn = yield* connection(config)
    // a TCP connection first: BullMQ's client retries an unreachable server for ever
    yield* reachable(conn)
    const queue = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const q = new bull.Queue(queueName(collection), {
          connection: persistent ? { ...conn.options, maxRetriesPerRequest: null } : conn.options,
          prefix: config.prefix ?? "effect-rag"
        })
        q.on("error", () => {}) // reported through the failing calls
        return q
      }),
      (q) => Effect.promise(() => q.close().catch(() => undefined))
    )
    yield* Effect.tryPromise({
      // the first connection error ends the wait (ioredis would retry for ever)
      try: () => queue.waitUntilReady(),
      catch: (e) => new QueueError({ reason: "connection", message: `cannot reach Redis at ${conn.display}: ${clean(e)}` })
    }).pipe(
      Effect.timeoutFail({
        duration: "10 seconds",
        onTimeout: () => new QueueError({ reason: "connection", message: `cannot reach Redis at ${conn.display} (no answer in 10 s)` })
      })
    )
    const client = yield* operation("connecting", () => queue.client)
    if (conn.db !== 0) {
      // ioredis selects the database after connecting and, when the server refuses, stays on
      // database 0 without a word: select it again and fail when the server has no such database
      yield* Effect.tryPromise({
        // the client is ioredis (BullMQ builds one from RedisOptions); its interface in BullMQ lists no SELECT
        try: () => (client as unknown as { call: (...args: Array<string>) => Promise<unknown> }).call("SELECT", String(conn.db)),
        catch: (e) =>
          invalidUrl(`the Redis server at ${conn.display} has no database ${conn.db} (${clean(e)}); its databases are numbered from 0 (16 by default)`)
      })
    }
    return { queue, conn, client, bull, prefix: config.prefix ?? "effect-rag" }
  })

// =============================================================================
// Identity: a queue belongs to one collection and one store
// =============================================================================

/**
 * The identity of a store as a queue records it: a folder's absolute path (symbolic links
 * resolved as far as the folder exists), an object-store URI without credentials, query or
 * fragment (lower-case scheme and host, no trailing `/`).
 *
 * @since 0.1.0
 * @category utils
 */
export const storeIdentity = (store: string): string => {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(store) && !/^[a-z]:[\\/]/i.test(store)) {
    try {
      const u = new URL(store)
      const path = u.pathname.replace(/\/+$/, "")
      return `${u.protocol.toLowerCase()}//${u.host.toLowerCase()}${path}`
    } catch {
      return store.replace(/[?#].*$/, "").replace(/\/\/[^/@]*@/, "//").replace(/\/+$/, "")
    }
  }
  // the nearest existing folder through realpath, the rest as written
  let at = resolvePath(store)
  const rest: Array<string> = []
  for (;;) {
    try {
      return joinPath(realpathSync(at), ...rest)
    } catch {
      const parent = dirname(at)
      if (parent === at) return resolvePath(store)
      rest.unshift(basename(at))
      at = parent
    }
  }
}

/** The identity key of a collection's queue (beside BullMQ's keys, under the same prefix). */
const identityKey = (prefix: string, collection: string): string => `${prefix}:${queueName(collection)}:identity`

/**
 * Records the queue's collection (when no one did) and its store (when given and none is
 * recorded) in one step, and returns what is recorded: the first producer or worker sets it,
 * every later one reads it.
 */
const claimScript = `
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], 'collection', ARGV[1], 'created', ARGV[3])
end
if ARGV[2] ~= '' then redis.call('hsetnx', KEYS[1], 'store', ARGV[2]) end
return redis.call('hmget', KEYS[1], 'collection', 'store')`

interface Identity {
  readonly collection: string | undefined
  readonly store: string | undefined
}

const toIdentity = (r: unknown): Identity => {
  const [c, s] = Array.isArray(r) ? r : []
  return { collection: typeof c === "string" ? c : undefined, store: typeof s === "string" ? s : undefined }
}

const readIdentity = (client: RedisClient, prefix: string, collection: string) =>
  Effect.map(operation("reading the queue's identity", () => client.hmget(identityKey(prefix, collection), "collection", "store")), toIdentity)

const claimIdentity = (client: RedisClient, prefix: string, collection: string, store: string | undefined) =>
  Effect.map(
    operation("recording the queue's identity", () => {
      client.defineCommand("effectRagClaimQueue", { numberOfKeys: 1, lua: claimScript })
      return client.runCommand("effectRagClaimQueue", [identityKey(prefix, collection), collection, store ?? "", new Date().toISOString()])
    }),
    toIdentity
  )

/** Fails with `store_mismatch` when the recorded identity is not this one. */
const checkIdentity = (recorded: Identity, display: string, collection: string, store: string | undefined): Effect.Effect<void, QueueError> => {
  if (recorded.collection !== undefined && recorded.collection !== collection) {
    return Effect.fail(new QueueError({
      reason: "store_mismatch",
      message: `the queue ${queueName(collection)} on ${display} belongs to the collection ${recorded.collection}, not ${collection}`
    }))
  }
  if (store !== undefined && recorded.store !== undefined && recorded.store !== store) {
    return Effect.fail(new QueueError({
      reason: "store_mismatch",
      message: `the queue of collection ${collection} on ${display} belongs to the store ${recorded.store}, not ${store}: ` +
        "every worker of a queue writes to the store the queue was created for (use that store, or another Redis database or collection for this one)"
    }))
  }
  return Effect.void
}

/**
 * Checks, without writing anything, that a worker on `store` may work the collection's queue:
 * Redis answers, the URL's database exists, and the queue is not recorded for another store or
 * collection (`store_mismatch`). `effect-rag worker` runs it before it prepares its store.
 *
 * @since 0.1.0
 * @category utils
 */
export const checkStore = (
  config: QueueConfig,
  collection: string,
  store: string
): Effect.Effect<void, QueueError | RagError.MissingPackage> =>
  Effect.scoped(Effect.gen(function*() {
    const { client, conn, prefix } = yield* openQueue(config, collection)
    const recorded = yield* readIdentity(client, prefix, collection)
    yield* checkIdentity(recorded, conn.display, collection, storeIdentity(store))
  }))

// =============================================================================
// Jobs
// =============================================================================

/** The data of a job: the document to ingest. */
interface JobData {
  readonly item: Stages.Item
}

/**
 * The job id of a document (BullMQ ids cannot hold `:`).
 *
 * @since 0.1.0
 * @category utils
 */
export const jobId = (documentId: string): string => encodeURIComponent(documentId)

/** A failed job's error as stored: `Tag (reason): message`. */
const formatError = (e: { readonly _tag: string; readonly message: string; readonly reason?: unknown }): string =>
  `${e._tag}${typeof e.reason === "string" ? ` (${e.reason})` : ""}: ${e.message}`

/**
 * The typed error of a failed job, parsed back from its stored reason.
 *
 * @since 0.1.0
 * @category models
 */
export interface JobError {
  readonly _tag: string
  readonly reason?: string | undefined
  readonly message: string
}

const parseError = (failedReason: string): JobError => {
  const m = /^([A-Za-z]+)(?: \(([a-z_]+)\))?: ([\s\S]*)$/.exec(failedReason)
  return m === null ? { _tag: "Error", message: failedReason } : { _tag: m[1]!, ...(m[2] !== undefined ? { reason: m[2] } : {}), message: m[3]! }
}

// =============================================================================
// Enqueue
// =============================================================================

/**
 * Settings of {@link enqueue}.
 *
 * @since 0.1.0
 * @category models
 */
export interface EnqueueOptions {
  /** Tries per job before it lands in the failed set (default 3). */
  readonly attempts?: number | undefined
  /** First retry delay in ms, doubled on each retry (default 1000). */
  readonly backoff?: number | undefined
  /** Jobs per Redis round trip (default 500). */
  readonly batch?: number | undefined
  /** Called after each round trip with the documents submitted so far. */
  readonly onProgress?: ((submitted: number) => Effect.Effect<void>) | undefined
  /**
   * The store the collection's workers write to (a folder or an object-store URI). When given,
   * the queue records it (if no producer or worker did first), and a producer naming another
   * store fails with `store_mismatch` before adding anything.
   */
  readonly store?: string | undefined
}

/**
 * What {@link enqueue} did.
 *
 * @since 0.1.0
 * @category models
 */
export interface EnqueueSummary {
  readonly collection: string
  /** Documents found (after dedupe) and submitted to the queue. */
  readonly documents: number
  /**
   * Jobs this call added (0 on a rerun). Of two producers enqueuing the same documents at
   * once, each counts the jobs it created: together they count each job once.
   */
  readonly enqueued: number
  /** Sources that could not be enumerated (a missing path, a failed crawl). */
  readonly failures: ReadonlyArray<Failure>
  /** Special files (FIFOs, sockets, devices) found in folders and skipped, never enqueued. */
  readonly ignored: ReadonlyArray<Stages.Ignored>
}

const allStates = ["waiting", "active", "delayed", "prioritized", "waiting-children", "paused", "completed", "failed"] as const

/**
 * The job name: `document` and this producer's token. BullMQ answers an add of an id it holds
 * already with that id, as if it had added it; the name of the job in Redis tells whose add
 * created it.
 */
const jobName = (token: string): string => `document ${token}`

/** Counts the jobs (ARGV[3..], under the key prefix ARGV[1]) whose name is ARGV[2]. */
const createdByScript = `
local n = 0
for i = 3, #ARGV do
  if redis.call('hget', ARGV[1] .. ARGV[i], 'name') == ARGV[2] then n = n + 1 end
end
return n`

/** How many of `ids` this producer's add created (their stored name holds its token). */
const createdBy = (client: RedisClient, prefix: string, collection: string, ids: ReadonlyArray<string>, token: string) =>
  operation("counting the jobs added", async () => {
    client.defineCommand("effectRagCreatedBy", { numberOfKeys: 0, lua: createdByScript })
    return Number(await client.runCommand("effectRagCreatedBy", [`${prefix}:${queueName(collection)}:`, jobName(token), ...ids]))
  })

/**
 * Enumerates the sources and adds one job per document to the collection's queue. `prune` is not
 * a queue operation (run `Ingest.run` with `prune` for that). URLs and sites need the `Web`
 * service when present: a site is crawled here and its pages travel in the jobs.
 *
 * @since 0.1.0
 * @category utils
 */
export const enqueue = (
  request: Omit<Request, "prune">,
  config: QueueConfig,
  options: EnqueueOptions = {}
): Effect.Effect<EnqueueSummary, QueueError | RagError.MissingPackage> =>
  Effect.scoped(Effect.gen(function*() {
    const { client, conn, prefix, queue } = yield* openQueue(config, request.collection)
    const store = options.store === undefined ? undefined : storeIdentity(options.store)
    yield* checkIdentity(yield* claimIdentity(client, prefix, request.collection, store), conn.display, request.collection, store)
    const web = yield* Effect.serviceOption(Web.Web)
    const failures: Array<Failure> = []
    const ignored: Array<Stages.Ignored> = []
    const seen = new Set<string>()
    const token = randomUUID()
    let enqueued = 0
    const attempts = Math.max(1, options.attempts ?? 3)
    const backoff = Math.max(0, options.backoff ?? 1000)
    let submitted = 0
    yield* Stages.enumerate(request.sources, { include: request.include ?? [], exclude: request.exclude ?? [] }, web, {
      plan: () => Effect.void,
      fail: (source, documentId, error) => Effect.sync(() => void failures.push({ source, documentId, error })),
      scope: () => {},
      broken: () => {},
      ignore: (x) => Effect.sync(() => void ignored.push(x))
    }).pipe(
      Stream.filter((item) => {
        if (seen.has(item.documentId)) return false
        seen.add(item.documentId)
        return true
      }),
      Stream.grouped(Math.max(1, options.batch ?? 500)),
      Stream.runForEach((group) => {
        const jobs = C.toReadonlyArray(group).map((item) => ({
          name: jobName(token),
          data: { item } satisfies JobData,
          opts: {
            jobId: jobId(item.documentId),
            attempts,
            backoff: { type: "exponential", delay: backoff },
            // kept, so that enqueueing the document again adds nothing
            removeOnComplete: false,
            removeOnFail: false
          }
        }))
        return operation("adding jobs", () => queue.addBulk(jobs)).pipe(
          Effect.zipRight(createdBy(client, prefix, request.collection, jobs.map((j) => j.opts.jobId), token)),
          Effect.tap((n) => Effect.sync(() => void (enqueued += n))),
          Effect.zipRight(Effect.suspend(() => {
            submitted += jobs.length
            return options.onProgress?.(submitted) ?? Effect.void
          }))
        )
      })
    )
    return { collection: request.collection, documents: submitted, enqueued, failures, ignored }
  })).pipe(Effect.withSpan("IngestQueue.enqueue", { attributes: { collection: request.collection } }))

// =============================================================================
// Status
// =============================================================================

/**
 * A job in the failed set.
 *
 * @since 0.1.0
 * @category models
 */
export interface FailedJob {
  readonly documentId: string
  readonly source: string
  readonly attempts: number
  readonly error: JobError
}

/**
 * The state of a collection's queue.
 *
 * @since 0.1.0
 * @category models
 */
export interface QueueStatus {
  readonly collection: string
  /** The store the queue belongs to (recorded by its first producer or worker), when known. */
  readonly store?: string | undefined
  readonly counts: {
    readonly waiting: number
    readonly active: number
    readonly delayed: number
    readonly completed: number
    readonly failed: number
  }
  /** The failed jobs (at most `limit`, default 100). */
  readonly failed: ReadonlyArray<FailedJob>
}

/**
 * Counts the jobs of a collection's queue and lists its failed jobs with their typed errors.
 *
 * @since 0.1.0
 * @category utils
 */
export const status = (
  config: QueueConfig,
  collection: string,
  options: { readonly limit?: number | undefined } = {}
): Effect.Effect<QueueStatus, QueueError | RagError.MissingPackage> =>
  Effect.scoped(Effect.gen(function*() {
    const { client, prefix, queue } = yield* openQueue(config, collection)
    const identity = yield* readIdentity(client, prefix, collection)
    const c = yield* operation("counting jobs", () => queue.getJobCounts(...allStates))
    const jobs = yield* operation("reading failed jobs", () => queue.getFailed(0, Math.max(1, options.limit ?? 100) - 1))
    return {
      collection,
      ...(identity.store !== undefined ? { store: identity.store } : {}),
      counts: {
        waiting: (c["waiting"] ?? 0) + (c["prioritized"] ?? 0) + (c["paused"] ?? 0) + (c["waiting-children"] ?? 0),
        active: c["active"] ?? 0,
        delayed: c["delayed"] ?? 0,
        completed: c["completed"] ?? 0,
        failed: c["failed"] ?? 0
      },
      failed: jobs.map((j) => {
        const item = (j.data as JobData | undefined)?.item
        return {
          documentId: item?.documentId ?? decodeURIComponent(j.id ?? ""),
          source: item?.source ?? "",
          attempts: j.attemptsMade,
          error: parseError(j.failedReason ?? "")
        }
      })
    }
  }))

// =============================================================================
// Worker
// =============================================================================

/**
 * Settings of a {@link worker}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerOptions {
  /** The collection (its queue and its table). */
  readonly collection: string
  /**
   * The store this worker writes to (the folder or object-store URI of the `VectorStore`
   * provided). The queue records the first store a producer or worker names; a worker on
   * another store fails with `QueueError` `store_mismatch` before it takes a job or creates
   * anything. Leave it out only when the store cannot differ between workers.
   */
  readonly store?: string | undefined
  /** Embed chunks with this embedder (default none). Every worker of a collection must use the same. */
  readonly embedder?: Stages.Embedder | undefined
  /** Options passed to `Upload.extractChunks` (default `{ enable_ocr: true }`). */
  readonly upload?: Upload.UploadOptions | undefined
  /** Mixed into every content hash, as in `Ingest.Options.fingerprint` (default `"v1"`). */
  readonly fingerprint?: string | undefined
  /** Jobs processed at once (default 64): a job completes once its batch is written, so this bounds the documents in flight per batch window. */
  readonly concurrency?: number | undefined
  /** Documents per write batch (default 256). */
  readonly batchDocuments?: number | undefined
  /** Longest time a prepared document waits for its batch to fill, in ms (default 200). */
  readonly batchWindow?: number | undefined
  /**
   * BullMQ's job lock in ms (default 30,000): a job whose worker died returns to the queue
   * after about this long (the stalled-job check runs at the same interval).
   */
  readonly lockDuration?: number | undefined
  /** The collection's writer lock lifetime in ms, renewed while held (default 10,000). */
  readonly writerLockMs?: number | undefined
  /** Stop once the queue holds no waiting, delayed or running job (default: run until interrupted). */
  readonly untilEmpty?: boolean | undefined
  /** Called with every document's outcome. */
  readonly onEvent?: ((event: WorkerEvent) => Effect.Effect<void>) | undefined
}

/**
 * What a worker did with one job.
 *
 * @since 0.1.0
 * @category models
 */
export type WorkerEvent =
  | { readonly _tag: "Ingested"; readonly source: string; readonly documentId: string; readonly chunks: number }
  | { readonly _tag: "Skipped"; readonly source: string; readonly documentId: string }
  /**
   * One attempt failed. `final`: the job failed for good (a permanent error, see
   * {@link isPermanent}, or its last attempt); otherwise BullMQ retries it with backoff.
   */
  | {
    readonly _tag: "Failed"
    readonly source: string
    readonly documentId: string
    readonly error: JobError
    /** The error is permanent ({@link isPermanent}): the job is not retried. */
    readonly permanent: boolean
    readonly final: boolean
    /** The attempt that failed (1 = the first) and the attempts the job has. */
    readonly attempt: number
    readonly attempts: number
  }
  /** The connection to Redis broke: jobs in hand go on, results wait until it is back. */
  | { readonly _tag: "ConnectionLost"; readonly queue: string; readonly message: string }
  /** The connection to Redis is back after `downMs`. */
  | { readonly _tag: "ConnectionRestored"; readonly queue: string; readonly downMs: number }
  /**
   * BullMQ's worker reported an error (its `error` event): `connection` when its connection to
   * Redis broke or cannot be made (it reconnects and goes on), `operation` when a queue command
   * failed. The message names the queue's host, never a password. The same error repeated (a
   * reconnection try every 2 s while Redis is down) is reported once, until another error comes
   * or the connection is back.
   */
  | { readonly _tag: "WorkerError"; readonly queue: string; readonly error: QueueError }

/**
 * What a worker did until it stopped.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerSummary {
  readonly collection: string
  /** Jobs written (documents new or changed). */
  readonly ingested: number
  /** Jobs whose document was stored complete already. */
  readonly skipped: number
  /** Job attempts that failed. */
  readonly failed: number
  /** Jobs that failed for good in this worker (a permanent error, or their last attempt). */
  readonly failedJobs: number
  readonly chunks: number
  /** Batches written. */
  readonly batches: number
  /** Store write operations (upserts, deletes, index upkeep). */
  readonly writes: number
  readonly durationMs: number
  /** Of `durationMs`, the time in store writes (waiting for the writer lock not included). */
  readonly writeMs: number
  /** Of `durationMs`, the time waiting for the writer lock. */
  readonly lockWaitMs: number
}

/**
 * The collection's writer lock in Redis: `SET key token NX PX ms`, renewed every third of its
 * lifetime while held, released only by its holder (compare-and-delete).
 */
const writerLock = (client: RedisClient, key: string, lifetimeMs: number) => {
  client.defineCommand("effectRagLockTake", {
    numberOfKeys: 1,
    lua: "if redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 else return 0 end"
  })
  client.defineCommand("effectRagLockRenew", {
    numberOfKeys: 1,
    lua: "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
  })
  client.defineCommand("effectRagLockRelease", {
    numberOfKeys: 1,
    lua: "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
  })
  const third = Duration.millis(Math.max(50, Math.floor(lifetimeMs / 3)))
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | QueueError, R> =>
    Effect.acquireUseRelease(
      Effect.gen(function*() {
        const token = randomUUID()
        yield* operation("taking the writer lock", () => client.runCommand("effectRagLockTake", [key, token, lifetimeMs])).pipe(
          Effect.repeat({
            schedule: Schedule.exponential("20 millis", 1.5).pipe(Schedule.either(Schedule.spaced("500 millis")), Schedule.jittered),
            until: (r) => r === 1
          })
        )
        return token
      }),
      (token) =>
        Effect.raceFirst(
          self,
          // renewal: a failed renewal is tried again; the lock lives `lifetimeMs` past the last one
          Effect.forever(Effect.zipRight(Effect.sleep(third), Effect.ignore(operation("renewing the writer lock", () => client.runCommand("effectRagLockRenew", [key, token, lifetimeMs])))))
        ),
      (token) => Effect.ignore(operation("releasing the writer lock", () => client.runCommand("effectRagLockRelease", [key, token])))
    )
}

// =============================================================================
// Permanent and transient failures
// =============================================================================

/** Extraction reasons that the same document gives again on every try. */
const permanentReasons: ReadonlySet<string> = new Set([
  "password_required",
  "wrong_password",
  "corrupt",
  "unsupported",
  "too_large",
  "limit_exceeded",
  "empty"
])

/** File-system errors that pass (a full file table, a busy or remote file system). */
const transientIo = /\b(EMFILE|ENFILE|EAGAIN|EBUSY|EIO|ETIMEDOUT|ECONNRESET|ESTALE|EINTR)\b/

/**
 * Whether a document's error is permanent: another try gives the same (an encrypted, corrupt,
 * unsupported, empty or too large document; a missing file; an invalid URL; a page that answered
 * a client error; vectors of the wrong size). Such a job fails at once, without retries.
 * Everything else is transient and retried with backoff: time-outs, transport errors, 5xx,
 * rate limits, store and queue errors, an OCR engine or an API key missing on this worker.
 *
 * @since 0.1.0
 * @category utils
 */
export const isPermanent = (e: {
  readonly _tag: string
  readonly reason?: unknown
  readonly code?: unknown
  readonly message?: unknown
}): boolean => {
  const message = typeof e.message === "string" ? e.message : ""
  const coded = typeof e.code === "string" && permanentReasons.has(e.code)
  switch (e._tag) {
    case "ExtractionError":
      return typeof e.reason === "string" && permanentReasons.has(e.reason)
    case "SourceError":
      return e.reason === "not_found" || e.reason === "invalid_url" ||
        (e.reason === "page_failed" && !/HTTP (5\d\d|408|429)\b/.test(message))
    case "EmbeddingMismatch":
    case "PayloadTooLarge":
    case "NotFound":
    case "InvalidRequest":
      return true
    case "BadRequest":
      return coded || !transientIo.test(message)
    case "ServerError":
      return coded
    default:
      return false
  }
}

/**
 * Reports the Redis connection of a worker while it is down (`ConnectionLost` once, then
 * `ConnectionRestored` with the time it was down) and runs `onRestored` when it comes back;
 * the listeners are removed when the scope closes.
 */
const watchConnection = (
  client: RedisClient,
  display: string,
  emit: (event: WorkerEvent) => Effect.Effect<void>,
  onRestored: Effect.Effect<void>
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    let downSince: number | undefined
    let lastError = ""
    const onError = (e: unknown) => void (lastError = clean(e))
    const onClose = () => {
      if (downSince !== undefined) return
      downSince = Date.now()
      Runtime.runFork(runtime)(emit({
        _tag: "ConnectionLost",
        queue: display,
        message: lastError !== "" ? lastError : "the connection closed"
      }))
    }
    const onReady = () => {
      if (downSince === undefined) return
      const downMs = Date.now() - downSince
      downSince = undefined
      lastError = ""
      Runtime.runFork(runtime)(emit({ _tag: "ConnectionRestored", queue: display, downMs }).pipe(Effect.zipRight(onRestored)))
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        client.on("error", onError)
        client.on("close", onClose)
        client.on("ready", onReady)
      }),
      () =>
        Effect.sync(() => {
          client.off("error", onError)
          client.off("close", onClose)
          client.off("ready", onReady)
        })
    )
  })


/** Error codes and messages of a Redis connection that broke or cannot be made (ioredis, BullMQ). */
const connectionCodes = /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ENOENT)$/
const connectionMessages = /Connection is closed|Stream isn't writeable|\bconnect E[A-Z]+\b|read ECONNRESET|Reached the max retries/i

const isConnectionError = (e: unknown): boolean => {
  const code = typeof e === "object" && e !== null && "code" in e ? String((e as { readonly code: unknown }).code) : ""
  return connectionCodes.test(code) || connectionMessages.test(clean(e))
}

/** What the BullMQ worker's `error` events are reported through (see {@link workerErrors}). */
interface WorkerErrors {
  /** The `error` listener of the BullMQ worker `w`. */
  readonly listener: (w: { readonly isRunning: () => boolean }) => (e: unknown) => void
  /** The connection is back: the next error is reported even when it repeats the last. */
  readonly restored: Effect.Effect<void>
  /** The worker is being closed by us: an error then is not BullMQ giving up. */
  readonly closing: () => void
  /** Fails when BullMQ's worker stopped taking jobs after an error (its main loop failed). */
  readonly gaveUp: Deferred.Deferred<never, QueueError>
}

/**
 * Reports the BullMQ worker's `error` events as `WorkerError` events with a typed
 * {@link QueueError} naming the host (BullMQ and ioredis go on and reconnect by themselves);
 * the same error repeated is reported once, a connection error once we close the worker not at all. An error after which BullMQ's worker is no longer
 * running (not closed by us) fails `gaveUp`, which ends the worker with that error.
 */
const workerErrors = (
  display: string,
  emit: (event: WorkerEvent) => Effect.Effect<void>
): Effect.Effect<WorkerErrors> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const gaveUp = yield* Deferred.make<never, QueueError>()
    let last = ""
    let closing = false
    const listener = (w: { readonly isRunning: () => boolean }) => (e: unknown) => {
      const reason = isConnectionError(e) ? "connection" : "operation"
      // connections closing as we close the worker are not news
      if (closing && reason === "connection") return
      const error = new QueueError({ reason, message: `Redis at ${display}: ${clean(e)}` })
      const report = error.message === last ? Effect.void : emit({ _tag: "WorkerError", queue: display, error })
      last = error.message
      const stopped = !closing && !w.isRunning()
      Runtime.runFork(runtime)(
        stopped
          ? Effect.zipRight(
            report,
            Deferred.fail(gaveUp, new QueueError({ reason, message: `the queue worker on Redis at ${display} stopped taking jobs: ${clean(e)}` }))
          )
          : report
      )
    }
    return {
      listener,
      restored: Effect.sync(() => void (last = "")),
      closing: () => void (closing = true),
      gaveUp
    }
  })

// =============================================================================
// Worker: its parts
// =============================================================================
//
// A worker is composed of the parts below, in the order it acquires them (and releases them in
// reverse): its queue, claimed for the collection and store ({@link claimQueue}); the watch on
// its Redis connection ({@link superviseConnection}); the collection it writes to
// ({@link openSink}); the write batcher ({@link startWriter}); the BullMQ worker that takes jobs
// ({@link startBullWorker}), each processed by {@link processJob}; and, with `untilEmpty`, the
// drain ({@link drain}). The parts share no closure: what they read is passed in, and what they
// change is the {@link Tally} and the batcher's {@link BatcherState}.

/** A worker's counts (its summary's figures), added to by its parts as jobs and batches end. */
interface Tally {
  ingested: number
  skipped: number
  failed: number
  failedJobs: number
  chunks: number
  batches: number
  writes: number
  writeMs: number
  lockWaitMs: number
}

const newTally = (): Tally => ({
  ingested: 0,
  skipped: 0,
  failed: 0,
  failedJobs: 0,
  chunks: 0,
  batches: 0,
  writes: 0,
  writeMs: 0,
  lockWaitMs: 0
})

/** Runs a store write and adds its time to the tally's `writeMs`. */
const timedIn = (tally: Tally) => <A, E>(write: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.map(Effect.timed(write), ([d, a]) => {
    tally.writeMs += Duration.toMillis(d)
    return a
  })

/** A queue as {@link openQueue} opens it. */
type OpenQueue = Effect.Effect.Success<ReturnType<typeof openQueue>>

/** A worker's queue: open, and recorded for (or checked to be of) its collection and store. */
interface WorkerQueue extends OpenQueue {
  readonly collection: string
  /** Whether the queue's identity is still in Redis (gone: Redis came back empty, or was flushed). */
  readonly identityPresent: Effect.Effect<boolean, QueueError>
  /** The error of a queue whose identity is gone: its jobs are gone with it. */
  readonly queueLost: QueueError
}

/**
 * Opens the worker's queue (commands wait through Redis outages) and records its identity, or
 * checks the recorded one (`store_mismatch`), before any job is taken and anything is created.
 */
const claimQueue = (config: QueueConfig, options: WorkerOptions): Effect.Effect<WorkerQueue, QueueError | RagError.MissingPackage, Scope.Scope> =>
  Effect.gen(function*() {
    const collection = options.collection
    const opened = yield* openQueue(config, collection, true)
    const { client, conn, prefix } = opened
    const store = options.store === undefined ? undefined : storeIdentity(options.store)
    yield* checkIdentity(yield* claimIdentity(client, prefix, collection, store), conn.display, collection, store)
    return {
      ...opened,
      collection,
      identityPresent: Effect.map(
        operation("reading the queue's identity", () => client.hexists(identityKey(prefix, collection), "collection")),
        (n) => n > 0
      ),
      queueLost: new QueueError({
        reason: "queue_lost",
        message: `Redis at ${conn.display} holds no queue for collection ${collection} any more (restarted empty, or flushed): ` +
          "its jobs are gone; enqueue the documents again"
      })
    }
  })

/**
 * Reports the queue's Redis outages while they last; when Redis is back without the queue's
 * identity (restarted empty), the returned deferred fails with `queue_lost`, which ends the worker.
 */
const superviseConnection = (
  q: WorkerQueue,
  emit: (event: WorkerEvent) => Effect.Effect<void>,
  onRestored: Effect.Effect<void>
): Effect.Effect<Deferred.Deferred<never, QueueError>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lost = yield* Deferred.make<never, QueueError>()
    const checkQueue = q.identityPresent.pipe(
      Effect.flatMap((present) => (present ? Effect.void : Deferred.fail(lost, q.queueLost))),
      Effect.ignore
    )
    yield* watchConnection(q.client, q.conn.display, emit, Effect.zipRight(onRestored, checkQueue))
    return lost
  })

/** The collection a worker writes to, and how: batches embedded, then written under the writer lock. */
interface Sink {
  readonly collection: string
  readonly embedder: Stages.Embedder | undefined
  readonly embedding: { readonly model: string; readonly dimension: number } | undefined
  readonly target: Stages.Target
  /** The documents stored complete when the worker started (a first attempt skips them). */
  readonly state: State.StoredState
  /** Runs a write holding the collection's writer lock. */
  readonly withWriter: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E | QueueError, R>
  readonly tally: Tally
}

/**
 * Probes the embedder, opens the collection (created under the writer lock: several workers
 * start at once) and reads which documents it holds complete.
 */
const openSink = (
  q: WorkerQueue,
  options: WorkerOptions,
  tally: Tally
): Effect.Effect<Sink, QueueError | VectorStoreError | RagError.ApiError, VectorStore> =>
  Effect.gen(function*() {
    const vectorStore = yield* VectorStore
    const withWriter = writerLock(q.client, `${q.prefix}:${queueName(q.collection)}:writer`, Math.max(500, options.writerLockMs ?? 10_000))
    const embedding = yield* Stages.probeEmbedding(options.embedder)
    const target = yield* withWriter(Stages.open(vectorStore, q.collection, embedding))
    const state = yield* State.load(target.main, target.manifest)
    return { collection: q.collection, embedder: options.embedder, embedding, target, state, withWriter, tally }
  })

/** What a job's document fails with: its own error, or its batch's. */
type JobFailure = DocumentError | VectorStoreError | QueueError

/** A prepared document waiting for its batch, and the deferred that gets the batch's outcome. */
interface Pending {
  readonly prepared: Stages.Prepared
  readonly done: Deferred.Deferred<number, JobFailure>
}

/** The write batcher's state: whether anything was written since the last index upkeep. */
interface BatcherState {
  dirty: boolean
}

/**
 * Embeds a batch and writes it under the writer lock; each document's deferred gets its chunk
 * count once the batch's markers are sealed, or the batch's error.
 */
const writeBatch = (sink: Sink, batcher: BatcherState, entries: ReadonlyArray<Pending>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { tally } = sink
    const embedded = yield* Effect.either(Stages.embed(sink.embedder, sink.embedding, sink.collection, entries.map((e) => e.prepared)))
    if (embedded._tag === "Left") {
      return yield* Effect.forEach(entries, (e) => Deferred.fail(e.done, embedded.left), { discard: true })
    }
    const waitStart = Date.now()
    const written = yield* Effect.either(sink.withWriter(Effect.suspend(() => {
      tally.lockWaitMs += Date.now() - waitStart
      return Stages.write(sink.target, embedded.right, timedIn(tally))
    })))
    if (written._tag === "Left") {
      return yield* Effect.forEach(entries, (e) => Deferred.fail(e.done, written.left), { discard: true })
    }
    tally.batches++
    tally.writes += written.right.writes
    batcher.dirty = true
    yield* Effect.forEach(entries, (e) => Deferred.succeed(e.done, e.prepared.chunks.length), { discard: true })
  }).pipe(Effect.withSpan("Ingest.write", { attributes: { "effect_rag.documents": entries.length } }))

/** The write side of a worker, as its jobs and its drain use it. */
interface Writer {
  /** Hands a prepared document to the batcher: succeeds with its chunk count once its batch is sealed. */
  readonly submit: (prepared: Stages.Prepared) => Effect.Effect<number, JobFailure>
  /** Index upkeep (under the writer lock), when this worker wrote anything since the last. */
  readonly upkeep: Effect.Effect<void, VectorStoreError | QueueError>
}

/**
 * Starts the write batcher: prepared documents are grouped into batches (up to
 * `batchDocuments`, or what arrived within `batchWindow`) and written one batch at a time. It
 * runs until the scope closes, after the BullMQ worker has finished the jobs in hand.
 */
const startWriter = (sink: Sink, options: WorkerOptions): Effect.Effect<Writer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const batcher: BatcherState = { dirty: false }
    const pending = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    yield* Stream.fromQueue(pending).pipe(
      Stream.groupedWithin(Math.max(1, options.batchDocuments ?? 256), Math.max(1, options.batchWindow ?? 200)),
      Stream.mapEffect((g) => writeBatch(sink, batcher, C.toReadonlyArray(g))),
      Stream.runDrain,
      Effect.forkScoped
    )
    return {
      submit: (prepared) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<number, JobFailure>()
          yield* Queue.offer(pending, { prepared, done })
          return yield* Deferred.await(done)
        }),
      upkeep: Effect.suspend(() => {
        if (!batcher.dirty) return Effect.void
        batcher.dirty = false
        return sink.withWriter(timedIn(sink.tally)(sink.target.main.optimize())).pipe(Effect.tap(() => Effect.sync(() => void sink.tally.writes++)))
      })
    }
  })

/** What processing a job reads: the engines, the run's settings, the stored state, the writer. */
interface JobContext {
  readonly upload: Upload.Upload["Type"]
  readonly web: Option.Option<Web.Web["Type"]>
  readonly emit: (event: WorkerEvent) => Effect.Effect<void>
  readonly fingerprint: string
  readonly uploadOptions: Upload.UploadOptions
  readonly state: State.StoredState
  readonly writer: Writer
  readonly tally: Tally
}

/**
 * One job: loads the document, skips it when it is stored complete (on a first attempt only: a
 * redo, another attempt or a stalled job, always checks for other generations), else extracts it
 * and waits until its batch is written. A failure is reported as a `Failed` event, then fails the job.
 */
const processJob = (ctx: JobContext, job: Job<JobData>): Effect.Effect<void, JobFailure> =>
  Effect.gen(function*() {
    const item = job.data.item
    const loaded = yield* Stages.load(item, ctx.web).pipe(Effect.withSpan("Ingest.load"))
    const x = Stages.hash(ctx.fingerprint, item, loaded)
    if (job.attemptsStarted <= 1 && State.isComplete(ctx.state, item.documentId, x.hash)) {
      ctx.tally.skipped++
      return yield* ctx.emit({ _tag: "Skipped", source: item.source, documentId: item.documentId })
    }
    const prepared = yield* Stages.extract(ctx.upload, ctx.uploadOptions, x, true).pipe(Effect.withSpan("Ingest.extract"))
    const n = yield* ctx.writer.submit(prepared)
    ctx.tally.ingested++
    ctx.tally.chunks += n
    yield* ctx.emit({ _tag: "Ingested", source: item.source, documentId: item.documentId, chunks: n })
  }).pipe(
    Effect.tapError((e) => reportFailure(ctx, job, e)),
    Effect.withSpan("IngestQueue.job")
  )

/** Counts a failed attempt and emits its `Failed` event: final when permanent or the job's last attempt. */
const reportFailure = (ctx: JobContext, job: Job<JobData>, e: JobFailure): Effect.Effect<void> =>
  Effect.suspend(() => {
    const attempts = Math.max(1, job.opts.attempts ?? 1)
    const attempt = job.attemptsMade + 1
    const permanent = isPermanent(e)
    const final = permanent || attempt >= attempts
    ctx.tally.failed++
    if (final) ctx.tally.failedJobs++
    return ctx.emit({
      _tag: "Failed",
      source: job.data.item.source,
      documentId: job.data.item.documentId,
      error: parseError(formatError(e)),
      permanent,
      final,
      attempt,
      attempts
    })
  })

/**
 * Starts the BullMQ worker that takes the queue's jobs and runs `process` on each (in
 * `runtime`): a failure is thrown as BullMQ's `UnrecoverableError` when permanent (no retries),
 * else as an error BullMQ retries with backoff. `onDrained` runs when the queue runs dry. When
 * the scope closes, the worker finishes the jobs in hand (their batches are written by the
 * batcher, which is still running) and closes.
 */
const startBullWorker = (
  q: WorkerQueue,
  options: WorkerOptions,
  runtime: Runtime.Runtime<never>,
  process: (job: Job<JobData>) => Effect.Effect<void, JobFailure>,
  onDrained: () => void,
  errors: WorkerErrors
): Effect.Effect<BullWorker<JobData>, QueueError, Scope.Scope> =>
  Effect.gen(function*() {
    const lockDuration = Math.max(1000, options.lockDuration ?? 30_000)
    const bullWorker = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const w = new q.bull.Worker<JobData>(
          queueName(q.collection),
          async (job) => {
            const exit = await Runtime.runPromiseExit(runtime)(process(job))
            if (exit._tag === "Failure") {
              const failure = Option.getOrUndefined(Cause.failureOption(exit.cause))
              if (failure === undefined) throw new Error("Defect: the job ended unexpectedly")
              throw isPermanent(failure) ? new q.bull.UnrecoverableError(formatError(failure)) : new Error(formatError(failure))
            }
          },
          {
            connection: { ...q.conn.options, maxRetriesPerRequest: null },
            prefix: q.prefix,
            concurrency: Math.max(1, options.concurrency ?? 64),
            lockDuration,
            stalledInterval: lockDuration,
            maxStalledCount: 3
          }
        )
        w.on("error", errors.listener(w))
        w.on("drained", onDrained)
        return w
      }),
      (w) => Effect.promise(() => (errors.closing(), w.close().catch(() => undefined)))
    )
    yield* operation("starting the worker", () => bullWorker.waitUntilReady())
    return bullWorker
  })

/**
 * The end of an `untilEmpty` worker: polls until the queue holds no waiting, delayed or running
 * job (failing with `queue_lost` when its identity is gone: a Redis that came back empty is not
 * a queue run dry), closes the BullMQ worker, waits for the upkeep the queue running dry started,
 * and runs the last upkeep.
 */
const drain = (
  q: WorkerQueue,
  bullWorker: BullWorker<JobData>,
  upkeeps: FiberSet.FiberSet<void, never>,
  writer: Writer,
  errors: WorkerErrors
): Effect.Effect<void, QueueError | VectorStoreError> =>
  Effect.gen(function*() {
    const open = Effect.zipRight(
      Effect.filterOrFail(q.identityPresent, (present) => present, () => q.queueLost),
      operation("counting jobs", () => q.queue.getJobCounts("waiting", "active", "delayed", "prioritized", "paused", "waiting-children"))
    ).pipe(Effect.map((c) => Object.values(c).reduce((a, b) => a + b, 0)))
    yield* open.pipe(Effect.repeat({ schedule: Schedule.spaced("300 millis"), until: (n) => n === 0 }))
    yield* Effect.promise(() => (errors.closing(), bullWorker.close()))
    yield* FiberSet.awaitEmpty(upkeeps)
    yield* writer.upkeep
  })

/**
 * Runs a worker on a collection's queue until interrupted (or, with `untilEmpty`, until the queue
 * is empty), then closes it gracefully: the jobs in hand are finished (their batch written)
 * before it returns. Needs `Upload` and the `VectorStore`; `Web` when present (URL jobs).
 *
 * @since 0.1.0
 * @category utils
 */
export const worker = (
  config: QueueConfig,
  options: WorkerOptions
): Effect.Effect<WorkerSummary, QueueError | RagError.MissingPackage | VectorStoreError | RagError.ApiError, Upload.Upload | VectorStore> =>
  Effect.scoped(Effect.gen(function*() {
    const started = Date.now()
    const emit = options.onEvent ?? (() => Effect.void)
    const q = yield* claimQueue(config, options)
    const errors = yield* workerErrors(q.conn.display, emit)
    const lost = yield* superviseConnection(q, emit, errors.restored)
    const tally = newTally()
    const sink = yield* openSink(q, options, tally)
    const writer = yield* startWriter(sink, options)
    const ctx: JobContext = {
      upload: yield* Upload.Upload,
      web: yield* Effect.serviceOption(Web.Web),
      emit,
      fingerprint: options.fingerprint ?? "v1",
      uploadOptions: options.upload ?? { enable_ocr: true },
      state: sink.state,
      writer,
      tally
    }
    // Upkeep started by the queue running dry: its fibers are awaited before an `untilEmpty`
    // worker returns, and interrupted when the worker stops (the writer lock is released
    // either way; a fiber left running at exit would hold it until it expires).
    const upkeeps = yield* FiberSet.make<void, never>()
    const runUpkeep = yield* FiberSet.runtime(upkeeps)<never>()
    const runtime = yield* Effect.runtime<never>()
    const bullWorker = yield* startBullWorker(q, options, runtime, (job) => processJob(ctx, job), () => void runUpkeep(Effect.ignore(writer.upkeep)), errors)
    // the first to end ends the worker: the drain, Redis back without the queue, BullMQ giving up
    yield* Effect.raceFirst(
      options.untilEmpty === true ? drain(q, bullWorker, upkeeps, writer, errors) : Effect.never,
      Effect.raceFirst(Deferred.await(lost), Deferred.await(errors.gaveUp))
    )
    return {
      collection: options.collection,
      ingested: tally.ingested,
      skipped: tally.skipped,
      failed: tally.failed,
      failedJobs: tally.failedJobs,
      chunks: tally.chunks,
      batches: tally.batches,
      writes: tally.writes,
      durationMs: Date.now() - started,
      writeMs: Math.round(tally.writeMs),
      lockWaitMs: tally.lockWaitMs
    }
  })).pipe(Effect.withSpan("IngestQueue.worker", { attributes: { collection: options.collection } }))
