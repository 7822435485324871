/**
 * Tokenising for USE-lite: its SentencePiece tokenizer is pure JavaScript and slow on long
 * texts, while the encoder reads only the first 128 tokens.
 */

/** The tokenizer of `@energetic-ai/embeddings`. */
export interface Tokenizer {
  encode(text: string): Array<number>
}

/**
 * The first `maxTokens` token ids of a text without tokenising all of it: every space starts a
 * new SentencePiece token, so the text up to its `maxTokens`-th space holds at least
 * `maxTokens` tokens, segmented as in the whole text. When the cut text yields fewer (pieces
 * made of several spaces), the whole text is tokenised.
 */
export const encodeHead = (tokenizer: Tokenizer, text: string, maxTokens: number): Array<number> => {
  let at = -1
  for (let n = 0; n < maxTokens; n++) {
    at = text.indexOf(" ", at + 1)
    if (at === -1) return tokenizer.encode(text)
  }
  const head = tokenizer.encode(text.slice(0, at))
  return head.length >= maxTokens ? head.slice(0, maxTokens) : tokenizer.encode(text)
}


// -----------------------------------------------------------------------------
// Worker threads: the WebAssembly backend runs on one thread, so more than one pass at a time
// needs more than one thread. Each worker loads its own copy of the model.
// -----------------------------------------------------------------------------

/**
 * The worker's code, plain JavaScript evaluated by `new Worker(code, { eval: true })` so that it
 * runs the same from the TypeScript sources (tsx, vitest) and from the compiled package. Its
 * tokenising is {@link encodeHead}; the test suite checks both paths give the same vectors.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads")
const core = require(workerData.core)
const embeddings = require(workerData.embeddings)
const source = require(workerData.source)
const encodeHead = (tokenizer, text, maxTokens) => {
  let at = -1
  for (let n = 0; n < maxTokens; n++) {
    at = text.indexOf(" ", at + 1)
    if (at === -1) return tokenizer.encode(text)
  }
  const head = tokenizer.encode(text.slice(0, at))
  return head.length >= maxTokens ? head.slice(0, maxTokens) : tokenizer.encode(text)
}
embeddings.initModel(source.modelSource).then((use) => {
  parentPort.postMessage({ ready: true })
  parentPort.on("message", async ({ id, texts, maxTokens, dimension }) => {
    let indices, values
    try {
      const positions = []
      const ids = []
      texts.forEach((t, row) => {
        let enc = encodeHead(use.tokenizer, t, maxTokens)
        if (enc.length === 0) enc = use.tokenizer.encode(" ").slice(0, maxTokens)
        enc.forEach((v, col) => { positions.push([row, col]); ids.push(v) })
      })
      indices = core.tensor2d(positions, [positions.length, 2], "int32")
      values = core.tensor1d(ids, "int32")
      const out = await use.model.executeAsync({ indices, values })
      const tensor = Array.isArray(out) ? out[0] : out
      const shape = tensor.shape
      const data = Float32Array.from(await tensor.data())
      tensor.dispose()
      if (shape[0] !== texts.length || shape[1] !== dimension) {
        throw new Error("the model returned shape [" + shape.join(", ") + "] for " + texts.length + " texts")
      }
      parentPort.postMessage({ id, data, tokens: ids.length }, [data.buffer])
    } catch (e) {
      parentPort.postMessage({ id, error: String(e && e.message || e) })
    } finally {
      if (indices) indices.dispose()
      if (values) values.dispose()
    }
  })
}, (e) => parentPort.postMessage({ ready: false, error: String(e && e.message || e) }))
`

/** Resolved entry files of the three packages, handed to the workers. */
export interface PackagePaths {
  readonly core: string
  readonly embeddings: string
  readonly source: string
}

/** A pool of model workers: `run` sends one batch to a free worker. */
export interface WorkerPool {
  readonly run: (texts: ReadonlyArray<string>) => Promise<{ readonly vectors: Array<Float32Array>; readonly tokens: number }>
  readonly close: () => Promise<void>
}

/** Starts `size` workers and waits until each has loaded the model. */
export const startPool = async (
  size: number,
  paths: PackagePaths,
  settings: { readonly maxTokens: number; readonly dimension: number }
): Promise<WorkerPool> => {
  const { Worker } = await import("node:worker_threads")
  type Pending = { resolve: (r: { vectors: Array<Float32Array>; tokens: number }) => void; reject: (e: Error) => void; count: number }
  const pending = new Map<number, Pending>()
  const workers = Array.from({ length: size }, () => new Worker(workerSource, { eval: true, workerData: paths }))
  const free: Array<(typeof workers)[number]> = []
  const waiting: Array<(w: (typeof workers)[number] | undefined) => void> = []
  let next = 0
  const release = (w: (typeof workers)[number]) => {
    const waiter = waiting.shift()
    if (waiter !== undefined) waiter(w)
    else free.push(w)
  }
  try {
    await Promise.all(workers.map((w) =>
      new Promise<void>((resolve, reject) => {
        w.once("error", reject)
        w.once("message", (m: { ready: boolean; error?: string }) =>
          m.ready ? resolve() : reject(new Error(m.error ?? "the worker could not load the model")))
      })
    ))
  } catch (e) {
    await Promise.all(workers.map((w) => w.terminate()))
    throw e
  }
  let alive = workers.length
  for (const w of workers) {
    w.on("message", (m: { id: number; data?: Float32Array; tokens?: number; error?: string }) => {
      const p = pending.get(m.id)
      if (p === undefined) return
      pending.delete(m.id)
      release(w)
      if (m.error !== undefined || m.data === undefined) p.reject(new Error(m.error ?? "no data"))
      else {
        const vectors = Array.from({ length: p.count }, (_, i) => m.data!.slice(i * settings.dimension, (i + 1) * settings.dimension))
        p.resolve({ vectors, tokens: m.tokens ?? 0 })
      }
    })
    // A worker that dies fails what is in flight and leaves the pool; with none left, calls fail.
    w.on("error", (e) => {
      alive--
      for (const p of pending.values()) p.reject(e)
      pending.clear()
      const i = free.indexOf(w)
      if (i !== -1) free.splice(i, 1)
      if (alive === 0) for (const waiter of waiting.splice(0)) waiter(undefined)
    })
    free.push(w)
  }
  const acquire = () =>
    new Promise<(typeof workers)[number] | undefined>((resolve) => {
      const w = free.shift()
      if (w !== undefined) resolve(w)
      else if (alive === 0) resolve(undefined)
      else waiting.push(resolve)
    })
  return {
    run: async (texts) => {
      const w = await acquire()
      if (w === undefined) throw new Error("every USE-lite worker thread has stopped")
      const id = next++
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, count: texts.length })
        w.postMessage({ id, texts, maxTokens: settings.maxTokens, dimension: settings.dimension })
      })
    },
    close: async () => {
      await Promise.all(workers.map((w) => w.terminate()))
    }
  }
}
