/**
 * Entry of an extraction child process (see `isolate.ts`): answers `{ id, req }` messages with
 * `{ id, ok: true, value }` or `{ id, ok: false, reason, message }`. Anything that escapes an
 * extractor (an uncaught exception inside a library) is reported for the request in flight,
 * then the process exits and the parent starts a fresh one.
 */
import { extractDocument, toFailure } from "./index.js"
import { shutdownOcr } from "./ocr.js"
import type { ExtractRequest } from "./types.js"

interface Message {
  readonly id: number
  readonly req: ExtractRequest
}

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
process.on("disconnect", () => {
  void shutdownOcr().finally(() => process.exit(0))
})
process.on("message", (raw) => {
  const { id, req } = raw as Message
  inFlight = id
  extractDocument(req).then(
    (value) => send({ id, ok: true, value }),
    (e) => {
      const f = toFailure(e)
      return send({ id, ok: false, reason: f.reason, message: f.message })
    }
  ).finally(() => {
    if (inFlight === id) inFlight = undefined
  })
})

// tell the parent the extractors are loaded: its time-outs count from here, not from start-up
void Promise.all([import("./pdf.js"), import("./docx.js"), import("./sheet.js")]).finally(() => {
  void send({ ready: true })
})
