/**
 * Image headers read before any decoder runs. A raster image's width and height are read from
 * its header (`image-size`, no pixel decoded), and an image whose pixels would not fit the
 * limit is refused with `limit_exceeded` before skia or leptonica allocate anything: a decoder
 * asked for a 100000×100000 bitmap aborts the whole process, which no `try` can catch.
 */
import { imageSize } from "image-size"
import { ExtractFailure, limits } from "./types.js"

/** The longest side any decoder here is given (tesseract's own limit is 32767). */
export const maxSide = 32_767

/** Width and height from the header, or undefined when the header is not one `image-size` reads. */
export const dimensions = (
  data: Uint8Array
): { readonly width: number; readonly height: number; readonly type: string } | undefined => {
  try {
    const size = imageSize(data)
    // a multi-image file (ICO, CUR, TIFF pages): the largest one is what a decoder may allocate
    const all = [size, ...(size.images ?? [])]
    let width = 0
    let height = 0
    for (const s of all) {
      if (s.width * s.height > width * height) {
        width = s.width
        height = s.height
      }
    }
    return width > 0 && height > 0 ? { width, height, type: size.type ?? "" } : undefined
  } catch {
    return undefined
  }
}

/**
 * Checks an image's header before it is decoded. Throws `limit_exceeded` when its pixels are
 * over `limits.ocrPixels` (50 Mpx) or a side is over {@link maxSide}; `corrupt` when the header
 * cannot be read (no decoder is given bytes whose size is unknown).
 */
export const checkHeader = (data: Uint8Array): { readonly width: number; readonly height: number; readonly type: string } => {
  const size = dimensions(data)
  if (size === undefined) {
    throw new ExtractFailure("corrupt", "the image header cannot be read (not a PNG, JPEG, GIF, BMP, WEBP or TIFF image)")
  }
  const { height, width } = size
  if (width * height > limits.ocrPixels || width > maxSide || height > maxSide) {
    throw new ExtractFailure(
      "limit_exceeded",
      `the image header says ${width}x${height} pixels; the limit is ${limits.ocrPixels / 1_000_000} Mpx and ${maxSide} pixels a side`
    )
  }
  return size
}
