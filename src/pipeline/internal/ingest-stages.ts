/**
 * The stages of the ingest pipeline, composed by the single-process run (`Ingest.run`) and by
 * the queue workers (`IngestQueue`): enumerate, load (+ hash), extract (+ chunk), embed, write.
 *
 * Each stage is a plain function of its inputs; counters, progress events and concurrency are
 * the composer's. A document travels as an {@link Item}: its source, its document id, and an
 * {@link Origin} that says how to load it. An origin is plain data (JSON), so a queue job can
 * carry it to another process.
 *
 * @since 0.1.0
 */
import { Data, Duration, Effect, Option, Stream } from "effect"
import { stat } from "node:fs/promises"
import { basename, resolve } from "node:path"
import { describeKind, type ReadRefusal, readRegularFile, type SpecialKind, specialKind, statPath } from "../../internal/files.js"
import type * as Embeddings from "../../api/Embeddings.js"
import * as Upload from "../../api/Upload.js"
import type * as Web from "../../api/Web.js"
import * as RagError from "../../RagError.js"
import {
  type Chunk,
  type Collection,
  documentIdField,
  EmbeddingMismatch,
  Filter,
  type Service as VectorStoreService,
  type VectorStoreError
} from "../../store/VectorStore.js"
import * as Sources from "./ingest-sources.js"
import * as State from "./ingest-state.js"

// =============================================================================
// Types
// =============================================================================

/**
 * A source that cannot be read: missing path, unreadable folder, bad URL, failed crawl, no web
 * service, a path that is a special file when it is loaded (`special_file`: a FIFO, socket or
 * device, never opened), a read that did not finish within the time-out (`read_timeout`).
 */
export class SourceError extends Data.TaggedError("SourceError")<{
  readonly source: string
  readonly reason:
    | "not_found"
    | "unreadable"
    | "invalid_url"
    | "no_web_service"
    | "crawl_failed"
    | "page_failed"
    | "special_file"
    | "read_timeout"
  readonly message: string
}> {}

/** A special file (FIFO, socket, device, or a link to one) an enumeration skipped: never opened. */
export interface Ignored {
  readonly source: string
  readonly documentId: string
  readonly reason: SpecialKind
  readonly message: string
}

/** Why one document failed. */
export type DocumentError = Upload.UploadError | RagError.ApiError | RagError.TaskFailed | SourceError | EmbeddingMismatch

/** A page of a crawled site that answered an HTTP error. */
export interface BrokenPage {
  readonly site: string
  readonly url: string
  readonly statusCode: number
}

/** An embedder: an id (stored as the collection's embedding model) and the service. */
export interface Embedder {
  readonly id: string
  readonly service: Embeddings.Service
}

/**
 * How a document is loaded (plain data: a queue job carries it). A file's `path` is printable;
 * when its name is not valid UTF-8, `pathBytes` holds the path's bytes (base64), which open it.
 */
export type Origin =
  | { readonly _tag: "File"; readonly path: string; readonly pathBytes?: string | undefined }
  | { readonly _tag: "Url"; readonly url: string }
  /** A page a crawl returned, with its content. */
  | { readonly _tag: "Page"; readonly page: Web.CrawlPage }

/** A document to load. */
export interface Item {
  readonly source: string
  readonly documentId: string
  readonly origin: Origin
  /** The access list its chunks get (undefined: none, readable only unrestricted). */
  readonly access?: ReadonlyArray<string> | undefined
}

/**
 * What an access list adds to a content hash: nothing without one (hashes stay those of runs
 * before access lists), else its sorted entries, so that a new list re-ingests the document.
 */
export const accessHashInput = (access: ReadonlyArray<string> | undefined): string =>
  access === undefined ? "" : `\0access:${[...new Set(access)].sort().join("\n")}`

/** A loaded document. */
export interface Loaded {
  readonly file: Upload.UploadFile
  readonly title: string | undefined
  readonly hashInput: string
  /** A file's stat just before its read, and when the read started (for its marker's signature). */
  readonly stat?: { readonly info: State.FileStat; readonly readAt: number } | undefined
}

