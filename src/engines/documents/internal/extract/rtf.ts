/**
 * RTF (Rich Text Format) as text: a bounded reader of the control-word grammar (no npm parser
 * fits: the ones there are stream tokenizers or unmaintained). Groups nest up to
 * {@link maxRtfDepth} (deeper is `limit_exceeded`); `\par`, `\line`, `\sect`, `\page` end lines,
 * `\tab` is a tab, `\cell` ends a table cell (` | `), `\row` a table row; `\'hh` bytes decode in the document's
 * code page (`\ansicpg`, else Windows-1252), `\uN` is a Unicode character followed by `\ucN`
 * fallback characters that are skipped; `\bin N` data is skipped; destinations that are not
 * text (`\fonttbl`, `\colortbl`, `\stylesheet`, `\info`, `\pict`, field instructions, every
 * `\*` destination, …) are skipped. The title, subject and author come from `\info`.
 * Linear in the input.
 */
import iconv from "iconv-lite"
import { ExtractFailure, type Extracted } from "./types.js"

/** Deepest group nesting read. */
export const maxRtfDepth = 256

/** Destinations whose text is not document text. */
const skipped = new Set([
  "fonttbl",
  "colortbl",
  "stylesheet",
  "listtable",
  "listoverridetable",
  "revtbl",
  "rsidtbl",
  "generator",
  "xmlnstbl",
  "themedata",
  "colorschememapping",
  "latentstyles",
  "datastore",
  "pict",
  "object",
  "objdata",
  "fldinst",
  "filetbl",
  "pgdsctbl",
  "mmathPr",
  "header",
  "headerl",
  "headerr",
  "headerf",
  "footer",
  "footerl",
  "footerr",
  "footerf",
  "bkmkstart",
  "bkmkend",
  "nonshppict",
  "shppict",
  "template",
  "userprops",
  "operator",
  "keywords",
  "comment",
  "doccomm",
  "company",
  "category",
  "manager",
  "hlinkbase",
  "creatim",
  "revtim",
  "printim",
  "buptim"
])

/** Info fields read as metadata. */
const infoFields = new Set(["title", "subject", "author"])

const symbols: Record<string, string> = {
  par: "\n",
  line: "\n",
  sect: "\n\n",
  page: "\n\n",
  row: "\n",
  tab: "\t",
  cell: " | ",
  emdash: "\u2014",
  endash: "\u2013",
  emspace: " ",
  enspace: " ",
  qmspace: " ",
  bullet: "\u2022",
  lquote: "\u2018",
  rquote: "\u2019",
  ldblquote: "\u201c",
  rdblquote: "\u201d"
}

interface State {
  /** Skip this group's text (a destination that is not text). */
  skip: boolean
  /** The `\info` field this group's text goes to. */
  field: string | undefined
  /** Fallback characters after `\uN`. */
  uc: number
}

