/**
 * `npm run bench:server -- --soak [--seconds N] [--embedder use-lite|none] [--extract-timeout-ms N] [--no-crawl]`:
 * a bounded mixed load of good and hostile requests against `effect-rag serve` (the real
 * command, in a child process, started from source on a free loopback port, with
 * `--extract-timeout-ms` 10000 unless given), for `--seconds` (default 60).
 *
 * - Good clients (4 loops, one request at a time each): `GET /v1/models`, standard uploads of
 *   small fixtures (JSON, CSV, HTML, a one-page PDF), an embeddings-mode upload of the JSON
 *   fixture, and `POST /v1/embeddings` of 8 texts when an embedder is served. Each must be a
 *   200; anything else counts as an error.
 * - Hostile clients (2 loops): a 32 MiB JSON body streamed to `/v1/scrape`, 5,000-deep JSON,
 *   a PNG claiming 100000×100000 pixels with OCR, a 64 KiB one-word text in embeddings mode
 *   (slow to tokenise), a field over 4 KiB after the file part, 40 parts, a sender that stalls
 *   (abandoned after 2 s), a scrape of `http://[::127.0.0.1]/`, a crawl pattern RE2 refuses
 *   (look-behind), and 2,000 embeddings inputs. Each must get its 4xx/5xx wire answer (or, for the staller, none
 *   before it gives up); a connection reset or a 200 counts as an error.
 * - Large-page crawls (1 loop, unless `--no-crawl`): a loopback site of 60 pages of 4-8 MB of
 *   HTML text (`test/engines/web/large-site.ts`); each round crawls it through `/v2/crawl`
 *   (limit 61), polling the first batch every 500 ms and then paging through every `next`,
 *   then through `/v1/crawl`, cancelled once 6 pages are in. A round must see every page, no
 *   status response over 10.1 MiB, and an empty status after the cancel. The server then runs
 *   with `--allow-private` (the site is on loopback), so the `[::127.0.0.1]` scrape is refused
 *   by the connection (nothing listens on port 80) instead of the address policy.
 *
 * Reports requests served (good, hostile), latency of the good ones (p50, p99, max), errors,
 * and the peak RSS of the server process and of its process tree (server plus extraction
 * processes, sampled every 500 ms). Writes `benchmarks/results/server-soak.json`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import * as http from "node:http"
import { loadavg } from "node:os"
import { basename, join } from "node:path"
import { packageRoot, sharedPath } from "../src/internal/shared.js"
import { type LargeSite, startLargeSite } from "../test/engines/web/large-site.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"

// =============================================================================
// Settings
// =============================================================================

const flag = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : undefined
}
const seconds = Math.max(5, Number(flag("seconds") ?? "60") || 60)
const embedder = flag("embedder") ?? "use-lite"
/**
 * The server's per-file extraction time-out (`--extract-timeout-ms`). A hostile document holds
 * an extraction process for at most this long, so it bounds how long good uploads can wait.
 */
const extractTimeoutMs = Number(flag("extract-timeout-ms") ?? "10000") || 10_000
/** A good request not answered within this long counts as an error. */
const goodGiveUpMs = 60_000
const goodLoops = 4
const hostileLoops = 2
/** The large-page crawl load (one loop). */
const crawlLoad = !process.argv.includes("--no-crawl")

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits
const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!
}

// =============================================================================
// The server
// =============================================================================

