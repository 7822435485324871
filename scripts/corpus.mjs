#!/usr/bin/env node
/**
 * The extraction-quality corpus: third-party test documents pinned by repository, commit and
 * sha256 in `benchmarks/corpus/manifest.json`. The documents are not in git; this script brings
 * them into a gitignored folder and writes a reference text per document made by independent
 * tools (see benchmarks/README.md).
 *
 *   node scripts/corpus.mjs                        fetch from raw.githubusercontent.com, then reference
 *   node scripts/corpus.mjs --from-mirror DIR      read the pinned commits from local git snapshots
 *                                                  (DIR/<owner>+<name>/repo or DIR/<owner>+<name>)
 *   node scripts/corpus.mjs fetch|reference        one step only
 *   options: --dir DIR (default $EFFECT_RAG_CORPUS or benchmarks/corpus/data), --force (fetch and
 *   write again), --format xls,xlsx (reference texts of those formats only)
 *
 * Every file is checked against its sha256 (a mismatch is an error, the file is not kept), and
 * no file may have the sha256 of a shared fixture (../shared/fixtures/docs).
 *
 * Reference tools: pdf → poppler `pdftotext`; docx, pptx → the text runs of the OOXML parts
 * (read here, in document order); xlsx, xls → LibreOffice headless CSV export of every sheet
 * (cells as shown) after the sheet's name;
 * html → `w3m -dump`; image → `tesseract` (eng); csv, txt → the decoded text; json → keys and
 * scalar values in document order; xml → text nodes and CDATA in document order; markdown → the
 * decoded text after its front matter block; notebook → each cell's source, then its outputs'
 * text (stream text, `text/plain`, `ename: evalue`), read from the JSON here; odt, ods, odp →
 * the text of every `text:p`/`text:h` of `content.xml` in document order, matched by namespace
 * (tracked deletions left out; ods: each sheet's name before its cells), read here; epub → the text nodes of the
 * spine's XHTML documents in spine order, read here; email, mbox → Python's `email` package
 * (`mailbox.mbox` for a mailbox): per message its From, To, Cc, Date and Subject headers, then the
 * decoded text/plain parts (the text/html parts with their tags removed when a message has no
 * text/plain part), then the names of its attachments; rtf → LibreOffice headless plain-text
 * export (Writer, UTF-8); rst, asciidoc → the decoded text, markup as written (as for Markdown,
 * whose engine output keeps its markup too).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { unzipSync } from "fflate"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const manifestPath = join(root, "benchmarks", "corpus", "manifest.json")

const args = process.argv.slice(2)
const flag = (name) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const steps = args.filter((a, i) => !a.startsWith("--") && !["--from-mirror", "--dir", "--format"].includes(args[i - 1] ?? ""))
const mirror = flag("--from-mirror")
const force = args.includes("--force")
const onlyFormats = flag("--format")?.split(",")
export const corpusDir = resolve(flag("--dir") ?? process.env.EFFECT_RAG_CORPUS ?? join(root, "benchmarks", "corpus", "data"))
const sharedDir = resolve(process.env.EFFECT_RAG_SHARED ?? join(root, "..", "shared"))

const sha256 = (data) => createHash("sha256").update(data).digest("hex")
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"))

// =============================================================================
// fetch
// =============================================================================

const fixtureHashes = () => {
  const hashes = new Set()
  const dir = join(sharedDir, "fixtures", "docs")
  if (!existsSync(join(dir, "manifest.json"))) return hashes
  for (const f of JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")).files) {
    if (f.sha256) hashes.add(f.sha256)
    const p = join(dir, f.path)
    if (existsSync(p)) hashes.add(sha256(readFileSync(p)))
  }
  return hashes
}

const fromMirror = (entry) => {
  const name = entry.repo.replace("/", "+")
  const candidates = [join(mirror, name, "repo"), join(mirror, name), join(mirror, name + ".git")]
  const gitDir = candidates.find((c) => existsSync(join(c, "HEAD")) || existsSync(join(c, ".git")))
  if (!gitDir) throw new Error(`no git snapshot of ${entry.repo} under ${mirror}`)
  return execFileSync("git", ["--git-dir", existsSync(join(gitDir, ".git")) ? join(gitDir, ".git") : gitDir, "show", `${entry.commit}:${entry.path}`], {
    maxBuffer: 256 * 1024 * 1024
  })
}

const fromUrl = async (entry) => {
  const url = `https://raw.githubusercontent.com/${entry.repo}/${entry.commit}/${entry.path.split("/").map(encodeURIComponent).join("/")}`
  const response = await fetch(url)
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`)
  return Buffer.from(await response.arrayBuffer())
}

const fetchAll = async () => {
  const fixtures = fixtureHashes()
  let fetched = 0
  let kept = 0
  const failures = []
  for (const entry of manifest.files) {
    if (fixtures.has(entry.sha256)) {
      failures.push(`${entry.id}: has the sha256 of a shared fixture`)
      continue
    }
    const target = join(corpusDir, "files", entry.id)
    if (!force && existsSync(target) && sha256(readFileSync(target)) === entry.sha256) {
      kept++
      continue
    }
    try {
      const data = mirror ? fromMirror(entry) : await fromUrl(entry)
      const got = sha256(data)
      if (got !== entry.sha256) throw new Error(`sha256 ${got} differs from the manifest's ${entry.sha256}`)
      mkdirSync(dirname(target), { recursive: true })
      writeFileSync(target, data)
      fetched++
    } catch (e) {
      failures.push(`${entry.id}: ${e.message}`)
    }
  }
  console.log(`corpus: ${fetched} fetched, ${kept} already present, ${failures.length} failed, in ${join(corpusDir, "files")}`)
  for (const f of failures) console.error(`  ${f}`)
  return failures.length === 0
}

// =============================================================================
// reference texts
// =============================================================================

const entities = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }
const decodeEntities = (s) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => {
    if (e[0] === "#") {
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : m
    }
    return entities[e.toLowerCase()] ?? m
  })

/** The text runs of one OOXML part: `t` elements of the namespace `ns`, one line per paragraph. */
export const ooxmlPartText = (xml, ns) => {
  const lines = []
  let line = ""
  const re = new RegExp(`<(/?)${ns}:(p|t|tab|br)\\b([^>]*?)(/?)>`, "g")
  let m
  let open = -1
  while ((m = re.exec(xml))) {
    const [, close, tag, , selfClosing] = m
    if (tag === "t" && !close && !selfClosing) open = re.lastIndex
    else if (tag === "t" && close && open >= 0) {
      line += decodeEntities(xml.slice(open, m.index))
      open = -1
    } else if (tag === "tab") line += "\t"
    else if (tag === "br") line += "\n"
    else if (tag === "p" && (close || selfClosing)) {
      if (line.trim()) lines.push(line)
      line = ""
    }
  }
  if (line.trim()) lines.push(line)
  return lines.join("\n")
}

