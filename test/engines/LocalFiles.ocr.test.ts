/**
 * Scanned PDF pages are OCR'd by default (issue #26): a page without a text layer, or with a
 * text layer of glyph soup, is read by OCR unless `enable_ocr: false`; a PDF with a readable
 * text layer is not OCR'd.
 *
 * The scanned PDFs are built here from the fixture scan `png/testocr.png` (made by others): the
 * image re-encoded as JPEG by skia (@napi-rs/canvas) and placed on a page of its size at 200 dpi
 * by the small PDF writer of test/support/pdf-writer.ts. Two OCR runs in all (a scanned page, a page of glyph soup over the scan).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { createCanvas, loadImage } from "@napi-rs/canvas"
import { Effect } from "effect"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { extractDocument } from "../../src/engines/documents/internal/extract/index.js"
import { defaultLangPath } from "../../src/engines/documents/internal/extract/ocr.js"
import { textLayer } from "../../src/engines/documents/internal/extract/textlayer.js"
import { pdf } from "../support/pdf-writer.js"
import { fixtureFile, manifest } from "./fixtures.js"

const collapse = (s: string) => s.replace(/\s+/g, " ")
const snippets = manifest.find((f) => f.path === "png/testocr.png")!.must_contain

/** The fixture scan as a JPEG, with its size in pixels. */
const scanJpeg = Effect.promise(async () => {
  const img = await loadImage(Buffer.from(fixtureFile("png/testocr.png").data))
  const canvas = createCanvas(img.width, img.height)
  const ctx = canvas.getContext("2d")
  ctx.fillStyle = "#ffffff"
  ctx.fillRect(0, 0, img.width, img.height)
  ctx.drawImage(img, 0, 0)
  return { jpeg: new Uint8Array(await canvas.encode("jpeg", 95)), width: img.width, height: img.height }
})

const typed = "This page has a text layer of its own, typed and not scanned, so it needs no OCR at all."
/** What a Type3 figure font without a Unicode map gives (the glyph soup of issue #26). */
const soup = ["47>F/# N:FF#O6:,/# 6>F/#4 7:#/N", "F#O6:,/ 47>F/# ::#F/N F#/O6,4>", "N:FF#O6:,/# 47>F/# 6>F/#4 7:#/N"]

const chunks = (file: Upload.UploadFile, options?: Upload.UploadOptions) =>
  Effect.flatMap(Upload.Upload, (u) => u.extractChunks(file, options))

describe("textLayer: which PDF text needs OCR", () => {
  it("readable text in several scripts, numbers and short text are ok", () => {
    expect(textLayer("Trace-based Just-in-Time Type Specialization for Dynamic Languages")).toBe("ok")
    expect(textLayer("Revenue 2023: 1,234.56 | 7,890.12 | 12.5% | 2024-03-05 | -17 | 3/4")).toBe("ok")
    expect(textLayer("日本語のテキストはここにあります。これは普通の文章です。")).toBe("ok")
    expect(textLayer("Это обычный текст на русском языке, без мусора.")).toBe("ok")
    expect(textLayer("iPhone, JavaScript, COVID-19, H2O and e.g. McDonald's are words")).toBe("ok")
    expect(textLayer("12")).toBe("ok")
  })
  it("no visible character is missing; glyph soup and private-use text are garbage", () => {
    expect(textLayer("")).toBe("missing")
    expect(textLayer(" \n\t ")).toBe("missing")
    expect(textLayer(soup.join("\n"))).toBe("garbage")
    expect(textLayer("\ue001\ue002\ue003 \ue004\ue005\ue006 \ue007\ue008 \ue009\ue00a\ue00b\ue00c")).toBe("garbage")
    expect(textLayer("xkcdqrt bvwzmfl qzxwvtp rrhgtkl mnbvcxz")).toBe("garbage")
  })
})

