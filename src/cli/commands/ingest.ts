/**
 * `effect-rag ingest PATH|URL... [--site URL]... [--max-depth N] [--include GLOB]... [--exclude GLOB]... [--prune]
 * [--embedder none|remote|use-lite|onnx:DIR] [--concurrency N] [--password P] [--no-ocr] [--extract-timeout-ms MS] [--allow-private] [--db DIR|URI]
 * [--collection NAME] [--json] [--config FILE]`: the ingest pipeline of `pipeline/Ingest.ts`.
 * With `--queue redis://… [--attempts N]` it enqueues the documents for `effect-rag worker`
 * instead (`pipeline/IngestQueue.ts`); `--queue … --status` prints the queue's counts and failed jobs.
 *
 * - Documents go through the local document engine, or the remote upload endpoint with
 *   `EFFECT_RAG_UPLOAD=remote`; URLs and `--site` crawls through the local web engine.
 * - The embedder comes from `--embedder`, then `EFFECT_RAG_EMBEDDER`, then `none` (full text
 *   only). One that cannot be built is an error, never silently replaced.
 * - Progress on stderr: a bar with rate and ETA on a terminal, plain lines otherwise; the
 *   summary on stdout (JSON with `--json`).
 * - Exit status: 0 every document ingested or unchanged, 3 some failed (the rest are stored),
 *   1 the run failed (every document failed, or none was found), 2 bad usage (a missing source,
 *   an unusable `--db` or `--config`; nothing is read or written), 130 / 143 stopped by SIGINT /
 *   SIGTERM (the documents in flight are abandoned; the summary says what was done). Pages a
 *   `--site` crawl found broken (4xx/5xx) are listed in the summary (`brokenPages`), not
 *   failures: they do not make the run partial; the site's start page, a URL source or a page
 *   that could not be read is a failure. Special files of a folder (FIFOs, sockets, devices,
 *   links to them) are skipped unopened and listed (`ignored`), not failures.
 * - Names and messages are printed with control characters escaped (`Shared.printable`);
 *   `--json` escapes DEL, C1 and bidi controls too (`Shared.jsonText`).
 * - `--access ENTRY` (repeatable) gives every document of the run that access list (principal
 *   ids, group names, `*` for public; see `query --as`); without it documents have none and only
 *   the local operator (or an unrestricted server key) reads them. A rerun with another list
 *   rewrites the documents with the new list. Not available with `--queue`.
 * - Every path is checked before the run: local sources must exist, `--db` must be a folder
 *   that exists or can be created (or an object-store URI).
 *
 * Wiring: `command` is self-contained (it provides its own layers), so `main.ts` only lists it.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { statSync } from "node:fs"
import type * as Ingest from "../../pipeline/Ingest.js"
import { checkAccess } from "../../store/VectorStore.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

// =============================================================================
// Arguments
// =============================================================================

/** The parsed command line of `ingest`. */
export interface IngestArgs {
  readonly sources: ReadonlyArray<string>
  readonly site: ReadonlyArray<string>
  /** Link hops from each `--site` start page (the engine's default when none). */
  readonly maxDepth?: Option.Option<number> | undefined
  readonly include: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  readonly prune: boolean
  /** The access list of every document of the run (`--access`, repeatable); empty: none. */
  readonly access?: ReadonlyArray<string> | undefined
  readonly embedder: Option.Option<string>
  readonly concurrency: number
  readonly password: Option.Option<Redacted.Redacted<string>>
  /** Do not OCR scanned pages and images (`enable_ocr: false`). */
  readonly noOcr?: boolean | undefined
  /** The local document engine's per-file time-out in ms (`--extract-timeout-ms`; the engine's default when none). */
  readonly extractTimeoutMs?: Option.Option<number> | undefined
  readonly allowPrivate: boolean
  readonly db: Option.Option<string>
  readonly collection: Option.Option<string>
  readonly json: boolean
  readonly config: Option.Option<string>
  /** Enqueue the documents on this Redis queue for `effect-rag worker` instead of ingesting them here. */
  readonly queue?: Option.Option<Redacted.Redacted<string>> | undefined
  /** With `queue`: report the queue's counts and failed jobs instead of enqueueing. */
  readonly status?: boolean | undefined
  /** With `queue`: tries per job (default 3). */
  readonly attempts?: Option.Option<number> | undefined
}

// =============================================================================
// Output
// =============================================================================

