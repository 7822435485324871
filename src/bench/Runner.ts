/**
 * The retrieval benchmark: ingests a BEIR folder into a fresh LanceDB table, runs the judged
 * queries in every mode that can run, and reports nDCG@10, Recall@100, MRR@10, latency
 * percentiles, ingest throughput (embedding and writing timed apart) and peak RSS.
 *
 * Modes: `fulltext` (the tuned full-text path of `pipeline/Retrieve`), `fulltext-plain` (plain
 * BM25 on the same index, for comparison), and with an embedder `vector`, `hybrid`, and with a
 * reranker as well `hybrid+rerank`. A mode that cannot run is listed under `skipped` with the
 * reason, never given figures.
 *
 * @since 0.1.0
 */
import { Chunk as EChunk, Effect, Stream } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Embeddings from "../api/Embeddings.js"
import type * as Rerank from "../api/Rerank.js"
import * as Retrieve from "../pipeline/Retrieve.js"
import { defaultFusion } from "../store/Fusion.js"
import * as LanceDbStore from "../store/LanceDbStore.js"
import { type Chunk, type Collection, type Fusion, VectorStore } from "../store/VectorStore.js"
import * as Beir from "./Beir.js"
import * as Metrics from "./Metrics.js"

/**
 * Options of {@link run}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The BEIR folder. */
  readonly dataset: string
  /** qrels split (default `test`). */
  readonly split?: string | undefined
  /** The embedder for vector modes, with the id reported in the JSON. */
  readonly embedder?: { readonly id: string; readonly service: Embeddings.Service } | undefined
  /** Why there is no embedder (reported for skipped modes). */
  readonly noEmbedderReason?: string | undefined
  /** A reranker for `hybrid+rerank`. */
  readonly reranker?: { readonly id: string; readonly service: Rerank.Service } | undefined
  /** Why there is no reranker (reported for `hybrid+rerank`). */
  readonly noRerankerReason?: string | undefined
  /** Where the fresh LanceDB table goes (default: a temp folder, removed after). */
  readonly storeDir?: string | undefined
  /** Documents per write batch (default 256). */
  readonly batchSize?: number | undefined
  /** Split documents into passages of about this many words (default 0: whole documents). */
  readonly passageWords?: number | undefined
  /** Full-text tuning of the `fulltext` mode (default: Retrieve's defaults). */
  readonly fullText?: Retrieve.FullTextOptions | undefined
  /** Hybrid fusion (default: the store's). */
  readonly fusion?: Fusion | undefined
  /**
   * Further fusions to measure on the same index, each reported as the mode `hybrid <name>`
   * (the ingest, which dominates the run with a local embedder, is done once).
   */
  readonly fusionSweep?: ReadonlyArray<{ readonly name: string; readonly fusion: Fusion }> | undefined
  /**
   * Further full-text settings to measure on the same index, each reported as the mode
   * `fulltext <name>` (to check a change of the defaults on several collections).
   */
  readonly fullTextSweep?: ReadonlyArray<{ readonly name: string; readonly fullText: Retrieve.FullTextOptions }> | undefined
  /** Progress lines (default: none). */
  readonly log?: ((line: string) => void) | undefined
}

/**
 * Figures of one mode.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModeResult {
  readonly "ndcg@10": number
  readonly "recall@100": number
  readonly "mrr@10": number
  readonly p50_ms: number
  readonly p95_ms: number
}

/**
 * The report; its JSON shape is stable (other tools read it).
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  readonly dataset: string
  readonly queries: number
  readonly documents: number
  readonly embedder: string
  readonly modes: Record<string, ModeResult>
  readonly skipped: Record<string, string>
  readonly ingest: {
    readonly chunks: number
    readonly seconds: number
    readonly docs_per_s: number
    readonly embed_seconds: number
    readonly write_seconds: number
    readonly index_seconds: number
  }
  readonly peak_rss_mb: number
  readonly settings: Record<string, unknown>
}

/**
 * Splits a text into passages of about `words` words, on sentence ends when possible.
 *
 * @since 0.1.0
 * @category utils
 */
export const passages = (text: string, words: number): Array<string> => {
  if (words <= 0) return [text]
  const sentences = text.split(/(?<=[.!?])\s+/)
  const out: Array<string> = []
  let current: Array<string> = []
  let n = 0
  for (const s of sentences) {
    const w = s.split(/\s+/).filter((x) => x !== "").length
    if (n > 0 && n + w > words) {
      out.push(current.join(" "))
      current = []
      n = 0
    }
    current.push(s)
    n += w
  }
  if (current.length > 0) out.push(current.join(" "))
  return out.length === 0 ? [text] : out
}

