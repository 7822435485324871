/**
 * The ingestion pipeline: files, folders, web pages and whole sites into a collection, through
 * the {@link Upload.Upload} service in embeddings mode (chunks), an optional embedder, and the
 * {@link VectorStore}.
 *
 * ## Sources
 * - **Path**: a file, or a folder walked recursively (sorted; hidden entries skipped; include /
 *   exclude globs, see {@link Request}). Document id: the `file://` URL of the absolute path.
 * - **Url**: one page scraped through the `Web` service (to Markdown), then chunked by `Upload`.
 *   Document id: the normalised URL.
 * - **Site**: a crawl through the `Web` service; every page a document, as for `Url`, but for
 *   the pages that answered 4xx/5xx (the site's broken links: `Summary.brokenPages`, not failures).
 *
 * ## Idempotent, resumable, loss-free
 * Each document gets a content hash (SHA-256 of the pipeline fingerprint and its bytes). Its
 * chunks have deterministic ids (`documentId#hash-index`) and carry the hash (`source_hash`).
 * Documents are written in batches, each in three steps:
 * 1. upsert the chunks (merge-insert by id: a chunk already there is left alone);
 * 2. delete the document's chunks of other hashes (older generations, partial writes of a
 *    changed file) — only for documents that had anything stored;
 * 3. upsert the completion marker `(documentId, hash, chunk count)` into the manifest
 *    collection `<name>__ingest`.
 * A document is skipped when its marker has the same hash and the collection holds exactly that
 * many chunks of it. A file's marker also records its stat signature (size, modification and
 * change times, inode, under the fingerprint and access list) when the file had not changed for
 * 2.5 s before its read: a rerun skips a file whose `stat` gives that signature without opening
 * it, and reads and hashes every other one. A process killed at any moment leaves only documents without a matching
 * marker half-done; the rerun redoes them: step 1 rewrites nothing that is there and adds what is
 * missing, step 2 removes the rest, step 3 seals it. The result is the collection an
 * uninterrupted run writes (`test/pipeline/ingest-crash.test.ts` kills a child process at
 * several points and compares). A second run over unchanged input writes nothing. A run that
 * wrote at least 1,000 rows (inserted, updated, deleted) ends by bringing the collection's indexes up to
 * date (`optimize`), once; a smaller one (a few changed files) leaves that to the store's upkeep.
 *
 * ## Access lists
 * Every chunk of a document gets the document's access list (see `VectorStore.Chunk.access`):
 * the longest matching {@link AccessRule} of `Options.accessRules` (a prefix of the document
 * id: `file:///srv/docs/hr/`, `https://intranet.example/finance/`), else `Options.access`, else
 * none (readable only by an unrestricted principal). The list is part of the document's content
 * hash, so a rerun with another list rewrites the document with the new list even when its
 * bytes did not change; a document without a list hashes as before access lists existed.
 *
 * ## Bounded and streaming
 * Sources are enumerated lazily. Documents go in groups of 32, each group one step of the
 * stream: its documents are loaded and hashed one after the other (up to 16 MiB, then extracted,
 * then the next round), so a folder of small files costs no fiber and no span per document.
 * `max(concurrency.read / 2, concurrency.extract)` groups are in flight, extraction holds one of
 * `concurrency.extract` permits per document, and embedding (`concurrency.embed`, per batch of
 * documents) and writing (one batch at a time) are stream stages of their own, so memory holds a
 * bounded number of documents plus one small entry per document id (the dedupe and prune sets).
 *
 * A document that fails (unreadable, extraction error, scrape or embedding error) is recorded
 * in the summary with its typed error and the run goes on; a store failure ends the run.
 *
 * @since 0.1.0
 */
import { Chunk as C, Duration, Effect, Option, Queue, Stream, Take } from "effect"
import * as Upload from "../api/Upload.js"
import * as Web from "../api/Web.js"
import type * as RagError from "../RagError.js"
import { checkAccess, type Collection, InvalidInput, VectorStore, type VectorStoreError } from "../store/VectorStore.js"
import * as Stages from "./internal/ingest-stages.js"
import * as State from "./internal/ingest-state.js"

// =============================================================================
// Inputs
// =============================================================================

/**
 * Something to ingest: a file or folder, a page, or a site to crawl.
 *
 * @since 0.1.0
 * @category models
 */
