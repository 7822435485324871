/**
 * The ONNX layers end to end on real models: tiny BERT-shaped model folders written here at
 * test time (`test/support/onnx.ts`: a real WordPiece `tokenizer.json`, a `config.json`, and
 * ONNX graphs of a few KB with fixed weights), loaded by transformers.js on onnxruntime-node
 * with `fetch` replaced by one that fails, so nothing can come from the network.
 *
 * The graphs make every figure predictable, and the tests check the layers against those
 * predictions:
 * - the embedder's token vectors are rows of a fixed table, so a `mean`-pooled vector is the
 *   normalised mean of the rows of the text's tokens (`[CLS]` and `[SEP]` included, padding
 *   excluded) and a `cls`-pooled one the `[CLS]` row; batching and padding change nothing; a
 *   text past the model's 64 tokens keeps its first 62 and its `[SEP]`; the OpenAI-shaped
 *   `create` answers in float and base64 and refuses other models; weights named
 *   `model.onnx`, `onnx/model_quantized.onnx` and `onnx/model_fp16.onnx` (float16 outputs) work;
 * - the cross-encoder's logit is the number of word occurrences the query and the document
 *   share, minus 1.5, minus 0.01 per document token, so `OnnxRerank` scores are
 *   `sigmoid(overlap - 1.5 - 0.01 * length)`, sorted, cut to `top_n`, whatever the batching,
 *   with the query as the first segment and the document as the second; a pair past 64 tokens
 *   is cut longest side first with both `[SEP]` kept; float16 logits are read as numbers;
 * - `Retrieve.retrieve` over an in-memory collection reorders its top candidates by those
 *   scores; the benchmark runner measures `vector`, `hybrid` and `hybrid+rerank` with both models.
 */
import { describe, expect, it } from "@effect/vitest"
import type { PreTrainedTokenizer } from "@huggingface/transformers"
import { Effect, Exit } from "effect"
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, vi } from "vitest"
import * as Embeddings from "../../src/api/Embeddings.js"
import type * as Rerank from "../../src/api/Rerank.js"
import * as Runner from "../../src/bench/Runner.js"
import { resolveEmbedder, resolveReranker } from "../../src/Wiring.js"
import { importTransformers } from "../../src/engines/models/internal/embed-onnx.js"
import * as OnnxEmbeddings from "../../src/engines/models/OnnxEmbeddings.js"
import * as OnnxRerank from "../../src/engines/models/OnnxRerank.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import { VectorStore } from "../../src/store/VectorStore.js"
import {
  type EmbeddingModel,
  fromHalfBits,
  specialTokens,
  tokenId,
  toHalfBits,
  vocab,
  writeCrossEncoder,
  writeEmbeddingModel
} from "../support/onnx.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-onnx-model-"))
const fetchSpy = vi.fn(() => Promise.reject(new Error("no network in this test")))

const embedModel = writeEmbeddingModel(join(root, "tiny-embed"))
const crossModel = writeCrossEncoder(join(root, "tiny-cross"))
const D = embedModel.dimension

let embedder: Embeddings.Service
let reranker: Rerank.Service
let tokenizer: PreTrainedTokenizer

beforeAll(async () => {
  vi.stubGlobal("fetch", fetchSpy)
  embedder = await Effect.runPromise(OnnxEmbeddings.make({ model: embedModel.dir }))
  reranker = await Effect.runPromise(OnnxRerank.make({ model: crossModel.dir }))
  // the same tokenizer.json, read by transformers.js on its own, to predict what the layers see
  const t = await importTransformers()
  tokenizer = await t.AutoTokenizer.from_pretrained(embedModel.dir, { local_files_only: true })
}, 60_000)
afterAll(() => {
  vi.unstubAllGlobals()
  rmSync(root, { recursive: true, force: true })
})

// -----------------------------------------------------------------------------
// Predictions
// -----------------------------------------------------------------------------

const ids = (text: string): Array<number> => tokenizer.encode(text)
const wordIds = (text: string): Array<number> => tokenizer.encode(text, { add_special_tokens: false })

