/**
 * Runs extractions in child processes so that a parser that hangs, loops or runs out of memory
 * is bounded: each request has a time-out after which its process is killed (SIGKILL) and a
 * fresh one is started for the next request; each process has a heap limit. Processes are
 * started lazily, reused, and do not keep the parent alive while idle.
 */
import { type ChildProcess, fork } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"
import { ExtractFailure, type Extracted, type ExtractRequest } from "./types.js"

/** Settings of the process pool. */
export interface IsolateOptions {
  /** Processes run at once (default 1). */
  readonly concurrency: number
  /** Heap limit of each process in MiB (default 2048). */
  readonly memoryMb: number
}

type Reply =
  | { readonly id: number; readonly ok: true; readonly value: Extracted }
  | { readonly id: number; readonly ok: false; readonly reason: ExtractFailure["reason"]; readonly message: string }

interface Slot {
  child: ChildProcess | undefined
  /** Resolves when the child has loaded the extractors. */
  ready: Promise<void>
  busy: boolean
  stderr: string
}

/** How long a fresh process may take to load (not counted in a request's time-out). */
const startupMs = 60_000

/** The entry file and loader flags: the TypeScript source runs through tsx in development and tests. */
const entry = (): { file: string; execArgv: Array<string> } => {
  const self = import.meta.url
  if (self.endsWith(".ts")) {
    const tsx = pathToFileURL(createRequire(self).resolve("tsx")).href
    return { file: fileURLToPath(new URL("./worker.ts", self)), execArgv: ["--import", tsx] }
  }
  return { file: fileURLToPath(new URL("./worker.js", self)), execArgv: [] }
}

/** A pool of extraction processes. */
export class Isolate {
  private readonly slots: Array<Slot>
  private readonly waiting: Array<(slot: Slot) => void> = []
  private nextId = 0
  private closed = false

  constructor(private readonly options: IsolateOptions) {
    this.slots = Array.from({ length: Math.max(1, options.concurrency) }, () => ({
      child: undefined,
      ready: Promise.resolve(),
      busy: false,
      stderr: ""
    }))
  }

  private spawn(slot: Slot): ChildProcess {
    const { execArgv, file } = entry()
    const child = fork(file, [], {
      execArgv: [...execArgv, `--max-old-space-size=${this.options.memoryMb}`],
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      env: { ...process.env, NODE_OPTIONS: "" }
    })
    child.stderr?.setEncoding("utf8")
    child.stderr?.on("data", (d: string) => {
      slot.stderr = (slot.stderr + d).slice(-4000)
    })
    child.on("exit", () => {
      if (slot.child === child) slot.child = undefined
    })
    child.on("error", () => undefined)
    slot.child = child
    slot.stderr = ""
    slot.ready = new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        child.off("message", onReady)
        child.off("exit", done)
        resolve()
      }
      const onReady = (m: unknown) => {
        if ((m as { ready?: boolean })?.ready) done()
      }
      const timer = setTimeout(done, startupMs)
      child.on("message", onReady)
      child.on("exit", done)
    })
    return child
  }

  private acquire(): Promise<Slot> {
    const free = this.slots.find((s) => !s.busy)
    if (free) {
      free.busy = true
      return Promise.resolve(free)
    }
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  private release(slot: Slot): void {
    const next = this.waiting.shift()
    if (next) next(slot)
    else {
      slot.busy = false
      // idle: let the parent exit if nothing else keeps it alive
      slot.child?.unref()
      ;(slot.child as unknown as { channel?: { unref?: () => void } } | undefined)?.channel?.unref?.()
    }
  }

  /**
   * Extracts in a child process. Rejects with an {@link ExtractFailure}: `timeout` after
   * `timeoutMs`, `limit_exceeded` when the process runs out of memory, `processing_failed` when
   * it dies otherwise. `signal` aborts the request (the process is killed).
   */
  async run(req: ExtractRequest, timeoutMs: number, signal?: AbortSignal): Promise<Extracted> {
    if (this.closed) throw new ExtractFailure("processing_failed", "the local engine has been shut down")
    const slot = await this.acquire()
    try {
      if (!(slot.child && slot.child.connected)) this.spawn(slot)
      await slot.ready
      return await this.runOn(slot, req, timeoutMs, signal)
    } finally {
      this.release(slot)
    }
  }

  private runOn(slot: Slot, req: ExtractRequest, timeoutMs: number, signal?: AbortSignal): Promise<Extracted> {
    return new Promise<Extracted>((resolve, reject) => {
      if (signal?.aborted) return reject(new ExtractFailure("timeout", "the extraction was interrupted"))
      const child = slot.child && slot.child.connected ? slot.child : this.spawn(slot)
      child.ref()
      ;(child as unknown as { channel?: { ref?: () => void } }).channel?.ref?.()
      const id = ++this.nextId
      let done = false
      const finish = (f: () => void) => {
        if (done) return
        done = true
        clearTimeout(timer)
        child.off("message", onMessage)
        child.off("exit", onExit)
        signal?.removeEventListener("abort", onAbort)
        f()
      }
      const kill = () => {
        if (slot.child === child) slot.child = undefined
        child.kill("SIGKILL")
      }
      const onMessage = (raw: unknown) => {
        const reply = raw as Reply
        if (reply.id !== id) return
        finish(() =>
          reply.ok ? resolve(reply.value) : reject(new ExtractFailure(reply.reason, reply.message))
        )
      }
      const onExit = (code: number | null, sig: string | null) =>
        finish(() => {
          const oom = /heap out of memory|allocation failed/i.test(slot.stderr)
          reject(
            oom
              ? new ExtractFailure("limit_exceeded", `the document needs more than ${this.options.memoryMb} MiB of memory`)
              : new ExtractFailure("processing_failed", `the extraction process died (${sig ?? `exit code ${code}`})`)
          )
        })
      const onAbort = () =>
        finish(() => {
          kill()
          reject(new ExtractFailure("timeout", "the extraction was interrupted"))
        })
      const timer = setTimeout(
        () =>
          finish(() => {
            kill()
            reject(new ExtractFailure("timeout", `the extraction did not finish within ${Math.round(timeoutMs / 100) / 10} s`))
          }),
        timeoutMs
      )
      child.on("message", onMessage)
      child.on("exit", onExit)
      signal?.addEventListener("abort", onAbort)
      child.send({ id, req }, (err) => {
        if (err) finish(() => reject(new ExtractFailure("processing_failed", `cannot reach the extraction process: ${err.message}`)))
      })
    })
  }

  /** Stops every process. */
  close(): void {
    this.closed = true
    for (const slot of this.slots) {
      slot.child?.kill("SIGKILL")
      slot.child = undefined
    }
  }
}