export type Source = Stages.SourceSpec

/**
 * Source constructors.
 *
 * @since 0.1.0
 * @category constructors
 */
export const Source = {
  /** A file or folder. */
  path: (path: string): Source => ({ _tag: "Path", path }),
  /** One web page. */
  url: (url: string): Source => ({ _tag: "Url", url }),
  /** A site, crawled from `url`. */
  site: (url: string, options: { maxDepth?: number; limit?: number } = {}): Source => ({ _tag: "Site", url, ...options }),
  /** `http(s)://…` is a page, anything else a path. */
  parse: (arg: string): Source => (/^https?:\/\//i.test(arg) ? { _tag: "Url", url: arg } : { _tag: "Path", path: arg })
} as const

/**
 * What to ingest, and where.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  /** The sources, in order. The same document reached twice is ingested once. */
  readonly sources: ReadonlyArray<Source>
  /** The collection (created when missing; `<name>__ingest` holds its manifest). */
  readonly collection: string
  /**
   * Globs of folder files to ingest (default: all but hidden ones). A glob without `/` matches
   * the base name (`*.md`), one with `/` the path relative to the folder (`guides/**`).
   * Files named directly are never filtered.
   */
  readonly include?: ReadonlyArray<string> | undefined
  /** Globs of folder files and folders to leave out (same forms as `include`). */
  readonly exclude?: ReadonlyArray<string> | undefined
  /**
   * Delete the stored documents whose source is gone: files under a given folder (or a given
   * file) that this run did not find, and pages of a given site its crawl did not return (only
   * when the crawl completed). Documents of other sources are never touched.
   */
  readonly prune?: boolean | undefined
}

/**
 * An embedder: an id (stored as the collection's embedding model) and the service.
 *
 * @since 0.1.0
 * @category models
 */
export type Embedder = Stages.Embedder

/**
 * The upload options of a run that sets none: OCR on (see {@link Options.upload}).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultUploadOptions: Upload.UploadOptions = { enable_ocr: true }

/**
 * A per-source access rule: documents whose id starts with `prefix` (a `file://` URL of a
 * folder or file, or a URL) get `access`. The longest matching prefix wins.
 *
 * @since 0.1.0
 * @category models
 */
export interface AccessRule {
  readonly prefix: string
  readonly access: ReadonlyArray<string>
}

/**
 * The access list of a document id under a run's options (see the module doc).
 *
 * @since 0.1.0
 * @category utils
 */
export const accessOf = (
  documentId: string,
  options: Pick<Options, "access" | "accessRules">
): ReadonlyArray<string> | undefined => {
  let best: AccessRule | undefined
  for (const r of options.accessRules ?? []) {
    if (documentId.startsWith(r.prefix) && (best === undefined || r.prefix.length > best.prefix.length)) best = r
  }
  return best?.access ?? options.access
}

/**
 * Settings of a run. Every field is optional.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The access list of every document of the run (principal ids, group names, `*` for
   * public); default none: readable only by an unrestricted principal. See {@link AccessRule}.
   */
  readonly access?: ReadonlyArray<string> | undefined
  /** Per-source access lists, before `access` (the longest matching prefix wins). */
  readonly accessRules?: ReadonlyArray<AccessRule> | undefined
  /** Embed chunks with this embedder (default none: a full-text-only collection). */
  readonly embedder?: Embedder | undefined
  /**
   * Options passed to `Upload.extractChunks`. Default `{ enable_ocr: true }`: a collection is
   * for retrieval, and without OCR an image's content is its data URL, which chunks into
   * thousands of meaningless base64 chunks.
   */
  readonly upload?: Upload.UploadOptions | undefined
  /**
   * Mixed into every content hash (default `"v1"`): changing it (another upload engine or
   * embedder) re-ingests every document. The CLI uses `upload:<mode>|embedder:<id>`.
   */
  readonly fingerprint?: string | undefined
  /**
   * Concurrency per stage: `read` (default 8), `extract` (2), `embed` (1). Documents are loaded
   * in groups of 32, one document after the other within a group, with `max(read / 2, extract)`
   * groups in flight; `extract` bounds the documents extracting at once.
   */
  readonly concurrency?: {
    readonly read?: number | undefined
    readonly extract?: number | undefined
    readonly embed?: number | undefined
  } | undefined
  /**
   * Documents per write batch (default 512). Each batch is one chunk upsert, at most one stale
   * delete and one marker upsert: few large writes are what the store is fastest at.
   */
  readonly batchDocuments?: number | undefined
  /**
   * Longest time, in milliseconds, a document waits for its batch to fill (default 5 seconds).
   * Each batch costs a few store writes whatever its size, so a short window on a loaded
   * machine (documents prepared slowly) means many small batches and more CPU for the same
   * documents. The last batch of a run is written as soon as the sources are exhausted.
   */
  readonly batchWindow?: number | undefined
  /**
   * Longest time reading one file may take (default 120 seconds, as the local engine's
   * per-file time-out); past it the document fails with `SourceError` `read_timeout`.
   */
  readonly readTimeout?: Duration.DurationInput | undefined
  /** Called with every progress event (see {@link events} for a stream instead). */
  readonly onProgress?: ((event: ProgressEvent) => Effect.Effect<void>) | undefined
}

