/**
 * RTF (Rich Text Format) as text: a bounded reader of the control-word grammar (no npm parser
 * fits: the ones there are stream tokenizers or unmaintained). Groups nest up to
 * {@link maxRtfDepth} (deeper is `limit_exceeded`); `\par`, `\line`, `\sect`, `\page` end lines,
 * `\tab` is a tab, `\cell` ends a table cell (` | `), `\row` a table row; `\uN` is a Unicode
 * character followed by `\ucN` fallback characters that are skipped; `\bin N` data is skipped;
 * destinations that are not text (`\fonttbl`, `\colortbl`, `\stylesheet`, `\info`, `\pict`, field
 * instructions, every `\*` destination, …) are skipped. The title, subject and author come from
 * `\info`. Linear in the input.
 *
 * `\'hh` bytes decode in the code page of the current font (`\fN`, whose `\fcharsetN` or `\cpgN`
 * the font table gives: Shift-JIS, GBK, Big5, Korean, Greek, Turkish, Hebrew, Arabic, Baltic,
 * Cyrillic, Thai, Central European, Vietnamese and the Mac charsets), else in the document's
 * (`\ansicpgN`, `\mac`, `\pc`, `\pca`; Windows-1252 by default), as Word and LibreOffice read
 * them: `\fcharset0` is Windows-1252 whatever the document's code page. In a double-byte code
 * page a trail byte may be written as a plain character (`\'83T`) and is read as one.
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

/**
 * Windows code pages of the `\fcharsetN` values (the table Word and LibreOffice use); a charset
 * not here (1 default, 2 symbol, …) reads in the document's code page.
 */
const charsetCodepages: Readonly<Record<number, number>> = {
  0: 1252,
  77: 10000,
  78: 10001,
  79: 10003,
  80: 10008,
  81: 10002,
  85: 10006,
  86: 10081,
  87: 10021,
  88: 10029,
  89: 10007,
  128: 932,
  129: 949,
  134: 936,
  136: 950,
  161: 1253,
  162: 1254,
  163: 1258,
  177: 1255,
  178: 1256,
  186: 1257,
  204: 1251,
  222: 874,
  238: 1250,
  254: 437,
  255: 850
}

/** iconv-lite's names of the Mac code pages (10000 and up) it reads. */
const macCodepages: Readonly<Record<number, string>> = {
  10000: "macintosh",
  10001: "shift_jis",
  10002: "big5",
  10003: "euc-kr",
  10006: "macgreek",
  10007: "maccyrillic",
  10008: "gb2312",
  10010: "macromania",
  10017: "macukraine",
  10021: "macthai",
  10029: "maccenteuro",
  10079: "maciceland",
  10081: "macturkish",
  10082: "maccroatian"
}

/** The iconv-lite encoding of a Windows or Mac code page; undefined when iconv-lite has none. */
export const codepageEncoding = (codepage: number): string | undefined => {
  const name = codepage === 65001 ? "utf8" : macCodepages[codepage] ?? `cp${codepage}`
  return iconv.encodingExists(name) ? name : undefined
}

/**
 * Whether a byte leads a two-byte character whose trail byte may be a plain ASCII character
 * (Shift-JIS, GBK, Big5, Unified Hangul).
 */
const isLeadByte = (encoding: string, b: number): boolean => {
  switch (encoding) {
    case "cp932":
    case "shift_jis":
      return (b >= 0x81 && b <= 0x9f) || (b >= 0xe0 && b <= 0xfc)
    case "cp936":
    case "cp949":
    case "cp950":
    case "big5":
      return b >= 0x81 && b <= 0xfe
    default:
      return false
  }
}

/** A font of the font table: its charset and code page, as given. */
interface Font {
  charset?: number
  codepage?: number
}

/** The state a group inherits from its parent and drops at its end. */
interface Group {
  /** Skip this group's text (a destination that is not text). */
  skip: boolean
  /** The `\info` field this group's text goes to. */
  field: string | undefined
  /** Fallback characters after `\uN`. */
  uc: number
  /** The current font (`\fN`); undefined is the default font. */
  font: number | undefined
  /** Inside the font table, where `\fN` defines a font rather than selects one. */
  fontTable: boolean
}

