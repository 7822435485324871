/**
 * Jobs and cursors: the crawl and batch jobs of one engine over its job store ({@link Store}):
 * a job started as a background fiber in the engine's scope, its pages recorded (a page over
 * `pageBytes` recorded as a failed page), its status read back a batch at a time behind `next`
 * cursors, cancel, expiry (swept every minute and on every call) and the count of running jobs.
 */
import { Cause, Chunk, Clock, Deferred, Effect, Exit, Fiber, Option, Schedule, type Scope, Stream } from "effect"
import * as Web from "../../../api/Web.js"
import type { WebOperation } from "../../../api/WebRoutes.js"
import * as RagError from "../../../RagError.js"
import { nextCursor, parseCursor } from "./cursor.js"
import { endpoint, failedPage, PageFailure } from "./errors.js"
import type { Job, Store } from "./jobs.js"
import type { Settings } from "./settings.js"

/** The jobs of one engine. */
export interface Jobs {
  /** Drops finished jobs past their expiry, with their spilled pages. */
  readonly sweep: Effect.Effect<void>
  /** A new job record, registered. */
  readonly newJob: (url: string) => Effect.Effect<Job>
  /** Runs a job's work in the background (in the engine's scope); its end sets the job's status. */
  readonly runJob: (job: Job, work: Effect.Effect<void, string>) => Effect.Effect<void>
  /**
   * Records a page of a job (in `slot`, else the next one): written to the job's spill file.
   * A page over `pageBytes` is recorded as a failed page instead (the result is then false);
   * a page that cannot be written fails the job.
   */
  readonly recordPage: (job: Job, page: Web.CrawlPage, slot?: number) => Effect.Effect<boolean, string>
  readonly crawlStatus: (idOrNext: string) => Effect.Effect<Web.CrawlJob, RagError.ApiError>
  readonly crawlPages: (id: string) => Stream.Stream<Web.CrawlPage, RagError.ApiError | RagError.TaskFailed>
  readonly waitForCrawl: (
    id: string,
    waitOptions?: Web.WaitOptions
  ) => Effect.Effect<Web.CrawlJob, RagError.ApiError | RagError.TaskFailed>
  readonly cancel: (id: string) => Effect.Effect<Web.CancelResponse, RagError.ApiError>
  /** How many jobs are running now. */
  readonly running: Effect.Effect<number>
}

/** Sets a job's end state from the exit of its work, seals its file, and completes `done`. */
const finish = (s: Settings, store: Store, job: Job) => (exit: Exit.Exit<void, string>) =>
  Effect.flatMap(Clock.currentTimeMillis, (end) =>
    Effect.suspend(() => {
      job.finished = true
      job.expiresAt = end + s.retentionMs
      if (Exit.isSuccess(exit)) {
        job.status = "completed"
      } else if (Exit.isInterrupted(exit)) {
        job.status = "cancelled"
      } else {
        job.status = "failed"
        job.error = Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.pretty(exit.cause))
      }
      // a cancelled job's pages are released at once; the others' when they expire
      return store.seal(job).pipe(
        Effect.zipRight(job.status === "cancelled" ? store.free(job) : Effect.void),
        Effect.zipRight(Deferred.succeed(job.done, undefined))
      )
    }))

/** Records a page; one over `pageBytes` becomes a failed page saying so (the result is false). */
const recordPageIn = (store: Store) => (job: Job, page: Web.CrawlPage, slot?: number): Effect.Effect<boolean, string> =>
  store.record(job, page, slot).pipe(
    Effect.as(true),
    Effect.catchAll((e) => {
      if (e._tag === "SpillFailed") return Effect.fail(e.message)
      const sourceURL = page.metadata.sourceURL ?? ""
      const tooLarge = new RagError.PayloadTooLarge({
        endpoint: `GET ${sourceURL}`,
        message: `page_too_large: the page is ${e.bytes} bytes as JSON, over the ${e.limit} bytes of one crawl status batch (pageBytes, the LocalWeb option)`,
        code: "page_too_large",
        limit: e.limit
      })
      return store.record(
        job,
        failedPage(sourceURL, new PageFailure(tooLarge, page.metadata.statusCode, page.metadata.url ?? sourceURL)),
        slot
      ).pipe(
        Effect.as(false),
        Effect.catchAll((e2) => Effect.fail(e2._tag === "SpillFailed" ? e2.message : "a failed page is too large"))
      )
    })
  )

