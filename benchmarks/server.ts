/**
 * `npm run bench:server [-- --runs N] [--only upload,form,concurrency,embeddings,floor]`
 * (`-- --soak [--seconds N]`: the soak of `server-soak.ts` instead): the
 * self-hosted server (src/server/Server.ts) over real loopback HTTP, offline. The server and
 * its clients (the library's own remote clients) run in this one Node process, so every
 * request's client and server work share one event loop; the document engine's extractions
 * run in its child processes (`LocalFiles.layer()`, process isolation).
 *
 * Parts:
 * - `upload`: each `expect: ok` fixture of shared/fixtures/docs/manifest.json that is not an
 *   image (no OCR), standard mode (`extract`, default options), one warm-up then `--runs N`
 *   (default 3) runs of (a) the engine called in-process and (b) the remote `Upload` client
 *   against the server serving that same engine instance, alternating a/b; plus (c) the same
 *   upload to a server whose engine answers a constant empty result at once (the cost of the
 *   request, the multipart parse into memory, without extraction or a large answer).
 *   Per format: the sum of the per-file medians of each, the overhead b−a, MB/s.
 * - `form`: what an upload costs the server without extraction, per file size (1 KiB to 8 MiB):
 *   (a) the server's multipart reader (`internal/form.ts`: limits, budget, parse into memory)
 *   on the body bytes from a stream in this process, (b) `POST /upload` with plain `fetch` and
 *   a `FormData` to a server whose engine answers at once, one request at a time, and (c) the
 *   small-request floor `GET /v1/models` with plain `fetch` on the same server, and (d) (b) with
 *   the multipart bytes encoded once beforehand (the client's encoding left out). (b) − (c) is
 *   what the upload path adds to a request; (a) is the server's share of it.
 * - `concurrency`: 16 concurrent uploads of pdf/TAMReview.pdf through servers with
 *   `maxConcurrentUploads` 1, 2 and 4 in front of one engine with 4 extraction processes (so
 *   the server's bound is the only thing that changes), and 4 in front of the default engine
 *   (1 process, what `effect-rag serve` runs): wall time, requests/s, per-request latency.
 * - `embeddings`: USE-lite (`UseLiteEmbeddings.make()`, on this thread) called in-process vs
 *   `POST /v1/embeddings` through the remote `Embeddings` client (base64 vectors, the client's
 *   default), batches of 1 and 32 short texts, one request at a time, alternating; up to 100
 *   requests per series (fewer when a series passes its time budget).
 * - `floor`: `GET /v1/models` (a `Models.layerList` service), 500 requests at concurrency 8,
 *   through the library's `Models` client and through plain `fetch`.
 *
 * The remote clients run with `maxRetries: 0`, so no figure hides a retry. Prints a table per
 * part and writes `benchmarks/results/server.json` (figures, settings, node version, cores, load
 * average at start and end, peak RSS of this process; the extraction processes not included).
 */
import { Context, Effect, Layer, Logger, LogLevel, type Scope } from "effect"
import { readFileSync } from "node:fs"
import type { IncomingMessage } from "node:http"
import { Readable } from "node:stream"
import { cpus, loadavg, totalmem } from "node:os"
import { basename, join } from "node:path"
import * as Embeddings from "../src/api/Embeddings.js"
import * as ApiHttp from "../src/api/ApiHttp.js"
import * as Models from "../src/api/Models.js"
import * as Upload from "../src/api/Upload.js"
import * as LocalFiles from "../src/engines/documents/LocalFiles.js"
import * as UseLiteEmbeddings from "../src/engines/models/UseLiteEmbeddings.js"
import { sharedPath } from "../src/internal/shared.js"
import * as RagConfig from "../src/RagConfig.js"
import * as FormBody from "../src/server/internal/form.js"
import * as FormState from "../src/server/internal/state.js"
import * as Server from "../src/server/Server.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"
import { median } from "../src/bench/Metrics.js"

// `--soak`: the mixed load of good and hostile requests instead (benchmarks/server-soak.ts)
if (process.argv.includes("--soak")) await import("./server-soak.js")

// =============================================================================
// Settings
// =============================================================================

