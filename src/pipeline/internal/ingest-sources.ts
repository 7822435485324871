/**
 * Source handling of the ingest pipeline: document ids from normalised sources, the folder walk
 * with include/exclude globs (picomatch), and the prune scopes.
 *
 * The walk is an async generator over `readdir`, one directory listing at a time (sorted, so the
 * order is reproducible): memory stays flat however large the tree is. Names are read as bytes,
 * so that a name that is not valid UTF-8 is still found and opened (see {@link FilePath}).
 */
import picomatch from "picomatch"
import { isUtf8 } from "node:buffer"
import { lstat, readdir, stat } from "node:fs/promises"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { type SpecialKind, specialKind } from "../../internal/files.js"
import { normalizeString } from "../../internal/url.js"

// =============================================================================
// Names that are not UTF-8
// =============================================================================

/**
 * Splits bytes into runs of valid UTF-8 (strings) and the single bytes that are not part of a
 * valid sequence (numbers).
 */
const utf8Runs = (bytes: Uint8Array): Array<string | number> => {
  const out: Array<string | number> = []
  const decoder = new TextDecoder("utf-8")
  let start = 0
  const flush = (end: number) => {
    if (end > start) out.push(decoder.decode(bytes.subarray(start, end)))
  }
  let i = 0
  while (i < bytes.length) {
    const n = sequenceLength(bytes, i)
    if (n > 0) {
      i += n
      continue
    }
    flush(i)
    out.push(bytes[i]!)
    i++
    start = i
  }
  flush(i)
  return out
}

/** The length of the valid UTF-8 sequence at `i` (1 to 4), 0 when the byte there starts none. */
const sequenceLength = (b: Uint8Array, i: number): number => {
  const c = b[i]!
  if (c < 0x80) return 1
  const n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0
  if (n === 0 || i + n > b.length) return 0
  for (let k = 1; k < n; k++) if ((b[i + k]! & 0xc0) !== 0x80) return 0
  const d = b[i + 1]!
  // overlong forms, UTF-16 surrogates, beyond U+10FFFF
  if ((c === 0xe0 && d < 0xa0) || (c === 0xed && d > 0x9f) || (c === 0xf0 && d < 0x90) || (c === 0xf4 && d > 0x8f)) return 0
  return n
}

const hex2 = (b: number) => b.toString(16).padStart(2, "0")

/**
 * The printable form of a path's bytes: valid UTF-8 as it is, every other byte as `\xNN`
 * (`caf\xff.md`). For display and for the `source` metadata; the document id is the lossless
 * form ({@link fileDocumentId}).
 */
export const printablePath = (bytes: Uint8Array): string =>
  utf8Runs(bytes).map((r) => (typeof r === "number" ? `\\x${hex2(r)}` : r)).join("")

/**
 * A file's path as the pipeline carries it: the printable path, and the path's bytes when they
 * are not valid UTF-8 (the bytes open the file; the printable form cannot).
 */
export interface FilePath {
  readonly path: string
  readonly bytes?: Buffer | undefined
}

/** The {@link FilePath} of a path's bytes. */
export const filePath = (bytes: Buffer): FilePath =>
  isUtf8(bytes) ? { path: bytes.toString("utf8") } : { path: printablePath(bytes), bytes }

/**
 * The document id of a file: the `file://` URL of its absolute path. A name that is not valid
 * UTF-8 keeps its valid parts as `pathToFileURL` writes them and each other byte as `%XX` (a
 * file URL's percent-encoding of bytes), so the id decodes back to the very bytes of the name.
 */
export const fileDocumentId = (path: string | Uint8Array): string => {
  if (typeof path === "string") return pathToFileURL(resolve(path)).href
  const runs = utf8Runs(path)
  const text = runs.filter((r): r is string => typeof r === "string").join("")
  if (!runs.some((r) => typeof r === "number")) return pathToFileURL(resolve(text)).href
  // a placeholder character the name does not hold stands for each byte, then its encoding is replaced
  let code = 0xe000
  while (text.includes(String.fromCharCode(code))) code++
  const mark = String.fromCharCode(code)
  const encoded = encodeURIComponent(mark)
  const bytes = runs.filter((r): r is number => typeof r === "number")
  let k = 0
  return pathToFileURL(resolve(runs.map((r) => (typeof r === "number" ? mark : r)).join(""))).href
    .split(encoded)
    .map((part, i) => (i === 0 ? part : `%${hex2(bytes[k++]!).toUpperCase()}${part}`))
    .join("")
}

/** The document id of a web page: its normalised URL; undefined when it is not http(s). */
export const urlDocumentId = (url: string): string | undefined => normalizeString(url)