/** The reader: the input and position, the output, the group stack and the bytes not yet decoded. */
interface Reader {
  readonly src: string
  i: number
  readonly out: Array<string>
  readonly info: Record<string, string>
  readonly fonts: Map<number, Font>
  readonly stack: Array<Group>
  group: Group
  /** The document's code page (`\ansicpgN`, `\mac`, `\pc`, `\pca`). */
  codepage: number
  /** `\deffN`. */
  defaultFont: number | undefined
  /** The font the font table is defining. */
  defining: number | undefined
  /** `\'hh` bytes not yet decoded, the encoding they are in, and whether the last one awaits its trail byte. */
  bytes: Array<number>
  encoding: string
  leadPending: boolean
  /** Characters of `\uN` fallback still to skip. */
  skipFallback: number
  /** True right after `{` or `{\*`: the next control word may name a destination. */
  groupStart: boolean
  starred: boolean
}

const newReader = (src: string): Reader => ({
  src,
  i: 0,
  out: [],
  info: {},
  fonts: new Map(),
  stack: [],
  group: { skip: false, field: undefined, uc: 1, font: undefined, fontTable: false },
  codepage: 1252,
  defaultFont: undefined,
  defining: undefined,
  bytes: [],
  encoding: "cp1252",
  leadPending: false,
  skipFallback: 0,
  groupStart: false,
  starred: false
})

/** The encoding `\'hh` bytes are in now: the current font's code page, else the document's. */
const currentEncoding = (r: Reader): string => {
  const id = r.group.font ?? r.defaultFont
  const font = id === undefined ? undefined : r.fonts.get(id)
  const fromFont = font?.codepage ?? (font?.charset === undefined ? undefined : charsetCodepages[font.charset])
  return (fromFont === undefined ? undefined : codepageEncoding(fromFont)) ?? codepageEncoding(r.codepage) ?? "cp1252"
}

const emit = (r: Reader, s: string): void => {
  if (r.group.skip || s === "") return
  const field = r.group.field
  if (field !== undefined) r.info[field] = (r.info[field] ?? "") + s
  else r.out.push(s)
}

const flushBytes = (r: Reader): void => {
  if (r.bytes.length === 0) return
  const b = Buffer.from(r.bytes)
  r.bytes = []
  r.leadPending = false
  emit(r, iconv.decode(b, r.encoding))
}

const pushByte = (r: Reader, b: number): void => {
  if (r.bytes.length === 0) r.encoding = currentEncoding(r)
  r.bytes.push(b)
  r.leadPending = !r.leadPending && isLeadByte(r.encoding, b)
}

const openGroup = (r: Reader): void => {
  flushBytes(r)
  if (r.stack.length >= maxRtfDepth) {
    throw new ExtractFailure("limit_exceeded", `the RTF nests groups more than ${maxRtfDepth} deep`)
  }
  r.stack.push(r.group)
  r.group = { ...r.group }
  r.groupStart = true
  r.starred = false
  r.skipFallback = 0
  r.i++
}

const closeGroup = (r: Reader): void => {
  flushBytes(r)
  r.group = r.stack.pop() ?? r.group
  r.groupStart = false
  r.skipFallback = 0
  r.i++
}

/** A character that is not markup: text, or the trail byte of a two-byte character. */
const plainChar = (r: Reader, c: string): void => {
  r.i++
  r.groupStart = false
  if (r.leadPending) {
    pushByte(r, c.charCodeAt(0))
    return
  }
  flushBytes(r)
  if (r.skipFallback > 0) r.skipFallback--
  else emit(r, c)
}

/** `\'hh`: a byte in the current code page. */
const hexByte = (r: Reader): void => {
  const hex = r.src.slice(r.i + 2, r.i + 4)
  r.i += 4
  r.groupStart = false
  if (r.skipFallback > 0) {
    r.skipFallback--
    return
  }
  if (/^[0-9a-f]{2}$/i.test(hex)) pushByte(r, parseInt(hex, 16))
}

