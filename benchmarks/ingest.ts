/**
 * `npm run bench:ingest [-- --quick] [--docs N] [--rounds N] [--only NAME[,NAME]] [--concurrency N] [--workers 1,2,4] [--postgres URL | --no-postgres]`:
 * ingestion speed and memory of `effect-rag ingest`, side by side with its peers, in one run.
 *
 * Every run is a fresh child process with a fresh database, measured from outside: wall time,
 * CPU seconds of the process tree (user + system, through `/usr/bin/time`, which counts every
 * descendant the child reaped: the extraction workers too), and the peak RSS of the process tree
 * (the sum over the child and its descendants, sampled from `/proc` every 50 ms). Each pipeline
 * also reports its write stage (store writes and index builds) so its share of the time shows.
 *
 * Case `scifact` (the comparison): the SciFact abstracts (`$EFFECT_RAG_SHARED/bench/scifact`),
 * written as one Markdown file each (`# title` + text), through
 * - `effect-rag`: the built CLI, `effect-rag ingest DIR --db DB --json` (small Markdown read in
 *   the CLI's process, other formats in extraction workers; structure-aware 512-token chunks,
 *   manifest, LanceDB with full-text index);
 * - `langchain-token` / `langchain-char`: `benchmarks/peers/langchain-ingest.mjs`, LangChain.js's
 *   DirectoryLoader + TextLoader + RecursiveCharacterTextSplitter (by js-tiktoken tokens or by
 *   characters) + a LanceDB table with a full-text index;
 * - `lancedb`: `benchmarks/peers/lancedb-ingest.mjs`, files read and cut at fixed character
 *   offsets (2,048 characters, overlap 256), one LanceDB append and a full-text index (the floor).
 * - `effect-rag-pg`: the same command into PostgreSQL (`--db postgres://…`, a collection
 *   per run), when a server is at hand: `--postgres URL` (or `$EFFECT_RAG_BENCH_POSTGRES`), else
 *   Debian's PostgreSQL 15 with pgvector started for the run when it is installed (as `.ci/run`
 *   installs it); `--no-postgres` leaves it out. Its CPU adds the server's (the `postgres`
 *   processes of this machine, reaped backends included); its peak RSS is the client's only.
 * The pipelines run in interleaved rounds (each round runs all of them, in a rotating order), so
 * a change in the machine's load hits them alike; the table shows medians and ratios.
 *
 * Other cases, effect-rag alone: `fixtures` (the shared fixture documents, mixed formats; the
 * broken ones fail: exit code 3), `synthetic-5k` and `synthetic-50k` (generated Markdown, 50
 * chunks per file, 100 and 1,000 files: their peak RSS ratio is the "memory flat in corpus
 * size" check, ≤ 2×).
 *
 * Options: `--quick` (1 round, the first 1,000 abstracts: a short run while others share the
 * machine), `--docs N` (the first N abstracts), `--rounds N` (default 3), `--only` (default
 * `scifact`; `all` runs every case), `--concurrency N` (extraction processes, default 2).
 * Writes `benchmarks/results/ingest.json` and the plots `docs/plots/ingest-scifact-*.svg`.
 *
 * `--workers 1,2,4` (the queue case, `internal/queue.ts`): the abstracts (`--docs N`: the first N)
 * through `ingest --queue` and N `effect-rag worker` processes, on local disk and on a local S3
 * server: documents/s per worker count and the write stage's share; the plot
 * `docs/plots/ingest-workers.svg`. `--index-rows N`: the vector index builds (`IVF_HNSW_SQ`, the
 * store's, and `IVF_PQ`) on N random 384-d vectors. Both run alone unless `--only` names other cases.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { sharedPath } from "../src/internal/shared.js"
import { ensureBuilt, measure, postgresCpuS, timeBinary } from "./internal/measure.js"
import { effectRag, effectRagPostgres, parseRun, peers, type Pipeline, type RunResult } from "./internal/pipelines.js"
import { writeBarChart } from "./internal/plot.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"
import { rng } from "./internal/rng.js"
import { median } from "../src/bench/Metrics.js"
import { benchIndexBuild, benchWorkers, workersTable } from "./internal/queue.js"

// =============================================================================
// Inputs
// =============================================================================

/** Writes the first `limit` SciFact abstracts as `<id>.md`; returns how many. */
const scifact = (dir: string, limit: number): number => {
  mkdirSync(dir, { recursive: true })
  let n = 0
  for (const line of readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8").split("\n")) {
    if (line.trim() === "" || n >= limit) continue
    const doc = JSON.parse(line) as { _id: string; title: string; text: string }
    writeFileSync(join(dir, `${doc._id}.md`), `# ${doc.title}\n\n${doc.text}\n`)
    n++
  }
  return n
}

