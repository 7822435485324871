/**
 * Offline OCR with tesseract.js. The language data comes from the `@tesseract.js-data/*`
 * registry packages (gzip traineddata), never from the network. One tesseract worker is kept
 * per process (it takes ~0.3 s to start) and recreated after a failure.
 */
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
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
      // without a handler tesseract.js rethrows worker errors as uncaught exceptions
      errorHandler: () => undefined
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

/** Re-encodes an image that leptonica cannot read (WEBP, GIF, …) as PNG through skia. */
const toPng = async (image: Uint8Array): Promise<Buffer | undefined> => {
  try {
    const { loadImage, createCanvas } = await import("@napi-rs/canvas")
    const img = await loadImage(Buffer.from(image))
    if (img.width * img.height > 50_000_000) {
      throw new ExtractFailure("limit_exceeded", `the image has ${img.width}x${img.height} pixels; the limit is 50 Mpx`)
    }
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
 * The text of an image. Fails with `ocr_unavailable` when no language data is configured and
 * `corrupt` when the image cannot be decoded.
 */
export const recognize = async (image: Uint8Array, langPath: string | undefined, languages: string): Promise<string> => {
  if (!langPath) {
    throw new ExtractFailure(
      "ocr_unavailable",
      "OCR is not available: no tesseract language data is configured (install @tesseract.js-data/eng)"
    )
  }
  const run = async (bytes: Buffer) => {
    const worker = await getWorker(langPath, languages)
    return (await worker.recognize(bytes)).data.text
  }
  try {
    return await run(Buffer.from(image.buffer, image.byteOffset, image.byteLength))
  } catch (first) {
    if (first instanceof ExtractFailure) throw first
    const png = await toPng(image)
    if (!png) throw new ExtractFailure("corrupt", `the image cannot be decoded: ${(first as Error)?.message ?? first}`)
    try {
      return await run(png)
    } catch (e) {
      throw new ExtractFailure("processing_failed", `OCR failed: ${(e as Error)?.message ?? e}`)
    }
  }
}
