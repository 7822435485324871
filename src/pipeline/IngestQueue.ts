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
import type { ConnectionOptions, Job, Queue as BullQueue, RedisClient, Worker as BullWorker } from "bullmq"
import { Chunk as C, Data, Deferred, Duration, Effect, FiberSet, Queue, Redacted, Runtime, Schedule, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { createConnection } from "node:net"
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

/** Where the queue is: a Redis URL (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS). */
export interface QueueConfig {
  /** The Redis URL; it may hold credentials, so it is `Redacted` and never printed. */
  readonly url: Redacted.Redacted<string>
  /** The key prefix in Redis (default `effect-rag`). */
  readonly prefix?: string | undefined
}

/** A queue operation failed: a bad Redis URL, Redis unreachable, or a command that failed. */
export class QueueError extends Data.TaggedError("QueueError")<{
  readonly reason: "invalid_url" | "connection" | "operation"
  /** Never holds the URL's credentials. */
  readonly message: string
}> {}

/** The queue of a collection is named after it. */
const queueName = (collection: string): string => collection

interface Connection {
  readonly options: ConnectionOptions
  /** The URL without credentials, for messages. */
  readonly display: string
}

const connection = (config: QueueConfig): Effect.Effect<Connection, QueueError> =>
  Effect.try({
    try: () => new URL(Redacted.value(config.url)),
    catch: () => new QueueError({ reason: "invalid_url", message: "the queue URL is not a URL (expected redis://host:port)" })
  }).pipe(
    Effect.filterOrFail(
      (u) => u.protocol === "redis:" || u.protocol === "rediss:",
      (u) => new QueueError({ reason: "invalid_url", message: `the queue URL must start with redis:// or rediss://, not ${u.protocol}//` })
    ),
    Effect.map((u) => {
      const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0
      return {
        options: {
          host: u.hostname,
          port: u.port === "" ? 6379 : Number(u.port),
          ...(u.username !== "" ? { username: decodeURIComponent(u.username) } : {}),
          ...(u.password !== "" ? { password: decodeURIComponent(u.password) } : {}),
          ...(Number.isInteger(db) ? { db } : {}),
          ...(u.protocol === "rediss:" ? { tls: {} } : {})
        },
        display: `${u.protocol}//${u.host}${u.pathname.length > 1 ? u.pathname : ""}`
      }
    })
  )

/** Error messages from ioredis may name the host, never the password; strip URL credentials anyway. */
const clean = (e: unknown): string => (e instanceof Error ? e.message : String(e)).replace(/\/\/[^/@\s]*@/g, "//")

const operation = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, QueueError> =>
  Effect.tryPromise({ try: f, catch: (e) => new QueueError({ reason: "operation", message: `${what}: ${clean(e)}` }) })

/** BullMQ, an optional peer dependency: not installed is {@link RagError.MissingPackage} with its install line. */
const loadBull = Optional.load("queue", () => import("bullmq"), (e) => new QueueError({ reason: "operation", message: `cannot load bullmq: ${clean(e)}` }))

const reachable = (conn: Connection): Effect.Effect<void, QueueError> =>
  Effect.async<void, QueueError>((resume) => {
    const options = conn.options as { host: string; port: number }
    const socket = createConnection({ host: options.host, port: options.port })
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

/** Opens a BullMQ queue of a collection (closed with the scope); fails when Redis does not answer within 10 s. */
const openQueue = (config: QueueConfig, collection: string) =>
  Effect.gen(function*() {
    // the package first: one that is not installed says so before any connection is tried
    const { Queue: Q } = yield* loadBull
    const conn = yield* connection(config)
    // a TCP connection first: BullMQ's client retries an unreachable server for ever
    yield* reachable(conn)
    const queue = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const q = new Q(queueName(collection), { connection: conn.options, prefix: config.prefix ?? "effect-rag" })
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
    return { queue, conn }
  })

// =============================================================================
// Jobs
// =============================================================================

/** The data of a job: the document to ingest. */
interface JobData {
  readonly item: Stages.Item
}

/** The job id of a document (BullMQ ids cannot hold `:`). */
export const jobId = (documentId: string): string => encodeURIComponent(documentId)

/** A failed job's error as stored: `Tag (reason): message`. */
const formatError = (e: { readonly _tag: string; readonly message: string; readonly reason?: unknown }): string =>
  `${e._tag}${typeof e.reason === "string" ? ` (${e.reason})` : ""}: ${e.message}`

/** The typed error of a failed job, parsed back from its stored reason. */
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

/** Settings of {@link enqueue}. */
export interface EnqueueOptions {
  /** Tries per job before it lands in the failed set (default 3). */
  readonly attempts?: number | undefined
  /** First retry delay in ms, doubled on each retry (default 1000). */
  readonly backoff?: number | undefined
  /** Jobs per Redis round trip (default 500). */
  readonly batch?: number | undefined
  /** Called after each round trip with the documents submitted so far. */
  readonly onProgress?: ((submitted: number) => Effect.Effect<void>) | undefined
}

/** What {@link enqueue} did. */
export interface EnqueueSummary {
  readonly collection: string
  /** Documents found (after dedupe) and submitted to the queue. */
  readonly documents: number
  /** Jobs the queue did not hold before (the growth of its job count; 0 on a rerun). */
  readonly enqueued: number
  /** Sources that could not be enumerated (a missing path, a failed crawl). */
  readonly failures: ReadonlyArray<Failure>
}

const allStates = ["waiting", "active", "delayed", "prioritized", "waiting-children", "paused", "completed", "failed"] as const

const totalJobs = (queue: BullQueue) =>
  Effect.map(operation("counting jobs", () => queue.getJobCounts(...allStates)), (c) => Object.values(c).reduce((a, b) => a + b, 0))

/**
 * Enumerates the sources and adds one job per document to the collection's queue. `prune` is not
 * a queue operation (run `Ingest.run` with `prune` for that). URLs and sites need the `Web`
 * service when present: a site is crawled here and its pages travel in the jobs.
 */
export const enqueue = (
  request: Omit<Request, "prune">,
  config: QueueConfig,
  options: EnqueueOptions = {}
): Effect.Effect<EnqueueSummary, QueueError | RagError.MissingPackage> =>
  Effect.scoped(Effect.gen(function*() {
    const { queue } = yield* openQueue(config, request.collection)
    const web = yield* Effect.serviceOption(Web.Web)
    const failures: Array<Failure> = []
    const seen = new Set<string>()
    const before = yield* totalJobs(queue)
    const attempts = Math.max(1, options.attempts ?? 3)
    const backoff = Math.max(0, options.backoff ?? 1000)
    let submitted = 0
    yield* Stages.enumerate(request.sources, { include: request.include ?? [], exclude: request.exclude ?? [] }, web, {
      plan: () => Effect.void,
      fail: (source, documentId, error) => Effect.sync(() => void failures.push({ source, documentId, error })),
      scope: () => {},
      broken: () => {}
    }).pipe(
      Stream.filter((item) => {
        if (seen.has(item.documentId)) return false
        seen.add(item.documentId)
        return true
      }),
      Stream.grouped(Math.max(1, options.batch ?? 500)),
      Stream.runForEach((group) => {
        const jobs = C.toReadonlyArray(group).map((item) => ({
          name: "document",
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
          Effect.zipRight(Effect.suspend(() => {
            submitted += jobs.length
            return options.onProgress?.(submitted) ?? Effect.void
          }))
        )
      })
    )
    const after = yield* totalJobs(queue)
    return { collection: request.collection, documents: submitted, enqueued: Math.max(0, after - before), failures }
  })).pipe(Effect.withSpan("IngestQueue.enqueue", { attributes: { collection: request.collection } }))

// =============================================================================
// Status
// =============================================================================

/** A job in the failed set. */
export interface FailedJob {
  readonly documentId: string
  readonly source: string
  readonly attempts: number
  readonly error: JobError
}

/** The state of a collection's queue. */
export interface QueueStatus {
  readonly collection: string
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

/** Counts the jobs of a collection's queue and lists its failed jobs with their typed errors. */
export const status = (
  config: QueueConfig,
  collection: string,
  options: { readonly limit?: number | undefined } = {}
): Effect.Effect<QueueStatus, QueueError | RagError.MissingPackage> =>
  Effect.scoped(Effect.gen(function*() {
    const { queue } = yield* openQueue(config, collection)
    const c = yield* operation("counting jobs", () => queue.getJobCounts(...allStates))
    const jobs = yield* operation("reading failed jobs", () => queue.getFailed(0, Math.max(1, options.limit ?? 100) - 1))
    return {
      collection,
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

/** Settings of a {@link worker}. */
export interface WorkerOptions {
  /** The collection (its queue and its table). */
  readonly collection: string
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

/** What a worker did with one job. */
export type WorkerEvent =
  | { readonly _tag: "Ingested"; readonly source: string; readonly documentId: string; readonly chunks: number }
  | { readonly _tag: "Skipped"; readonly source: string; readonly documentId: string }
  /** One attempt failed (BullMQ retries it while attempts are left). */
  | { readonly _tag: "Failed"; readonly source: string; readonly documentId: string; readonly error: JobError }

/** What a worker did until it stopped. */
export interface WorkerSummary {
  readonly collection: string
  /** Jobs written (documents new or changed). */
  readonly ingested: number
  /** Jobs whose document was stored complete already. */
  readonly skipped: number
  /** Job attempts that failed. */
  readonly failed: number
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

interface Pending {
  readonly prepared: Stages.Prepared
  readonly done: Deferred.Deferred<number, DocumentError | VectorStoreError | QueueError>
}

/**
 * Runs a worker on a collection's queue until interrupted (or, with `untilEmpty`, until the queue
 * is empty), then closes it gracefully: the jobs in hand are finished (their batch written)
 * before it returns. Needs `Upload` and the `VectorStore`; `Web` when present (URL jobs).
 */
export const worker = (
  config: QueueConfig,
  options: WorkerOptions
): Effect.Effect<WorkerSummary, QueueError | RagError.MissingPackage | VectorStoreError | RagError.ApiError, Upload.Upload | VectorStore> =>
  Effect.scoped(Effect.gen(function*() {
    const started = Date.now()
    const store = yield* VectorStore
    const upload = yield* Upload.Upload
    const web = yield* Effect.serviceOption(Web.Web)
    const emit = options.onEvent ?? (() => Effect.void)
    const collection = options.collection
    const fingerprint = options.fingerprint ?? "v1"
    const uploadOptions = options.upload ?? { enable_ocr: true }
    const lockDuration = Math.max(1000, options.lockDuration ?? 30_000)
    const { conn, queue } = yield* openQueue(config, collection)
    const client = yield* operation("connecting", () => queue.client)
    const prefix = config.prefix ?? "effect-rag"
    const withWriter = writerLock(client, `${prefix}:${queueName(collection)}:writer`, Math.max(500, options.writerLockMs ?? 10_000))

    let ingested = 0
    let skipped = 0
    let failed = 0
    let chunks = 0
    let batches = 0
    let writes = 0
    let writeMs = 0
    let lockWaitMs = 0
    let dirty = false
    const timed = <A, E>(write: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.map(Effect.timed(write), ([d, a]) => {
        writeMs += Duration.toMillis(d)
        return a
      })

    // --- the collection (created under the writer lock: several workers start at once) ----
    const embedding = yield* Stages.probeEmbedding(options.embedder)
    const target = yield* withWriter(Stages.open(store, collection, embedding))
    const state = yield* State.load(target.main, target.manifest)

    // --- the write batcher ------------------------------------------------------------
    const pending = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    const writeBatch = (entries: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const embedded = yield* Effect.either(Stages.embed(options.embedder, embedding, collection, entries.map((e) => e.prepared)))
        if (embedded._tag === "Left") {
          yield* Effect.forEach(entries, (e) => Deferred.fail(e.done, embedded.left), { discard: true })
          return
        }
        const waitStart = Date.now()
        const written = yield* Effect.either(withWriter(Effect.suspend(() => {
          lockWaitMs += Date.now() - waitStart
          return Stages.write(target, embedded.right, timed)
        })))
        if (written._tag === "Left") {
          yield* Effect.forEach(entries, (e) => Deferred.fail(e.done, written.left), { discard: true })
          return
        }
        batches++
        writes += written.right.writes
        dirty = true
        yield* Effect.forEach(entries, (e) => Deferred.succeed(e.done, e.prepared.chunks.length), { discard: true })
      }).pipe(Effect.withSpan("Ingest.write", { attributes: { "effect_rag.documents": entries.length } }))
    yield* Stream.fromQueue(pending).pipe(
      Stream.groupedWithin(Math.max(1, options.batchDocuments ?? 256), Math.max(1, options.batchWindow ?? 200)),
      Stream.mapEffect((g) => writeBatch(C.toReadonlyArray(g))),
      Stream.runDrain,
      Effect.forkScoped
    )

    /** Index upkeep once the queue ran dry (under the writer lock), when this worker wrote anything since the last. */
    const upkeep = Effect.suspend(() => {
      if (!dirty) return Effect.void
      dirty = false
      return withWriter(timed(target.main.optimize())).pipe(Effect.tap(() => Effect.sync(() => void writes++)))
    })

    // --- one job ----------------------------------------------------------------------
    const processJob = (job: Job<JobData>) =>
      Effect.gen(function*() {
        const item = job.data.item
        const loaded = yield* Stages.load(item, web).pipe(Effect.withSpan("Ingest.load"))
        const x = Stages.hash(fingerprint, item, loaded)
        // a redo (another attempt, a stalled job) always checks for other generations
        if (job.attemptsStarted <= 1 && State.isComplete(state, item.documentId, x.hash)) {
          skipped++
          yield* emit({ _tag: "Skipped", source: item.source, documentId: item.documentId })
          return
        }
        const prepared = yield* Stages.extract(upload, uploadOptions, x, true).pipe(Effect.withSpan("Ingest.extract"))
        const done = yield* Deferred.make<number, DocumentError | VectorStoreError | QueueError>()
        yield* Queue.offer(pending, { prepared, done })
        const n = yield* Deferred.await(done)
        ingested++
        chunks += n
        yield* emit({ _tag: "Ingested", source: item.source, documentId: item.documentId, chunks: n })
      }).pipe(
        Effect.tapError((e) =>
          Effect.suspend(() => {
            failed++
            return emit({ _tag: "Failed", source: job.data.item.source, documentId: job.data.item.documentId, error: parseError(formatError(e)) })
          })
        ),
        Effect.withSpan("IngestQueue.job")
      )

    const runtime = yield* Effect.runtime<never>()
    // Upkeep started by the queue running dry: its fibers are awaited before an `untilEmpty`
    // worker returns, and interrupted when the worker stops (the writer lock is released
    // either way; a fiber left running at exit would hold it until it expires).
    const upkeeps = yield* FiberSet.make<void, never>()
    const runUpkeep = yield* FiberSet.runtime(upkeeps)<never>()
    const { Worker: W } = yield* loadBull
    const bull: BullWorker<JobData> = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const w = new W<JobData>(
          queueName(collection),
          async (job) => {
            const exit = await Runtime.runPromiseExit(runtime)(processJob(job))
            if (exit._tag === "Failure") {
              const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
              throw new Error(failure !== undefined ? formatError(failure) : "Defect: the job ended unexpectedly")
            }
          },
          {
            connection: conn.options,
            prefix,
            concurrency: Math.max(1, options.concurrency ?? 64),
            lockDuration,
            stalledInterval: lockDuration,
            maxStalledCount: 3
          }
        )
        w.on("error", () => {}) // connection hiccups: ioredis reconnects
        w.on("drained", () => void runUpkeep(Effect.ignore(upkeep)))
        return w
      }),
      // finish the jobs in hand (their batches are written by the batcher, still running)
      (w) => Effect.promise(() => w.close().catch(() => undefined))
    )
    yield* operation("starting the worker", () => bull.waitUntilReady())

    if (options.untilEmpty === true) {
      const open = operation("counting jobs", () => queue.getJobCounts("waiting", "active", "delayed", "prioritized", "paused", "waiting-children")).pipe(
        Effect.map((c) => Object.values(c).reduce((a, b) => a + b, 0))
      )
      yield* open.pipe(Effect.repeat({ schedule: Schedule.spaced("300 millis"), until: (n) => n === 0 }))
      yield* Effect.promise(() => bull.close())
      yield* FiberSet.awaitEmpty(upkeeps)
      yield* upkeep
    } else {
      yield* Effect.never
    }
    return {
      collection,
      ingested,
      skipped,
      failed,
      chunks,
      batches,
      writes,
      durationMs: Date.now() - started,
      writeMs: Math.round(writeMs),
      lockWaitMs
    }
  })).pipe(Effect.withSpan("IngestQueue.worker", { attributes: { collection: options.collection } }))
