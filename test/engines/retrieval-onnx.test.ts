/**
 * The ONNX layers without a model (none ships, none is downloaded): the typed error that says
 * where the layer looked and how to provide a model, with no network call; and the runtime
 * itself (onnxruntime-node's bundled CPU binary on this Node) on a two-node graph built by
 * `test/support/onnx.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, vi } from "vitest"
import { resolveEmbedder, resolveReranker } from "../../src/Wiring.js"
import { importTransformers } from "../../src/engines/models/internal/embed-onnx.js"
import * as OnnxEmbeddings from "../../src/engines/models/OnnxEmbeddings.js"
import * as OnnxRerank from "../../src/engines/models/OnnxRerank.js"
import { addModel } from "../support/onnx.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-onnx-"))
const fetchSpy = vi.fn(() => Promise.reject(new Error("no network in this test")))
beforeAll(() => {
  vi.stubGlobal("fetch", fetchSpy)
})
afterAll(() => {
  vi.unstubAllGlobals()
  rmSync(root, { recursive: true, force: true })
})

/** The LocalModelError of a failed exit (the ONNX package is installed here: never MissingPackage). */
const failure = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>): Extract<E, { readonly _tag: "LocalModelError" }> => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "LocalModelError") {
    return exit.cause.error as Extract<E, { readonly _tag: "LocalModelError" }>
  }
  throw new Error(`expected a LocalModelError, got ${String(exit)}`)
}

describe("OnnxEmbeddings and OnnxRerank without a model", () => {
  it.effect("a missing folder: LocalModelError naming the folder and the files a model needs", () =>
    Effect.gen(function*() {
      const dir = join(root, "no-such-model")
      const e = failure(yield* Effect.exit(OnnxEmbeddings.make({ model: dir })))
      expect(e._tag).toBe("LocalModelError")
      expect(e.reason).toBe("not_found")
      expect(e.looked).toEqual([dir])
      expect(e.message).toContain(dir)
      expect(e.message).toContain("onnx/model.onnx")
      expect(e.message).toContain("EFFECT_RAG_ONNX_MODEL")
      expect(fetchSpy).not.toHaveBeenCalled()
    }))

  it.effect("an incomplete folder: the missing files are listed", () =>
    Effect.gen(function*() {
      const dir = join(root, "half")
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, "config.json"), "{}")
      const e = failure(yield* Effect.exit(OnnxRerank.make({ model: dir })))
      expect(e.reason).toBe("not_found")
      expect(e.message).toContain(join(dir, "tokenizer.json"))
      expect(e.message).toContain(join(dir, "onnx", "model.onnx"))
      expect(e.message).not.toContain(join(dir, "config.json,"))
    }))

  it.effect("a hub id with downloads off (the default): looks in the cache folder, never asks the hub", () =>
    Effect.gen(function*() {
      const cacheDir = join(root, "cache")
      const attempts = [
        yield* Effect.exit(OnnxEmbeddings.make({ model: "Xenova/all-MiniLM-L6-v2", cacheDir })),
        yield* Effect.exit(OnnxRerank.make({ model: "Xenova/ms-marco-MiniLM-L-6-v2", cacheDir }))
      ]
      for (const exit of attempts) {
        const e = failure(exit as Exit.Exit<unknown, OnnxEmbeddings.LocalModelError>)
        expect(e.reason).toBe("not_found")
        expect(e.looked.some((p) => p.startsWith(cacheDir))).toBe(true)
        expect(e.message).toContain("Downloads are off")
        expect(e.message).toContain("EFFECT_RAG_ALLOW_DOWNLOADS")
      }
      expect(fetchSpy).not.toHaveBeenCalled()
    }))

  it.scoped("the benchmark reports the reason instead of falling back", () =>
    Effect.gen(function*() {
      const dir = join(root, "absent")
      const e = yield* resolveEmbedder(`onnx:${dir}`)
      expect(e.embedder).toBeUndefined()
      expect(e.reason).toContain(dir)
      const r = yield* resolveReranker(`onnx:${dir}`)
      expect(r.reranker).toBeUndefined()
      expect(r.reason).toContain(dir)
    }))

  it("scores logits as sigmoid (one label) or last-label softmax (two)", () => {
    expect(OnnxRerank.scoreOf([0])).toBeCloseTo(0.5)
    expect(OnnxRerank.scoreOf([-1, 1])).toBeCloseTo(1 / (1 + Math.exp(-2)))
  })
})

// -----------------------------------------------------------------------------
// The runtime: a graph y = x + x, encoded as ONNX protobuf by test/support/onnx.ts
// -----------------------------------------------------------------------------

describe("the ONNX runtime on this Node", () => {
  it("onnxruntime-node runs a graph on the CPU with its bundled binary", async () => {
    // a dependency of @huggingface/transformers; its CPU binary ships in the npm package
    const ort = await import("onnxruntime-node")
    const session = await ort.InferenceSession.create(addModel())
    const out = await session.run({ x: new ort.Tensor("float32", Float32Array.from([1, 2, 3]), [3]) })
    expect(Array.from(out["y"]!.data as Float32Array)).toEqual([2, 4, 6])
  })

  it("transformers.js loads with remote models off", async () => {
    const t = await importTransformers()
    expect(t.env.allowRemoteModels).toBe(false)
    expect(fetchSpy).not.toHaveBeenCalled()
  })
})
