/**
 * `npm run bench:retrieval [-- --dataset DIR] [--json FILE] [--embedder none|use-lite|onnx:DIR|remote]
 *  [--reranker none|remote|onnx:DIR] [--fusion rrf[:K[:W]]|weighted:W] [--fusion-sweep] [--fulltext-sweep]
 *  [--passage-words N] [--latency-rounds N] [--quick] [--pad-docs N] [--postgres URL | --no-postgres]`
 *
 * Runs the retrieval benchmark (src/bench/Runner.ts) on a BEIR folder (default: the shared
 * SciFact, or $EFFECT_RAG_BENCH_DATASET), prints the table and writes the JSON report
 * (default benchmarks/results/retrieval.json).
 *
 * Then, on the same LanceDB table, the query latency side by side with LanceDB's full-text
 * search called directly, interleaved query by query (each query runs through every entry in
 * turn, so load changes hit them alike), top 10 hits as a user sees them:
 * - `lancedb-fts`: `table.search(new MatchQuery(q, "content"))`, the hit columns, limit 10;
 * - `lancedb-fts-ids100`: the same, ids and scores only, limit 100 (the cheapest call);
 * - `plain`: `Retrieve.retrieve` with plain BM25 (`plainFullText`);
 * - `fulltext`: `Retrieve.retrieve` with the defaults (title boost + RM3), whose nDCG@10 the
 *   table above reports;
 * - `plain-lancedb-index`, `fulltext-lancedb-index`: the same through a store handle with
 *   `memoryIndexRows: 0` (LanceDB's own index) and the candidate path off (RM3's second pass a
 *   second weighted search of the index);
 * - `fulltext-candidates`: the defaults through a handle with `memoryIndexRows: 0,
 *   textCandidateRows: 0` (what collections above 20,000 rows use: one index search for the
 *   query's best 25 chunks, both passes ranked in memory with the persisted term statistics);
 * - `postgres-plain`, `postgres-fulltext`: the same two modes on the Postgres store
 *   (`PostgresStore`), its collection filled with the LanceDB table's rows: a real server at
 *   `--postgres URL` (or `$EFFECT_RAG_BENCH_POSTGRES`), else one started for the run: PGlite +
 *   pgvector served on loopback in this process (labelled `pglite`), or with
 *   `EFFECT_RAG_TEST_POSTGRES=1` Debian's PostgreSQL 15 with pgvector (`postgresql-15`, as the
 *   tests start it); `--no-postgres` leaves them out.
 * `--pad-docs N` first adds N shuffled copies of the corpus's documents to the table (issue #24's
 * larger collections: each copy's title and text words shuffled by a seeded generator, so the
 * vocabulary and its statistics stay SciFact's and no copy is judged relevant), then optimizes it:
 * the latency entries then measure a collection of corpus + N chunks (the table above is still the
 * corpus alone). Above `memoryIndexRows` rows the default handle uses LanceDB's index too.
 * `plain` and `fulltext` run on a default handle: a collection of at most `memoryIndexRows`
 * rows is searched in memory, read on the first query (reported as `first_query_ms`).
 * p50 and p95 in ms, the ratios to `lancedb-fts` and nDCG@10 of the top 10 (the runs of the
 * measured pass); `--latency-rounds N` passes over the
 * queries (default 1; `--quick`: 1 pass over the first 100 queries). Writes the plot
 * `docs/plots/retrieval-latency.svg`.
 */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import * as lancedb from "@lancedb/lancedb"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as Beir from "../src/bench/Beir.js"
import { evaluate, percentile, type Qrels } from "../src/bench/Metrics.js"
import * as Runner from "../src/bench/Runner.js"
import { fullTextSweep, fusionSweep, parseFusion } from "../src/cli/commands/bench.js"
import { resolveEmbedder, resolveReranker } from "../src/Wiring.js"
import { sharedPath } from "../src/internal/shared.js"
import * as Retrieve from "../src/pipeline/Retrieve.js"
import * as LanceDbStore from "../src/store/LanceDbStore.js"
import * as PostgresStore from "../src/store/PostgresStore.js"
import type { Chunk, Collection, Scalar } from "../src/store/VectorStore.js"
import { VectorStore } from "../src/store/VectorStore.js"
import { pad } from "./internal/pad.js"
import { writeBarChart } from "./internal/plot.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"

