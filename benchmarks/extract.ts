/**
 * `npm run bench:extract`: extraction quality and speed per format on the third-party corpus
 * (benchmarks/corpus/manifest.json, fetched by `npm run corpus`), side by side with the peer
 * extractors (officeparser, LlamaIndex.TS readers, LangChain.js loaders; `npm run bench:peers`
 * installs them) for the formats each reads.
 *
 * Every (extractor, format) pair runs in its own child process, so its peak RSS is its own:
 * the first file is read once to load the libraries, then every file is timed (median of
 * `--runs N`, default 1). Each text is measured against the document's reference text with
 * `src/bench/TextQuality.ts` (word precision/recall/F1, reading order, glued-word and markup
 * rates; benchmarks/README.md). A document an extractor fails on counts as an empty text.
 * Images are read with OCR (`enable_ocr`) by the local engine; no peer reads an image's text.
 * The local engine runs twice: `effect-rag` inline (in the measuring process, like the peers)
 * and `effect-rag/process` in its extraction process (`LocalFiles.layer()`'s default), whose
 * difference is the round trip to the child process (its RSS is the measuring process's only).
 *
 * Prints a table, writes `benchmarks/results/extract.json`, `docs/plots/extract-quality.svg` and
 * `docs/plots/extract-time.svg`.
 * Then a speed table per format: the engine's time against the fastest peer that reaches its
 * quality (mean F1 and reading order at least the engine's) and against the fastest peer at all.
 * Options: `--runs N`, `--rounds N` (every extractor of a format once per round, interleaved;
 * each file's time the median of the rounds), `--format pdf,docx`, `--only ours|officeparser|llamaindex|langchain`;
 * `--report` prints the speed table and writes the plots again from the last results file.
 */