const parts = ["upload", "form", "concurrency", "embeddings", "floor"] as const
type Part = (typeof parts)[number]

const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : undefined
}
const runs = Math.max(1, Math.floor(Number(flag("runs") ?? "3")) || 3)
const onlyArg = flag("only")
const only = onlyArg === undefined ? [...parts] : onlyArg.split(",").map((s) => s.trim()).filter((s) => s !== "")
const unknown = only.filter((p) => !(parts as ReadonlyArray<string>).includes(p))
if (unknown.length > 0) {
  console.error(`--only: unknown part(s) ${unknown.join(", ")}; expected some of ${parts.join(",")}`)
  process.exit(2)
}
const want = (p: Part) => only.includes(p)

const concurrencyFile = "pdf/TAMReview.pdf"
const concurrentUploads = 16
const uploadBounds = [1, 2, 4] as const
const engineProcesses = 4
const embedBatches = [1, 32] as const
const embedRequests = 100
/** Per embeddings series (in-process and remote together): stop early past this. */
const embedBudgetMs = 30_000
const floorRequests = 500
const floorConcurrency = 8
const floorWarmup = 50

interface Entry {
  readonly path: string
  readonly format: string
  readonly expect: string
}

const docs = sharedPath("fixtures", "docs")
const manifest = (JSON.parse(readFileSync(join(docs, "manifest.json"), "utf8")) as { files: Array<Entry> }).files
const isImage = (format: string) => format === "png" || format === "jpg" || format === "jpeg"

const fixture = (path: string): Upload.UploadFile => {
  const raw = readFileSync(join(docs, path))
  return { name: basename(path), data: new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) }
}

// =============================================================================
// Helpers
// =============================================================================

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits

/** Nearest-rank percentile. */
const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!
}

const latency = (ms: ReadonlyArray<number>) => ({
  n: ms.length,
  p50Ms: round(percentile(ms, 0.5), 2),
  p95Ms: round(percentile(ms, 0.95), 2),
  maxMs: round(Math.max(...ms), 2),
  meanMs: round(ms.reduce((a, b) => a + b, 0) / ms.length, 2)
})

/** Runs an effect and gives its duration in ms with its value. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const t0 = performance.now()
    const value = yield* effect
    return { ms: performance.now() - t0, value }
  })

const progress = (text: string) => process.stderr.write(text)

/** Prints a table: the first `left` columns left-aligned, the others right-aligned. */
const printTable = (
  title: string,
  header: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  notes: ReadonlyArray<string> = [],
  left = 1
) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i < left ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  console.log(`\n${title}`)
  console.log(line(header))
  console.log(widths.map((w) => "-".repeat(w)).join("  "))
  for (const r of rows) console.log(line(r))
  for (const n of notes) console.log(`  ${n}`)
}

/** Starts the server on a free loopback port with the given services; its base URL. */
const serve = <R, E>(services: Layer.Layer<R, E>, options: Server.ListenOptions = {}) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(Server.layer({ ...options, port: 0 }).pipe(Layer.provide(services)))
    return yield* Effect.provide(Server.baseUrl, ctx)
  })

/**
 * The library's HTTP client pointed at a server (both hosts). The key is only there because
 * some calls require one to be configured; the server is open and ignores it.
 */
const clientLayer = (url: string) =>
  ApiHttp.layer.pipe(Layer.provide(RagConfig.layer({ baseUrl: url, uploadUrl: url, apiKey: "bench-unused-key", maxRetries: 0 })))

/** A built `Upload` engine as a layer, so the server serves that same instance. */
const engineLayer = (engine: Upload.Service) => Layer.succeed(Upload.Upload, engine)

const buildEngine = (options: LocalFiles.Options = {}): Effect.Effect<Upload.Service, never, Scope.Scope> =>
  Effect.map(Layer.build(LocalFiles.layer(options)), (ctx) => Context.get(ctx, Upload.Upload))

// =============================================================================
// Part 1: upload overhead
// =============================================================================

