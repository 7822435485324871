/**
 * `npm run bench:storage`: the same ingest and queries with the collection on local disk and on
 * an S3-compatible server on loopback (`s3rver`, started here, as in the tests).
 *
 * Per target, in this process (`Ingest.run` with the local document engine inline and
 * `LanceDbStore`, as the CLI composes them), each on a fresh database:
 * - `synthetic`: `--files N` (default 40) generated Markdown files, about 6 chunks each
 *   (extraction is cheap, so the store's share shows);
 * - `rerun`: the same ingest again (nothing changed: it reads the markers and counts, writes nothing);
 * - `fixtures`: eight text fixtures of `$EFFECT_RAG_SHARED/fixtures/docs` (DOCX, PPTX, XLSX, JSON,
 *   RSS, HTML: extraction weighs more);
 * - `queries`: 30 full-text queries on the synthetic collection, one after another.
 *
 * A warm-up ingest (not measured) loads the extractors first, and the order of the two targets
 * alternates from run to run. `--runs N` (default 3) repeats everything and reports medians. Prints a table, writes
 * `benchmarks/results/storage.json` and `docs/plots/storage.svg`. s3rver keeps objects as files
 * on the same disk, so the S3 figures are the cost of the protocol (HTTP, one object per file,
 * listings for versions), not of a network or a remote service.
 */
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as LocalFiles from "../src/engines/documents/LocalFiles.js"
import * as Ingest from "../src/pipeline/Ingest.js"
import * as LanceDbStore from "../src/store/LanceDbStore.js"
import { VectorStore } from "../src/store/VectorStore.js"
import { copyTextFixtures, markdown } from "../test/pipeline/fixtures/ingest-helpers.js"
import { startS3 } from "../test/support/s3.js"
import { writeBarChart } from "./internal/plot.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"
import { median } from "../src/bench/Metrics.js"

const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}
const runs = Math.max(1, Number(flag("--runs") ?? "3") || 3)
const files = Math.max(1, Number(flag("--files") ?? "40") || 40)

const queries = ["lance arrow", "effect stream", "vector index", "chunk batch", "retrieval embedding", "fiber query"]

interface Measure {
  readonly seconds: number
  readonly documents: number
  readonly chunks: number
  readonly writes: number
}

const ingestInto = (store: Layer.Layer<VectorStore, unknown>, folder: string, collection: string): Promise<Measure> =>
  Effect.runPromise(
    Ingest.run({ sources: [Ingest.Source.path(folder)], collection }).pipe(
      Effect.map((s): Measure => ({ seconds: s.durationMs / 1000, documents: s.ingested + s.skipped, chunks: s.chunks.total, writes: s.writes })),
      Effect.provide(Layer.mergeAll(LocalFiles.layer({ isolation: "inline" }), store))
    )
  )

const queryAll = (store: Layer.Layer<VectorStore, unknown>, collection: string): Promise<number> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const c = yield* Effect.flatMap(VectorStore, (s) => s.open(collection))
      const started = performance.now()
      for (let i = 0; i < 30; i++) yield* c.searchText(queries[i % queries.length]!, { limit: 10 })
      return (performance.now() - started) / 1000
    }).pipe(Effect.scoped, Effect.provide(store))
  )

async function main() {
  const info = runInfo()
  const tmp = mkdtempSync(join(tmpdir(), "effect-rag-bench-storage-"))
  const s3 = await startS3()
  const synthetic = join(tmp, "synthetic")
  mkdirSync(synthetic)
  for (let f = 0; f < files; f++) writeFileSync(join(synthetic, `doc-${String(f).padStart(4, "0")}.md`), markdown(f, 48))
  const fixtures = join(tmp, "fixtures")
  copyTextFixtures(fixtures)

  const targets = {
    disk: (run: number) => LanceDbStore.layer({ uri: join(tmp, `db-${run}`) }),
    s3: (run: number) => LanceDbStore.layer({ uri: s3.uri(`db-${run}`), storage: s3.storage })
  } as const
  const samples: Record<string, Record<string, Array<Measure>>> = { disk: {}, s3: {} }
  const add = (target: string, name: string, m: Measure) => (samples[target]![name] ??= []).push(m)
  try {
    await ingestInto(LanceDbStore.layer({ uri: join(tmp, "warm-up") }), fixtures, "warm_up")
    for (let run = 0; run < runs; run++) {
      const order = run % 2 === 0 ? (["disk", "s3"] as const) : (["s3", "disk"] as const)
      for (const target of order) {
        const layerOf = targets[target]
        const store = layerOf(run)
        const first = await ingestInto(store, synthetic, "synthetic")
        add(target, "synthetic", first)
        add(target, "rerun", await ingestInto(store, synthetic, "synthetic"))
        add(target, "fixtures", await ingestInto(store, fixtures, "fixtures"))
        add(target, "queries", { seconds: await queryAll(store, "synthetic"), documents: 0, chunks: first.chunks, writes: 0 })
      }
    }
  } finally {
    await s3.close()
    rmSync(tmp, { recursive: true, force: true })
  }

  const names = ["synthetic", "rerun", "fixtures", "queries"] as const
  const rows = names.map((name) => {
    const of = (target: string) => {
      const ms = samples[target]![name]!
      return { seconds: median(ms.map((m) => m.seconds)), documents: ms[0]!.documents, chunks: ms[0]!.chunks, writes: ms[0]!.writes }
    }
    const disk = of("disk")
    const s3 = of("s3")
    return { name, disk, s3, ratio: Number((s3.seconds / disk.seconds).toFixed(2)) }
  })
  console.log(`load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs; ${runs} run(s), medians`)
  console.log(`${"case".padEnd(10)} ${"docs".padStart(5)} ${"chunks".padStart(7)} ${"disk s".padStart(8)} ${"s3 s".padStart(8)} ${"s3/disk".padStart(8)}`)
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(10)} ${String(r.disk.documents).padStart(5)} ${String(r.disk.chunks).padStart(7)} ` +
        `${r.disk.seconds.toFixed(2).padStart(8)} ${r.s3.seconds.toFixed(2).padStart(8)} ${r.ratio.toFixed(2).padStart(8)}`
    )
  }
  const report = {
    command: ["npm run bench:storage", ...(runs !== 3 || files !== 40 ? ["--"] : []), ...(runs !== 3 ? [`--runs ${runs}`] : []), ...(files !== 40 ? [`--files ${files}`] : [])].join(" "),
    ...info,
    runs,
    note: "s3 = s3rver on 127.0.0.1 (objects as files on the same disk, no conditional PUT); medians over runs; queries = 30 full-text searches",
    cases: rows
  }
  const path = writeReport(resultsPath("storage"), report)
  const plot = writeBarChart("storage", {
    title: "Ingest and query: local disk vs S3-compatible server on loopback",
    unit: "s",
    groups: rows.map((r) => ({
      label: r.name === "queries" ? "30 queries" : r.name === "rerun" ? "rerun (no change)" : `ingest ${r.name}`,
      bars: [{ series: "local disk", value: r.disk.seconds }, { series: "s3 (s3rver)", value: r.s3.seconds }]
    })),
    caption: `${report.command}; ${info.cpus} CPUs, load ${info.loadAverage.join(" ")}; ${info.date.slice(0, 10)}`
  })
  console.log(`wrote ${path} and ${plot}`)
}

main().catch((e: unknown) => {
  console.error(e)
  process.exitCode = 1
})
