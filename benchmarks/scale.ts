/**
 * `npm run bench:scale [-- --sizes 5000,50000] [--max N] [--seed N] [--keep DIR] [--only PARTS]
 *  [--concurrency N] [--oneshot-runs N] [--replot]`:
 * how ingest, memory and queries behave as a collection grows, side by side with LanceDB alone
 * and the LangChain char pipeline, in one run (benchmarks/README.md, "Scale").
 *
 * Collections of 5,000, 50,000 and 500,000 documents (`--sizes`; `--max 1000000` adds 1,000,000,
 * and drops any size above N): SciFact's 5,183 abstracts (`$EFFECT_RAG_SHARED/bench/scifact`)
 * and, above that, copies of abstracts with their words shuffled (the abstract a copy comes from
 * and its shuffle are drawn from `--seed`, default 42, and the copy's number: the same files on
 * every run, and a smaller collection is a prefix of a larger one). One Markdown file each
 * (`# title` + text), 1,000 to a folder, written to a temp dir (or `--keep DIR`, reused by the
 * next run with the same size and seed).
 *
 * For each size (parts, `--only` picks a subset; default all):
 * - `ingest`: `effect-rag ingest DIR --db DB --json` (the built CLI), `benchmarks/peers/
 *   lancedb-ingest.mjs` (files read, cut at fixed character offsets, one append, FTS index) and
 *   `langchain-ingest.mjs char`
 *   (`npm run bench:peers` installs LangChain), each a fresh child process with a fresh database,
 *   measured from outside (`internal/measure.ts`): wall, CPU s and peak RSS of the process tree;
 *   documents/s = documents / wall (and documents per CPU second, steadier under load).
 *   `--timeout S`: a pipeline still running after S seconds is killed and reported as such.
 *   `--store DIR` (one size, `--only query` and/or `incremental`): those on a store an earlier run wrote.
 * - `query`: on effect-rag's store, opened once through the library (`LanceDbStore`, defaults:
 *   in memory up to its row bound, LanceDB's index above), the SciFact test queries (300), one
 *   warm-up pass then one measured pass, interleaved query by query: `Retrieve.retrieve` with
 *   the defaults (title boost + RM3), with plain BM25 (`plainFullText`), and LanceDB FTS called
 *   directly (`MatchQuery` on the same table, the hit columns), all top 10; p50/p95 in ms. And the
 *   one-shot `effect-rag query TEXT --json` (a fresh process: start-up, open, query, print),
 *   `--oneshot-runs` runs (default 3) with different queries, median wall.
 * - `incremental`: `effect-rag ingest` again over the unchanged folder (wall and CPU, and their
 *   ratio to the first ingest); then one file changed (a new word appended): the time from the
 *   command's start until a fresh library handle finds the file by that word, once for
 *   `effect-rag ingest DIR` (the folder rerun) and once, changed again, for `effect-rag ingest
 *   DIR/that/file.md` (the file alone, the same document); the file is put back afterwards.
 * The part `query` and `incremental` need effect-rag's store of the `ingest` part.
 *
 * Prints a table per size and the ratios across sizes, writes `benchmarks/results/scale.json`
 * (with the machine and its load average) and the plots `docs/plots/scale-docs-per-s.svg`,
 * `scale-rss.svg` and `scale-query.svg` (`--replot`: only the plots again, from that report).
 */
import { NodeContext } from "@effect/platform-node"
import * as lancedb from "@lancedb/lancedb"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as Beir from "../src/bench/Beir.js"
import { median, percentile } from "../src/bench/Metrics.js"
import { packageRoot, sharedPath } from "../src/internal/shared.js"
import * as Retrieve from "../src/pipeline/Retrieve.js"
import * as LanceDbStore from "../src/store/LanceDbStore.js"
import { VectorStore } from "../src/store/VectorStore.js"
import { benchEnv, ensureBuilt, measure, timeBinary } from "./internal/measure.js"
import { cli, effectRag, parseRun, peer, type Pipeline, type RunResult } from "./internal/pipelines.js"
import { writeLineChart } from "./internal/plot.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"
import { rng } from "./internal/rng.js"

// =============================================================================
// Options
// =============================================================================