const args = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? undefined : args[i + 1]
}
const dataset = resolve(flag("dataset") ?? process.env["EFFECT_RAG_BENCH_DATASET"] ?? sharedPath("bench", "scifact"))
const jsonPath = resolve(flag("json") ?? resultsPath("retrieval"))
const embedderSpec = flag("embedder") ?? "none"
const passageWords = Number(flag("passage-words") ?? "0")
const rerankerSpec = flag("reranker") ?? "none"
const fusionSpec = flag("fusion")
const fusion = fusionSpec === undefined ? undefined : parseFusion(fusionSpec)
if (fusionSpec !== undefined && fusion === undefined) {
  console.error(`--fusion ${fusionSpec}: expected rrf[:K[:TEXT_WEIGHT]] or weighted:W`)
  process.exit(2)
}
const sweep = args.includes("--fusion-sweep")
const textSweep = args.includes("--fulltext-sweep")
const quick = args.includes("--quick")
const latencyRounds = Math.max(1, Number(flag("latency-rounds") ?? "1"))
const postgresUrl = flag("postgres") ?? process.env["EFFECT_RAG_BENCH_POSTGRES"]
const withPostgres = !args.includes("--no-postgres")
const padDocs = Math.max(0, Number(flag("pad-docs") ?? "0"))

/**
 * The LanceDB table's rows copied into a Postgres store (see the module doc); the server kind
 * and the copy's time. The server and the store close with the scope.
 */
const postgresCopy = (table: lancedb.Table, from: Collection) =>
  Effect.gen(function*() {
    let kind = "postgresql"
    let url = postgresUrl
    if (url === undefined) {
      const { startPostgres } = yield* Effect.promise(() => import("../test/support/postgres.js"))
      const server = yield* Effect.acquireRelease(Effect.promise(() => startPostgres()), (s) => Effect.promise(() => s.stop()))
      kind = server.kind
      url = server.url
    }
    const schema = `bench_${process.pid}`
    const store = yield* Layer.build(PostgresStore.layerFromUrl(`${url}${url.includes("?") ? "&" : "?"}schema=${schema}`))
    const pg = Context.get(store, PostgresStore.PostgresStore)
    yield* Effect.addFinalizer(() => pg.drop(from.spec.name).pipe(Effect.ignore))
    const c = yield* pg.collection(from.spec)
    const rows = yield* Effect.promise(() => table.query().select(["id", "document_id", "title", "text", "metadata", ...(from.spec.embedding ? ["vector"] : [])]).toArray())
    const chunks: Array<Chunk> = rows.map((r) => ({
      id: String(r["id"]),
      documentId: String(r["document_id"]),
      title: typeof r["title"] === "string" ? r["title"] : undefined,
      text: String(r["text"]),
      metadata: JSON.parse(String(r["metadata"] ?? "{}")) as Record<string, Scalar>,
      ...(from.spec.embedding ? { vector: Array.from(r["vector"] as ArrayLike<number>) } : {})
    }))
    const t = performance.now()
    yield* c.upsert(chunks)
    yield* c.optimize()
    const seconds = (performance.now() - t) / 1000
    return { kind, collection: c, rows: chunks.length, seconds }
  })

const round2 = (x: number) => Math.round(x * 100) / 100

