/**
 * PDF with pdfjs-dist 4.10 (legacy build, Node 20): text per page in reading order, AcroForm
 * field values placed on their page, CJK through the cMaps that pdfjs-dist ships, broken xref
 * tables reconstructed by pdf.js, passwords, OCR of pages whose text layer is missing or
 * garbage (by default, see textlayer.ts; rendered with @napi-rs/canvas), embedded raster images as PNG data URLs (`images_only`), and
 * a title from the largest type at the top of page 1 when the document has no Info title.
 */
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { maxOf, readingOrder } from "./layout.js"
import { continues, isGlyphSoup, joinedRows, type Part, pageParts, type Rule, rulesOf, tableMarkdown } from "./pdf-tables.js"
import { recognize, unavailable } from "./ocr.js"
import { type TextLayer, textLayer } from "./textlayer.js"
import { ExtractFailure, type Extracted, type ExtractOptions, limits, type Unit } from "./types.js"

type PdfJs = typeof import("pdfjs-dist/legacy/build/pdf.mjs")
let pdfjs: Promise<PdfJs> | undefined
/**
 * Loads pdf.js and its worker code (run in this thread, as pdf.js does in Node). The legacy
 * build's bundled core-js replaces `Array.prototype.push` with a polyfill for the whole process,
 * several times slower than the engine's own and needed by nothing Node runs; the native
 * method is put back once both modules are loaded (the worker module is loaded here, so
 * pdf.js does not load it later and replace `push` again).
 */
const workerModule: string = "pdfjs-dist/legacy/build/pdf.worker.mjs"
const load = () =>
  (pdfjs ??= (async () => {
    const push = Array.prototype.push
    try {
      const lib = await import("pdfjs-dist/legacy/build/pdf.mjs")
      const worker: unknown = await import(workerModule)
      const scope = globalThis as { pdfjsWorker?: unknown }
      scope.pdfjsWorker ??= worker
      return lib
    } finally {
      Array.prototype.push = push
    }
  })())

const assets = (() => {
  let cached: { cMapUrl: string; standardFontDataUrl: string } | undefined
  return () => {
    if (!cached) {
      const root = dirname(createRequire(import.meta.url).resolve("pdfjs-dist/package.json"))
      cached = { cMapUrl: join(root, "cmaps") + "/", standardFontDataUrl: join(root, "standard_fonts") + "/" }
    }
    return cached
  }
})()

interface TextItem {
  readonly str: string
  readonly hasEOL: boolean
  readonly transform: ReadonlyArray<number>
  readonly width: number
  readonly height: number
}

/**
 * The page's text in reading order (columns one after the other, see layout.ts): one line per
 * text line, and a space wherever two items on a line are apart or out of order, so words of
 * neighbouring columns or cells are never glued together; words hyphenated at a line end are
 * joined.
 */
const pageText = (items: ReadonlyArray<TextItem>): string =>
  readingOrder(items)
    .map((block) =>
      block
        .map((line) => {
          let out = ""
          let lastEnd: number | undefined
          for (const item of line) {
            const x = item.transform[4] ?? 0
            const h = Math.abs(item.height || item.transform[3] || 0) || 10
            if (lastEnd !== undefined && (x - lastEnd > h * 0.15 || x < lastEnd - h * 0.5)) {
              if (!out.endsWith(" ") && !item.str.startsWith(" ")) out += " "
            }
            out += item.str
            lastEnd = x + item.width
          }
          return out.replace(/\s+/g, " ").trim()
        })
        .filter((l) => l !== "" && !isGlyphSoup(l))
        .join("\n")
    )
    .filter((b) => b !== "")
    .join("\n")
    // a word hyphenated at a line end is one word again ("inter-\nspecies"); a capital or a
    // digit after the break keeps the hyphen ("Stuttgart-\nHohenheim")
    .replace(/(\p{Ll})-\n(\p{Ll})/gu, "$1$2")

/**
 * An item whose Arabic lam-alef ligatures after the article's alef are in their letters' order
 * again. A font maps the ligature's one glyph to its two letters ("لأ"), and pdf.js reverses
 * them with the rest of the right-to-left run ("أل"): "الأول" comes out "األول". An alef is
 * never followed by a second alef in Arabic, so alef, alef (any form), lam is the article's
 * alef followed by a reversed ligature ("األول" → "الأول", "واالقتصادية" → "والاقتصادية").
 */