/** A loaded document with its content hash. */
export interface Hashed {
  readonly item: Item
  readonly loaded: Loaded
  readonly hash: string
  /** The file's stat signature to record in its marker, when trustworthy. */
  readonly sig?: string | undefined
}

/** A document extracted and chunked, ready to embed and write. */
export interface Prepared {
  readonly item: Item
  readonly hash: string
  /** Whether anything of this document may be stored (older generations to delete when written). */
  readonly prior: boolean
  readonly chunks: Array<Chunk>
  /** The file's stat signature for its marker (see {@link Hashed.sig}). */
  readonly sig?: string | undefined
}

/** What one batch write did. */
export interface WriteResult {
  readonly chunks: number
  readonly inserted: number
  readonly updated: number
  readonly deleted: number
  /** Store write operations issued. */
  readonly writes: number
}

// =============================================================================
// Enumerate
// =============================================================================

/** The sources of an ingest (`Ingest.Source`): a file or folder, a page, or a site to crawl. */
export type SourceSpec =
  | { readonly _tag: "Path"; readonly path: string }
  | { readonly _tag: "Url"; readonly url: string }
  | {
    readonly _tag: "Site"
    readonly url: string
    /** Links deep to follow (the web engine's default when omitted). */
    readonly maxDepth?: number | undefined
    /** Most pages (the web engine's default when omitted). */
    readonly limit?: number | undefined
    /** Crawl path patterns to include / exclude (the web service's `includePaths` / `excludePaths`). */
    readonly includePaths?: ReadonlyArray<string> | undefined
    readonly excludePaths?: ReadonlyArray<string> | undefined
  }

/** What the enumeration reports to its composer. */
export interface EnumerateHooks {
  /** The known number of documents grew by `n`. */
  readonly plan: (n: number) => Effect.Effect<void>
  /** A source (or a document of it) failed before loading. */
  readonly fail: (source: string, documentId: string, error: DocumentError) => Effect.Effect<void>
  /** A prune scope: a predicate over document ids, added once a source enumerated completely. */
  readonly scope: (predicate: (documentId: string) => boolean) => void
  /** A broken link of a crawled site. */
  readonly broken: (page: BrokenPage) => void
  /** A special file that is skipped (default: left out silently). */
  readonly ignore?: ((ignored: Ignored) => Effect.Effect<void>) | undefined
}

const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e))

const noWeb = (source: string) =>
  new SourceError({ source, reason: "no_web_service", message: `${source}: web sources need the Web service (e.g. LocalWeb.layer)` })

type Filters = { readonly include: ReadonlyArray<string>; readonly exclude: ReadonlyArray<string> }

const fileItem = (p: Sources.FilePath): Item => ({
  source: p.path,
  documentId: Sources.fileDocumentId(p.bytes ?? p.path),
  origin: { _tag: "File", path: p.path, ...(p.bytes !== undefined ? { pathBytes: p.bytes.toString("base64") } : {}) }
})

/** Reports a special file to the hooks (when they listen): skipped, never opened. */
const ignoreFile = (hooks: EnumerateHooks, p: Sources.FilePath, kind: SpecialKind): Effect.Effect<void> =>
  hooks.ignore?.({
    source: p.path,
    documentId: Sources.fileDocumentId(p.bytes ?? p.path),
    reason: kind,
    message: `${describeKind(kind)}, not a regular file`
  }) ?? Effect.void

/** The documents of a path: a file, or a folder walked as it is consumed (a prune scope once walked completely). */
const pathItems = (path: string, filters: Filters, hooks: EnumerateHooks): Stream.Stream<Item> =>
  Stream.unwrap(Effect.gen(function*() {
    const abs = resolve(path)
    const info = yield* Effect.promise(() => stat(abs).catch(() => undefined))
    if (info === undefined) {
      yield* hooks.fail(path, Sources.fileDocumentId(abs), new SourceError({ source: path, reason: "not_found", message: `${path}: no such file or folder` }))
      hooks.scope((id) => id === Sources.fileDocumentId(abs))
      return Stream.empty
    }
    if (!info.isDirectory()) {
      hooks.scope((id) => id === Sources.fileDocumentId(abs))
      const kind = specialKind(info)
      if (kind !== undefined) {
        yield* ignoreFile(hooks, { path: abs }, kind)
        return Stream.empty
      }
      yield* hooks.plan(1)
      return Stream.make(fileItem({ path: abs }))
    }
    return yield* folderItems(path, abs, filters, hooks)
  }))

