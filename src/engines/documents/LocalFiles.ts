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
import { Duration, Effect, FiberRef, Layer, Redacted, type Scope } from "effect"
import { randomUUID } from "node:crypto"
import { mkdir, writeFile } from "node:fs/promises"
import { basename, join } from "node:path"
import type { ApiHttp } from "../../api/ApiHttp.js"
import * as Upload from "../../api/Upload.js"
import * as RagError from "../../RagError.js"
import { chunkPages, type ChunkOut } from "./internal/chunk/chunker.js"
import { removeRepeatedLines } from "./internal/chunk/headers.js"
import { detectLanguage } from "./internal/chunk/language.js"
import { type TiktokenEncoding, tiktoken, type Tokenizer } from "./internal/chunk/tokenizer.js"
import { extractDocument, formatOf } from "./internal/extract/index.js"
import { Isolate, type Lease } from "./internal/extract/isolate.js"
import { defaultLangPath, shutdownOcr } from "./internal/extract/ocr.js"
import { ExtractFailure, type Extracted, type ExtractRequest, wireType } from "./internal/extract/types.js"

export type { Tokenizer } from "./internal/chunk/tokenizer.js"

// =============================================================================
// Options
// =============================================================================

/** Transcribes an audio file (the local engine has no speech model of its own). */
export type Speech = (file: Upload.UploadFile) => Effect.Effect<string, Upload.UploadError>

/** Settings of the local engine. Every field is optional. */
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

/** The default chunk size in tokens. */
export const defaultChunkSize = 512
/** The default chunk overlap in tokens. */
export const defaultChunkOverlap = 64
/** The default per-file time-out. */
export const defaultTimeout: Duration.Duration = Duration.seconds(120)
/** The default size up to which plain text is extracted and chunked in this process. */
export const defaultInProcessBytes = 16 * 1024

// =============================================================================
// Helpers
// =============================================================================

const endpoint = "local upload"

const toError = (file: Upload.UploadFile) => (e: unknown): RagError.ExtractionError => {
  const f = e instanceof ExtractFailure ? e : new ExtractFailure("processing_failed", (e as Error)?.message ?? String(e))
  return new RagError.ExtractionError({ file: basename(file.name), reason: f.reason, message: `${basename(file.name)}: ${f.message}` })
}

/** Characters (code points) of a string, without materialising an array. */
const codePoints = (s: string): number => {
  let low = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xdc00 && c <= 0xdfff) low++
  }
  return s.length - low
}

const firstHeading = (text: string): string | undefined =>
  /^#{1,6}\s+(.+)$/m.exec(text)?.[1]?.trim()

const firstParagraph = (text: string): string | undefined => {
  for (const part of text.split(/\n\s*\n/)) {
    const p = part.replace(/\s+/g, " ").trim()
    if (p.length > 0 && !p.startsWith("#") && !p.startsWith("|")) return p
  }
  return undefined
}

/** `s` cut to `n` characters (code points) with an ellipsis; `s` itself when it fits. */
const clip = (s: string, n: number) => {
  if (s.length <= n) return s // n UTF-16 units are at most n code points
  let kept = ""
  let count = 0
  for (const c of s) {
    if (++count > n) return kept.trimEnd() + "…"
    if (count < n) kept += c
  }
  return s
}

/** The resolved options of one call. */
interface CallOptions {
  /** Undefined: the local default, PDF pages without a readable text layer only (see ExtractOptions). */
  readonly enableOcr: boolean | undefined
  readonly enableVision: boolean | undefined
  readonly textOnly: boolean
  readonly visionOnly: boolean
  readonly pageBased: boolean
  readonly imagesOnly: boolean
  readonly removeHeaders: boolean
  readonly saveAll: boolean
  readonly password: string | undefined
}

const resolve = (defaults: Upload.UploadOptions, options: Upload.UploadOptions): CallOptions => {
  const o = { ...defaults, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) }
  return {
    enableOcr: o.enable_ocr,
    enableVision: o.enable_vision,
    textOnly: o.text_only ?? false,
    visionOnly: o.vision_only ?? false,
    pageBased: o.page_based ?? false,
    imagesOnly: o.images_only ?? false,
    removeHeaders: o.remove_headers ?? true,
    saveAll: o.save_all ?? false,
    password: o.password === undefined ? undefined : Redacted.value(o.password)
  }
}

