/**
 * The extraction call of the local engine: where a file is extracted (an extraction process, or
 * this process for small plain text and `inline` isolation), under which time-out, with which
 * OCR settings, and where its pages are chunked. The state is explicit: the process pool (none
 * inline), the formats detected per file, and the process an embeddings-mode call holds.
 */
import { Duration, Effect, FiberRef } from "effect"
import { basename } from "node:path"
import type * as Upload from "../../../../api/Upload.js"
import * as RagError from "../../../../RagError.js"
import { chunkPages, type ChunkOut } from "../chunk/chunker.js"
import type { TiktokenEncoding, Tokenizer } from "../chunk/tokenizer.js"
import { extractDocument, formatOf } from "../extract/index.js"
import type { Isolate, Lease } from "../extract/isolate.js"
import { ExtractFailure, type Extracted, type ExtractRequest } from "../extract/types.js"
import type { CallOptions } from "./request.js"

/** A failure of extraction as the typed error of the file. */
export const toError = (file: Upload.UploadFile) => (e: unknown): RagError.ExtractionError => {
  const f = e instanceof ExtractFailure ? e : new ExtractFailure("processing_failed", (e as Error)?.message ?? String(e))
  return new RagError.ExtractionError({ file: basename(file.name), reason: f.reason, message: `${basename(file.name)}: ${f.message}` })
}

/** OCR settings of the engine: no `langPath` when OCR is off. */
export interface OcrSettings {
  readonly langPath: string | undefined
  readonly languages: string
}

/** Chunking settings of the engine (embeddings mode). */
export interface ChunkSettings {
  readonly size: number
  readonly overlap: number
  /** The tiktoken encoding by name (chunking can then run in an extraction process); undefined with a tokenizer object. */
  readonly encoding: TiktokenEncoding | undefined
  /** The tokenizer, loaded once on first use. */
  readonly tokenizer: Effect.Effect<Tokenizer>
}

/** What an {@link Extraction} needs to know. */
export interface ExtractionSettings {
  /** The extraction processes; undefined with `inline` isolation. */
  readonly isolate: Isolate | undefined
  readonly timeoutMs: number
  readonly inProcessBytes: number
  readonly ocr: OcrSettings
  readonly chunking: ChunkSettings
  readonly speech: ((file: Upload.UploadFile) => Effect.Effect<string, Upload.UploadError>) | undefined
}

/** Detected types that are plain text (extracted and chunked here when small). */
const plainText = ["txt", "markdown", "rst", "asciidoc"]

/** The extraction and chunking of files, with the engine's process pool and settings. */
export class Extraction {
  /** The format a file is read as, detected once per file. */
  private readonly detected = new WeakMap<Upload.UploadFile, ReturnType<typeof formatOf>>()
  /**
   * The extraction process an embeddings-mode call holds from its extraction to its chunking
   * (none in standard mode or inline): no other file is served in between.
   */
  private readonly leased = FiberRef.unsafeMake<Lease | undefined>(undefined)

  constructor(readonly settings: ExtractionSettings) {}

  /** The detected format of a file (see `formatOf`). */
  formatFor(file: Upload.UploadFile): ReturnType<typeof formatOf> {
    if (this.detected.has(file)) return this.detected.get(file)
    const format = formatOf(file.name, file.data, file.type)
    this.detected.set(file, format)
    return format
  }

  /**
   * Whether a file is extracted (and chunked) in this process: always with `inline`
   * isolation, else plain text up to `inProcessBytes`.
   */
  inProcess(file: Upload.UploadFile): boolean {
    const { inProcessBytes, isolate } = this.settings
    return isolate === undefined ||
      (file.data.byteLength > 0 && file.data.byteLength <= inProcessBytes && plainText.includes(this.formatFor(file) ?? ""))
  }

  /** Whether an embeddings-mode call of this file holds one extraction process from extraction to chunking. */
  holdsProcess(file: Upload.UploadFile): boolean {
    return this.settings.chunking.encoding !== undefined && !this.inProcess(file)
  }