const startServe = (): Promise<{ url: string; child: ChildProcess }> =>
  new Promise((resolve, reject) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EFFECT_RAG_")))
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(packageRoot(), "src/cli/main.ts"), "serve", "--port", "0", "--embedder", embedder, "--extract-timeout-ms", String(extractTimeoutMs), ...(crawlLoad ? ["--allow-private"] : [])],
      { env: { ...env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] }
    )
    let out = ""
    const onData = (d: Buffer) => {
      out += d.toString()
      const m = /Listening on (http:\/\/[\d.]+:\d+)/.exec(out)
      if (m) resolve({ url: m[1]!, child })
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}: ${out.slice(-2000)}`)))
  })

/** `VmHWM` (peak RSS) and `VmRSS` of a process, in KiB; zeros when it is gone. */
const memoryOf = (pid: number): { peak: number; rss: number } => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
    return { peak: kib("VmHWM"), rss: kib("VmRSS") }
  } catch {
    return { peak: 0, rss: 0 }
  }
}

/** The pids of a process and all its descendants (Linux `/proc/<pid>/task/<tid>/children`). */
const tree = (pid: number): Array<number> => {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    try {
      const p = out[i]!
      for (const tid of readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/)) {
        if (tid !== "") out.push(Number(tid))
      }
    } catch {
      // gone
    }
  }
  return out
}

// =============================================================================
// Requests
// =============================================================================

interface Answer {
  readonly status: number
  readonly body: string
}

/** One request with `node:http`; the body written in pieces; `giveUpMs` aborts it (status 0). */
const request = (
  url: string,
  method: string,
  headers: Record<string, string>,
  body: AsyncIterable<Uint8Array> | undefined,
  giveUpMs = goodGiveUpMs
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false })
    let settled = false
    const timer = setTimeout(() => {
      settled = true
      req.destroy()
      resolve({ status: 0, body: "" })
    }, giveUpMs)
    req.on("response", (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        settled = true
        clearTimeout(timer)
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") })
      })
    })
    req.on("error", (e) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      reject(e)
    })
    void (async () => {
      if (body !== undefined) {
        for await (const chunk of body) {
          if (settled || req.destroyed) return
          if (!req.write(chunk)) await new Promise<void>((r) => req.once("drain", () => r()))
        }
      }
      if (!req.destroyed && !settled) req.end()
    })().catch(() => undefined)
  })

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes
}

const encoder = new TextEncoder()
const boundary = "----soak-boundary"
const multipart = { "content-type": `multipart/form-data; boundary=${boundary}` }
const json = { "content-type": "application/json" }

const form = (parts: ReadonlyArray<readonly [string, string] | readonly [string, string, Uint8Array]>): Uint8Array => {
  const pieces: Array<Uint8Array> = []
  for (const part of parts) {
    const head = part.length === 3
      ? `--${boundary}\r\nContent-Disposition: form-data; name="${part[0]}"; filename="${part[1]}"\r\n\r\n`
      : `--${boundary}\r\nContent-Disposition: form-data; name="${part[0]}"\r\n\r\n`
    pieces.push(encoder.encode(head), part.length === 3 ? part[2] : encoder.encode(part[1]), encoder.encode("\r\n"))
  }
  pieces.push(encoder.encode(`--${boundary}--\r\n`))
  return new Uint8Array(Buffer.concat(pieces))
}

const fixture = (path: string) => new Uint8Array(readFileSync(sharedPath("fixtures", "docs", path)))

/** A PNG header claiming `w`×`h` pixels (its body is not needed: nothing may decode it). */
const pngClaiming = (w: number, h: number): Uint8Array => {
  const ihdr = Buffer.alloc(25)
  ihdr.writeUInt32BE(13, 0)
  ihdr.write("IHDR", 4, "latin1")
  ihdr.writeUInt32BE(w, 8)
  ihdr.writeUInt32BE(h, 12)
  ihdr[16] = 8
  return new Uint8Array(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr, Buffer.alloc(160)]))
}

// =============================================================================
// The mix
// =============================================================================

type Kind = { readonly name: string; readonly run: (url: string) => Promise<boolean> }

const ok = (a: Answer) => a.status === 200
const refused = (a: Answer) => a.status >= 400 && a.status < 600 && a.body.length > 0

const uploads = ["json/us_presidents.json", "csv/country-codes.csv", "html/wikipedia-mozilla.html", "pdf/helloworld-bad-xref.pdf"]
  .map((p) => ({ name: basename(p), bytes: form([["file", basename(p), fixture(p)]]) }))
const embeddingsUpload = form([["file", "us_presidents.json", fixture("json/us_presidents.json")], ["extract_mode", "embeddings"]])

const good = (withEmbedder: boolean): Array<Kind> => [
  { name: "GET /v1/models", run: (url) => request(`${url}/v1/models`, "GET", {}, undefined).then(ok) },
  ...uploads.map((u): Kind => ({ name: `upload ${u.name}`, run: (url) => request(`${url}/upload`, "POST", multipart, once(u.bytes)).then(ok) })),
  { name: "upload embeddings mode", run: (url) => request(`${url}/upload`, "POST", multipart, once(embeddingsUpload)).then(ok) },
  ...(withEmbedder
    ? [{
      name: "POST /v1/embeddings ×8",
      run: (url: string) =>
        request(`${url}/v1/embeddings`, "POST", json, once(encoder.encode(JSON.stringify({ model: "universal-sentence-encoder-lite", input: Array.from({ length: 8 }, (_, i) => `sentence number ${i} about proteins`) })))).then(ok)
    }]
    : [])
]

async function* bigJson(): AsyncGenerator<Uint8Array> {
  yield encoder.encode(`{"url":"http://example.com/","x":"`)
  const chunk = new Uint8Array(65536).fill(0x61)
  for (let i = 0; i < 512; i++) yield chunk
}

