/**
 * Reading local files so that nothing blocks for ever: a special file (FIFO, socket, device) is
 * recognised from its type and never read, a file is opened with `O_NONBLOCK` (opening a FIFO
 * that no writer holds otherwise blocks a thread of libuv's pool until one does), and the file
 * system calls still in flight are counted, so that the command line knows when `process.exit`
 * would wait on a blocked thread (see `cli/options.ts`).
 */
import type { Stats } from "node:fs"
import { close, constants, fstat, open, read, readFile, stat } from "node:fs"

// =============================================================================
// Special files
// =============================================================================

/** The kind of a file that is not a regular file nor a folder. */
export type SpecialKind = "fifo" | "socket" | "character_device" | "block_device"

/** The special kind of a file's stats; undefined for regular files, folders and links. */
export const specialKind = (info: Pick<Stats, "isFIFO" | "isSocket" | "isCharacterDevice" | "isBlockDevice">): SpecialKind | undefined =>
  info.isFIFO() ? "fifo"
    : info.isSocket() ? "socket"
    : info.isCharacterDevice() ? "character_device"
    : info.isBlockDevice() ? "block_device"
    : undefined

/** How a special kind is printed: `a FIFO (named pipe)`, `a socket`, ... */
export const describeKind = (kind: SpecialKind): string =>
  kind === "fifo" ? "a FIFO (named pipe)"
    : kind === "socket" ? "a socket"
    : kind === "character_device" ? "a character device"
    : "a block device"

// =============================================================================
// Calls in flight
// =============================================================================

let inFlight = 0

/**
 * File system calls of {@link readRegularFile} that have not returned (an interrupted read
 * whose thread is still blocked counts until the call returns).
 */
export const pendingCalls = (): number => inFlight

/** Runs a file system call, counted in {@link pendingCalls} until it settles. */
export const counted = <A>(call: () => Promise<A>): Promise<A> => {
  inFlight++
  let p: Promise<A>
  try {
    p = call()
  } catch (e) {
    inFlight--
    throw e
  }
  return p.finally(() => {
    inFlight--
  })
}

// =============================================================================
// Reading
// =============================================================================

/** Why {@link readRegularFile} did not read a file. */
export type ReadRefusal =
  | { readonly _tag: "Special"; readonly kind: SpecialKind }
  | { readonly _tag: "NotAFile" }
  | { readonly _tag: "TooLarge"; readonly size: number }

/** A callback-style file system call as a counted promise (no `FileHandle`: it costs more than a small file's read). */
const call = <A>(f: (done: (error: NodeJS.ErrnoException | null, value: A) => void) => void): Promise<A> =>
  counted(() => new Promise<A>((resolve, reject) => f((error, value) => (error ? reject(error) : resolve(value)))))

/** `stat` (links followed), counted in {@link pendingCalls}. */
export const statPath = (path: string | Buffer): Promise<Stats> => call<Stats>((done) => stat(path, done))

/**
 * Opens `path` without blocking (`O_NONBLOCK`: a FIFO opens at once), checks from the open
 * descriptor that it is a regular file of at most `maxBytes`, and reads it. Resolves with the
 * bytes or a refusal; rejects with the file system's error. `abandoned()` is polled once the
 * file is open: a caller that gave up (a time-out, an interrupt) gets the descriptor closed.
 */
export const readRegularFile = async (
  path: string | Buffer,
  maxBytes: number,
  abandoned: () => boolean = () => false
): Promise<{ readonly data: Buffer } | ReadRefusal> => {
  const fd = await call<number>((done) => open(path, constants.O_RDONLY | constants.O_NONBLOCK, done))
  try {
    if (abandoned()) return { _tag: "NotAFile" }
    const info = await call<Stats>((done) => fstat(fd, done))
    const kind = specialKind(info)
    if (kind !== undefined) return { _tag: "Special", kind }
    if (!info.isFile()) return { _tag: "NotAFile" }
    if (info.size > maxBytes) return { _tag: "TooLarge", size: info.size }
    // one read of the size fstat gave, plus a byte: a shorter read is the whole file (read,
    // fstat and a second read to find the end, as readFile does, cost two more calls a file)
    const buffer = Buffer.allocUnsafeSlow(info.size + 1)
    const bytesRead = await call<number>((done) => read(fd, buffer, 0, buffer.byteLength, 0, done))
    if (bytesRead <= info.size) return { data: buffer.subarray(0, bytesRead) }
    // the file grew meanwhile: read it whole (a positioned read leaves the offset at 0)
    const data = await call<Buffer>((done) => readFile(fd, done))
    if (data.byteLength > maxBytes) return { _tag: "TooLarge", size: data.byteLength }
    return { data }
  } finally {
    close(fd, () => undefined)
  }
}