/** Spreadsheet chunks name their sheet (`from_sheet`), so that a citation can. */
const withSheetNames = (
  chunks: Array<ChunkOut>,
  format: Extracted["format"],
  pages: ReadonlyArray<{ readonly page: number; readonly name?: string }>
): Array<ChunkOut | (ChunkOut & { from_sheet: string })> => {
  if (format !== "xlsx" && format !== "xls" && format !== "ods") return chunks
  const names = new Map(pages.flatMap((p) => (p.name !== undefined ? [[p.page, p.name] as const] : [])))
  return chunks.map((c) => {
    const name = names.get(c.from_page)
    return name === undefined ? c : { ...c, from_sheet: name }
  })
}

/** Chunks of pages that OCR read say so (`ocr: true`). */
const withOcr = <C extends ChunkOut>(chunks: Array<C>, doc: Extracted): Array<C | (C & { ocr: true })> => {
  const read = new Set(doc.units.flatMap((u) => (u.ocr ? [u.page] : [])))
  return read.size === 0 ? chunks : chunks.map((c) => (read.has(c.from_page) ? { ...c, ocr: true as const } : c))
}

/** The pages after `remove_headers`, with the document-wide trailer on the last page. */
const finalUnits = (doc: Extracted, opts: CallOptions, warnings: Array<string>): Array<Upload.PageContent> => {
  let contents = doc.units.map((u) => u.content)
  // header/footer removal is about text lines; an images_only page lists images, one per line
  if (opts.removeHeaders && doc.format === "pdf" && !opts.imagesOnly) {
    const r = removeRepeatedLines(contents)
    contents = r.pages
    if (r.removed > 0) warnings.push(`remove_headers: ${r.removed} repeated header/footer line(s) removed`)
  }
  return doc.units.map((u, i) => {
    let content = contents[i] ?? ""
    if (doc.trailer && i === doc.units.length - 1) content = content ? `${content}\n\n${doc.trailer}` : doc.trailer
    return { page: u.page, ...(u.name !== undefined ? { name: u.name } : {}), content }
  })
}

/**
 * A span per call names its file; without the call site's stack trace, which V8 would capture
 * for every file (a span's stack locates this module's code, and says nothing about the file).
 */
const spanOptions = (file: Upload.UploadFile) => ({ attributes: { file: file.name }, captureStackTrace: false })

// =============================================================================
// Service
// =============================================================================

/**
 * Builds the local upload service. The extraction processes (if any) live in the scope.
 */
