/**
 * Pure helpers of `Answer`: reading a hit's citation fields from chunk metadata, numbering
 * sources for a prompt, and parsing `[n]` citations out of an answer.
 *
 * The metadata names are read in exactly one place ({@link citationOf}) because the ingestion
 * pipeline defines them; the fallbacks keep older or foreign collections readable.
 */
import type { Hit, Scalar } from "../../store/VectorStore.js"

/** Where a chunk comes from, as read from its metadata. */
export interface CitationFields {
  /** The source: a path or URL (falls back to the document id). */
  readonly source: string
  /** The page the chunk starts on (1-based), when known. */
  readonly page: number | undefined
  /** The chunk's index within its document, when known. */
  readonly chunk: number | undefined
  /** The document title, when known. */
  readonly title: string | undefined
  /**
   * Where in the document, as a reader would say it: `sheet "Revenue"` for a spreadsheet chunk,
   * `slide 3` for a presentation, `page 3` otherwise; undefined when the page is unknown.
   */
  readonly place: string | undefined
}

const str = (v: Scalar | undefined): string | undefined =>
  typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : undefined

const num = (v: Scalar | undefined): number | undefined => {
  if (typeof v === "number" && Number.isFinite(v)) return v
  if (typeof v === "string" && /^\d+$/.test(v)) return Number(v)
  return undefined
}

const first = <A>(read: (v: Scalar | undefined) => A | undefined, meta: Readonly<Record<string, Scalar>>, keys: ReadonlyArray<string>) => {
  for (const k of keys) {
    const v = read(meta[k])
    if (v !== undefined) return v
  }
  return undefined
}

/** Metadata keys read for the source, in order (then the document id). */
export const sourceKeys = ["source", "url", "path", "file", "sourceUrl"] as const
/** Metadata keys read for the page, in order. */
export const pageKeys = ["page", "from_page", "fromPage", "page_number"] as const
/** Metadata keys read for the chunk index, in order (then a `#n` / `:n` suffix of the chunk id). */
export const chunkKeys = ["chunk", "chunk_index", "chunkIndex", "index"] as const
/** Metadata keys read for the title, after the hit's own title. */
export const titleKeys = ["title", "document_title", "documentTitle"] as const

/** Metadata keys read for a spreadsheet chunk's sheet name, in order. */
export const sheetKeys = ["sheet", "sheet_name", "sheetName"] as const

/** The place label of a chunk (see {@link CitationFields.place}). */
export const placeOf = (meta: Readonly<Record<string, Scalar>>, page: number | undefined): string | undefined => {
  const sheet = first(str, meta, sheetKeys)
  if (sheet !== undefined) return `sheet "${sheet}"`
  if (page === undefined) return undefined
  const type = str(meta["type"])
  if (type === "pptx") return `slide ${page}`
  if (type === "xlsx") return `sheet ${page}`
  return `page ${page}`
}

/**
 * The citation fields of a hit: source, page, chunk index and title, read defensively from its
 * metadata (see the key lists above), with the document id as the last resort for the source.
 */
export const citationOf = (hit: Pick<Hit, "id" | "documentId" | "title" | "metadata">): CitationFields => {
  const meta = hit.metadata ?? {}
  const idSuffix = /[#:](\d+)$/.exec(hit.id)
  const page = first(num, meta, pageKeys)
  return {
    source: first(str, meta, sourceKeys) ?? hit.documentId,
    page,
    place: placeOf(meta, page),
    chunk: first(num, meta, chunkKeys) ?? (idSuffix && hit.id !== hit.documentId ? Number(idSuffix[1]) : undefined),
    title: (hit.title !== undefined && hit.title !== "" ? hit.title : undefined) ?? first(str, meta, titleKeys)
  }
}

/** One citation found in an answer text. */
export interface CitationMark {
  /** The cited number. */
  readonly n: number
  /** Offset of the bracket in the text. */
  readonly offset: number
  /** The bracket as written, e.g. `[1, 3]`. */
  readonly raw: string
}

// `[1]`, `[1, 2]`, `[1;2]`, `[2-4]` (ranges up to 50 wide); not `[1](url)` markdown links.
const bracket = /\[(\s*\d{1,4}(?:\s*(?:[,;]|[-–]|,?\s*and\s)\s*\d{1,4})*\s*)\](?!\()/g

/**
 * Finds the citations of an answer: every number inside `[...]` brackets made of numbers,
 * commas, semicolons and ranges, in order of appearance (a number may appear several times).
 */
export const parseCitations = (text: string): Array<CitationMark> => {
  const out: Array<CitationMark> = []
  for (const m of text.matchAll(bracket)) {
    const inner = m[1]!
    const parts = inner.split(/[,;]|\sand\s/)
    for (const part of parts) {
      const range = /^\s*(\d+)\s*[-–]\s*(\d+)\s*$/.exec(part)
      if (range) {
        const a = Number(range[1])
        const b = Number(range[2])
        if (b >= a && b - a <= 50) for (let n = a; n <= b; n++) out.push({ n, offset: m.index, raw: m[0] })
        continue
      }
      const n = Number(part.trim())
      if (Number.isInteger(n)) out.push({ n, offset: m.index, raw: m[0] })
    }
  }
  return out
}

/** A numbered source as it is shown to the model. */
export interface PromptSource extends CitationFields {
  readonly n: number
  readonly text: string
}

/** The header line of a numbered source, e.g. `[2] Title (guide.pdf, page 3)`, `(budget.xlsx, sheet "Q3")`. */
export const sourceHeader = (s: PromptSource): string => {
  const where = [s.source, s.place].filter((x) => x !== undefined).join(", ")
  return `[${s.n}] ${s.title !== undefined && s.title !== s.source ? `${s.title} (${where})` : where}`
}

/** Cuts a text to about `max` characters at a word boundary. */
export const clip = (text: string, max: number): string => {
  const t = text.trim()
  if (t.length <= max) return t
  const cut = t.slice(0, max)
  const space = cut.lastIndexOf(" ")
  return `${space > max * 0.6 ? cut.slice(0, space) : cut}…`
}

/** Numbered sources as prompt text: a header line and the (clipped) text of each. */
export const formatSources = (sources: ReadonlyArray<PromptSource>, maxChars: number): string =>
  sources.map((s) => `${sourceHeader(s)}\n${clip(s.text, maxChars)}`).join("\n\n")

/**
 * A short snippet of `text` around the first word of `query` it contains (or its start),
 * on one line.
 */
export const snippet = (text: string, query: string, width = 160): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  if (flat.length <= width) return flat
  const lower = flat.toLowerCase()
  const words = query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 2)
  const at = words.map((w) => lower.indexOf(w)).filter((i) => i >= 0).sort((a, b) => a - b)[0] ?? 0
  const start = Math.max(0, at - Math.floor(width / 3))
  const end = Math.min(flat.length, start + width)
  return `${start > 0 ? "…" : ""}${flat.slice(start, end).trim()}${end < flat.length ? "…" : ""}`
}