const byNumber = (a, b) => Number(a.match(/(\d+)\.xml$/)?.[1] ?? 0) - Number(b.match(/(\d+)\.xml$/)?.[1] ?? 0)

const ooxmlText = (data, format) => {
  const zip = unzipSync(new Uint8Array(data))
  const part = (n) => new TextDecoder().decode(zip[n])
  const names = Object.keys(zip)
  if (format === "docx") {
    const order = ["word/document.xml", "word/footnotes.xml", "word/endnotes.xml"]
    const parts = [
      ...order.filter((n) => zip[n]),
      ...names.filter((n) => /^word\/(header|footer)\d*\.xml$/.test(n)).sort()
    ]
    return parts.map((n) => ooxmlPartText(part(n), "w")).join("\n\n")
  }
  const slides = names.filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n)).sort(byNumber)
  const notes = names.filter((n) => /^ppt\/notesSlides\/notesSlide\d+\.xml$/.test(n)).sort(byNumber)
  return [...slides, ...notes].map((n) => ooxmlPartText(part(n), "a")).join("\n\n")
}

const decodeBytes = (data) => {
  let text
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(data)
  } catch {
    text = new TextDecoder("windows-1252").decode(data)
  }
  return text.replace(/^\uFEFF/, "")
}

const jsonText = (data) => {
  const out = []
  const visit = (v) => {
    if (v === null || typeof v !== "object") out.push(String(v))
    else if (Array.isArray(v)) v.forEach(visit)
    else {
      for (const [k, x] of Object.entries(v)) {
        out.push(k)
        visit(x)
      }
    }
  }
  visit(JSON.parse(decodeBytes(data)))
  return out.join("\n")
}