/** The files of a folder (counted up front for the plan), walked as the stream is consumed. */
const folderItems = (path: string, abs: string, filters: Filters, hooks: EnumerateHooks): Effect.Effect<Stream.Stream<Item>> =>
  Effect.gen(function*() {
    const { exclude, include } = filters
    const counted = yield* Effect.either(Effect.tryPromise(() => Sources.countFiles(abs, include, exclude)))
    if (counted._tag === "Right") yield* hooks.plan(counted.right)
    let complete = true
    return Stream.fromAsyncIterable(Sources.walk(abs, include, exclude), (e) => e).pipe(
      Stream.mapEffect((e) => e.special !== undefined ? Effect.as(ignoreFile(hooks, e, e.special), Option.none<Item>()) : Effect.succeed(Option.some(fileItem(e)))),
      Stream.filterMap((o) => o),
      Stream.catchAll((e) => {
        complete = false
        return Stream.fromEffect(
          hooks.fail(path, Sources.folderPrefix(abs), new SourceError({ source: path, reason: "unreadable", message: `${path}: ${errorMessage(e)}` }))
        ).pipe(Stream.drain)
      }),
      Stream.ensuring(Effect.sync(() => {
        const prefix = Sources.folderPrefix(abs)
        if (complete) hooks.scope((id) => id.startsWith(prefix))
      }))
    )
  })

/** The document of one page's URL. */
const urlItems = (url: string, hooks: EnumerateHooks): Stream.Stream<Item> =>
  Stream.unwrap(Effect.gen(function*() {
    const id = Sources.urlDocumentId(url)
    if (id === undefined) {
      yield* hooks.fail(url, url, new SourceError({ source: url, reason: "invalid_url", message: `${url}: not an http(s) URL` }))
      return Stream.empty
    }
    yield* hooks.plan(1)
    hooks.scope((d) => d === id)
    return Stream.make<[Item]>({ source: url, documentId: id, origin: { _tag: "Url", url } })
  }))

type SiteSpec = Extract<SourceSpec, { _tag: "Site" }>

/** Crawls a site to its end; succeeds with the crawl's id. */
const crawlSite = (w: Web.Service, site: SiteSpec) =>
  w.crawl({
    url: site.url,
    ...(site.maxDepth !== undefined ? { maxDepth: site.maxDepth } : {}),
    ...(site.limit !== undefined ? { limit: site.limit } : {}),
    ...(site.includePaths !== undefined ? { includePaths: site.includePaths } : {}),
    ...(site.excludePaths !== undefined ? { excludePaths: site.excludePaths } : {}),
    scrapeOptions: { formats: ["markdown"], onlyMainContent: true }
  }).pipe(Effect.flatMap((s) => w.waitForCrawl(s.id, { interval: "500 millis" }).pipe(Effect.as(s.id))))

/** The document of a crawled page; none for a page without a URL, or a broken link (reported to the hooks). */
const pageItem = (site: SiteSpec, siteId: string, hooks: EnumerateHooks, page: Web.CrawlPage): Option.Option<Item> => {
  const pageUrl = page.metadata.url ?? page.metadata.sourceURL
  const pageId = pageUrl === undefined ? undefined : Sources.urlDocumentId(pageUrl)
  if (pageId === undefined) return Option.none()
  const status = page.metadata.statusCode ?? 200
  if (status >= 400 && pageId !== siteId) {
    // a broken link of the site: reported, not a document, not a failure
    hooks.broken({ site: site.url, url: pageUrl!, statusCode: status })
    return Option.none()
  }
  return Option.some<Item>({ source: pageUrl!, documentId: pageId, origin: { _tag: "Page", page } })
}