interface UploadFileRow {
  file: string
  format: string
  bytes: number
  responseBytes: number
  sameContent: boolean
  inProcessMs: number
  httpMs: number
  overheadMs: number
  nullEngineMs: number
  /** max − min of the in-process runs: the run-to-run noise. */
  inProcessSpreadMs: number
  inProcessRunsMs: Array<number>
  httpRunsMs: Array<number>
}

interface UploadFormatRow {
  format: string
  files: number
  bytes: number
  responseBytes: number
  inProcessMs: number
  httpMs: number
  overheadMs: number
  overheadPercent: number
  nullEngineMs: number
  inProcessSpreadMs: number
}

const nullEngine = Upload.Upload.of({
  extract: () => Effect.succeed({ status: true, content: "", type: "text", error: "" }),
  files: () => Effect.succeed({ status: true, content: "", type: "text", error: "" }),
  extractChunks: () => Effect.die(new Error("not used"))
})

const uploadPart = Effect.gen(function*() {
  const entries = manifest.filter((e) => e.expect === "ok" && !isImage(e.format))
  const engine = yield* buildEngine()
  const url = yield* serve(engineLayer(engine))
  const nullUrl = yield* serve(Layer.succeed(Upload.Upload, nullEngine))
  const remote = yield* Effect.provide(Upload.make, clientLayer(url))
  const remoteNull = yield* Effect.provide(Upload.make, clientLayer(nullUrl))
  const files: Array<UploadFileRow> = []
  for (const e of entries) {
    const file = fixture(e.path)
    progress(`upload ${e.path} `)
    // warm-up: starts the extraction process (first file), loads the format's parser, opens the sockets
    const direct = yield* engine.extract(file)
    const viaServer = yield* remote.extract(file)
    yield* remoteNull.extract(file)
    const a: Array<number> = []
    const b: Array<number> = []
    const c: Array<number> = []
    for (let i = 0; i < runs; i++) {
      a.push((yield* timed(engine.extract(file))).ms)
      b.push((yield* timed(remote.extract(file))).ms)
      c.push((yield* timed(remoteNull.extract(file))).ms)
    }
    const row: UploadFileRow = {
      file: e.path,
      format: e.format,
      bytes: file.data.byteLength,
      responseBytes: Buffer.byteLength(JSON.stringify(direct)),
      sameContent: direct.content === viaServer.content,
      inProcessMs: round(median(a), 2),
      httpMs: round(median(b), 2),
      overheadMs: round(median(b) - median(a), 2),
      nullEngineMs: round(median(c), 2),
      inProcessSpreadMs: round(Math.max(...a) - Math.min(...a), 2),
      inProcessRunsMs: a.map((x) => round(x, 2)),
      httpRunsMs: b.map((x) => round(x, 2))
    }
    files.push(row)
    progress(`${Math.round(row.inProcessMs)} / ${Math.round(row.httpMs)} ms\n`)
  }
  const formats: Array<UploadFormatRow> = []
  for (const format of [...new Set(files.map((f) => f.format))]) {
    const list = files.filter((f) => f.format === format)
    const sum = (k: "bytes" | "responseBytes" | "inProcessMs" | "httpMs" | "nullEngineMs" | "inProcessSpreadMs") => list.reduce((n, f) => n + f[k], 0)
    formats.push({
      format,
      files: list.length,
      bytes: sum("bytes"),
      responseBytes: sum("responseBytes"),
      inProcessMs: round(sum("inProcessMs"), 1),
      httpMs: round(sum("httpMs"), 1),
      overheadMs: round(sum("httpMs") - sum("inProcessMs"), 1),
      overheadPercent: round(((sum("httpMs") - sum("inProcessMs")) / sum("inProcessMs")) * 100, 1),
      nullEngineMs: round(sum("nullEngineMs"), 1),
      inProcessSpreadMs: round(sum("inProcessSpreadMs"), 1)
    })
  }
  const total = (k: "bytes" | "responseBytes" | "inProcessMs" | "httpMs" | "nullEngineMs" | "inProcessSpreadMs") => formats.reduce((n, f) => n + f[k], 0)
  const totals = {
    files: files.length,
    bytes: total("bytes"),
    responseBytes: total("responseBytes"),
    inProcessMs: round(total("inProcessMs"), 1),
    httpMs: round(total("httpMs"), 1),
    overheadMs: round(total("httpMs") - total("inProcessMs"), 1),
    overheadPercent: round(((total("httpMs") - total("inProcessMs")) / total("inProcessMs")) * 100, 1),
    nullEngineMs: round(total("nullEngineMs"), 1),
    inProcessSpreadMs: round(total("inProcessSpreadMs"), 1),
    inProcessMBps: round(total("bytes") / 1e6 / (total("inProcessMs") / 1000), 2),
    httpMBps: round(total("bytes") / 1e6 / (total("httpMs") / 1000), 2),
    allSameContent: files.every((f) => f.sameContent)
  }
  printTable(
    `1. Upload overhead: standard mode, median of ${runs} runs per file after a warm-up; ms = sum over the format's files`,
    ["format", "files", "MB in", "MB out", "in-process ms", "HTTP ms", "overhead ms", "overhead %", "null-engine ms", "in-process spread ms"],
    [...formats, { format: "total", ...totals }].map((r) => [
      r.format,
      String(r.files),
      (r.bytes / 1e6).toFixed(3),
      (r.responseBytes / 1e6).toFixed(3),
      r.inProcessMs.toFixed(1),
      r.httpMs.toFixed(1),
      r.overheadMs.toFixed(1),
      r.overheadPercent.toFixed(1),
      r.nullEngineMs.toFixed(1),
      r.inProcessSpreadMs.toFixed(1)
    ]),
    [
      `throughput: in-process ${totals.inProcessMBps.toFixed(2)} MB/s, through the server ${totals.httpMBps.toFixed(2)} MB/s (input bytes / summed medians)`,
      `MB out: the JSON result; null-engine: the same upload to a server whose engine answers an empty result at once`,
      `in-process spread: max − min of the in-process runs, summed: an overhead smaller than it (even negative) is within the noise`,
      `same extracted content through the wire as in-process: ${totals.allSameContent ? "yes, every file" : files.filter((f) => !f.sameContent).map((f) => f.file).join(", ") + " DIFFER"}`
    ]
  )
  return { options: "extract(file) with default options", engine: "LocalFiles.layer() (process isolation, 1 extraction process), one instance for both paths", formats, totals, files }
}).pipe(Effect.scoped)

