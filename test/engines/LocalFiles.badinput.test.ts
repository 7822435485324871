/**
 * Bad and hostile input ends in a clear typed error, nothing else harmed: over-size files,
 * zip bombs, XML entity expansion, a looping PDF page tree, a parser past its time-out,
 * unsupported formats and options that cannot act here.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import { zipSync } from "fflate"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Upload from "../../src/api/Upload.js"
import { removeRepeatedLines } from "../../src/engines/documents/internal/chunk/headers.js"
import { startupMs } from "../../src/engines/documents/internal/extract/isolate.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { fixtureFile } from "./fixtures.js"

const enc = new TextEncoder()

/**
 * The longest an extraction may take under the engine's own limits: the start of a fresh
 * extraction process (bounded apart, not counted in the time-out: tens of seconds on a loaded
 * host) plus the per-file time-out, plus a margin for sending the file and killing the process.
 * A wall-clock bound of a few seconds fails on a loaded CI host without anything being wrong.
 */
const engineBoundMs = (timeoutMs: number) => startupMs + timeoutMs + 5_000
const file = (name: string, data: Uint8Array | string): Upload.UploadFile => ({
  name,
  data: typeof data === "string" ? enc.encode(data) : data
})

const failure = <A>(effect: Effect.Effect<A, Upload.UploadError, Upload.Upload>) =>
  Effect.flip(effect).pipe(Effect.map((e) => ({ tag: e._tag, reason: e._tag === "ExtractionError" ? e.reason : undefined, message: e.message })))

const extract = (f: Upload.UploadFile, options?: Upload.UploadOptions) =>
  Effect.flatMap(Upload.Upload, (u) => u.extract(f, options))

const minimalDocx = (documentXml: string) =>
  zipSync({
    "[Content_Types].xml": enc.encode(
      `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`
    ),
    "_rels/.rels": enc.encode(
      `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`
    ),
    "word/document.xml": enc.encode(documentXml)
  })

const wordBody = (text: string) =>
  `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:body></w:document>`