// =============================================================================
// Errors, events, summary
// =============================================================================

/**
 * A source that cannot be read: missing path, unreadable folder, bad URL, failed crawl, no web service.
 *
 * @since 0.1.0
 * @category errors
 */
export { SourceError } from "./internal/ingest-stages.js"

/**
 * Why one document failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type DocumentError = Stages.DocumentError

/**
 * A special file a folder held (or a path named): a FIFO, socket or device, or a symbolic link
 * to one. It is skipped without being opened (reading a FIFO waits for a writer for ever):
 * listed in `Summary.ignored`, neither a document nor a failure.
 *
 * @since 0.1.0
 * @category models
 */
export type Ignored = Stages.Ignored

/**
 * A document that failed, with its typed error.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  readonly source: string
  readonly documentId: string
  readonly error: DocumentError
}

/**
 * What ends a run early: the store failed, or the embedder could not be probed.
 *
 * @since 0.1.0
 * @category errors
 */
export type IngestError = VectorStoreError | RagError.ApiError

/**
 * The summary of a run.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly collection: string
  /** Documents found (after dedupe), including failed ones. */
  readonly documents: number
  /** Documents written (new or changed). */
  readonly ingested: number
  /** Documents unchanged since the last run. */
  readonly skipped: number
  /** Documents that failed (see `failures`). */
  readonly failed: number
  /** Documents deleted by `prune`. */
  readonly pruned: number
  readonly chunks: {
    /** Chunks of the ingested documents. */
    readonly ingested: number
    /** Rows the store inserted / updated (0 and 0 on a rerun over unchanged input). */
    readonly inserted: number
    readonly updated: number
    /** Rows deleted (older generations, pruned documents). */
    readonly deleted: number
    /** Chunks in the collection after the run. */
    readonly total: number
  }
  /** Store write operations issued (upserts and deletes): 0 on a rerun over unchanged input. */
  readonly writes: number
  readonly failures: ReadonlyArray<Failure>
  /**
   * Pages a crawled site linked to that answered an HTTP error (4xx/5xx): the site's broken
   * links, reported here with their status; not documents, and not failures (the run is not
   * partial for them). A site's start page that answers an error is a failure.
   */
  readonly brokenPages: ReadonlyArray<BrokenPage>
  /** Special files skipped (FIFOs, sockets, devices, links to them), with their kind: not documents, not failures. */
  readonly ignored: ReadonlyArray<Ignored>
  readonly durationMs: number
  /** Of `durationMs`, the time spent in store writes (chunks, stale deletes, markers, prune, index upkeep). */
  readonly writeMs: number
}

/**
 * A page of a crawled site that answered an HTTP error.
 *
 * @since 0.1.0
 * @category models
 */
export type BrokenPage = Stages.BrokenPage

/**
 * A progress event.
 *
 * @since 0.1.0
 * @category models
 */