// =============================================================================
// Part 1b: the upload path without extraction, per file size
// =============================================================================

const formSizes = [
  { label: "1 KiB", bytes: 1024, requests: 300 },
  { label: "64 KiB", bytes: 64 * 1024, requests: 200 },
  { label: "1 MiB", bytes: 1024 * 1024, requests: 60 },
  { label: "8 MiB", bytes: 8 * 1024 * 1024, requests: 15 }
] as const

/** A multipart body as `fetch` would send it: the file and two option fields. */
const multipartBody = async (data: Uint8Array) => {
  const form = new FormData()
  form.set("file", new Blob([data], { type: "text/plain" }), "doc.txt")
  form.set("enable_ocr", "false")
  form.set("text_only", "true")
  const request = new Request("http://127.0.0.1/", { method: "POST", body: form })
  return { contentType: request.headers.get("content-type")!, body: new Uint8Array(await request.arrayBuffer()), form }
}

/** The server's form reader on `body`, streamed from memory in 64 KiB pieces (as a socket delivers it). */
const readFormOnce = (contentType: string, body: Uint8Array) =>
  Effect.scoped(Effect.gen(function*() {
    const pieces: Array<Buffer> = []
    for (let i = 0; i < body.byteLength; i += 65536) pieces.push(Buffer.from(body.buffer, body.byteOffset + i, Math.min(65536, body.byteLength - i)))
    const source = Object.assign(Readable.from(pieces), { headers: { "content-length": String(body.byteLength) } })
    const form = yield* FormBody.read("POST /upload", source as unknown as IncomingMessage, contentType, {
      maxParts: 32,
      maxFieldBytes: 4096,
      maxPartBytes: Upload.maxFileBytes + 65536,
      maxBodyBytes: Upload.maxFileBytes + 65536,
      idleMs: 30_000
    }, FormState.budget(256 * 1024 * 1024))
    if (form.files.get("file")?.[0] === undefined) throw new Error("form: the file part was not read")
  }))