async function* stall(): AsyncGenerator<Uint8Array> {
  yield form([["file", "slow.txt", new Uint8Array(100)]]).subarray(0, 200)
  await new Promise(() => {})
}

const hostile: Array<Kind> = [
  { name: "32 MiB JSON body", run: (url) => request(`${url}/v1/scrape`, "POST", json, bigJson()).then((a) => a.status === 413) },
  { name: "5,000-deep JSON", run: (url) => request(`${url}/v1/scrape`, "POST", json, once(encoder.encode(`{"url":${"[".repeat(5000)}${"]".repeat(5000)}}`))).then((a) => a.status === 400) },
  { name: "PNG bomb with OCR", run: (url) => request(`${url}/upload`, "POST", multipart, once(form([["file", "bomb.png", pngClaiming(100_000, 100_000)], ["enable_ocr", "true"]]))).then((a) => a.status === 400) },
  { name: "slow-to-tokenise text", run: (url) => request(`${url}/upload`, "POST", multipart, once(form([["file", "run.txt", new Uint8Array(64 * 1024).fill(0x61)], ["extract_mode", "embeddings"]]))).then((a) => a.status === 200 || refused(a)) },
  { name: "long field after the file", run: (url) => request(`${url}/upload`, "POST", multipart, once(form([["file", "a.txt", encoder.encode("a")], ["x", "y".repeat(5000)]]))).then((a) => a.status === 400) },
  { name: "40 parts", run: (url) => request(`${url}/upload`, "POST", multipart, once(form([["file", "a.txt", encoder.encode("a")], ...Array.from({ length: 40 }, (_, i) => [`f${i}`, "1"] as const)]))).then((a) => a.status === 400) },
  { name: "stalled sender (abandoned at 2 s)", run: (url) => request(`${url}/upload`, "POST", multipart, stall(), 2_000).then((a) => a.status === 0 || a.status === 408) },
  { name: "scrape http://[::127.0.0.1]/", run: (url) => request(`${url}/v1/scrape`, "POST", json, once(encoder.encode(JSON.stringify({ url: "http://[::127.0.0.1]/" })))).then(refused) },
  { name: "crawl with a look-behind pattern", run: (url) => request(`${url}/v1/crawl`, "POST", json, once(encoder.encode(JSON.stringify({ url: "http://example.invalid/", excludePaths: ["(?<=a)b"] })))).then((a) => a.status === 400) },
  { name: "2,000 embeddings inputs", run: (url) => request(`${url}/v1/embeddings`, "POST", json, once(encoder.encode(JSON.stringify({ model: "m", input: Array.from({ length: 2000 }, () => "x") })))).then(refused) }
]

// =============================================================================
// Large-page crawls
// =============================================================================

/** Bytes of pages in one status response (the default `--crawl-page-bytes`) and the record around them. */
const statusBound = 10 * 1024 * 1024 + 64 * 1024

interface CrawlTally {
  rounds: number
  errors: number
  pagesRead: number
  markdownBytes: number
  statusResponses: number
  largestStatusBytes: number
  readonly problems: Array<string>
}
const crawlTally: CrawlTally = { rounds: 0, errors: 0, pagesRead: 0, markdownBytes: 0, statusResponses: 0, largestStatusBytes: 0, problems: [] }

interface Status {
  readonly status: string
  readonly total: number
  readonly completed: number
  readonly next?: string
  readonly data: ReadonlyArray<{ markdown?: string; metadata: { sourceURL?: string } }>
}

const statusOf = async (link: string): Promise<Status> => {
  const a = await request(link, "GET", {}, undefined)
  if (a.status !== 200) throw new Error(`GET ${link}: ${a.status} ${a.body.slice(0, 200)}`)
  const bytes = Buffer.byteLength(a.body)
  crawlTally.statusResponses++
  crawlTally.largestStatusBytes = Math.max(crawlTally.largestStatusBytes, bytes)
  if (bytes > statusBound) throw new Error(`a status response of ${bytes} bytes`)
  return JSON.parse(a.body) as Status
}

const startCrawl = async (url: string, path: string, site: LargeSite): Promise<string> => {
  const a = await request(`${url}${path}`, "POST", json, once(encoder.encode(JSON.stringify({ url: site.start, limit: site.pages + 1 }))))
  if (a.status !== 200) throw new Error(`POST ${path}: ${a.status} ${a.body.slice(0, 200)}`)
  return (JSON.parse(a.body) as { id: string }).id
}

