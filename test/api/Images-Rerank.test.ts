import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Images from "../../src/api/Images.js"
import * as Rerank from "../../src/api/Rerank.js"
import { clientLayer, startServer } from "../support/server.js"

describe("Images", () => {
  it.scoped("generates and sends the request exactly", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({
        json: { created: 1, data: [{ revised_prompt: "a red fox, detailed", url: "https://storage.example/a.png" }] }
      }))
      const result = yield* Effect.flatMap(Images.Images, (i) =>
        i.generate({ prompt: "a red fox", n: 1, size: "1792x1024", quality: "hd", style: "vivid" })).pipe(
          Effect.provide(Images.layer.pipe(Layer.provide(clientLayer(server.url))))
        )
      expect(result.data[0]?.url).toBe("https://storage.example/a.png")
      expect(server.received[0]?.path).toBe("/v1/images/generations")
      expect(server.received[0]?.json).toEqual({ prompt: "a red fox", n: 1, size: "1792x1024", quality: "hd", style: "vivid" })
    }))

  it.scoped("an invalid size never leaves the client", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: {} }))
      const error = yield* Effect.flatMap(Images.Images, (i) =>
        i.generate({ prompt: "x", n: 0 })).pipe(
          Effect.provide(Images.layer.pipe(Layer.provide(clientLayer(server.url)))),
          Effect.flip
        )
      expect(error._tag).toBe("InvalidRequest")
      if (error._tag === "InvalidRequest") expect(error.path).toBe("n")
      expect(server.received).toHaveLength(0)
    }))
})

describe("Rerank", () => {
  const run = (url: string, request: Rerank.RerankRequest) =>
    Effect.flatMap(Rerank.Rerank, (r) => r.rerank(request)).pipe(
      Effect.provide(Rerank.layer().pipe(Layer.provide(clientLayer(url))))
    )

  it.scoped("returns results sorted by score, at most top_n", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({
        json: {
          results: [
            { index: 0, relevance_score: 0.1 },
            { index: 2, relevance_score: 0.9 },
            { index: 1, relevance_score: 0.5 }
          ]
        }
      }))
      const result = yield* run(server.url, { model: "mixr-v1", query: "q", documents: ["a", "b", "c"], top_n: 2 })
      expect(result.results.map((r) => r.index)).toEqual([2, 1])
      expect(server.received[0]?.json).toEqual({ model: "mixr-v1", query: "q", documents: ["a", "b", "c"], top_n: 2 })
    }))

  it.scoped("an index outside the documents is a DecodeError", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: { results: [{ index: 5, relevance_score: 1 }] } }))
      const error = yield* Effect.flip(run(server.url, { model: "m", query: "q", documents: ["a"] }))
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") expect(error.path).toBe("results[0].index")
    }))
})
