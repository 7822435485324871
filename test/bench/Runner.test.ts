import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import type * as Embeddings from "../../src/api/Embeddings.js"
import * as Runner from "../../src/bench/Runner.js"
import { fusionSweep, parseFusion } from "../../src/cli/commands/bench.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import { VectorStore } from "../../src/store/VectorStore.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-bench-test-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const docs = [
  { _id: "d1", title: "Aspirin and heart attacks", text: "Daily low-dose aspirin reduces the risk of myocardial infarction in adults." },
  { _id: "d2", title: "Vitamin D", text: "Vitamin D supplements do not prevent fractures in older people." },
  { _id: "d3", title: "Coffee", text: "Coffee consumption is associated with lower mortality." },
  { _id: "d4", title: "Exercise", text: "Aerobic exercise improves memory in older adults. Walking grows the hippocampus." },
  { _id: "d5", title: "Sleep", text: "Short sleep increases appetite hormones and weight gain." }
]
const queries = [
  { _id: "q1", text: "aspirin lowers myocardial infarction risk" },
  { _id: "q2", text: "walking improves memory in the elderly" },
  { _id: "q3", text: "vitamin D prevents fractures" }
]
const qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t2\nq3\td2\t1\n"

const dataset = join(root, "tiny")
mkdirSync(join(dataset, "qrels"), { recursive: true })
writeFileSync(join(dataset, "corpus.jsonl"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n")
writeFileSync(join(dataset, "queries.jsonl"), queries.map((d) => JSON.stringify(d)).join("\n") + "\n")
writeFileSync(join(dataset, "qrels", "test.tsv"), qrels)

/** A deterministic toy embedder: bag of hashed words in 32 dimensions, normalised. */
const toyEmbedder: Embeddings.Service = {
  defaultModel: "toy-32",
  dimension: 32,
  create: () => Effect.die("not used"),
  embed: (texts) =>
    Effect.succeed({
      model: "toy-32",
      totalTokens: 0,
      vectors: texts.map((t) => {
        const v = new Float32Array(32)
        for (const w of t.toLowerCase().match(/[a-z]+/g) ?? []) {
          let h = 0
          for (const ch of w.slice(0, 5)) h = (h * 31 + ch.charCodeAt(0)) % 32
          v[h] = (v[h] ?? 0) + 1
        }
        const n = Math.hypot(...v) || 1
        return v.map((x) => x / n)
      })
    })
}

describe("retrieval benchmark", () => {
  it.live("runs on a BEIR folder and reports the stable JSON shape", () =>
    Effect.gen(function*() {
      const report = yield* Runner.run({ dataset, batchSize: 2 })
      expect(report.dataset).toBe("tiny")
      expect(report.documents).toBe(5)
      expect(report.queries).toBe(3)
      expect(report.embedder).toBe("none")
      expect(Object.keys(report.modes).sort()).toEqual(["fulltext", "fulltext-plain"])
      expect(Object.keys(report.skipped).sort()).toEqual(["hybrid", "hybrid+rerank", "vector"])
      // every query's relevant document comes first on this tiny corpus
      expect(report.modes["fulltext-plain"]!["ndcg@10"]).toBe(1)
      expect(report.modes["fulltext"]!["mrr@10"]).toBe(1)
      for (const m of Object.values(report.modes)) {
        expect(Object.keys(m).sort()).toEqual(["mrr@10", "ndcg@10", "p50_ms", "p95_ms", "recall@100"])
      }
      expect(report.ingest.chunks).toBe(5)
      expect(Runner.table(report)).toContain("fulltext")
    }))

  it.live("runs vector and hybrid modes with an embedder, passages rolled up to documents", () =>
    Effect.gen(function*() {
      const report = yield* Runner.run({ dataset, passageWords: 6, embedder: { id: "toy", service: toyEmbedder } })
      expect(Object.keys(report.modes).sort()).toEqual(["fulltext", "fulltext-plain", "hybrid", "vector"])
      expect(report.skipped["hybrid+rerank"]).toBe("no reranker configured")
      expect(report.ingest.chunks).toBeGreaterThan(5)
      expect(report.modes["hybrid"]!["recall@100"]).toBe(1)
    }))

  it.live("measures each fusion of the sweep on the same index, and reports why rerank was skipped", () =>
    Effect.gen(function*() {
      const report = yield* Runner.run({
        dataset,
        embedder: { id: "toy", service: toyEmbedder },
        fusionSweep: [{ name: "rrf:60", fusion: parseFusion("rrf:60")! }, { name: "weighted:0.5", fusion: parseFusion("weighted:0.5")! }],
        noRerankerReason: "no reranker configured (--reranker none)"
      })
      expect(Object.keys(report.modes).sort()).toEqual([
        "fulltext",
        "fulltext-plain",
        "hybrid",
        "hybrid rrf:60",
        "hybrid weighted:0.5",
        "vector"
      ])
      expect(report.skipped["hybrid+rerank"]).toBe("no reranker configured (--reranker none)")
      expect(report.settings["fusion"]).toEqual({ _tag: "Weighted", textWeight: 0.9 })
      expect(report.settings["embedding_model"]).toEqual({ model: "toy-32", dimension: 32 })
      expect(Runner.table(report)).toContain("hybrid weighted:0.5")
    }))

  it("parses fusions given on the command line", () => {
    expect(parseFusion("rrf")).toEqual({ _tag: "Rrf", k: 60, textWeight: 1 })
    expect(parseFusion("rrf:20:3")).toEqual({ _tag: "Rrf", k: 20, textWeight: 3 })
    expect(parseFusion("weighted")).toEqual({ _tag: "Weighted", textWeight: 0.9 })
    expect(parseFusion("weighted:0.8")).toEqual({ _tag: "Weighted", textWeight: 0.8 })
    for (const bad of ["weighted:1.5", "rrf:0", "rrf:x", "max", ""]) expect(parseFusion(bad)).toBeUndefined()
    expect(fusionSweep.map((f) => f.name)).toContain("weighted:0.9")
  })

  it.live("a missing folder fails naming the file", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Runner.run({ dataset: join(root, "nope") }))
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("corpus.jsonl")
    }))
})