/** One round: a v2 crawl read to the end, a v1 crawl cancelled midway. */
const crawlRound = async (url: string, site: LargeSite) => {
  const v2 = await startCrawl(url, "/v2/crawl", site)
  let first = await statusOf(`${url}/v2/crawl/${v2}`)
  while (first.status === "scraping") {
    await new Promise((r) => setTimeout(r, 500))
    first = await statusOf(`${url}/v2/crawl/${v2}`)
  }
  const seen = new Set<string>()
  for (let page: Status | undefined = first; page !== undefined; page = page.next === undefined ? undefined : await statusOf(page.next)) {
    for (const d of page.data) {
      seen.add(d.metadata.sourceURL ?? "")
      crawlTally.markdownBytes += d.markdown?.length ?? 0
    }
  }
  crawlTally.pagesRead += seen.size
  if (first.status !== "completed" || seen.size !== site.pages + 1) throw new Error(`v2 crawl ${first.status} with ${seen.size} pages`)
  const v1 = await startCrawl(url, "/v1/crawl", site)
  for (let s = await statusOf(`${url}/v1/crawl/${v1}`); s.status === "scraping" && s.total < 6; s = await statusOf(`${url}/v1/crawl/${v1}`)) {
    await new Promise((r) => setTimeout(r, 500))
  }
  await request(`${url}/v1/crawl/${v1}`, "DELETE", {}, undefined)
  const after = await statusOf(`${url}/v1/crawl/${v1}`)
  if (after.status !== "cancelled" || after.data.length > 0) throw new Error(`v1 crawl after cancel: ${after.status}, ${after.data.length} pages`)
}

const crawlLoop = async (url: string, site: LargeSite) => {
  while (Date.now() < deadline) {
    try {
      await crawlRound(url, site)
      crawlTally.rounds++
    } catch (e) {
      crawlTally.errors++
      crawlTally.problems.push(String(e))
    }
  }
}

// =============================================================================
// Main
// =============================================================================

const loadStart = loadavg().map((x) => round(x, 2))
console.log(`bench:server --soak: ${seconds} s of ${goodLoops} good and ${hostileLoops} hostile client loops${crawlLoad ? " and 1 large-page crawl loop" : ""} against effect-rag serve --embedder ${embedder} --extract-timeout-ms ${extractTimeoutMs}${crawlLoad ? " --allow-private" : ""}; load average at start ${loadStart.join(" ")}`)
const site = crawlLoad ? await startLargeSite({ pages: 60 }) : undefined
const { child, url } = await startServe()
const pid = child.pid!
const models = JSON.parse((await request(`${url}/v1/models`, "GET", {}, undefined)).body) as { data: Array<unknown> }
const goodKinds = good(models.data.length > 0)

let treePeakKiB = 0
const sampler = setInterval(() => {
  const total = tree(pid).reduce((sum, p) => sum + memoryOf(p).rss, 0)
  treePeakKiB = Math.max(treePeakKiB, total)
}, 500)

interface Tally {
  served: number
  errors: number
  readonly latencies: Array<number>
  readonly errorsByKind: Map<string, number>
  readonly latenciesByKind: Map<string, Array<number>>
}
const tally = (): Tally => ({ served: 0, errors: 0, latencies: [], errorsByKind: new Map(), latenciesByKind: new Map() })
const goodTally = tally()
const hostileTally = tally()
const deadline = Date.now() + seconds * 1000

const loop = async (kinds: ReadonlyArray<Kind>, t: Tally, offset: number) => {
  for (let i = offset; Date.now() < deadline; i++) {
    const kind = kinds[i % kinds.length]!
    const start = performance.now()
    let fine = false
    try {
      fine = await kind.run(url)
    } catch {
      fine = false
    }
    const ms = performance.now() - start
    t.latencies.push(ms)
    t.latenciesByKind.set(kind.name, [...(t.latenciesByKind.get(kind.name) ?? []), ms])
    if (fine) t.served++
    else {
      t.errors++
      t.errorsByKind.set(kind.name, (t.errorsByKind.get(kind.name) ?? 0) + 1)
    }
  }
}

const started = performance.now()
await Promise.all([
  ...Array.from({ length: goodLoops }, (_, i) => loop(goodKinds, goodTally, i)),
  ...Array.from({ length: hostileLoops }, (_, i) => loop(hostile, hostileTally, i * 5)),
  ...(site !== undefined ? [crawlLoop(url, site)] : [])
])
const wallSeconds = round((performance.now() - started) / 1000, 1)
clearInterval(sampler)
const serverPeakMiB = round(memoryOf(pid).peak / 1024, 0)
const alive = await request(`${url}/v1/models`, "GET", {}, undefined).then(ok, () => false)
child.kill("SIGTERM")
await site?.close()
const loadEnd = loadavg().map((x) => round(x, 2))

