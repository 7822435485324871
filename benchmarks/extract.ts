/**
 * `npm run bench:extract`: throughput of the local document engine per format over the shared
 * fixtures (the `expect: ok` files of shared/fixtures/docs/manifest.json): MB/s, pages/s
 * (pages, slides, sheets; one per file for the other formats) and peak RSS. Prints a table and
 * writes `benchmarks/results/extract.json`.
 *
 * Extraction runs inline (in this process) so that timings and the RSS high-water mark are the
 * engine's own; each file runs once to warm up, then `--runs N` times (default 3) and the
 * median counts. Images are read with OCR (`enable_ocr=true`).
 */
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { basename, join } from "node:path"
import * as Upload from "../src/api/Upload.js"
import * as LocalFiles from "../src/engines/LocalFiles.js"
import { sharedPath } from "../src/internal/shared.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"

interface Entry {
  readonly path: string
  readonly format: string
  readonly expect: string
}

const runsArg = process.argv.indexOf("--runs")
const runs = runsArg > 0 ? Math.max(1, Number(process.argv[runsArg + 1]) || 3) : 3
const docs = sharedPath("fixtures", "docs")
const entries = (JSON.parse(readFileSync(join(docs, "manifest.json"), "utf8")) as { files: Array<Entry> }).files.filter(
  (e) => e.expect === "ok"
)

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]!
}

interface Row {
  format: string
  files: number
  bytes: number
  pages: number
  seconds: number
  mbPerSecond: number
  pagesPerSecond: number
  peakRssMb: number
}

const program = Effect.gen(function*() {
  const upload = yield* Upload.Upload
  const byFormat = new Map<string, Array<Entry>>()
  for (const e of entries) byFormat.set(e.format, [...(byFormat.get(e.format) ?? []), e])
  const rows: Array<Row> = []
  const perFile: Array<{ file: string; bytes: number; pages: number; ms: number }> = []
  for (const [format, list] of byFormat) {
    let bytes = 0
    let pages = 0
    let seconds = 0
    for (const e of list) {
      const raw = readFileSync(join(docs, e.path))
      const file = { name: basename(e.path), data: new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) }
      const options = { page_based: true, enable_ocr: format === "png" || format === "jpg" }
      process.stderr.write(`${e.path} `)
      const warm = yield* upload.extract(file, options)
      const times: Array<number> = []
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now()
        yield* upload.extract(file, options)
        times.push(performance.now() - t0)
      }
      const ms = median(times)
      process.stderr.write(`${Math.round(ms)} ms\n`)
      const n = warm.pages?.length ?? 1
      bytes += file.data.byteLength
      pages += n
      seconds += ms / 1000
      perFile.push({ file: e.path, bytes: file.data.byteLength, pages: n, ms: Math.round(ms * 10) / 10 })
    }
    rows.push({
      format,
      files: list.length,
      bytes,
      pages,
      seconds: Math.round(seconds * 1000) / 1000,
      mbPerSecond: Math.round((bytes / 1e6 / seconds) * 100) / 100,
      pagesPerSecond: Math.round((pages / seconds) * 10) / 10,
      peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024)
    })
  }
  return { rows, perFile }
})

const started = Date.now()
const { perFile, rows } = await Effect.runPromise(
  program.pipe(Effect.provide(LocalFiles.layer({ isolation: "inline", timeout: "10 minutes" })))
)
const peak = Math.round(process.resourceUsage().maxRSS / 1024)

const header = ["format", "files", "MB", "pages", "s", "MB/s", "pages/s", "peak RSS MB"]
const table = rows.map((r) => [
  r.format,
  String(r.files),
  (r.bytes / 1e6).toFixed(2),
  String(r.pages),
  r.seconds.toFixed(3),
  r.mbPerSecond.toFixed(2),
  r.pagesPerSecond.toFixed(1),
  String(r.peakRssMb)
])
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)))
const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padStart(widths[i]!)).join("  ")
console.log(line(header))
for (const r of table) console.log(line(r))
console.log(`peak RSS ${peak} MB; median of ${runs} runs per file after a warm-up; node ${process.version}`)

const out = writeReport(resultsPath("extract"), {
  ...runInfo(),
  runs,
  isolation: "inline",
  wallSeconds: (Date.now() - started) / 1000,
  peakRssMb: peak,
  formats: rows,
  files: perFile
})
console.log(`wrote ${out}`)