/** The job record with the batch of pages from `skip`, read back from the spill file. */
const recordOf = (store: Store, job: Job, skip: number): Effect.Effect<Web.CrawlJob, RagError.ApiError> =>
  Effect.suspend(() => {
    // one moment's view of the job: its state, then (in `read`, before any I/O) the pages
    // visible; a job that ends while the pages are read back is not reported ended with
    // only part of its pages and a `next`
    const { status, total, completed, expiresAt, error } = job
    return store.read(job, skip).pipe(
      Effect.mapError((e) =>
        new RagError.ServerError({
          endpoint: endpoint("crawlStatus"),
          message: `cannot read the pages of crawl job ${job.id}: ${e.message}`,
          status: 500
        })
      ),
      Effect.map((batch) => ({
        status,
        total,
        completed,
        creditsUsed: completed,
        expiresAt: new Date(expiresAt).toISOString(),
        next: batch.next !== undefined ? nextCursor(job.id, batch.next) : null,
        data: batch.pages,
        ...(error !== undefined ? { error } : {})
      }))
    )
  })

/**
 * The jobs of one engine, over its store, their fibers in `scope`. Starts the minute sweep of
 * expired jobs (expired jobs go even when nobody calls the engine).
 */
export const makeJobs = (s: Settings, store: Store, scope: Scope.Scope): Effect.Effect<Jobs> =>
  Effect.gen(function*() {
    const jobs = store.jobs
    const sweep = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.forEach(
        [...jobs.values()].filter((job) => job.finished && job.expiresAt < now),
        store.remove,
        { discard: true }
      ))
    yield* sweep.pipe(Effect.repeat(Schedule.spaced("1 minute")), Effect.interruptible, Effect.forkIn(scope))

    const newJob = (url: string) => Effect.flatMap(Clock.currentTimeMillis, (now) => store.create(url, now + s.retentionMs))

    const runJob = (job: Job, work: Effect.Effect<void, string>) =>
      Effect.gen(function*() {
        job.fiber = yield* work.pipe(
          Effect.onExit(finish(s, store, job)),
          Effect.catchAllCause(() => Effect.void),
          Effect.forkIn(scope)
        )
      })

    const findJob = (op: WebOperation, id: string) =>
      Effect.flatMap(sweep, () => {
        const job = jobs.get(id)
        return job
          ? Effect.succeed(job)
          : Effect.fail(new RagError.NotFound({ endpoint: endpoint(op), message: `no crawl job ${id}` }))
      })

    const crawlStatus = (idOrNext: string): Effect.Effect<Web.CrawlJob, RagError.ApiError> => {
      const { id, skip } = parseCursor(idOrNext)
      return Effect.flatMap(findJob("crawlStatus", id), (job) => recordOf(store, job, skip)).pipe(
        Effect.withSpan("LocalWeb.crawlStatus")
      )
    }

    const waitForCrawl = (id: string, waitOptions?: Web.WaitOptions) =>
      Effect.flatMap(findJob("crawlStatus", id), (job) =>
        Web.pollUntilDone(
          endpoint("crawlStatus"),
          id,
          Effect.zipRight(Deferred.await(job.done), crawlStatus(id)),
          waitOptions
        )).pipe(Effect.withSpan("LocalWeb.waitForCrawl"))

    // as the remote client: the pages of the finished job (a running one is waited for)
    const crawlPages = (id: string): Stream.Stream<Web.CrawlPage, RagError.ApiError | RagError.TaskFailed> =>
      Stream.unwrap(Effect.as(
        waitForCrawl(id),
        Stream.paginateChunkEffect(id, (cursor) =>
          Effect.map(crawlStatus(cursor), (job) => [Chunk.fromIterable(job.data), Option.fromNullable(job.next)] as const))
      )).pipe(Stream.withSpan("LocalWeb.crawlPages"))

    const cancel = (id: string): Effect.Effect<Web.CancelResponse, RagError.ApiError> =>
      Effect.gen(function*() {
        const job = yield* findJob("crawlCancel", id)
        if (job.finished) return { status: job.status, success: job.status === "cancelled" }
        if (job.fiber) yield* Fiber.interrupt(job.fiber)
        yield* Deferred.await(job.done)
        return { status: "cancelled", success: true }
      }).pipe(Effect.withSpan("LocalWeb.cancel"))

    const running = Effect.sync(() => {
      let n = 0
      for (const job of jobs.values()) if (!job.finished) n++
      return n
    })

    return { sweep, newJob, runJob, recordPage: recordPageIn(store), crawlStatus, crawlPages, waitForCrawl, cancel, running }
  })