describe("Retrieve", () => {
  it.effect("vector modes without an embedder fail with a ConfigurationError that says so", () =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "r" })
      const exit = yield* Effect.exit(Retrieve.retrieve(c, "x", { mode: "hybrid" }))
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("needs an embedder")
    }).pipe(Effect.provide(MemoryStore.layer)))

  it.effect("feedback expands the query with words of the top hits; rerank reorders the top", () =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "r" })
      yield* c.upsert(docs.map((d) => ({ id: d._id, documentId: d._id, title: d.title, text: d.text })))
      const first = yield* c.searchText("aspirin", { limit: 5 })
      const q = Retrieve.feedbackQuery("aspirin", first, { docs: 1, terms: 3, originalWeight: 0.5 })
      expect(typeof q).toBe("object")
      const terms = typeof q === "string" ? [] : q.terms
      expect(terms[0]).toEqual({ text: "aspirin", weight: expect.any(Number) })
      expect(terms.length).toBe(3)
      const plain = yield* Retrieve.retrieve(c, "memory older adults", { limit: 3 })
      expect(plain[0]?.documentId).toBe("d4")
      const reranked = yield* Retrieve.retrieve(c, "memory older adults", {
        limit: 3,
        rerankTop: 3,
        reranker: {
          defaultModel: "reverse",
          rerank: (req) => Effect.succeed({ results: req.documents.map((_, index) => ({ index, relevance_score: index })) })
        }
      })
      expect(reranked.map((h) => h.id)).toEqual(plain.map((h) => h.id).reverse())
      const rolled = Retrieve.rollUp([
        { id: "a#0", documentId: "a", text: "", title: undefined, metadata: {}, score: 1 },
        { id: "b#0", documentId: "b", text: "", title: undefined, metadata: {}, score: 3 },
        { id: "a#1", documentId: "a", text: "", title: undefined, metadata: {}, score: 2 }
      ])
      expect(rolled.map((h) => h.id)).toEqual(["b#0", "a#1"])
    }).pipe(Effect.provide(MemoryStore.layer)))
})