const unit = (v: ArrayLike<number>): Float32Array => {
  const n = Math.sqrt(Array.from(v).reduce((s, x) => s + x * x, 0))
  return Float32Array.from(v, (x) => x / n)
}

/** The mean of the table rows of some tokens, normalised. */
const meanOf = (model: EmbeddingModel, tokens: ReadonlyArray<number>): Float32Array => {
  const sum = new Float64Array(model.dimension)
  for (const id of tokens) model.row(id).forEach((x, j) => (sum[j] = sum[j]! + x))
  return unit(sum.map((x) => x / tokens.length))
}
/** The mean-pooled, normalised vector the embedding graph must give for a text. */
const meanVector = (text: string): Float32Array => meanOf(embedModel, ids(text))

/** Word occurrences shared by two token lists (subwords count, special tokens do not). */
const shared = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  const count = (tokens: ReadonlyArray<number>) => {
    const m = new Map<number, number>()
    for (const id of tokens) if (id >= specialTokens.length) m.set(id, (m.get(id) ?? 0) + 1)
    return m
  }
  const other = count(b)
  let n = 0
  for (const [id, c] of count(a)) n += c * (other.get(id) ?? 0)
  return n
}
const overlap = (query: string, document: string): number => shared(wordIds(query), wordIds(document))
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x))
/** The cross-encoder's logit for the (possibly cut) word tokens of a query and a document; its second segment is the document's tokens and a [SEP]. */
const logitOf = (query: ReadonlyArray<number>, document: ReadonlyArray<number>): number =>
  shared(query, document) - crossModel.bias - crossModel.lengthPenalty * (document.length + 1)
const predictedScore = (query: string, document: string) => sigmoid(logitOf(wordIds(query), wordIds(document)))
/** A text of `n` word tokens, cycling through some words of the vocabulary. */
const words = (n: number, from: ReadonlyArray<string>): string => Array.from({ length: n }, (_, i) => from[i % from.length]!).join(" ")

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!
  return s
}
const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length)
  let m = 0
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!))
  return m
}

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  throw new Error(`expected a failure, got ${String(exit)}`)
}

// -----------------------------------------------------------------------------
// The model folders
// -----------------------------------------------------------------------------

describe("the tiny model folders", () => {
  it("are a few KB and hold a real WordPiece tokenizer (lower case, punctuation, subwords, templates)", () => {
    expect(statSync(join(embedModel.dir, "onnx", "model.onnx")).size).toBeLessThan(2_000)
    expect(statSync(join(crossModel.dir, "onnx", "model.onnx")).size).toBeLessThan(8_000)
    expect(ids("The cats played.")).toEqual(
      ["[CLS]", "the", "cat", "##s", "play", "##ed", ".", "[SEP]"].map(tokenId)
    )
    expect(ids("Kittens? zebra")).toEqual(["[CLS]", "kitten", "##s", "[UNK]", "[UNK]", "[SEP]"].map(tokenId))
    const pair = tokenizer("cat", { text_pair: "a dog" })
    expect(Array.from(pair.input_ids.data, Number)).toEqual(["[CLS]", "cat", "[SEP]", "a", "dog", "[SEP]"].map(tokenId))
    expect(Array.from(pair.token_type_ids!.data, Number)).toEqual([0, 0, 0, 1, 1, 1])
    expect(vocab.length).toBe(37)
  })
})

// -----------------------------------------------------------------------------
// OnnxEmbeddings
// -----------------------------------------------------------------------------