const args = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? undefined : args[i + 1]
}
const positiveInts = (name: string, value: string): Array<number> => {
  const out = value.split(",").map((v) => Number(v.replace(/_/g, "")))
  if (out.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--${name} takes positive integers, not ${value}`)
  return out
}
const max = flag("max") === undefined ? 500_000 : positiveInts("max", flag("max")!)[0]!
const sizes = [...new Set([
  ...positiveInts("sizes", flag("sizes") ?? "5000,50000,500000"),
  ...(max >= 1_000_000 ? [1_000_000] : [])
])].filter((n) => n <= max).sort((a, b) => a - b)
const seed = Number(flag("seed") ?? "42")
const keep = flag("keep") === undefined ? undefined : resolve(flag("keep")!)
const parts = (flag("only") ?? "ingest,query,incremental").split(",")
const want = (part: string) => parts.includes(part) || parts.includes("all")
const concurrency = Number(flag("concurrency") ?? "2")
const oneShotRuns = Math.max(1, Number(flag("oneshot-runs") ?? "3"))
/** `--timeout S`: an ingest still running after S seconds is killed and reported as timed out. */
const timeoutS = flag("timeout") === undefined ? undefined : Number(flag("timeout"))
/**
 * `--store DIR`: an existing effect-rag store (collection `bench`) of the one size's corpus, for
 * `--only query` and/or `incremental` (which then has no first ingest to compare with).
 */
const store = flag("store") === undefined ? undefined : resolve(flag("store")!)
if (store !== undefined && (sizes.length !== 1 || want("ingest"))) {
  throw new Error("--store takes one size (--sizes N) and --only query and/or incremental")
}
const collectionName = "bench"

// =============================================================================
// Corpus
// =============================================================================

interface Abstract {
  readonly id: string
  readonly title: string
  readonly text: string
}

const abstracts: ReadonlyArray<Abstract> = readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => {
    const d = JSON.parse(l) as { _id: string; title: string; text: string }
    return { id: d._id, title: d.title, text: d.text }
  })

const shuffled = (text: string, next: () => number): string => {
  const words = text.split(/\s+/).filter((w) => w !== "")
  for (let i = words.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    ;[words[i], words[j]] = [words[j]!, words[i]!]
  }
  return words.join(" ")
}

/** The path and content of document `k` (0-based) of every collection made with `seed`. */
const documentAt = (k: number): [string, string] => {
  const folder = `d${String(Math.floor(k / 1000)).padStart(4, "0")}`
  if (k < abstracts.length) {
    const a = abstracts[k]!
    return [join(folder, `scifact-${a.id}.md`), `# ${a.title}\n\n${a.text}\n`]
  }
  const next = rng((Math.imul(seed, 1_000_003) + k) | 0)
  const a = abstracts[Math.floor(next() * abstracts.length)]!
  return [join(folder, `copy-${k}.md`), `# ${shuffled(a.title, next)}\n\n${shuffled(a.text, next)}\n`]
}

