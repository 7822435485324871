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

/** Where a run starts and when it is killed. */
interface RunOptions {
  readonly cwd?: string
  readonly timeoutMs?: number
}

/** The parent's environment without its `EFFECT_RAG_*` variables, so the test controls the configuration. */
const cleanEnv = (env: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_"))),
  NO_COLOR: "1",
  ...env
})

/** Spawns `node ...entry ...args`, collecting its output; killed after `timeoutMs`. */
const spawnCli = (
  entry: ReadonlyArray<string>,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  options: RunOptions,
  defaultTimeoutMs: number
): BuiltCli => {
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: options.cwd ?? repoRoot,
    env: cleanEnv(env),
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  const done = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? defaultTimeoutMs)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
  return { stdout: () => stdout, stderr: () => stderr, kill: (signal) => void child.kill(signal), done }
}

/** The command line from source, through tsx. */
const fromSource = ["--import", "tsx", join(repoRoot, "src/cli/main.ts")]

/**
 * Runs `effect-rag ...args` from source with the given extra environment (the parent's
 * `EFFECT_RAG_*` variables are removed first, so the test controls the configuration).
 */
export const runCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: RunOptions = {}
): Promise<CliResult> => spawnCli(fromSource, args, env, options, 60_000).done

/** Starts `effect-rag serve --port 0 ...`; resolves with its URL once it listens. */
export const startServe = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<{ url: string; pid: number; stop: () => Promise<number | null>; output: () => string }>((resolve, reject) => {
    const child = spawn(process.execPath, [...fromSource, "serve", "--port", "0", ...args], {
      cwd: repoRoot,
      env: cleanEnv(env),
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
          pid: child.pid!,
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
 * with the given extra environment; `npm test` builds `dist` first (`npm run build` after a change
 * when running vitest alone). The parent's `EFFECT_RAG_*` variables are removed first.
 */
export const spawnBuiltCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: RunOptions = {}
): BuiltCli => spawnCli([join(repoRoot, "bin", "effect-rag.js")], args, env, options, 90_000)

/** Runs the built command line to its end (see {@link spawnBuiltCli}). */
export const runBuiltCli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: RunOptions = {}
): Promise<CliResult> => spawnBuiltCli(args, env, options).done

/**
 * Resolves once `worker` (an `effect-rag worker`) has printed `count` `ingested …` lines; rejects
 * when it ends before. Progress, not a clock: a slow or busy host only takes longer.
 */
export const untilWritten = (worker: BuiltCli, count: number): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    let ended = false
    const end = () => void (ended = true)
    worker.done.then(end, end)
    const written = () => worker.stderr().split("\n").filter((l) => l.startsWith("ingested ")).length
    const poll = setInterval(() => {
      if (written() >= count) {
        clearInterval(poll)
        resolve()
      } else if (ended) {
        clearInterval(poll)
        reject(new Error(`the worker ended after writing ${written()} of ${count} documents: ${worker.stderr().slice(-2000)}`))
      }
    }, 50)
  })
