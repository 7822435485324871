/**
 * The ingest pipelines `bench:ingest` and `bench:scale` run side by side, each as a fresh child
 * process (measured by `measure.ts`), and the parsing of the one JSON result each prints.
 */
import { join } from "node:path"
import { packageRoot } from "../../src/internal/shared.js"
import type { Measured } from "./measure.js"


export interface Pipeline {
  readonly name: string
  readonly description: string
  readonly command: (dir: string, db: string) => [string, Array<string>]
}

export interface RunResult extends Omit<Measured, "stdout" | "stderr"> {
  readonly pipeline: string
  readonly round: number
  readonly documents: number
  readonly chunks: number
  readonly failed: number
  /** Time in store writes and index builds, as the pipeline measured it. */
  readonly writeS: number
  /** The pipeline's own total (without process start-up). */
  readonly totalS: number
}

export const cli = join(packageRoot(), "bin", "effect-rag.js")

export const effectRag = (concurrency: number): Pipeline => ({
  name: "effect-rag",
  description: "effect-rag ingest (built CLI): small text in-process, other formats in extraction workers, 512-token structure-aware chunks, LanceDB + FTS",
  command: (dir, db) => [process.execPath, [cli, "ingest", dir, "--db", db, "--collection", "bench", "--json", "--concurrency", String(concurrency)]]
})

/**
 * `effect-rag ingest` into PostgreSQL (`--db postgres://…`): each run a collection of its own
 * (`bench_<n>`), so a run starts empty as the others do.
 */
export const effectRagPostgres = (concurrency: number, url: string): Pipeline => {
  let n = 0
  return {
    name: "effect-rag-pg",
    description: "effect-rag ingest (built CLI) into PostgreSQL 15 + pgvector (--db postgres://…): the same chunks, BM25 postings and spec in tables; CPU includes the local server's",
    command: (dir) => [process.execPath, [cli, "ingest", dir, "--db", url, "--collection", `bench_${process.pid}_${n++}`, "--json", "--concurrency", String(concurrency)]]
  }
}

export const peer = (name: string, script: string, extra: Array<string>, description: string): Pipeline => ({
  name,
  description,
  command: (dir, db) => [process.execPath, [join(packageRoot(), "benchmarks", "peers", script), dir, db, ...extra]]
})

export const peers: ReadonlyArray<Pipeline> = [
  peer("langchain-token", "langchain-ingest.mjs", ["token"], "LangChain.js: DirectoryLoader + RecursiveCharacterTextSplitter by js-tiktoken tokens (512/64) + LanceDB + FTS"),
  peer("langchain-char", "langchain-ingest.mjs", ["char"], "LangChain.js: DirectoryLoader + RecursiveCharacterTextSplitter by characters (2,048/256) + LanceDB + FTS"),
  peer("lancedb", "lancedb-ingest.mjs", [], "LanceDB alone: files read, cut at fixed character offsets (2,048, overlap 256), one append, FTS index")
]

export const parseRun = (p: Pipeline, round: number, m: Measured): RunResult => {
  const line = m.stdout.trim().split("\n").filter((l) => l.startsWith("{") || l.startsWith("[")).join("\n") || m.stdout
  let out: { documents: number; ingested?: number; failed?: number; chunks: number | { ingested: number }; durationMs?: number; writeMs: number; totalMs?: number }
  try {
    out = JSON.parse(p.name.startsWith("effect-rag") ? m.stdout : line)
  } catch {
    throw new Error(`${p.name}: no JSON result (exit ${m.exitCode}):\n${m.stderr.slice(-2000)}`)
  }
  const { stdout: _o, stderr: _e, ...rest } = m
  return {
    ...rest,
    pipeline: p.name,
    round,
    documents: out.ingested ?? out.documents,
    chunks: typeof out.chunks === "number" ? out.chunks : out.chunks.ingested,
    failed: out.failed ?? 0,
    writeS: out.writeMs / 1000,
    totalS: (out.durationMs ?? out.totalMs ?? 0) / 1000
  }
}