/** A failure as printed: source, document id, error tag, reason (when typed) and message. */
export const failureJson = (f: Ingest.Failure) => ({
  source: f.source,
  documentId: f.documentId,
  error: {
    _tag: f.error._tag,
    ...("reason" in f.error && typeof f.error.reason === "string" ? { reason: f.error.reason } : {}),
    message: f.error.message
  }
})

/** The summary as printed by `--json`. */
export const summaryJson = (db: string, s: Ingest.Summary) => ({
  db: Wiring.displayUri(db),
  ...s,
  failures: s.failures.map(failureJson)
})

/** The exit code of a summary: 0 all ok, 3 some failed, 1 all failed or nothing found to ingest (nor prune). */
export const exitCodeOf = (s: Ingest.Summary): number =>
  s.documents === 0 && s.pruned === 0 ? Shared.ExitCode.failure
    : s.failed === 0 ? Shared.ExitCode.success
    : s.ingested + s.skipped > 0 ? Shared.ExitCode.partial
    : Shared.ExitCode.failure

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

const duration = (s: number): string => {
  if (!Number.isFinite(s)) return "?"
  const t = Math.round(s)
  return t >= 3600 ? `${Math.floor(t / 3600)}h${String(Math.floor((t % 3600) / 60)).padStart(2, "0")}m`
    : t >= 60 ? `${Math.floor(t / 60)}m${String(t % 60).padStart(2, "0")}s`
    : `${t}s`
}

/** The human summary. */
export const summaryText = (db: string, s: Ingest.Summary): string => {
  const rate = (n: number) => (s.durationMs > 0 ? (n / (s.durationMs / 1000)).toFixed(1) : "-")
  const lines = [
    `collection ${s.collection} in ${Wiring.displayUri(db)}`,
    `documents: ${s.documents} found, ${s.ingested} ingested, ${s.skipped} unchanged, ${s.failed} failed, ${s.pruned} pruned`,
    `chunks: ${s.chunks.ingested} ingested (${s.chunks.inserted} inserted, ${s.chunks.updated} updated, ${s.chunks.deleted} deleted); ${s.chunks.total} in the collection`,
    `time: ${seconds(s.durationMs)} (${rate(s.ingested + s.skipped)} documents/s, ${rate(s.chunks.ingested)} chunks/s)`
  ]
  if (s.brokenPages.length > 0) {
    lines.push(`broken links of the crawled sites (not ingested, not failures): ${s.brokenPages.length}`)
    for (const b of s.brokenPages) lines.push(`  ${Shared.printable(b.url)}: HTTP ${b.statusCode}`)
  }
  if (s.ignored.length > 0) {
    lines.push(`not regular files (skipped): ${s.ignored.length}`)
    for (const i of s.ignored) lines.push(`  ${Shared.printable(i.source)}: ${i.message}`)
  }
  if (s.failures.length > 0) {
    lines.push("failed:")
    for (const f of s.failures.map(failureJson)) {
      lines.push(`  ${Shared.printable(f.source)}: ${f.error._tag}${f.error.reason !== undefined ? ` (${f.error.reason})` : ""}: ${Shared.forCli(f.error.message)}`)
    }
  }
  return lines.join("\n")
}

/**
 * The progress reporter: on a terminal a bar redrawn at most every 100 ms (done/total, percent,
 * documents/s, ETA, failures; failures also printed as lines above it), otherwise one plain
 * line per document (with `quiet`, failures only).
 */