const formPart = Effect.gen(function*() {
  const url = yield* serve(Layer.merge(Layer.succeed(Upload.Upload, nullEngine), Models.layerList(modelList)))
  type Latency = ReturnType<typeof latency>
  const rows: Array<{ size: string; bytes: number; requests: number; formReader: Latency; upload: Latency; uploadEncoded: Latency; floor: Latency; addedMs: number; addedEncodedMs: number }> = []
  for (const size of formSizes) {
    progress(`form ${size.label} `)
    const data = new Uint8Array(size.bytes).fill(0x61)
    const { body, contentType, form } = yield* Effect.promise(() => multipartBody(data))
    const upload = async () => {
      const res = await fetch(`${url}/upload`, { method: "POST", body: form })
      const answer = (await res.json()) as { status: boolean }
      if (res.status !== 200 || answer.status !== true) throw new Error(`POST /upload: ${res.status}`)
    }
    // the same bytes encoded once beforehand: the client's FormData encoding left out
    const uploadEncoded = async () => {
      const res = await fetch(`${url}/upload`, { method: "POST", body, headers: { "content-type": contentType } })
      const answer = (await res.json()) as { status: boolean }
      if (res.status !== 200 || answer.status !== true) throw new Error(`POST /upload: ${res.status}`)
    }
    const floor = async () => {
      const res = await fetch(`${url}/v1/models`)
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`GET /v1/models: ${res.status}`)
    }
    const a: Array<number> = []
    const b: Array<number> = []
    const c: Array<number> = []
    const d: Array<number> = []
    const warm = Math.max(3, Math.floor(size.requests / 10))
    for (let i = 0; i < warm + size.requests; i++) {
      // interleaved, so load changes hit the three series alike
      const t0 = performance.now()
      yield* readFormOnce(contentType, body)
      const t1 = performance.now()
      yield* Effect.promise(upload)
      const t2 = performance.now()
      yield* Effect.promise(floor)
      const t3 = performance.now()
      yield* Effect.promise(uploadEncoded)
      const t4 = performance.now()
      if (i >= warm) {
        a.push(t1 - t0)
        b.push(t2 - t1)
        c.push(t3 - t2)
        d.push(t4 - t3)
      }
    }
    const row = {
      size: size.label,
      bytes: body.byteLength,
      requests: size.requests,
      formReader: latency(a),
      upload: latency(b),
      uploadEncoded: latency(d),
      floor: latency(c),
      addedMs: round(median(b) - median(c), 2),
      addedEncodedMs: round(median(d) - median(c), 2)
    }
    rows.push(row)
    progress(`${row.upload.p50Ms} ms\n`)
  }
  printTable(
    "1b. The upload path without extraction: POST /upload (plain fetch, FormData) to an engine that answers at once, one at a time",
    ["file", "requests", "form reader p50 ms", "POST /upload p50 ms", "p95 ms", "pre-encoded p50 ms", "GET /v1/models p50 ms", "added p50 ms", "added, pre-encoded p50 ms"],
    rows.map((r) => [
      r.size,
      String(r.requests),
      r.formReader.p50Ms.toFixed(2),
      r.upload.p50Ms.toFixed(2),
      r.upload.p95Ms.toFixed(2),
      r.uploadEncoded.p50Ms.toFixed(2),
      r.floor.p50Ms.toFixed(2),
      r.addedMs.toFixed(2),
      r.addedEncodedMs.toFixed(2)
    ]),
    [
      "form reader: internal/form.ts on the same body streamed from memory (the server's multipart work: limits, budget, parse into memory; no temporary file)",
      "pre-encoded: the same multipart bytes, encoded once beforehand, sent as a Uint8Array body (the client's FormData encoding left out)",
      "added: POST /upload p50 − GET /v1/models p50 (client body encoding, transfer over loopback, form reading, answer)"
    ]
  )
  return { rows }
}).pipe(Effect.scoped)

// =============================================================================
// Part 2: upload concurrency
// =============================================================================

interface ConcurrencyRow {
  maxConcurrentUploads: number
  engineProcesses: number
  uploads: number
  wallMs: number
  requestsPerSecond: number
  latency: ReturnType<typeof latency>
}