const words = (() => {
  const syllables = ["ka", "lo", "mi", "ren", "tas", "vo", "ul", "pri", "sen", "dor", "ax", "quen", "bri", "tol", "mek", "ar"]
  const out: Array<string> = []
  for (const a of syllables) for (const b of syllables) out.push(a + b)
  return out
})()

/** Writes `files` Markdown files of about `chunksPerFile` 512-token chunks each. */
const synthetic = (dir: string, files: number, chunksPerFile: number) => {
  mkdirSync(dir, { recursive: true })
  const rand = rng(42)
  for (let f = 0; f < files; f++) {
    const parts = [`# Synthetic document ${f}`, ""]
    // 100 nonce words are about one 512-token cl100k chunk (measured: ~4-5 tokens a word)
    for (let p = 0; p < chunksPerFile; p++) {
      const sentence = Array.from({ length: 100 }, () => words[Math.floor(rand() * words.length)]).join(" ")
      parts.push(`${sentence}.`, "")
    }
    writeFileSync(join(dir, `doc-${String(f).padStart(5, "0")}.md`), parts.join("\n"))
  }
}

// =============================================================================
// Report
// =============================================================================

interface Summary {
  readonly pipeline: string
  readonly description: string
  readonly documents: number
  readonly chunks: number
  readonly wallS: number
  readonly cpuS: number
  readonly peakRssMiB: number
  readonly writeS: number
  readonly writeShare: number
  readonly documentsPerSecond: number
}

const summarise = (p: Pipeline, runs: ReadonlyArray<RunResult>): Summary => {
  const wallS = median(runs.map((r) => r.wallS))
  const totalS = median(runs.map((r) => r.totalS))
  const writeS = median(runs.map((r) => r.writeS))
  return {
    pipeline: p.name,
    description: p.description,
    documents: runs[0]!.documents,
    chunks: runs[0]!.chunks,
    wallS: round(wallS),
    cpuS: round(median(runs.map((r) => r.cpuS))),
    peakRssMiB: round(median(runs.map((r) => r.peakRssMiB)), 1),
    writeS: round(writeS),
    writeShare: round(totalS > 0 ? writeS / totalS : 0),
    documentsPerSecond: round(runs[0]!.documents / wallS, 1)
  }
}

const round = (x: number, digits = 2) => Number(x.toFixed(digits))

