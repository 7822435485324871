import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as Embeddings from "../../src/api/Embeddings.js"
import { clientLayer, startServer, testKey, type Received } from "../support/server.js"

const toBase64 = (values: ReadonlyArray<number>) => {
  const buf = Buffer.alloc(values.length * 4)
  values.forEach((v, i) => buf.writeFloatLE(v, i * 4))
  return buf.toString("base64")
}

/** An embeddings server: vector i of a batch is [len(text), i]; answers in reverse order. */
const embeddingsHandler = (req: Received) => {
  const body = req.json as { input: string | Array<string>; encoding_format?: string }
  const inputs = typeof body.input === "string" ? [body.input] : body.input
  const data = inputs.map((text, index) => {
    const vector = [text.length, index]
    return { object: "embedding", index, embedding: body.encoding_format === "base64" ? toBase64(vector) : vector }
  })
  return { json: { object: "list", data: data.reverse(), model: "m", usage: { prompt_tokens: 3, total_tokens: 3 } } }
}

const run = <A, E>(server: { url: string }, f: (s: Embeddings.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(Embeddings.Embeddings, f).pipe(
    Effect.provide(Embeddings.layer({ model: "emb-1" }).pipe(Layer.provide(clientLayer(server.url))))
  )

describe("Embeddings", () => {
  it.scoped("embeds many texts in batches, placing results by index", () =>
    Effect.gen(function*() {
      const server = yield* startServer(embeddingsHandler)
      const texts = Array.from({ length: 10 }, (_, i) => "x".repeat(i + 1))
      const result = yield* run(server, (e) => e.embed(texts, { batchSize: 3, concurrency: 2 }))
      expect(result.vectors.map((v) => v[0])).toEqual(texts.map((t) => t.length))
      expect(result.totalTokens).toBe(12)
      expect(server.received).toHaveLength(4)
      for (const r of server.received) {
        expect(r.path).toBe("/v1/embeddings")
        expect(r.headers.authorization).toBe(`Bearer ${testKey}`)
        expect((r.json as { model: string }).model).toBe("emb-1")
        expect((r.json as { encoding_format: string }).encoding_format).toBe("base64")
      }
    }))

  it.scoped("decodes float arrays and a single string input", () =>
    Effect.gen(function*() {
      const server = yield* startServer(embeddingsHandler)
      const response = yield* run(server, (e) => e.create({ model: "emb-1", input: "hello" }))
      expect(response.data[0]?.embedding).toEqual([5, 0])
      expect(server.received[0]?.json).toEqual({ model: "emb-1", input: "hello" })
    }))

  it.scoped("a missing index is a decode error naming the endpoint and field", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({
        json: { data: [{ index: 0, embedding: [1] }, { index: 0, embedding: [2] }] }
      }))
      const exit = yield* Effect.exit(run(server, (e) => e.embed(["a", "b"])))
      expect(exit).toStrictEqual(Exit.fail(expect.anything()))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
        const error = exit.cause.error
        expect(error._tag).toBe("DecodeError")
        if (error._tag === "DecodeError") {
          expect(error.endpoint).toBe("POST /v1/embeddings")
          expect(error.path).toBe("data[1].index")
        }
      }
    }))

  it.scoped("a malformed 200 body names the field path", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: { data: [{ index: 0, embedding: "not-b64!" }, { index: "x" }] } }))
      const error = yield* Effect.flip(run(server, (e) => e.create({ model: "m", input: ["a"] })))
      expect(error._tag).toBe("DecodeError")
      if (error._tag === "DecodeError") {
        expect(error.path).toBe("data[1].index")
        expect(error.message).toContain("POST /v1/embeddings")
      }
    }))
})
