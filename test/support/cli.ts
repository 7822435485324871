/**
 * Runs the real `effect-rag` command line (from source, through tsx) in a child process.
 */
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The repository root. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

/** What a CLI run printed and how it exited. */
export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `effect-rag ...args` with the given extra environment (the parent's `EFFECT_RAG_*`
 * variables are removed first, so the test controls the configuration).
 */
export const runCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: { readonly cwd?: string; readonly timeoutMs?: number } = {}
): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_")))
    const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "src/cli/main.ts"), ...args], {
      cwd: options.cwd ?? repoRoot,
      env: { ...base, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** Starts `effect-rag serve --port 0 ...`; resolves with its URL once it listens. */
export const startServe = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<{ url: string; stop: () => Promise<number | null>; output: () => string }>((resolve, reject) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_")))
    const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "src/cli/main.ts"), "serve", "--port", "0", ...args], {
      cwd: repoRoot,
      env: { ...base, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`serve did not start: ${out}`))
    }, 60_000)
    const onData = (d: Buffer) => {
      out += d.toString()
      const m = /Listening on (http:\/\/[\d.]+:\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve({
          url: m[1]!,
          output: () => out,
          stop: () =>
            new Promise((done) => {
              child.on("close", (code) => done(code))
              child.kill("SIGTERM")
            })
        })
      }
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    child.on("close", (code) => reject(new Error(`serve exited with ${code}: ${out}`)))
  })
/** A running built CLI: its output so far, a way to send it a signal, and how it ended. */
export interface BuiltCli {
  readonly stdout: () => string
  readonly stderr: () => string
  readonly kill: (signal: NodeJS.Signals) => void
  readonly done: Promise<CliResult>
}

/**
 * Runs the built command line (`bin/effect-rag.js` over `dist/`, as `npx effect-rag` runs it)
 * with the given extra environment; `npm ci` builds `dist` (`prepare`), `npm run build` after
 * a change. The parent's `EFFECT_RAG_*` variables are removed first.
 */
export const spawnBuiltCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: { readonly cwd?: string; readonly timeoutMs?: number } = {}
): BuiltCli => {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_")))
  const child = spawn(process.execPath, [join(repoRoot, "bin", "effect-rag.js"), ...args], {
    cwd: options.cwd ?? repoRoot,
    env: { ...base, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  const done = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 90_000)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
  return { stdout: () => stdout, stderr: () => stderr, kill: (signal) => void child.kill(signal), done }
}

/** Runs the built command line to its end (see {@link spawnBuiltCli}). */
export const runBuiltCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: { readonly cwd?: string; readonly timeoutMs?: number } = {}
): Promise<CliResult> => spawnBuiltCli(args, env, options).done