describe("OnnxEmbeddings on a real model", () => {
  const texts = ["The cats played.", "a dog", "", "the stock market fell and rates fell, in the rain."]

  it.effect("loads offline and reports the model's dimension and the folder name as model id", () =>
    Effect.gen(function*() {
      expect(embedder.dimension).toBe(D)
      expect(embedder.defaultModel).toBe("tiny-embed")
      const named = yield* OnnxEmbeddings.make({ model: embedModel.dir, modelId: "tiny/bert-8" })
      expect(named.defaultModel).toBe("tiny/bert-8")
      expect((yield* named.embed(["cat"])).model).toBe("tiny/bert-8")
      expect(fetchSpy).not.toHaveBeenCalled()
    }))

  it.effect("mean pooling: the normalised mean of the token rows, [CLS] and [SEP] included, in input order", () =>
    Effect.gen(function*() {
      const r = yield* embedder.embed(texts)
      expect(r.model).toBe("tiny-embed")
      expect(r.vectors).toHaveLength(texts.length)
      r.vectors.forEach((v, i) => {
        expect(v).toBeInstanceOf(Float32Array)
        expect(v.length).toBe(D)
        expect(Math.sqrt(dot(v, v))).toBeCloseTo(1, 6)
        expect(maxDiff(v, meanVector(texts[i]!))).toBeLessThan(1e-5)
      })
      // the empty text is [CLS] [SEP]: the mean of two rows
      expect(maxDiff(r.vectors[2]!, unit(embedModel.row(tokenId("[CLS]")).map((x, j) => x + embedModel.row(tokenId("[SEP]"))[j]!))))
        .toBeLessThan(1e-5)
      // the tokens read are the attention mask's ones: every token, special ones included
      expect(r.totalTokens).toBe(texts.reduce((s, t) => s + ids(t).length, 0))
    }))

  it.effect("cls pooling: the [CLS] row (the first position), whatever the text", () =>
    Effect.gen(function*() {
      const cls = yield* OnnxEmbeddings.make({ model: embedModel.dir, pooling: "cls" })
      expect(cls.dimension).toBe(D)
      const r = yield* cls.embed(texts)
      const expected = unit(embedModel.row(tokenId("[CLS]")))
      for (const v of r.vectors) expect(maxDiff(v, expected)).toBeLessThan(1e-5)
      expect(maxDiff(r.vectors[0]!, meanVector(texts[0]!))).toBeGreaterThan(0.01)
    }))

  it.effect("padding changes nothing: a batch of different lengths gives the vectors of one-by-one calls", () =>
    Effect.gen(function*() {
      const batched = yield* embedder.embed(texts, { batchSize: texts.length })
      const single = yield* embedder.embed(texts, { batchSize: 1 })
      const split = yield* embedder.embed(texts, { batchSize: 3, concurrency: 2 })
      batched.vectors.forEach((v, i) => {
        expect(maxDiff(v, single.vectors[i]!)).toBeLessThan(1e-6)
        expect(maxDiff(v, split.vectors[i]!)).toBeLessThan(1e-6)
      })
      expect(batched.totalTokens).toBe(single.totalTokens)
    }))

  it.effect("answers create in the OpenAI shape (float and base64) and refuses other models and dimensions", () =>
    Effect.gen(function*() {
      const floats = yield* embedder.create({ model: "tiny-embed", input: ["a kitten", "bread and cheese"] })
      expect(floats.model).toBe("tiny-embed")
      expect(floats.data.map((d) => d.index)).toEqual([0, 1])
      expect(maxDiff(floats.data[1]!.embedding as ReadonlyArray<number>, meanVector("bread and cheese"))).toBeLessThan(1e-5)
      expect(floats.usage?.total_tokens).toBe(ids("a kitten").length + ids("bread and cheese").length)
      const b64 = yield* embedder.create({ model: "tiny-embed", input: "a kitten", encoding_format: "base64" })
      const decoded = Embeddings.decodeBase64Floats(b64.data[0]!.embedding as string)!
      expect(Array.from(decoded)).toEqual(floats.data[0]!.embedding)
      const other = failure(yield* Effect.exit(embedder.create({ model: "text-embedding-3-small", input: "x" })))
      expect(other._tag).toBe("BadRequest")
      expect(other.message).toContain("tiny-embed")
      const dims = failure(yield* Effect.exit(embedder.create({ model: "tiny-embed", input: "x", dimensions: 4 })))
      expect(dims._tag).toBe("BadRequest")
    }))

  it.effect("cuts a long text as sentence-transformers does: the first tokens, then [SEP]", () =>
    Effect.gen(function*() {
      // 100 word tokens; the model takes 64 (tokenizer_config model_max_length)
      const long = words(100, ["the", "cat", "sat", "on", "a", "mat", "in", "the", "rain", "."])
      expect(wordIds(long)).toHaveLength(100)
      const r = yield* embedder.embed([long, "cat"])
      const kept = [tokenId("[CLS]"), ...wordIds(long).slice(0, 62), tokenId("[SEP]")]
      expect(maxDiff(r.vectors[0]!, meanOf(embedModel, kept))).toBeLessThan(1e-5)
      expect(maxDiff(r.vectors[1]!, meanVector("cat"))).toBeLessThan(1e-5)
      expect(r.totalTokens).toBe(64 + 3)
    }))

  it.effect("finds the weights under the other names it accepts: model.onnx, model_quantized.onnx, model_fp16.onnx", () =>
    Effect.gen(function*() {
      const text = "the cat sat on the mat."
      const top = writeEmbeddingModel(join(root, "top-level"), { weights: "model.onnx" })
      const q8 = writeEmbeddingModel(join(root, "quantized-name"), { weights: "onnx/model_quantized.onnx" })
      for (const m of [top, q8]) {
        const service = yield* OnnxEmbeddings.make({ model: m.dir })
        const r = yield* service.embed([text])
        expect(maxDiff(r.vectors[0]!, meanVector(text))).toBeLessThan(1e-5)
      }
      // float16 outputs (raw 16-bit values on Node 20) are read as numbers, not as their bits
      const fp16 = writeEmbeddingModel(join(root, "half"), { weights: "onnx/model_fp16.onnx" })
      const service = yield* OnnxEmbeddings.make({ model: fp16.dir })
      expect(service.dimension).toBe(D)
      const r = yield* service.embed([text, "a dog"])
      expect(maxDiff(r.vectors[0]!, meanOf(fp16, ids(text)))).toBeLessThan(1e-5)
      expect(maxDiff(r.vectors[1]!, meanOf(fp16, ids("a dog")))).toBeLessThan(1e-5)
      expect(maxDiff(r.vectors[0]!, meanVector(text))).toBeLessThan(1e-2)
      expect(fetchSpy).not.toHaveBeenCalled()
    }))
})