/** Query latency, interleaved query by query, on the table the runner wrote (see the module doc). */
const latency = (storeDir: string, ds: Beir.Dataset, queries: ReadonlyArray<Beir.BeirQuery>, qrels: Qrels) =>
  Effect.gen(function*() {
    const name = ds.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "bench"
    // a store's layer built in this query set's scope: its connection stays open while the set
    // uses the collection (its term statistics' side table is read through it) and closes with
    // the set (Effect.provide would close it as soon as `open` returned)
    const openWith = (options: LanceDbStore.Options) =>
      Effect.flatMap(Layer.build(Layer.fresh(LanceDbStore.layer(options))), (context) =>
        Effect.flatMap(VectorStore, (s) => s.open(name)).pipe(Effect.provide(context)))
    if (padDocs > 0) {
      // one optimize at the end, as a bulk load does (no index upkeep between the batches)
      const writer = yield* openWith({ uri: storeDir, reindexAfter: Number.MAX_SAFE_INTEGER, maxFragments: Number.MAX_SAFE_INTEGER })
      const t = performance.now()
      const added = yield* pad(writer, Beir.corpus(ds), padDocs)
      console.log(`padded the table with ${added} shuffled copies in ${((performance.now() - t) / 1000).toFixed(1)} s: ${yield* writer.count()} rows`)
    }
    const open = (memoryIndexRows?: number, textCandidateRows?: number) => openWith({ uri: storeDir, memoryIndexRows, textCandidateRows })
    // a fresh handle each: the default one (in memory up to its row bound) and one on LanceDB's index
    const collection = yield* open()
    const native = yield* open(0, Number.MAX_SAFE_INTEGER)
    const candidates = yield* open(0, 0)
    const connection = yield* Effect.acquireRelease(Effect.promise(() => lancedb.connect(storeDir)), (c) => Effect.sync(() => c.close()))
    const table = yield* Effect.promise(() => connection.openTable(name))
    const columns = ["id", "document_id", "title", "text", "metadata", "_score"]
    const direct = (q: string, select: Array<string>, limit: number) =>
      Effect.promise(() => (table.search(new lancedb.MatchQuery(q, "content")) as lancedb.Query).select(select).limit(limit).toArray())
        .pipe(Effect.map((rows) => rows.map((r) => String(r["document_id"] ?? r["id"]))))
    const docs = (hits: ReadonlyArray<{ readonly documentId: string }>) => hits.map((h) => h.documentId)
    const pg = withPostgres ? yield* postgresCopy(table, collection) : undefined
    if (pg !== undefined) {
      console.log(`postgres (${pg.kind}): ${pg.rows} rows copied in ${pg.seconds.toFixed(1)} s (${Math.round(pg.rows / pg.seconds)} rows/s)`)
    }
    type Entry = [string, (q: string) => Effect.Effect<ReadonlyArray<string>, unknown>]
    const entries: Array<Entry> = [
      ["lancedb-fts", (q) => direct(q, columns, 10)],
      ["lancedb-fts-ids100", (q) => direct(q, ["id", "_score"], 100)],
      ["plain", (q) => Effect.map(Retrieve.retrieve(collection, q, { limit: 10, fullText: Retrieve.plainFullText }), docs)],
      ["fulltext", (q) => Effect.map(Retrieve.retrieve(collection, q, { limit: 10 }), docs)],
      ["plain-lancedb-index", (q) => Effect.map(Retrieve.retrieve(native, q, { limit: 10, fullText: Retrieve.plainFullText }), docs)],
      ["fulltext-lancedb-index", (q) => Effect.map(Retrieve.retrieve(native, q, { limit: 10 }), docs)],
      ["fulltext-candidates", (q) => Effect.map(Retrieve.retrieve(candidates, q, { limit: 10 }), docs)],
      ...(pg === undefined ? [] : [
        [`postgres-plain (${pg.kind})`, (q: string) => Effect.map(Retrieve.retrieve(pg.collection, q, { limit: 10, fullText: Retrieve.plainFullText }), docs)],
        [`postgres-fulltext (${pg.kind})`, (q: string) => Effect.map(Retrieve.retrieve(pg.collection, q, { limit: 10 }), docs)]
      ] satisfies Array<Entry>)
    ]
    const times = new Map(entries.map(([n]) => [n, [] as Array<number>]))
    const first = new Map<string, number>()
    const runs = new Map(entries.map(([n]) => [n, new Map<string, ReadonlyArray<string>>()]))
    // one warm-up pass (its first query of each entry reported: it reads the in-memory index), then the measured ones
    for (let r = 0; r <= latencyRounds; r++) {
      for (const q of queries) {
        for (const [n, run] of entries) {
          const t = performance.now()
          const ranking = yield* run(q.text)
          const ms = performance.now() - t
          if (r > 0) times.get(n)!.push(ms)
          else if (!first.has(n)) first.set(n, ms)
          runs.get(n)!.set(q.id, ranking)
        }
      }
    }
    const judged: Qrels = new Map(queries.flatMap((q) => (qrels.has(q.id) ? [[q.id, qrels.get(q.id)!] as const] : [])))
    const base = percentile(times.get("lancedb-fts")!, 50)
    const basep95 = percentile(times.get("lancedb-fts")!, 95)
    const entriesOut = entries.map(([n]) => {
      const t = times.get(n)!
      const p50 = percentile(t, 50)
      const p95 = percentile(t, 95)
      return {
        name: n,
        queries: t.length,
        p50_ms: round2(p50),
        p95_ms: round2(p95),
        p50_ratio: round2(p50 / base),
        p95_ratio: round2(p95 / basep95),
        first_query_ms: round2(first.get(n) ?? 0),
        "ndcg@10": Math.round(evaluate(runs.get(n)!, judged)["ndcg@10"] * 10_000) / 10_000
      }
    })
    return { entries: entriesOut, postgres: pg === undefined ? undefined : { kind: pg.kind, rows: pg.rows, copy_seconds: round2(pg.seconds) } }
  }).pipe(Effect.scoped)

