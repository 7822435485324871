/**
 * `images_only` on the formats whose pictures are not plain zip entries: PDF (decoded by pdf.js,
 * re-encoded as PNG) and XLS (the BIFF drawing group's blip store), checked by decoding every
 * returned image. (The PDF title from the largest type is checked in LocalFiles.embeddings.test.ts.)
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { loadImage } from "@napi-rs/canvas"
import { Effect } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { xlsImages } from "../../src/engines/documents/internal/extract/xls-images.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { fixtureFile } from "./fixtures.js"

const extract = (path: string, options?: Upload.UploadOptions) =>
  Effect.flatMap(Upload.Upload, (u) => u.extract(fixtureFile(path), options))

const decode = (url: string) =>
  Effect.promise(async () => {
    const m = /^data:(image\/[a-z+-]+);base64,([A-Za-z0-9+/=]+)$/.exec(url)
    expect(m, url.slice(0, 40)).not.toBeNull()
    const img = await loadImage(Buffer.from(m![2]!, "base64"))
    return { mime: m![1]!, width: img.width, height: img.height }
  })

layer(LocalFiles.layer({ timeout: "60 seconds" }))("images_only", (it) => {
  it.effect("a PDF gives each distinct raster image once, as a PNG that decodes to the image's size", () =>
    Effect.gen(function*() {
      const r = yield* extract("pdf/TAMReview.pdf", { images_only: true })
      expect(r.type).toBe("pdf")
      const urls = r.content.split("\n")
      // TAMReview paints 10 distinct images (a logo repeated on all 23 pages counts once)
      expect(urls).toHaveLength(10)
      expect(new Set(urls).size).toBe(10)
      const sizes = yield* Effect.forEach(urls, decode)
      for (const s of sizes) expect(s.mime).toBe("image/png")
      // the two figures, at the pixel size pdf.js reports for their XObjects
      expect(sizes).toContainEqual({ mime: "image/png", width: 697, height: 217 })
      expect(sizes).toContainEqual({ mime: "image/png", width: 883, height: 265 })
    }))

  it.effect("with page_based, each page lists the images it paints", () =>
    Effect.gen(function*() {
      const r = yield* extract("pdf/TAMReview.pdf", { images_only: true, page_based: true })
      const pages = r.pages ?? []
      expect(pages).toHaveLength(23)
      const perPage = pages.map((p) => (p.content === "" ? 0 : p.content.split("\n").length))
      // page 4 holds a figure and two small images besides the logo pair every page repeats
      expect(perPage[3]).toBe(5)
      expect(perPage.every((n) => n >= 2)).toBe(true)
    }))

  it.effect("a PDF without raster images says so", () =>
    Effect.gen(function*() {
      const r = yield* extract("pdf/prefilled_f1040.pdf", { images_only: true })
      expect(r.content).toBe("")
      expect(r.warnings).toContain("images_only: the PDF has no embedded raster images")
    }))

  it.effect("an XLS gives the pictures of its blip store", () =>
    Effect.gen(function*() {
      const r = yield* extract("xls/aida-tour-maldives-ru.xls", { images_only: true })
      expect(r.type).toBe("xlsx")
      const urls = r.content.split("\n")
      expect(urls).toHaveLength(2)
      for (const s of yield* Effect.forEach(urls, decode)) {
        expect(s.mime).toBe("image/png")
        expect(s.width).toBeGreaterThan(100)
        expect(s.height).toBeGreaterThan(100)
      }
      const none = yield* extract("xls/SampleSS.xls", { images_only: true })
      expect(none.content).toBe("")
      expect(none.warnings).toContain("images_only: the workbook has no embedded images")
    }))

  it.effect("an encrypted XLS still fails with the password error under images_only", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(extract("xls/password.xls", { images_only: true }))
      expect(e._tag).toBe("ExtractionError")
      expect(e._tag === "ExtractionError" ? e.reason : undefined).toBe("password_required")
    }))
})

describe("xlsImages on damaged input", () => {
  it("truncations and byte flips give fewer pictures, never a throw", () => {
    const data = fixtureFile("xls/aida-tour-maldives-ru.xls").data
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31)
    for (let i = 0; i < 60; i++) {
      const copy = data.slice(0, i % 2 === 0 ? next() % data.length : data.length)
      if (i % 2 === 1) for (let k = 0; k < 32; k++) copy[next() % copy.length] = next() % 256
      const r = xlsImages(copy)
      expect(r.images.length).toBeLessThanOrEqual(2)
      for (const u of r.images) expect(u).toMatch(/^data:image\/(png|jpeg|tiff|bmp|emf);base64,/)
    }
  })
})