export type ProgressEvent =
  /** The known number of documents grew (folders counted up front, sites once crawled). */
  | { readonly _tag: "Planned"; readonly total: number }
  | { readonly _tag: "Skipped"; readonly source: string; readonly documentId: string }
  /** A special file (FIFO, socket, device) was skipped without being opened. */
  | { readonly _tag: "Ignored"; readonly ignored: Ignored }
  | { readonly _tag: "Failed"; readonly source: string; readonly documentId: string; readonly error: DocumentError }
  /** Emitted once the document's batch is committed (marker written). */
  | { readonly _tag: "Ingested"; readonly source: string; readonly documentId: string; readonly chunks: number }
  | {
    readonly _tag: "BatchWritten"
    readonly documents: number
    readonly chunks: number
    readonly inserted: number
    readonly updated: number
    readonly deleted: number
  }
  | { readonly _tag: "Pruned"; readonly documentIds: ReadonlyArray<string> }
  | { readonly _tag: "Finished"; readonly summary: Summary }

// =============================================================================
// Run
// =============================================================================

/** The settings of a run, resolved from its options once. */
interface Settings {
  readonly emit: (event: ProgressEvent) => Effect.Effect<void>
  readonly fingerprint: string
  readonly uploadOptions: Upload.UploadOptions
  readonly readTimeout: Duration.DurationInput | undefined
  /** Groups of documents in flight: enough for `read / 2` reads and every extraction permit. */
  readonly groupsInFlight: number
  readonly extractConcurrency: number
  readonly embedConcurrency: number
  readonly batchDocuments: number
  readonly batchWindow: number
  readonly embedder: Embedder | undefined
}

const settingsOf = (options: Options): Settings => {
  const readConcurrency = Math.max(1, options.concurrency?.read ?? 8)
  const extractConcurrency = Math.max(1, options.concurrency?.extract ?? 2)
  return {
    emit: options.onProgress ?? (() => Effect.void),
    fingerprint: options.fingerprint ?? "v1",
    uploadOptions: options.upload ?? defaultUploadOptions,
    readTimeout: options.readTimeout,
    groupsInFlight: Math.max(Math.ceil(readConcurrency / 2), extractConcurrency),
    extractConcurrency,
    embedConcurrency: Math.max(1, options.concurrency?.embed ?? 1),
    batchDocuments: Math.max(1, options.batchDocuments ?? 512),
    batchWindow: Math.max(1, options.batchWindow ?? 5000),
    embedder: options.embedder
  }
}

/**
 * What a run counts and collects: counts, the failures, broken pages and ignored files, the
 * document ids seen (the dedupe and the prune need them) and the prune scopes. Nothing else is
 * kept per document.
 */
interface Tally {
  documents: number
  ingested: number
  skipped: number
  chunksIngested: number
  inserted: number
  updated: number
  deleted: number
  writes: number
  writeMs: number
  planned: number
  readonly failures: Array<Failure>
  readonly brokenPages: Array<BrokenPage>
  readonly ignored: Array<Ignored>
  readonly seen: Set<string>
  /** Prune scopes: predicates over document ids, added as sources finish enumerating. */
  readonly scopes: Array<(id: string) => boolean>
}

const emptyTally = (): Tally => ({
  documents: 0,
  ingested: 0,
  skipped: 0,
  chunksIngested: 0,
  inserted: 0,
  updated: 0,
  deleted: 0,
  writes: 0,
  writeMs: 0,
  planned: 0,
  failures: [],
  brokenPages: [],
  ignored: [],
  seen: new Set(),
  scopes: []
})

/** Everything the stages of one run share. */
interface RunContext {
  readonly request: Request
  readonly options: Options
  readonly settings: Settings
  readonly tally: Tally
  readonly upload: Upload.Service
  readonly web: Option.Option<Web.Service>
  readonly target: Stages.Target
  readonly state: State.StoredState
  readonly embedding: { model: string; dimension: number } | undefined
  readonly extractPermits: Effect.Semaphore
}

