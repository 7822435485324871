/**
 * PDF with pdfjs-dist 4.10 (legacy build, Node 20): text per page in reading order, AcroForm
 * field values placed on their page, CJK through the cMaps that pdfjs-dist ships, broken xref
 * tables reconstructed by pdf.js, passwords, and optional OCR of pages that have no text layer
 * (rendered with @napi-rs/canvas).
 */
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { recognize } from "./ocr.js"
import { ExtractFailure, type Extracted, type ExtractOptions, limits, type Unit } from "./types.js"

type PdfJs = typeof import("pdfjs-dist/legacy/build/pdf.mjs")
let pdfjs: Promise<PdfJs> | undefined
const load = () => (pdfjs ??= import("pdfjs-dist/legacy/build/pdf.mjs"))

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

/** Joins text items into lines: a new line when the baseline moves, a space across gaps. */
const pageText = (items: ReadonlyArray<TextItem>): string => {
  let out = ""
  let lastY: number | undefined
  let lastEnd: number | undefined
  let lastHeight = 0
  for (const item of items) {
    const x = item.transform[4] ?? 0
    const y = item.transform[5] ?? 0
    const h = Math.abs(item.height || item.transform[3] || 0) || lastHeight || 10
    if (lastY !== undefined && Math.abs(y - lastY) > Math.max(h, lastHeight) * 0.5) {
      if (!out.endsWith("\n")) out += "\n"
    } else if (lastEnd !== undefined && x - lastEnd > h * 0.15 && !out.endsWith(" ") && !out.endsWith("\n")) {
      if (item.str && !item.str.startsWith(" ")) out += " "
    }
    out += item.str
    if (item.hasEOL && !out.endsWith("\n")) out += "\n"
    if (item.str.length > 0) {
      lastY = y
      lastEnd = x + item.width
      lastHeight = h
    }
  }
  return out.replace(/[ \t]+\n/g, "\n").trim()
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

/** Pages with less visible text than this are "without a text layer" for OCR. */
const minTextChars = 1

/** Extracts a PDF. */
export const extractPdf = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const lib = await load()
  const { cMapUrl, standardFontDataUrl } = assets()
  const task = lib.getDocument({
    data: data.slice(), // pdf.js takes ownership of (detaches) the buffer
    cMapUrl,
    cMapPacked: true,
    standardFontDataUrl,
    password: options.password,
    isEvalSupported: false,
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
    let ocrPages = 0
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n)
      let text = ""
      try {
        const content = await page.getTextContent()
        text = pageText(content.items.filter((i): i is TextItem & typeof i => "str" in i))
      } catch (e) {
        warnings.push(`page ${n}: text could not be read (${(e as Error).message})`)
      }
      if (options.enableOcr && text.replace(/\s/g, "").length < minTextChars) {
        const png = await renderPage(page, doc)
        if (png) {
          text = (await recognize(png, options.ocrLangPath, options.ocrLanguages)).trim()
          ocrPages++
        } else warnings.push(`page ${n}: no text layer and it could not be rendered for OCR`)
      }
      const form = fieldsByPage.get(n)
      if (form) text += `${text ? "\n\n" : ""}Form fields:\n${form.join("\n")}`
      units.push({ page: n, content: text })
      page.cleanup()
    }
    if (ocrPages > 0) warnings.push(`OCR read ${ocrPages} page(s) without a text layer`)
    if (options.imagesOnly) warnings.push("images_only: embedded PDF images are not extracted by the local engine")
    const str = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : undefined)
    return { format: "pdf", units, title: str(info.Title), description: str(info.Subject), warnings }
  } finally {
    await doc.destroy().catch(() => undefined)
  }
}

type PdfDoc = Awaited<ReturnType<PdfJs["getDocument"]>["promise"]>
type PdfPage = Awaited<ReturnType<PdfDoc["getPage"]>>

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