/** Writes (or, with `--keep`, finds) the collection of `size` documents; returns its folder. */
const corpus = (root: string, size: number): string => {
  const dir = join(root, `scale-${size}-seed-${seed}`)
  const done = `${dir}.complete`
  if (existsSync(done)) return dir
  rmSync(dir, { recursive: true, force: true })
  const started = performance.now()
  let folder = ""
  for (let k = 0; k < size; k++) {
    const [path, content] = documentAt(k)
    const f = join(dir, path, "..")
    if (f !== folder) mkdirSync((folder = f), { recursive: true })
    writeFileSync(join(dir, path), content)
  }
  writeFileSync(done, `${size} documents, seed ${seed}\n`)
  console.log(`  wrote ${size} documents in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return dir
}

// =============================================================================
// Queries
// =============================================================================

interface Latency {
  readonly name: string
  readonly p50Ms: number
  readonly p95Ms: number
  readonly queries: number
}

const round = (x: number, digits = 2) => Number(x.toFixed(digits))

const queryTexts = Effect.gen(function*() {
  const ds = yield* Beir.locate(sharedPath("bench", "scifact"))
  const qrels = yield* Beir.qrels(ds)
  return (yield* Beir.queries(ds, qrels)).map((q) => q.text)
})

/**
 * The collection through a store layer built in the caller's scope: its connection stays open
 * while the caller queries (the term statistics' side table is read through it) and closes with
 * the scope (Effect.provide would close it as soon as `open` returned).
 */
const openScoped = (db: string) =>
  Effect.flatMap(Layer.build(Layer.fresh(LanceDbStore.layer({ uri: db }))), (context) =>
    Effect.flatMap(VectorStore, (s) => s.open(collectionName)).pipe(Effect.provide(context)))

/** Query latency through the library and LanceDB directly, on one store (see the module doc). */
const queryLatency = (db: string, queries: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const opened = performance.now()
    const collection = yield* openScoped(db)
    const openMs = performance.now() - opened
    const connection = yield* Effect.acquireRelease(
      Effect.promise(() => lancedb.connect(db)),
      (c) => Effect.sync(() => c.close())
    )
    const table = yield* Effect.promise(() => connection.openTable(collectionName))
    const rows = yield* Effect.promise(() => table.countRows())
    const columns = ["id", "document_id", "title", "text", "metadata", "_score"]
    type Entry = [string, (q: string) => Effect.Effect<number, unknown>]
    const entries: Array<Entry> = [
      ["fulltext", (q) => Effect.map(Retrieve.retrieve(collection, q, { limit: 10 }), (h) => h.length)],
      ["plain-bm25", (q) => Effect.map(Retrieve.retrieve(collection, q, { limit: 10, fullText: Retrieve.plainFullText }), (h) => h.length)],
      ["lancedb-fts", (q) =>
        Effect.promise(() => (table.search(new lancedb.MatchQuery(q, "content")) as lancedb.Query).select(columns).limit(10).toArray())
          .pipe(Effect.map((r) => r.length))]
    ]
    const times = new Map(entries.map(([n]) => [n, [] as Array<number>]))
    const first = new Map<string, number>()
    // one warm-up pass (the first query of each entry reported: it may read the in-memory index), then the measured one
    for (let pass = 0; pass < 2; pass++) {
      for (const q of queries) {
        for (const [n, run] of entries) {
          const t = performance.now()
          yield* run(q)
          const ms = performance.now() - t
          if (pass === 1) times.get(n)!.push(ms)
          else if (!first.has(n)) first.set(n, ms)
        }
      }
    }
    const latency: Array<Latency> = entries.map(([n]) => ({
      name: n,
      p50Ms: round(percentile(times.get(n)!, 50)),
      p95Ms: round(percentile(times.get(n)!, 95)),
      queries: times.get(n)!.length
    }))
    return { rows, openMs: round(openMs), firstQueryMs: Object.fromEntries([...first].map(([n, ms]) => [n, round(ms)])), latency }
  }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

/** Whether a fresh library handle on `db` finds `documentPath` for `word`. */
const findable = (db: string, word: string, documentPath: string) =>
  Effect.gen(function*() {
    const collection = yield* openScoped(db)
    const hits = yield* Retrieve.retrieve(collection, word, { limit: 10 })
    return hits.some((h) => h.documentId.endsWith(documentPath))
  }).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

// =============================================================================
// One size
// =============================================================================

const lancedbPeer = peer("lancedb", "lancedb-ingest.mjs", [], "LanceDB alone: files read, cut at fixed character offsets (2,048, overlap 256), one append, FTS index")
const charPeer = peer("langchain-char", "langchain-ingest.mjs", ["char"], "LangChain.js: DirectoryLoader + RecursiveCharacterTextSplitter by characters (2,048/256) + LanceDB + FTS")

interface Ingested extends RunResult {
  /** Documents / wall seconds. */
  readonly documentsPerS: number
  /** Documents / CPU seconds of the process tree: steadier than wall time on a shared machine. */
  readonly documentsPerCpuS: number
}

const runPipeline = async (p: Pipeline, dir: string, db: string): Promise<Ingested | { readonly timedOutAfterS: number; readonly cpuS: number }> => {
  rmSync(db, { recursive: true, force: true })
  const [command, argv] = p.command(dir, db)
  const m = await measure(command, argv, timeoutS)
  if (m.timedOut === true) {
    console.log(`  ${p.name.padEnd(15)} TIMED OUT after ${m.wallS.toFixed(0)} s wall (${m.cpuS.toFixed(1)} CPU s); killed`)
    return { timedOutAfterS: round(m.wallS), cpuS: round(m.cpuS) }
  }
  if (m.exitCode !== 0) throw new Error(`${p.name}: exit ${m.exitCode}\n${m.stderr.slice(-2000)}`)
  const r = parseRun(p, 0, m)
  const out = { ...r, wallS: round(r.wallS), cpuS: round(r.cpuS), peakRssMiB: round(r.peakRssMiB, 1), documentsPerS: round(r.documents / r.wallS, 1), documentsPerCpuS: round(r.documents / r.cpuS, 1) }
  console.log(`  ${p.name.padEnd(15)} ${String(out.documents).padStart(8)} docs ${String(out.chunks).padStart(8)} chunks ${out.wallS.toFixed(1).padStart(8)} s wall ${out.cpuS.toFixed(1).padStart(8)} CPU s ${out.peakRssMiB.toFixed(0).padStart(6)} MiB ${out.documentsPerS.toFixed(0).padStart(7)} docs/s`)
  return out
}

/** `effect-rag ingest` of `dir` (a folder, or one file of it) into `db` (an existing store: the incremental case), measured. */
const ingestAgain = async (dir: string, db: string) => {
  const [command, argv] = effectRag(concurrency).command(dir, db)
  const m = await measure(command, argv)
  if (m.exitCode !== 0) throw new Error(`effect-rag ingest (again): exit ${m.exitCode}\n${m.stderr.slice(-2000)}`)
  const out = JSON.parse(m.stdout) as { documents: number; ingested: number; skipped: number; chunks: { ingested: number }; durationMs: number; writeMs: number }
  return {
    wallS: round(m.wallS),
    cpuS: round(m.cpuS),
    peakRssMiB: round(m.peakRssMiB, 1),
    documents: out.documents,
    ingested: out.ingested,
    skipped: out.skipped,
    chunksIngested: out.chunks.ingested,
    /** The CLI's own total and write stage (store writes, index upkeep), from its summary. */
    durationS: round(out.durationMs / 1000),
    writeS: round(out.writeMs / 1000)
  }
}

/** One `effect-rag query TEXT --json` as a fresh process: its wall time. */
const oneShot = (db: string, text: string) =>
  new Promise<number>((resolvePromise, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [cli, "query", "--db", db, "--collection", collectionName, "--json", text], {
      cwd: packageRoot(),
      stdio: ["ignore", "pipe", "pipe"],
      env: benchEnv
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.on("error", reject)
    child.on("close", (code) => {
      const s = (performance.now() - started) / 1000
      if (code !== 0) return reject(new Error(`effect-rag query: exit ${code}\n${stderr.slice(-2000)}`))
      const hits = (JSON.parse(stdout) as { hits: ReadonlyArray<unknown> }).hits.length
      if (hits === 0) return reject(new Error(`effect-rag query ${JSON.stringify(text)}: no hits`))
      resolvePromise(s)
    })
  })

/**
 * One file changed (a new word appended), then `effect-rag ingest target` (the folder, or that
 * file alone): the time from the command's start until a fresh handle finds the file by that word.
 */
const changeAndFind = async (dir: string, db: string, path: string, original: string, target: string, tag: string) => {
  const word = `scalemarker${seed}${tag}x${Date.now().toString(36)}`
  writeFileSync(join(dir, path), `${original}\n${word}\n`)
  const started = performance.now()
  const run = await ingestAgain(target, db)
  let found = false
  let attempts = 0
  // the first look normally finds it; a few more (1 s apart) only if the store lags
  while (!found && attempts < 5) {
    if (attempts > 0) await new Promise((r) => setTimeout(r, 1000))
    found = await Effect.runPromise(findable(db, word, path.split("/").pop()!))
    attempts++
  }
  const searchableS = (performance.now() - started) / 1000
  return { ingest: run, searchable: found, searchableS: round(searchableS), lookups: attempts }
}

/**
 * One changed file (see the module doc): found after a rerun over the folder, then, changed
 * again, after `effect-rag ingest DIR/that/file.md` (the same document id).
 */
const changedFile = async (dir: string, db: string) => {
  const [path, original] = documentAt(Math.min(7, abstracts.length - 1))
  try {
    const folder = await changeAndFind(dir, db, path, original, dir, "f")
    const single = await changeAndFind(dir, db, path, original, join(dir, path), "s")
    return { ...folder, singleFile: single }
  } finally {
    writeFileSync(join(dir, path), original)
    // the store holds the changed file; put it back too, so a kept corpus and its store agree
    await ingestAgain(dir, db)
  }
}

interface SizeResult {
  readonly size: number
  readonly loadAverage: ReadonlyArray<number>
  readonly ingest?: Record<string, Ingested>
  /** Pipelines killed after `--timeout` seconds, with the CPU they had used. */
  readonly timedOut?: Record<string, { readonly timedOutAfterS: number; readonly cpuS: number }>
  readonly query?: Effect.Effect.Success<ReturnType<typeof queryLatency>> & { readonly oneShotWallS: number; readonly oneShotRunsS: ReadonlyArray<number> }
  readonly incremental?: {
    readonly unchanged: Awaited<ReturnType<typeof ingestAgain>> & { readonly cpuRatio: number; readonly wallRatio: number }
    readonly changedFile: Awaited<ReturnType<typeof changedFile>>
  }
}

const runSize = async (root: string, scratch: string, size: number, queries: ReadonlyArray<string>): Promise<SizeResult> => {
  const load = runInfo().loadAverage
  console.log(`\n${size} documents (load average ${load.join(" ")})`)
  const dir = corpus(root, size)
  const db = store ?? join(scratch, `db-${size}`)
  let result: SizeResult = { size, loadAverage: load }
  if (want("ingest")) {
    const ingest: Record<string, Ingested> = {}
    const timedOut: Record<string, { readonly timedOutAfterS: number; readonly cpuS: number }> = {}
    // effect-rag first (its store stays for the queries and the incremental runs), then the peers
    for (const p of [effectRag(concurrency), lancedbPeer, charPeer]) {
      const own = p.name === "effect-rag"
      const pipelineDb = own ? db : join(scratch, `db-${p.name}`)
      const r = await runPipeline(p, dir, pipelineDb)
      if ("timedOutAfterS" in r) timedOut[p.name] = r
      else ingest[p.name] = r
      if (!own || "timedOutAfterS" in r) rmSync(pipelineDb, { recursive: true, force: true })
    }
    result = { ...result, ingest, ...(Object.keys(timedOut).length > 0 ? { timedOut } : {}) }
  }
  if (!existsSync(db)) return result
  if (want("query")) {
    const q = await Effect.runPromise(queryLatency(db, queries))
    const runs: Array<number> = []
    for (let i = 0; i < oneShotRuns; i++) runs.push(round(await oneShot(db, queries[(i * 37) % queries.length]!)))
    const oneShotWallS = round(median(runs))
    for (const l of q.latency) console.log(`  query ${l.name.padEnd(12)} p50 ${l.p50Ms.toFixed(2).padStart(8)} ms  p95 ${l.p95Ms.toFixed(2).padStart(8)} ms`)
    console.log(`  one-shot effect-rag query: ${runs.map((s) => s.toFixed(2)).join(", ")} s wall (median ${oneShotWallS.toFixed(2)} s); ${q.rows} rows`)
    result = { ...result, query: { ...q, oneShotWallS, oneShotRunsS: runs } }
  }
  if (want("incremental")) {
    const first = result.ingest?.["effect-rag"]
    const again = await ingestAgain(dir, db)
    const unchanged = {
      ...again,
      cpuRatio: first === undefined ? Number.NaN : round(again.cpuS / first.cpuS, 3),
      wallRatio: first === undefined ? Number.NaN : round(again.wallS / first.wallS, 3)
    }
    console.log(`  rerun, unchanged: ${again.wallS.toFixed(1)} s wall ${again.cpuS.toFixed(1)} CPU s (${again.skipped} skipped, ${again.ingested} ingested)${first ? `: ${(unchanged.cpuRatio * 100).toFixed(1)} % of the first ingest's CPU` : ""}`)
    const changed = await changedFile(dir, db)
    for (const [what, c] of [["folder rerun", changed], ["file alone", changed.singleFile]] as const) {
      console.log(`  one changed file, ${what}: ${c.searchable ? "searchable" : "NOT found"} ${c.searchableS.toFixed(2)} s after the command's start (ingest ${c.ingest.wallS.toFixed(2)} s wall, ${c.ingest.cpuS.toFixed(2)} CPU s, ${c.ingest.ingested} ingested, ${c.ingest.skipped} skipped, write stage ${c.ingest.writeS.toFixed(2)} s)`)
    }
    result = { ...result, incremental: { unchanged, changedFile: changed } }
  }
  return result
}