let peakRss = 0
const sampleRss = () => {
  const r = process.memoryUsage().rss
  if (r > peakRss) peakRss = r
}

/** What {@link ingestCorpus} measured. */
interface Ingested {
  readonly documents: number
  readonly chunks: number
  readonly embedMs: number
  readonly writeMs: number
  readonly indexMs: number
  readonly ingestSeconds: number
}

/** Streams the corpus into `collection` in bounded batches (embedded when there is an embedder), then optimizes it. */
const ingestCorpus = (ds: Beir.Dataset, collection: Collection, options: Options) =>
  Effect.gen(function*() {
    const log = options.log ?? (() => {})
    const embedder = options.embedder
    const passageWords = options.passageWords ?? 0
    let documents = 0
    let chunks = 0
    let embedMs = 0
    let writeMs = 0
    const t0 = performance.now()
    yield* Beir.corpus(ds).pipe(
      Stream.grouped(Math.max(1, options.batchSize ?? 256)),
      Stream.runForEach((group) =>
        Effect.gen(function*() {
          const docs = EChunk.toReadonlyArray(group)
          documents += docs.length
          const rows: Array<Chunk> = docs.flatMap((d) =>
            passages(d.text, passageWords).map((text, i) => ({
              id: passageWords > 0 ? `${d.id}#${i}` : d.id,
              documentId: d.id,
              title: d.title === "" ? undefined : d.title,
              text
            }))
          )
          let vectors: ReadonlyArray<Float32Array> | undefined
          if (embedder !== undefined) {
            const te = performance.now()
            const embedded = yield* embedder.service.embed(rows.map((r) => (r.title ? `${r.title}. ${r.text}` : r.text)))
            embedMs += performance.now() - te
            vectors = embedded.vectors
          }
          const tw = performance.now()
          yield* collection.upsert(vectors === undefined ? rows : rows.map((r, i) => ({ ...r, vector: vectors[i]! })))
          writeMs += performance.now() - tw
          chunks += rows.length
          sampleRss()
          log(`ingested ${documents} documents (${chunks} chunks)`)
        })
      )
    )
    const ti = performance.now()
    yield* collection.optimize()
    const indexMs = performance.now() - ti
    return { documents, chunks, embedMs, writeMs, indexMs, ingestSeconds: (performance.now() - t0) / 1000 } satisfies Ingested
  })

/** Runs every query in every mode the options allow; the modes that cannot run are named with the reason. */
const measureModes = (
  collection: Collection,
  queries: ReadonlyArray<Beir.BeirQuery>,
  qrels: Metrics.Qrels,
  options: Options
) =>
  Effect.gen(function*() {
    const log = options.log ?? (() => {})
    const embedder = options.embedder
    const passageWords = options.passageWords ?? 0
    const modes: Record<string, ModeResult> = {}
    const skipped: Record<string, string> = {}
    const groupBy = passageWords > 0 ? ("document" as const) : ("chunk" as const)
    const measure = (name: string, opts: Retrieve.Options) =>
      Effect.gen(function*() {
        const runs = new Map<string, ReadonlyArray<string>>()
        const times: Array<number> = []
        for (const q of queries) {
          const t = performance.now()
          const hits = yield* Retrieve.retrieve(collection, q.text, {
            ...opts,
            limit: 100,
            candidates: passageWords > 0 ? 300 : 100,
            groupBy
          })
          times.push(performance.now() - t)
          runs.set(q.id, hits.map((h) => h.documentId))
        }
        sampleRss()
        const s = Metrics.evaluate(runs, qrels)
        modes[name] = {
          ...s,
          p50_ms: round(Metrics.percentile(times, 50)),
          p95_ms: round(Metrics.percentile(times, 95))
        }
        log(`${name}: nDCG@10 ${s["ndcg@10"].toFixed(4)}`)
      })

    yield* measure("fulltext", { mode: "fulltext", fullText: options.fullText })
    yield* measure("fulltext-plain", { mode: "fulltext", fullText: Retrieve.plainFullText })
    for (const variant of options.fullTextSweep ?? []) {
      yield* measure(`fulltext ${variant.name}`, { mode: "fulltext", fullText: variant.fullText })
    }
    const reason = options.noEmbedderReason ?? "no embedder configured (--embedder none)"
    if (embedder === undefined) {
      skipped["vector"] = reason
      skipped["hybrid"] = reason
    } else {
      yield* measure("vector", { mode: "vector", embeddings: embedder.service })
      yield* measure("hybrid", {
        mode: "hybrid",
        embeddings: embedder.service,
        fullText: options.fullText,
        fusion: options.fusion
      })
      for (const variant of options.fusionSweep ?? []) {
        yield* measure(`hybrid ${variant.name}`, {
          mode: "hybrid",
          embeddings: embedder.service,
          fullText: options.fullText,
          fusion: variant.fusion
        })
      }
    }
    if (embedder === undefined) skipped["hybrid+rerank"] = reason
    else if (options.reranker === undefined) skipped["hybrid+rerank"] = options.noRerankerReason ?? "no reranker configured"
    else {
      yield* measure("hybrid+rerank", {
        mode: "hybrid",
        embeddings: embedder.service,
        fullText: options.fullText,
        fusion: options.fusion,
        reranker: options.reranker.service,
        rerankTop: 50
      })
    }
    return { modes, skipped }
  })