export const lamAlef = <I extends TextItem>(item: I): I =>
  /\u0627[\u0622\u0623\u0625\u0627]\u0644/.test(item.str) ? { ...item, str: item.str.replace(/\u0627([\u0622\u0623\u0625\u0627])\u0644/g, "\u0627\u0644$1") } : item

/**
 * Whether any two lines of the page have a gap of a line height between two items: a table may
 * be there. Items are taken by position (a table's cells are often written cell by cell, so two
 * items of a row are seldom next to each other in the content stream).
 */
const mayHaveTable = (items: ReadonlyArray<TextItem>): boolean => {
  const gaps = new Set<number>()
  let last: TextItem | undefined
  const row = (i: TextItem) => Math.round(i.transform[5] ?? 0)
  const byPosition = items.filter((i) => i.str.trim() !== "").sort((a, b) => row(b) - row(a) || (a.transform[4] ?? 0) - (b.transform[4] ?? 0))
  for (const item of byPosition) {
    const h = Math.abs(item.height || item.transform[3] || 0) || 10
    const y = item.transform[5] ?? 0
    const x = item.transform[4] ?? 0
    if (last && Math.abs((last.transform[5] ?? 0) - y) < h * 0.5 && x - ((last.transform[4] ?? 0) + last.width) >= h * 0.8) {
      gaps.add(Math.round(y))
    }
    last = item
  }
  return gaps.size >= 2
}

/** A page's parts (text and tables, see pdf-tables.ts) as text; tables as Markdown between blank lines. */
const partsText = (parts: ReadonlyArray<Part<TextItem>>): string =>
  parts
    .map((p) => (p.kind === "table" ? tableMarkdown(p.table) : pageText(p.items)))
    .filter((t) => t !== "")
    .join("\n\n")

/** A page's parts as plain text: a table's rows as lines of their cells' texts. */
const plainText = (parts: ReadonlyArray<Part<TextItem>>): string =>
  parts.map((p) => (p.kind === "table" ? p.table.rows.map((r) => r.join(" ")).join("\n") : pageText(p.items))).join("\n")

/** The lines the page draws, when its text may hold a table (the operator list costs a parse of the page). */
const pageRules = async (page: PdfPage, lib: PdfJs, items: ReadonlyArray<TextItem>): Promise<Array<Rule>> =>
  mayHaveTable(items)
    ? rulesOf(await page.getOperatorList().catch(() => ({ fnArray: [], argsArray: [] })), lib.OPS as unknown as Record<string, number>)
    : []

/**
 * The index of the table that ends a page's parts: the last part, or the one before a last text
 * of at most two lines (a page footer, "Page 7 of 14"); -1 for none.
 */
const endingTable = (parts: ReadonlyArray<Part<TextItem>>): number => {
  const n = parts.length
  if (parts[n - 1]?.kind === "table") return n - 1
  return parts[n - 2]?.kind === "table" && isFooter(parts[n - 1]!) ? n - 2 : -1
}

/** Whether a part is text of at most two lines (a page footer). */
const isFooter = (part: Part<TextItem>): boolean => part.kind === "text" && pageText(part.items).split("\n").length <= 2

/**
 * Whether the next page's `parts` start with text that only repeats the text right above the
 * table `at` of the page before (`holder`), then a table: a title row spanning the table's
 * columns, repeated on every page with the header row, which the reader took for text.
 */
const repeatsTitle = (holder: ReadonlyArray<Part<TextItem>>, at: number, parts: ReadonlyArray<Part<TextItem>>): boolean => {
  const [lead, table] = parts
  const before = holder[at - 1]
  if (lead?.kind !== "text" || table?.kind !== "table" || before?.kind !== "text") return false
  const repeated = pageText(lead.items)
  const above = pageText(before.items)
  return repeated !== "" && (above === repeated || above.endsWith(`\n${repeated}`))
}

/**
 * A table that goes on at the top of the next page with its header repeated is one table: its
 * rows join the table that ends the page before (where the table starts; a page footer after
 * it stays after it), the header once; a title repeated above the header is dropped with it.
 * `pages[i]` is the parts of unit `i` (undefined when its text is not from them) and
 * `suffix[i]` what follows them in the unit's content (form fields).
 */
