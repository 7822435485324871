/**
 * Start-up of the built command line: wall time (and, on Linux, CPU time) of whole processes, as
 * a user waits for them, for the bundled CLI that `bin/effect-rag.js` runs (`dist/bundle/`,
 * "bundle") against the unbundled tsc output it ran before (`node dist/cli/main.js`, "modules"),
 * interleaved run by run in one process so both see the same load.
 *
 * - `node -e 0`: the floor (Node itself).
 * - `effect-rag --version`: answered by `bin/` without loading the command line.
 * - `effect-rag --help` and a usage error (`ingest --bogus`): the command definitions only.
 * - `effect-rag query TEXT --db DB`: a one-shot full-text search over the fixtures collection (the
 *   shared fixture documents, ingested once into a temp database by this script, idempotently).
 * - `effect-rag ingest FILE --db DB`: one changed file stored and indexed: a Markdown file beside
 *   the collection gets a new line (a new marker word) before each run; after the run a query for
 *   the marker must find it (outside the timing), so the time is "stored and searchable".
 * - with `--scale-db DB --scale-file FILE` (a store built by `effect-rag ingest DIR --db DB`,
 *   e.g. from a bench:scale corpus copy, and one of its files): the same query and one-file ingest
 *   on that store; FILE gets a marker line per run and its first content back at the end.
 *
 * Each command runs `--runs N` times (default 10); the table gives the median, minimum and 90th
 * percentile wall time in ms, the median CPU time (user + system of the process, from
 * /proc/self/stat's waited-for children; Linux only), and bundle ÷ modules of the medians (the
 * CPU ratio is the steadier one on a loaded machine). On
 * Node 22+ both variants use the compile cache (bin enables it; the unbundled run gets
 * NODE_COMPILE_CACHE), as `bin/` did before the bundle. Writes `benchmarks/results/startup.json`
 * and `docs/plots/startup.svg`. Run `npm run build` first: it measures `dist`.
 *
 *   npm run bench:startup [-- --runs 10] [--scale-db DB --scale-file FILE]
 */
import { spawnSync } from "node:child_process"
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { packageRoot, sharedPath } from "../src/internal/shared.js"
import { writeBarChart } from "./internal/plot.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}
const runs = Number(argValue("--runs") ?? "10")
const bin = join(packageRoot(), "bin", "effect-rag.js")
const unbundled = join(packageRoot(), "dist", "cli", "main.js")
for (const file of [unbundled, join(packageRoot(), "dist", "bundle", "effect-rag.js")]) {
  if (!existsSync(file)) {
    console.error(`${file} is missing: run \`npm run build\` first`)
    process.exit(1)
  }
}
const fixtures = sharedPath("fixtures", "docs")
const db = argValue("--db") ?? join(tmpdir(), "effect-rag-bench-startup-db")
const scaleDb = argValue("--scale-db")
const scaleFile = argValue("--scale-file")
if ((scaleDb === undefined) !== (scaleFile === undefined)) {
  console.error("--scale-db and --scale-file go together")
  process.exit(2)
}
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_")))
const work = mkdtempSync(join(tmpdir(), "effect-rag-bench-startup-"))
const modulesEnv = { ...env, NODE_COMPILE_CACHE: join(work, "compile-cache") }

// the fixtures collection (idempotent: a rerun skips every unchanged document)
const ingest = spawnSync(process.execPath, [bin, "ingest", fixtures, "--db", db, "--json"], { env, encoding: "utf8" })
if (ingest.status !== 0 && ingest.status !== 3) {
  console.error(`ingesting the fixtures failed (exit ${ingest.status}):\n${ingest.stderr}`)
  process.exit(1)
}
const collection = JSON.parse(ingest.stdout) as { documents: number; chunks: { total: number } }

/** The changed file of the fixtures case: its own Markdown file, in the same store. */
const changedFile = join(tmpdir(), "effect-rag-bench-startup-changed.md")
writeFileSync(changedFile, `# A changed file\n\n${readFileSync(join(packageRoot(), "README.md"), "utf8").slice(0, 2000)}\n`)
const originals = new Map<string, string>()

