/**
 * `npm run bench:ocr`: what OCR of scanned PDF pages costs (it runs by default since issue #26),
 * and that a PDF with a readable text layer pays nothing for the check.
 *
 * Each case is extracted by the local engine (inline, in this process) twice per round, in
 * alternating order: with the default options (pages without a readable text layer are OCR'd)
 * and with `enable_ocr: false`;
 * the difference is the OCR's cost, divided by the pages OCR'd (the result's `ocr_pages`). The
 * tesseract worker is started by a warm-up extraction first, so its start-up (once per process)
 * is not in the figures. Cases:
 *
 * - `scan 640x480`: the fixture scan `png/testocr.png` (../shared/fixtures) as a one-page
 *   image-only PDF at 200 dpi (written by test/support/pdf-writer.ts);
 * - `book page 1955x3036`: the fixture photo of a book page `jpg/meditations.jpg` as a one-page
 *   image-only PDF at 300 dpi (a 6.5 x 10 in page);
 * - `TAMReview.pdf`: the fixture whose text layer is glyph soup on pages 2-23 (fonts without a
 *   Unicode map): the real case of a garbage text layer;
 * - `tracemonkey.pdf`: a 14-page paper with a text layer: nothing is OCR'd, and its two times
 *   should be the same (the check reads the text only).
 *
 * Options: `--rounds N` (default 1; each figure the median of the rounds), `--case NAME` (a
 * substring of a case name). Prints a table with the load average before and after, and writes
 * `benchmarks/results/ocr.json`.
 */
import { createCanvas, loadImage } from "@napi-rs/canvas"
import { Effect, ManagedRuntime } from "effect"
import { readFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import * as Upload from "../src/api/Upload.js"
import * as LocalFiles from "../src/engines/documents/LocalFiles.js"
import { sharedDir } from "../src/internal/shared.js"
import { pdf } from "../test/support/pdf-writer.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const rounds = Number(flag("--rounds") ?? 1)
const only = flag("--case")

const fixture = (path: string) => new Uint8Array(readFileSync(join(sharedDir(), "fixtures", "docs", path)))

const imagePdf = async (path: string, dpi: number) => {
  const img = await loadImage(Buffer.from(fixture(path)))
  const canvas = createCanvas(img.width, img.height)
  const ctx = canvas.getContext("2d")
  ctx.fillStyle = "#ffffff"
  ctx.fillRect(0, 0, img.width, img.height)
  ctx.drawImage(img, 0, 0)
  const jpeg = new Uint8Array(await canvas.encode("jpeg", 90))
  return pdf([{ image: { jpeg, width: img.width, height: img.height, dpi } }])
}

const load = () => loadavg().map((l) => Math.round(l * 100) / 100)
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const main = async () => {
  const cases: Array<{ name: string; data: Uint8Array }> = [
    { name: "scan 640x480 (1 page, image only)", data: await imagePdf("png/testocr.png", 200) },
    { name: "book page 1955x3036 (1 page, image only)", data: await imagePdf("jpg/meditations.jpg", 300) },
    { name: "TAMReview.pdf (23 pages, glyph-soup text layer)", data: fixture("pdf/TAMReview.pdf") },
    { name: "tracemonkey.pdf (14 pages, text layer)", data: fixture("pdf/tracemonkey.pdf") }
  ].filter((c) => only === undefined || c.name.includes(only))
  const runtime = ManagedRuntime.make(LocalFiles.layer({ isolation: "inline", timeout: "30 minutes" }))
  const timed = async (data: Uint8Array, options: Upload.UploadOptions) => {
    const started = performance.now()
    // an image-only PDF without OCR fails (`empty`): its time is the time to find no text
    const r = await runtime.runPromise(Effect.either(Effect.flatMap(Upload.Upload, (u) => u.extractChunks({ name: "bench.pdf", data }, options))))
    const ms = performance.now() - started
    if (r._tag === "Left") return { ms, ocrPages: 0, chars: 0 }
    const ocrPages = (r.right.data.data.metadata.properties?.["ocr_pages"] ?? "").split(", ").filter(Boolean).length
    return { ms, ocrPages, chars: r.right.usage.total_extracted_text }
  }
  const before = load()
  // warm-up: loads pdf.js and starts the tesseract worker
  await timed(cases[0]?.data ?? (await imagePdf("png/testocr.png", 200)), {})
  const results = []
  for (const c of cases) {
    const withOcr: Array<number> = []
    const without: Array<number> = []
    let pages = 0
    let chars = { ocr: 0, plain: 0 }
    for (let i = 0; i < rounds; i++) {
      // alternate which goes first, so that neither always follows the other case's work
      const first = i % 2 === 0
      const b = first ? undefined : await timed(c.data, { enable_ocr: false })
      const a = await timed(c.data, {})
      const b2 = b ?? (await timed(c.data, { enable_ocr: false }))
      withOcr.push(a.ms)
      without.push(b2.ms)
      pages = a.ocrPages
      chars = { ocr: a.chars, plain: b2.chars }
    }
    const ms = median(withOcr)
    const plain = median(without)
    results.push({
      case: c.name,
      ocrPages: pages,
      defaultSeconds: ms / 1000,
      ocrOffSeconds: plain / 1000,
      secondsPerOcrPage: pages > 0 ? (ms - plain) / 1000 / pages : null,
      ratio: ms / plain,
      characters: chars,
      loadAverage: load()
    })
  }
  await runtime.dispose()
  const after = load()
  console.log(`load average before ${before.join(" ")}, after ${after.join(" ")} (2 cores); rounds ${rounds}`)
  console.log("| case | pages OCR'd | default s | enable_ocr=false s | s per OCR'd page | default / off | characters (default / off) |")
  console.log("|---|---|---|---|---|---|---|")
  for (const r of results) {
    console.log(
      `| ${r.case} | ${r.ocrPages} | ${r.defaultSeconds.toFixed(2)} | ${r.ocrOffSeconds.toFixed(2)} | ${
        r.secondsPerOcrPage === null ? "–" : r.secondsPerOcrPage.toFixed(2)
      } | ${r.ratio.toFixed(2)} | ${r.characters.ocr} / ${r.characters.plain} |`
    )
  }
  console.log(writeReport(resultsPath("ocr"), { ...runInfo(), rounds, loadAverageAfter: after, results }))
}

void main()