/** Reads RTF to its text and `\info` fields. */
export const readRtf = (data: Uint8Array): { text: string; info: Record<string, string> } => {
  const src = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("latin1")
  if (!src.trimStart().startsWith("{\\rtf")) throw new ExtractFailure("corrupt", "the file is not RTF (no {\\rtf header)")
  let codepage = "windows-1252"
  const out: Array<string> = []
  const info: Record<string, string> = {}
  let bytes: Array<number> = []
  let state: State = { skip: false, field: undefined, uc: 1 }
  const stack: Array<State> = []
  /** Characters of `\uN` fallback still to skip. */
  let skipFallback = 0
  /** True right after `{` or `{\*`: the next control word may name a destination. */
  let groupStart = false
  let starred = false

  const emit = (s: string) => {
    if (state.skip || s === "") return
    if (state.field !== undefined) info[state.field] = (info[state.field] ?? "") + s
    else out.push(s)
  }
  const flushBytes = () => {
    if (bytes.length === 0) return
    const b = Buffer.from(bytes)
    bytes = []
    emit(iconv.encodingExists(codepage) ? iconv.decode(b, codepage) : b.toString("latin1"))
  }

  let i = 0
  const n = src.length
  while (i < n) {
    const c = src[i]!
    if (c === "{") {
      flushBytes()
      if (stack.length >= maxRtfDepth) {
        throw new ExtractFailure("limit_exceeded", `the RTF nests groups more than ${maxRtfDepth} deep`)
      }
      stack.push(state)
      state = { ...state }
      groupStart = true
      starred = false
      skipFallback = 0
      i++
      continue
    }
    if (c === "}") {
      flushBytes()
      state = stack.pop() ?? state
      groupStart = false
      skipFallback = 0
      i++
      continue
    }
    if (c === "\r" || c === "\n") {
      i++
      continue
    }
    if (c !== "\\") {
      flushBytes()
      if (skipFallback > 0) skipFallback--
      else emit(c)
      groupStart = false
      i++
      continue
    }
    // a control word or symbol
    const next = src[i + 1]
    if (next === undefined) break
    if (next === "'") {
      const hex = src.slice(i + 2, i + 4)
      i += 4
      if (skipFallback > 0) {
        skipFallback--
        continue
      }
      if (/^[0-9a-f]{2}$/i.test(hex)) bytes.push(parseInt(hex, 16))
      continue
    }
    if (!/[a-z]/i.test(next)) {
      flushBytes()
      i += 2
      if (next === "*") {
        starred = true
        continue
      }
      groupStart = false
      if (skipFallback > 0) {
        skipFallback--
        continue
      }
      if (next === "\\" || next === "{" || next === "}") emit(next)
      else if (next === "~") emit("\u00a0")
      else if (next === "_") emit("-")
      else if (next === "\n" || next === "\r") emit("\n")
      continue
    }
    const m = /^([a-z]{1,32})(-?\d{1,10})? ?/i.exec(src.slice(i + 1, i + 1 + 48))!
    const word = m[1]!
    const param = m[2] === undefined ? undefined : Number(m[2])
    i += 1 + m[0].length
    if (word !== "u") flushBytes()
    const destination = groupStart
    groupStart = false
    if (destination && (starred || skipped.has(word))) {
      starred = false
      state.skip = true
      continue
    }
    if (destination && word === "info") {
      // the info group itself is not text; its fields are read as metadata
      state.field = "#info"
      continue
    }
    if (destination && infoFields.has(word) && state.field === "#info") {
      state.field = word
      continue
    }
    if (word === "bin" && param !== undefined && param > 0) {
      i += param
      continue
    }
    if (word === "ansicpg" && param !== undefined) {
      codepage = `cp${param}`
      continue
    }
    if (word === "uc" && param !== undefined) {
      state.uc = Math.max(0, param)
      continue
    }
    if (word === "u" && param !== undefined) {
      flushBytes()
      if (!(skipFallback > 0)) emit(String.fromCharCode(param < 0 ? param + 65536 : param))
      skipFallback = state.uc
      continue
    }
    const symbol = symbols[word]
    if (symbol !== undefined && skipFallback === 0) emit(symbol)
    if (skipFallback > 0) skipFallback--
  }
  flushBytes()
  delete info["#info"]
  for (const k of Object.keys(info)) {
    const v = info[k]!.replace(/\s+/g, " ").trim()
    if (v) info[k] = v
    else delete info[k]
  }
  return { text: out.join(""), info }
}

/** Extracts an RTF document: paragraphs as lines, table cells separated by ` | `. */
export const extractRtf = async (data: Uint8Array): Promise<Extracted> => {
  const { info, text } = readRtf(data)
  const content = text
    .split("\n")
    .map((line) => line.replace(/[ \u00a0]+$/g, "").replace(/ \|$/, ""))
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()
  const { author, subject, title } = info
  return {
    format: "rtf",
    units: [{ page: 1, content }],
    title,
    description: subject,
    metadata: author ? { author } : undefined,
    warnings: []
  }
}