let markers = 0
/** Appends a new marker word to `file` (keeping its first content to restore) and returns it. */
const touch = (file: string): string => {
  if (!originals.has(file)) originals.set(file, readFileSync(file, "utf8"))
  const marker = `startupmarker${process.pid}x${++markers}`
  appendFileSync(file, `\n${marker}\n`)
  return marker
}

interface Case {
  readonly name: string
  /** The arguments after the entry file; undefined: `node -e 0`. */
  readonly args?: ReadonlyArray<string>
  readonly expectStatus: number
  /** Before each run (not timed): returns what the run must have made searchable. */
  readonly before?: () => string
  readonly searchDb?: string
  /** Only the bundled CLI (bin/): the `--version` fast path has no unbundled variant. */
  readonly binOnly?: boolean
}

const query = "trace-based just-in-time compilation for dynamic languages"
const cases: ReadonlyArray<Case> = [
  { name: "node -e 0", expectStatus: 0, binOnly: true },
  { name: "effect-rag --version", args: ["--version"], expectStatus: 0, binOnly: true },
  { name: "effect-rag --help", args: ["--help"], expectStatus: 0 },
  { name: "effect-rag ingest --bogus", args: ["ingest", "--bogus", "x"], expectStatus: 2 },
  { name: "effect-rag query (fixtures)", args: ["query", query, "--db", db], expectStatus: 0 },
  {
    name: "effect-rag ingest FILE (fixtures, one changed file)",
    args: ["ingest", changedFile, "--db", db],
    expectStatus: 0,
    before: () => touch(changedFile),
    searchDb: db
  },
  ...(scaleDb !== undefined && scaleFile !== undefined
    ? [
      { name: "effect-rag query (--scale-db)", args: ["query", "coronary heart disease risk", "--db", scaleDb], expectStatus: 0 },
      {
        name: "effect-rag ingest FILE (--scale-db, one changed file)",
        args: ["ingest", scaleFile, "--db", scaleDb],
        expectStatus: 0,
        before: () => touch(scaleFile),
        searchDb: scaleDb
      }
    ]
    : [])
]

