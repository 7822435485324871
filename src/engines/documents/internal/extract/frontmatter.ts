/**
 * Markdown files (`.md`, `.markdown`, `.mdx`, …): the text as written, minus a front matter
 * block, which becomes the document's title, description and properties and is never indexed
 * as text.
 *
 * Front matter is a block at the very start of the file: YAML between `---` lines (closed by
 * `---` or `...`, Jekyll, Hugo, Astro, Docusaurus) or TOML between `+++` lines (Hugo, Zola).
 * It is front matter only when it parses as a mapping; otherwise (a thematic break, a table of
 * dashes) the file is read as it stands. The block may be at most {@link maxFrontMatter}
 * characters and YAML aliases are bounded by the `yaml` parser (`maxAliasCount`), so a hostile
 * block costs no more than its size.
 */
import { decodeText, tidyText } from "./text.js"
import type { Extracted } from "./types.js"

/** The longest front matter block read, in characters. */
export const maxFrontMatter = 256 * 1024

/** A front matter block: the source between its fences and the body after it. */
export interface FrontMatterBlock {
  readonly kind: "yaml" | "toml"
  readonly source: string
  readonly body: string
}

/** Finds a front matter block at the start of `text` (line ends already `\n` or `\r\n`). */
export const splitFrontMatter = (text: string): FrontMatterBlock | undefined => {
  const open = /^(---|\+\+\+)[ \t]*\r?\n/.exec(text)
  if (!open) return undefined
  const kind = open[1] === "---" ? "yaml" : "toml"
  const close = kind === "yaml" ? /^(---|\.\.\.)[ \t]*$/ : /^\+\+\+[ \t]*$/
  let at = open[0].length
  while (at <= text.length && at - open[0].length <= maxFrontMatter) {
    const nl = text.indexOf("\n", at)
    const end = nl < 0 ? text.length : nl
    const line = text.slice(at, end).replace(/\r$/, "")
    if (close.test(line)) {
      return { kind, source: text.slice(open[0].length, at), body: nl < 0 ? "" : text.slice(nl + 1) }
    }
    if (nl < 0) return undefined
    at = nl + 1
  }
  return undefined
}

const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date)

/** A property value as one line of text: scalars as written, lists joined with `, `, dates as ISO. */
const asText = (v: unknown, depth = 0): string | undefined => {
  if (v === null || v === undefined) return undefined
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString().replace(/T00:00:00\.000Z$/, "")
  if (typeof v === "string") return v.replace(/\s+/g, " ").trim() || undefined
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v)
  if (depth > 2) return undefined
  if (Array.isArray(v)) {
    const parts = v.map((x) => asText(x, depth + 1)).filter((x): x is string => x !== undefined)
    return parts.length > 0 ? parts.join(", ") : undefined
  }
  if (isMapping(v)) {
    const parts = Object.entries(v).flatMap(([k, x]) => {
      const t = asText(x, depth + 1)
      return t === undefined ? [] : [`${k}: ${t}`]
    })
    return parts.length > 0 ? parts.join("; ") : undefined
  }
  return undefined
}

/** The most properties kept, and the longest value. */
const maxProperties = 100
const maxValue = 2_000

/** Parses a front matter block; undefined when it is not a mapping (then it is not front matter). */
export const parseFrontMatter = async (
  block: FrontMatterBlock
): Promise<Record<string, unknown> | undefined> => {
  let value: unknown
  try {
    if (block.kind === "yaml") {
      const { parse } = await import("yaml")
      value = parse(block.source, { maxAliasCount: 100, prettyErrors: false })
    } else {
      const { default: toml } = await import("toml")
      value = toml.parse(block.source)
    }
  } catch {
    return undefined
  }
  return isMapping(value) ? value : undefined
}

const firstOf = (props: Record<string, unknown>, keys: ReadonlyArray<string>): string | undefined => {
  for (const k of keys) {
    const hit = Object.keys(props).find((p) => p.toLowerCase() === k)
    const t = hit === undefined ? undefined : asText(props[hit])
    if (t) return t
  }
  return undefined
}

/** Extracts a Markdown file: front matter as title, description and properties; the body as text. */
export const extractMarkdown = async (data: Uint8Array): Promise<Extracted> => {
  const { text } = decodeText(data)
  const warnings: Array<string> = []
  const block = splitFrontMatter(text)
  const props = block ? await parseFrontMatter(block) : undefined
  if (block && props === undefined && /^[ \t]*[A-Za-z_][\w.-]*[ \t]*[:=]/m.test(block.source)) {
    // it looks like front matter but does not parse: still not indexed as text
    warnings.push(`the ${block.kind === "yaml" ? "YAML" : "TOML"} front matter cannot be parsed; it is left out of the text`)
  }
  const isFrontMatter = props !== undefined || warnings.length > 0
  const body = isFrontMatter ? block!.body : text
  const metadata: Record<string, string> = {}
  if (props) {
    for (const [k, v] of Object.entries(props).slice(0, maxProperties)) {
      const t = asText(v)
      if (t !== undefined) metadata[k] = t.length > maxValue ? t.slice(0, maxValue) + "…" : t
    }
  }
  const title = props ? firstOf(props, ["title", "name"]) : undefined
  const description = props ? firstOf(props, ["description", "summary", "abstract", "excerpt", "subtitle"]) : undefined
  return {
    format: "markdown",
    units: [{ page: 1, content: tidyText(body) }],
    title,
    description,
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    warnings
  }
}