export const progressReporter = (options: { readonly tty: boolean; readonly quiet: boolean; readonly write?: (s: string) => void }) => {
  const write = options.write ?? ((s: string) => void process.stderr.write(s))
  const started = Date.now()
  let total = 0
  let done = 0
  let failed = 0
  let ingested = 0
  let skipped = 0
  let chunks = 0
  let lastDraw = 0
  const bar = (force: boolean) => {
    const now = Date.now()
    if (!force && now - lastDraw < 100) return
    lastDraw = now
    const elapsed = (now - started) / 1000
    const rate = elapsed > 0 ? done / elapsed : 0
    const width = 24
    // a crawl's pages are planned as it reports them: never show more done than planned
    const shown = Math.max(total, done)
    const frac = shown > 0 ? Math.min(1, done / shown) : 0
    const filled = Math.round(frac * width)
    const eta = total > done && rate > 0 ? duration((total - done) / rate) : total > 0 && done >= total ? "0s" : "?"
    write(
      `\r\x1b[2K[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${shown || "?"} ${shown > 0 ? `${Math.floor(frac * 100)}%` : ""}` +
        ` ${rate.toFixed(1)} doc/s ETA ${eta} ${chunks} chunks${failed > 0 ? ` ${failed} failed` : ""}`
    )
  }
  const line = (s: string) => {
    if (options.tty) write(`\r\x1b[2K${s}\n`)
    else write(`${s}\n`)
  }
  const onProgress = (e: Ingest.ProgressEvent): Effect.Effect<void> =>
    Effect.sync(() => {
      // once a stop signal came, a document failing is the stop abandoning it (its worker
      // process may have had the signal too): neither printed nor counted as failed
      if (Shared.stopSignal() !== undefined && e._tag === "Failed") return
      switch (e._tag) {
        case "Planned":
          total = e.total
          break
        case "Skipped":
          done++
          skipped++
          if (!options.tty && !options.quiet) line(`unchanged ${Shared.printable(e.source)}`)
          break
        case "Ingested":
          done++
          ingested++
          chunks += e.chunks
          if (!options.tty && !options.quiet) line(`ingested ${Shared.printable(e.source)} (${e.chunks} chunks)`)
          break
        case "Failed":
          done++
          failed++
          line(`failed ${Shared.printable(e.source)}: ${e.error._tag}: ${Shared.forCli(e.error.message)}`)
          break
        case "Ignored":
          if (!options.quiet) line(`skipped ${Shared.printable(e.ignored.source)}: ${e.ignored.message}`)
          break
        case "Pruned":
          if (!options.quiet) line(`pruned ${e.documentIds.length} document(s) whose source is gone`)
          break
        case "Finished":
          if (options.tty) {
            bar(true)
            write("\n")
          }
          return
        case "BatchWritten":
          break
      }
      if (options.tty) bar(e._tag === "Planned")
    })
  /** What was done when a run is stopped before its end (one line, for stderr). */
  const stoppedSummary = (signal: string): string => {
    if (options.tty) write("\r\x1b[2K")
    const left = total > done ? `; ${total - done} not stored` : ""
    return `stopped by ${signal}: ${done} of ${total || "?"} documents done (${ingested} ingested, ${skipped} unchanged, ${failed} failed, ${chunks} chunks)${left}. ` +
      "Run the same command again to finish: unchanged documents are skipped."
  }
  return { onProgress, stoppedSummary }
}

// =============================================================================
// Handler
// =============================================================================

