/**
 * Every file of the shared corpus (shared/fixtures/docs/manifest.json) through
 * `LocalFiles.layer`: `ok` files yield every snippet and the page/slide/sheet count listed;
 * `error` files fail with the typed error of their kind, and open with their password.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { fixtureFile, manifest, missingSnippets } from "./fixtures.js"

const isImage = (format: string) => format === "png" || format === "jpg"

layer(LocalFiles.layer({ timeout: "60 seconds" }))("LocalFiles on the shared corpus", (it) => {
  for (const entry of manifest.filter((e) => e.expect === "ok")) {
    it.effect(`${entry.path}: extracts every snippet and the listed count`, () =>
      Effect.gen(function*() {
        const upload = yield* Upload.Upload
        const file = fixtureFile(entry.path)
        const result = yield* upload.extract(file, { page_based: true, enable_ocr: isImage(entry.format) })
        expect(result.status).toBe(true)
        expect(result.error).toBe("")
        expect(missingSnippets(result.content, entry.must_contain)).toEqual([])
        const counts = entry.pages_or_sheets_or_slides
        const pages = result.pages ?? []
        switch (entry.format) {
          case "pdf":
            expect(result.type).toBe("pdf")
            expect(pages).toHaveLength(counts!.pages!)
            expect(pages.map((p) => p.page)).toEqual(Array.from({ length: counts!.pages! }, (_, i) => i + 1))
            break
          case "pptx":
            expect(result.type).toBe("pptx")
            expect(pages).toHaveLength(counts!.slides!)
            break
          case "xlsx":
          case "xls":
            expect(result.type).toBe("xlsx")
            expect(pages.map((p) => p.name)).toEqual(counts!.sheet_names)
            break
          case "docx": {
            expect(result.type).toBe("docx")
            const chunks = yield* upload.extractChunks(file)
            expect(chunks.usage.total_pages).toBe(counts!.pages)
            break
          }
          case "csv": {
            expect(result.type).toBe("text")
            const rows = result.content.split("\n").filter((l) => l.startsWith("|"))
            expect(rows).toHaveLength(counts!.rows_including_header! + 1) // + the separator row
            expect(rows[0]!.split(" | ")).toHaveLength(counts!.columns!)
            break
          }
          case "png":
          case "jpg":
            expect(result.type).toBe("image")
            expect(pages).toHaveLength(counts!.images!)
            break
          default:
            expect(result.type).toBe("text")
        }
      }))
  }

  for (const entry of manifest.filter((e) => e.expect === "error")) {
    it.effect(`${entry.path}: fails with a typed error`, () =>
      Effect.gen(function*() {
        const upload = yield* Upload.Upload
        const error = yield* Effect.flip(upload.extract(fixtureFile(entry.path)))
        expect(error._tag).toBe("ExtractionError")
        if (error._tag !== "ExtractionError") return
        expect(error.file).toBe(entry.path.split("/").pop())
        expect(error.reason).toBe(entry.password !== undefined ? "password_required" : "corrupt")
      }))

    if (entry.password !== undefined) {
      it.effect(`${entry.path}: opens with its password, refuses a wrong one`, () =>
        Effect.gen(function*() {
          const upload = yield* Upload.Upload
          const file = fixtureFile(entry.path)
          const result = yield* upload.extract(file, { password: Redacted.make(entry.password!) })
          expect(result.status).toBe(true)
          expect(result.content.trim().length).toBeGreaterThan(0)
          expect(missingSnippets(result.content, entry.decrypted_must_contain ?? [])).toEqual([])
          const wrong = yield* Effect.flip(upload.extract(file, { password: Redacted.make("not-the-password") }))
          expect(wrong._tag === "ExtractionError" && wrong.reason).toBe("wrong_password")
        }))
    }
  }
})

describe("manifest", () => {
  it("lists both kinds of entries", () => {
    expect(manifest.filter((e) => e.expect === "ok").length).toBeGreaterThan(20)
    expect(manifest.filter((e) => e.expect === "error").length).toBeGreaterThan(3)
  })
})
