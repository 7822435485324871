/**
 * The document model shared by the extractors, the isolation process and the layer, and the
 * one failure type extractors throw. Everything here is plain data so that it crosses a
 * process boundary (structured clone) unchanged.
 */

import type { ChunkOut } from "../chunk/chunker.js"

/** Why an extraction failed; the same literals as `RagError.ExtractionError["reason"]`. */
export type FailureReason =
  | "password_required"
  | "wrong_password"
  | "corrupt"
  | "unsupported"
  | "too_large"
  | "timeout"
  | "ocr_unavailable"
  | "speech_unavailable"
  | "limit_exceeded"
  | "processing_failed"
  /** A non-empty document that yields no text (nor, with `images_only`, images). */
  | "empty"

/**
 * The error every extractor throws for a known failure. The layer turns it into a typed
 * `ExtractionError`; anything else thrown by a library becomes `corrupt` or `processing_failed`.
 */
export class ExtractFailure extends Error {
  override readonly name = "ExtractFailure"
  constructor(
    readonly reason: FailureReason,
    message: string
  ) {
    super(message)
  }
}

/** The detected format of an input file. */
export type Format =
  | "pdf"
  | "docx"
  | "pptx"
  | "xlsx"
  | "xls"
  | "csv"
  | "json"
  | "xml"
  | "html"
  | "txt"
  | "markdown"
  | "notebook"
  | "email"
  | "rtf"
  | "mbox"
  | "odt"
  | "ods"
  | "odp"
  | "epub"
  | "rst"
  | "asciidoc"
  | "svg"
  | "image"
  | "audio"

/**
 * The wire `type` of a format (the spec's list: pdf, docx, pptx, xlsx, image, audio, text): the
 * spec's category of the file. The exact format is the result's `format` extension.
 */
export const wireType = (format: Format): string => {
  switch (format) {
    case "pdf":
    case "docx":
    case "pptx":
    case "xlsx":
    case "image":
    case "audio":
      return format
    case "xls":
    case "ods":
      return "xlsx"
    case "odt":
    case "rtf":
      return "docx"
    case "odp":
      return "pptx"
    case "svg":
      return "image"
    default:
      return "text"
  }
}

/** One page, slide or sheet of extracted content, as Markdown. */
export interface Unit {
  /** 1-based page, slide or sheet number. */
  readonly page: number
  /** Sheet name or slide title, when there is one. */
  readonly name?: string | undefined
  readonly content: string
  /** The content was read by OCR (a PDF page without a readable text layer). */
  readonly ocr?: boolean | undefined
}

/** What an extractor produces. */
export interface Extracted {
  readonly format: Format
  /** Pages (PDF), slides (PPTX), sheets (XLSX/XLS) or a single unit for the other formats. */
  readonly units: ReadonlyArray<Unit>
  /**
   * The document's own page count when it differs from `units.length` (DOCX: the page count
   * Word stored in `docProps/app.xml`; one unit is produced since DOCX has no fixed pages).
   */
  readonly pageCount?: number | undefined
  /** Text that belongs to the whole document rather than a page (PDF form fields, DOCX headers). */
  readonly trailer?: string | undefined
  readonly title?: string | undefined
  readonly description?: string | undefined
  /**
   * Document properties beyond title and description, as strings (Markdown front matter,
   * notebook kernel): the embeddings result's `metadata.properties`.
   */
  readonly metadata?: Readonly<Record<string, string>> | undefined
  /** Embedded images as data URLs (`images_only`). */
  readonly images?: ReadonlyArray<string> | undefined
  /** Options that could not act, and other things the caller should know. */
  readonly warnings: ReadonlyArray<string>
}

/** Extraction options that reach the extractors (plain data: no Redacted across processes). */
export interface ExtractOptions {
  /**
   * OCR. `true`: images, and PDF pages without a readable text layer (missing OCR is
   * `ocr_unavailable`); `false`: never; undefined (the local default): PDF pages without a
   * readable text layer only (missing OCR is `ocr_unavailable` only when no page has text,
   * else a warning); images are not OCR'd.
   */
  readonly enableOcr?: boolean | undefined
  /**
   * The per-file time budget in milliseconds: PDF pages are not OCR'd once the next page
   * would likely end past 90 % of it (a warning lists them). Undefined: no budget.
   */
  readonly timeBudgetMs?: number | undefined
  readonly imagesOnly: boolean
  readonly textOnly: boolean
  readonly password?: string | undefined
  /** OCR language data folder (gzip traineddata); undefined: OCR is not available. */
  readonly ocrLangPath?: string | undefined
  /** OCR languages, e.g. `eng`. */
  readonly ocrLanguages: string
}

/** One extraction request. */
export interface ExtractRequest {
  readonly name: string
  readonly type?: string | undefined
  readonly data: Uint8Array
  readonly options: ExtractOptions
}

/** One chunking request (embeddings mode), run where the extraction runs. */
export interface ChunkRequest {
  readonly pages: ReadonlyArray<{ readonly page: number; readonly content: string }>
  readonly size: number
  readonly overlap: number
  /** The tiktoken encoding that counts tokens. */
  readonly encoding: "cl100k_base" | "o200k_base"
}

/** What chunking produces: the chunks (the wire's `ChunkOut`) and notes for the warnings. */
export interface Chunked {
  readonly chunks: Array<ChunkOut>
  readonly notes: Array<string>
}

/** Limits that bound hostile input. */
export const limits = {
  /** Total decompressed bytes of a zip container (OOXML). */
  zipTotalBytes: 512 * 1024 * 1024,
  /** Decompressed bytes of one zip entry. */
  zipEntryBytes: 256 * 1024 * 1024,
  /** Highest decompressed/compressed ratio of an entry bigger than 1 MiB. */
  zipRatio: 200,
  /** Entries in a zip container. */
  zipEntries: 20_000,
  /** Pages of a PDF read. */
  pdfPages: 5_000,
  /** Cells of one sheet rendered. */
  sheetCells: 2_000_000,
  /** Characters of extracted text. */
  textChars: 200 * 1024 * 1024,
  /** Pixels of an image sent to OCR. */
  ocrPixels: 50_000_000,
  /** Distinct images extracted from one PDF or XLS (`images_only`). */
  images: 1_000,
  /** Bytes of the images extracted from one PDF (decoded pixels) or XLS (`images_only`). */
  imageBytes: 512 * 1024 * 1024
} as const