const joinContinued = (units: Array<Unit>, pages: ReadonlyArray<Array<Part<TextItem>> | undefined>, suffix: ReadonlyArray<string>) => {
  // the page whose parts end with a table that may go on (a page emptied by a join keeps it open)
  let open: number | undefined
  for (let i = 0; i < pages.length; i++) {
    const parts = pages[i]
    if (!parts) {
      open = undefined
      continue
    }
    const holder = open === undefined ? undefined : pages[open]
    const at = holder === undefined ? -1 : endingTable(holder)
    const last = holder?.[at]
    const title = holder !== undefined && at >= 0 && repeatsTitle(holder, at, parts) ? 1 : 0
    const first = parts[title]
    if (open !== undefined && holder && last?.kind === "table" && first?.kind === "table" && continues(last.table, first.table)) {
      holder[at] = { kind: "table", table: { ...last.table, rows: joinedRows(last.table, first.table) } }
      parts.splice(0, title + 1)
      units[open] = { ...units[open]!, content: partsText(holder) + suffix[open] }
      units[i] = { ...units[i]!, content: (partsText(parts) + suffix[i]).replace(/^\n+/, "") }
      // a page the join left empty, or with its footer only, keeps the table open
      if (parts.length === 0 || (parts.length === 1 && isFooter(parts[0]!))) continue
    }
    if (parts.length > 0) open = endingTable(parts) >= 0 ? i : undefined
  }
}

interface FieldObject {
  readonly value?: unknown
  readonly page?: number
  readonly type?: string
}

const fieldText = (value: unknown): string | undefined => {
  if (typeof value === "string") return value.trim() && value !== "Off" ? value.trim() : undefined
  if (Array.isArray(value)) {
    const parts = value.map(fieldText).filter((v): v is string => v !== undefined)
    return parts.length > 0 ? parts.join(", ") : undefined
  }
  if (typeof value === "number") return String(value)
  return undefined
}

/** What OCR did in one PDF extraction. */
interface OcrRun {
  /** When the extraction started (ms since the epoch), for the time budget. */
  readonly started: number
  /** Pages OCR read. */
  readonly read: Array<number>
  /** Pages that needed OCR when OCR is not installed (default mode only). */
  readonly unavailable: Array<number>
  /** Pages not OCR'd because the time budget would be exceeded. */
  readonly overBudget: Array<number>
  /** The longest time one page took to render and OCR, in ms. */
  slowest: number
  /** Why OCR cannot run, once known (default mode). */
  missing?: ExtractFailure | undefined
}

/**
 * OCR of page `n`, whose text layer is missing or garbage ({@link textLayer}): the text OCR
 * reads (possibly ""), or undefined when the page is not read, recorded in `run` or `warnings`:
 * the time budget would be exceeded, OCR is not installed (with `enable_ocr=true` and no text
 * layer at all, that is an `ocr_unavailable` failure; a garbage layer is then kept as it is),
 * or the page cannot be rendered.
 */
const ocrPage = async (
  page: PdfPage,
  doc: PdfDoc,
  n: number,
  layer: TextLayer,
  options: ExtractOptions,
  run: OcrRun,
  warnings: Array<string>
): Promise<string | undefined> => {
  run.missing ??= unavailable(options.ocrLangPath)
  if (run.missing) {
    if (options.enableOcr === true && layer === "missing") throw run.missing
    run.unavailable.push(n)
    return undefined
  }
  const budget = options.timeBudgetMs
  if (budget !== undefined && Date.now() - run.started + run.slowest >= budget * 0.9) {
    run.overBudget.push(n)
    return undefined
  }
  const t0 = Date.now()
  const png = await renderPage(page, doc)
  if (!png) {
    warnings.push(`page ${n}: no readable text layer and it could not be rendered for OCR`)
    return undefined
  }
  const text = (await recognize(png, options.ocrLangPath, options.ocrLanguages)).trim()
  run.slowest = Math.max(run.slowest, Date.now() - t0)
  run.read.push(n)
  return text
}

/**
 * The warnings and metadata of what OCR did (`ocr_pages`: the pages OCR read); fails with
 * `ocr_unavailable` (OCR not installed) or `timeout` (time budget) when pages needed OCR and
 * no page has any text.
 */
