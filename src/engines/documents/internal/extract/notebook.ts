/**
 * Jupyter notebooks (`.ipynb`, nbformat 4, and the worksheets of nbformat 3) as Markdown:
 * Markdown cells as written, code cells as fenced code in the kernel's language, raw cells as
 * text, and each code cell's text outputs after it (stream text, the text of results and
 * displays: Markdown as written, HTML such as a data frame as Markdown tables, else plain text;
 * an error as `name: value`). Images, widgets, base64 attachments and inline `data:` URLs are
 * dropped: a notebook's plots are not text. Terminal colour codes are removed.
 */
import { htmlToMarkdown } from "./markdown.js"
import { decodeText, tidy } from "./text.js"
import { ExtractFailure, type Extracted } from "./types.js"

/** The most characters kept of one output (a training log can be megabytes of progress bars). */
export const maxOutputChars = 20_000

type Json = Record<string, unknown>

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v)

/** nbformat's multiline strings: a string or a list of lines. */
const str = (v: unknown): string =>
  typeof v === "string" ? v : Array.isArray(v) ? v.filter((x) => typeof x === "string").join("") : ""

// eslint-disable-next-line no-control-regex
const ansi = /\u001b\[[0-9;?]*[ -/]*[@-~]/g

/** Markdown images and HTML images whose source is a `data:` URL or a cell attachment, as their alt text. */
const dropInlineImages = (md: string): string =>
  md
    .replace(/!\[([^\]\n]*)\]\(\s*<?(?:data:|attachment:)[^)\s]*>?(?:\s+"[^"]*")?\s*\)/g, "$1")
    .replace(/<img\b[^>]*\bsrc\s*=\s*["']?(?:data:|attachment:)[^>]*>/gi, "")
    // a bare data URL or base64 run that survived (in a link, in raw text)
    .replace(/data:[\w.+-]+\/[\w.+-]+;base64,[A-Za-z0-9+/=\s]{64,}/g, "")

/** A code fence longer than any backtick run at a line start of `code`. */
const fence = (code: string): string => {
  let size = 3
  for (const m of code.matchAll(/^\s*(`{3,})/gm)) if (m[1]!.length >= size) size = m[1]!.length + 1
  return "`".repeat(size)
}

const fenced = (code: string, language: string): string => {
  const f = fence(code)
  return `${f}${language}\n${code}\n${f}`
}

/** Trailing newlines off, lines kept (indentation matters in code). */
const trimCode = (s: string): string => s.replace(/\r\n?/g, "\n").replace(/^\n+/, "").replace(/\s+$/, "")

const clipOutput = (s: string, notes: { clipped: number }): string => {
  if (s.length <= maxOutputChars) return s
  notes.clipped++
  return s.slice(0, maxOutputChars) + "\n…"
}

/** The text of one output, or "" (images and widgets only). */
const outputText = (output: Json, notes: { clipped: number }): string => {
  const type = output.output_type
  if (type === "stream") return clipOutput(trimCode(str(output.text).replace(ansi, "")), notes)
  if (type === "error" || type === "pyerr") {
    const name = typeof output.ename === "string" ? output.ename : ""
    const value = typeof output.evalue === "string" ? output.evalue : ""
    return `${name}: ${value}`.replace(ansi, "").trim()
  }
  // execute_result, display_data (nbformat 4); pyout, display_data (3: the types are keys of the output)
  const data = isObject(output.data) ? output.data : output
  const markdown = str(data["text/markdown"] ?? data.markdown)
  if (markdown.trim()) return clipOutput(dropInlineImages(markdown).trim(), notes)
  const html = str(data["text/html"] ?? data.html)
  if (html.trim()) {
    const md = htmlToMarkdown(dropInlineImages(html))
    if (md.trim()) return clipOutput(md, notes)
  }
  const hasImage = Object.keys(data).some((k) => k.startsWith("image/") || k === "png" || k === "jpeg" || k === "svg")
  const plain = trimCode(str(data["text/plain"] ?? data.text).replace(ansi, ""))
  // `<Figure size 640x480 with 1 Axes>` beside a plot: the plot's placeholder, not text
  if (hasImage && /^<[^>\n]*>$/.test(plain.trim())) return ""
  return clipOutput(plain, notes)
}

/** Extracts a Jupyter notebook. */
export const extractNotebook = async (data: Uint8Array): Promise<Extracted> => {
  const { text } = decodeText(data)
  let nb: unknown
  try {
    nb = JSON.parse(text)
  } catch (e) {
    throw new ExtractFailure("corrupt", `the notebook is not JSON: ${(e as Error).message}`)
  }
  if (!isObject(nb)) throw new ExtractFailure("corrupt", "the notebook is not a JSON object")
  const meta = isObject(nb.metadata) ? nb.metadata : {}
  const kernel = isObject(meta.kernelspec) ? meta.kernelspec : {}
  const info = isObject(meta.language_info) ? meta.language_info : {}
  const language = [kernel.language, info.name, (meta as Json).language]
    .find((l): l is string => typeof l === "string" && /^[\w+#.-]{1,40}$/.test(l))?.toLowerCase() ?? ""
  const cells: Array<unknown> = Array.isArray(nb.cells)
    ? nb.cells
    : Array.isArray(nb.worksheets)
    ? nb.worksheets.flatMap((w) => (isObject(w) && Array.isArray(w.cells) ? w.cells : []))
    : []
  if (!Array.isArray(nb.cells) && !Array.isArray(nb.worksheets)) {
    throw new ExtractFailure("corrupt", "the notebook has no cells (not an nbformat document)")
  }
  const notes = { clipped: 0 }
  const blocks: Array<string> = []
  let codeCells = 0
  for (const cell of cells) {
    if (!isObject(cell)) continue
    const type = cell.cell_type
    if (type === "markdown") {
      const md = tidy(dropInlineImages(str(cell.source)))
      if (md) blocks.push(md)
    } else if (type === "heading") {
      // nbformat 3
      const level = Math.min(6, Math.max(1, Number(cell.level) || 1))
      const h = str(cell.source).replace(/\s+/g, " ").trim()
      if (h) blocks.push(`${"#".repeat(level)} ${h}`)
    } else if (type === "code") {
      codeCells++
      const source = trimCode(str(cell.source ?? cell.input))
      const cellLanguage = typeof cell.language === "string" && /^[\w+#.-]{1,40}$/.test(cell.language) ? cell.language : language
      if (source.trim()) blocks.push(fenced(source, cellLanguage))
      const outputs = Array.isArray(cell.outputs) ? cell.outputs : []
      for (const output of outputs) {
        if (!isObject(output)) continue
        const out = outputText(output, notes)
        if (out.trim() === "") continue
        // results as Markdown (tables, text) stay Markdown; stream and plain text keep their layout
        const isMarkdown = output.output_type !== "stream" && output.output_type !== "error" &&
          (/^\|.*\|$/m.test(out) || str((isObject(output.data) ? output.data : output)["text/markdown"]).trim() !== "")
        blocks.push(isMarkdown ? out : fenced(out, "text"))
      }
    } else if (type === "raw") {
      const raw = tidy(dropInlineImages(str(cell.source)))
      if (raw) blocks.push(raw)
    }
  }
  const metadata: Record<string, string> = {}
  if (typeof kernel.display_name === "string") metadata.kernel = kernel.display_name
  if (language) metadata.language = language
  if (codeCells > 0) metadata.code_cells = String(codeCells)
  const title = typeof meta.title === "string" && meta.title.trim() ? meta.title.trim() : undefined
  const warnings = notes.clipped > 0
    ? [`${notes.clipped} cell output(s) longer than ${maxOutputChars} characters were cut to that length`]
    : []
  return {
    format: "notebook",
    units: [{ page: 1, content: blocks.join("\n\n") }],
    title,
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
    warnings
  }
}