// -----------------------------------------------------------------------------
// OnnxRerank
// -----------------------------------------------------------------------------

describe("OnnxRerank on a real cross-encoder", () => {
  const query = "the cat sat on the mat"
  const documents = [
    "a dog is playing in the river.", // the: 2x1 = 2
    "bread and cheese.", // 0
    "The cat sat on the mat.", // the 2x2, cat, sat, on, mat = 8
    "a kitten sat on a mat.", // sat, on, mat = 3
    "the cat and the dog." // the 2x2, cat = 5
  ]

  it.effect("scores sigmoid(shared words - 1.5 - 0.01 * length), sorted, with indices into the documents", () =>
    Effect.gen(function*() {
      expect(reranker.defaultModel).toBe("tiny-cross")
      expect(documents.map((d) => overlap(query, d))).toEqual([2, 0, 8, 3, 5])
      const r = yield* reranker.rerank({ model: "tiny-cross", query, documents })
      expect(r.model).toBe("tiny-cross")
      expect(r.results.map((x) => x.index)).toEqual([2, 4, 3, 0, 1])
      for (const x of r.results) {
        expect(x.relevance_score).toBeGreaterThan(0)
        expect(x.relevance_score).toBeLessThan(1)
        expect(x.relevance_score).toBeCloseTo(predictedScore(query, documents[x.index]!), 6)
        expect(x.document).toBeUndefined()
      }
      // "bread and cheese.": nothing shared, four tokens and [SEP]
      expect(r.results[4]!.relevance_score).toBeCloseTo(sigmoid(0 - 1.5 - 0.01 * 5), 6)
      // the tokens read: every query-document pair, [CLS] A [SEP] B [SEP]
      expect(r.usage?.total_tokens).toBe(documents.reduce((s, d) => s + tokenizer.encode(query, { text_pair: d }).length, 0))
      expect(fetchSpy).not.toHaveBeenCalled()
    }))

  it.effect("reads the query as the first segment and the document as the second", () =>
    Effect.gen(function*() {
      const long = "the cat sat on the mat and the dog sat in the rain."
      const a = yield* reranker.rerank({ model: "", query: "cat", documents: [long] })
      const b = yield* reranker.rerank({ model: "", query: long, documents: ["cat"] })
      // one word shared either way; only the document's length differs (14 tokens and [SEP], or 1 and [SEP])
      expect(wordIds(long)).toHaveLength(14)
      expect(a.results[0]!.relevance_score).toBeCloseTo(sigmoid(1 - 1.5 - 0.01 * 15), 6)
      expect(b.results[0]!.relevance_score).toBeCloseTo(sigmoid(1 - 1.5 - 0.01 * 2), 6)
    }))

  it.effect("cuts a long pair longest side first and keeps both [SEP]: a long query leaves room for the document", () =>
    Effect.gen(function*() {
      // the model takes 64 tokens: 61 for the texts besides [CLS] [SEP] [SEP]
      const longQuery = words(100, ["the", "cat", "sat", "on", "the", "mat", "."])
      const longDocument = words(80, ["a", "dog", "sat", "on", "the", "mat", "in", "the", "rain", "."])
      const q = wordIds(longQuery)
      const d = wordIds(longDocument)
      const short = wordIds("the cat sat.")
      expect([q.length, d.length, short.length]).toEqual([100, 80, 4])
      const cases = [
        // the short document stays whole; the query keeps 61 - 4 tokens
        { query: longQuery, document: "the cat sat.", kept: [q.slice(0, 57), short] },
        // the short query stays whole; the document keeps 61 - 4 tokens, then its [SEP]
        { query: "the cat sat.", document: longDocument, kept: [short, d.slice(0, 57)] },
        // both long: the shorter (the document) keeps half the room (30), the query the rest
        { query: longQuery, document: longDocument, kept: [q.slice(0, 31), d.slice(0, 30)] }
      ] as const
      for (const c of cases) {
        const r = yield* reranker.rerank({ model: "", query: c.query, documents: [c.document] })
        expect(r.results[0]!.relevance_score).toBeCloseTo(sigmoid(logitOf(c.kept[0], c.kept[1])), 6)
        expect(r.usage?.total_tokens).toBe(64)
      }
      // cutting the joined sequence at 64 instead (what transformers.js does) would leave the
      // long query no document at all: logit -1.5, whatever the document
      const first = yield* reranker.rerank({ model: "", query: longQuery, documents: ["the cat sat.", "bread."] })
      expect(first.results[0]!.index).toBe(0)
      expect(first.results[0]!.relevance_score).toBeGreaterThan(sigmoid(0))
    }))

  it.effect("reads float16 logits as numbers (model_fp16.onnx)", () =>
    Effect.gen(function*() {
      const half = writeCrossEncoder(join(root, "half-cross"), { weights: "onnx/model_fp16.onnx" })
      const service = yield* OnnxRerank.make({ model: half.dir })
      const r = yield* service.rerank({ model: "", query, documents })
      expect(r.results.map((x) => x.index)).toEqual([2, 4, 3, 0, 1])
      for (const x of r.results) {
        const logit = logitOf(wordIds(query), wordIds(documents[x.index]!))
        expect(x.relevance_score).toBeCloseTo(sigmoid(fromHalfBits(toHalfBits(logit))), 6)
      }
    }))

  it.effect("respects top_n and return_documents; the default model name is accepted", () =>
    Effect.gen(function*() {
      const r = yield* reranker.rerank({ model: "", query, documents, top_n: 2, return_documents: true })
      expect(r.results.map((x) => x.index)).toEqual([2, 4])
      expect(r.results.map((x) => x.document?.text)).toEqual([documents[2], documents[4]])
      const none = yield* reranker.rerank({ model: "tiny-cross", query, documents: [] })
      expect(none.results).toEqual([])
    }))

  it.effect("batching and padding change no score", () =>
    Effect.gen(function*() {
      const small = yield* OnnxRerank.make({ model: crossModel.dir, batchSize: 2 })
      const a = yield* small.rerank({ model: "", query, documents })
      const b = yield* reranker.rerank({ model: "", query, documents })
      expect(a.results.map((x) => x.index)).toEqual(b.results.map((x) => x.index))
      a.results.forEach((x, i) => expect(x.relevance_score).toBeCloseTo(b.results[i]!.relevance_score, 6))
      expect(a.usage?.total_tokens).toBe(b.usage?.total_tokens)
    }))

  it.effect("refuses another model with a BadRequest", () =>
    Effect.gen(function*() {
      const e = failure(yield* Effect.exit(reranker.rerank({ model: "mixr-v1", query, documents })))
      expect(e._tag).toBe("BadRequest")
      expect(e.message).toContain("tiny-cross")
    }))
})