const ocrOutcome = (
  run: OcrRun,
  units: ReadonlyArray<Unit>,
  warnings: Array<string>,
  options: ExtractOptions
): Record<string, string> | undefined => {
  const noText = units.every((u) => u.content.trim() === "")
  if (run.unavailable.length > 0) {
    const message = `page(s) ${run.unavailable.join(", ")} have no readable text layer and ${run.missing?.message ?? "OCR is not available"}`
    if (noText) throw new ExtractFailure("ocr_unavailable", message)
    warnings.push(`${message}; without OCR they are left as they are`)
  }
  if (run.overBudget.length > 0) {
    const message = `page(s) ${run.overBudget.join(", ")} have no readable text layer and were not OCR'd: the per-file time budget of ${
      Math.round((options.timeBudgetMs ?? 0) / 1000)
    } s would be exceeded`
    if (noText) throw new ExtractFailure("timeout", message)
    warnings.push(message)
  }
  if (run.read.length === 0) return undefined
  warnings.push(`OCR read ${run.read.length} page(s) without a readable text layer: ${run.read.join(", ")}`)
  return { ocr_pages: run.read.join(", ") }
}

/** Extracts a PDF. */
export const extractPdf = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const lib = await load()
  const { cMapUrl, standardFontDataUrl } = assets()
  const task = lib.getDocument({
    // a plain copy: pdf.js takes ownership of (detaches) the buffer, and refuses a Node Buffer
    data: new Uint8Array(data),
    cMapUrl,
    cMapPacked: true,
    standardFontDataUrl,
    password: options.password,
    isEvalSupported: false,
    // decoded images come back as pixels (not ImageBitmaps), for images_only
    isOffscreenCanvasSupported: false,
    // pdf.js does not decode an image over this many pixels (its default is no limit): a
    // hostile PDF cannot make the worker allocate gigabytes for one picture
    maxImageSize: limits.ocrPixels,
    useSystemFonts: false,
    disableFontFace: true,
    verbosity: 0
  })
  let doc: Awaited<typeof task.promise>
  try {
    doc = await task.promise
  } catch (e) {
    await task.destroy().catch(() => undefined)
    const err = e as { name?: string; code?: number; message?: string }
    if (err.name === "PasswordException") {
      if (err.code === 2 || options.password !== undefined) {
        throw new ExtractFailure("wrong_password", "the PDF is encrypted and the password given is wrong")
      }
      throw new ExtractFailure("password_required", "the PDF is encrypted: a password is required")
    }
    throw new ExtractFailure("corrupt", `the PDF cannot be read: ${err.message ?? String(e)}`)
  }
  try {
    if (doc.numPages > limits.pdfPages) {
      throw new ExtractFailure("limit_exceeded", `the PDF has ${doc.numPages} pages; the limit is ${limits.pdfPages}`)
    }
    const warnings: Array<string> = []
    const str = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : undefined)
    const meta = await doc.getMetadata().catch(() => undefined)
    const info = (meta?.info ?? {}) as { Title?: unknown; Subject?: unknown }
    const fields = ((await doc.getFieldObjects().catch(() => null)) ?? {}) as Record<string, ReadonlyArray<FieldObject>>
    const fieldsByPage = new Map<number, Array<string>>()
    for (const [name, objects] of Object.entries(fields)) {
      for (const obj of objects) {
        const value = fieldText(obj.value)
        if (value === undefined || obj.type === "button") continue
        const page = (obj.page ?? 0) + 1
        const list = fieldsByPage.get(page) ?? []
        list.push(`- ${name}: ${value}`)
        fieldsByPage.set(page, list)
        break
      }
    }
    const units: Array<Unit> = []
    if (options.imagesOnly) {
      const images = await pageImages(doc, lib, warnings)
      const all = [...new Set(images.flat())]
      if (all.length === 0) warnings.push("images_only: the PDF has no embedded raster images")
      return {
        format: "pdf",
        units: images.map((list, i) => ({ page: i + 1, content: list.join("\n") })),
        images: all,
        title: str(info.Title),
        description: str(info.Subject),
        warnings
      }
    }
    const run: OcrRun = { started: Date.now(), read: [], unavailable: [], overBudget: [], slowest: 0 }
    let titleGuess: string | undefined
    const pages: Array<Array<Part<TextItem>> | undefined> = []
    const isForm = Object.keys(fields).length > 0
    const suffix: Array<string> = []
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n)
      let text = ""
      let parts: Array<Part<TextItem>> | undefined
      let rendered: string | undefined
      try {
        const content = await page.getTextContent()
        const items = content.items.filter((i): i is TextItem & typeof i => "str" in i).map(lamAlef)
        // a fillable form's boxes are not tables: its pages are read as text
        parts = isForm ? [{ kind: "text", items }] : pageParts(items, await pageRules(page, lib, items))
        text = rendered = partsText(parts)
        if (n === 1) titleGuess = largestTypeTitle(items)
      } catch (e) {
        warnings.push(`page ${n}: text could not be read (${(e as Error).message})`)
      }
      let ocr = false
      // judged without the tables' Markdown (a table of short cells is mostly "|" and "---")
      const layer = options.enableOcr === false ? "ok" : textLayer(parts === undefined ? text : plainText(parts))
      if (layer !== "ok") {
        const read = await ocrPage(page, doc, n, layer, options, run, warnings)
        if (read !== undefined) {
          if (read === "" && layer === "garbage") warnings.push(`page ${n}: its text layer is unreadable and OCR found no text: left out`)
          text = read
          ocr = read !== ""
        }
      }
      const fromParts = parts !== undefined && text === rendered
      const form = fieldsByPage.get(n)
      const formText = form ? `${text ? "\n\n" : ""}Form fields:\n${form.join("\n")}` : ""
      text += formText
      pages.push(fromParts ? parts : undefined)
      suffix.push(formText)
      units.push({ page: n, content: text, ...(ocr ? { ocr: true } : {}) })
      page.cleanup()
    }
    joinContinued(units, pages, suffix)
    const metadata = ocrOutcome(run, units, warnings, options)
    return { format: "pdf", units, title: str(info.Title) ?? titleGuess, description: str(info.Subject), metadata, warnings }
  } finally {
    await doc.destroy().catch(() => undefined)
  }
}