export const make = (options: Options = {}): Effect.Effect<Upload.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timeoutMs = Duration.toMillis(Duration.decode(options.timeout ?? defaultTimeout))
    const chunkSize = options.chunkSize ?? defaultChunkSize
    const chunkOverlap = options.chunkOverlap ?? defaultChunkOverlap
    const ocrLangPath = options.ocr === false ? undefined : (options.ocrLangPath ?? defaultLangPath())
    const ocrLanguages = options.ocrLanguages ?? "eng"
    const defaults = options.defaults ?? {}
    const inProcessBytes = options.inProcessBytes ?? defaultInProcessBytes
    const isolate =
      options.isolation === "inline"
        ? yield* Effect.as(Effect.addFinalizer(() => Effect.promise(() => shutdownOcr())), undefined)
        : yield* Effect.acquireRelease(
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
    const configured = options.tokenizer
    const tokenizer = yield* Effect.cached(
      typeof configured === "object"
        ? Effect.succeed(configured)
        : Effect.promise(() => tiktoken(configured ?? "cl100k_base"))
    )

    /**
     * The extraction process an embeddings-mode call holds from its extraction to its
     * chunking (none in standard mode or inline): no other file is served in between.
     */
    const leased = FiberRef.unsafeMake<Lease | undefined>(undefined)

    /** Runs `effect` holding one extraction process throughout (`process` isolation). */
    const holdingProcess = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      isolate
        ? Effect.acquireUseRelease(
          Effect.promise(() => isolate.lease()),
          (lease) => Effect.locally(effect, leased, lease),
          (lease) => Effect.sync(() => lease.release())
        )
        : effect

    /** The format a file is read as, detected once per file. */
    const detected = new WeakMap<Upload.UploadFile, ReturnType<typeof formatOf>>()
    const formatFor = (file: Upload.UploadFile): ReturnType<typeof formatOf> => {
      if (detected.has(file)) return detected.get(file)
      const format = formatOf(file.name, file.data, file.type)
      detected.set(file, format)
      return format
    }

    /**
     * Whether a file is extracted (and chunked) in this process: always with `inline`
     * isolation, else plain text up to `inProcessBytes` (see there).
     */
    const inProcess = (file: Upload.UploadFile): boolean =>
      isolate === undefined ||
      (file.data.byteLength > 0 && file.data.byteLength <= inProcessBytes &&
        ["txt", "markdown", "rst", "asciidoc"].includes(formatFor(file) ?? ""))

    /** Runs the extractor with the time-out, in a child process or inline. */
    const runExtraction = (file: Upload.UploadFile, req: ExtractRequest) =>
      (isolate && !inProcess(file)
        ? Effect.flatMap(FiberRef.get(leased), (lease) =>
          Effect.tryPromise({ try: (signal) => isolate.run(req, timeoutMs, signal, lease), catch: toError(file) }))
        : isolate
        // small plain text (inProcess): bounded work that no time-out could interrupt anyway
        ? Effect.tryPromise({ try: () => extractDocument(req), catch: toError(file) })
        : Effect.tryPromise({ try: () => extractDocument(req), catch: toError(file) }).pipe(
          Effect.timeoutFail({
            duration: Duration.millis(timeoutMs),
            onTimeout: () => toError(file)(new ExtractFailure("timeout", `the extraction did not finish within ${timeoutMs / 1000} s`))
          })
        ))

    /**
     * Chunks the pages of a file: in an extraction process under the per-file time-out when
     * the tokenizer is a tiktoken encoding name, else here.
     */
    const chunkFile = (file: Upload.UploadFile, pages: ReadonlyArray<Upload.PageContent>) =>
      isolate && typeof configured !== "object" && !inProcess(file)
        ? Effect.flatMap(FiberRef.get(leased), (lease) =>
          Effect.tryPromise({
            try: (signal) =>
              isolate.chunk(
                {
                  pages: pages.map((p) => ({ page: p.page, content: p.content })),
                  size: chunkSize,
                  overlap: chunkOverlap,
                  encoding: configured ?? "cl100k_base"
                },
                timeoutMs,
                signal,
                lease
              ),
            catch: toError(file)
          }))
        : Effect.map(tokenizer, (tok) => chunkPages(pages, { size: chunkSize, overlap: chunkOverlap }, tok))

    /** Extracts a file to the document model (audio through the speech service). */
    const extractDoc = (
      file: Upload.UploadFile,
      opts: CallOptions
    ): Effect.Effect<{ doc: Extracted; warnings: Array<string> }, Upload.UploadError> =>
      Effect.gen(function*() {
        yield* Upload.checkSize(endpoint, file)
        if (opts.textOnly && opts.imagesOnly) {
          return yield* new RagError.InvalidRequest({
            endpoint,
            path: "images_only",
            message: `${endpoint}: text_only and images_only exclude each other`
          })
        }
        if (opts.visionOnly) {
          return yield* new RagError.ExtractionError({
            file: basename(file.name),
            reason: "unsupported",
            message: `${basename(file.name)}: vision_only needs a vision model, and the local engine has none configured`
          })
        }
        const warnings: Array<string> = []
        const format = formatFor(file)
        if (format === "audio") {
          if (!options.speech) {
            return yield* toError(file)(
              new ExtractFailure(
                "speech_unavailable",
                "audio needs a speech-recognition service and none is configured for the local engine (see LocalFiles `speech`)"
              )
            )
          }
          const transcript = yield* options.speech(file)
          return { doc: { format: "audio", units: [{ page: 1, content: transcript }], warnings: [] } as Extracted, warnings }
        }
        if (format === "image" && opts.enableOcr && !opts.imagesOnly) {
          // the header's dimensions, here: an image bomb waits for no extraction process
          yield* Effect.tryPromise({
            try: async () => (await import("./internal/extract/image.js")).checkHeader(file.data),
            catch: toError(file)
          })
        }
        if (opts.enableVision === true || (opts.enableVision === undefined && (format === "image" || format === "svg"))) {
          warnings.push("enable_vision: no vision model is configured for the local engine; images are not described")
        }
        const doc = yield* runExtraction(file, {
          name: basename(file.name),
          type: file.type,
          data: file.data,
          options: {
            enableOcr: opts.enableOcr,
            imagesOnly: opts.imagesOnly,
            textOnly: opts.textOnly,
            password: opts.password,
            ocrLangPath,
            ocrLanguages,
            timeBudgetMs: timeoutMs
          }
        })
        if (opts.pageBased && (doc.format === "docx" || doc.format === "odt")) {
          warnings.push(`page_based: a${doc.format === "odt" ? "n ODT" : " DOCX"} has no fixed pages; its content is one unit (page 1)`)
        }
        return { doc, warnings: [...warnings, ...doc.warnings] }
      })

    /** `save_all`: keeps the raw file and the result in `saveDir/<time>-<id>/`. */
    const save = (file: Upload.UploadFile, opts: CallOptions, result: unknown, warnings: Array<string>) =>
      !opts.saveAll ? Effect.void : Effect.gen(function*() {
        if (!options.saveDir) {
          warnings.push("save_all: no save directory is configured for the local engine (LocalFiles saveDir); nothing was saved")
          return
        }
        const dir = join(options.saveDir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomUUID().slice(0, 8)}`)
        const name = basename(file.name).replace(/[^\p{L}\p{N}._ -]/gu, "_") || "file"
        yield* Effect.tryPromise(async () => {
          await mkdir(dir, { recursive: true })
          await writeFile(join(dir, name), file.data)
          await writeFile(join(dir, "result.json"), JSON.stringify(result, null, 2))
        }).pipe(
          Effect.catchAll((e) =>
            Effect.sync(() => warnings.push(`save_all: could not save to ${options.saveDir}: ${(e.error as Error)?.message ?? e}`))
          )
        )
      })

    const standard = (file: Upload.UploadFile, options: Upload.UploadOptions = {}) =>
      Effect.gen(function*() {
        const opts = resolve(defaults, options)
        const { doc, warnings } = yield* extractDoc(file, opts)
        const pages = finalUnits(doc, opts, warnings)
        const content = doc.images && opts.imagesOnly ? doc.images.join("\n") : pages.map((p) => p.content).filter(Boolean).join("\n\n")
        const base: Upload.StandardResult = {
          status: true,
          content,
          type: wireType(doc.format),
          format: doc.format,
          error: "",
          ...(opts.pageBased ? { pages } : {})
        }
        yield* save(file, opts, base, warnings)
        return warnings.length > 0 ? { ...base, warnings } : base
      })

    const extract = (file: Upload.UploadFile, options?: Upload.UploadOptions) =>
      standard(file, options).pipe(Effect.withSpan("LocalFiles.extract", spanOptions(file)))

    const files = (file: Upload.UploadFile, options?: Upload.UploadOptions) =>
      standard(file, options).pipe(Effect.withSpan("LocalFiles.files", spanOptions(file)))

    const extractChunks = (file: Upload.UploadFile, options: Upload.UploadOptions = {}) =>
      Effect.gen(function*() {
        const opts = resolve(defaults, options)
        const { doc, warnings } = yield* extractDoc(file, opts)
        const pages = finalUnits(doc, opts, warnings)
        const { chunks, notes } = yield* chunkFile(file, pages)
        warnings.push(...notes)
        const text = pages.map((p) => p.content).join("\n\n")
        const title = doc.title ?? firstHeading(text) ?? firstParagraph(text)
        const description = doc.description ?? firstParagraph(text)
        const result: Upload.EmbeddingsResult = {
          id: `chunks-${randomUUID()}`,
          object: "chunks",
          created: Math.floor(Date.now() / 1000),
          data: {
            success: true,
            data: {
              metadata: {
                title: title ? clip(title, 200) : "",
                description: description ? clip(description, 300) : "",
                language: detectLanguage(text),
                ...(doc.metadata ? { properties: { ...doc.metadata } } : {})
              },
              chunks: withOcr(withSheetNames(chunks as Array<ChunkOut>, doc.format, pages), doc)
            }
          },
          usage: {
            total_chunks: chunks.length,
            total_extracted_text: codePoints(text),
            total_tokens: chunks.reduce((n, c) => n + c.total_tokens, 0),
            total_pages: doc.pageCount ?? pages.length
          },
          type: wireType(doc.format),
          format: doc.format,
          error: ""
        }
        yield* save(file, opts, result, warnings)
        return warnings.length > 0 ? { ...result, warnings } : result
      }).pipe(
        // one process from extraction to chunking: a queue of other files does not wait in between
        (effect) => typeof configured === "object" || inProcess(file) ? effect : holdingProcess(effect),
        Effect.withSpan("LocalFiles.extractChunks", spanOptions(file))
      )

    return Upload.Upload.of({ extract, extractChunks, files })
  })

// =============================================================================
// Layers
// =============================================================================

/** The local engine as the {@link Upload.Upload} service. */
export const layer = (options: Options = {}): Layer.Layer<Upload.Upload> =>
  Layer.scoped(Upload.Upload, make(options))

/**
 * The local engine, with audio sent to the remote upload endpoint for transcription (the only
 * thing it sends there).
 */
export const layerWithRemoteSpeech = (options: Omit<Options, "speech"> = {}): Layer.Layer<Upload.Upload, never, ApiHttp> =>
  Layer.scoped(
    Upload.Upload,
    Effect.gen(function*() {
      const remote = yield* Upload.make
      return yield* make({ ...options, speech: (file) => Effect.map(remote.extract(file), (r) => r.content) })
    })
  )
