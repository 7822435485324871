/**
 * The local document engine: the {@link Upload.Upload} service computed in-process, so that a
 * program switches between the remote upload endpoint and local extraction by swapping one
 * layer.
 *
 * Formats: PDF, DOCX, PPTX, XLSX, XLS, OpenDocument (ODT, ODS, ODP and their flat forms), EPUB, CSV, JSON, XML, HTML, TXT, Markdown (front matter as
 * metadata), Jupyter notebooks, SVG and raster images (OCR, offline). A result's `type` is the
 * spec's category (`text` for HTML, `xlsx` for XLS); its `format` extension is the file's own. Audio is transcribed only when a speech service is configured (`speech`, e.g. the
 * remote upload endpoint through {@link layerWithRemoteSpeech}); otherwise it fails with
 * `speech_unavailable`.
 *
 * Every extraction runs in a child process with a time-out and a heap limit (see `isolation`),
 * so a hostile or broken file ends in a typed {@link RagError.ExtractionError}, never a defect
 * or a hung program. The exception is small plain text (TXT, Markdown: by detected type, up to
 * `inProcessBytes`), whose extraction and chunking take no parser library and a bounded time, so
 * they run in this process without the round trip (see `inProcessBytes`).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Layer, type Scope } from "effect"
import type { ApiHttp } from "../../api/ApiHttp.js"
import * as Upload from "../../api/Upload.js"
import { type TiktokenEncoding, tiktoken, type Tokenizer } from "./internal/chunk/tokenizer.js"
import { Isolate } from "./internal/extract/isolate.js"
import { defaultLangPath, shutdownOcr } from "./internal/extract/ocr.js"
import { type ChunkSettings, Extraction, type OcrSettings } from "./internal/files/extraction.js"
import { checkRequest, resolveCall } from "./internal/files/request.js"
import { embeddingsResult, finalUnits, standardResult } from "./internal/files/results.js"
import { save } from "./internal/files/save.js"

/**
 * Counts tokens the way an embedding model does (the `tokenizer` option).
 *
 * @since 0.1.0
 * @category models
 */
export type { Tokenizer } from "./internal/chunk/tokenizer.js"

// =============================================================================
// Options
// =============================================================================

/**
 * Transcribes an audio file (the local engine has no speech model of its own).
 *
 * @since 0.1.0
 * @category models
 */
export type Speech = (file: Upload.UploadFile) => Effect.Effect<string, Upload.UploadError>

