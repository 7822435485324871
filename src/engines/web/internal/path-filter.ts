/**
 * The include/exclude path patterns of a crawl. They come from the client and run on URLs of
 * pages the crawled site controls, so they are compiled with `re2js`, a regular-expression
 * engine without backtracking (a port of RE2): matching is linear in the URL's length whatever
 * the pattern, and `^/(a+)+$` costs as little as `^/a+$`. RE2 has no backreferences and no
 * look-around; a pattern that uses them is refused with a `SyntaxError` naming it.
 */
import { RE2JS } from "re2js"

/** Patterns one request may give (include and exclude together). */
export const maxPatterns = 100
/** Characters of one pattern. */
export const maxPatternChars = 1_000

/** Compiled include/exclude patterns (regular expressions over the path and query). */
export interface PathFilter {
  readonly include: ReadonlyArray<RE2JS>
  readonly exclude: ReadonlyArray<RE2JS>
}

/**
 * Compiles the patterns of a crawl request. Each pattern is a regular expression (RE2 syntax)
 * matched against the URL path with its query (`/blog/post-1?x=1`), unanchored unless it
 * anchors itself (as Firecrawl does). Throws a `SyntaxError` naming a bad pattern, one longer
 * than {@link maxPatternChars}, or more than {@link maxPatterns} patterns.
 */
export const compileFilter = (
  includePaths: ReadonlyArray<string> | undefined,
  excludePaths: ReadonlyArray<string> | undefined
): PathFilter => {
  const count = (includePaths?.length ?? 0) + (excludePaths?.length ?? 0)
  if (count > maxPatterns) throw new SyntaxError(`${count} path patterns; at most ${maxPatterns} are accepted`)
  const compile = (p: string) => {
    if (p.length > maxPatternChars) {
      throw new SyntaxError(`path pattern ${JSON.stringify(p.slice(0, 40))}… is ${p.length} characters; at most ${maxPatternChars}`)
    }
    try {
      return RE2JS.compile(p)
    } catch (e) {
      throw new SyntaxError(
        `invalid path pattern ${JSON.stringify(p)} (RE2 syntax: no backreferences or look-around): ${(e as Error).message}`
      )
    }
  }
  return { include: (includePaths ?? []).map(compile), exclude: (excludePaths ?? []).map(compile) }
}

/** Whether a URL passes the filter: no exclude pattern matches, and an include pattern does (when any). */
export const passes = (filter: PathFilter, url: URL): boolean => {
  const target = url.pathname + url.search
  if (filter.exclude.some((r) => r.test(target))) return false
  return filter.include.length === 0 || filter.include.some((r) => r.test(target))
}