const program = Effect.gen(function*() {
  const embedder = yield* resolveEmbedder(embedderSpec)
  const reranker = yield* resolveReranker(rerankerSpec)
  const storeDir = mkdtempSync(join(tmpdir(), "effect-rag-bench-retrieval-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(storeDir, { recursive: true, force: true })))
  const info = runInfo()
  const report = yield* Runner.run({
    dataset,
    storeDir,
    passageWords,
    embedder: embedder.embedder,
    noEmbedderReason: embedder.reason,
    reranker: reranker.reranker,
    noRerankerReason: reranker.reason,
    fusion,
    fusionSweep: sweep ? fusionSweep : undefined,
    fullTextSweep: textSweep ? fullTextSweep : undefined,
    log: (line) => process.stderr.write(`\r${line}`.padEnd(60))
  })
  process.stderr.write("\n")
  console.log(Runner.table(report))

  const ds = yield* Beir.locate(dataset)
  const qrels = yield* Beir.qrels(ds)
  const all = yield* Beir.queries(ds, qrels)
  const queries = quick ? all.slice(0, 100) : all
  const { entries: lat, postgres } = yield* latency(storeDir, ds, queries, qrels)
  console.log(`\nquery latency, top 10, ${queries.length} queries${padDocs > 0 ? ` on the corpus + ${padDocs} shuffled copies` : ""} × ${latencyRounds} interleaved pass(es); load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`)
  console.log(`${"entry".padEnd(24)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)}  ${"÷ lancedb-fts (p50, p95)".padEnd(26)} ${"1st query ms".padStart(12)}  nDCG@10`)
  for (const l of lat) {
    console.log(`${l.name.padEnd(24)} ${l.p50_ms.toFixed(2).padStart(8)} ${l.p95_ms.toFixed(2).padStart(8)}  ${`${l.p50_ratio.toFixed(2)}×, ${l.p95_ratio.toFixed(2)}×`.padEnd(26)} ${l.first_query_ms.toFixed(1).padStart(12)}  ${l["ndcg@10"].toFixed(4)}`)
  }
  const plot = writeBarChart("retrieval-latency", {
    title: `Full-text query latency on ${report.dataset}, top 10`,
    unit: "ms",
    caption: `npm run bench:retrieval: ${queries.length} queries, interleaved, load ${info.loadAverage[0]} on ${info.cpus} CPUs; fulltext nDCG@10 ${report.modes["fulltext"]?.["ndcg@10"].toFixed(4)}, plain ${report.modes["fulltext-plain"]?.["ndcg@10"].toFixed(4)}`,
    groups: [
      { label: "p50", bars: lat.map((l) => ({ series: l.name, value: l.p50_ms })) },
      { label: "p95", bars: lat.map((l) => ({ series: l.name, value: l.p95_ms })) }
    ]
  })
  console.log(`wrote ${plot}`)
  writeReport(jsonPath, { ...report, run: info, latency: { queries: queries.length, rounds: latencyRounds, limit: 10, pad_docs: padDocs, entries: lat, postgres } })
  console.log(`wrote ${jsonPath}`)
}).pipe(Effect.scoped, Effect.provide(NodeContext.layer))

NodeRuntime.runMain(program)