/** The pages of a site, crawled when reached (a prune scope once its pages were read completely). */
const siteItems = (site: SiteSpec, web: Option.Option<Web.Service>, hooks: EnumerateHooks): Stream.Stream<Item> =>
  Stream.unwrap(Effect.gen(function*() {
    const prefix = Sources.sitePrefix(site.url)
    const id = Sources.urlDocumentId(site.url)
    if (prefix === undefined || id === undefined) {
      yield* hooks.fail(site.url, site.url, new SourceError({ source: site.url, reason: "invalid_url", message: `${site.url}: not an http(s) URL` }))
      return Stream.empty
    }
    if (Option.isNone(web)) {
      yield* hooks.fail(site.url, id, noWeb(site.url))
      return Stream.empty
    }
    const w = web.value
    const crawled = yield* Effect.either(crawlSite(w, site))
    if (crawled._tag === "Left") {
      yield* hooks.fail(site.url, id, crawled.left)
      return Stream.empty
    }
    const job = yield* Effect.either(w.crawlStatus(crawled.right))
    if (job._tag === "Right") yield* hooks.plan(job.right.completed)
    let complete = true
    return w.crawlPages(crawled.right).pipe(
      Stream.filterMap((page) => pageItem(site, id, hooks, page)),
      Stream.catchAll((e) => {
        complete = false
        return Stream.fromEffect(hooks.fail(site.url, id, e)).pipe(Stream.drain)
      }),
      Stream.ensuring(Effect.sync(() => {
        if (complete) hooks.scope((d) => d.startsWith(prefix))
      }))
    )
  }))

/**
 * Enumerates the documents of the sources, lazily and in order (a folder is walked as it is
 * consumed; a site is crawled when reached). Documents are not deduplicated here.
 */
export const enumerate = (
  sources: ReadonlyArray<SourceSpec>,
  filters: Filters,
  web: Option.Option<Web.Service>,
  hooks: EnumerateHooks
): Stream.Stream<Item> =>
  Stream.fromIterable(sources).pipe(
    Stream.flatMap((s) =>
      (s._tag === "Path" ? pathItems(s.path, filters, hooks) : s._tag === "Url" ? urlItems(s.url, hooks) : siteItems(s, web, hooks)).pipe(
        Stream.withSpan("Ingest.enumerate", { attributes: { "effect_rag.source.kind": s._tag } })
      )
    )
  )

// =============================================================================
// Load
// =============================================================================

const utf8 = new TextEncoder()

const pageFile = (documentId: string, page: Web.CrawlPage): Effect.Effect<Loaded, SourceError> => {
  if (page.metadata.error !== undefined && (page.markdown ?? "") === "") {
    return Effect.fail(new SourceError({ source: documentId, reason: "page_failed", message: `${documentId}: ${page.metadata.error}` }))
  }
  const status = page.metadata.statusCode ?? 200
  if (status >= 400) {
    // an error page is never a document
    return Effect.fail(new SourceError({ source: documentId, reason: "page_failed", message: `${documentId}: HTTP ${status}` }))
  }
  const title = page.metadata.title ?? undefined
  return Effect.succeed({
    file: { name: "page.md", data: utf8.encode(page.markdown ?? ""), type: "text/markdown" },
    title,
    hashInput: `page\0${title ?? ""}`
  })
}

/** The default time-out of a file read (as the local engine's per-file time-out): 120 seconds. */
export const defaultReadTimeout: Duration.Duration = Duration.seconds(120)

/** The error of a file `readRegularFile` would not read (as `Upload.fromPath` words it). */
const refusal = (name: string, r: ReadRefusal): DocumentError => {
  const endpoint = "read file"
  switch (r._tag) {
    case "Special":
      return new RagError.BadRequest({ endpoint, message: `${name} is ${describeKind(r.kind)}, not a regular file` })
    case "NotAFile":
      return new RagError.BadRequest({ endpoint, message: `${name} is not a file` })
    case "TooLarge":
      return new RagError.PayloadTooLarge({
        endpoint,
        message: `${name} is ${r.size} bytes; the limit is ${Upload.maxFileBytes} bytes (50 MiB)`,
        size: r.size,
        limit: Upload.maxFileBytes
      })
  }
}

