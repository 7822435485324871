/**
 * Measuring a benchmark's child process from outside (`bench:ingest`, `bench:scale`): wall time,
 * CPU seconds of the process tree (user + system, through `/usr/bin/time`, which counts every
 * descendant the child reaped: the extraction workers too; without it, the last CPU ticks seen of
 * every process of the tree in `/proc`) and the peak RSS of the process tree (the sum over the
 * child and its descendants, sampled from `/proc` every 50 ms). Nothing here knows a pipeline.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { packageRoot } from "../../src/internal/shared.js"
import { ensureCpuThreads } from "../../src/store/internal/lance-threads.js"

export interface Measured {
  readonly exitCode: number | null
  readonly wallS: number
  /** User + system CPU seconds of the process tree. */
  readonly cpuS: number
  /** Peak of the summed RSS of the process tree. */
  readonly peakRssMiB: number
  readonly stdout: string
  readonly stderr: string
  /** Killed after the caller's time limit. */
  readonly timedOut?: boolean
}

const pageSize = 4096
const clockTicks = 100
export const timeBinary = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined

/** pid → [ppid, rss bytes, cpu ticks] for every process, from /proc. */
const processTable = (): Map<number, [number, number, number]> => {
  const out = new Map<number, [number, number, number]>()
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      // fields[0] is field 3 (state): ppid 4, utime 14, stime 15, rss 24
      out.set(Number(name), [Number(fields[1]), Number(fields[21]) * pageSize, Number(fields[11]) + Number(fields[12])])
    } catch {
      // the process ended meanwhile
    }
  }
  return out
}

/**
 * CPU seconds spent so far by the local PostgreSQL server: the postmaster's own and its reaped
 * children's (connection backends exit and are reaped when a client disconnects), plus the live
 * processes named `postgres` (checkpointer, writers, backends still open). The difference over a
 * run is the server's share of it. 0 when no `postgres` process runs here.
 */
export const postgresCpuS = (): number => {
  const procs: Array<{ pid: number; ppid: number; own: number; reaped: number }> = []
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== "postgres") continue
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      // utime 14, stime 15, cutime 16, cstime 17 (fields[11..14])
      procs.push({ pid: Number(name), ppid: Number(f[1]), own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) })
    } catch {
      // ended meanwhile
    }
  }
  const pids = new Set(procs.map((p) => p.pid))
  let ticks = 0
  for (const p of procs) ticks += p.own + (pids.has(p.ppid) ? 0 : p.reaped)
  return ticks / clockTicks
}

/** The descendants of `root` (not `root` itself) in a process table. */
const descendants = (table: Map<number, [number, number, number]>, root: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const [pid, [ppid]] of table) {
    const list = children.get(ppid) ?? []
    list.push(pid)
    children.set(ppid, list)
  }
  const out: Array<number> = []
  const queue = [...(children.get(root) ?? [])]
  while (queue.length > 0) {
    const pid = queue.shift()!
    out.push(pid)
    queue.push(...(children.get(pid) ?? []))
  }
  return out
}

/**
 * Runs a command, measuring its process tree (see the module doc). With `timeoutS`, a tree still
 * running after that many seconds is killed (SIGTERM to every process of it) and the result has
 * `timedOut`.
 */
export const measure = (command: string, args: ReadonlyArray<string>, timeoutS?: number): Promise<Measured> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const [exe, argv] = timeBinary === undefined
      ? [command, [...args]]
      : [timeBinary, ["-f", "BENCH_TIME %e %U %S", command, ...args]]
    const child = spawn(exe, argv, { cwd: packageRoot(), stdio: ["ignore", "pipe", "pipe"], env: benchEnv })
    let stdout = ""
    let stderr = ""
    let peak = 0
    // without /usr/bin/time: the last CPU ticks seen of every process of the tree
    const ticks = new Map<number, number>()
    const sample = () => {
      const table = processTable()
      const tree = timeBinary === undefined ? [child.pid!, ...descendants(table, child.pid!)] : descendants(table, child.pid!)
      let rss = 0
      for (const pid of tree) {
        const row = table.get(pid)
        if (row === undefined) continue
        rss += row[1]
        ticks.set(pid, row[2])
      }
      peak = Math.max(peak, rss)
    }
    const timer = setInterval(sample, 50)
    let timedOut = false
    const limit = timeoutS === undefined ? undefined : setTimeout(() => {
      timedOut = true
      for (const pid of [...descendants(processTable(), child.pid!).reverse(), child.pid!]) {
        try {
          process.kill(pid, "SIGTERM")
        } catch {
          // ended meanwhile
        }
      }
    }, timeoutS * 1000)
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("error", (e) => {
      clearInterval(timer)
      reject(e)
    })
    child.on("close", (code) => {
      clearInterval(timer)
      if (limit !== undefined) clearTimeout(limit)
      const wallS = (performance.now() - started) / 1000
      const time = /BENCH_TIME ([\d.]+) ([\d.]+) ([\d.]+)/.exec(stderr)
      const cpuS = time ? Number(time[2]) + Number(time[3]) : [...ticks.values()].reduce((a, b) => a + b, 0) / clockTicks
      resolve({ exitCode: code, wallS, cpuS, peakRssMiB: peak / 2 ** 20, stdout, stderr, ...(timedOut ? { timedOut } : {}) })
    })
  })

/**
 * The environment of the children: no effect-rag settings of the caller's shell (the shared data
 * stays); `LANCE_CPU_THREADS` as the library sets it on a small host, so that the peers that
 * call LanceDB directly do not deadlock building their full-text index (LanceDB 0.29 on 1-3 CPUs).
 */
ensureCpuThreads()
export const benchEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_") || k === "EFFECT_RAG_SHARED")
)

/**
 * Builds `dist/` and the CLI bundle when a source file is newer than the bundle's entry (the
 * benchmark runs the built CLI, `bin/effect-rag.js` over `dist/bundle/`).
 */
export const ensureBuilt = () => {
  const entry = join(packageRoot(), "dist", "bundle", "effect-rag.js")
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
      const p = join(dir, e.name)
      return Math.max(m, e.isDirectory() ? newest(p) : statSync(p).mtimeMs)
    }, 0)
  if (existsSync(entry) && statSync(entry).mtimeMs >= newest(join(packageRoot(), "src"))) return
  console.log("building dist/ and the CLI bundle (tsc, scripts/bundle-cli.mjs) ...")
  execFileSync(process.execPath, [join(packageRoot(), "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"], { cwd: packageRoot(), stdio: "inherit" })
  execFileSync(process.execPath, [join(packageRoot(), "scripts", "bundle-cli.mjs")], { cwd: packageRoot(), stdio: "inherit" })
}

