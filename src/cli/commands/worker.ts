/**
 * `effect-rag worker --queue redis://… [--db DIR|URI] [--collection NAME] [--embedder NAME]
 * [--concurrency N] [--batch N] [--lock-duration MS] [--no-ocr] [--extract-timeout-ms MS] [--allow-private] [--until-empty] [--json]
 * [--config FILE]`:
 * a queue worker of `pipeline/IngestQueue.ts`. It takes the jobs `ingest --queue` enqueued for
 * the collection, loads, extracts, chunks and embeds the documents, and writes them into the
 * collection in batches (one writer per collection at a time).
 *
 * - Runs until SIGINT / SIGTERM (exit 130 / 143): the jobs in hand are finished first; a job the
 *   process could not finish within the stop grace (10 s) returns to the queue (BullMQ's
 *   stalled-job check) and another worker does it. With `--until-empty` it stops once the queue holds no
 *   waiting, delayed or running job: exit 0 when every job it ran succeeded, 3 when any failed for good.
 * - A queue belongs to one store: the first producer (with `--db`) or worker records it, and a
 *   worker with another `--db` exits 2 before it takes a job or creates anything. Redis is
 *   checked before the `--db` folder is prepared.
 * - One line per document on stderr (`ingested` / `unchanged` / `failed` with the typed error and
 *   whether it is retried), one when the connection to Redis is lost and when it is back, one per
 *   queue error BullMQ reports (`queue error: QueueError (connection): Redis at HOST: …`, the same
 *   error once while it repeats) (JSON lines with `--json`); the summary on stdout (JSON with
 *   `--json`). Redis back without the queue (restarted empty), or BullMQ's worker stopping after
 *   an error, ends the worker with exit 1 and that error.
 * - The queue URL comes from `--queue` or `$EFFECT_RAG_QUEUE`; it is never printed.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { WorkerEvent } from "../../pipeline/IngestQueue.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

/** What the worker's lines counted so far, and the last queue error since the connection was last back. */
interface Seen {
  ingested: number
  skipped: number
  failed: number
  lastError: string | undefined
}

const line = (s: string) => Effect.sync(() => void process.stderr.write(`${s}\n`))
const jsonLine = (o: object) => line(JSON.stringify(o))

/** The worker's events as lines on stderr (JSON lines with `--json`), counted in `seen`. */
const reporter = (json: boolean, seen: Seen) => (e: WorkerEvent): Effect.Effect<void> => {
  switch (e._tag) {
    case "Ingested":
      seen.ingested++
      return json ? Effect.void : line(`ingested ${Shared.printable(e.source)} (${e.chunks} chunks)`)
    case "Skipped":
      seen.skipped++
      return json ? Effect.void : line(`unchanged ${Shared.printable(e.source)}`)
    case "Failed": {
      seen.failed++
      const what = e.permanent ? "permanent, not retried"
        : e.final ? `attempt ${e.attempt} of ${e.attempts}, no attempts left`
        : `attempt ${e.attempt} of ${e.attempts}, retried`
      return line(`failed ${Shared.printable(e.source)}: ${e.error._tag}${e.error.reason !== undefined ? ` (${e.error.reason})` : ""}: ${Shared.forCli(e.error.message)} (${what})`)
    }
    case "ConnectionLost":
      return json
        ? jsonLine({ event: "connection_lost", queue: e.queue, message: e.message, at: new Date().toISOString() })
        : line(`lost the connection to Redis at ${e.queue} (${e.message}); reconnecting: the jobs in hand go on, their results wait`)
    case "ConnectionRestored":
      seen.lastError = undefined
      return json
        ? jsonLine({ event: "connection_restored", queue: e.queue, downMs: e.downMs, at: new Date().toISOString() })
        : line(`the connection to Redis at ${e.queue} is back after ${(e.downMs / 1000).toFixed(1)} s`)
    case "WorkerError":
      seen.lastError = `QueueError (${e.error.reason}): ${e.error.message}`
      return json
        ? jsonLine({ event: "queue_error", queue: e.queue, error: { _tag: e.error._tag, reason: e.error.reason, message: e.error.message }, at: new Date().toISOString() })
        : line(`queue error: ${Shared.forCli(seen.lastError)}${e.error.reason === "connection" ? " (reconnecting)" : ""}`)
  }
}