const table = (rows: ReadonlyArray<Summary>): string => {
  const ours = rows.find((r) => r.pipeline === "effect-rag")!
  const lines = [
    `${"pipeline".padEnd(16)} ${"docs".padStart(6)} ${"chunks".padStart(6)} ${"wall s".padStart(7)} ${"CPU s".padStart(7)} ${"peak RSS".padStart(9)} ${"write".padStart(6)} ${"docs/s".padStart(7)}  effect-rag ÷ it: throughput, CPU, RSS`
  ]
  for (const r of rows) {
    lines.push(
      `${r.pipeline.padEnd(16)} ${String(r.documents).padStart(6)} ${String(r.chunks).padStart(6)} ${r.wallS.toFixed(2).padStart(7)} ${r.cpuS.toFixed(2).padStart(7)} ${(r.peakRssMiB.toFixed(0) + " MiB").padStart(9)} ${((r.writeShare * 100).toFixed(0) + " %").padStart(6)} ${r.documentsPerSecond.toFixed(0).padStart(7)}` +
        (r === ours ? "" : `  ${(r.wallS / ours.wallS).toFixed(2)}×, ${(ours.cpuS / r.cpuS).toFixed(2)}×, ${(ours.peakRssMiB / r.peakRssMiB).toFixed(2)}×`)
    )
  }
  return lines.join("\n")
}

/** The goals of the ingest (see benchmarks/README.md), checked against a summary. */
const goals = (rows: ReadonlyArray<Summary>, fullCorpus: boolean) => {
  const by = (n: string) => rows.find((r) => r.pipeline === n)
  const ours = by("effect-rag")!
  const token = by("langchain-token")
  const char = by("langchain-char")
  const out: Array<{ goal: string; met: boolean; figure: string }> = []
  if (fullCorpus) out.push({ goal: "SciFact in ≤ 10 s wall", met: ours.wallS <= 10, figure: `${ours.wallS.toFixed(1)} s` })
  if (token) out.push({ goal: "≥ 2× the LangChain token-splitter throughput", met: token.wallS / ours.wallS >= 2, figure: `${(token.wallS / ours.wallS).toFixed(2)}×` })
  if (char) out.push({ goal: "no slower than the LangChain char-splitter pipeline", met: ours.wallS <= char.wallS, figure: `${(char.wallS / ours.wallS).toFixed(2)}×` })
  const lc = [token, char].filter((r): r is Summary => r !== undefined)
  if (lc.length > 0) {
    const most = Math.max(...lc.map((r) => r.peakRssMiB))
    out.push({ goal: "peak RSS no larger than LangChain's", met: ours.peakRssMiB <= most, figure: `${ours.peakRssMiB.toFixed(0)} MiB vs ${most.toFixed(0)} MiB` })
  }
  return out
}

// =============================================================================
// Queue workers (--workers 1,2,4)
// =============================================================================

