/**
 * An extraction process ends when its parent dies, even in the middle of a long extraction: a
 * parent process (the built `LocalFiles` layer) extracts a 40 MB text, is killed with SIGKILL
 * while its extraction process works, and the extraction process must be gone soon after.
 * Linux only (the child is found through `/proc`).
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { repoRoot } from "../support/cli.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-orphan-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The child pids of a process (Linux). */
const childrenOf = (pid: number): Array<number> => {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/).filter((s) => s !== "").map(Number)
    )
  } catch {
    return []
  }
}

/** CPU time a process has used, in seconds (user + system, clock ticks of 1/100 s). */
const cpuSeconds = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    // a zombie (not yet reaped) counts as gone
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

describe.runIf(process.platform === "linux")("extraction processes", () => {
  it("end when their parent is killed (SIGKILL) in the middle of an extraction", async () => {
    const words = ["lance", "arrow", "effect", "stream", "chunk", "index", "vector", "query", "retrieval", "embedding"]
    const parts: Array<string> = []
    for (let n = 0, i = 0; n < 40e6; i++) {
      const w = `${words[(i * 7 + 3) % words.length]}${i % 13 === 0 ? "\n" : " "}`
      parts.push(w)
      n += w.length
    }
    const big = join(root, "big.txt")
    writeFileSync(big, parts.join(""))
    const script = `
import { Effect } from "effect"
import { readFileSync } from "node:fs"
const LocalFiles = await import(${JSON.stringify(join(repoRoot, "dist", "engines", "documents", "LocalFiles.js"))})
const Upload = await import(${JSON.stringify(join(repoRoot, "dist", "api", "Upload.js"))})
const file = { name: "big.txt", data: readFileSync(${JSON.stringify(big)}) }
await Effect.runPromise(Effect.flatMap(Upload.Upload, (u) => u.extractChunks(file, {})).pipe(Effect.provide(LocalFiles.layer({}))))
`
    const parent = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: repoRoot, stdio: "ignore" })
    try {
      // progress, not a clock (a busy host only takes longer; the hang guard ends a wait that never does)
      let kids: Array<number> = []
      while (kids.length === 0) {
        await sleep(100)
        kids = childrenOf(parent.pid!)
      }
      expect(kids.length).toBeGreaterThan(0)
      // let it load and work on the text for a while (two seconds of its CPU time)
      while (kids.some((k) => alive(k) && cpuSeconds(k) < 2)) await sleep(100)
      expect(kids.every(alive)).toBe(true)
      const cpuAtKill = new Map(kids.map((k) => [k, cpuSeconds(k)]))
      parent.kill("SIGKILL")
      // each ends within a bound of its own CPU time, not of the wall clock: its watchdog thread
      // looks for a new parent every 100 ms, while its main thread goes on extracting (a busy
      // host stretches the wall time of both, not the CPU the extraction spends meanwhile)
      const cpuAfterKill = new Map<number, number>()
      while (kids.some(alive)) {
        for (const k of kids.filter(alive)) cpuAfterKill.set(k, cpuSeconds(k) - cpuAtKill.get(k)!)
        if ([...cpuAfterKill.values()].some((s) => s > 3)) break
        await sleep(50)
      }
      expect(kids.filter(alive), `extraction processes left running (CPU seconds since the kill: ${JSON.stringify([...cpuAfterKill])})`).toEqual([])
    } finally {
      parent.kill("SIGKILL")
    }
  }, 600_000)
})
