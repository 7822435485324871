/**
 * Runs extractions (and the chunking of embeddings mode) in child processes so that a parser
 * that hangs, loops or runs out of memory is bounded and the parent's event loop stays free:
 * each request has a time-out after which its process is killed (SIGKILL) and a fresh one is
 * started for the next request; each process has a heap limit, and a process whose memory
 * (RSS) has grown past a high-water mark is retired after its answer and replaced by a fresh
 * one. Processes are started lazily (the first request that needs one), reused, do not keep the
 * parent alive while idle, and exit after `idleMs` without work (a fresh one starts on demand).
 */
import { type ChildProcess, fork } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"
import { type Chunked, type ChunkRequest, ExtractFailure, type Extracted, type ExtractRequest } from "./types.js"

/** Settings of the process pool. */
export interface IsolateOptions {
  /** Processes run at once (default 1). */
  readonly concurrency: number
  /** Heap limit of each process in MiB (default 2048). */
  readonly memoryMb: number
  /**
   * Memory (RSS) in MiB after which a process is retired once it has answered (default 1024):
   * memory a decoder or OCR engine grew to is given back instead of kept for ever.
   */
  readonly recycleMb?: number | undefined
  /**
   * Milliseconds a process may stay idle before it exits (default 60 s): its memory is given
   * back once a run of documents that needed it is over.
   */
  readonly idleMs?: number | undefined
}

/** The default RSS high-water mark of an extraction process, in MiB. */
export const defaultRecycleMb = 1024

/** The default idle time after which an extraction process exits, in milliseconds. */
export const defaultIdleMs = 60_000

/** One process held for several requests in a row ({@link Isolate.lease}). */
export interface Lease {
  readonly slot: unknown
  readonly release: () => void
}

/** What a child is asked: an extraction or a chunking. */
type Work = { readonly req: ExtractRequest } | { readonly chunk: ChunkRequest }

type Reply =
  | { readonly id: number; readonly ok: true; readonly value: unknown; readonly rss?: number }
  | { readonly id: number; readonly ok: false; readonly reason: ExtractFailure["reason"]; readonly message: string; readonly rss?: number }

interface Slot {
  child: ChildProcess | undefined
  /** Resolves when the child has loaded the extractors. */
  ready: Promise<void>
  busy: boolean
  stderr: string
  /** Ends the idle process (set while it waits for work). */
  idle: ReturnType<typeof setTimeout> | undefined
}

/**
 * How long a fresh process may take to load (not counted in a request's time-out): a request
 * that starts one ends within this plus its time-out. Loading takes a fraction of a second on
 * an idle host and tens of seconds on a loaded one.
 */
export const startupMs = 60_000

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
      stderr: "",
      idle: undefined
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
      clearTimeout(free.idle)
      free.idle = undefined
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
      const child = slot.child
      if (child !== undefined) {
        slot.idle = setTimeout(() => {
          slot.idle = undefined
          if (slot.busy || slot.child !== child) return
          this.retire(slot, child)
          this.idledOut++
        }, this.options.idleMs ?? defaultIdleMs)
        slot.idle.unref()
      }
    }
  }

  /**
   * Extracts in a child process. Rejects with an {@link ExtractFailure}: `timeout` after
   * `timeoutMs`, `limit_exceeded` when the process runs out of memory, `processing_failed` when
   * it dies otherwise. `signal` aborts the request (the process is killed).
   */
  run(req: ExtractRequest, timeoutMs: number, signal?: AbortSignal, lease?: Lease): Promise<Extracted> {
    return this.work<Extracted>({ req }, timeoutMs, signal, lease)
  }

  /** Chunks pages in a child process, with the same time-out and failures as {@link run}. */
  chunk(chunk: ChunkRequest, timeoutMs: number, signal?: AbortSignal, lease?: Lease): Promise<Chunked> {
    return this.work<Chunked>({ chunk }, timeoutMs, signal, lease)
  }

  /**
   * Holds one process for several requests in a row (an extraction, then its chunking), so
   * that no other request is served between them. Release it exactly once.
   */
  async lease(): Promise<Lease> {
    if (this.closed) throw new ExtractFailure("processing_failed", "the local engine has been shut down")
    const slot = await this.acquire()
    let released = false
    return {
      slot,
      release: () => {
        if (released) return
        released = true
        this.release(slot)
      }
    }
  }

  private async work<A>(work: Work, timeoutMs: number, signal?: AbortSignal, lease?: Lease): Promise<A> {
    if (this.closed) throw new ExtractFailure("processing_failed", "the local engine has been shut down")
    const slot = (lease?.slot as Slot | undefined) ?? await this.acquire()
    try {
      if (!(slot.child && slot.child.connected)) this.spawn(slot)
      await slot.ready
      return await this.runOn<A>(slot, work, timeoutMs, signal)
    } finally {
      if (lease === undefined) this.release(slot)
    }
  }

  /** Retires a child that has grown past the high-water mark: it finishes and exits, a fresh one serves next. */
  private retireIfLarge(slot: Slot, child: ChildProcess, rss: number | undefined): void {
    const limit = (this.options.recycleMb ?? defaultRecycleMb) * 1024 * 1024
    if (rss === undefined || rss <= limit || slot.child !== child) return
    this.retire(slot, child)
    this.retired++
  }

  /** Ends a process: a fresh one serves the slot's next request. */
  private retire(slot: Slot, child: ChildProcess): void {
    slot.child = undefined
    // the child shuts its OCR worker down and exits when its channel closes; killed if it lingers
    child.disconnect()
    setTimeout(() => child.kill("SIGKILL"), 5_000).unref()
  }

  /** Processes retired at the high-water mark so far (for tests and reports). */
  retired = 0

  /** Processes that exited after `idleMs` without work so far (for tests and reports). */
  idledOut = 0

  private runOn<A>(slot: Slot, work: Work, timeoutMs: number, signal?: AbortSignal): Promise<A> {
    return new Promise<A>((resolve, reject) => {
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
        finish(() => {
          this.retireIfLarge(slot, child, reply.rss)
          return reply.ok ? resolve(reply.value as A) : reject(new ExtractFailure(reply.reason, reply.message))
        })
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
      child.send({ id, ...work }, (err) => {
        if (err) finish(() => reject(new ExtractFailure("processing_failed", `cannot reach the extraction process: ${err.message}`)))
      })
    })
  }

  /** Stops every process. */
  close(): void {
    this.closed = true
    for (const slot of this.slots) {
      clearTimeout(slot.idle)
      slot.child?.kill("SIGKILL")
      slot.child = undefined
    }
  }
}
