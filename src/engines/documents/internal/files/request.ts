/**
 * One call's options and the checks a request passes before any extraction: the options merged
 * over the engine's defaults, the size limit, and the combinations the local engine refuses.
 */
import { Effect, Redacted } from "effect"
import { basename } from "node:path"
import * as Upload from "../../../../api/Upload.js"
import * as RagError from "../../../../RagError.js"

/** The endpoint named in the local engine's errors. */
export const endpoint = "local upload"

/** The resolved options of one call. */
export interface CallOptions {
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

/** A call's options over the engine's defaults (an option left undefined takes the default). */
export const resolveCall = (defaults: Upload.UploadOptions, options: Upload.UploadOptions): CallOptions => {
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

/**
 * Fails a request the local engine does not serve: a file over the size limit, `text_only` with
 * `images_only`, `vision_only` (no vision model).
 */
export const checkRequest = (file: Upload.UploadFile, opts: CallOptions): Effect.Effect<void, Upload.UploadError> =>
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
  })
