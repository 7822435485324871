/**
 * `npm run bench:ingest`: ingestion speed and memory through the CLI's code path.
 *
 * Each case runs `effect-rag ingest DIR --db TMP --json` in a fresh child process (this file
 * with `--child`: the real `ingest` command under a root command, as `main.ts` runs it), then
 * reads its JSON summary and the child's peak RSS (`process.resourceUsage().maxRSS`, the main
 * process only: the local document engine's extraction worker processes are not included).
 *
 * Cases:
 * - `scifact`: the 5,183 SciFact abstracts (`$EFFECT_RAG_SHARED/bench/scifact/corpus.jsonl`),
 *   written as one Markdown file each (`# title` + text) into a temp folder;
 * - `fixtures`: the shared fixture documents (PDF, DOCX, XLSX, PPTX, HTML, images, ...; the
 *   encrypted and corrupt ones fail and are recorded: exit code 3);
 * - `synthetic-5k` and `synthetic-50k`: generated Markdown, 50 chunks per file, 100 and 1,000
 *   files: the peak RSS ratio of the two is the "memory flat in corpus size" check (≤ 2×).
 *
 * Options: `--only NAME[,NAME]` runs some cases; `--concurrency N` (default 2) is passed to the
 * command. Writes `benchmarks/results/ingest.json`.
 */
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { createReadStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { cpus, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import * as ingest from "../src/cli/commands/ingest.js"
import { packageRoot, sharedPath } from "../src/internal/shared.js"
import { resultsPath, writeReport } from "./internal/results.js"

// =============================================================================
// Child: the CLI path
// =============================================================================

// =============================================================================
// Parent
// =============================================================================

interface CaseResult {
  readonly name: string
  readonly description: string
  readonly exitCode: number | null
  readonly documents: number
  readonly ingested: number
  readonly failed: number
  readonly chunks: number
  readonly seconds: number
  readonly documentsPerSecond: number
  readonly chunksPerSecond: number
  readonly peakRssMiB: number
}

const words = (() => {
  const syllables = ["ka", "lo", "mi", "ren", "tas", "vo", "ul", "pri", "sen", "dor", "ax", "quen", "bri", "tol", "mek", "ar"]
  const out: Array<string> = []
  for (const a of syllables) for (const b of syllables) out.push(a + b)
  return out
})()

/** A deterministic pseudo-random generator (mulberry32). */
const rng = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

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

/** Writes each SciFact abstract as `<id>.md`. */
const scifact = async (dir: string): Promise<number> => {
  mkdirSync(dir, { recursive: true })
  let n = 0
  const lines = createInterface({ input: createReadStream(sharedPath("bench", "scifact", "corpus.jsonl")) })
  for await (const line of lines) {
    if (line.trim() === "") continue
    const doc = JSON.parse(line) as { _id: string; title: string; text: string }
    writeFileSync(join(dir, `${doc._id}.md`), `# ${doc.title}\n\n${doc.text}\n`)
    n++
  }
  return n
}

const runCase = (name: string, description: string, source: string, db: string, concurrency: number): Promise<CaseResult> =>
  new Promise((resolve, reject) => {
    const self = fileURLToPath(import.meta.url)
    const args = ["--import", "tsx", self, "--child", "ingest", source, "--db", db, "--collection", name.replace(/[^A-Za-z0-9_-]/g, "_"), "--json", "--concurrency", String(concurrency)]
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_") || k === "EFFECT_RAG_SHARED"))
    const started = Date.now()
    const child = spawn(process.execPath, args, { cwd: packageRoot(), env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("error", reject)
    child.on("close", (code) => {
      const wall = (Date.now() - started) / 1000
      const rss = /BENCH_MAXRSS_KB (\d+)/.exec(stderr)
      let summary: { documents: number; ingested: number; failed: number; durationMs: number; chunks: { ingested: number } }
      try {
        summary = JSON.parse(stdout)
      } catch {
        return reject(new Error(`${name}: no JSON summary (exit ${code}) after ${wall}s:\n${stderr.slice(-2000)}`))
      }
      const seconds = summary.durationMs / 1000
      resolve({
        name,
        description,
        exitCode: code,
        documents: summary.documents,
        ingested: summary.ingested,
        failed: summary.failed,
        chunks: summary.chunks.ingested,
        seconds: Number(seconds.toFixed(2)),
        documentsPerSecond: Number((summary.ingested / seconds).toFixed(1)),
        chunksPerSecond: Number((summary.chunks.ingested / seconds).toFixed(1)),
        peakRssMiB: rss ? Number((Number(rss[1]) / 1024).toFixed(1)) : NaN
      })
    })
  })

async function main() {
  const flag = (name: string) => {
    const i = process.argv.indexOf(name)
    return i >= 0 ? process.argv[i + 1] : undefined
  }
  const only = flag("--only")?.split(",")
  const concurrency = Number(flag("--concurrency") ?? "2")
  const want = (n: string) => only === undefined || only.includes(n)
  const tmp = mkdtempSync(join(tmpdir(), "effect-rag-bench-ingest-"))
  const results: Array<CaseResult> = []
  const report = (r: CaseResult) => {
    results.push(r)
    console.log(
      `${r.name.padEnd(14)} ${String(r.ingested).padStart(6)} docs ${String(r.chunks).padStart(6)} chunks ${r.seconds.toFixed(1).padStart(7)} s ` +
        `${r.documentsPerSecond.toFixed(1).padStart(7)} docs/s ${r.chunksPerSecond.toFixed(1).padStart(8)} chunks/s  peak RSS ${r.peakRssMiB} MiB` +
        `${r.failed > 0 ? `  (${r.failed} failed, exit ${r.exitCode})` : ""}`
    )
  }
  try {
    for (const [name, files] of [["synthetic-5k", 100], ["synthetic-50k", 1000]] as const) {
      if (!want(name)) continue
      const dir = join(tmp, name)
      synthetic(dir, files, 50)
      report(await runCase(name, `${files} generated Markdown files of ~50 chunks each`, dir, join(tmp, `db-${name}`), concurrency))
      rmSync(dir, { recursive: true, force: true })
    }
    if (want("scifact")) {
      const dir = join(tmp, "scifact")
      const n = await scifact(dir)
      report(await runCase("scifact", `SciFact corpus, ${n} abstracts as Markdown files`, dir, join(tmp, "db-scifact"), concurrency))
    }
    if (want("fixtures")) {
      report(await runCase("fixtures", "the shared fixture documents (mixed formats; broken ones fail)", sharedPath("fixtures", "docs"), join(tmp, "db-fixtures"), concurrency))
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  const small = results.find((r) => r.name === "synthetic-5k")
  const large = results.find((r) => r.name === "synthetic-50k")
  const ratio = small && large ? Number((large.peakRssMiB / small.peakRssMiB).toFixed(2)) : undefined
  if (ratio !== undefined) {
    console.log(`peak RSS ${large!.chunks} chunks / ${small!.chunks} chunks: ${ratio}× (${ratio <= 2 ? "within" : "OVER"} the 2× bound)`)
  }
  const out = {
    command: "npm run bench:ingest",
    date: new Date().toISOString(),
    machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, totalMemMiB: Math.round(totalmem() / 1024 / 1024) },
    concurrency,
    note: "peak RSS is the CLI process's (process.resourceUsage().maxRSS); the local document engine's extraction worker processes are separate",
    cases: results,
    rssRatio50kOver5k: ratio
  }
  const path = writeReport(resultsPath("ingest"), out)
  console.log(`wrote ${path}`)
}

// =============================================================================
// Entry
// =============================================================================

if (process.argv[2] === "--child") {
  const root = Command.make("effect-rag").pipe(Command.withSubcommands([ingest.command]))
  const argv = [process.argv[0]!, "effect-rag", ...process.argv.slice(3)]
  const program = Command.run(root, { name: "effect-rag", version: "bench" })(argv).pipe(
    Effect.provide(NodeContext.layer),
    Effect.ensuring(Effect.sync(() => process.stderr.write(`\nBENCH_MAXRSS_KB ${process.resourceUsage().maxRSS}\n`)))
  )
  NodeRuntime.runMain(program)
} else {
  await main()
}