/** The `worker` subcommand. */
export const command = Command.make(
  "worker",
  {
    queue: Shared.queue,
    db: Shared.db,
    collection: Shared.collection,
    embedder: Shared.embedder("the same on every worker of a collection"),
    concurrency: Options.integer("concurrency").pipe(
      Options.withPseudoName("N"),
      Options.withDefault(64),
      Options.withDescription("documents in hand at once (default 64); a document's job completes once its batch is written")
    ),
    batch: Options.integer("batch").pipe(
      Options.withPseudoName("N"),
      Options.withDefault(256),
      Options.withDescription("documents per write batch (default 256)")
    ),
    lockDuration: Options.integer("lock-duration").pipe(
      Options.withPseudoName("MS"),
      Options.withDefault(30_000),
      Options.withDescription("job lock in ms: a job whose worker died returns to the queue after about this long (default 30000)")
    ),
    noOcr: Options.boolean("no-ocr").pipe(
      Options.withDescription("do not OCR scanned PDF pages and images (faster; a PDF with no text layer then fails as empty)")
    ),
    extractTimeoutMs: Shared.extractTimeoutMs,
    allowPrivate: Options.boolean("allow-private").pipe(Options.withDescription("allow private and loopback addresses for URL jobs")),
    untilEmpty: Options.boolean("until-empty").pipe(Options.withDescription("stop once the queue holds no waiting, delayed or running job")),
    json: Shared.json,
    config: Shared.config
  },
  (args) =>
    Shared.exitOnUsage(Effect.gen(function*() {
      const usage = (message: string) => Effect.fail(new Shared.UsageError(`worker: ${message}`))
      const url = yield* Shared.resolveQueue(args.queue)
      if (Option.isNone(url)) return yield* usage("give --queue redis://HOST:PORT (or set EFFECT_RAG_QUEUE)")
      for (const [name, n] of [["--concurrency", args.concurrency], ["--batch", args.batch], ["--lock-duration", args.lockDuration]] as const) {
        if (!Number.isInteger(n) || n < 1) return yield* usage(`${name} must be a positive integer`)
      }
      const badTimeout = Shared.checkExtractTimeout(args.extractTimeoutMs)
      if (badTimeout !== undefined) return yield* usage(badTimeout)
      yield* Shared.requirePart("queue")
      const db = yield* Wiring.dbUri(args.db)
      if (Wiring.storeAdapter(db).location === "process") {
        return yield* usage(`--db ${Wiring.displayUri(db)}: a queue's workers share one store, which a process's memory store cannot be`)
      }
      const collection = yield* Shared.resolveCollection(args.collection)
      const embedderSpec = yield* Wiring.embedderSpec(args.embedder)
      const upload = yield* Shared.asUsage("worker")(Wiring.uploadEngine)
      const web = yield* Shared.asUsage("worker")(Wiring.webEngine)
      const IngestQueue = yield* Shared.load(() => import("../../pipeline/IngestQueue.js"))
      // Redis first (reachable, the URL's database, the queue's store): a worker that cannot
      // work the queue creates no --db folder
      const checked = yield* Effect.either(IngestQueue.checkStore({ url: url.value }, collection, db))
      if (checked._tag === "Left") return yield* Shared.queueFailed(args.json, checked.left)
      const prepared = Shared.prepareDbFolder(db)
      if (Either.isLeft(prepared)) return yield* Effect.fail(prepared.left)
      const resolved = yield* Shared.asUsage("worker")(Wiring.resolveEmbedder(embedderSpec))
      if (embedderSpec !== "none" && resolved.embedder === undefined) {
        yield* Console.error(`effect-rag worker: ${resolved.reason ?? `cannot build the embedder ${embedderSpec}`}`)
        return yield* Shared.setExitCode(Shared.ExitCode.failure)
      }
      // a stop finishes the jobs in hand (extract, embed, one batch write): more than the 2 s default
      Shared.setStopGrace(10_000)
      const seen: Seen = { ingested: 0, skipped: 0, failed: 0, lastError: undefined }
      const onEvent = reporter(args.json, seen)
      const result = yield* IngestQueue.worker({ url: url.value }, {
        collection,
        store: db,
        embedder: resolved.embedder,
        // the same fingerprint as `effect-rag ingest`: a queue and a direct ingest write the same chunks
        fingerprint: `upload:${upload}|embedder:${resolved.embedder?.id ?? "none"}${args.noOcr ? "|ocr:off" : ""}`,
        ...(args.noOcr ? { upload: { enable_ocr: false, text_only: true } } : {}),
        concurrency: args.concurrency,
        batchDocuments: args.batch,
        lockDuration: args.lockDuration,
        untilEmpty: args.untilEmpty,
        onEvent
      }).pipe(
        Effect.provide(Wiring.ingestLayer({
          db,
          upload,
          web,
          concurrency: Math.min(args.concurrency, 2),
          allowPrivate: args.allowPrivate,
          extractTimeoutMs: Option.getOrUndefined(args.extractTimeoutMs)
        })),
        Effect.either,
        // SIGINT / SIGTERM: the jobs in hand were finished; main.ts sets the exit status (130 / 143)
        Effect.onInterrupt(() =>
          line(
            `stopped by ${Shared.stopSignal() ?? "an interrupt"}: ${seen.ingested} ingested, ${seen.skipped} unchanged, ${seen.failed} failed attempt(s); ` +
              "the jobs in hand were finished, the rest stay in the queue" +
              (seen.lastError !== undefined ? `; the last queue error: ${Shared.forCli(seen.lastError)}` : "")
          )
        )
      )
      if (result._tag === "Left") {
        const e = result.left
        if (e._tag === "QueueError") return yield* Shared.queueFailed(args.json, e)
        if (args.json) yield* Console.log(JSON.stringify({ db: Wiring.displayUri(db), collection, error: { _tag: e._tag, message: e.message } }))
        yield* Console.error(`effect-rag worker: ${e._tag}: ${e.message}`)
        return yield* Shared.setExitCode(Shared.ExitCode.failure)
      }
      const s = result.right
      yield* Console.log(
        args.json
          ? JSON.stringify({ db: Wiring.displayUri(db), ...s }, null, 2)
          : `worker on collection ${s.collection} in ${Wiring.displayUri(db)}: ${s.ingested} ingested, ${s.skipped} unchanged, ${s.failedJobs} failed (${s.failed} failed attempt(s)), ${s.chunks} chunks in ${s.batches} batch(es); ` +
            `${(s.durationMs / 1000).toFixed(1)} s, writes ${(s.writeMs / 1000).toFixed(1)} s, waiting for the writer lock ${(s.lockWaitMs / 1000).toFixed(1)} s`
      )
      // like ingest: 3 when documents failed (for good), the rest are stored
      yield* Shared.setExitCode(s.failedJobs > 0 ? Shared.ExitCode.partial : Shared.ExitCode.success)
    }).pipe(Effect.scoped, Shared.withConfigFile(args.config), Effect.catchIf(
      (e): e is Exclude<typeof e, Shared.UsageError> => !(e instanceof Shared.UsageError),
      (e) => Console.error(`effect-rag worker: ${e.message}`).pipe(Effect.zipRight(Shared.setExitCode(Shared.ExitCode.failure)))
    )))
).pipe(Command.withDescription("Take ingest jobs from a Redis queue (ingest --queue) and write them into the collection"))