/**
 * Reads a file: its type first (a special file fails with `SourceError` `special_file`, never
 * opened: a FIFO made after the enumeration, say), then its bytes, all within `timeout`
 * (`read_timeout`). One callback from start to end (no fiber, no Effect step per system call: an
 * ingest of many small files spent more in those than in the reads).
 */
const loadFile = (
  origin: Extract<Origin, { _tag: "File" }>,
  timeout: Duration.DurationInput
): Effect.Effect<Loaded, DocumentError> => {
  const path = origin.pathBytes !== undefined ? Buffer.from(origin.pathBytes, "base64") : origin.path
  const ms = Duration.toMillis(Duration.decode(timeout))
  const name = basename(origin.path)
  return Effect.async<Loaded, DocumentError>((resume) => {
    let settled = false
    const settle = (result: Effect.Effect<Loaded, DocumentError>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(result)
    }
    const timer = setTimeout(() =>
      settle(Effect.fail(
        new SourceError({ source: origin.path, reason: "read_timeout", message: `${origin.path}: not read within ${Duration.format(timeout)}` })
      )), ms)
    const read = async (): Promise<Effect.Effect<Loaded, DocumentError>> => {
      const readAt = Date.now()
      const info = await statPath(path).catch(() => undefined)
      const kind = info === undefined ? undefined : specialKind(info)
      if (kind !== undefined) {
        return Effect.fail(new SourceError({ source: origin.path, reason: "special_file", message: `${origin.path}: ${describeKind(kind)}, not a regular file` }))
      }
      if (settled) return Effect.fail(new SourceError({ source: origin.path, reason: "read_timeout", message: `${origin.path}: abandoned` }))
      const r = await readRegularFile(path, Upload.maxFileBytes, () => settled)
      if ("data" in r) {
        return Effect.succeed({
          file: { name, data: new Uint8Array(r.data.buffer, r.data.byteOffset, r.data.byteLength) },
          title: undefined,
          hashInput: "file",
          ...(info !== undefined ? { stat: { info, readAt } } : {})
        })
      }
      return Effect.fail(refusal(name, r))
    }
    read().then(settle, (cause: unknown) =>
      settle(Effect.fail(new RagError.BadRequest({ endpoint: "read file", message: `cannot read ${name}: ${(cause as Error)?.message ?? cause}` }))))
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
    })
  })
}

/**
 * Loads a document (reads the file, scrapes the URL, or takes the crawled page). A file read
 * has a time-out (`readTimeout`, default {@link defaultReadTimeout}).
 */
export const load = (
  item: Item,
  web: Option.Option<Web.Service>,
  options: { readonly readTimeout?: Duration.DurationInput | undefined } = {}
): Effect.Effect<Loaded, DocumentError> => {
  const origin = item.origin
  switch (origin._tag) {
    case "File":
      return loadFile(origin, options.readTimeout ?? defaultReadTimeout)
    case "Page":
      return pageFile(item.documentId, origin.page)
    case "Url":
      return Option.match(web, {
        onNone: () => Effect.fail(noWeb(origin.url)),
        onSome: (w) =>
          w.scrape({ url: origin.url, formats: ["markdown"], onlyMainContent: true }).pipe(
            Effect.flatMap((r) => pageFile(item.documentId, r.data))
          )
      })
  }
}

/**
 * Which of a group's files are unchanged since their marker was written: stored complete, and a
 * `stat` now gives the marker's signature. The stats run at once; nothing is opened or read.
 */