// -----------------------------------------------------------------------------
// Retrieval with the reranker
// -----------------------------------------------------------------------------

describe("retrieval with the ONNX models", () => {
  const docs = [
    { id: "r1", text: "bread and cheese and fish." },
    { id: "r2", text: "the dog sat in the rain." },
    { id: "r3", text: "a kitten is playing on the mat." },
    { id: "r4", text: "the stock market fell." },
    { id: "r5", text: "the cat sat on the mat." },
    { id: "r6", text: "money in the bank." }
  ]
  const query = "the cat sat on the mat"

  it.effect("vector search ranks by the predicted vectors; the reranker reorders the top candidates by shared words", () =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "tiny", embedding: { model: embedder.defaultModel, dimension: D } })
      const { vectors } = yield* embedder.embed(docs.map((d) => d.text))
      yield* c.upsert(docs.map((d, i) => ({ id: d.id, documentId: d.id, text: d.text, vector: vectors[i]! })))

      // first stage: cosine of the predicted mean vectors
      const q = meanVector(query)
      const byCosine = [...docs].sort((a, b) => dot(q, meanVector(b.text)) - dot(q, meanVector(a.text))).map((d) => d.id)
      const base = yield* Retrieve.retrieve(c, query, { mode: "vector", embeddings: embedder, limit: 6 })
      expect(base.map((h) => h.id)).toEqual(byCosine)

      // the reranker over all candidates: the predicted scores' order (ties keep the first
      // stage's), the hits' scores those of the reranker
      const textOf = (id: string) => docs.find((d) => d.id === id)!.text
      const byScore = (ranked: ReadonlyArray<string>) =>
        [...ranked].sort((a, b) => predictedScore(query, textOf(b)) - predictedScore(query, textOf(a)))
      expect(byScore(byCosine)).not.toEqual(byCosine)
      const all = yield* Retrieve.retrieve(c, query, { mode: "vector", embeddings: embedder, limit: 6, reranker })
      expect(all.map((h) => h.id)).toEqual(byScore(byCosine))
      expect(all.map((h) => h.id).slice(0, 3)).toEqual(["r5", "r2", "r3"])
      for (const h of all) expect(h.score).toBeCloseTo(predictedScore(query, h.text), 6)

      // only the top 3 candidates are reranked; the rest keep the first stage's order
      const top3 = yield* Retrieve.retrieve(c, query, { mode: "vector", embeddings: embedder, limit: 6, reranker, rerankTop: 3 })
      expect(top3.map((h) => h.id)).toEqual([...byScore(byCosine.slice(0, 3)), ...byCosine.slice(3)])

      // full text first, then the reranker: the same shared-word order at the top
      const text = yield* Retrieve.retrieve(c, query, { limit: 2, reranker })
      expect(text.map((h) => h.id)).toEqual(["r5", "r2"])
    }).pipe(Effect.provide(MemoryStore.layer)))
})