const xmlText = (data) => {
  const text = decodeBytes(data)
  const out = []
  const re = /<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!DOCTYPE[^>[]*(\[[\s\S]*?\])?\s*>|<[^>]*>|([^<]+)/g
  let m
  while ((m = re.exec(text))) {
    const t = m[1] ?? (m[3] !== undefined ? decodeEntities(m[3]) : undefined)
    if (t && t.trim()) out.push(t.trim())
  }
  return out.join("\n")
}

/** Markdown without its front matter (a YAML `---` or TOML `+++` block at the very start). */
const markdownText = (data) => {
  const text = decodeBytes(data)
  const m = /^(---|\+\+\+)[ \t]*\r?\n/.exec(text)
  if (!m) return text
  const close = m[1] === "---" ? /^(?:---|\.\.\.)[ \t]*\r?$/m : /^\+\+\+[ \t]*\r?$/m
  const rest = text.slice(m[0].length)
  const end = close.exec(rest)
  return end ? rest.slice(end.index + end[0].length) : text
}

/** A notebook's cells: sources, then outputs' text (nbformat 2 to 4). */
const notebookText = (data) => {
  const nb = JSON.parse(decodeBytes(data))
  const str = (v) => (Array.isArray(v) ? v.join("") : typeof v === "string" ? v : "")
  const cells = nb.cells ?? (nb.worksheets ?? []).flatMap((w) => w.cells ?? [])
  const out = []
  for (const c of cells) {
    out.push(str(c.source ?? c.input))
    for (const o of c.outputs ?? []) {
      if (o.output_type === "error" || o.output_type === "pyerr") out.push(`${o.ename}: ${o.evalue}`)
      else out.push(str(o.text ?? o.data?.["text/plain"]))
    }
  }
  return out.filter((t) => t.trim()).join("\n\n").replace(/\u001b\[[0-9;]*m/g, "")
}

const odfNamespaces = {
  "urn:oasis:names:tc:opendocument:xmlns:text:1.0": "text",
  "urn:oasis:names:tc:opendocument:xmlns:table:1.0": "table"
}

/**
 * An element or attribute name as `text:…` or `table:…` when it is in the OpenDocument text or
 * table namespace, whatever prefix the document binds to it; other names stay outside (`{uri}…`).
 */
const odfName = (qname, scope, attribute) => {
  const i = qname.indexOf(":")
  const prefix = i < 0 ? "" : qname.slice(0, i)
  // an unprefixed attribute is in no namespace; an unprefixed element in the default one
  const uri = i < 0 && attribute ? "" : scope.get(prefix) ?? ""
  const known = odfNamespaces[uri]
  return known ? `${known}:${qname.slice(i + 1)}` : `{${uri}}${qname.slice(i + 1)}`
}

/**
 * The text of an OpenDocument package's content.xml: one line per `text:p`/`text:h`. Elements
 * and attributes are matched by namespace (prefixes as the document binds them); the text of
 * any other element inside a paragraph is the paragraph's text, its markup is not.
 */
export const odfText = (data, format) => {
  const zip = unzipSync(new Uint8Array(data), { filter: (f) => f.name === "content.xml" })
  const xml = new TextDecoder().decode(zip["content.xml"])
  const lines = []
  let line = ""
  let depth = 0
  let skip = 0
  let repeat = 1 // a spreadsheet cell written once for N equal columns (table:number-columns-repeated)
  // the namespace bindings in scope, innermost last
  const scopes = [new Map([["xml", "http://www.w3.org/XML/1998/namespace"]])]
  const re = /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!\[CDATA\[([\s\S]*?)\]\]>|<!DOCTYPE[^>]*>|<(\/?)([\w.-]+(?::[\w.-]+)?)((?:[^>"']|"[^"]*"|'[^']*')*?)(\/?)>|([^<]+)/g
  let m
  while ((m = re.exec(xml))) {
    const [, cdata, close, qname, rawAttrs, selfClosing, chars] = m
    if (chars !== undefined || cdata !== undefined) {
      if (depth > 0 && skip === 0) line += chars !== undefined ? decodeEntities(chars) : cdata
      continue
    }
    if (qname === undefined) continue // a comment, processing instruction or document type
    let scope = scopes[scopes.length - 1]
    const attrs = new Map()
    if (close) scopes.pop()
    else {
      const pairs = [...rawAttrs.matchAll(/([\w.-]+(?::[\w.-]+)?)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)].map((a) => [a[1], decodeEntities(a[2] ?? a[3])])
      if (pairs.some(([k]) => k === "xmlns" || k.startsWith("xmlns:"))) {
        scope = new Map(scope)
        for (const [k, v] of pairs) if (k === "xmlns" || k.startsWith("xmlns:")) scope.set(k === "xmlns" ? "" : k.slice(6), v)
      }
      for (const [k, v] of pairs) if (k !== "xmlns" && !k.startsWith("xmlns:")) attrs.set(odfName(k, scope, true), v)
      if (!selfClosing) scopes.push(scope)
    }
    const tag = odfName(qname, scope, false)
    if (tag === "text:tracked-changes") {
      if (!selfClosing) skip += close ? -1 : 1
      continue
    }
    if (skip > 0) continue
    if (format === "ods" && tag === "table:table" && !close && depth === 0) {
      // a sheet's name before its cells, as the xlsx reference has it
      const name = attrs.get("table:name")
      if (name) lines.push(name)
    }
    if (tag === "table:table-cell" && !selfClosing) {
      repeat = close ? 1 : Math.min(1000, Number(attrs.get("table:number-columns-repeated") ?? 1))
    }
    if (tag === "text:p" || tag === "text:h") {
      if (selfClosing) continue
      if (!close) depth++
      else if (--depth === 0) {
        if (line.trim()) for (let i = 0; i < repeat; i++) lines.push(line)
        line = ""
      }
    } else if (depth > 0 && tag === "text:s") line += " ".repeat(Number(attrs.get("text:c") ?? 1))
    else if (depth > 0 && tag === "text:tab") line += "\t"
    else if (depth > 0 && tag === "text:line-break") line += "\n"
  }
  return lines.join("\n")
}

/** An EPUB's text: the text nodes of its spine's XHTML documents in spine order (head, scripts, styles left out). */
const epubText = (data) => {
  const zip = unzipSync(new Uint8Array(data))
  const part = (n) => (zip[n] ? new TextDecoder().decode(zip[n]) : "")
  const opfPath = /full-path="([^"]+)"/.exec(part("META-INF/container.xml"))?.[1] ?? ""
  const opf = part(opfPath)
  const dir = opfPath.includes("/") ? opfPath.slice(0, opfPath.lastIndexOf("/") + 1) : ""
  const items = new Map()
  for (const m of opf.matchAll(/<(?:\w+:)?item\b[^>]*>/g)) {
    const id = /\bid="([^"]+)"/.exec(m[0])?.[1]
    const href = /\bhref="([^"]+)"/.exec(m[0])?.[1]
    if (id && href) items.set(id, decodeURIComponent(href))
  }
  const out = []
  for (const m of opf.matchAll(/<(?:\w+:)?itemref\b[^>]*\bidref="([^"]+)"/g)) {
    const href = items.get(m[1])
    if (!href || !/\.x?html?$/i.test(href)) continue
    const body = part(dir + href).replace(/<head[\s\S]*?<\/head>|<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>/gi, "")
    for (const t of body.replace(/<!--[\s\S]*?-->/g, "").split(/<[^>]*>/)) if (t.trim()) out.push(decodeEntities(t.trim()))
  }
  return out.join("\n")
}