type PdfDoc = Awaited<ReturnType<PdfJs["getDocument"]>["promise"]>
type PdfPage = Awaited<ReturnType<PdfDoc["getPage"]>>

/**
 * A title from page 1 when the Info dictionary has none: the first run of text set in the
 * largest type on the page (at least 1.2 times the body size, so a page of uniform type has no
 * title), as one line. Undefined when nothing qualifies.
 */
export const largestTypeTitle = (items: ReadonlyArray<TextItem>): string | undefined => {
  const sized = items.filter((i) => i.str.trim() !== "").map((i) => ({ str: i.str, size: Math.abs(i.height || i.transform[3] || 0) }))
  if (sized.length === 0) return undefined
  const max = maxOf(sized.map((i) => i.size))
  // the body size: the size that carries the most characters
  const bySize = new Map<number, number>()
  for (const i of sized) bySize.set(Math.round(i.size), (bySize.get(Math.round(i.size)) ?? 0) + i.str.length)
  const body = [...bySize.entries()].sort((a, b) => b[1] - a[1])[0]![0]
  if (max < body * 1.2) return undefined
  const parts: Array<string> = []
  let started = false
  for (const i of items) {
    const size = Math.abs(i.height || i.transform[3] || 0)
    if (i.str.trim() === "") {
      if (started) parts.push(" ")
      continue
    }
    if (size >= max * 0.9) {
      started = true
      parts.push(i.str)
    } else if (started) break
  }
  const title = parts.join(" ").replace(/\s+/g, " ").replace(/(\p{L})- (\p{L})/gu, "$1$2").trim()
  return /\p{L}{2}/u.test(title) && title.length <= 300 ? title : undefined
}

interface PdfImage {
  readonly width: number
  readonly height: number
  /** pdf.js ImageKind: 1 grayscale 1 bit per pixel, 2 RGB, 3 RGBA. */
  readonly kind: number
  readonly data: Uint8Array | Uint8ClampedArray
}

/** Expands a pdf.js image to RGBA pixels; undefined for a layout we do not know. */
const toRgba = (img: PdfImage): Uint8ClampedArray | undefined => {
  const { width: w, height: h, kind, data } = img
  const out = new Uint8ClampedArray(w * h * 4)
  if (kind === 3 && data.length >= w * h * 4) out.set(data.subarray(0, w * h * 4))
  else if (kind === 2 && data.length >= w * h * 3) {
    for (let i = 0, j = 0; i < w * h; i++, j += 3) {
      out[i * 4] = data[j]!
      out[i * 4 + 1] = data[j + 1]!
      out[i * 4 + 2] = data[j + 2]!
      out[i * 4 + 3] = 255
    }
  } else if (kind === 1) {
    const rowBytes = (w + 7) >> 3
    if (data.length < rowBytes * h) return undefined
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const v = (data[y * rowBytes + (x >> 3)]! >> (7 - (x & 7))) & 1 ? 255 : 0
        const o = (y * w + x) * 4
        out[o] = out[o + 1] = out[o + 2] = v
        out[o + 3] = 255
      }
    }
  } else return undefined
  return out
}