/**
 * Settings of the local engine. Every field is optional.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Chunk size in tokens for embeddings mode. Default 512. */
  readonly chunkSize?: number | undefined
  /** Tokens shared by consecutive chunks of one section. Default 64 (at most half the size). */
  readonly chunkOverlap?: number | undefined
  /**
   * The tokenizer that counts chunk tokens: a tiktoken encoding name (default `cl100k_base`,
   * the encoding of OpenAI's text-embedding-3 models) or the embedding model's own tokenizer.
   * With an encoding name, chunking runs in the extraction process (`process` isolation); a
   * tokenizer object (a function) cannot cross a process boundary, so chunking with it runs in
   * this process.
   */
  readonly tokenizer?: TiktokenEncoding | Tokenizer | undefined
  /** Time-out per file. Default 120 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Where `save_all` keeps the raw file and the result. Without it, `save_all` only warns. */
  readonly saveDir?: string | undefined
  /**
   * Whether OCR is available at all. Default true: PDF pages whose text layer is missing or
   * garbage are OCR'd unless a call sets `enable_ocr: false`, and images with `enable_ocr: true`.
   */
  readonly ocr?: boolean | undefined
  /** Tesseract languages, `+`-separated. Default `eng`. */
  readonly ocrLanguages?: string | undefined
  /**
   * Folder of gzip tesseract traineddata. Default: the data of the `@tesseract.js-data/eng`
   * package (4.0.0_best_int).
   */
  readonly ocrLangPath?: string | undefined
  /**
   * `process` (default): each extraction runs in a reusable child process that is killed at the
   * time-out, so even a parser stuck in a synchronous loop is bounded; so does the chunking of
   * embeddings mode (with a tiktoken `tokenizer` name), so neither holds this process's event
   * loop. `inline`: in this process; cheaper to start, but the time-out can only interrupt
   * parsers that yield, and chunking runs on this process's event loop.
   */
  readonly isolation?: "process" | "inline" | undefined
  /**
   * Plain text files (detected type TXT, which includes Markdown) up to this many bytes are
   * extracted and chunked in this process even with `process` isolation: decoding, tidying and
   * chunking them is linear in their size and needs no parser library, so a file this small
   * holds the event loop for milliseconds (a few hundred at worst, for text built to be slow:
   * `benchmarks/inprocess-text.ts`), far below the time-out, and cannot approach the heap
   * limit. Every other format, and larger text, goes to the extraction processes. Default
   * 16 KiB; 0 sends every file there.
   */
  readonly inProcessBytes?: number | undefined
  /** Extraction processes run at once (`process` isolation). Default 1. */
  readonly concurrency?: number | undefined
  /** Heap limit of an extraction process in MiB. Default 2048. */
  readonly memoryMb?: number | undefined
  /**
   * Memory (RSS) of an extraction process in MiB after which it is replaced by a fresh one once
   * it has answered (`process` isolation). Default 1024.
   */
  readonly recycleMb?: number | undefined
  /**
   * How long an extraction process without work is kept before it exits (`process` isolation):
   * its memory goes back once the files that needed it are done, and the next such file starts
   * a fresh one. Default 60 seconds (a server with steady traffic keeps its processes warm).
   */
  readonly processIdle?: Duration.DurationInput | undefined
  /** The speech-recognition service for audio files. Without it, audio fails with `speech_unavailable`. */
  readonly speech?: Speech | undefined
  /** Option values used when a call leaves them unset (e.g. `{ enable_ocr: true }`). */
  readonly defaults?: Upload.UploadOptions | undefined
}

/**
 * The default chunk size in tokens.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultChunkSize = 512
/**
 * The default chunk overlap in tokens.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultChunkOverlap = 64
/**
 * The default per-file time-out.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTimeout: Duration.Duration = Duration.seconds(120)
/**
 * The default size up to which plain text is extracted and chunked in this process.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultInProcessBytes = 16 * 1024

// =============================================================================
// Service
// =============================================================================

/** The extraction processes of `process` isolation (none `inline`), closed with the scope. */
const processes = (options: Options): Effect.Effect<Isolate | undefined, never, Scope.Scope> =>
  options.isolation === "inline"
    ? Effect.as(Effect.addFinalizer(() => Effect.promise(() => shutdownOcr())), undefined)
    : Effect.acquireRelease(
      Effect.sync(() =>
        new Isolate({
          concurrency: options.concurrency ?? 1,
          memoryMb: options.memoryMb ?? 2048,
          recycleMb: options.recycleMb,
          idleMs: options.processIdle === undefined ? undefined : Duration.toMillis(Duration.decode(options.processIdle))
        })
      ),
      (pool) => Effect.sync(() => pool.close())
    )

/** The chunking settings: size, overlap, and the tokenizer (loaded once, on first use). */
const chunking = (options: Options): Effect.Effect<ChunkSettings> => {
  const configured = options.tokenizer
  return Effect.map(
    Effect.cached(
      typeof configured === "object"
        ? Effect.succeed(configured)
        : Effect.promise(() => tiktoken(configured ?? "cl100k_base"))
    ),
    (tokenizer) => ({
      size: options.chunkSize ?? defaultChunkSize,
      overlap: options.chunkOverlap ?? defaultChunkOverlap,
      encoding: typeof configured === "object" ? undefined : (configured ?? "cl100k_base"),
      tokenizer
    })
  )
}

/** The OCR settings: no trained data when OCR is off. */
const ocrSettings = (options: Options): OcrSettings => ({
  langPath: options.ocr === false ? undefined : (options.ocrLangPath ?? defaultLangPath()),
  languages: options.ocrLanguages ?? "eng"
})