// =============================================================================
// Report
// =============================================================================

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? "—" : `${(a / b).toFixed(2)}×`

const summaryTable = (results: ReadonlyArray<SizeResult>): string => {
  const head = ["docs", "CPU ÷ lancedb", "RSS ÷ lc-char", "full p50 ÷ fts", "bm25 p50 ÷ fts", "rerun ÷ first", "docs/s er / ldb / lc", "peak RSS MiB er / ldb / lc", "p50 ms full / bm25 / fts", "p95 ms full / bm25 / fts", "1-shot s", "changed s folder / file"]
  const rows = results.map((r) => {
    const i = r.ingest
    const er = i?.["effect-rag"]
    const ldb = i?.["lancedb"]
    const lc = i?.["langchain-char"]
    const lat = (n: string) => r.query?.latency.find((l) => l.name === n)
    return [
      String(r.size),
      ratio(er?.cpuS, ldb?.cpuS),
      ratio(er?.peakRssMiB, lc?.peakRssMiB),
      ratio(lat("fulltext")?.p50Ms, lat("lancedb-fts")?.p50Ms),
      ratio(lat("plain-bm25")?.p50Ms, lat("lancedb-fts")?.p50Ms),
      r.incremental === undefined || Number.isNaN(r.incremental.unchanged.cpuRatio) ? "—" : `${(r.incremental.unchanged.cpuRatio * 100).toFixed(1)} %`,
      i === undefined ? "—" : [er, ldb, lc].map((x) => x?.documentsPerS.toFixed(0) ?? "—").join(" / "),
      i === undefined ? "—" : [er, ldb, lc].map((x) => x?.peakRssMiB.toFixed(0) ?? "—").join(" / "),
      r.query === undefined ? "—" : ["fulltext", "plain-bm25", "lancedb-fts"].map((n) => lat(n)!.p50Ms.toFixed(1)).join(" / "),
      r.query === undefined ? "—" : ["fulltext", "plain-bm25", "lancedb-fts"].map((n) => lat(n)!.p95Ms.toFixed(1)).join(" / "),
      r.query === undefined ? "—" : r.query.oneShotWallS.toFixed(2),
      r.incremental === undefined ? "—" : [r.incremental.changedFile, r.incremental.changedFile.singleFile]
        .map((c) => `${c.searchableS.toFixed(2)}${c.searchable ? "" : " (not found)"}`).join(" / ")
    ]
  })
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)))
  return [head, ...rows].map((r) => "| " + r.map((cell, c) => cell.padEnd(widths[c]!)).join(" | ") + " |").join("\n")
}