// -----------------------------------------------------------------------------
// The benchmark runner
// -----------------------------------------------------------------------------

describe("the retrieval benchmark with the ONNX models", () => {
  const corpus = [
    { _id: "d1", title: "Cats", text: "the cat sat on the mat." },
    { _id: "d2", title: "Dogs", text: "a dog sat in the rain." },
    { _id: "d3", title: "Kittens", text: "a kitten is playing." },
    { _id: "d4", title: "Markets", text: "the stock market fell and rates fell." },
    { _id: "d5", title: "Banks", text: "money and interest of the bank." },
    { _id: "d6", title: "Food", text: "bread and cheese and fish." }
  ]
  const queries = [
    { _id: "q1", text: "cat on the mat" },
    { _id: "q2", text: "stock market rates" }
  ]
  const relevant: Record<string, string> = { q1: "d1", q2: "d4" }

  it.scoped("reports vector, hybrid and hybrid+rerank with metrics in [0, 1]; the reranker puts the relevant document first", () =>
    Effect.gen(function*() {
      const dataset = join(root, "tiny-beir")
      mkdirSync(join(dataset, "qrels"), { recursive: true })
      writeFileSync(join(dataset, "corpus.jsonl"), corpus.map((d) => JSON.stringify(d)).join("\n") + "\n")
      writeFileSync(join(dataset, "queries.jsonl"), queries.map((q) => JSON.stringify(q)).join("\n") + "\n")
      writeFileSync(join(dataset, "qrels", "test.tsv"), "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\n")

      // the prediction: each relevant document gets strictly the best score from the reranker
      // (which reads `title\ntext`), as it shares the most words with its query
      for (const q of queries) {
        const scores = corpus.map((d) => ({ id: d._id, score: predictedScore(q.text, `${d.title}\n${d.text}`) }))
        const best = scores.find((s) => s.id === relevant[q._id])!
        for (const s of scores) if (s !== best) expect(s.score).toBeLessThan(best.score)
      }

      // as `effect-rag bench --embedder onnx:DIR --reranker onnx:DIR` resolves them
      const e = yield* resolveEmbedder(`onnx:${embedModel.dir}`)
      const r = yield* resolveReranker(`onnx:${crossModel.dir}`)
      expect(e.reason).toBeUndefined()
      expect(r.reason).toBeUndefined()
      expect(e.embedder?.id).toBe("onnx:tiny-embed")
      expect(r.reranker?.id).toBe("onnx:tiny-cross")

      const report = yield* Runner.run({ dataset, embedder: e.embedder, reranker: r.reranker, batchSize: 4 })
      expect(report.documents).toBe(6)
      expect(report.queries).toBe(2)
      expect(report.embedder).toBe("onnx:tiny-embed")
      expect(report.skipped).toEqual({})
      expect(Object.keys(report.modes).sort()).toEqual(["fulltext", "fulltext-plain", "hybrid", "hybrid+rerank", "vector"])
      for (const mode of ["vector", "hybrid", "hybrid+rerank"]) {
        const m = report.modes[mode]!
        for (const k of ["ndcg@10", "recall@100", "mrr@10"] as const) {
          expect(m[k]).toBeGreaterThanOrEqual(0)
          expect(m[k]).toBeLessThanOrEqual(1)
        }
        // six documents, a hundred hits: every relevant document is found
        expect(m["recall@100"]).toBe(1)
        expect(m.p50_ms).toBeGreaterThanOrEqual(0)
      }
      expect(report.modes["hybrid+rerank"]!["ndcg@10"]).toBe(1)
      expect(report.modes["hybrid+rerank"]!["mrr@10"]).toBe(1)
      expect(report.settings["embedding_model"]).toEqual({ model: "tiny-embed", dimension: D })
      expect(report.settings["reranker"]).toBe("onnx:tiny-cross")
      expect(fetchSpy).not.toHaveBeenCalled()
    }), 30_000)
})