/** The id prefix of every file under a folder. */
export const folderPrefix = (folder: string): string => {
  const href = pathToFileURL(resolve(folder)).href
  return href.endsWith("/") ? href : `${href}/`
}

/** The id prefix of every page of a site (its origin). */
export const sitePrefix = (url: string): string | undefined => {
  const id = urlDocumentId(url)
  return id === undefined ? undefined : `${new URL(id).origin}/`
}

/**
 * A matcher of several globs: one without `/` against the base name, one with `/` against the
 * whole relative path (picomatch's own `basename` option applies to slash globs too, wrongly).
 */
const globs = (patterns: ReadonlyArray<string>): PathMatcher => {
  const base = patterns.filter((g) => !g.includes("/"))
  const full = patterns.filter((g) => g.includes("/"))
  const mb = base.length > 0 ? picomatch(base, { dot: true }) : undefined
  const mf = full.length > 0 ? picomatch(full, { dot: true }) : undefined
  return (p) => (mb?.(p.split("/").pop() ?? p) ?? false) || (mf?.(p) ?? false)
}

/** A matcher for a folder's relative paths (posix separators). */
export type PathMatcher = (relativePath: string) => boolean

/**
 * Builds the include/exclude matcher. A glob without a slash matches the base name anywhere
 * (`*.md`), one with a slash matches the path relative to the folder (`docs/**`). With no
 * include, everything is included. Hidden files and folders (`.git`, `.DS_Store`) are left out
 * unless a glob names them.
 */
export const matcher = (include: ReadonlyArray<string>, exclude: ReadonlyArray<string>): PathMatcher => {
  const inc = include.length > 0 ? globs(include) : undefined
  const exc = exclude.length > 0 ? globs(exclude) : undefined
  const hidden = (p: string) => p.split("/").some((s) => s.startsWith("."))
  return (p) => {
    if (exc?.(p)) return false
    if (inc !== undefined) return inc(p)
    return !hidden(p)
  }
}

/** Whether a folder should be entered: not hidden (unless included), not excluded. */
const enterable = (rel: string, excluded: PathMatcher | undefined, include: ReadonlyArray<string>): boolean => {
  if (excluded?.(rel)) return false
  const name = rel.split("/").pop() ?? rel
  if (name.startsWith(".") && !include.some((g) => g.includes(name))) return false
  return true
}

/** What {@link walk} finds: a file to read, or a special file (FIFO, socket, device) to skip. */
export interface WalkEntry extends FilePath {
  /** Set for a special file (or a link to one): never opened. */
  readonly special?: SpecialKind | undefined
}

/**
 * Walks a folder recursively, yielding the files that pass the matcher, in sorted order, with
 * absolute paths. Symbolic links to files are followed; links to folders are not (no cycles).
 * Special files (FIFOs, sockets, devices, and links to them) are yielded with their kind,
 * from the directory entry's type or `stat`, never opened.
 */
export async function* walk(
  root: string,
  include: ReadonlyArray<string>,
  exclude: ReadonlyArray<string>
): AsyncGenerator<WalkEntry> {
  const match = matcher(include, exclude)
  const excluded = exclude.length > 0 ? globs(exclude) : undefined
  const base = resolve(root)
  const slash = Buffer.from("/")
  async function* visit(dir: Buffer, relDir: string): AsyncGenerator<WalkEntry> {
    const entries = await readdir(dir, { withFileTypes: true, encoding: "buffer" })
    const names = entries.map((e) => ({ entry: e, name: filePath(e.name).path }))
    names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : Buffer.compare(a.entry.name, b.entry.name)))
    for (const { entry: e, name } of names) {
      const full = Buffer.concat([dir, slash, e.name])
      const rel = relDir === "" ? name : `${relDir}/${name}`
      if (e.isDirectory()) {
        if (enterable(rel, excluded, include)) yield* visit(full, rel)
        continue
      }
      let special = e.isFile() ? undefined : specialKind(e)
      if (e.isSymbolicLink() || !(e.isFile() || special !== undefined)) {
        // a link (followed), or a file system that does not give entry types
        const info = await (e.isSymbolicLink() ? stat(full) : lstat(full)).catch(() => undefined)
        if (info === undefined || info.isDirectory()) continue
        special = specialKind(info)
        if (special === undefined && !info.isFile()) continue
      }
      if (!match(rel)) continue
      yield { ...filePath(full), ...(special !== undefined ? { special } : {}) }
    }
  }
  yield* visit(Buffer.from(base), "")
}

/** Counts the files {@link walk} would yield to be read (special files left out; no content read, constant memory). */
export const countFiles = async (
  root: string,
  include: ReadonlyArray<string>,
  exclude: ReadonlyArray<string>
): Promise<number> => {
  let n = 0
  for await (const e of walk(root, include, exclude)) if (e.special === undefined) n++
  return n
}
