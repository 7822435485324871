/**
 * Offline OCR with tesseract.js. The language data comes from the `@tesseract.js-data/*`
 * registry packages (gzip traineddata), never from the network. One tesseract worker is kept
 * per process (it takes ~0.3 s to start) and recreated after a failure.
 *
 * An image's header is checked before any decoder sees it (`image.ts`). A failure inside the
 * OCR engine (out of memory, an abort of its WebAssembly) is an error of the call, never an
 * empty text: the worker's error handler records it, and a recognition that answers although
 * one was recorded fails with `limit_exceeded` (memory) or `processing_failed`.
 */
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { checkHeader } from "./image.js"
import * as Optional from "../../../../internal/optional.js"
import { ExtractFailure } from "./types.js"

type TesseractWorker = {
  recognize: (image: Buffer) => Promise<{ data: { text: string } }>
  terminate: () => Promise<unknown>
}

/**
 * The folder of the English language data shipped by `@tesseract.js-data/eng`, or undefined
 * when that package is not installed.
 */
export const defaultLangPath = (): string | undefined => {
  try {
    const require = createRequire(import.meta.url)
    return join(dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int")
  } catch {
    return undefined
  }
}

let current: { key: string; worker: Promise<TesseractWorker> } | undefined

/** Errors the tesseract worker reported (through its error handler) since the last look. */
let reported: Array<unknown> = []

/** A failure of the OCR engine as a typed failure: memory is `limit_exceeded`, the rest `processing_failed`. */
export const engineFailure = (e: unknown): ExtractFailure => {
  const message = (e as Error)?.message ?? String(e)
  return /memory|OOM|allocat|Aborted|RangeError/i.test(message)
    ? new ExtractFailure("limit_exceeded", `OCR ran out of memory: ${message}`)
    : new ExtractFailure("processing_failed", `OCR failed: ${message}`)
}

const getWorker = (langPath: string, languages: string): Promise<TesseractWorker> => {
  const key = `${langPath}|${languages}`
  if (current?.key === key) return current.worker
  const previous = current
  const worker = (async () => {
    if (previous) await previous.worker.then((w) => w.terminate()).catch(() => undefined)
    const { createWorker } = await import("tesseract.js")
    return (await createWorker(languages, 1, {
      langPath,
      gzip: true,
      cacheMethod: "none",
      // without a handler tesseract.js rethrows worker errors as uncaught exceptions; recorded,
      // so that the recognition they happened in fails instead of answering empty text
      errorHandler: (e: unknown) => {
        reported.push(e)
      }
    })) as unknown as TesseractWorker
  })()
  current = { key, worker }
  worker.catch(() => {
    if (current?.worker === worker) current = undefined
  })
  return worker
}

/** Stops the OCR worker of this process, if any. */
export const shutdownOcr = async (): Promise<void> => {
  const c = current
  current = undefined
  if (c) await c.worker.then((w) => w.terminate()).catch(() => undefined)
}

/** The image types (`image-size` names) leptonica decodes itself; the others are re-encoded as PNG first. */
const nativeTypes: ReadonlySet<string> = new Set(["png", "jpg", "bmp", "tiff", "pnm"])

/** Re-encodes an image that leptonica cannot read (WEBP, GIF, …) as PNG through skia. */
const toPng = async (image: Uint8Array): Promise<Buffer | undefined> => {
  try {
    const { loadImage, createCanvas } = await import("@napi-rs/canvas")
    // the header was checked by `recognize`: skia allocates at most the pixel limit
    const img = await loadImage(Buffer.from(image))
    const canvas = createCanvas(img.width, img.height)
    const ctx = canvas.getContext("2d")
    ctx.fillStyle = "#ffffff"
    ctx.fillRect(0, 0, img.width, img.height)
    ctx.drawImage(img, 0, 0)
    return canvas.toBuffer("image/png")
  } catch (e) {
    if (e instanceof ExtractFailure) throw e
    return undefined
  }
}

/**
 * Why OCR cannot run (an `ocr_unavailable` failure whose message is the install line), or
 * undefined when it can: tesseract.js is installed and language data is configured.
 */
export const unavailable = (langPath: string | undefined): ExtractFailure | undefined => {
  // the OCR packages are optional peer dependencies: say how to install what is missing
  const missing = ["tesseract.js", ...(langPath ? [] : ["@tesseract.js-data/eng"])].filter((name) => !Optional.isInstalled(name))
  if (missing.length > 0) return new ExtractFailure("ocr_unavailable", `OCR is not available: ${Optional.missingError("ocr", missing).message}`)
  if (!langPath) {
    return new ExtractFailure(
      "ocr_unavailable",
      "OCR is not available: no tesseract language data is configured (install @tesseract.js-data/eng)"
    )
  }
  return undefined
}

/**
 * The text of an image. Fails with `ocr_unavailable` when no language data is configured,
 * `limit_exceeded` when its header claims more pixels than the limit or OCR runs out of
 * memory, `corrupt` when the image cannot be decoded, `processing_failed` when OCR fails.
 */
export const recognize = async (image: Uint8Array, langPath: string | undefined, languages: string): Promise<string> => {
  const missing = unavailable(langPath)
  if (missing) throw missing
  if (!langPath) throw new ExtractFailure("ocr_unavailable", "OCR is not available: no tesseract language data is configured")
  // dimensions from the header, before leptonica or skia allocate a bitmap
  const { type } = checkHeader(image)
  const run = async (bytes: Buffer) => {
    const worker = await getWorker(langPath, languages)
    reported = []
    // a rejection is handled by the caller (an unreadable image is re-encoded, or corrupt)
    const text = (await worker.recognize(bytes)).data.text
    if (reported.length > 0) {
      // the engine is in an unknown state after a failure: the next call starts a fresh one
      await shutdownOcr()
      throw engineFailure(reported[0])
    }
    return text
  }
  try {
    return await run(Buffer.from(image.buffer, image.byteOffset, image.byteLength))
  } catch (first) {
    if (first instanceof ExtractFailure) throw first
    if (/memory|OOM|allocat/i.test((first as Error)?.message ?? String(first))) throw engineFailure(first)
    // a format leptonica reads itself and could not read is damaged: re-encoding it through
    // skia would OCR a partly decoded (often blank) picture and answer empty text
    if (nativeTypes.has(type)) {
      throw new ExtractFailure("corrupt", `the ${type.toUpperCase()} image cannot be decoded: ${(first as Error)?.message ?? first}`)
    }
    const png = await toPng(image)
    if (!png) throw new ExtractFailure("corrupt", `the image cannot be decoded: ${(first as Error)?.message ?? first}`)
    try {
      return await run(png)
    } catch (e) {
      throw e instanceof ExtractFailure ? e : engineFailure(e)
    }
  }
}