/**
 * Runs the benchmark.
 *
 * @since 0.1.0
 * @category utils
 */
export const run = (options: Options) =>
  Effect.gen(function*() {
    const ds = yield* Beir.locate(options.dataset, options.split)
    const qrels = yield* Beir.qrels(ds)
    const queries = yield* Beir.queries(ds, qrels)
    const dir = options.storeDir ?? mkdtempSync(join(tmpdir(), "effect-rag-bench-"))
    const cleanup = options.storeDir === undefined
    const embedder = options.embedder
    peakRss = 0
    sampleRss()

    return yield* Effect.gen(function*() {
      const store = yield* VectorStore
      yield* store.drop(ds.name)
      const collection = yield* store.collection({
        name: ds.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "bench",
        embedding: embedder === undefined
          ? undefined
          : { model: embedder.service.defaultModel, dimension: embedder.service.dimension ?? 0 }
      })
      const ingested = yield* ingestCorpus(ds, collection, options)
      const { modes, skipped } = yield* measureModes(collection, queries, qrels, options)
      return {
        dataset: ds.name,
        queries: queries.length,
        documents: ingested.documents,
        embedder: embedder?.id ?? "none",
        modes,
        skipped,
        ingest: {
          chunks: ingested.chunks,
          seconds: round(ingested.ingestSeconds),
          docs_per_s: round(ingested.documents / Math.max(1e-9, ingested.ingestSeconds)),
          embed_seconds: round(ingested.embedMs / 1000),
          write_seconds: round(ingested.writeMs / 1000),
          index_seconds: round(ingested.indexMs / 1000)
        },
        peak_rss_mb: Math.round(peakRss / (1024 * 1024)),
        settings: {
          store: "lancedb",
          batch_size: Math.max(1, options.batchSize ?? 256),
          passage_words: options.passageWords ?? 0,
          fulltext: options.fullText ?? { titleBoost: Retrieve.defaultTitleBoost, feedback: Retrieve.defaultFeedback },
          fusion: options.fusion ?? defaultFusion,
          embedding_model: embedder === undefined
            ? null
            : { model: embedder.service.defaultModel, dimension: embedder.service.dimension ?? null },
          reranker: options.reranker?.id ?? null,
          node: process.version
        }
      } satisfies Report
    }).pipe(
      Effect.provide(LanceDbStore.layer({ uri: dir })),
      Effect.ensuring(Effect.sync(() => {
        if (cleanup) rmSync(dir, { recursive: true, force: true })
      }))
    )
  })

const round = (x: number): number => Math.round(x * 1000) / 1000

/**
 * Formats a report as a table.
 *
 * @since 0.1.0
 * @category utils
 */
export const table = (r: Report): string => {
  const width = Math.max(24, ...Object.keys(r.modes).map((m) => m.length), ...Object.keys(r.skipped).map((m) => m.length))
  const lines = [
    `dataset ${r.dataset}: ${r.documents} documents (${r.ingest.chunks} chunks), ${r.queries} queries, embedder ${r.embedder}`,
    `${"mode".padEnd(width)} nDCG@10  Recall@100  MRR@10   p50 ms   p95 ms`,
    ...Object.entries(r.modes).map(([m, s]) =>
      `${m.padEnd(width)} ${s["ndcg@10"].toFixed(4)}   ${s["recall@100"].toFixed(4)}     ${s["mrr@10"].toFixed(4)}  ${s.p50_ms.toFixed(2).padStart(7)}  ${s.p95_ms.toFixed(2).padStart(7)}`
    ),
    ...Object.entries(r.skipped).map(([m, why]) => `${m.padEnd(width)} skipped: ${why}`),
    `ingest: ${r.ingest.seconds.toFixed(1)} s, ${r.ingest.docs_per_s.toFixed(1)} docs/s (embedding ${r.ingest.embed_seconds.toFixed(1)} s, writing ${r.ingest.write_seconds.toFixed(1)} s, index ${r.ingest.index_seconds.toFixed(1)} s); peak RSS ${r.peak_rss_mb} MB`
  ]
  return lines.join("\n")
}