const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lollollollollollollollollollol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<lolz>&lol9;</lolz>`

/** A PDF whose page tree contains itself. */
const loopingPdf = () => {
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"
  ]
  let body = "%PDF-1.4\n"
  const offsets: Array<number> = []
  objects.forEach((o, i) => {
    offsets.push(body.length)
    body += `${i + 1} 0 obj\n${o}\nendobj\n`
  })
  const xref = body.length
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return body
}

const hostileTimeoutMs = 20_000

layer(LocalFiles.layer({ timeout: Duration.millis(hostileTimeoutMs) }))("hostile input", (it) => {
  it.effect("a file over 50 MiB is refused before parsing", () =>
    Effect.gen(function*() {
      const big = new Uint8Array(Upload.maxFileBytes + 1)
      big.set(enc.encode("%PDF-1.4"))
      const e = yield* failure(extract(file("big.pdf", big)))
      expect(e.tag).toBe("PayloadTooLarge")
    }))

  it.effect("a zip bomb in a DOCX fails with limit_exceeded", () =>
    Effect.gen(function*() {
      // 40 MB of one repeated character: ~40 KB deflated, a ratio far above the limit
      const bomb = minimalDocx(wordBody("A".repeat(40 * 1024 * 1024)))
      expect(bomb.length).toBeLessThan(200_000)
      const e = yield* failure(extract(file("bomb.docx", bomb)))
      expect(e.reason).toBe("limit_exceeded")
    }))

  it.effect("XML nested deeper than the parser's bound is limit_exceeded, not corrupt (it is well-formed)", () =>
    Effect.gen(function*() {
      const xml = `<?xml version="1.0"?><root>${"<section>".repeat(5_000)}deep${"</section>".repeat(5_000)}</root>`
      const e = yield* failure(extract(file("deep.xml", xml)))
      expect(e.reason).toBe("limit_exceeded")
      expect(e.message).toMatch(/nest/i)
    }))

  it.effect("XML entity expansion (billion laughs) is bounded", () =>
    Effect.gen(function*() {
      // fast-xml-parser either refuses the expansion or leaves the reference unexpanded
      const started = Date.now()
      const exit = yield* Effect.exit(extract(file("lol.xml", billionLaughs)))
      // bounded: within the engine's limits; an expansion that is not would end as a time-out,
      // which the reasons below do not allow
      expect(Date.now() - started).toBeLessThan(engineBoundMs(hostileTimeoutMs))
      if (Exit.isSuccess(exit)) expect(exit.value.content.length).toBeLessThan(10_000)
      else {
        const e = yield* failure(extract(file("lol.xml", billionLaughs)))
        expect(["limit_exceeded", "corrupt"]).toContain(e.reason)
      }
    }))

  it.effect("a DTD inside an OOXML part is refused", () =>
    Effect.gen(function*() {
      const doc = minimalDocx(billionLaughs.replace("<lolz>&lol9;</lolz>", wordBody("&lol9;").replace(/^<\?xml[^>]*>/, "")))
      const e = yield* failure(extract(file("dtd.docx", doc)))
      expect(e.reason).toBe("corrupt")
    }))

  it.effect("a PDF whose page tree loops fails with a typed error", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(extract(file("loop.pdf", loopingPdf())))
      // pdf.js may detect the loop while opening or while reading a page: either way typed
      if (Exit.isFailure(exit)) {
        const e = yield* failure(extract(file("loop.pdf", loopingPdf())))
        expect(e.tag).toBe("ExtractionError")
      } else expect(exit.value.status).toBe(true)
    }))

  it.effect("a small valid DOCX still works (the bomb checks are not over-eager)", () =>
    Effect.gen(function*() {
      const r = yield* extract(file("ok.docx", minimalDocx(wordBody("Hello from a tiny document"))))
      expect(r.content).toContain("Hello from a tiny document")
    }))

  it.effect("unknown binary data is unsupported; an empty file is corrupt", () =>
    Effect.gen(function*() {
      const bytes = new Uint8Array(4096).map((_, i) => (i * 7919) % 256)
      expect((yield* failure(extract(file("blob.bin", bytes)))).reason).toBe("unsupported")
      expect((yield* failure(extract(file("empty.pdf", new Uint8Array(0))))).reason).toBe("corrupt")
    }))

  it.effect("audio without a speech service fails with speech_unavailable", () =>
    Effect.gen(function*() {
      const wav = new Uint8Array(64)
      wav.set(enc.encode("RIFF"), 0)
      wav.set(enc.encode("WAVE"), 8)
      const e = yield* failure(extract(file("voice.wav", wav)))
      expect(e.reason).toBe("speech_unavailable")
    }))

  it.effect("options that cannot act are reported, never ignored", () =>
    Effect.gen(function*() {
      const e1 = yield* failure(extract(file("a.txt", "hello"), { vision_only: true }))
      expect(e1.reason).toBe("unsupported")
      const e2 = yield* failure(extract(file("a.txt", "hello"), { text_only: true, images_only: true }))
      expect(e2.tag).toBe("InvalidRequest")
      const r = yield* extract(file("a.txt", "hello"), { enable_vision: true, save_all: true })
      expect(r.warnings?.some((w) => w.startsWith("enable_vision"))).toBe(true)
      expect(r.warnings?.some((w) => w.startsWith("save_all"))).toBe(true)
      const img = yield* extract(fixtureFile("png/testocr.png"))
      expect(img.content.startsWith("data:image/png;base64,")).toBe(true)
      expect(img.warnings?.some((w) => w.includes("enable_ocr"))).toBe(true)
    }))

  it.effect("images_only returns the embedded images as data URLs", () =>
    Effect.gen(function*() {
      const r = yield* extract(fixtureFile("pptx/45545_Comment.pptx"), { images_only: true })
      const urls = r.content.split("\n")
      expect(urls.length).toBeGreaterThan(0)
      for (const u of urls) expect(u).toMatch(/^data:image\/[a-z+-]+;base64,[A-Za-z0-9+/=]+$/)
    }))

  it.effect("text files in legacy encodings are decoded", () =>
    Effect.gen(function*() {
      const latin1 = Uint8Array.from(Buffer.from("Le cœur a ses raisons que la raison ne connaît point. Élégant, très.", "latin1"))
      const r = yield* extract(file("pascal.txt", latin1))
      expect(r.content).toContain("connaît point. Élégant, très.")
      const utf16 = Uint8Array.from(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("日本語のテキスト", "utf16le")]))
      expect((yield* extract(file("ja.txt", utf16))).content).toBe("日本語のテキスト")
    }))
})

// OCR of the 6-megapixel page takes ~2.7 s here: far past a 1 s time-out
const shortTimeoutMs = 1_000

layer(LocalFiles.layer({ timeout: Duration.millis(shortTimeoutMs) }))("time-out", (it) => {
  it.effect("a parser past the time-out is killed with a typed error, and the engine goes on", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const e = yield* failure(extract(fixtureFile("jpg/meditations.jpg"), { enable_ocr: true }))
      // the time-out's own error: the process was killed at the time-out, not waited for
      expect(e.reason).toBe("timeout")
      expect(Date.now() - started).toBeLessThan(engineBoundMs(shortTimeoutMs))
      const r = yield* extract(file("after.json", `{"still":"working"}`))
      expect(r.content).toContain("still: working")
    }))
})

describe("save_all and remove_headers", () => {
  it.scoped("save_all keeps the raw file and the result in the configured directory", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "effect-rag-save-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const upload = yield* Effect.provide(Upload.Upload, LocalFiles.layer({ saveDir: dir, isolation: "inline" }))
      const r = yield* upload.extract(file("note.txt", "kept text"), { save_all: true })
      expect(r.warnings).toBeUndefined()
      const [run] = readdirSync(dir)
      expect(readFileSync(join(dir, run!, "note.txt"), "utf8")).toBe("kept text")
      expect(JSON.parse(readFileSync(join(dir, run!, "result.json"), "utf8")).content).toBe("kept text")
    }))

  it("remove_headers drops lines repeated at the top or bottom of most pages", () => {
    const words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    const pages = words.map((w, i) => `Journal of Tests\nAbout ${w} first\nand ${w} then\nPage ${i + 1} of 5`)
    const r = removeRepeatedLines(pages)
    expect(r.removed).toBe(10)
    expect(r.pages[2]).toBe("About gamma first\nand gamma then")
    expect(removeRepeatedLines(pages.slice(0, 2)).removed).toBe(0)
  })

  it.effect("audio goes to the configured speech service", () =>
    Effect.gen(function*() {
      const wav = new Uint8Array(64)
      wav.set(enc.encode("RIFF"), 0)
      wav.set(enc.encode("WAVE"), 8)
      const seen: Array<string> = []
      const upload = yield* Effect.provide(
        Upload.Upload,
        LocalFiles.layer({ isolation: "inline", speech: (f) => Effect.sync(() => (seen.push(f.name), "hello transcript")) })
      )
      const r = yield* upload.extract(file("voice.wav", wav))
      expect(r).toMatchObject({ status: true, type: "audio", content: "hello transcript" })
      expect(seen).toEqual(["voice.wav"])
    }).pipe(Effect.scoped))
})