const plots = (results: ReadonlyArray<SizeResult>, caption: string): Array<string> => {
  const series = (pipeline: string, pick: (r: Ingested) => number) => ({
    name: pipeline,
    points: results.flatMap((r) => (r.ingest?.[pipeline] === undefined ? [] : [{ x: r.size, y: pick(r.ingest[pipeline]!) }]))
  })
  const pipelines = ["effect-rag", "lancedb", "langchain-char"]
  const written: Array<string> = []
  if (results.some((r) => r.ingest !== undefined)) {
    written.push(writeLineChart("scale-docs-per-s", {
      title: "Ingest throughput against collection size",
      xLabel: "documents",
      unit: "documents/s",
      digits: 0,
      caption,
      series: pipelines.map((p) => series(p, (r) => r.documentsPerS))
    }))
    written.push(writeLineChart("scale-rss", {
      title: "Peak RSS of the ingest's process tree",
      xLabel: "documents",
      unit: "MiB",
      digits: 0,
      caption,
      series: pipelines.map((p) => series(p, (r) => r.peakRssMiB))
    }))
  }
  if (results.some((r) => r.query !== undefined)) {
    const latency = (name: string, pct: "p50Ms" | "p95Ms") => ({
      name: `${name} ${pct.slice(0, 3)}`,
      points: results.flatMap((r) => {
        const l = r.query?.latency.find((x) => x.name === name)
        return l === undefined ? [] : [{ x: r.size, y: l[pct] }]
      })
    })
    written.push(writeLineChart("scale-query", {
      title: "Query latency against collection size, top 10",
      xLabel: "documents",
      unit: "ms",
      caption,
      series: ["fulltext", "plain-bm25", "lancedb-fts"].flatMap((n) => [latency(n, "p50Ms"), latency(n, "p95Ms")])
    }))
  }
  return written
}

