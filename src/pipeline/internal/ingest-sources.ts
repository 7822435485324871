/**
 * Source handling of the ingest pipeline: document ids from normalised sources, the folder walk
 * with include/exclude globs (picomatch), and the prune scopes.
 *
 * The walk is an async generator over `opendir`, one directory listing at a time (sorted, so the
 * order is reproducible): memory stays flat however large the tree is.
 */
import picomatch from "picomatch"
import { opendir, stat } from "node:fs/promises"
import { join, relative, resolve, sep } from "node:path"
import { pathToFileURL } from "node:url"
import { normalizeString } from "../../engines/internal/web/url.js"

/** The document id of a file: the `file://` URL of its absolute path. */
export const fileDocumentId = (path: string): string => pathToFileURL(resolve(path)).href

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

/**
 * Walks a folder recursively, yielding absolute file paths that pass the matcher, in sorted
 * order. Symbolic links to files are followed; links to folders are not (no cycles).
 */
export async function* walk(
  root: string,
  include: ReadonlyArray<string>,
  exclude: ReadonlyArray<string>
): AsyncGenerator<string> {
  const match = matcher(include, exclude)
  const excluded = exclude.length > 0 ? globs(exclude) : undefined
  const base = resolve(root)
  async function* visit(dir: string): AsyncGenerator<string> {
    const names: Array<{ name: string; dir: boolean; link: boolean }> = []
    const handle = await opendir(dir)
    for await (const e of handle) names.push({ name: e.name, dir: e.isDirectory(), link: e.isSymbolicLink() })
    names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const e of names) {
      const full = join(dir, e.name)
      const rel = relative(base, full).split(sep).join("/")
      if (e.dir) {
        if (enterable(rel, excluded, include)) yield* visit(full)
        continue
      }
      if (e.link) {
        const info = await stat(full).catch(() => undefined)
        if (info === undefined || !info.isFile()) continue
      }
      if (match(rel)) yield full
    }
  }
  yield* visit(base)
}

/** Counts the files {@link walk} would yield (no content read, constant memory). */
export const countFiles = async (
  root: string,
  include: ReadonlyArray<string>,
  exclude: ReadonlyArray<string>
): Promise<number> => {
  let n = 0
  for await (const _ of walk(root, include, exclude)) n++
  return n
}