const burst = (remote: Upload.Service, file: Upload.UploadFile) =>
  Effect.gen(function*() {
    const t0 = performance.now()
    const times = yield* Effect.all(
      Array.from({ length: concurrentUploads }, () => Effect.map(timed(remote.extract(file)), (r) => r.ms)),
      { concurrency: "unbounded" }
    )
    return { wallMs: performance.now() - t0, times }
  })

const concurrencyCase = (engine: Upload.Service, processes: number, bound: number, file: Upload.UploadFile) =>
  Effect.gen(function*() {
    progress(`concurrency: maxConcurrentUploads ${bound}, ${processes} engine process(es) `)
    const url = yield* serve(engineLayer(engine), { maxConcurrentUploads: bound })
    const remote = yield* Effect.provide(Upload.make, clientLayer(url))
    yield* remote.extract(file) // warm-up: the sockets, the route
    const { times, wallMs } = yield* burst(remote, file)
    progress(`${Math.round(wallMs)} ms\n`)
    return {
      maxConcurrentUploads: bound,
      engineProcesses: processes,
      uploads: concurrentUploads,
      wallMs: round(wallMs, 1),
      requestsPerSecond: round((concurrentUploads / wallMs) * 1000, 2),
      latency: latency(times)
    } satisfies ConcurrencyRow
  }).pipe(Effect.scoped)

/** Builds an engine and starts all its extraction processes (concurrent warm-up calls). */
const warmEngine = (processes: number, file: Upload.UploadFile) =>
  Effect.gen(function*() {
    const engine = yield* buildEngine({ concurrency: processes })
    yield* Effect.all(Array.from({ length: processes }, () => engine.extract(file)), { concurrency: "unbounded" })
    return engine
  })

const concurrencyPart = Effect.gen(function*() {
  const file = fixture(concurrencyFile)
  const rows: Array<ConcurrencyRow> = []
  const reference = yield* Effect.scoped(Effect.gen(function*() {
    const engine = yield* warmEngine(engineProcesses, file)
    for (const bound of uploadBounds) rows.push(yield* concurrencyCase(engine, engineProcesses, bound, file))
    // one extraction alone, in-process, for reference
    return (yield* timed(engine.extract(file))).ms
  }))
  rows.push(
    yield* Effect.scoped(Effect.gen(function*() {
      const engine = yield* warmEngine(1, file)
      return yield* concurrencyCase(engine, 1, 4, file)
    }))
  )
  printTable(
    `2. Upload concurrency: ${concurrentUploads} concurrent uploads of ${concurrencyFile} (${(file.data.byteLength / 1e6).toFixed(2)} MB), standard mode`,
    ["maxConcurrentUploads", "engine processes", "wall s", "req/s", "p50 ms", "p95 ms", "max ms"],
    rows.map((r) => [
      String(r.maxConcurrentUploads),
      String(r.engineProcesses),
      (r.wallMs / 1000).toFixed(2),
      r.requestsPerSecond.toFixed(2),
      r.latency.p50Ms.toFixed(0),
      r.latency.p95Ms.toFixed(0),
      r.latency.maxMs.toFixed(0)
    ]),
    [
      `one in-process extraction of the file, after the burst: ${reference.toFixed(0)} ms; ${cpus().length} cores`,
      `latency: per request, from the client's call (queueing at the server's bound included)`,
      `the last row is the default engine (1 extraction process), as \`effect-rag serve\` runs it`
    ]
  )
  return { file: concurrencyFile, bytes: file.data.byteLength, uploads: concurrentUploads, singleInProcessMs: round(reference, 1), rows }
})

// =============================================================================
// Part 3: embeddings
// =============================================================================

const subjects = ["The cat", "A committee", "The river", "Our new library", "The telescope", "A small bakery", "The election", "This protein"]
const verbs = ["changed", "measured", "described", "ignored", "improved", "delayed", "explained", "reviewed"]
const objects = ["the budget for next year", "the morning light", "three old maps", "the results of the trial", "a quiet street", "the water level", "an unusual signal", "the final report"]
/** 32 distinct short sentences. */
const shortTexts = Array.from({ length: 32 }, (_, i) => `${subjects[i % 8]} ${verbs[(i * 3 + 1) % 8]} ${objects[(i * 5 + 2) % 8]}.`)