/** A store write, its time added to the run's `writeMs`. */
const timed = (tally: Tally) => <A, E>(write: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.map(Effect.timed(write), ([d, a]) => {
    tally.writeMs += Duration.toMillis(d)
    return a
  })

/** Records a failed document and emits its event. */
const failed = (ctx: Pick<RunContext, "tally" | "settings">) => (source: string, documentId: string, error: DocumentError) =>
  Effect.suspend(() => {
    ctx.tally.failures.push({ source, documentId, error })
    return ctx.settings.emit({ _tag: "Failed", source, documentId, error })
  })

/** The documents of the request, deduplicated, with their access lists. */
const enumerateItems = (ctx: RunContext): Stream.Stream<Stages.Item> => {
  const { emit } = ctx.settings
  const tally = ctx.tally
  return Stages.enumerate(ctx.request.sources, { include: ctx.request.include ?? [], exclude: ctx.request.exclude ?? [] }, ctx.web, {
    plan: (n) =>
      Effect.suspend(() => {
        tally.planned += n
        return emit({ _tag: "Planned", total: tally.planned })
      }),
    fail: failed(ctx),
    scope: (predicate) => void tally.scopes.push(predicate),
    broken: (page) => void tally.brokenPages.push(page),
    ignore: (x) =>
      Effect.suspend(() => {
        tally.ignored.push(x)
        return emit({ _tag: "Ignored", ignored: x })
      })
  }).pipe(
    Stream.filterMap((item) => {
      if (tally.seen.has(item.documentId)) return Option.none()
      tally.seen.add(item.documentId)
      tally.documents++
      const access = accessOf(item.documentId, ctx.options)
      return Option.some(access === undefined ? item : { ...item, access })
    })
  )
}

/** Documents a group holds: loaded and extracted one after the other, in one step of the stream. */
const groupSize = 32

/** Bytes of a group loaded before they are extracted (a group of large files goes in several rounds). */
const loadBudget = 16 * 2 ** 20

/** Loads and hashes one document; undefined when it is stored complete (counted) or fails (recorded). */
const loadOne = (ctx: RunContext, item: Stages.Item): Effect.Effect<Stages.Hashed | undefined> =>
  Stages.load(item, ctx.web, { readTimeout: ctx.settings.readTimeout }).pipe(
    Effect.flatMap((loaded) => {
      const x = Stages.hash(ctx.settings.fingerprint, item, loaded)
      if (!State.isComplete(ctx.state, item.documentId, x.hash)) return Effect.succeed(x)
      ctx.tally.skipped++
      return Effect.as(ctx.settings.emit({ _tag: "Skipped", source: item.source, documentId: item.documentId }), undefined)
    }),
    Effect.catchAll((e) => Effect.as(failed(ctx)(item.source, item.documentId, e), undefined))
  )

/**
 * Loads and hashes a group's documents from `from` on, until {@link loadBudget} bytes are
 * loaded; leaves out the ones stored complete and the ones that fail. Returns them and where
 * the next round starts. One span per round, not one per document.
 */
const loadRound = (
  ctx: RunContext,
  group: ReadonlyArray<Stages.Item>,
  from: number
): Effect.Effect<readonly [Array<Stages.Hashed>, number]> =>
  Effect.gen(function*() {
    const out: Array<Stages.Hashed> = []
    let bytes = 0
    let i = from
    while (i < group.length && bytes < loadBudget) {
      const x = yield* loadOne(ctx, group[i++]!)
      if (x === undefined) continue
      out.push(x)
      bytes += x.loaded.file.data.byteLength
    }
    return [out, i] as const
  }).pipe(Effect.withSpan("Ingest.load", { attributes: { "effect_rag.documents": group.length } }))

/**
 * Extracts and chunks loaded documents through `Upload`, one after the other, the round holding
 * one extraction permit throughout (a permit per document cost a semaphore's take and release
 * per file for the same concurrency: the documents of a round never ran at once).
 */
const extractRound = (ctx: RunContext, hashed: ReadonlyArray<Stages.Hashed>): Effect.Effect<Array<Stages.Prepared>> =>
  Effect.suspend(() => {
    const out: Array<Stages.Prepared> = []
    return Effect.as(
      Effect.forEach(hashed, (x) => {
        const prior = ctx.state.markers.has(x.item.documentId) || ctx.state.chunkCounts.has(x.item.documentId)
        return Effect.matchEffect(Stages.extract(ctx.upload, ctx.settings.uploadOptions, x, prior), {
          onFailure: (e) => failed(ctx)(x.item.source, x.item.documentId, e),
          onSuccess: (p) => {
            out.push(p)
            return Effect.void
          }
        })
      }, { discard: true }),
      out
    )
  }).pipe(
    ctx.extractPermits.withPermits(1),
    Effect.withSpan("Ingest.extract", { attributes: { "effect_rag.documents": hashed.length } })
  )

/** Leaves out (counted as skipped) a group's files whose stat matches their marker: no read, no hash. */
const skipUnchanged = (ctx: RunContext, group: ReadonlyArray<Stages.Item>): Effect.Effect<ReadonlyArray<Stages.Item>> =>
  Effect.flatMap(Stages.unchanged(ctx.state, ctx.settings.fingerprint, group), (same) => {
    if (!same.includes(true)) return Effect.succeed(group)
    const skipped = group.filter((_, i) => same[i])
    ctx.tally.skipped += skipped.length
    return Effect.as(
      Effect.forEach(skipped, (item) => ctx.settings.emit({ _tag: "Skipped", source: item.source, documentId: item.documentId }), { discard: true }),
      group.filter((_, i) => !same[i])
    )
  })

/** A group of documents: loaded and extracted in rounds (see {@link loadRound}). */
const processGroup = (ctx: RunContext, all: ReadonlyArray<Stages.Item>): Effect.Effect<Array<Stages.Prepared>> =>
  Effect.gen(function*() {
    const group = yield* skipUnchanged(ctx, all)
    const out: Array<Stages.Prepared> = []
    let i = 0
    while (i < group.length) {
      const [hashed, next] = yield* loadRound(ctx, group, i)
      i = next
      if (hashed.length > 0) out.push(...(yield* extractRound(ctx, hashed)))
    }
    return out
  })

/** Embeds a batch (when an embedder is configured); a failed batch fails its documents. */
const embedBatch = (ctx: RunContext, batch: ReadonlyArray<Stages.Prepared>): Effect.Effect<ReadonlyArray<Stages.Prepared>> =>
  Stages.embed(ctx.settings.embedder, ctx.embedding, ctx.request.collection, batch).pipe(
    Effect.catchAll((e) => Effect.as(Effect.forEach(batch, (p) => failed(ctx)(p.item.source, p.item.documentId, e), { discard: true }), [])),
    Effect.withSpan("Ingest.embed", { attributes: { "effect_rag.documents": batch.length } })
  )

/** The three-step write of a batch (see the module doc), then its events. */
const writeBatch = (ctx: RunContext, batch: ReadonlyArray<Stages.Prepared>): Effect.Effect<void, VectorStoreError> =>
  Effect.gen(function*() {
    if (batch.length === 0) return
    const tally = ctx.tally
    const emit = ctx.settings.emit
    const r = yield* Stages.write(ctx.target, batch, timed(tally))
    tally.writes += r.writes
    tally.inserted += r.inserted
    tally.updated += r.updated
    tally.deleted += r.deleted
    for (const p of batch) {
      tally.ingested++
      tally.chunksIngested += p.chunks.length
      yield* emit({ _tag: "Ingested", source: p.item.source, documentId: p.item.documentId, chunks: p.chunks.length })
    }
    yield* emit({ _tag: "BatchWritten", documents: batch.length, chunks: r.chunks, inserted: r.inserted, updated: r.updated, deleted: r.deleted })
  }).pipe(Effect.withSpan("Ingest.write", { attributes: { "effect_rag.documents": batch.length } }))

/**
 * The pipeline: documents in groups of {@link groupSize}, each group one step (its documents
 * loaded, then extracted, one after the other: a fiber and spans per document cost more than
 * reading a small file), `groupsInFlight` groups at once, extraction bounded by its permits;
 * then write batches of `batchDocuments` (or what `batchWindow` gathered), embedded and written
 * one at a time.
 */
const pipeline = (ctx: RunContext): Effect.Effect<void, VectorStoreError> =>
  enumerateItems(ctx).pipe(
    Stream.grouped(groupSize),
    Stream.mapEffect((group) => processGroup(ctx, C.toReadonlyArray(group)), { concurrency: ctx.settings.groupsInFlight }),
    Stream.mapConcat((prepared) => prepared),
    Stream.groupedWithin(ctx.settings.batchDocuments, ctx.settings.batchWindow),
    Stream.mapEffect((g) => embedBatch(ctx, C.toReadonlyArray(g)), { concurrency: ctx.settings.embedConcurrency }),
    Stream.mapEffect((batch) => writeBatch(ctx, batch)),
    Stream.runDrain
  )

/**
 * `prune`: deletes the stored documents of the request's sources that the run did not find;
 * returns how many. Chunks first, markers last: a crash in between leaves markers the rerun prunes.
 */
const prune = (ctx: RunContext): Effect.Effect<number, VectorStoreError> =>
  Effect.gen(function*() {
    const { state, tally, target } = ctx
    if (ctx.request.prune !== true || tally.scopes.length === 0) return 0
    const stored = new Set([...state.markers.keys(), ...state.chunkCounts.keys()])
    const gone = [...stored].filter((id) => !tally.seen.has(id) && tally.scopes.some((s) => s(id)))
    if (gone.length === 0) return 0
    const withChunks = gone.filter((id) => state.chunkCounts.has(id))
    if (withChunks.length > 0) {
      tally.deleted += yield* timed(tally)(target.main.deleteDocuments(withChunks))
      tally.writes++
    }
    const keys = gone.flatMap((id) => {
      const m = state.markers.get(id)
      return m === undefined ? [] : [State.markerKey(id, m)]
    })
    if (keys.length > 0) {
      yield* timed(tally)(target.manifest.deleteDocuments(keys))
      tally.writes++
    }
    yield* ctx.settings.emit({ _tag: "Pruned", documentIds: gone })
    return gone.length
  })

/**
 * Rows a run writes (inserted, updated, deleted) from which it ends with the collection's
 * `optimize()`. A smaller run leaves its rows to the store's own upkeep: its full-text and
 * vector searches read rows written since the last index update without the index (LanceDB
 * scans them; the other stores index as they write), so they are found at once, and the
 * store brings its indexes up to date once such rows or fragments pile up (LanceDB: from the
 * table's stored backlog, whichever process wrote it). One changed file does not pay for a
 * compaction and an index update of the whole collection.
 */
const optimizeAfterRows = 1_000

const rowsWritten = (t: Tally): number => t.inserted + t.updated + t.deleted

/** The summary of a finished run. */
const summaryOf = (ctx: RunContext, started: number, pruned: number, total: number): Summary => {
  const t = ctx.tally
  return {
    collection: ctx.request.collection,
    documents: t.documents,
    ingested: t.ingested,
    skipped: t.skipped,
    failed: t.failures.length,
    pruned,
    chunks: { ingested: t.chunksIngested, inserted: t.inserted, updated: t.updated, deleted: t.deleted, total },
    writes: t.writes,
    failures: t.failures,
    brokenPages: t.brokenPages,
    ignored: t.ignored,
    durationMs: Date.now() - started,
    writeMs: Math.round(t.writeMs)
  }
}

/**
 * The stored state a run needs: of the documents its sources name, when they are a few files
 * or pages (one changed file costs a lookup, not a read of the whole manifest and collection);
 * else all of it (a folder walk or a crawl, and prune, compare against every stored document).
 */
const storedState = (request: Request, target: Stages.Target): Effect.Effect<State.StoredState, VectorStoreError> =>
  Effect.gen(function*() {
    const named = yield* State.namedDocuments(request.sources)
    const some = named === undefined ? undefined : yield* State.loadFor(target.main, target.manifest, named)
    return some ?? (yield* State.load(target.main, target.manifest))
  })

/** Opens the collections and reads their stored state: the context of a run. */
const prepare = (request: Request, options: Options): Effect.Effect<RunContext, IngestError, Upload.Upload | VectorStore> =>
  Effect.gen(function*() {
    const store = yield* VectorStore
    const settings = settingsOf(options)
    const embedding = yield* Stages.probeEmbedding(settings.embedder)
    const target = yield* Stages.open(store, request.collection, embedding)
    return {
      request,
      options,
      settings,
      tally: emptyTally(),
      upload: yield* Upload.Upload,
      web: yield* Effect.serviceOption(Web.Web),
      target,
      state: yield* storedState(request, target),
      embedding,
      extractPermits: yield* Effect.makeSemaphore(settings.extractConcurrency)
    }
  })

/**
 * Runs an ingest and returns its summary. Needs `Upload` and the `VectorStore`; the `Web`
 * service is used when present (URL and site sources fail with `SourceError` `no_web_service`
 * without it). Fails only when the store fails (or the embedder cannot tell its dimension).
 *
 * It composes the stages of `internal/ingest-stages.ts` (enumerate, load, extract, embed, write),
 * the same ones the queue workers of `IngestQueue` compose.
 *
 * @since 0.1.0
 * @category utils
 */
export const run = (
  request: Request,
  options: Options = {}
): Effect.Effect<Summary, IngestError, Upload.Upload | VectorStore> =>
  Effect.gen(function*() {
    const started = Date.now()
    const accessProblem = checkAccess([...options.access ?? [], ...(options.accessRules ?? []).flatMap((r) => r.access)])
    if (accessProblem !== undefined) return yield* new InvalidInput({ message: `ingest: ${accessProblem}` })
    const ctx = yield* prepare(request, options)
    yield* pipeline(ctx)
    const pruned = yield* prune(ctx)
    // index upkeep, once for the whole run: the store leaves rows written since its last index
    // update unindexed (searched flat); bringing them up to date once costs less than per batch
    if (ctx.tally.writes > 0 && rowsWritten(ctx.tally) >= optimizeAfterRows) yield* timed(ctx.tally)(ctx.target.main.optimize())
    const summary = summaryOf(ctx, started, pruned, yield* ctx.target.main.count())
    yield* ctx.settings.emit({ _tag: "Finished", summary })
    return summary
  }).pipe(Effect.withSpan("Ingest.run", { attributes: { collection: request.collection } }))

/**
 * The progress events of a run as a stream, ending with `Finished` (which carries the summary).
 * The run is backpressured by the consumer (a bounded queue of 1,024 events), so a slow consumer
 * slows the run instead of buffering without limit. The stream fails when the run fails.
 *
 * @since 0.1.0
 * @category utils
 */
export const events = (
  request: Request,
  options: Omit<Options, "onProgress"> = {}
): Stream.Stream<ProgressEvent, IngestError, Upload.Upload | VectorStore> =>
  Stream.unwrapScoped(Effect.gen(function*() {
    const queue = yield* Queue.bounded<Take.Take<ProgressEvent, IngestError>>(1024)
    yield* run(request, { ...options, onProgress: (e) => Queue.offer(queue, Take.of(e)) }).pipe(
      Effect.exit,
      Effect.flatMap((exit) => Queue.offer(queue, exit._tag === "Success" ? Take.end : Take.failCause(exit.cause))),
      Effect.forkScoped
    )
    return Stream.fromQueue(queue).pipe(Stream.flattenTake)
  }))

/**
 * The spec of an ingest collection (the declared fields `source`, `source_hash`, `page`, `type`).
 *
 * @since 0.1.0
 * @category constants
 */
export const collectionSpec = State.collectionSpec

/**
 * The metadata fields an ingest declares (usable in query filters).
 *
 * @since 0.1.0
 * @category constants
 */
export const fields = State.fields

/**
 * The name of a collection's manifest collection (`<name>__ingest`).
 *
 * @since 0.1.0
 * @category utils
 */
export const manifestName = State.manifestName

/**
 * Whether a collection name is a manifest collection (hidden from listings). Names ending with
 * `__ingest` are reserved: `run` refuses them as a collection (`InvalidInput`).
 *
 * @since 0.1.0
 * @category utils
 */
export const isManifest = State.isManifest

/**
 * Drops a collection and its manifest. A manifest's own name (`<name>__ingest`) fails with
 * `InvalidInput`: dropping a manifest alone would make every document look incomplete.
 *
 * @since 0.1.0
 * @category utils
 */
export const dropCollection = (name: string): Effect.Effect<void, VectorStoreError, VectorStore> =>
  State.isManifest(name) ? Effect.fail(State.reservedName(name)) : Effect.flatMap(VectorStore, (store) =>
    store.drop(name).pipe(Effect.zipRight(store.drop(State.manifestName(name)))))

/**
 * Reads a collection's completed documents (its manifest markers): id, hash and chunk count.
 *
 * @since 0.1.0
 * @category utils
 */
export const completedDocuments = (
  collection: Collection,
  manifest: Collection
): Effect.Effect<ReadonlyArray<{ readonly documentId: string; readonly hash: string; readonly chunks: number }>, VectorStoreError> =>
  Effect.map(State.load(collection, manifest), (s) =>
    [...s.markers.entries()].map(([documentId, m]) => ({ documentId, hash: m.hash, chunks: m.chunks })))
