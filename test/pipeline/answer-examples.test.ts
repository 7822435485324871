/**
 * Runs the handler of `examples/http-endpoint.ts` (as a web handler, no port) against a
 * loopback chat server and a LanceDB collection in a temp folder.
 */
import { describe, expect, it } from "@effect/vitest"
import { HttpApp } from "@effect/platform"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { router } from "../../examples/http-endpoint.js"
import * as Chat from "../../src/api/Chat.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { clientLayer, startServer } from "../support/server.js"
import { chatHandler, fillCollection } from "./answer-fixtures.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-answer-ex-"))
const db = join(root, "db")
beforeAll(() => Effect.runPromise(fillCollection(db)))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("examples/http-endpoint.ts", () => {
  it.scopedLive("POST /ask answers with sources; bad bodies are 400; no model is 503", () =>
    Effect.gen(function*() {
      const chat = yield* startServer(chatHandler)
      const services = (model: string | undefined) =>
        Layer.merge(LanceDbStore.layer({ uri: db }), Chat.layer({ model }).pipe(Layer.provide(clientLayer(chat.url))))
      const post = (model: string | undefined, body: string) =>
        Effect.acquireRelease(
          Effect.sync(() => HttpApp.toWebHandlerLayer(router("docs"), services(model))),
          (h) => Effect.promise(() => h.dispose())
        ).pipe(Effect.flatMap((h) =>
          Effect.promise(async () => {
            const res = await h.handler(new Request("http://example.test/ask", { method: "POST", body, headers: { "content-type": "application/json" } }))
            return { status: res.status, json: (await res.json()) as Record<string, unknown> }
          })
        ))

      const ok = yield* post("chat-1", JSON.stringify({ question: "Who invented the Fresnel lens?", limit: 2 }))
      expect(ok.status).toBe(200)
      expect(String(ok.json["answer"])).toContain("Augustin Fresnel in 1822 [1]")
      expect(ok.json["sources"]).toEqual([
        { n: 1, source: "guides/lighthouse.md", page: 1, chunk: 0, title: "Lighthouse optics" },
        { n: 3, source: "reports/harbour.pdf", page: 2, chunk: 1, title: "Harbour history" }
      ])
      expect(ok.json["unknownCitations"]).toEqual([99])

      const bad = yield* post("chat-1", JSON.stringify({ question: "" }))
      expect(bad.status).toBe(400)
      const noModel = yield* post(undefined, JSON.stringify({ question: "Who?" }))
      expect(noModel.status).toBe(503)
      expect(String(noModel.json["error"])).toContain("EFFECT_RAG_CHAT_MODEL")
    }))
})