const good99 = round(percentile(goodTally.latencies, 0.99), 1)
const rows = [
  ["good", String(goodTally.served + goodTally.errors), String(goodTally.errors), round(percentile(goodTally.latencies, 0.5), 1).toFixed(1), good99.toFixed(1), round(Math.max(...goodTally.latencies), 1).toFixed(1)],
  ["hostile", String(hostileTally.served + hostileTally.errors), String(hostileTally.errors), round(percentile(hostileTally.latencies, 0.5), 1).toFixed(1), round(percentile(hostileTally.latencies, 0.99), 1).toFixed(1), round(Math.max(...hostileTally.latencies), 1).toFixed(1)]
]
const header = ["requests", "sent", "errors", "p50 ms", "p99 ms", "max ms"]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
console.log(`\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${rows.map(line).join("\n")}`)
console.log(
  `\nwall ${wallSeconds} s; good requests served ${goodTally.served}, hostile refused as expected ${hostileTally.served}; ` +
    `server alive at the end: ${alive}; peak RSS: server ${serverPeakMiB} MiB, server + extraction processes ${round(treePeakKiB / 1024, 0)} MiB (sampled); ` +
    `load average at start ${loadStart.join(" ")}, at end ${loadEnd.join(" ")}`
)
const byKind = (t: Tally) =>
  Object.fromEntries([...t.latenciesByKind].map(([k, ms]) => [k, { n: ms.length, p50Ms: round(percentile(ms, 0.5), 1), maxMs: round(Math.max(...ms), 1) }]))
console.log("\nper kind (n, p50 ms, max ms):")
for (const [k, v] of Object.entries({ ...byKind(goodTally), ...byKind(hostileTally) })) console.log(`  ${k}: ${v.n}, ${v.p50Ms}, ${v.maxMs}`)
if (site !== undefined) {
  console.log(
    `\nlarge-page crawls: ${crawlTally.rounds} rounds finished, ${crawlTally.errors} failed; ${crawlTally.pagesRead} pages read ` +
      `(${round(crawlTally.markdownBytes / 1e6, 0)} MB of Markdown) in ${crawlTally.statusResponses} status responses, ` +
      `the largest ${round(crawlTally.largestStatusBytes / 1048576, 2)} MiB`
  )
  for (const p of crawlTally.problems.slice(0, 5)) console.log(`  crawl error: ${p}`)
}
if (goodTally.errorsByKind.size + hostileTally.errorsByKind.size > 0) {
  console.log(`errors by kind: ${JSON.stringify(Object.fromEntries([...goodTally.errorsByKind, ...hostileTally.errorsByKind]))}`)
}

const out = writeReport(resultsPath("server-soak"), {
  ...runInfo(),
  loadAverageStart: loadStart,
  loadAverageEnd: loadEnd,
  setup: `effect-rag serve --embedder ${embedder} --extract-timeout-ms ${extractTimeoutMs} in a child process; ${goodLoops} good and ${hostileLoops} hostile client loops, one request at a time each`,
  seconds,
  wallSeconds,
  good: {
    sent: goodTally.served + goodTally.errors,
    served: goodTally.served,
    errors: goodTally.errors,
    p50Ms: round(percentile(goodTally.latencies, 0.5), 1),
    p99Ms: good99,
    maxMs: round(Math.max(...goodTally.latencies), 1),
    byKind: byKind(goodTally),
    errorsByKind: Object.fromEntries(goodTally.errorsByKind)
  },
  hostile: {
    sent: hostileTally.served + hostileTally.errors,
    refusedAsExpected: hostileTally.served,
    errors: hostileTally.errors,
    byKind: byKind(hostileTally),
    errorsByKind: Object.fromEntries(hostileTally.errorsByKind)
  },
  crawl: site === undefined
    ? null
    : {
      site: `${site.pages} pages of 4-8 MB of HTML text on loopback`,
      rounds: crawlTally.rounds,
      errors: crawlTally.errors,
      pagesRead: crawlTally.pagesRead,
      markdownMB: round(crawlTally.markdownBytes / 1e6, 0),
      statusResponses: crawlTally.statusResponses,
      largestStatusMiB: round(crawlTally.largestStatusBytes / 1048576, 2),
      problems: crawlTally.problems.slice(0, 5)
    },
  serverAliveAtEnd: alive,
  peakRssMiB: { server: serverPeakMiB, serverAndExtractionProcesses: round(treePeakKiB / 1024, 0) }
})
console.log(`wrote ${out}`)
process.exit(alive && goodTally.errors === 0 && crawlTally.errors === 0 ? 0 : 1)
