/**
 * The LanceDB CPU-pool guard: on a host where LanceDB's own sizing gives its compute pool fewer
 * than four threads (CPUs minus the I/O reservation), `LANCE_CPU_THREADS` is set, so that a
 * full-text index build cannot deadlock (lancedb/lancedb#3568); an explicit setting is kept.
 * The deadlock itself needs tens of thousands of rows to show (benchmarks/README.md).
 */
import { describe, expect, it } from "vitest"
import { cpuThreadsFor, ensureCpuThreads, minimumCpuThreads } from "../../src/store/internal/lance-threads.js"

describe("LanceDB CPU pool guard", () => {
  it("raises the pool on small hosts and leaves large ones to LanceDB", () => {
    expect(cpuThreadsFor({}, 1)).toBe(String(minimumCpuThreads))
    expect(cpuThreadsFor({}, 2)).toBe(String(minimumCpuThreads))
    expect(cpuThreadsFor({}, 5)).toBe(String(minimumCpuThreads)) // 5 - 2 = 3 threads
    expect(cpuThreadsFor({}, 6)).toBeUndefined() // 4 threads of its own
    expect(cpuThreadsFor({}, 64)).toBeUndefined()
    // the I/O reservation counts as LanceDB counts it
    expect(cpuThreadsFor({ LANCE_IO_CORE_RESERVATION: "0" }, 4)).toBeUndefined()
    expect(cpuThreadsFor({ LANCE_IO_CORE_RESERVATION: "4" }, 6)).toBe(String(minimumCpuThreads))
  })

  it("keeps what the user set", () => {
    expect(cpuThreadsFor({ LANCE_CPU_THREADS: "1" }, 2)).toBeUndefined()
    const env: NodeJS.ProcessEnv = { LANCE_CPU_THREADS: "3" }
    ensureCpuThreads(env, 2)
    expect(env["LANCE_CPU_THREADS"]).toBe("3")
    const unset: NodeJS.ProcessEnv = {}
    ensureCpuThreads(unset, 2)
    expect(unset["LANCE_CPU_THREADS"]).toBe(String(minimumCpuThreads))
  })
})