// =============================================================================
// the table set: DOCX tables turned into PDF by LibreOffice, the grid from the source
// =============================================================================

/** The XML elements of `tag` (namespace prefix included) at the top level of `xml`, as strings (nested ones stay inside). */
const topLevel = (xml, tag) => {
  const out = []
  const re = new RegExp(`<(/?)${tag}(?=[\\s>/])[^>]*?(/?)>`, "g")
  let depth = 0
  let start = -1
  let m
  while ((m = re.exec(xml))) {
    if (m[2]) {
      if (depth === 0) out.push(m[0])
      continue
    }
    if (!m[1]) {
      if (depth++ === 0) start = m.index
    } else if (--depth === 0) out.push(xml.slice(start, re.lastIndex))
  }
  return out
}

const hasBorder = (xml) =>
  [...xml.matchAll(/<w:(?:top|left|bottom|right|start|end|insideH|insideV)\b[^>]*w:val="([^"]+)"/g)].some((m) => !["nil", "none"].includes(m[1]))

/** Whether a w:tbl draws borders: its own, its style's (basedOn followed) or its cells'. */
const docxRuled = (tbl, styles) => {
  const pr = /<w:tblPr>([\s\S]*?)<\/w:tblPr>/.exec(tbl)?.[1] ?? ""
  const own = /<w:tblBorders>([\s\S]*?)<\/w:tblBorders>/.exec(pr)?.[1]
  if (own !== undefined) return hasBorder(own)
  let id = /<w:tblStyle w:val="([^"]+)"/.exec(pr)?.[1]
  for (let i = 0; id && i < 10; i++) {
    const style = new RegExp(`<w:style\\b[^>]*w:styleId="${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"[^>]*>([\\s\\S]*?)</w:style>`).exec(styles)?.[1] ?? ""
    const b = /<w:tblBorders>([\s\S]*?)<\/w:tblBorders>/.exec(style)?.[1]
    if (b !== undefined) return hasBorder(b)
    id = /<w:basedOn w:val="([^"]+)"/.exec(style)?.[1]
  }
  return topLevel(tbl, "w:tc").some((tc) => hasBorder(/<w:tcBorders>([\s\S]*?)<\/w:tcBorders>/.exec(tc)?.[1] ?? ""))
}

