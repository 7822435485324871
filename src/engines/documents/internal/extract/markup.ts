/**
 * Lightweight markup read as text with its headings recognised: reStructuredText (`.rst`) and
 * AsciiDoc (`.adoc`, `.asciidoc`). The text stays as written; only the heading lines change, to
 * Markdown `#` headings, so that chunks start at sections and cite them (`section`), and the
 * document's title is its first heading.
 *
 * reStructuredText: a line of text under (and optionally over) a line of one repeated
 * punctuation character at least as long as the text; levels follow the order in which the
 * underline styles first appear, as docutils assigns them. A lone line of punctuation between
 * blank lines (a transition) is kept. AsciiDoc: `=` to `======` (or `#`) and a space start a
 * heading (`=` is the document title); inside delimited blocks (`----`, `....`, `====`, `****`,
 * `++++`, `////`) nothing is a heading. Linear in the text.
 */
import { decodeText, tidyText } from "./text.js"
import type { Extracted } from "./types.js"

const adornment = /^([!-/:-@[-`{-~])\1{2,}\s*$/

/** reStructuredText with its section titles as Markdown headings. */
export const rstHeadings = (text: string): string => {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  const styles: Array<string> = []
  const out: Array<string> = []
  const level = (style: string) => {
    let i = styles.indexOf(style)
    if (i < 0) i = styles.push(style) - 1
    return Math.min(6, i + 1)
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const next = lines[i + 1]
    const title = line.trim()
    // overline, title, underline
    const over = adornment.exec(line)
    if (over && next !== undefined && next.trim() !== "" && !adornment.test(next)) {
      const under = lines[i + 2]
      if (under !== undefined && under.trimEnd() === line.trimEnd() && line.trimEnd().length >= next.trim().length) {
        out.push(`${"#".repeat(level(`over${over[1]}`))} ${next.trim()}`)
        i += 2
        continue
      }
    }
    // title, underline (the title starts at column 0 and is not itself an adornment)
    if (
      title !== "" && !/^\s/.test(line) && !adornment.test(line) && next !== undefined &&
      adornment.test(next) && next.trimEnd().length >= Math.min(title.length, 3) &&
      (i === 0 || lines[i - 1]!.trim() === "" || adornment.test(lines[i - 1]!))
    ) {
      out.push(`${"#".repeat(level(next.trim()[0]!))} ${title}`)
      i += 1
      continue
    }
    out.push(line)
  }
  return out.join("\n")
}

const adocDelimiter = /^(-{4,}|\.{4,}|={4,}|\*{4,}|\+{4,}|\/{4,}|_{4,})\s*$/

/** AsciiDoc with its section titles as Markdown headings. */
export const adocHeadings = (text: string): string => {
  const lines = text.replace(/\r\n?/g, "\n").split("\n")
  let block: string | undefined
  const out: Array<string> = []
  for (const line of lines) {
    const delimiter = adocDelimiter.exec(line)?.[1]
    if (delimiter !== undefined) {
      if (block === undefined) block = delimiter
      else if (delimiter === block) block = undefined
      out.push(line)
      continue
    }
    const heading = block === undefined ? /^(={1,6}|#{1,6})\s+(\S.*)$/.exec(line) : null
    if (heading) {
      out.push(`${"#".repeat(heading[1]!.length)} ${heading[2]!.replace(/\s+=+\s*$/, "").trim()}`)
      continue
    }
    out.push(line)
  }
  return out.join("\n")
}

/** Extracts reStructuredText or AsciiDoc: the text, its headings as Markdown headings. */
export const extractMarkup = async (data: Uint8Array, format: "rst" | "asciidoc"): Promise<Extracted> => {
  const { text } = decodeText(data)
  const content = tidyText(format === "rst" ? rstHeadings(text) : adocHeadings(text))
  const title = /^#{1,6} (.+)$/m.exec(content)?.[1]?.trim()
  return { format, units: [{ page: 1, content }], title, warnings: [] }
}
