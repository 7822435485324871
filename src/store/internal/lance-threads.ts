/**
 * The size of LanceDB's CPU pool on small hosts.
 *
 * LanceDB 0.29 (lance 6) sizes its pool of compute threads at the number of CPUs minus
 * `LANCE_IO_CORE_RESERVATION` (2), and at least 1. Building a full-text index of more than one
 * posting-list batch (tens of thousands of rows) then deadlocks on a host of 1 to 3 CPUs: the
 * producer blocks its pool's only thread on a full channel while the writer that would drain
 * it waits for a pool thread (lancedb/lancedb#3568; fixed in lance by asynchronous sends,
 * lance-format/lance#7423, in releases that need Node 22). The process then sits at 0 % CPU
 * for ever. Measured here (2 CPUs, 50,000 rows, one `createTable` then the FTS index): stalled
 * in every run without the setting, finished in every run with it.
 *
 * So when the user has not set `LANCE_CPU_THREADS` and the pool would have fewer than
 * {@link minimumCpuThreads} threads, it is set before LanceDB starts its pool (the first
 * connection of the process). An explicit setting is always kept.
 */
import { availableParallelism } from "node:os"

/** The fewest compute threads LanceDB gets when its own sizing would give fewer. */
export const minimumCpuThreads = 4

/** LanceDB's own reservation of cores for I/O (`LANCE_IO_CORE_RESERVATION`, default 2). */
const ioReservation = (env: NodeJS.ProcessEnv): number => {
  const n = Number(env["LANCE_IO_CORE_RESERVATION"] ?? 2)
  return Number.isFinite(n) && n >= 0 ? n : 2
}

/**
 * The `LANCE_CPU_THREADS` to set for this host, or undefined to leave LanceDB's own choice
 * (the variable is set, or the host is large enough).
 */
export const cpuThreadsFor = (env: NodeJS.ProcessEnv, cpus: number): string | undefined => {
  if (env["LANCE_CPU_THREADS"] !== undefined && env["LANCE_CPU_THREADS"] !== "") return undefined
  const pool = Math.max(1, cpus - ioReservation(env))
  return pool < minimumCpuThreads ? String(minimumCpuThreads) : undefined
}

/** Sets `LANCE_CPU_THREADS` in `env` (the process's by default) when {@link cpuThreadsFor} says so. */
export const ensureCpuThreads = (env: NodeJS.ProcessEnv = process.env, cpus: number = availableParallelism()): void => {
  const threads = cpuThreadsFor(env, cpus)
  if (threads !== undefined) env["LANCE_CPU_THREADS"] = threads
}
