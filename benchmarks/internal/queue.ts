/**
 * The queue case of `npm run bench:ingest -- --workers 1,2,4`: documents/s of `effect-rag worker`
 * processes sharing one collection, per worker count, on local disk and on a local S3 server
 * (`s3rver`, as in `bench:storage`).
 *
 * For each target and worker count: a fresh Redis (`redis-server` on loopback) and a fresh
 * database; `effect-rag ingest DIR --queue …` enqueues the corpus (not timed), then N workers
 * (`--until-empty --json`) start at once; the time runs from their start to the last exit. The
 * workers report their store-write time and their time waiting for the collection's writer lock;
 * the table shows both as a share of the workers' summed run time.
 */
import { spawn } from "node:child_process"
import { join } from "node:path"
import { packageRoot } from "../../src/internal/shared.js"
import { startRedis } from "../../test/support/redis.js"
import { startS3 } from "../../test/support/s3.js"

/** One measured worker count on one target. */
export interface WorkerRun {
  readonly target: "disk" | "s3"
  readonly workers: number
  readonly documents: number
  readonly chunks: number
  readonly wallS: number
  readonly documentsPerS: number
  /** Summed store-write time of the workers over their summed run time. */
  readonly writeShare: number
  /** Summed writer-lock wait over their summed run time. */
  readonly lockWaitShare: number
}

interface WorkerJson {
  readonly ingested: number
  readonly chunks: number
  readonly durationMs: number
  readonly writeMs: number
  readonly lockWaitMs: number
}

const cli = join(packageRoot(), "bin", "effect-rag.js")

const run = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString().slice(-4000)))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Runs the worker scaling case over the documents in `dir`; `scratch` holds the local databases. */
export const benchWorkers = async (options: {
  readonly dir: string
  readonly scratch: string
  readonly counts: ReadonlyArray<number>
  readonly log: (line: string) => void
}): Promise<ReadonlyArray<WorkerRun>> => {
  const out: Array<WorkerRun> = []
  const s3 = await startS3({ conditionalPut: true })
  try {
    for (const target of ["disk", "s3"] as const) {
      for (const n of options.counts) {
        const redis = await startRedis()
        try {
          const db = target === "disk" ? join(options.scratch, `queue-db-${n}`) : s3.uri(`queue-db-${n}`)
          const env = target === "s3" ? { ...s3.env } : {}
          const enqueued = await run(["ingest", options.dir, "--queue", redis.url, "--collection", "bench", "--json"], env)
          if (enqueued.code !== 0) throw new Error(`enqueue failed (exit ${enqueued.code}): ${enqueued.stderr}`)
          const started = performance.now()
          const results = await Promise.all(Array.from({ length: n }, () =>
            run(["worker", "--queue", redis.url, "--collection", "bench", "--db", db, "--until-empty", "--json"], env)
          ))
          const wallS = (performance.now() - started) / 1000
          const reports = results.map((r) => {
            if (r.code !== 0) throw new Error(`worker failed (exit ${r.code}): ${r.stderr}`)
            return JSON.parse(r.stdout) as WorkerJson
          })
          const sum = (f: (w: WorkerJson) => number) => reports.reduce((a, w) => a + f(w), 0)
          const documents = sum((w) => w.ingested)
          const result: WorkerRun = {
            target,
            workers: n,
            documents,
            chunks: sum((w) => w.chunks),
            wallS,
            documentsPerS: documents / wallS,
            writeShare: sum((w) => w.writeMs) / sum((w) => w.durationMs),
            lockWaitShare: sum((w) => w.lockWaitMs) / sum((w) => w.durationMs)
          }
          out.push(result)
          options.log(
            `  ${target.padEnd(4)} ${String(n).padStart(2)} worker(s): ${documents} docs in ${wallS.toFixed(1)} s = ${result.documentsPerS.toFixed(1)} docs/s, ` +
              `write ${(result.writeShare * 100).toFixed(0)} %, writer-lock wait ${(result.lockWaitShare * 100).toFixed(0)} %`
          )
        } finally {
          await redis.stop()
        }
      }
    }
  } finally {
    await s3.close()
  }
  return out
}

/** The table of a worker scaling run (ratios against one worker on the same target). */
export const workersTable = (runs: ReadonlyArray<WorkerRun>): string => {
  const lines = ["| target | workers | documents | wall s | documents/s | vs 1 worker | write share | writer-lock wait |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
  for (const r of runs) {
    const one = runs.find((x) => x.target === r.target && x.workers === 1)
    const ratio = one !== undefined ? `${(r.documentsPerS / one.documentsPerS).toFixed(2)}×` : "-"
    lines.push(
      `| ${r.target} | ${r.workers} | ${r.documents} | ${r.wallS.toFixed(1)} | ${r.documentsPerS.toFixed(1)} | ${ratio} | ${(r.writeShare * 100).toFixed(0)} % | ${(r.lockWaitShare * 100).toFixed(0)} % |`
    )
  }
  return lines.join("\n")
}

/** One measured vector index build. */
export interface IndexBuild {
  readonly index: "IVF_HNSW_SQ" | "IVF_PQ"
  readonly rows: number
  readonly dimension: number
  readonly seconds: number
  /** The table's bytes on disk after the build (vectors, ids, the index). */
  readonly bytes: number
}

/**
 * Builds the vector index the store builds (`IVF_HNSW_SQ`, cosine) and `IVF_PQ` on `rows` random
 * unit vectors of `dimension` in a fresh LanceDB table (directly through `@lancedb/lancedb`): the
 * per-row build cost and bytes that the 100-million-chunk estimate of benchmarks/README.md scales.
 */
export const benchIndexBuild = async (scratch: string, rows: number, dimension: number): Promise<ReadonlyArray<IndexBuild>> => {
  const lancedb = await import("@lancedb/lancedb")
  const { execFileSync } = await import("node:child_process")
  const out: Array<IndexBuild> = []
  let seed = 42
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648
    return seed / 2_147_483_648 - 0.5
  }
  const data = Array.from({ length: rows }, (_, i) => {
    const v = Array.from({ length: dimension }, random)
    const norm = Math.hypot(...v)
    return { id: `doc-${i}#0`, vector: v.map((x) => x / norm) }
  })
  for (const index of ["IVF_HNSW_SQ", "IVF_PQ"] as const) {
    const uri = join(scratch, `index-${index}`)
    const db = await lancedb.connect(uri)
    try {
      const table = await db.createTable("chunks", data, { mode: "overwrite" })
      const started = performance.now()
      await table.createIndex("vector", {
        config: index === "IVF_HNSW_SQ" ? lancedb.Index.hnswSq({ distanceType: "cosine" }) : lancedb.Index.ivfPq({ distanceType: "cosine" }),
        replace: true
      })
      const seconds = (performance.now() - started) / 1000
      const bytes = Number(execFileSync("du", ["-sb", uri], { encoding: "utf8" }).split("\t")[0])
      out.push({ index, rows, dimension, seconds, bytes })
    } finally {
      db.close()
    }
  }
  return out
}
