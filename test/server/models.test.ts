/**
 * The self-hosted server's model endpoints and its common behaviour, over real HTTP on
 * loopback: the library's own REMOTE clients talk to OUR server, which serves local engines
 * (USE-lite embeddings in-process). Also: the key check, wire-format 404 and 400, and 501 for
 * an endpoint with nothing behind it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Chat from "../../src/api/Chat.js"
import * as Embeddings from "../../src/api/Embeddings.js"
import * as Models from "../../src/api/Models.js"
import * as Rerank from "../../src/api/Rerank.js"
import * as UseLiteEmbeddings from "../../src/engines/models/UseLiteEmbeddings.js"
import { clientLayer, serveOurs } from "../support/server.js"

const modelList: ReadonlyArray<Models.ModelRecord> = [
  { id: UseLiteEmbeddings.modelId, object: "model", owned_by: "effect-rag", type: "embedding" }
]


describe("server: embeddings, rerank, models", () => {
  it.scopedLive("the remote Embeddings client gets the local engine's vectors, in float and base64", () =>
    Effect.gen(function*() {
      const local = yield* UseLiteEmbeddings.make()
      const url = yield* serveOurs(Layer.mergeAll(Layer.succeed(Embeddings.Embeddings, local), Models.layerList(modelList)))
      const remote = yield* Effect.provide(Embeddings.make({ model: local.defaultModel, dimension: local.dimension }), clientLayer(url))
      const texts = ["A cat sat on the mat.", "Stock markets fell sharply.", ""]
      const direct = yield* local.embed(texts)
      for (const base64 of [true, false]) {
        const viaServer = yield* remote.embed(texts, { base64 })
        expect(viaServer.model).toBe(local.defaultModel)
        expect(viaServer.vectors).toHaveLength(3)
        viaServer.vectors.forEach((v, i) => {
          expect(v.length).toBe(512)
          for (let k = 0; k < v.length; k++) expect(v[k]).toBeCloseTo(direct.vectors[i]![k]!, 6)
        })
      }
      const models = yield* Effect.provide(Effect.flatMap(Models.Models, (m) => m.list), Models.layer.pipe(Layer.provide(clientLayer(url))))
      expect(models.data.map((m) => m.id)).toEqual([UseLiteEmbeddings.modelId])
      // another model than the one served: the engine's BadRequest comes back as a 400
      const wrong = yield* Effect.flip(remote.create({ model: "text-embedding-3-large", input: "x" }))
      expect(wrong._tag).toBe("BadRequest")
    }))

  it.scopedLive("an endpoint with no service behind it answers 501; unknown paths 404; bad bodies 400", () =>
    Effect.gen(function*() {
      const url = yield* serveOurs(Models.layerList([]))
      const rerank = yield* Effect.provide(Rerank.make(), clientLayer(url))
      const e = yield* Effect.flip(rerank.rerank({ model: "m", query: "q", documents: ["a"] }))
      expect(e._tag).toBe("ServerError")
      expect(e._tag === "ServerError" ? e.status : 0).toBe(501)
      expect(e.message).toContain("no rerank model configured")

      // the generative endpoints have no local engine: a 501 that says so, through the Chat client
      const chat = yield* Effect.provide(Chat.make(), clientLayer(url))
      const c = yield* Effect.flip(chat.create({ model: "m", messages: [{ role: "user", content: "hi" }] }))
      expect(c._tag === "ServerError" ? [c.status, c.message.includes("no chat completion engine")] : c._tag).toEqual([501, true])

      const notFound = yield* Effect.promise(() => fetch(`${url}/v1/nothing-here`))
      expect(notFound.status).toBe(404)
      expect(yield* Effect.promise(() => notFound.json())).toMatchObject({ error: { type: "not_found_error" } })

      const embeddingsUrl = yield* serveOurs(Layer.succeed(Embeddings.Embeddings, yield* UseLiteEmbeddings.make()))
      const bad = yield* Effect.promise(() =>
        fetch(`${embeddingsUrl}/v1/embeddings`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input: 42 }) })
      )
      expect(bad.status).toBe(400)
      const body = (yield* Effect.promise(() => bad.json())) as { error: { message: string; type: string } }
      expect(body.error.type).toBe("invalid_request_error")
      expect(body.error.message).toMatch(/model|input/)
      const notJson = yield* Effect.promise(() => fetch(`${embeddingsUrl}/v1/embeddings`, { method: "POST", body: "{oops" }))
      expect(notJson.status).toBe(400)
    }))

  it.scopedLive("with a key configured, requests need it; the key never comes back", () =>
    Effect.gen(function*() {
      const key = "server-secret-key-123"
      const url = yield* serveOurs(Models.layerList(modelList), { apiKey: Redacted.make(key) })
      const list = (apiKey: string) =>
        Effect.flatMap(Models.Models, (m) => m.list).pipe(
          Effect.provide(Models.layer.pipe(Layer.provide(clientLayer(url, { apiKey: Redacted.make(apiKey) }))))
        )
      expect((yield* list(key)).data).toHaveLength(1)
      const e = yield* Effect.flip(list("wrong-key"))
      expect(e._tag).toBe("Unauthorized")
      const raw = yield* Effect.promise(() => fetch(`${url}/v1/models`, { headers: { authorization: "Bearer nope" } }))
      expect(raw.status).toBe(401)
      expect(yield* Effect.promise(() => raw.text())).not.toContain(key)
      const none = yield* Effect.promise(() => fetch(`${url}/v1/models`))
      expect(none.status).toBe(401)
    }))
})