layer(LocalFiles.layer({ timeout: "60 seconds" }))("scanned PDF pages", (it) => {
  it.effect("by default a page without a text layer is OCR'd, the typed page is not, and the chunks say which", () =>
    Effect.gen(function*() {
      const image = yield* scanJpeg
      const r = yield* chunks({ name: "mixed.pdf", data: pdf([{ text: [typed] }, { image }]) })
      const all = r.data.data.chunks
      const text = collapse(all.map((c) => c.content).join("\n"))
      for (const snippet of snippets) expect(text).toContain(collapse(snippet))
      expect(text).toContain(typed)
      expect(all.filter((c) => c.from_page === 2).every((c) => c.ocr === true)).toBe(true)
      expect(all.filter((c) => c.from_page === 1).every((c) => c.ocr === undefined)).toBe(true)
      expect(r.data.data.metadata.properties?.ocr_pages).toBe("2")
      expect(r.warnings?.some((w) => w.includes("OCR read 1 page(s)"))).toBe(true)
    }))

  it.effect("a text layer of glyph soup over a scan is replaced by what OCR reads", () =>
    Effect.gen(function*() {
      const image = yield* scanJpeg
      const r = yield* Effect.flatMap(Upload.Upload, (u) => u.extract({ name: "soup.pdf", data: pdf([{ image, text: soup }]) }))
      for (const snippet of snippets) expect(collapse(r.content)).toContain(collapse(snippet))
      expect(r.content).not.toContain("N:FF#O6")
    }))

  it.effect("enable_ocr: false leaves a scanned PDF empty (ExtractionError empty), with the hint", () =>
    Effect.gen(function*() {
      const image = yield* scanJpeg
      const e = yield* Effect.flip(chunks({ name: "scan.pdf", data: pdf([{ image }]) }, { enable_ocr: false }))
      expect(e._tag).toBe("ExtractionError")
      expect(e._tag === "ExtractionError" && e.reason).toBe("empty")
      expect(e.message).toContain("enable_ocr=true")
    }))

  it.effect("a PDF with a text layer is not OCR'd (a 14-page paper, a Japanese page)", () =>
    Effect.gen(function*() {
      for (const path of ["pdf/tracemonkey.pdf", "pdf/issue16063-japanese.pdf"]) {
        const r = yield* chunks(fixtureFile(path))
        expect(r.data.data.chunks.length).toBeGreaterThan(0)
        expect(r.data.data.chunks.some((c) => c.ocr !== undefined)).toBe(false)
        expect(r.data.data.metadata.properties?.ocr_pages).toBeUndefined()
        expect(r.warnings?.some((w) => w.includes("OCR")) ?? false).toBe(false)
      }
    }))
})

layer(LocalFiles.layer({ ocr: false, isolation: "inline", timeout: "60 seconds" }))("scanned PDF pages without OCR", (it) => {
  it.effect("a PDF that only OCR could read fails with ocr_unavailable naming its pages", () =>
    Effect.gen(function*() {
      const image = yield* scanJpeg
      const e = yield* Effect.flip(chunks({ name: "scan.pdf", data: pdf([{ image }]) }))
      expect(e._tag === "ExtractionError" && e.reason).toBe("ocr_unavailable")
      expect(e.message).toContain("page(s) 1")
    }))

  it.effect("a PDF with some text keeps it, and a warning names the pages left unread", () =>
    Effect.gen(function*() {
      const image = yield* scanJpeg
      const r = yield* chunks({ name: "mixed.pdf", data: pdf([{ text: [typed] }, { image }]) })
      expect(collapse(r.data.data.chunks.map((c) => c.content).join(" "))).toContain(typed)
      expect(r.warnings?.some((w) => w.includes("page(s) 2 have no readable text layer"))).toBe(true)
    }))
})

describe("the per-file time budget", () => {
  const options = { imagesOnly: false, textOnly: false, ocrLanguages: "eng", ocrLangPath: defaultLangPath(), timeBudgetMs: 0 }
  it("a spent budget starts no OCR: a scanned PDF fails with timeout naming the page, a mixed one keeps its text with a warning", async () => {
    const image = await Effect.runPromise(scanJpeg)
    const scanned = await extractDocument({ name: "scan.pdf", data: pdf([{ image }]), options }).then(
      () => undefined,
      (e: unknown) => e as { reason?: string; message?: string }
    )
    expect(scanned?.reason).toBe("timeout")
    expect(scanned?.message).toContain("page(s) 1")
    const mixed = await extractDocument({ name: "mixed.pdf", data: pdf([{ text: [typed] }, { image }]), options })
    expect(mixed.units.map((u) => u.content)).toEqual([typed, ""])
    expect(mixed.warnings.some((w) => w.includes("page(s) 2") && w.includes("time budget"))).toBe(true)
    expect(mixed.metadata?.["ocr_pages"]).toBeUndefined()
  })
})