/** CPU seconds (user + system) of the waited-for children so far (Linux), else undefined. */
const childrenCpu = (): number | undefined => {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ")
    // after "pid (comm) ": state is field 3 → index 0; cutime is field 16, cstime 17
    return (Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

const quantile = (sorted: ReadonlyArray<number>, q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!

type Variant = "bundle" | "modules"

/** One timed run of `c` with `variant`: wall ms and CPU ms (or NaN off Linux). */
const runOnce = (c: Case, variant: Variant): { wall: number; cpu: number } => {
  const marker = c.before?.()
  const argv = c.args === undefined ? ["-e", "0"] : [variant === "bundle" ? bin : unbundled, ...c.args]
  const cpu0 = childrenCpu()
  const started = process.hrtime.bigint()
  const r = spawnSync(process.execPath, argv, { env: variant === "bundle" ? env : modulesEnv, encoding: "utf8" })
  const wall = Number(process.hrtime.bigint() - started) / 1e6
  const cpu1 = childrenCpu()
  if (r.status !== c.expectStatus) {
    console.error(`${c.name} (${variant}): exit ${r.status}, expected ${c.expectStatus}\n${r.stderr}`)
    process.exit(1)
  }
  if (marker !== undefined && c.searchDb !== undefined) {
    const found = spawnSync(process.execPath, [bin, "query", marker, "--db", c.searchDb, "--json"], { env, encoding: "utf8" })
    if (!found.stdout.includes(marker)) {
      console.error(`${c.name} (${variant}): the changed file is not found by a query for ${marker}\n${found.stderr}`)
      process.exit(1)
    }
  }
  return { wall, cpu: cpu0 === undefined || cpu1 === undefined ? Number.NaN : (cpu1 - cpu0) * 1000 }
}

const summary = (samples: ReadonlyArray<{ wall: number; cpu: number }>) => {
  const walls = samples.map((s) => s.wall).sort((a, b) => a - b)
  const cpus = samples.map((s) => s.cpu).sort((a, b) => a - b)
  return {
    medianMs: Math.round(quantile(walls, 0.5)),
    minMs: Math.round(walls[0]!),
    p90Ms: Math.round(quantile(walls, 0.9)),
    medianCpuMs: Number.isNaN(cpus[0]!) ? null : Math.round(quantile(cpus, 0.5))
  }
}

type Summary = ReturnType<typeof summary>
interface Row {
  readonly command: string
  readonly bundle: Summary
  readonly modules: Summary | null
  /** bundle ÷ modules of the median wall times. */
  readonly ratio: number | null
  /** bundle ÷ modules of the median CPU times (Linux). */
  readonly cpuRatio: number | null
}

const info = runInfo()
const rows = ((): ReadonlyArray<Row> => {
  try {
    return cases.map((c): Row => {
      const samples: Record<Variant, Array<{ wall: number; cpu: number }>> = { bundle: [], modules: [] }
      for (let i = 0; i < runs; i++) {
        // interleaved, the order alternating from run to run
        const order: ReadonlyArray<Variant> = c.binOnly ? ["bundle"] : i % 2 === 0 ? ["modules", "bundle"] : ["bundle", "modules"]
        for (const v of order) samples[v].push(runOnce(c, v))
      }
      const bundle = summary(samples.bundle)
      if (c.binOnly) return { command: c.name, bundle, modules: null, ratio: null, cpuRatio: null }
      const modules = summary(samples.modules)
      const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : Math.round((a / b) * 100) / 100)
      return { command: c.name, bundle, modules, ratio: ratio(bundle.medianMs, modules.medianMs), cpuRatio: ratio(bundle.medianCpuMs, modules.medianCpuMs) }
    })
  } finally {
    for (const [file, text] of originals) writeFileSync(file, text)
  }
})()
const loadAfter = runInfo().loadAverage

console.log(`start-up, ${runs} runs each, interleaved (Node ${info.node}, ${info.cpus} CPUs, load average ${info.loadAverage.join(" ")} at the start, ${loadAfter.join(" ")} at the end)`)
console.log(`fixtures collection: ${collection.documents} documents, ${collection.chunks.total} chunks in ${db}${scaleDb ? `; --scale-db ${scaleDb}` : ""}\n`)
console.log("| command | bundle ÷ modules, wall | bundle ÷ modules, CPU | bundle wall median / min / p90 ms | bundle CPU ms | modules wall median / min / p90 ms | modules CPU ms |")
console.log("|---|---:|---:|---:|---:|---:|---:|")
const cpu = (ms: number | null) => (ms === null ? "–" : String(ms))
for (const r of rows) {
  const b = `${r.bundle.medianMs} / ${r.bundle.minMs} / ${r.bundle.p90Ms}`
  const m = r.modules === null ? "–" : `${r.modules.medianMs} / ${r.modules.minMs} / ${r.modules.p90Ms}`
  const times = (x: number | null) => (x === null ? "–" : `${x.toFixed(2)}×`)
  console.log(`| ${r.command} | ${times(r.ratio)} | ${times(r.cpuRatio)} | ${b} | ${cpu(r.bundle.medianCpuMs)} | ${m} | ${cpu(r.modules?.medianCpuMs ?? null)} |`)
}

const report = {
  ...info,
  loadAverageAtEnd: loadAfter,
  runs,
  collection: { db, documents: collection.documents, chunks: collection.chunks.total },
  scale: scaleDb === undefined ? null : { db: scaleDb, file: scaleFile },
  rows
}
console.log(`\nwrote ${writeReport(resultsPath("startup"), report)}`)
console.log(`wrote ${
  writeBarChart("startup", {
    title: "effect-rag start-up: median wall time of a whole process",
    unit: "ms",
    groups: rows.map((r) => ({
      label: r.command,
      bars: [
        { series: "bundle (bin/)", value: r.bundle.medianMs },
        ...(r.modules === null ? [] : [{ series: "modules (dist/cli/main.js)", value: r.modules.medianMs }])
      ]
    })),
    caption: `npm run bench:startup (${runs} runs; ${info.cpus} CPUs, load average ${info.loadAverage[0]} at start)`,
    digits: 0
  })
}`)
