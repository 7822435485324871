/**
 * The crawl and batch jobs of the local web engine, and where their pages live.
 *
 * A job's pages never stay in the heap: each page is serialised (JSON) when it is scraped and
 * written to the job's spill file, one file per job in a folder that the engine's scope owns
 * (created when the engine starts, removed with everything in it when its scope closes). The
 * job keeps only an index: per page its offset and length in that file. A status request reads
 * back the pages of one batch, a batch bounded by count (`pageSize`) and by bytes
 * (`pageBytes`, the sum of the pages' serialised lengths), so what one status response holds
 * does not depend on what the site serves.
 *
 * Writes are positional: a page's place in the file is reserved when it is recorded and
 * written at once, so concurrent pages never wait for each other. A page is visible once its
 * slot and every slot before it are written (a batch scrape's slots are the positions of its
 * URLs, so its pages come in request order).
 *
 * Cancelling a job and its expiry free it: its index is dropped and its file deleted.
 */
import { Deferred, Effect, type Fiber } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { type FileHandle, open, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Web from "../../../api/Web.js"

// =============================================================================
// Jobs
// =============================================================================

/** Where a written page is in its job's spill file. */
interface PageRef {
  readonly offset: number
  readonly length: number
}

/** A job: its state and the index of its spilled pages. */
export interface Job {
  readonly id: string
  readonly url: string
  status: Web.CrawlStatus
  total: number
  completed: number
  error: string | undefined
  expiresAt: number
  finished: boolean
  fiber: Fiber.RuntimeFiber<void, never> | undefined
  readonly done: Deferred.Deferred<void>
  /** The spill file. */
  readonly file: string
  /** Open for writing while the job runs. */
  handle: FileHandle | undefined
  /** Per slot: where its page is, once written. */
  refs: Array<PageRef | undefined>
  /** Slots reserved so far (crawl pages take the next one). */
  reserved: number
  /** Slots visible to status requests: the written prefix. */
  ready: number
  /** Bytes of the spill file reserved so far. */
  bytes: number
  /** Set when cancel or expiry released the job's pages. */
  freed: boolean
}

/** One batch of a job's pages, read back, and whether more follow it. */
export interface Batch {
  readonly pages: ReadonlyArray<Web.CrawlPage>
  /** The slot after this batch when more pages are visible, else undefined. */
  readonly next: number | undefined
}

/** A page whose serialised form is larger than one batch may be. */
export class PageTooLarge {
  readonly _tag = "PageTooLarge"
  constructor(readonly bytes: number, readonly limit: number) {}
}

/** A page that could not be written to the spill file (disk full, folder removed). */
export class SpillFailed {
  readonly _tag = "SpillFailed"
  constructor(readonly message: string) {}
}

// =============================================================================
// Store
// =============================================================================

/** Options of the job store. */
export interface StoreOptions {
  /** Folder in which the engine's spill folder is made (default the OS temp folder). */
  readonly dir: string | undefined
  /** Pages per batch. */
  readonly pageSize: number
  /** Bytes of serialised pages per batch; a single page over it is refused. */
  readonly pageBytes: number
}

/** The job store: jobs by id, their spill files, and the batches read back. */
export interface Store {
  /** The engine's spill folder. */
  readonly dir: string
  /** Every job (running and finished), by id. */
  readonly jobs: Map<string, Job>
  /** A new job, registered, its spill file open. */
  readonly create: (url: string, expiresAt: number) => Effect.Effect<Job>
  /**
   * Records a page in `slot` (default: the next slot): serialised and written to the job's
   * file. A page whose serialised form is over `pageBytes` is not written: the call fails with
   * {@link PageTooLarge} and the caller records a failed page instead. A write that fails is
   * {@link SpillFailed}.
   */
  readonly record: (job: Job, page: Web.CrawlPage, slot?: number) => Effect.Effect<void, PageTooLarge | SpillFailed>
  /** Reserves `n` slots (a batch scrape's URLs), filled by `record` with their slot. */
  readonly reserve: (job: Job, n: number) => void
  /** Closes the job's file for writing (the job has ended). */
  readonly seal: (job: Job) => Effect.Effect<void>
  /** The batch of visible pages starting at slot `skip`. */
  readonly read: (job: Job, skip: number) => Effect.Effect<Batch, Error>
  /** Drops the job's pages: index cleared, file closed and deleted. The job record stays. */
  readonly free: (job: Job) => Effect.Effect<void>
  /** Forgets a job (after {@link Store.free}). */
  readonly remove: (job: Job) => Effect.Effect<void>
}

const closeQuietly = (handle: FileHandle | undefined) =>
  handle === undefined ? Effect.void : Effect.promise(() => handle.close().catch(() => undefined))

/** A new job, its spill file in `dir` open. */
const createJob = (dir: string, url: string, expiresAt: number): Effect.Effect<Job> =>
  Effect.gen(function*() {
    const id = crypto.randomUUID()
    const file = join(dir, `${id}.jsonl`)
    const handle = yield* Effect.promise(() => open(file, "w+"))
    return {
      id,
      url,
      status: "scraping",
      total: 0,
      completed: 0,
      error: undefined,
      expiresAt,
      finished: false,
      fiber: undefined,
      done: yield* Deferred.make<void>(),
      file,
      handle,
      refs: [],
      reserved: 0,
      ready: 0,
      bytes: 0,
      freed: false
    } satisfies Job as Job
  })

/** Moves the visible prefix over the slots written. */
const advance = (job: Job) => {
  while (job.ready < job.reserved && job.refs[job.ready] !== undefined) job.ready++
}

/** {@link Store.record} for the store of `dir`. */
const recordPage = (o: StoreOptions, dir: string) =>
(job: Job, page: Web.CrawlPage, slot?: number): Effect.Effect<void, PageTooLarge | SpillFailed> =>
  Effect.suspend((): Effect.Effect<void, PageTooLarge | SpillFailed> => {
    if (job.freed || job.handle === undefined) return Effect.void
    const data = Buffer.from(`${JSON.stringify(page)}\n`, "utf8")
    // the newline is not part of the page: one batch holds pages, not lines
    const length = data.byteLength - 1
    if (length > o.pageBytes) return Effect.fail(new PageTooLarge(length, o.pageBytes))
    const at = slot ?? job.reserved++
    const offset = job.bytes
    job.bytes += data.byteLength
    const handle = job.handle
    return Effect.tryPromise({
      try: () => handle.write(data, 0, data.byteLength, offset),
      catch: (e) => new SpillFailed(`cannot write a page of crawl job ${job.id} to ${dir}: ${String(e)}`)
    }).pipe(
      // a job freed while its page was written has no pages to show
      Effect.catchAll((e) => (job.freed ? Effect.void : Effect.fail(e))),
      Effect.zipRight(Effect.sync(() => {
        if (job.freed) return
        job.refs[at] = { offset, length }
        advance(job)
      }))
    )
  })

/** Closes the job's file for writing. */
const seal = (job: Job) =>
  Effect.suspend(() => {
    const handle = job.handle
    job.handle = undefined
    return closeQuietly(handle)
  })

/** The slots of the batch from `skip` within `pageSize` and `pageBytes`, and the slot after it. */
const batchRefs = (o: StoreOptions, job: Job, skip: number, ready: number) => {
  const refs: Array<PageRef> = []
  let bytes = 0
  let end = skip
  while (end < ready && refs.length < o.pageSize) {
    const ref = job.refs[end]!
    // a batch holds at least one page (none is over pageBytes: `record` refused it)
    if (refs.length > 0 && bytes + ref.length > o.pageBytes) break
    refs.push(ref)
    bytes += ref.length
    end++
  }
  return { refs, end }
}

/** Reads pages back from a spill file. */
const readPages = async (job: Job, refs: ReadonlyArray<PageRef>): Promise<Array<Web.CrawlPage>> => {
  const handle = await open(job.file, "r")
  try {
    const out: Array<Web.CrawlPage> = []
    for (const ref of refs) {
      const buffer = Buffer.allocUnsafe(ref.length)
      const { bytesRead } = await handle.read(buffer, 0, ref.length, ref.offset)
      if (bytesRead !== ref.length) throw new Error(`short read of crawl job ${job.id}`)
      out.push(JSON.parse(buffer.toString("utf8")) as Web.CrawlPage)
    }
    return out
  } finally {
    await handle.close()
  }
}

/** {@link Store.read} with the batch bounds of `o`. */
const readBatch = (o: StoreOptions) => (job: Job, skip: number): Effect.Effect<Batch, Error> =>
  Effect.gen(function*() {
    // the pages visible now: one that becomes visible while this batch is read back belongs
    // to the next status request, not to this batch's `next`
    const ready = job.ready
    const { end, refs } = batchRefs(o, job, skip, ready)
    if (refs.length === 0 || job.freed) return { pages: [], next: undefined }
    const pages = yield* Effect.tryPromise({
      try: () => readPages(job, refs),
      catch: (e) => (e instanceof Error ? e : new Error(String(e)))
    }).pipe(
      // cancelled or expired while being read: no pages
      Effect.catchAll((e) => (job.freed ? Effect.succeed([]) : Effect.fail(e)))
    )
    return { pages, next: end < ready ? end : undefined }
  })

/** Drops the job's pages: index cleared, file closed and deleted. */
const free = (job: Job) =>
  Effect.suspend(() => {
    job.freed = true
    job.refs = []
    job.ready = 0
    job.reserved = 0
    job.bytes = 0
    return Effect.zipRight(seal(job), Effect.promise(() => rm(job.file, { force: true }).catch(() => undefined)))
  })

/**
 * Makes the store: its spill folder is created now and removed (with every job's file) when
 * the scope closes.
 */
export const makeStore = (o: StoreOptions) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(o.dir ?? tmpdir(), "effect-rag-crawl-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const jobs = new Map<string, Job>()
    const create = (url: string, expiresAt: number) =>
      Effect.tap(createJob(dir, url, expiresAt), (job) => Effect.sync(() => jobs.set(job.id, job)))
    const reserve = (job: Job, n: number) => {
      job.reserved += n
    }
    const remove = (job: Job) =>
      Effect.zipRight(free(job), Effect.sync(() => {
        jobs.delete(job.id)
      }))
    return {
      dir,
      jobs,
      create,
      record: recordPage(o, dir),
      reserve,
      seal,
      read: readBatch(o),
      free,
      remove
    } satisfies Store as Store
  })