/** A control symbol: `\*`, an escaped `\`, `{` or `}`, `\~`, `\_`, or a line end (a paragraph). */
const controlSymbol = (r: Reader, next: string): void => {
  flushBytes(r)
  r.i += 2
  if (next === "*") {
    r.starred = true
    return
  }
  r.groupStart = false
  if (r.skipFallback > 0) {
    r.skipFallback--
    return
  }
  if (next === "\\" || next === "{" || next === "}") emit(r, next)
  else if (next === "~") emit(r, "\u00a0")
  else if (next === "_") emit(r, "-")
  else if (next === "\n" || next === "\r") emit(r, "\n")
}

/** A control word right after `{` (or `{\*`) that names a destination: true when it was one. */
const destination = (r: Reader, word: string): boolean => {
  const group = r.group
  if (r.starred || skipped.has(word)) {
    r.starred = false
    group.skip = true
    group.fontTable = word === "fonttbl"
    return true
  }
  if (word === "info") {
    // the info group itself is not text; its fields are read as metadata
    group.field = "#info"
    return true
  }
  if (infoFields.has(word) && group.field === "#info") {
    group.field = word
    return true
  }
  return false
}

/** A control word with a number that sets state (code pages, fonts, `\uN`, `\bin`): true when it was one. */
const setting = (r: Reader, word: string, param: number): boolean => {
  const group = r.group
  switch (word) {
    case "f":
      if (group.fontTable) r.defining = param
      else group.font = param
      return true
    case "fcharset":
    case "cpg":
      if (group.fontTable && r.defining !== undefined) {
        const font = r.fonts.get(r.defining) ?? {}
        if (word === "fcharset") font.charset = param
        else font.codepage = param
        r.fonts.set(r.defining, font)
      }
      return true
    case "deff":
      r.defaultFont = param
      return true
    case "ansicpg":
      r.codepage = param
      return true
    case "bin":
      if (param > 0) r.i += param
      return true
    case "uc":
      group.uc = Math.max(0, param)
      return true
    case "u":
      if (!(r.skipFallback > 0)) emit(r, String.fromCharCode(param < 0 ? param + 65536 : param))
      r.skipFallback = group.uc
      return true
    default:
      return false
  }
}

/** Document code pages named by a word without a number. */
const documentCodepages: Readonly<Record<string, number>> = { ansi: 1252, mac: 10000, pc: 437, pca: 850 }

const controlWord = (r: Reader): void => {
  const m = /^([a-z]{1,32})(-?\d{1,10})? ?/i.exec(r.src.slice(r.i + 1, r.i + 49))!
  const word = m[1]!
  const param = m[2] === undefined ? undefined : Number(m[2])
  r.i += 1 + m[0].length
  flushBytes(r)
  const atGroupStart = r.groupStart
  r.groupStart = false
  if (atGroupStart && destination(r, word)) return
  if (param !== undefined && setting(r, word, param)) return
  const codepage = documentCodepages[word]
  if (codepage !== undefined) {
    r.codepage = codepage
    return
  }
  if (word === "plain") r.group.font = undefined
  const symbol = symbols[word]
  if (symbol !== undefined && r.skipFallback === 0) emit(r, symbol)
  if (r.skipFallback > 0) r.skipFallback--
}

const cleanInfo = (info: Record<string, string>): Record<string, string> => {
  const clean: Record<string, string> = {}
  for (const [k, v] of Object.entries(info)) {
    const value = v.replace(/\s+/g, " ").trim()
    if (k !== "#info" && value) clean[k] = value
  }
  return clean
}

/** Reads RTF to its text and `\info` fields. */
export const readRtf = (data: Uint8Array): { text: string; info: Record<string, string> } => {
  const src = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("latin1")
  if (!src.trimStart().startsWith("{\\rtf")) throw new ExtractFailure("corrupt", "the file is not RTF (no {\\rtf header)")
  const r = newReader(src)
  const n = src.length
  while (r.i < n) {
    const c = src[r.i]!
    if (c === "{") openGroup(r)
    else if (c === "}") closeGroup(r)
    else if (c === "\r" || c === "\n") r.i++
    else if (c !== "\\") plainChar(r, c)
    else {
      const next = src[r.i + 1]
      if (next === undefined) break
      if (next === "'") hexByte(r)
      else if (/[a-z]/i.test(next)) controlWord(r)
      else controlSymbol(r, next)
    }
  }
  flushBytes(r)
  return { text: r.out.join(""), info: cleanInfo(r.info) }
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