/**
 * A span per call names its file; without the call site's stack trace, which V8 would capture
 * for every file (a span's stack locates this module's code, and says nothing about the file).
 */
const spanOptions = (file: Upload.UploadFile) => ({ attributes: { file: file.name }, captureStackTrace: false })

/**
 * Builds the local upload service. The extraction processes (if any) live in the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<Upload.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const defaults = options.defaults ?? {}
    const extraction = new Extraction({
      isolate: yield* processes(options),
      timeoutMs: Duration.toMillis(Duration.decode(options.timeout ?? defaultTimeout)),
      inProcessBytes: options.inProcessBytes ?? defaultInProcessBytes,
      ocr: ocrSettings(options),
      chunking: yield* chunking(options),
      speech: options.speech
    })

    /** The checked request, its document and the pages after `remove_headers`. */
    const read = (file: Upload.UploadFile, callOptions: Upload.UploadOptions) =>
      Effect.gen(function*() {
        const opts = resolveCall(defaults, callOptions)
        yield* checkRequest(file, opts)
        const { doc, warnings } = yield* extraction.document(file, opts)
        return { opts, doc, warnings, pages: finalUnits(doc, opts, warnings) }
      })

    const standard = (file: Upload.UploadFile, callOptions: Upload.UploadOptions = {}) =>
      Effect.gen(function*() {
        const { doc, opts, pages, warnings } = yield* read(file, callOptions)
        const base = standardResult(doc, opts, pages)
        yield* save(options.saveDir, opts.saveAll, file, base, warnings)
        return warnings.length > 0 ? { ...base, warnings } : base
      })

    const extractChunks = (file: Upload.UploadFile, callOptions: Upload.UploadOptions = {}) =>
      Effect.gen(function*() {
        const { doc, opts, pages, warnings } = yield* read(file, callOptions)
        const { chunks, notes } = yield* extraction.chunk(file, pages)
        warnings.push(...notes)
        const result = embeddingsResult(doc, pages, chunks)
        yield* save(options.saveDir, opts.saveAll, file, result, warnings)
        return warnings.length > 0 ? { ...result, warnings } : result
      }).pipe(
        // one process from extraction to chunking: a queue of other files does not wait in between
        (effect) => extraction.holdsProcess(file) ? extraction.holdingProcess(effect) : effect,
        Effect.withSpan("LocalFiles.extractChunks", spanOptions(file))
      )

    return Upload.Upload.of({
      extract: (file, callOptions) => standard(file, callOptions).pipe(Effect.withSpan("LocalFiles.extract", spanOptions(file))),
      extractChunks,
      files: (file, callOptions) => standard(file, callOptions).pipe(Effect.withSpan("LocalFiles.files", spanOptions(file)))
    })
  })

// =============================================================================
// Layers
// =============================================================================

/**
 * The local engine as the {@link Upload.Upload} service.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import * as LocalFiles from "effect-rag/LocalFiles"
 * import * as Upload from "effect-rag/Upload"
 *
 * const program = Effect.gen(function*() {
 *   const upload = yield* Upload.Upload
 *   const file = { name: "notes.md", data: new TextEncoder().encode("# Notes\n\nHello.") }
 *   return yield* upload.extractChunks(file)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(LocalFiles.layer({ chunkSize: 256 }))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Upload.Upload> =>
  Layer.scoped(Upload.Upload, make(options))

/**
 * The local engine, with audio sent to the remote upload endpoint for transcription (the only
 * thing it sends there).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithRemoteSpeech = (options: Omit<Options, "speech"> = {}): Layer.Layer<Upload.Upload, never, ApiHttp> =>
  Layer.scoped(
    Upload.Upload,
    Effect.gen(function*() {
      const remote = yield* Upload.make
      return yield* make({ ...options, speech: (file) => Effect.map(remote.extract(file), (r) => r.content) })
    })
  )
