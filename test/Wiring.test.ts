/**
 * The wiring: choices by name and URI from flags, settings (a config provider standing for the
 * environment and the config file) and defaults; the store by URI scheme, with real stores (the
 * memory store, LanceDB in a temp folder); the command line over `--db memory:`.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as RagError from "../src/RagError.js"
import { VectorStore } from "../src/store/VectorStore.js"
import * as Wiring from "../src/Wiring.js"
import { repoRoot, runCli } from "./support/cli.js"

const withSettings = (settings: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(settings))))

describe("Wiring: choices by name", () => {
  it.effect("a flag wins over the setting, the setting over the default", () =>
    Effect.gen(function*() {
      expect(yield* Wiring.embedderSpec(Option.none()).pipe(withSettings({}))).toBe("none")
      expect(yield* Wiring.embedderSpec(Option.none()).pipe(withSettings({ EFFECT_RAG_EMBEDDER: "use-lite" }))).toBe("use-lite")
      expect(yield* Wiring.embedderSpec(Option.some("onnx:/m")).pipe(withSettings({ EFFECT_RAG_EMBEDDER: "use-lite" }))).toBe("onnx:/m")
      expect(yield* Wiring.rerankerSpec(Option.none()).pipe(withSettings({ EFFECT_RAG_RERANKER: "remote" }))).toBe("remote")
      // an empty setting counts as unset
      expect(yield* Wiring.rerankerSpec(Option.none()).pipe(withSettings({ EFFECT_RAG_RERANKER: "" }))).toBe("none")
    }))

  it.scoped("an embedder that cannot be built is none with the reason, never another one", () =>
    Effect.gen(function*() {
      const none = yield* Wiring.resolveEmbedder("none")
      expect(none.embedder).toBeUndefined()
      const unknown = yield* Wiring.resolveEmbedder("bogus")
      expect(unknown).toEqual({ embedder: undefined, reason: 'unknown embedder "bogus" (none, remote, use-lite, onnx:DIR)' })
      const noDimension = yield* Wiring.resolveEmbedder("remote").pipe(withSettings({}))
      expect(noDimension.reason).toContain("EFFECT_RAG_EMBEDDING_DIMENSION")
      const missingModel = yield* Wiring.resolveEmbedder(`onnx:${join(tmpdir(), "no-such-model-effect-rag")}`)
      expect(missingModel.embedder).toBeUndefined()
      expect(missingModel.reason).toMatch(/^onnx:/)
      const reranker = yield* Wiring.resolveReranker("bogus")
      expect(reranker.reason).toBe('unknown reranker "bogus" (none, remote, onnx:DIR)')
    }))

  it.scoped("the remote embedder takes its model and dimension from the settings (the config file counts)", () =>
    Effect.gen(function*() {
      const r = yield* Wiring.resolveEmbedder("remote").pipe(
        withSettings({ EFFECT_RAG_EMBEDDING_MODEL: "m-1", EFFECT_RAG_EMBEDDING_DIMENSION: "8", EFFECT_RAG_BASE_URL: "http://127.0.0.1:9" })
      )
      expect(r.embedder?.id).toBe("remote:m-1")
      expect(r.embedder?.service.dimension).toBe(8)
      const reranker = yield* Wiring.resolveReranker("remote").pipe(withSettings({ EFFECT_RAG_RERANK_MODEL: "r-1" }))
      expect(reranker.reranker?.id).toBe("remote:r-1")
    }))

  it.effect("upload and web engines: local by default, remote by setting, anything else a ConfigurationError", () =>
    Effect.gen(function*() {
      expect(yield* Wiring.uploadEngine.pipe(withSettings({}))).toBe("local")
      expect(yield* Wiring.webEngine.pipe(withSettings({ EFFECT_RAG_WEB: "remote" }))).toBe("remote")
      const bad = yield* Effect.flip(Wiring.uploadEngine.pipe(withSettings({ EFFECT_RAG_UPLOAD: "cloud" })))
      expect(bad).toBeInstanceOf(RagError.ConfigurationError)
      expect(bad.message).toBe("EFFECT_RAG_UPLOAD must be local or remote, not cloud")
    }))
})

describe("Wiring: the store by URI", () => {
  it("the scheme table: folders and file:// to LanceDB on disk, object stores to LanceDB, memory: to the memory store", () => {
    const location = (uri: string) => Wiring.storeAdapter(uri).location
    expect(location("/var/data/db")).toBe("folder")
    expect(location("relative/db")).toBe("folder")
    expect(location("C:\\data\\db")).toBe("folder")
    expect(location("file:///var/data/db")).toBe("folder")
    expect(location("notes:2024")).toBe("folder") // a relative folder name with a colon
    expect(location("s3://bucket/prefix")).toBe("remote")
    expect(location("s3+ddb://bucket/prefix?ddbTableName=t")).toBe("remote")
    expect(location("gs://bucket/prefix")).toBe("remote")
    expect(location("az://container/prefix")).toBe("remote")
    expect(location("memory:")).toBe("process")
    expect(location("MEMORY:")).toBe("process")
    expect(Wiring.storeSchemes["memory"]?.description).toBe("the in-memory store of this process")
  })

  it.effect("--db, then EFFECT_RAG_DB, then .effect-rag/db; folders absolute, URIs as given", () =>
    Effect.gen(function*() {
      expect(yield* Wiring.dbUri(Option.none()).pipe(withSettings({}))).toBe(resolve(".effect-rag/db"))
      expect(yield* Wiring.dbUri(Option.none()).pipe(withSettings({ EFFECT_RAG_DB: "s3://b/p" }))).toBe("s3://b/p")
      expect(yield* Wiring.dbUri(Option.some("memory:")).pipe(withSettings({ EFFECT_RAG_DB: "s3://b/p" }))).toBe("memory:")
      expect(yield* Wiring.dbUri(Option.some("file:///var/data/db")).pipe(withSettings({}))).toBe("/var/data/db")
    }))

  it.effect("memory: is the memory store: what is written is read back, and nothing touches the disk", () =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      expect(store.backend).toBe("memory")
      const c = yield* store.collection({ name: "notes" })
      yield* c.upsert([{ id: "a#1", documentId: "a", text: "effect layers compose", metadata: {} }])
      expect(yield* c.count()).toBe(1)
      expect(yield* store.list()).toEqual(["notes"])
    }).pipe(Effect.provide(Wiring.storeLayer("memory:"))))

  it.live("a folder is LanceDB in that folder", () => {
    const dir = mkdtempSync(join(tmpdir(), "effect-rag-wiring-"))
    return Effect.gen(function*() {
      const store = yield* VectorStore
      expect(store.backend).toBe("lancedb")
      const c = yield* store.collection({ name: "notes" })
      yield* c.upsert([{ id: "a#1", documentId: "a", text: "effect layers compose", metadata: {} }])
      expect(yield* c.count()).toBe(1)
    }).pipe(
      Effect.provide(Layer.fresh(Wiring.storeLayer(dir))),
      Effect.scoped,
      Effect.ensuring(Effect.sync(() => {
        expect(readdirSync(dir)).toContain("notes.lance")
        rmSync(dir, { recursive: true, force: true })
      }))
    )
  })
})

describe("the command line over --db memory:", () => {
  it("ingest works in memory and leaves no folder; a reader in another process finds nothing; a worker is refused", async () => {
    // from the repository root (where tsx is found); nothing may appear there
    const cwd = repoRoot
    const before = readdirSync(cwd).sort()
    {
      const ingest = await runCli(["ingest", join(repoRoot, "README.md"), "--db", "memory:", "--json"], {}, { cwd, timeoutMs: 120_000 })
      expect(ingest.stderr).toBe("")
      expect(ingest.code).toBe(0)
      const summary = JSON.parse(ingest.stdout) as { db: string; ingested: number; chunks: { total: number } }
      expect(summary.db).toBe("memory:")
      expect(summary.ingested).toBe(1)
      expect(summary.chunks.total).toBeGreaterThan(0)
      expect(readdirSync(cwd).sort()).toEqual(before)
      const query = await runCli(["query", "effect", "--db", "memory:"], {}, { cwd })
      expect(query.code).toBe(1)
      expect(query.stderr).toContain("CollectionNotFound")
      const list = await runCli(["collections", "list", "--db", "memory:"], {}, { cwd })
      expect(list.code).toBe(0)
      expect(list.stdout.trim()).toBe("no collections in memory:")
      const worker = await runCli(["worker", "--queue", "redis://127.0.0.1:1", "--db", "memory:"], {}, { cwd })
      expect(worker.code).toBe(2)
      expect(worker.stderr).toContain("memory store")
    }
  }, 300_000)
})
