/**
 * Start-up of the built command line (`bin/effect-rag.js` over `dist/`): wall time of whole
 * processes, as a user waits for them.
 *
 * - `node -e 0`: the floor (Node itself).
 * - `effect-rag --version`: answered by `bin/` without loading the command line.
 * - `effect-rag --help` and a usage error (`ingest --bogus`): the command definitions only.
 * - `effect-rag query TEXT --db DB`: full-text search over the fixtures collection (the shared
 *   fixture documents, ingested once into a temp database by this script, idempotently).
 *
 * Each command runs `--runs N` times (default 10) one after the other; the table gives the
 * median, minimum and 90th percentile in milliseconds. Writes `benchmarks/results/startup.json`
 * and `docs/plots/startup.svg`. Run `npm run build` first: it measures `dist`.
 *
 *   npm run bench:startup [-- --runs 10]
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
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
if (!existsSync(join(packageRoot(), "dist", "cli", "main.js"))) {
  console.error("dist/ is missing: run `npm run build` first")
  process.exit(1)
}
const fixtures = sharedPath("fixtures", "docs")
const db = argValue("--db") ?? join(tmpdir(), "effect-rag-bench-startup-db")
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_")))

// the fixtures collection (idempotent: a rerun skips every unchanged document)
const ingest = spawnSync(process.execPath, [bin, "ingest", fixtures, "--db", db, "--json"], { env, encoding: "utf8" })
if (ingest.status !== 0 && ingest.status !== 3) {
  console.error(`ingesting the fixtures failed (exit ${ingest.status}):\n${ingest.stderr}`)
  process.exit(1)
}
const collection = JSON.parse(ingest.stdout) as { documents: number; chunks: { total: number } }

interface Case {
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly expectStatus: number
}

const cases: ReadonlyArray<Case> = [
  { name: "node -e 0", args: ["-e", "0"], expectStatus: 0 },
  { name: "effect-rag --version", args: [bin, "--version"], expectStatus: 0 },
  { name: "effect-rag --help", args: [bin, "--help"], expectStatus: 0 },
  { name: "effect-rag ingest --bogus", args: [bin, "ingest", "--bogus", "x"], expectStatus: 2 },
  {
    name: "effect-rag query (fixtures)",
    args: [bin, "query", "trace-based just-in-time compilation for dynamic languages", "--db", db],
    expectStatus: 0
  }
]

const quantile = (sorted: ReadonlyArray<number>, q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!

const rows = cases.map((c) => {
  const times: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint()
    const r = spawnSync(process.execPath, [...c.args], { env, encoding: "utf8" })
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    if (r.status !== c.expectStatus) {
      console.error(`${c.name}: exit ${r.status}, expected ${c.expectStatus}\n${r.stderr}`)
      process.exit(1)
    }
    times.push(ms)
  }
  const sorted = [...times].sort((a, b) => a - b)
  return {
    command: c.name,
    medianMs: Math.round(quantile(sorted, 0.5)),
    minMs: Math.round(sorted[0]!),
    p90Ms: Math.round(quantile(sorted, 0.9))
  }
})

const info = runInfo()
console.log(`start-up, ${runs} runs each (Node ${info.node}, ${info.cpus} CPUs, load average ${info.loadAverage.join(" ")})`)
console.log(`fixtures collection: ${collection.documents} documents, ${collection.chunks.total} chunks in ${db}\n`)
console.log("| command | median ms | min ms | p90 ms |")
console.log("|---|---|---|---|")
for (const r of rows) console.log(`| ${r.command} | ${r.medianMs} | ${r.minMs} | ${r.p90Ms} |`)

const report = { ...info, runs, collection: { db, documents: collection.documents, chunks: collection.chunks.total }, rows }
console.log(`\nwrote ${writeReport(resultsPath("startup"), report)}`)
console.log(`wrote ${
  writeBarChart("startup", {
    title: "effect-rag start-up: wall time of a whole process",
    unit: "ms",
    groups: rows.map((r) => ({ label: r.command, bars: [{ series: "median", value: r.medianMs }, { series: "min", value: r.minMs }] })),
    caption: `npm run bench:startup (${runs} runs; ${info.cpus} CPUs, load average ${info.loadAverage[0]} at start)`,
    digits: 0
  })
}`)
