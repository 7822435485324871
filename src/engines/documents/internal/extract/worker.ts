/**
 * Entry of an extraction child process (see `isolate.ts`): answers `{ id, req }` messages with
 * `{ id, ok: true, value }` or `{ id, ok: false, reason, message }`. Anything that escapes an
 * extractor (an uncaught exception inside a library) is reported for the request in flight,
 * then the process exits and the parent starts a fresh one.
 *
 * The process never outlives its parent: it exits at once when the IPC channel closes, and a
 * watchdog thread checks the parent pid every 100 ms and kills the process (SIGKILL) when the
 * parent is gone, so that an extraction busy in a synchronous loop (which keeps the
 * `disconnect` event from running) is ended too.
 */
import { Worker } from "node:worker_threads"
import { chunkPages } from "../chunk/chunker.js"
import { type TiktokenEncoding, tiktoken, type Tokenizer } from "../chunk/tokenizer.js"
import { extractDocument, toFailure } from "./index.js"
import type { Chunked, ChunkRequest, ExtractRequest } from "./types.js"

type Message =
  | { readonly id: number; readonly req: ExtractRequest; readonly chunk?: undefined }
  | { readonly id: number; readonly chunk: ChunkRequest; readonly req?: undefined }

const tokenizers = new Map<TiktokenEncoding, Promise<Tokenizer>>()

/** Chunks pages with a tiktoken encoding (loaded once per process). */
const chunk = async (req: ChunkRequest): Promise<Chunked> => {
  let tokenizer = tokenizers.get(req.encoding)
  if (tokenizer === undefined) {
    tokenizer = tiktoken(req.encoding)
    tokenizers.set(req.encoding, tokenizer)
  }
  return chunkPages(req.pages, { size: req.size, overlap: req.overlap }, await tokenizer)
}

/** The memory this process holds (bytes), sent with every answer so the parent can recycle it. */
const rss = () => process.memoryUsage.rss()

let inFlight: number | undefined

const send = (message: unknown) =>
  new Promise<void>((resolve) => {
    if (!process.send) return resolve()
    process.send(message, undefined, undefined, () => resolve())
  })

const die = async (e: unknown) => {
  const f = toFailure(e)
  if (inFlight !== undefined) {
    await send({ id: inFlight, ok: false, reason: f.reason === "corrupt" ? "processing_failed" : f.reason, message: `the extractor crashed: ${f.message}` })
  }
  process.exit(1)
}

process.on("uncaughtException", (e) => void die(e))
process.on("unhandledRejection", (e) => void die(e))
// the parent let go (a retired or idle process) or died: nothing here is worth finishing
process.on("disconnect", () => process.exit(0))

/** The watchdog thread: SIGKILL to this process once its parent pid changed (the parent died). */
const watchdog = `
const { workerData } = require("node:worker_threads")
setInterval(() => {
  if (process.ppid !== workerData) process.kill(process.pid, "SIGKILL")
}, 100)
`
if (process.send !== undefined) {
  new Worker(watchdog, { eval: true, workerData: process.ppid, stdout: false, stderr: false }).unref()
}
process.on("message", (raw) => {
  const message = raw as Message
  const { id } = message
  inFlight = id
  const work: Promise<unknown> = message.chunk !== undefined ? chunk(message.chunk) : extractDocument(message.req)
  work.then(
    (value) => send({ id, ok: true, value, rss: rss() }),
    (e) => {
      const f = toFailure(e)
      return send({ id, ok: false, reason: f.reason, message: f.message, rss: rss() })
    }
  ).finally(() => {
    if (inFlight === id) inFlight = undefined
  })
})

// tell the parent the extractors are loaded: its time-outs count from here, not from start-up
void Promise.all([import("./pdf.js"), import("./docx.js"), import("./sheet.js")]).finally(() => {
  void send({ ready: true })
})