export const unchanged = (
  state: State.StoredState,
  fingerprint: string,
  group: ReadonlyArray<Item>
): Effect.Effect<ReadonlyArray<boolean>> => {
  const sigs = group.map((item) => (item.origin._tag === "File" ? State.completeMarker(state, item.documentId)?.sig : undefined))
  if (sigs.every((s) => s === undefined)) return Effect.succeed(sigs.map(() => false))
  return Effect.promise(() =>
    Promise.all(group.map(async (item, i) => {
      const sig = sigs[i]
      if (sig === undefined || item.origin._tag !== "File") return false
      const path = item.origin.pathBytes !== undefined ? Buffer.from(item.origin.pathBytes, "base64") : item.origin.path
      const info = await statPath(path).catch(() => undefined)
      return info !== undefined && info.isFile() && State.statSignature(hashPrefix(fingerprint, "file", item), info) === sig
    }))
  )
}

/** What a document's content hash covers besides its bytes: the pipeline fingerprint, how it was loaded, its access list. */
export const hashPrefix = (fingerprint: string, hashInput: string, item: Item): string =>
  `${fingerprint}\0${hashInput}${accessHashInput(item.access)}`

/** The content hash of a loaded document under a pipeline fingerprint (and a file's stat signature). */
export const hash = (fingerprint: string, item: Item, loaded: Loaded): Hashed => {
  const prefix = hashPrefix(fingerprint, loaded.hashInput, item)
  const sig = loaded.stat === undefined ? undefined : State.signatureToRecord(prefix, loaded.stat.info, loaded.stat.readAt)
  return { item, loaded, hash: State.contentHash(prefix, loaded.file.data), ...(sig !== undefined ? { sig } : {}) }
}

// =============================================================================
// Extract
// =============================================================================

/** A document's chunks as the store keeps them, from its extraction result. */
const preparedOf = (x: Hashed, prior: boolean, result: Upload.EmbeddingsResult): Prepared => {
  const { hash, item } = x
  const meta = result.data.data.metadata
  const title = x.loaded.title || meta.title || basename(item.source)
  const all = result.data.data.chunks
  const chunks = all.map((c, i): Chunk => ({
    id: State.chunkId(item.documentId, hash, i),
    documentId: item.documentId,
    text: c.content,
    title,
    ...(item.access !== undefined ? { access: item.access } : {}),
    metadata: {
      source: item.source,
      source_hash: hash,
      page: c.from_page,
      ...(c.from_sheet !== undefined ? { sheet: c.from_sheet } : {}),
      ...(c.ocr === true ? { ocr: true } : {}),
      type: result.type,
      language: meta.language,
      chunk: i,
      chunks: all.length,
      tokens: c.total_tokens
    }
  }))
  return { item, hash, prior, chunks, ...(x.sig !== undefined ? { sig: x.sig } : {}) }
}

/**
 * Extracts and chunks a document through `Upload`; a document without text fails
 * (`ExtractionError` `empty`). One step after the call (it runs once per document).
 */
export const extract = (
  upload: Upload.Service,
  uploadOptions: Upload.UploadOptions,
  x: Hashed,
  prior: boolean
): Effect.Effect<Prepared, DocumentError> =>
  Effect.flatMap(upload.extractChunks(x.loaded.file, uploadOptions), (result) =>
    // a document that yields no text is a failure, whichever engine extracted it
    result.data.data.chunks.some((c) => c.content.trim() !== "")
      ? Effect.succeed(preparedOf(x, prior, result))
      : Effect.fail(
        new RagError.ExtractionError({
          file: x.loaded.file.name,
          reason: "empty",
          message: "the document yields no text: nothing to store"
        })
      ))

// =============================================================================
// Embed
// =============================================================================

/** The embedding settings of a collection: the embedder's id and its dimension (probed when unknown). */
export const probeEmbedding = (
  embedder: Embedder | undefined
): Effect.Effect<{ model: string; dimension: number } | undefined, RagError.ApiError> =>
  embedder === undefined
    ? Effect.succeed(undefined)
    : Effect.map(
      embedder.service.dimension !== undefined
        ? Effect.succeed(embedder.service.dimension)
        : Effect.map(embedder.service.embed(["dimension probe"]), (r) => r.vectors[0]?.length ?? 0),
      (dimension) => ({ model: embedder.id, dimension })
    )