interface EmbedRow {
  batch: number
  requests: number
  inProcess: ReturnType<typeof latency> & { requestsPerSecond: number; textsPerSecond: number }
  http: ReturnType<typeof latency> & { requestsPerSecond: number; textsPerSecond: number }
  overheadP50Ms: number
}

const embeddingsPart = Effect.gen(function*() {
  progress("embeddings: loading USE-lite ")
  const load = yield* timed(UseLiteEmbeddings.make())
  const local = load.value
  progress(`${Math.round(load.ms)} ms\n`)
  const url = yield* serve(Layer.succeed(Embeddings.Embeddings, local))
  const remote = yield* Effect.provide(Embeddings.make({ model: local.defaultModel, dimension: local.dimension }), clientLayer(url))
  const rows: Array<EmbedRow> = []
  for (const size of embedBatches) {
    const batchAt = (i: number) => Array.from({ length: size }, (_, k) => shortTexts[(i * size + k) % shortTexts.length]!)
    // warm-up
    for (let i = 0; i < 3; i++) {
      yield* local.embed(batchAt(i))
      yield* remote.embed(batchAt(i))
    }
    const a: Array<number> = []
    const b: Array<number> = []
    const t0 = performance.now()
    for (let i = 0; i < embedRequests && performance.now() - t0 < embedBudgetMs; i++) {
      const batch = batchAt(i)
      const direct = yield* timed(local.embed(batch))
      const viaServer = yield* timed(remote.embed(batch))
      if (viaServer.value.vectors.length !== size || direct.value.vectors.length !== size) {
        return yield* Effect.die(new Error(`embeddings: expected ${size} vectors`))
      }
      a.push(direct.ms)
      b.push(viaServer.ms)
    }
    const stats = (ms: Array<number>) => {
      const l = latency(ms)
      return { ...l, requestsPerSecond: round(1000 / l.meanMs, 1), textsPerSecond: round((1000 / l.meanMs) * size, 1) }
    }
    const row: EmbedRow = { batch: size, requests: a.length, inProcess: stats(a), http: stats(b), overheadP50Ms: round(median(b) - median(a), 2) }
    rows.push(row)
    progress(`embeddings: batch ${size}: ${a.length} requests each way\n`)
  }
  printTable(
    `3. Embeddings: USE-lite in-process vs POST /v1/embeddings (remote client, base64), one request at a time`,
    ["batch", "path", "requests", "req/s", "texts/s", "p50 ms", "p95 ms"],
    rows.flatMap((r) =>
      ([["in-process", r.inProcess], ["HTTP", r.http]] as const).map(([path, s]) => [
        String(r.batch),
        path,
        String(s.n),
        s.requestsPerSecond.toFixed(1),
        s.textsPerSecond.toFixed(1),
        s.p50Ms.toFixed(2),
        s.p95Ms.toFixed(2)
      ])
    ),
    [
      ...rows.map((r) => `batch ${r.batch}: HTTP overhead at p50 ${r.overheadP50Ms.toFixed(2)} ms`),
      `USE-lite loaded in ${(load.ms / 1000).toFixed(1)} s; it runs on this thread (concurrency 1), as do the server and the client; req/s = 1000 / mean latency`
    ],
    2
  )
  return { model: local.defaultModel, loadMs: round(load.ms, 0), encoding: "base64", budgetMsPerSeries: embedBudgetMs, rows }
}).pipe(Effect.scoped)

// =============================================================================
// Part 4: small-request floor
// =============================================================================

const modelList: ReadonlyArray<Models.ModelRecord> = [
  { id: UseLiteEmbeddings.modelId, object: "model", owned_by: "effect-rag", type: "embedding" }
]

/** `n` calls of `call` at `concurrency`, each timed; the wall time too. */
const pool = (n: number, concurrency: number, call: () => Promise<unknown>) =>
  Effect.promise(async () => {
    const times: Array<number> = []
    let next = 0
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++
          const s = performance.now()
          await call()
          times.push(performance.now() - s)
        }
      })
    )
    return { wallMs: performance.now() - t0, times }
  })