/** A cell's text: its paragraphs' runs, one space between paragraphs, whitespace collapsed. */
const cellText = (tc) => ooxmlPartText(tc, "w").replace(/\s+/g, " ").trim()

/** The text LibreOffice writes for a reference field whose bookmark does not exist. */
const brokenReference = "Error: Reference source not found"

/**
 * The document as LibreOffice prints it where it recomputes fields: a REF field whose target
 * bookmark is not in the document shows LibreOffice's error text, not the result Word cached
 * ("Error! Reference source not found.").
 */
const recomputedFields = (xml) => {
  const bookmarks = new Set([...xml.matchAll(/<w:bookmarkStart\b[^>]*w:name="([^"]+)"/g)].map((m) => m[1]))
  return xml.replace(
    /(<w:instrText\b[^>]*>\s*REF\s+([^\s<]+)[^<]*<\/w:instrText>(?:(?!<w:fldChar)[\s\S])*?<w:fldChar w:fldCharType="separate"\/>)((?:(?!<w:fldChar)[\s\S])*?)(<w:fldChar w:fldCharType="end"\/>)/g,
    (all, head, name, _result, end) => (bookmarks.has(name) ? all : `${head}</w:r><w:r><w:t>${brokenReference}</w:t></w:r><w:r>${end}`)
  )
}

/**
 * The tables of a DOCX body as grids: one row per w:tr, a cell's text at its first grid column
 * (w:gridBefore and w:gridSpan followed, the columns it spans and the continuation of a vertical
 * merge empty). Tables inside tables are part of their cell's text. Reference fields to a missing
 * bookmark read as LibreOffice, which makes the PDF, prints them ({@link recomputedFields}).
 */
export const docxTables = (data) => {
  const zip = unzipSync(new Uint8Array(data), { filter: (f) => f.name === "word/document.xml" || f.name === "word/styles.xml" })
  const xml = recomputedFields(new TextDecoder().decode(zip["word/document.xml"]))
  const styles = zip["word/styles.xml"] ? new TextDecoder().decode(zip["word/styles.xml"]) : ""
  const body = /<w:body>([\s\S]*)<\/w:body>/.exec(xml)?.[1] ?? xml
  return topLevel(body, "w:tbl").map((tbl) => {
    const rows = topLevel(tbl, "w:tr").map((tr) => {
      const row = []
      const before = Number(/<w:gridBefore w:val="(\d+)"/.exec(tr)?.[1] ?? 0)
      for (let i = 0; i < before; i++) row.push("")
      for (const tc of topLevel(tr, "w:tc")) {
        const pr = /<w:tcPr>([\s\S]*?)<\/w:tcPr>/.exec(tc)?.[1] ?? ""
        const span = Number(/<w:gridSpan w:val="(\d+)"/.exec(pr)?.[1] ?? 1)
        const continued = /<w:vMerge(?![^>]*w:val="restart")[^>]*\/?>/.test(pr)
        row.push(continued ? "" : cellText(tc))
        for (let i = 1; i < span; i++) row.push("")
      }
      return row
    })
    return { ruled: docxRuled(tbl, styles), nested: topLevel(tbl, "w:tc").some((tc) => /<w:tbl[\s>]/.test(tc)), rows }
  })
}

/** The LibreOffice that turns the table set into PDF (Debian 12's; another version is reported). */
export const pinnedLibreOffice = "LibreOffice 7.4.7.2"

/** Converts a DOCX or ODT file to PDF with LibreOffice headless; the PDF's path. */
const toPdf = (file, target) => {
  const out = mkdtempSync(join(tmpdir(), "corpus-pdf-"))
  try {
    run("soffice", [`-env:UserInstallation=file://${join(out, "profile")}`, "--headless", "--convert-to", "pdf", "--outdir", out, file])
    const pdf = readdirSync(out).find((n) => n.endsWith(".pdf"))
    if (!pdf) throw new Error("LibreOffice wrote no PDF")
    writeFileSync(target, readFileSync(join(out, pdf)))
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

/**
 * A table-set entry's reference: the source's text (reference/<id>.txt), its PDF made by
 * LibreOffice (files/<id>.pdf) and its tables (reference/<id>.tables.json).
 */
const tableReference = (entry, file) => {
  const data = readFileSync(file)
  const tables = docxTables(data).filter((t) => !t.nested)
  toPdf(file, `${file}.pdf`)
  const target = join(corpusDir, "reference", `${entry.id}.tables.json`)
  mkdirSync(dirname(target), { recursive: true })
  writeFileSync(target, JSON.stringify({ converter: run("soffice", ["--version"]).trim(), tables }, null, 1) + "\n")
  return ooxmlText(data, "docx")
}

const run = (cmd, argv, input) => {
  const r = spawnSync(cmd, argv, { input, maxBuffer: 512 * 1024 * 1024, timeout: 120_000 })
  if (r.status !== 0) throw new Error(`${cmd} failed: ${String(r.stderr ?? r.error).slice(0, 300)}`)
  return r.stdout.toString("utf8")
}

const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0

/** An RTF document as LibreOffice Writer's plain-text export (UTF-8). */
const rtfText = (file) => {
  const out = mkdtempSync(join(tmpdir(), "corpus-lo-"))
  try {
    run("soffice", [`-env:UserInstallation=file://${join(out, "profile")}`, "--headless", "--convert-to", "txt:Text (encoded):UTF8", "--outdir", out, file])
    const txt = readdirSync(out).find((n) => n.endsWith(".txt"))
    if (txt === undefined) throw new Error("LibreOffice wrote no text")
    return decodeBytes(readFileSync(join(out, txt)))
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

/** LibreOffice CSV of every sheet (LibreOffice ≥ 7.2: sheet -1), in sheet order. */
const spreadsheetText = (file) => {
  const out = mkdtempSync(join(tmpdir(), "corpus-lo-"))
  try {
    const profile = `file://${join(out, "profile")}`
    run("soffice", [
      `-env:UserInstallation=${profile}`,
      "--headless",
      "--convert-to",
      "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1",
      "--outdir",
      out,
      file
    ])
    const csvs = readdirSync(out).filter((n) => n.endsWith(".csv"))
    if (csvs.length === 0) throw new Error("LibreOffice wrote no CSV")
    // LibreOffice names the files <base>-<sheet>.csv; keep the workbook's sheet order
    const order = sheetOrder(file)
    const key = (n) => {
      const i = order.findIndex((s) => n.endsWith(`-${s}.csv`))
      return i < 0 ? order.length : i
    }
    // each sheet's name (text of the workbook too), then its cells as shown
    const base = basename(file).replace(/\.[^.]*$/, "")
    return csvs
      .sort((a, b) => key(a) - key(b))
      .map((n) => `${csvs.length > 1 ? n.slice(base.length + 1, -4) : order[0] ?? ""}\n${decodeBytes(readFileSync(join(out, n)))}`)
      .join("\n\n")
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
}

const sheetOrder = (file) => {
  try {
    const zip = unzipSync(new Uint8Array(readFileSync(file)), { filter: (f) => f.name === "xl/workbook.xml" })
    const xml = new TextDecoder().decode(zip["xl/workbook.xml"])
    return [...xml.matchAll(/<(?:\w+:)?sheet\b[^>]*\bname="([^"]*)"/g)].map((m) => decodeEntities(m[1]))
  } catch {
    return [] // XLS: LibreOffice's file order is kept
  }
}

/** The reference tool of a format (also written to the reference folder's tools.json). */
export const referenceTool = {
  pdf: "pdftotext (poppler)",
  docx: "OOXML text runs (w:t) of document, footnotes, endnotes, headers, footers",
  pptx: "OOXML text runs (a:t) of slides, then notes",
  xlsx: "LibreOffice headless CSV export of every sheet (cells as shown), after the sheet's name",
  xls: "LibreOffice headless CSV export of every sheet (cells as shown), after the sheet's name",
  html: "w3m -dump",
  image: "tesseract (eng)",
  csv: "decoded text",
  txt: "decoded text",
  json: "keys and scalar values in document order",
  xml: "text nodes and CDATA in document order",
  markdown: "decoded text after the front matter block",
  notebook: "cell sources, then output text (stream, text/plain, ename: evalue)",
  odt: "text:p and text:h of content.xml in document order",
  ods: "each sheet's name, then the text:p of its cells (repeated cells repeated), from content.xml in document order",
  odp: "text:p and text:h of content.xml in document order",
  epub: "text nodes of the spine's XHTML documents in spine order (head, scripts, styles left out)",
  email: "Python email package: From, To, Cc, Date, Subject, decoded text/plain parts (else text/html without tags), attachment names",
  mbox: "Python mailbox.mbox and email package: per message as for email",
  rtf: "LibreOffice headless plain-text export (Writer, UTF-8)",
  rst: "decoded text (markup as written, as for Markdown)",
  asciidoc: "decoded text (markup as written, as for Markdown)",
  table: "tables: the w:tbl grids of the DOCX (w:tr rows, w:tc cells at their grid column); the PDF made from the DOCX by LibreOffice headless; text as for docx"
}

/** The reference reading of an e-mail or a mailbox by Python's standard library (python3). */
const mailScript = `
import sys, re, email, mailbox, html
from email import policy
def text_of(msg):
    out = []
    for h in ("From", "To", "Cc", "Date", "Subject"):
        v = msg.get(h)
        if v: out.append(str(v))
    plain, htmls, names = [], [], []
    for part in msg.walk():
        if part.is_multipart(): continue
        name = part.get_filename()
        if name:
            names.append(name)
            continue
        ctype = part.get_content_type()
        try:
            body = part.get_content() if ctype.startswith("text/") else None
        except Exception:
            body = part.get_payload(decode=True).decode("utf-8", "replace")
        if body is None: continue
        if ctype == "text/plain": plain.append(body)
        elif ctype == "text/html": htmls.append(html.unescape(re.sub(r"<(style|script)[^>]*>[\\s\\S]*?</\\1>|<[^>]*>", " ", body, flags=re.I)))
    out.extend(plain if plain else htmls)
    out.extend(names)
    return "\\n".join(out)
path, kind = sys.argv[1], sys.argv[2]
if kind == "mbox":
    msgs = [email.message_from_bytes(m.as_bytes(), policy=policy.default) for m in mailbox.mbox(path, create=False)]
else:
    msgs = [email.message_from_binary_file(open(path, "rb"), policy=policy.default)]
sys.stdout.write("\\n\\n".join(text_of(m) for m in msgs))
`

export const referenceOf = (entry, file) => {
  const data = readFileSync(file)
  switch (entry.format) {
    case "pdf":
      return run("pdftotext", ["-q", "-enc", "UTF-8", file, "-"])
    case "table":
      return tableReference(entry, file)
    case "docx":
    case "pptx":
      return ooxmlText(data, entry.format)
    case "xlsx":
    case "xls":
      return spreadsheetText(file)
    case "html":
      return run("w3m", ["-dump", "-T", "text/html", "-cols", "200", "-O", "UTF-8", file])
    case "image":
      return run("tesseract", [file, "-", "-l", "eng"])
    case "json":
      return jsonText(data)
    case "xml":
      return xmlText(data)
    case "markdown":
      return markdownText(data)
    case "notebook":
      return notebookText(data)
    case "epub":
      return epubText(data)
    case "email":
    case "mbox":
      return run("python3", ["-c", mailScript, file, entry.format])
    case "odt":
    case "ods":
    case "odp":
      return odfText(data, entry.format)
    case "rtf":
      return rtfText(file)
    default:
      return decodeBytes(data)
  }
}

const toolsNeeded = { table: "soffice", email: "python3", mbox: "python3", pdf: "pdftotext", xlsx: "soffice", xls: "soffice", rtf: "soffice", html: "w3m", image: "tesseract" }

const referenceAll = () => {
  const dir = join(corpusDir, "reference")
  let made = 0
  let kept = 0
  const failures = []
  const missing = new Set()
  for (const entry of manifest.files) {
    if (onlyFormats && !onlyFormats.includes(entry.format)) continue
    const file = join(corpusDir, "files", entry.id)
    const target = join(dir, `${entry.id}.txt`)
    if (!existsSync(file)) {
      failures.push(`${entry.id}: not fetched`)
      continue
    }
    if (!force && existsSync(target)) {
      kept++
      continue
    }
    const tool = toolsNeeded[entry.format]
    if (tool && !has(tool)) {
      missing.add(tool)
      continue
    }
    try {
      const text = referenceOf(entry, file)
      mkdirSync(dirname(target), { recursive: true })
      writeFileSync(target, text)
      made++
    } catch (e) {
      failures.push(`${entry.id}: ${e.message}`)
    }
  }
  mkdirSync(dir, { recursive: true })
  const versions = {
    pdftotext: has("pdftotext") ? run("sh", ["-c", "pdftotext -v 2>&1 | head -1"]).trim() : undefined,
    soffice: has("soffice") ? run("soffice", ["--version"]).trim() : undefined,
    w3m: has("w3m") ? run("sh", ["-c", "w3m -version | head -1"]).trim() : undefined,
    tesseract: has("tesseract") ? run("sh", ["-c", "tesseract --version 2>&1 | head -1"]).trim() : undefined
  }
  writeFileSync(join(dir, "tools.json"), JSON.stringify({ tools: referenceTool, versions }, null, 2) + "\n")
  console.log(`reference: ${made} written, ${kept} already present, ${failures.length} failed, in ${dir}`)
  for (const t of missing) {
    console.error(`  ${t} is not installed: its formats have no reference (Debian: poppler-utils, libreoffice-calc, w3m, tesseract-ocr)`)
  }
  for (const f of failures) console.error(`  ${f}`)
  return failures.length === 0 && missing.size === 0
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const all = steps.length === 0
  let ok = true
  if (all || steps.includes("fetch")) ok = (await fetchAll()) && ok
  if (all || steps.includes("reference")) ok = referenceAll() && ok
  process.exitCode = ok ? 0 : 1
}