/** Embeds a batch's chunks in one call; the batch fails as a whole. Without an embedder, the batch as it is. */
export const embed = (
  embedder: Embedder | undefined,
  embedding: { readonly dimension: number } | undefined,
  collection: string,
  batch: ReadonlyArray<Prepared>
): Effect.Effect<ReadonlyArray<Prepared>, RagError.ApiError | EmbeddingMismatch> => {
  if (embedder === undefined || embedding === undefined) return Effect.succeed(batch)
  const texts = batch.flatMap((p) => p.chunks.map((c) => c.text))
  if (texts.length === 0) return Effect.succeed(batch)
  const dim = embedding.dimension
  return embedder.service.embed(texts).pipe(
    Effect.flatMap((r) => {
      if (r.vectors.length !== texts.length || r.vectors.some((v) => v.length !== dim)) {
        return Effect.fail(
          new EmbeddingMismatch({
            collection,
            expected: `${texts.length} vectors of ${dim} dimensions`,
            actual: `${r.vectors.length} vectors`,
            message: `the embedder ${embedder.id} returned ${r.vectors.length} vectors of ${r.vectors[0]?.length ?? 0} dimensions for ${texts.length} texts (expected ${dim})`
          })
        )
      }
      let k = 0
      return Effect.succeed(batch.map((p) => ({ ...p, chunks: p.chunks.map((c) => ({ ...c, vector: r.vectors[k++]! })) })))
    })
  )
}

// =============================================================================
// Write
// =============================================================================

/** The collection and its manifest, opened (created when missing). */
export interface Target {
  readonly main: Collection
  readonly manifest: Collection
}

/**
 * Opens (creates when missing) a collection and its manifest. A name ending with the manifest
 * suffix (`__ingest`) is reserved for the manifests and fails with `InvalidInput`.
 */
export const open = (
  store: VectorStoreService,
  collection: string,
  embedding: { model: string; dimension: number } | undefined
): Effect.Effect<Target, VectorStoreError> =>
  State.isManifest(collection) ? Effect.fail(State.reservedName(collection)) : Effect.all({
    main: store.collection(State.collectionSpec(collection, embedding)),
    manifest: store.collection(State.manifestSpec(collection))
  }, { concurrency: 1 })

/**
 * The loss-free write of a batch, in three steps: 1. upsert the chunks (merge-insert by id);
 * 2. delete the chunks of other hashes of the documents that may have had something stored;
 * 3. upsert the completion markers, last. `timed` wraps each store call (the composer's clock).
 */
export const write = (
  target: Target,
  batch: ReadonlyArray<Prepared>,
  timed: <A, E>(write: Effect.Effect<A, E>) => Effect.Effect<A, E> = (w) => w
): Effect.Effect<WriteResult, VectorStoreError> =>
  Effect.gen(function*() {
    const chunks = batch.flatMap((p) => p.chunks)
    let inserted = 0
    let updated = 0
    let deleted = 0
    let writes = 0
    if (batch.length === 0) return { chunks: 0, inserted, updated, deleted, writes }
    // 1. the chunks
    if (chunks.length > 0) {
      const r = yield* timed(target.main.upsert(chunks))
      writes++
      inserted += r.inserted
      updated += r.updated
    }
    // 2. older generations of documents that had something stored
    const stale = batch.filter((p) => p.prior)
    if (stale.length > 0) {
      deleted += yield* timed(target.main.deleteWhere(Filter.or(...stale.map((p) =>
        Filter.and(Filter.eq(documentIdField, p.item.documentId), Filter.ne("source_hash", p.hash))
      ))))
      writes++
    }
    // 3. the completion markers, last
    yield* timed(target.manifest.upsert(batch.map((p) => ({
      id: p.item.documentId,
      documentId: State.markerKey(p.item.documentId, { hash: p.hash, chunks: p.chunks.length, sig: p.sig }),
      text: p.item.source
    }))))
    writes++
    return { chunks: chunks.length, inserted, updated, deleted, writes }
  })