const floorPart = Effect.gen(function*() {
  const url = yield* serve(Models.layerList(modelList))
  const client = yield* Effect.provide(Models.make, clientLayer(url))
  const viaClient = () =>
    Effect.runPromise(client.list).then((r) => {
      if (r.data.length !== 1) throw new Error("GET /v1/models: unexpected list")
    })
  const viaFetch = async () => {
    const res = await fetch(`${url}/v1/models`)
    const body = (await res.json()) as { data: Array<unknown> }
    if (res.status !== 200 || body.data.length !== 1) throw new Error("GET /v1/models: unexpected answer")
  }
  const rows: Array<{ client: string; requests: number; concurrency: number; wallMs: number; requestsPerSecond: number; latency: ReturnType<typeof latency> }> = []
  for (const [name, call] of [["Models client (ApiHttp)", viaClient], ["plain fetch", viaFetch]] as const) {
    progress(`floor: ${name} `)
    yield* pool(floorWarmup, floorConcurrency, call)
    const { times, wallMs } = yield* pool(floorRequests, floorConcurrency, call)
    progress(`${Math.round(wallMs)} ms\n`)
    rows.push({
      client: name,
      requests: floorRequests,
      concurrency: floorConcurrency,
      wallMs: round(wallMs, 1),
      requestsPerSecond: round((floorRequests / wallMs) * 1000, 0),
      latency: latency(times)
    })
  }
  printTable(
    `4. Small-request floor: GET /v1/models, ${floorRequests} requests at concurrency ${floorConcurrency} (after ${floorWarmup} warm-up)`,
    ["client", "req/s", "p50 ms", "p95 ms", "max ms"],
    rows.map((r) => [r.client, r.requestsPerSecond.toFixed(0), r.latency.p50Ms.toFixed(2), r.latency.p95Ms.toFixed(2), r.latency.maxMs.toFixed(2)])
  )
  return { rows }
}).pipe(Effect.scoped)

// =============================================================================
// Main
// =============================================================================

const loadStart = loadavg().map((x) => round(x, 2))
const started = performance.now()
console.log(
  `bench:server: server and clients in ONE Node process (${process.version}, ${cpus().length} cores), real HTTP over loopback 127.0.0.1; ` +
    `load average at start ${loadStart.join(" ")}; parts: ${only.join(",")}; runs ${runs}`
)

const program = Effect.gen(function*() {
  const upload = want("upload") ? yield* uploadPart : undefined
  const form = want("form") ? yield* formPart : undefined
  const concurrency = want("concurrency") ? yield* concurrencyPart : undefined
  const embeddings = want("embeddings") ? yield* embeddingsPart : undefined
  const floor = want("floor") ? yield* floorPart : undefined
  return { upload, form, concurrency, embeddings, floor }
}).pipe(Logger.withMinimumLogLevel(LogLevel.Warning))

const results = await Effect.runPromise(program)
const wallSeconds = round((performance.now() - started) / 1000, 1)
const loadEnd = loadavg().map((x) => round(x, 2))
const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024)

console.log(
  `\nwall ${wallSeconds} s; peak RSS ${peakRssMb} MB (this process; the extraction child processes not included); ` +
    `load average at start ${loadStart.join(" ")}, at end ${loadEnd.join(" ")}`
)

const out = writeReport(resultsPath("server"), {
  ...runInfo(),
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  totalMemMiB: Math.round(totalmem() / 1024 / 1024),
  loadAverageStart: loadStart,
  loadAverageEnd: loadEnd,
  peakRssMb,
  wallSeconds,
  setup: "server and clients in one Node process, real HTTP over loopback (127.0.0.1); remote clients with maxRetries 0",
  settings: {
    parts: only,
    runs,
    concurrencyFile,
    concurrentUploads,
    uploadBounds,
    engineProcesses,
    embedBatches,
    embedRequests,
    embedBudgetMs,
    floorRequests,
    floorConcurrency
  },
  ...results
})
console.log(`wrote ${out}`)