/** A local source that does not exist (URLs are checked when fetched). */
const missingSource = (source: string): boolean => {
  if (/^https?:\/\//i.test(source)) return false
  try {
    return statSync(source, { throwIfNoEntry: false }) === undefined
  } catch {
    return true
  }
}

/**
 * Runs `ingest` (configuration from `--config` / the environment applied) and sets the exit
 * code. Returns the summary, or none when the run did not happen or failed. Usage problems
 * (no source, a missing source, a bad `--db`) fail with `UsageError` before anything is read
 * or written.
 */
export const runIngest = (args: IngestArgs): Effect.Effect<Option.Option<Ingest.Summary>, Shared.UsageError> =>
  Effect.gen(function*() {
    const usage = (message: string) => Effect.fail(new Shared.UsageError(`ingest: ${message}`))
    if (args.status === true && Option.isNone(args.queue ?? Option.none())) return yield* usage("--status needs --queue")
    if (args.queue !== undefined && Option.isSome(args.queue)) {
      yield* runQueued(args, args.queue.value)
      return Option.none()
    }
    if (args.attempts !== undefined && Option.isSome(args.attempts)) return yield* usage("--attempts needs --queue")
    if (args.sources.length === 0 && args.site.length === 0) return yield* usage("give at least one PATH, URL or --site URL")
    if (!Number.isInteger(args.concurrency) || args.concurrency < 1) return yield* usage("--concurrency must be a positive integer")
    const badTimeout = Shared.checkExtractTimeout(args.extractTimeoutMs)
    if (badTimeout !== undefined) return yield* usage(badTimeout)
    const accessProblem = checkAccess(args.access)
    if (accessProblem !== undefined) return yield* usage(`--access: ${Shared.printable(accessProblem)}`)
    const missing = args.sources.filter(missingSource)
    if (missing.length > 0) return yield* usage(`no such file or folder: ${Shared.printable(missing.join(", "))}`)
    const db = yield* Wiring.dbUri(args.db)
    const collection = yield* Shared.resolveCollection(args.collection)
    if (collection.endsWith("__ingest")) {
      return yield* usage(`--collection ${Shared.printable(collection)}: names ending with __ingest are reserved for the ingest manifests`)
    }
    const embedderSpec = yield* Wiring.embedderSpec(args.embedder)
    const upload = yield* Shared.asUsage("ingest")(Wiring.uploadEngine)
    const web = yield* Shared.asUsage("ingest")(Wiring.webEngine)
    if (upload === "remote" && Option.isSome(args.password)) {
      return yield* usage("--password needs the local document engine (EFFECT_RAG_UPLOAD=local): the remote upload endpoint takes no password")
    }
    const prepared = Shared.prepareDbFolder(db)
    if (Either.isLeft(prepared)) return yield* Effect.fail(prepared.left)
    const Ingest = yield* Shared.load(() => import("../../pipeline/Ingest.js"))
    const resolved = yield* Shared.asUsage("ingest")(Wiring.resolveEmbedder(embedderSpec))
    if (embedderSpec !== "none" && resolved.embedder === undefined) {
      yield* Console.error(`effect-rag ingest: ${resolved.reason ?? `cannot build the embedder ${embedderSpec}`}`)
      yield* Shared.setExitCode(Shared.ExitCode.failure)
      return Option.none()
    }
    const tty = process.stderr.isTTY === true
    const reporter = progressReporter({ tty, quiet: args.json })
    const request: Ingest.Request = {
      sources: [
        ...args.sources.map(Ingest.Source.parse),
        ...args.site.map((u) =>
          Ingest.Source.site(u, Option.match(args.maxDepth ?? Option.none(), { onNone: () => ({}), onSome: (maxDepth) => ({ maxDepth }) }))
        )
      ],
      collection,
      include: args.include,
      exclude: args.exclude,
      prune: args.prune
    }
    const result = yield* Ingest.run(request, {
      embedder: resolved.embedder,
      fingerprint: `upload:${upload}|embedder:${resolved.embedder?.id ?? "none"}${args.noOcr === true ? "|ocr:off" : ""}`,
      concurrency: { extract: args.concurrency },
      ...((args.access ?? []).length > 0 ? { access: args.access } : {}),
      ...(Option.isSome(args.password) || args.noOcr === true
        ? {
          upload: {
            ...Ingest.defaultUploadOptions,
            // no OCR: an image has no text (never its data URL as text)
            ...(args.noOcr === true ? { enable_ocr: false, text_only: true } : {}),
            ...(Option.isSome(args.password) ? { password: args.password.value } : {})
          }
        }
        : {}),
      onProgress: reporter.onProgress
    }).pipe(
      Effect.provide(Wiring.ingestLayer({
        db,
        upload,
        web,
        concurrency: args.concurrency,
        allowPrivate: args.allowPrivate,
        extractTimeoutMs: Option.getOrUndefined(args.extractTimeoutMs ?? Option.none())
      })),
      Effect.either,
      // SIGINT / SIGTERM: the run is interrupted (its scope closes the workers and the store);
      // say what was done. main.ts sets the exit status (130 / 143).
      Effect.onInterrupt(() => Console.error(reporter.stoppedSummary(Shared.stopSignal() ?? "an interrupt")))
    )
    if (result._tag === "Left") {
      const e = result.left
      const message = `${e._tag}: ${e.message}`
      if (args.json) yield* Console.log(JSON.stringify({ db: Wiring.displayUri(db), collection, error: { _tag: e._tag, message: e.message } }))
      yield* Console.error(`effect-rag ingest: ${message}`)
      yield* Shared.setExitCode(Shared.ExitCode.failure)
      return Option.none()
    }
    const summary = result.right
    yield* Console.log(args.json ? Shared.jsonText(summaryJson(db, summary), 2) : summaryText(db, summary))
    if (summary.documents === 0 && summary.pruned === 0) {
      yield* Console.error(
        `effect-rag ingest: nothing to ingest: no documents found in ${Shared.printable([...args.sources, ...args.site].join(", "))}` +
          (args.include.length + args.exclude.length > 0 ? " with the given --include / --exclude" : "")
      )
    }
    yield* Shared.setExitCode(exitCodeOf(summary))
    return Option.some(summary)
  }).pipe(
    // the embedder (a model session) lives as long as the run
    Effect.scoped,
    Shared.withConfigFile(args.config),
    Effect.catchIf(
      (e): e is Exclude<typeof e, Shared.UsageError> => !(e instanceof Shared.UsageError),
      (e) =>
        Console.error(`effect-rag ingest: ${e.message}`).pipe(
          Effect.zipRight(Shared.setExitCode(Shared.ExitCode.failure)),
          Effect.as(Option.none<Ingest.Summary>())
        )
    )
  )

// =============================================================================
// Queue
// =============================================================================

/**
 * `ingest --queue URL`: enumerates the sources and enqueues one job per document for
 * `effect-rag worker` (exit 0, 3 when a source could not be enumerated, 1 when the queue failed,
 * 2 for a queue URL that cannot mean what it says or a queue of another store); with
 * `--status`, prints the queue's job counts and its failed jobs with their typed errors. A
 * `--db` (or `$EFFECT_RAG_DB`) given to the producer is recorded as the queue's store.
 */
const runQueued = (args: IngestArgs, url: Redacted.Redacted<string>): Effect.Effect<void, Shared.UsageError> =>
  Effect.gen(function*() {
    const usage = (message: string) => Effect.fail(new Shared.UsageError(`ingest: ${message}`))
    const collection = yield* Shared.resolveCollection(args.collection)
    yield* Shared.requirePart("queue")
    const IngestQueue = yield* Shared.load(() => import("../../pipeline/IngestQueue.js"))
    const config = { url }
    if (args.status === true) {
      const status = yield* Effect.either(IngestQueue.status(config, collection))
      if (status._tag === "Left") return yield* Shared.queueFailed(args.json, status.left)
      const s = status.right
      if (args.json) {
        yield* Console.log(JSON.stringify(s, null, 2))
      } else {
        const lines = [
          `queue of collection ${s.collection}${s.store !== undefined ? ` (store ${s.store})` : ""}: ${s.counts.waiting} waiting, ${s.counts.active} active, ${s.counts.delayed} delayed (retry), ${s.counts.completed} completed, ${s.counts.failed} failed`
        ]
        for (const f of s.failed) {
          lines.push(`  failed ${Shared.printable(f.source)} after ${f.attempts} attempt(s): ${f.error._tag}${f.error.reason !== undefined ? ` (${f.error.reason})` : ""}: ${Shared.forCli(f.error.message)}`)
        }
        yield* Console.log(lines.join("\n"))
      }
      return
    }
    if (args.sources.length === 0 && args.site.length === 0) return yield* usage("give at least one PATH, URL or --site URL")
    if (args.prune) return yield* usage("--prune is not a queue operation: run ingest without --queue to prune")
    if (args.noOcr === true) return yield* usage("--no-ocr is a worker setting with --queue: pass it to effect-rag worker")
    if (args.extractTimeoutMs !== undefined && Option.isSome(args.extractTimeoutMs)) {
      return yield* usage("--extract-timeout-ms is a worker setting with --queue: pass it to effect-rag worker")
    }
    if ((args.access ?? []).length > 0) return yield* usage("--access is not a queue operation: run ingest without --queue to set access lists")
    if (Option.isSome(args.embedder)) return yield* usage("--embedder is a setting of `effect-rag worker` when ingesting through --queue")
    const missing = args.sources.filter(missingSource)
    if (missing.length > 0) return yield* usage(`no such file or folder: ${missing.join(", ")}`)
    const attempts = Option.getOrElse(args.attempts ?? Option.none(), () => 3)
    if (!Number.isInteger(attempts) || attempts < 1) return yield* usage("--attempts must be a positive integer")
    const Ingest = yield* Shared.load(() => import("../../pipeline/Ingest.js"))
    const sources = [
      ...args.sources.map(Ingest.Source.parse),
      ...args.site.map((u) =>
        Ingest.Source.site(u, Option.match(args.maxDepth ?? Option.none(), { onNone: () => ({}), onSome: (maxDepth) => ({ maxDepth }) }))
      )
    ]
    // the producer crawls `--site`s itself (with the local document engine for what it finds)
    const webEngine = yield* Shared.asUsage("ingest")(Wiring.webEngine)
    const layer = Wiring.webLayer(webEngine, { allowPrivate: args.allowPrivate }).pipe(
      Layer.provide(Wiring.uploadLayer("local", { concurrency: 1 }))
    )
    const needsWeb = args.site.length > 0
    // the store the workers are to write to, when the producer names one
    const explicitDb = Option.isSome(args.db) || Option.isSome(yield* Wiring.setting("EFFECT_RAG_DB"))
    const store = explicitDb ? yield* Wiring.dbUri(args.db) : undefined
    if (store !== undefined && Wiring.storeAdapter(store).location === "process") {
      return yield* usage(`--db ${store}: the workers run in other processes, which cannot see this process's memory store`)
    }
    const enqueue = IngestQueue.enqueue({ sources, collection, include: args.include, exclude: args.exclude }, config, {
      attempts,
      store,
      onProgress: (n) => (args.json ? Effect.void : Console.error(`submitted ${n} document(s)`))
    })
    const result = yield* Effect.either(needsWeb ? Effect.provide(enqueue, layer) : enqueue)
    if (result._tag === "Left") return yield* Shared.queueFailed(args.json, result.left)
    const r = result.right
    if (args.json) {
      yield* Console.log(JSON.stringify({ ...r, failures: r.failures.map(failureJson) }, null, 2))
    } else {
      const lines = [`queue of collection ${r.collection}: ${r.documents} document(s) submitted, ${r.enqueued} new job(s), ${r.documents - r.enqueued > 0 ? r.documents - r.enqueued : 0} already queued`]
      for (const i of r.ignored) lines.push(`  skipped ${Shared.printable(i.source)}: ${i.message}`)
      for (const f of r.failures.map(failureJson)) lines.push(`  failed ${Shared.printable(f.source)}: ${f.error._tag}${f.error.reason !== undefined ? ` (${f.error.reason})` : ""}: ${Shared.forCli(f.error.message)}`)
      yield* Console.log(lines.join("\n"))
    }
    yield* Shared.setExitCode(r.failures.length === 0 ? Shared.ExitCode.success : r.documents > 0 ? Shared.ExitCode.partial : Shared.ExitCode.failure)
  })

// =============================================================================
// Command
// =============================================================================

/** The `ingest` subcommand. */
export const command = Command.make(
  "ingest",
  {
    sources: Args.text({ name: "PATH|URL" }).pipe(
      Args.withDescription("files, folders (recursive) and http(s) pages"),
      Args.repeated
    ),
    site: Options.text("site").pipe(
      Options.withPseudoName("URL"),
      Options.repeated,
      Options.withDescription("crawl this site and ingest its pages (repeatable)")
    ),
    maxDepth: Options.integer("max-depth").pipe(
      Options.withPseudoName("N"),
      Options.optional,
      Options.withDescription("link hops from each --site start page (default 10)")
    ),
    include: Options.text("include").pipe(
      Options.withPseudoName("GLOB"),
      Options.repeated,
      Options.withDescription("only folder files matching this glob (`*.md`: base name; `docs/**`: relative path); repeatable")
    ),
    exclude: Options.text("exclude").pipe(
      Options.withPseudoName("GLOB"),
      Options.repeated,
      Options.withDescription("leave out folder files and folders matching this glob; repeatable")
    ),
    prune: Options.boolean("prune").pipe(Options.withDescription("delete stored documents whose source is gone (under the given folders / sites)")),
    access: Options.text("access").pipe(
      Options.withPseudoName("ENTRY"),
      Options.repeated,
      Options.withDescription("who may read the documents: a principal id, a group or * (public); repeatable (default: the local operator only)")
    ),
    embedder: Shared.embedder("none stores full text only"),
    concurrency: Options.integer("concurrency").pipe(
      Options.withPseudoName("N"),
      Options.withDefault(2),
      Options.withDescription("documents extracted at once (default 2)")
    ),
    password: Options.redacted("password").pipe(
      Options.withPseudoName("PASSWORD"),
      Options.optional,
      Options.withDescription("password of encrypted documents (PDF, DOCX, XLSX, XLS; local engine only); never printed")
    ),
    noOcr: Options.boolean("no-ocr").pipe(
      Options.withDescription("do not OCR scanned PDF pages and images (faster; a PDF with no text layer then fails as empty)")
    ),
    extractTimeoutMs: Shared.extractTimeoutMs,
    allowPrivate: Options.boolean("allow-private").pipe(Options.withDescription("allow private and loopback addresses for URLs and sites")),
    db: Shared.db,
    collection: Shared.collection,
    json: Shared.json,
    config: Shared.config,
    queue: Shared.queue,
    status: Options.boolean("status").pipe(Options.withDescription("with --queue: print the queue's job counts and its failed jobs with their errors")),
    attempts: Options.integer("attempts").pipe(
      Options.withPseudoName("N"),
      Options.optional,
      Options.withDescription("with --queue: tries per document before its job lands in the failed set (default 3)")
    )
  },
  (args) => Shared.exitOnUsage(Effect.asVoid(runIngest(args)))
).pipe(Command.withDescription("Ingest files, folders, pages and sites into a collection (idempotent, resumable)"))