  /** Runs `effect` holding one extraction process throughout (`process` isolation). */
  holdingProcess<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    const { isolate } = this.settings
    return isolate
      ? Effect.acquireUseRelease(
        Effect.promise(() => isolate.lease()),
        (lease) => Effect.locally(effect, this.leased, lease),
        (lease) => Effect.sync(() => lease.release())
      )
      : effect
  }

  /** The extraction request of a file under a call's options. */
  request(file: Upload.UploadFile, opts: CallOptions): ExtractRequest {
    const { ocr, timeoutMs } = this.settings
    return {
      name: basename(file.name),
      type: file.type,
      data: file.data,
      options: {
        enableOcr: opts.enableOcr,
        imagesOnly: opts.imagesOnly,
        textOnly: opts.textOnly,
        password: opts.password,
        ocrLangPath: ocr.langPath,
        ocrLanguages: ocr.languages,
        timeBudgetMs: timeoutMs
      }
    }
  }

  /** Runs the extractor with the time-out, in a child process or inline. */
  run(file: Upload.UploadFile, req: ExtractRequest): Effect.Effect<Extracted, RagError.ExtractionError> {
    const { isolate, timeoutMs } = this.settings
    if (isolate && !this.inProcess(file)) {
      return Effect.flatMap(FiberRef.get(this.leased), (lease) =>
        Effect.tryPromise({ try: (signal) => isolate.run(req, timeoutMs, signal, lease), catch: toError(file) }))
    }
    const here = Effect.tryPromise({ try: () => extractDocument(req), catch: toError(file) })
    // small plain text (inProcess): bounded work that no time-out could interrupt anyway
    if (isolate) return here
    return here.pipe(
      Effect.timeoutFail({
        duration: Duration.millis(timeoutMs),
        onTimeout: () => toError(file)(new ExtractFailure("timeout", `the extraction did not finish within ${timeoutMs / 1000} s`))
      })
    )
  }

  /**
   * Chunks the pages of a file: in an extraction process under the per-file time-out when
   * the tokenizer is a tiktoken encoding name, else here.
   */
  chunk(
    file: Upload.UploadFile,
    pages: ReadonlyArray<Upload.PageContent>
  ): Effect.Effect<{ chunks: Array<ChunkOut>; notes: Array<string> }, RagError.ExtractionError> {
    const { chunking, isolate, timeoutMs } = this.settings
    const { encoding, overlap, size } = chunking
    if (isolate && encoding !== undefined && !this.inProcess(file)) {
      return Effect.flatMap(FiberRef.get(this.leased), (lease) =>
        Effect.tryPromise({
          try: (signal) =>
            isolate.chunk(
              { pages: pages.map((p) => ({ page: p.page, content: p.content })), size, overlap, encoding },
              timeoutMs,
              signal,
              lease
            ),
          catch: toError(file)
        }))
    }
    return Effect.map(chunking.tokenizer, (tok) => chunkPages(pages, { size, overlap }, tok))
  }

  /** Extracts a file to the document model (audio through the speech service), with the call's warnings. */
  document(
    file: Upload.UploadFile,
    opts: CallOptions
  ): Effect.Effect<{ doc: Extracted; warnings: Array<string> }, Upload.UploadError> {
    const self = this
    return Effect.gen(function*() {
      const warnings: Array<string> = []
      const format = self.formatFor(file)
      if (format === "audio") return { doc: yield* self.transcribe(file), warnings }
      if (format === "image" && opts.enableOcr && !opts.imagesOnly) {
        // the header's dimensions, here: an image bomb waits for no extraction process
        yield* Effect.tryPromise({
          try: async () => (await import("../extract/image.js")).checkHeader(file.data),
          catch: toError(file)
        })
      }
      if (opts.enableVision === true || (opts.enableVision === undefined && (format === "image" || format === "svg"))) {
        warnings.push("enable_vision: no vision model is configured for the local engine; images are not described")
      }
      const doc = yield* self.run(file, self.request(file, opts))
      if (opts.pageBased && (doc.format === "docx" || doc.format === "odt")) {
        warnings.push(`page_based: a${doc.format === "odt" ? "n ODT" : " DOCX"} has no fixed pages; its content is one unit (page 1)`)
      }
      return { doc, warnings: [...warnings, ...doc.warnings] }
    })
  }

  /** An audio file through the speech service, as a one-page document. */
  private transcribe(file: Upload.UploadFile): Effect.Effect<Extracted, Upload.UploadError> {
    const { speech } = this.settings
    if (!speech) {
      return Effect.fail(toError(file)(
        new ExtractFailure(
          "speech_unavailable",
          "audio needs a speech-recognition service and none is configured for the local engine (see LocalFiles `speech`)"
        )
      ))
    }
    return Effect.map(speech(file), (transcript) =>
      ({ format: "audio", units: [{ page: 1, content: transcript }], warnings: [] }) as Extracted)
  }
}
