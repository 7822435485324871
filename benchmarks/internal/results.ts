/** Where and how the benchmarks write their JSON reports (`benchmarks/results/`, gitignored). */
import { mkdirSync, writeFileSync } from "node:fs"
import { availableParallelism, loadavg } from "node:os"
import { dirname, join } from "node:path"
import { packageRoot } from "../../src/internal/shared.js"

/** The default report path of a benchmark: `benchmarks/results/<name>.json`. */
export const resultsPath = (name: string): string => join(packageRoot(), "benchmarks", "results", `${name}.json`)

/** When and where a run happened: the fields every report starts with. */
export const runInfo = () => ({
  date: new Date().toISOString(),
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  cpus: availableParallelism(),
  /** 1, 5 and 15 minute load averages when the run started: read ratios, not seconds, when high. */
  loadAverage: loadavg().map((l) => Math.round(l * 100) / 100)
})

/** Writes a report as indented JSON (creating the folder) and returns its path. */
export const writeReport = (path: string, report: unknown): string => {
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, JSON.stringify(report, null, 2) + "\n")
  return path
}