/**
 * An object of the page's store once pdf.js has decoded it (images arrive after the operator
 * list); undefined when it does not within `ms`.
 */
const settled = (
  objs: { get: (id: string, callback: (value: unknown) => void) => unknown },
  id: string,
  ms = 15_000
): Promise<PdfImage | undefined> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms)
    try {
      objs.get(id, (value) => {
        clearTimeout(timer)
        resolve((value ?? undefined) as PdfImage | undefined)
      })
    } catch {
      clearTimeout(timer)
      resolve(undefined)
    }
  })

/**
 * The raster images each page paints (image XObjects and inline images; stencil masks are not
 * pictures and are left out), decoded by pdf.js and re-encoded as PNG data URLs. An image used
 * on several pages is encoded once. Bounded by {@link limits.images} and
 * {@link limits.imageBytes}; what is left out is reported in `warnings`.
 */
const pageImages = async (doc: PdfDoc, lib: PdfJs, warnings: Array<string>): Promise<Array<Array<string>>> => {
  const { createCanvas, ImageData } = await import("@napi-rs/canvas")
  const byHash = new Map<string, string>()
  let bytes = 0
  let skipped = 0
  const pages: Array<Array<string>> = []
  for (let n = 1; n <= doc.numPages; n++) {
    const page = await doc.getPage(n)
    const urls: Array<string> = []
    try {
      const ops = await page.getOperatorList()
      for (let i = 0; i < ops.fnArray.length; i++) {
        const fn = ops.fnArray[i]
        if (fn !== lib.OPS.paintImageXObject && fn !== lib.OPS.paintInlineImageXObject) continue
        const arg = (ops.argsArray[i] as Array<unknown>)[0]
        const img = typeof arg === "string"
          ? await settled(arg.startsWith("g_") ? page.commonObjs : page.objs, arg)
          : (arg as PdfImage | undefined)
        if (!img || !img.data || img.width < 1 || img.height < 1) continue
        const hash = createHash("sha1").update(img.data).update(`${img.width}x${img.height}:${img.kind}`).digest("hex")
        let url = byHash.get(hash)
        if (url === undefined) {
          if (byHash.size >= limits.images || bytes + img.data.length > limits.imageBytes) {
            skipped++
            continue
          }
          const rgba = toRgba(img)
          if (rgba === undefined) {
            skipped++
            continue
          }
          bytes += img.data.length
          const canvas = createCanvas(img.width, img.height)
          canvas.getContext("2d").putImageData(new ImageData(rgba, img.width, img.height), 0, 0)
          url = `data:image/png;base64,${(await canvas.encode("png")).toString("base64")}`
          byHash.set(hash, url)
        }
        if (!urls.includes(url)) urls.push(url)
      }
    } catch (e) {
      warnings.push(`page ${n}: images could not be read (${(e as Error).message})`)
    }
    pages.push(urls)
    page.cleanup()
  }
  if (skipped > 0) warnings.push(`images_only: ${skipped} image(s) left out (unknown pixel layout or over the limits)`)
  return pages
}

/** Renders a page at 200 dpi to PNG for OCR; undefined when no canvas is available. */
const renderPage = async (page: PdfPage, doc: PdfDoc): Promise<Uint8Array | undefined> => {
  try {
    const base = page.getViewport({ scale: 1 })
    const scale = Math.min(200 / 72, Math.sqrt(40_000_000 / Math.max(1, base.width * base.height)))
    const viewport = page.getViewport({ scale })
    const factory = (doc as unknown as { canvasFactory: { create: (w: number, h: number) => { canvas: { toBuffer: (t: string) => Buffer }; context: unknown } } }).canvasFactory
    const { canvas, context } = factory.create(Math.ceil(viewport.width), Math.ceil(viewport.height))
    const ctx = context as { fillStyle: string; fillRect: (a: number, b: number, c: number, d: number) => void }
    ctx.fillStyle = "#ffffff"
    ctx.fillRect(0, 0, Math.ceil(viewport.width), Math.ceil(viewport.height))
    await page.render({ canvasContext: context as never, viewport }).promise
    return new Uint8Array(canvas.toBuffer("image/png"))
  } catch {
    return undefined
  }
}