/** `--workers 1,2,4`: the worker counts of the queue case (none without the flag). */
function workersFlag(value: string | undefined): ReadonlyArray<number> | undefined {
  if (value === undefined) return undefined
  const counts = value.split(",").map(Number)
  if (counts.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--workers takes positive integers (1,2,4), not ${value}`)
  return counts
}

/** The queue case: SciFact abstracts through `ingest --queue` and N `worker` processes, on disk and on s3rver. */
async function workersCase(tmp: string, counts: ReadonlyArray<number>) {
  const dir = join(tmp, "scifact-queue")
  const n = scifact(dir, docs)
  const info = runInfo()
  console.log(`Queue: ${n} SciFact abstracts, ${counts.join(", ")} worker process(es) on local disk and on s3rver; load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`)
  const runs = await benchWorkers({ dir, scratch: tmp, counts, log: (l) => console.log(l) })
  console.log(workersTable(runs))
  const caption = `npm run bench:ingest -- --workers ${counts.join(",")}${docs < 1_000_000 ? ` --docs ${docs}` : ""}: ${n} SciFact abstracts, load ${info.loadAverage[0]} on ${info.cpus} CPUs`
  const plot = writeBarChart("ingest-workers", {
    title: `Queue ingest of ${n} SciFact abstracts: documents/s per worker count`,
    unit: "documents/s",
    caption,
    digits: 0,
    groups: (["disk", "s3"] as const).map((target) => ({
      label: target === "disk" ? "local disk" : "S3 (s3rver)",
      bars: runs.filter((r) => r.target === target).map((r) => ({ series: `${r.workers} worker${r.workers > 1 ? "s" : ""}`, value: r.documentsPerS }))
    }))
  })
  console.log(`wrote ${plot}`)
  return { documents: n, loadAverage: info.loadAverage, runs }
}

/** `--index-rows N`: the vector index builds the 100-million-chunk estimate scales (benchmarks/README.md). */
async function indexCase(tmp: string, rows: number) {
  const info = runInfo()
  console.log(`Vector index builds on ${rows} random 384-d vectors; load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`)
  const builds = await benchIndexBuild(tmp, rows, 384)
  for (const b of builds) {
    console.log(`  ${b.index.padEnd(12)} ${b.seconds.toFixed(1)} s (${((b.seconds / b.rows) * 1e6).toFixed(1)} µs/row), table ${(b.bytes / b.rows).toFixed(0)} bytes/row`)
  }
  return { loadAverage: info.loadAverage, builds }
}

// =============================================================================
// Main
// =============================================================================

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const quick = args.includes("--quick")
const rounds = Math.max(1, Number(flag("--rounds") ?? (quick ? "1" : "3")))
const docs = Math.max(1, Number(flag("--docs") ?? (quick ? "1000" : "1000000")))
const concurrency = Number(flag("--concurrency") ?? "2")
const workerCounts = workersFlag(flag("--workers"))
// with --workers alone, only the queue case runs
const only = (flag("--only") ?? (workerCounts !== undefined || flag("--index-rows") !== undefined ? "" : "scifact")).split(",")
const want = (n: string) => only.includes("all") || only.includes(n)

/** The PostgreSQL server of the `effect-rag-pg` row (see the module doc), or undefined. */
const postgresServer = async (): Promise<{ kind: string; url: string; stop: () => Promise<void> } | undefined> => {
  if (args.includes("--no-postgres")) return undefined
  const given = flag("--postgres") ?? process.env["EFFECT_RAG_BENCH_POSTGRES"]
  if (given !== undefined) return { kind: "postgresql (given)", url: given, stop: async () => {} }
  process.env["EFFECT_RAG_TEST_POSTGRES"] = "1"
  const support = await import("../test/support/postgres.js")
  if (!support.debianPostgresInstalled()) {
    console.log("effect-rag-pg: left out (no --postgres URL, and postgresql-15 is not installed)")
    return undefined
  }
  return support.startPostgres()
}

ensureBuilt()
const tmp = mkdtempSync(join(tmpdir(), "effect-rag-bench-ingest-"))
const info = runInfo()
const report: Record<string, unknown> = { command: `npm run bench:ingest -- ${args.join(" ")}`.trim(), ...info, timeBinary: timeBinary ?? "none (CPU from /proc samples)", rounds, concurrency }
try {
  if (want("scifact")) {
    const dir = join(tmp, "scifact")
    const n = scifact(dir, docs)
    const fullCorpus = n >= 5183
    const pg = await postgresServer()
    const pipelines = [effectRag(concurrency), ...peers, ...(pg === undefined ? [] : [effectRagPostgres(concurrency, pg.url)])]
    const runs: Array<RunResult> = []
    console.log(`SciFact: ${n} abstracts as Markdown files; ${rounds} interleaved round(s); load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`)
    for (let r = 0; r < rounds; r++) {
      // a rotating order: no pipeline always runs first (cold caches) or last
      const order = pipelines.map((_, i) => pipelines[(i + r) % pipelines.length]!)
      for (const p of order) {
        const db = join(tmp, `db-${p.name}-${r}`)
        const [command, argv] = p.command(dir, db)
        const serverBefore = p.name === "effect-rag-pg" ? postgresCpuS() : 0
        const measured = await measure(command, argv)
        const serverCpuS = p.name === "effect-rag-pg" ? postgresCpuS() - serverBefore : 0
        const result = parseRun(p, r, { ...measured, cpuS: measured.cpuS + serverCpuS })
        runs.push(result)
        rmSync(db, { recursive: true, force: true })
        console.log(`  round ${r + 1} ${p.name.padEnd(16)} ${result.wallS.toFixed(2)} s wall ${result.cpuS.toFixed(2)} CPU s ${result.peakRssMiB.toFixed(0)} MiB`)
      }
    }
    const summaries = pipelines.map((p) => summarise(p, runs.filter((r) => r.pipeline === p.name)))
    console.log(table(summaries))
    const checked = goals(summaries, fullCorpus)
    for (const g of checked) console.log(`${g.met ? "met    " : "NOT MET"} ${g.goal}: ${g.figure}`)
    const caption = `npm run bench:ingest${quick ? " -- --quick" : ""}: ${n} SciFact abstracts, median of ${rounds}, load ${info.loadAverage[0]} on ${info.cpus} CPUs`
    const plotTime = writeBarChart("ingest-scifact-time", {
      title: `Ingest of ${n} SciFact abstracts`,
      unit: "s",
      caption,
      groups: [
        { label: "wall", bars: summaries.map((s) => ({ series: s.pipeline, value: s.wallS })) },
        { label: "CPU (process tree)", bars: summaries.map((s) => ({ series: s.pipeline, value: s.cpuS })) },
        { label: "write stage", bars: summaries.map((s) => ({ series: s.pipeline, value: s.writeS })) }
      ]
    })
    const plotRss = writeBarChart("ingest-scifact-rss", {
      title: `Peak RSS of the process tree, ${n} SciFact abstracts`,
      unit: "MiB",
      caption,
      groups: [{ label: "peak RSS", bars: summaries.map((s) => ({ series: s.pipeline, value: s.peakRssMiB })) }]
    })
    console.log(`wrote ${plotTime}\nwrote ${plotRss}`)
    report["scifact"] = { documents: n, summaries, goals: checked, runs, ...(pg === undefined ? {} : { postgres: pg.kind }) }
    await pg?.stop()
  }
  const alone: Array<Summary> = []
  const runAlone = async (name: string, dir: string) => {
    const p = effectRag(concurrency)
    const db = join(tmp, `db-${name}`)
    const [command, argv] = p.command(dir, db)
    const s = { ...summarise(p, [parseRun(p, 0, await measure(command, argv))]), pipeline: name }
    alone.push(s)
    console.log(`${name.padEnd(16)} ${s.documents} docs ${s.chunks} chunks ${s.wallS.toFixed(2)} s wall ${s.cpuS.toFixed(2)} CPU s ${s.peakRssMiB.toFixed(0)} MiB, write ${(s.writeShare * 100).toFixed(0)} %`)
  }
  for (const [name, files] of [["synthetic-5k", 100], ["synthetic-50k", 1000]] as const) {
    if (!want(name)) continue
    const dir = join(tmp, name)
    synthetic(dir, files, 50)
    await runAlone(name, dir)
    rmSync(dir, { recursive: true, force: true })
  }
  if (want("fixtures")) await runAlone("fixtures", sharedPath("fixtures", "docs"))
  const small = alone.find((r) => r.pipeline === "synthetic-5k")
  const large = alone.find((r) => r.pipeline === "synthetic-50k")
  if (small && large) {
    const ratio = round(large.peakRssMiB / small.peakRssMiB)
    console.log(`peak RSS ${large.chunks} chunks / ${small.chunks} chunks: ${ratio}× (${ratio <= 2 ? "within" : "OVER"} the 2× bound)`)
    report["rssRatio50kOver5k"] = ratio
  }
  if (alone.length > 0) report["effectRagAlone"] = alone
  if (workerCounts !== undefined) report["workers"] = await workersCase(tmp, workerCounts)
  if (flag("--index-rows") !== undefined) report["indexBuilds"] = await indexCase(tmp, Math.max(1000, Number(flag("--index-rows"))))
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
console.log(`wrote ${writeReport(resultsPath("ingest"), report)}`)