// =============================================================================
// Main
// =============================================================================

const main = async () => {
  ensureBuilt()
  if (want("ingest") && !existsSync(join(packageRoot(), "benchmarks", "peers", "node_modules", "@langchain", "classic"))) {
    throw new Error("the LangChain peer is not installed: run `npm run bench:peers` first")
  }
  const info = runInfo()
  const command = `npm run bench:scale -- ${args.join(" ")}`.trim()
  console.log(`${command}: sizes ${sizes.join(", ")}, seed ${seed}, parts ${parts.join(",")}; load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`)
  const scratch = mkdtempSync(join(tmpdir(), "effect-rag-bench-scale-"))
  const root = keep ?? join(scratch, "corpora")
  mkdirSync(root, { recursive: true })
  const queries = await Effect.runPromise(queryTexts)
  const results: Array<SizeResult> = []
  // the report is written after every size, so a long run stopped midway keeps the sizes it finished
  const report = () => {
    const end = runInfo()
    return writeReport(resultsPath("scale"), {
      command,
      ...info,
      loadAverageAtEnd: end.loadAverage,
      finished: end.date,
      complete: results.length === sizes.length,
      timeBinary: timeBinary ?? "none (CPU from /proc samples)",
      seed,
      concurrency,
      queries: queries.length,
      results
    })
  }
  try {
    for (const size of sizes) {
      results.push(await runSize(root, scratch, size, queries))
      if (store === undefined) rmSync(join(scratch, `db-${size}`), { recursive: true, force: true })
      if (keep === undefined) rmSync(join(root, `scale-${size}-seed-${seed}`), { recursive: true, force: true })
      report()
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
    const end = runInfo()
    console.log(`\n${summaryTable(results)}`)
    console.log(`(er = effect-rag, ldb = LanceDB alone, lc = LangChain char pipeline; load average ${info.loadAverage.join(" ")} at the start, ${end.loadAverage.join(" ")} at the end, ${info.cpus} CPUs)`)
    if (results.length > 0) {
      const caption = `${command}: load ${info.loadAverage[0]}→${end.loadAverage[0]} on ${info.cpus} CPUs, ${info.date.slice(0, 10)}`
      for (const p of plots(results, caption)) console.log(`wrote ${p}`)
      console.log(`wrote ${report()}`)
    }
  }
}

/** `--replot`: the plots again from the last report (e.g. after a change to the charts), nothing measured. */
const replot = () => {
  const report = JSON.parse(readFileSync(resultsPath("scale"), "utf8")) as {
    command: string
    date: string
    cpus: number
    loadAverage: ReadonlyArray<number>
    loadAverageAtEnd: ReadonlyArray<number>
    results: ReadonlyArray<SizeResult>
  }
  const caption = `${report.command}: load ${report.loadAverage[0]}→${report.loadAverageAtEnd[0]} on ${report.cpus} CPUs, ${report.date.slice(0, 10)}`
  for (const p of plots(report.results, caption)) console.log(`wrote ${p}`)
}

;(args.includes("--replot") ? Promise.resolve().then(replot) : main()).catch((e) => {
  console.error(e instanceof Error ? e.message : e)
  process.exitCode = 1
})
