/**
 * A zip reader with limits for OOXML containers, on fflate's streaming unzip: entry count,
 * declared and actual decompressed size per entry and in total, and the compression ratio, so
 * that a zip bomb fails with `limit_exceeded` while inflating rather than after filling memory.
 * Sizes are counted as the data inflates, so a header that lies about them does not help.
 */
import { Unzip, UnzipInflate, type UnzipFile } from "fflate"
import { ExtractFailure, limits } from "./types.js"

/** The inflated entries of a zip, by name. */
export interface Zip {
  readonly names: ReadonlyArray<string>
  /** The bytes of an entry, or undefined when there is none (or it was not selected). */
  readonly bytes: (name: string) => Uint8Array | undefined
  /** The text (UTF-8) of an entry, or undefined when there is none. */
  readonly text: (name: string) => string | undefined
}

const mib = (n: number) => `${Math.round((n / 1024 / 1024) * 10) / 10} MiB`

const concat = (parts: ReadonlyArray<Uint8Array>, total: number): Uint8Array => {
  if (parts.length === 1 && parts[0]!.length === total) return parts[0]!
  const out = new Uint8Array(total)
  let offset = 0
  for (const p of parts) {
    out.set(p, offset)
    offset += p.length
  }
  return out
}

/**
 * Inflates the entries of a zip that `select` accepts (all by default), within the limits.
 * Fails with `corrupt` when the bytes are no zip, `limit_exceeded` for a bomb, `unsupported`
 * for an encryption or compression method other than deflate/store.
 */
export const openZip = (data: Uint8Array, select: (name: string) => boolean = () => true): Zip => {
  const entries = new Map<string, Uint8Array>()
  const names: Array<string> = []
  let failure: ExtractFailure | undefined
  let total = 0
  const unzip = new Unzip()
  unzip.register(UnzipInflate)
  unzip.onfile = (file: UnzipFile) => {
    if (failure) return
    names.push(file.name)
    if (names.length > limits.zipEntries) {
      failure = new ExtractFailure("limit_exceeded", `the zip container has more than ${limits.zipEntries} entries`)
      return
    }
    if (!select(file.name) || file.name.endsWith("/")) return
    const declared = file.originalSize ?? 0
    if (declared > limits.zipEntryBytes) {
      failure = new ExtractFailure("limit_exceeded", `zip entry ${file.name} declares ${mib(declared)}`)
      return
    }
    if (file.compression !== 0 && file.compression !== 8) {
      failure = new ExtractFailure("unsupported", `zip entry ${file.name} uses compression method ${file.compression}`)
      return
    }
    // an entry written with a data descriptor (general purpose flag bit 3: OpenOffice, Java
    // writers) has no compressed size in its local header: the whole container bounds it
    const compressed = Math.max(1, file.size || data.length)
    const parts: Array<Uint8Array> = []
    let size = 0
    file.ondata = (err, chunk, final) => {
      if (failure) return
      if (err) {
        failure = new ExtractFailure("corrupt", `zip entry ${file.name} does not inflate: ${err.message}`)
        return
      }
      size += chunk.length
      total += chunk.length
      if (size > limits.zipEntryBytes || total > limits.zipTotalBytes) {
        failure = new ExtractFailure("limit_exceeded", `zip content passes ${mib(Math.max(size, total))} (a zip bomb?)`)
        file.terminate()
        return
      }
      if (size > 1024 * 1024 && size > compressed * limits.zipRatio) {
        failure = new ExtractFailure(
          "limit_exceeded",
          `zip entry ${file.name} inflates more than ${limits.zipRatio} times its size (a zip bomb?)`
        )
        file.terminate()
        return
      }
      parts.push(chunk)
      if (final) entries.set(file.name, concat(parts, size))
    }
    file.start()
  }
  try {
    // feed in slices so the limits act while inflating
    const step = 256 * 1024
    for (let i = 0; i < data.length && !failure; i += step) {
      unzip.push(data.subarray(i, Math.min(data.length, i + step)), i + step >= data.length)
    }
  } catch (e) {
    if (!failure) failure = new ExtractFailure("corrupt", `not a readable zip container: ${(e as Error).message}`)
  }
  if (failure) throw failure
  if (names.length === 0) throw new ExtractFailure("corrupt", "the zip container has no entries")
  const decoder = new TextDecoder("utf-8")
  return {
    names,
    bytes: (name) => entries.get(name),
    text: (name) => {
      const b = entries.get(name)
      return b === undefined ? undefined : decoder.decode(b)
    }
  }
}

/** The names of a zip's entries without inflating anything (for format detection). */
export const zipNames = (data: Uint8Array): ReadonlyArray<string> | undefined => {
  try {
    return openZip(data, () => false).names
  } catch {
    return undefined
  }
}