import { Effect, ManagedRuntime } from "effect"
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { basename, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Upload from "../src/api/Upload.js"
import * as TextQuality from "../src/bench/TextQuality.js"
import * as LocalFiles from "../src/engines/documents/LocalFiles.js"
import { packageRoot } from "../src/internal/shared.js"
import { writeBarChart } from "./internal/plot.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"
import { type CellCounts, documentCounts, isTable, markdownTables, type RefTable, scores } from "./internal/tables.js"

interface Entry {
  readonly id: string
  readonly format: string
  readonly repo: string
  readonly path: string
}

interface FileResult extends TextQuality.Quality {
  readonly id: string
  readonly ms: number
  readonly error?: string
}

interface GroupResult {
  readonly extractor: string
  readonly version: string
  readonly format: string
  readonly files: ReadonlyArray<FileResult>
  readonly peakRssMb: number
}

const root = packageRoot()
const corpusDir = process.env.EFFECT_RAG_CORPUS ?? join(root, "benchmarks", "corpus", "data")
const manifest = JSON.parse(readFileSync(join(root, "benchmarks", "corpus", "manifest.json"), "utf8")) as {
  files: Array<Entry>
}
const arg = (name: string) => {
  const i = process.argv.indexOf(name)
  return i > 0 ? process.argv[i + 1] : undefined
}
const runs = Math.max(1, Number(arg("--runs")) || 1)
const rounds = Math.max(1, Number(arg("--rounds")) || 1)
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const filePath = (e: Entry) => join(corpusDir, "files", e.id)
const referencePath = (e: Entry) => join(corpusDir, "reference", `${e.id}.txt`)
const peersModule = join(root, "benchmarks", "peers", "peers.mjs")
const peersInstalled = existsSync(join(root, "benchmarks", "peers", "node_modules", "officeparser-8"))

interface Peer {
  readonly name: string
  readonly formats: ReadonlyArray<string>
  readonly version: () => string
  readonly extract: (path: string, format: string) => Promise<string>
  readonly close?: () => Promise<void>
}
const loadPeers = async (): Promise<Record<string, Peer>> =>
  ((await import(/* @vite-ignore */ peersModule)) as { peers: Record<string, Peer> }).peers

const ourVersion = () => (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version

/**
 * The local engine's text of one file, as the library's `Upload.extract` returns it: `inline`
 * (in this process, like the peers) or `process` (in the engine's extraction process, the
 * default of `LocalFiles.layer()`: the same work plus the round trip to the child process).
 */
const ours = (isolation: "inline" | "process" = "inline"): Peer => {
  // one runtime for the whole run, as an application holds its layer
  let runtime: ManagedRuntime.ManagedRuntime<Upload.Upload, never> | undefined
  return {
    name: isolation === "inline" ? "effect-rag" : "effect-rag/process",
    formats: [
      "pdf", "docx", "pptx", "xlsx", "xls", "csv", "html", "json", "xml", "txt",
      "markdown", "notebook", "odt", "ods", "odp", "epub", "email", "mbox", "rtf", "rst", "asciidoc",
      ...(isolation === "inline" ? ["image"] : [])
    ],
    version: ourVersion,
    extract: (path, format) => {
      runtime ??= ManagedRuntime.make(LocalFiles.layer({ isolation, timeout: "10 minutes" }))
      return runtime.runPromise(
        Effect.gen(function*() {
          const upload = yield* Upload.Upload
          const raw = readFileSync(path)
          const file = { name: basename(path), data: new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) }
          const result = yield* upload.extract(file, { enable_ocr: format === "image" })
          return result.content
        })
      )
    },
    close: async () => runtime?.dispose()
  }
}

// =============================================================================
// child: one extractor, one format
// =============================================================================

const child = async (extractor: string, format: string): Promise<GroupResult> => {
  const peer = extractor === "effect-rag" ? ours() : extractor === "effect-rag/process" ? ours("process") : (await loadPeers())[extractor]!
  // as the parent: files or references not fetched are left out, not a crash of the child
  const entries = manifest.files.filter(
    (e) =>
      e.format === format && existsSync(filePath(e)) && existsSync(referencePath(e)) &&
      TextQuality.words(readFileSync(referencePath(e), "utf8")).length > 0
  )
  try {
    await peer.extract(filePath(entries[0]!), format) // load the libraries
  } catch {
    // measured below
  }
  const files: Array<FileResult> = []
  for (const e of entries) {
    const times: Array<number> = []
    let text = ""
    let error: string | undefined
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now()
      try {
        text = await peer.extract(filePath(e), format)
      } catch (err) {
        error = String((err as Error)?.message ?? err).slice(0, 200)
        text = ""
      }
      times.push(performance.now() - t0)
    }
    const quality = TextQuality.measure(text, readFileSync(referencePath(e), "utf8"))
    files.push({ id: e.id, ms: Math.round(median(times) * 10) / 10, ...quality, ...(error ? { error } : {}) })
  }
  const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024)
  await peer.close?.()
  return { extractor: peer.name, version: peer.version(), format, files, peakRssMb }
}

// =============================================================================
// parent
// =============================================================================

const runChild = (extractor: string, format: string): GroupResult | undefined => {
  const out = spawnSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), "--child", extractor, format, "--runs", String(runs)],
    { cwd: root, maxBuffer: 256 * 1024 * 1024, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }
  )
  const line = out.stdout.split("\n").find((l) => l.startsWith("RESULT "))
  if (!line) {
    process.stderr.write(`  ${extractor} ${format}: the child failed: ${out.stderr.slice(-500)}\n`)
    return undefined
  }
  return JSON.parse(line.slice("RESULT ".length)) as GroupResult
}

/** One group from several rounds: each file's time the median of its rounds, the highest peak RSS. */
const mergeRounds = (results: ReadonlyArray<GroupResult>): GroupResult => {
  const first = results[0]!
  return {
    ...first,
    files: first.files.map((f) => ({ ...f, ms: median(results.map((r) => r.files.find((x) => x.id === f.id)?.ms ?? f.ms)) })),
    peakRssMb: Math.max(...results.map((r) => r.peakRssMb))
  }
}

const mean = (xs: ReadonlyArray<number>) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length)

