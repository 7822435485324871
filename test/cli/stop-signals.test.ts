/**
 * The stop signals of the command line when a file-system call holds the event loop's thread
 * pool (an `open` of a FIFO that no writer opens): `process.exit` would wait for that thread
 * for ever, so at the end of the grace the process ends by the signal itself (status 143).
 * The test runs the built `watchStopSignals` in a child process that blocks such a read.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { repoRoot } from "../support/cli.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-signals-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const script = (fifo: string) => `
import { open } from "node:fs"
const Shared = await import(${JSON.stringify(join(repoRoot, "dist", "cli", "options.js"))})
Shared.watchStopSignals(500)
open(${JSON.stringify(fifo)}, "r", () => {})
setInterval(() => {}, 1000)
setTimeout(() => process.stdout.write("ready\\n"), 100)
`

describe("stop signals", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} during a blocked read ends the process within the grace`, async () => {
      const fifo = join(root, `fifo-${signal}`)
      execFileSync("mkfifo", [fifo])
      const child = spawn(process.execPath, ["--input-type=module", "-e", script(fifo)], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] })
      let stderr = ""
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
      await new Promise<void>((resolve) => child.stdout.on("data", (d: Buffer) => d.toString().includes("ready") && resolve()))
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000)
      const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.on("exit", (code, sig) => resolve({ code, signal: sig }))
      )
      child.kill(signal)
      const { code, signal: by } = await ended
      clearTimeout(killer)
      // ended by the signal itself (a shell reports 128 + its number), never by the watchdog's SIGKILL
      expect(code === (signal === "SIGTERM" ? 143 : 130) || by === signal, `code ${code} signal ${by}`).toBe(true)
      expect(stderr).toContain(`stopped by ${signal}`)
    })
  }
})