interface Row {
  readonly format: string
  readonly extractor: string
  readonly version: string
  readonly files: number
  readonly failed: number
  /** Means over the files of the format (each file weighs the same). */
  readonly precision: number
  readonly recall: number
  readonly f1: number
  readonly order: number
  readonly glued: number
  readonly markup: number
  /** Files on which this extractor's recall is ≥ 0.05 below the best peer's on that file. */
  readonly lostToPeer: number
  readonly seconds: number
  readonly mbPerSecond: number
  readonly peakRssMb: number
}

const parent = async () => {
  const missing = manifest.files.filter((e) => !existsSync(filePath(e)) || !existsSync(referencePath(e)))
  if (missing.length === manifest.files.length) {
    console.log(
      `bench:extract: the corpus is not in ${corpusDir}; run \`npm run corpus\` (or \`node scripts/corpus.mjs --from-mirror DIR\`) first. Skipped.`
    )
    return
  }
  if (missing.length > 0) {
    console.log(`bench:extract: ${missing.length} corpus files or references are missing (npm run corpus); they are left out.`)
    manifest.files = manifest.files.filter((e) => !missing.includes(e))
  }
  // a document whose reference has no words measures nothing (precision of any text is 0)
  const empty = manifest.files.filter((e) => TextQuality.words(readFileSync(referencePath(e), "utf8")).length === 0)
  if (empty.length > 0) {
    console.log(`bench:extract: ${empty.length} documents whose reference text has no words are left out: ${empty.map((e) => e.id).join(", ")}`)
    manifest.files = manifest.files.filter((e) => !empty.includes(e))
  }
  const only = arg("--only")
  const formatsArg = arg("--format")?.split(",")
  const formats = [...new Set(manifest.files.map((e) => e.format))].filter((f) => !formatsArg || formatsArg.includes(f))
  const extractors: Array<{ name: string; formats: ReadonlyArray<string> }> = [ours(), ours("process")]
  if (peersInstalled) extractors.push(...Object.values(await loadPeers()))
  else console.log("bench:extract: the peers are not installed (npm run bench:peers); measuring the local engine only.")
  const started = Date.now()
  const info = runInfo()
  const groups: Array<GroupResult> = []
  for (const format of formats) {
    const chosen = extractors.filter((x) =>
      x.formats.includes(format) && !(only && x.name !== only && !(only === "ours" && x.name.startsWith("effect-rag")))
    )
    // rounds: every extractor of the format once per round, so a change of load hits them alike
    const byExtractor = new Map<string, Array<GroupResult>>()
    for (let round = 0; round < rounds; round++) {
      for (const x of chosen) {
        process.stderr.write(`${format} ${x.name}${rounds > 1 ? ` (round ${round + 1})` : ""} `)
        const g = runChild(x.name, format)
        if (g) {
          byExtractor.set(x.name, [...(byExtractor.get(x.name) ?? []), g])
          process.stderr.write(`${Math.round(g.files.reduce((s, f) => s + f.ms, 0))} ms\n`)
        }
      }
    }
    for (const results of byExtractor.values()) groups.push(mergeRounds(results))
  }
  const tableEntries = formats.includes("table") && (!only || only === "ours") ? manifest.files.filter((e) => e.format === "table") : []
  const tables = await tableSet(tableEntries)
  const bytes = new Map(manifest.files.map((e) => [e.id, readFileSync(filePath(e)).byteLength]))
  const rows: Array<Row> = groups.map((g) => {
    // the engine's two runs are one extractor: neither is the other's peer
    const peers = groups.filter((o) => o.format === g.format && o !== g && !(o.extractor.startsWith("effect-rag") && g.extractor.startsWith("effect-rag")))
    const lostToPeer = g.files.filter((f) => {
      const best = Math.max(0, ...peers.map((p) => p.files.find((x) => x.id === f.id)?.recall ?? 0))
      return best - f.recall >= 0.05
    }).length
    const seconds = g.files.reduce((s, f) => s + f.ms, 0) / 1000
    const mb = g.files.reduce((s, f) => s + (bytes.get(f.id) ?? 0), 0) / 1e6
    return {
      format: g.format,
      extractor: g.extractor,
      version: g.version,
      files: g.files.length,
      failed: g.files.filter((f) => f.error).length,
      precision: mean(g.files.map((f) => f.precision)),
      recall: mean(g.files.map((f) => f.recall)),
      f1: mean(g.files.map((f) => f.f1)),
      order: mean(g.files.map((f) => f.order)),
      glued: mean(g.files.map((f) => f.glued)),
      markup: mean(g.files.map((f) => f.markup)),
      lostToPeer,
      seconds: Math.round(seconds * 1000) / 1000,
      mbPerSecond: Math.round((mb / Math.max(seconds, 1e-6)) * 100) / 100,
      peakRssMb: g.peakRssMb
    }
  })
  const header = ["format", "extractor", "files", "fail", "P", "R", "F1", "order", "glued%", "markup/1k", "lost", "s", "MB/s", "RSS MB"]
  const table = rows.map((r) => [
    r.format,
    r.extractor,
    String(r.files),
    String(r.failed),
    r.precision.toFixed(3),
    r.recall.toFixed(3),
    r.f1.toFixed(3),
    r.order.toFixed(3),
    (r.glued * 100).toFixed(2),
    r.markup.toFixed(1),
    String(r.lostToPeer),
    r.seconds.toFixed(2),
    r.mbPerSecond.toFixed(2),
    String(r.peakRssMb)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  console.log(line(header))
  for (const r of table) console.log(line(r))
  console.log(
    `means over files; lost = files where a peer's recall is ≥ 0.05 higher; time = sum of per-file medians of ${runs} run(s) after a warm-up${rounds > 1 ? `, median of ${rounds} interleaved rounds` : ""}; load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`
  )
  const speed = speedRows(rows)
  printSpeed(speed)
  if (tables) printTableSet(tables)
  const out = writeReport(resultsPath("extract"), {
    ...info,
    runs,
    rounds,
    corpus: manifest.files.length,
    wallSeconds: (Date.now() - started) / 1000,
    rows,
    speed,
    ...(tables ? { tables } : {}),
    groups
  })
  console.log(`wrote ${out}`)
  if (!formatsArg && !only) writePlots(rows, { ...info, corpus: manifest.files.length, runs, rounds })
}

// =============================================================================
// the table set: PDFs made from DOCX tables, cell precision and recall
// =============================================================================

interface TableSetResult {
  readonly files: number
  readonly tables: { readonly ruled: number; readonly unruled: number }
  readonly ruled: CellCounts & ReturnType<typeof scores>
  readonly unruled: CellCounts & ReturnType<typeof scores>
  readonly all: CellCounts & ReturnType<typeof scores>
  /** Predicted cells of tables that match no reference table (counted in `all` only). */
  readonly unassigned: number
  /** Word F1 and reading order of the whole text against the source document's text. */
  readonly wordF1: number
  readonly order: number
  readonly perFile: ReadonlyArray<{ id: string; ruled: CellCounts; unruled: CellCounts; unassigned: number; f1: number }>
}

/**
 * The table set (format `table` in the manifest): each DOCX's PDF (made by `npm run corpus` with
 * LibreOffice) read by the local engine inline; its Markdown tables against the DOCX's grids.
 */
const tableSet = async (entries: ReadonlyArray<Entry>): Promise<TableSetResult | undefined> => {
  const usable = entries.filter((e) => existsSync(`${filePath(e)}.pdf`) && existsSync(join(corpusDir, "reference", `${e.id}.tables.json`)))
  if (usable.length === 0) return undefined
  const engine = ours()
  const zero = (): CellCounts => ({ predicted: 0, reference: 0, matched: 0 })
  const ruled = zero()
  const unruled = zero()
  let unassigned = 0
  const counts = { ruled: 0, unruled: 0 }
  const perFile: Array<TableSetResult["perFile"][number]> = []
  const quality: Array<TextQuality.Quality> = []
  for (const e of usable) {
    const ref = JSON.parse(readFileSync(join(corpusDir, "reference", `${e.id}.tables.json`), "utf8")) as { tables: Array<RefTable> }
    let text = ""
    try {
      text = await engine.extract(`${filePath(e)}.pdf`, "pdf")
    } catch {
      // an empty text: nothing found
    }
    const doc = documentCounts(markdownTables(text), ref.tables)
    for (const [into, from] of [[ruled, doc.ruled], [unruled, doc.unruled]] as const) {
      into.predicted += from.predicted
      into.reference += from.reference
      into.matched += from.matched
    }
    unassigned += doc.unassigned
    counts.ruled += ref.tables.filter((t) => t.ruled && isTable(t)).length
    counts.unruled += ref.tables.filter((t) => !t.ruled && isTable(t)).length
    const all = { predicted: doc.ruled.predicted + doc.unruled.predicted + doc.unassigned, reference: doc.ruled.reference + doc.unruled.reference, matched: doc.ruled.matched + doc.unruled.matched }
    perFile.push({ id: e.id, ruled: doc.ruled, unruled: doc.unruled, unassigned: doc.unassigned, f1: Math.round(scores(all).f1 * 1000) / 1000 })
    quality.push(TextQuality.measure(text, readFileSync(referencePath(e), "utf8")))
  }
  await engine.close?.()
  const all = { predicted: ruled.predicted + unruled.predicted + unassigned, reference: ruled.reference + unruled.reference, matched: ruled.matched + unruled.matched }
  return {
    files: usable.length,
    tables: counts,
    ruled: { ...ruled, ...scores(ruled) },
    unruled: { ...unruled, ...scores(unruled) },
    all: { ...all, ...scores(all) },
    unassigned,
    wordF1: mean(quality.map((q) => q.f1)),
    order: mean(quality.map((q) => q.order)),
    perFile
  }
}

const printTableSet = (r: TableSetResult) => {
  console.log(`\nPDF tables: ${r.files} PDFs made by LibreOffice from DOCX, ${r.tables.ruled} ruled and ${r.tables.unruled} unruled reference tables (effect-rag inline)`)
  const header = ["tables", "ref cells", "pred cells", "matched", "P", "R", "F1"]
  const rows = (["ruled", "unruled", "all"] as const).map((k) => [
    k,
    String(r[k].reference),
    String(r[k].predicted),
    String(r[k].matched),
    r[k].precision.toFixed(3),
    r[k].recall.toFixed(3),
    r[k].f1.toFixed(3)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i]!.length)))
  for (const line of [header, ...rows]) console.log(line.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
  console.log(`cell = row, column and normalised text after aligning each predicted table to its reference table; all = ruled + unruled + ${r.unassigned} cells of tables matching no reference table`)
  console.log(`text of the table set against the DOCX text: word F1 ${r.wordF1.toFixed(3)}, reading order ${r.order.toFixed(3)}`)
}

// =============================================================================
// speed per format against the peers
// =============================================================================

interface SpeedRow {
  readonly format: string
  /** The local engine inline (like the peers) and through its extraction process: seconds. */
  readonly inline: number
  readonly process: number | undefined
  /** The fastest peer whose F1 and reading order are at least the engine's (to 3 decimals). */
  readonly peerAtQuality: { readonly extractor: string; readonly seconds: number } | undefined
  /** The fastest peer whatever its quality, with its F1. */
  readonly fastestPeer: { readonly extractor: string; readonly seconds: number; readonly f1: number } | undefined
  /** inline ÷ peerAtQuality: ≤ 1 is the goal. */
  readonly ratioToPeerAtQuality: number | undefined
}

const speedRows = (rows: ReadonlyArray<Row>): Array<SpeedRow> =>
  [...new Set(rows.map((r) => r.format))].flatMap((format) => {
    const ours = rows.find((r) => r.format === format && r.extractor === "effect-rag")
    if (ours === undefined) return []
    const peers = rows.filter((r) => r.format === format && !r.extractor.startsWith("effect-rag")).sort((a, b) => a.seconds - b.seconds)
    const round3 = (x: number) => Math.round(x * 1000)
    const atQuality = peers.find((p) => round3(p.f1) >= round3(ours.f1) && round3(p.order) >= round3(ours.order))
    const fastest = peers[0]
    return [{
      format,
      inline: ours.seconds,
      process: rows.find((r) => r.format === format && r.extractor === "effect-rag/process")?.seconds,
      peerAtQuality: atQuality && { extractor: atQuality.extractor, seconds: atQuality.seconds },
      fastestPeer: fastest && { extractor: fastest.extractor, seconds: fastest.seconds, f1: Math.round(fastest.f1 * 1000) / 1000 },
      ratioToPeerAtQuality: atQuality && Math.round((ours.seconds / Math.max(atQuality.seconds, 1e-6)) * 100) / 100
    }]
  })

const printSpeed = (speed: ReadonlyArray<SpeedRow>) => {
  const header = ["format", "effect-rag s", "in its process s", "fastest peer at our quality", "s", "÷", "fastest peer (F1)", "s", "÷"]
  const table = speed.map((r) => [
    r.format,
    r.inline.toFixed(3),
    r.process?.toFixed(3) ?? "",
    r.peerAtQuality?.extractor ?? "none",
    r.peerAtQuality?.seconds.toFixed(3) ?? "",
    r.ratioToPeerAtQuality?.toFixed(2) ?? "",
    r.fastestPeer ? `${r.fastestPeer.extractor} (${r.fastestPeer.f1.toFixed(3)})` : "none",
    r.fastestPeer?.seconds.toFixed(3) ?? "",
    r.fastestPeer ? (r.inline / Math.max(r.fastestPeer.seconds, 1e-6)).toFixed(2) : ""
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === 0 || i === 3 || i === 6 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  console.log("\nspeed per format (sum of per-file medians); ÷ = effect-rag inline ÷ the peer's time (≤ 1: no slower)")
  console.log(line(header))
  for (const r of table) console.log(line(r))
  console.log("at our quality: the peer's mean F1 and reading order are at least the engine's (to 3 decimals)")
}

const writePlots = (
  rows: ReadonlyArray<Row>,
  info: { date: string; loadAverage: ReadonlyArray<number>; cpus: number; corpus: number; runs: number; rounds?: number }
) => {
  const formats = [...new Set(rows.map((r) => r.format))]
  const caption = `npm run bench:extract -- --runs ${info.runs}${info.rounds && info.rounds > 1 ? ` --rounds ${info.rounds}` : ""}, ${info.corpus} documents, ${info.date.slice(0, 10)}, load ${info.loadAverage[0]} on ${info.cpus} CPUs`
  const quality = writeBarChart("extract-quality", {
    title: "Extraction F1 against the reference text, per format",
    unit: "F1",
    groups: formats.map((format) => ({
      label: format,
      bars: rows.filter((r) => r.format === format && r.extractor !== "effect-rag/process").map((r) => ({ series: r.extractor, value: r.f1 }))
    })),
    caption,
    digits: 2
  })
  console.log(`wrote ${quality}`)
  const time = writeBarChart("extract-time", {
    title: "Extraction time per format, relative to effect-rag inline (lower is faster)",
    unit: "× effect-rag",
    groups: formats.flatMap((format) => {
      const ours = rows.find((r) => r.format === format && r.extractor === "effect-rag")
      const others = rows.filter((r) => r.format === format && r.extractor !== "effect-rag")
      if (ours === undefined || others.length === 0) return []
      return [{
        label: format,
        bars: [ours, ...others].map((r) => ({ series: r.extractor, value: Math.round((r.seconds / Math.max(ours.seconds, 1e-6)) * 100) / 100 }))
      }]
    }),
    caption,
    digits: 2
  })
  console.log(`wrote ${time}`)
}

/** `--report`: the speed table and the plots again from the last results file, nothing measured. */
const report = () => {
  const last = JSON.parse(readFileSync(resultsPath("extract"), "utf8")) as {
    rows: Array<Row>
    date: string
    loadAverage: Array<number>
    cpus: number
    corpus: number
    runs: number
    rounds?: number
  }
  printSpeed(speedRows(last.rows))
  writePlots(last.rows, last)
}

const childIndex = process.argv.indexOf("--child")
if (process.argv.includes("--report")) {
  report()
} else if (childIndex > 0) {
  const result = await child(process.argv[childIndex + 1]!, process.argv[childIndex + 2]!)
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
  process.exit(0)
} else {
  await parent()
}
