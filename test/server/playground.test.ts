/**
 * What the playground page needs from the server, over real HTTP on loopback (the browser test,
 * `playground-browser.test.ts`, drives the page itself): its three assets, served only with
 * `playground: true` and without a key while the API stays behind it; `GET
 * /v1/collections/{name}` (modes, rerank, ask); `highlight: true` on query and ask (the
 * analyser's stemmed terms and the ranges of the words that carry them); `stream: true` on ask
 * (server-sent events through a loopback chat server that searches with its tool, then answers).
 * A real LanceDB collection in a temp folder.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Chat from "../../src/api/Chat.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { chatHandler, chunks, fillCollection } from "../pipeline/answer-fixtures.js"
import { clientLayer, serveOurs, startServer } from "../support/server.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-playground-routes-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const key = "sk-playground-0123456789abcdef"
const auth = { authorization: `Bearer ${key}` }

const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) })

/** The `data:` events of an SSE body. */
const events = (text: string): Array<any> =>
  text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => JSON.parse(e.slice(6)))

/** The words a hit's ranges cover. */
const marked = (hit: { text: string; highlights: Array<[number, number]> }) => hit.highlights.map(([a, b]) => hit.text.slice(a, b))

describe("the playground's routes", () => {
  it.scopedLive("assets only with playground: true and without a key; the API keeps its key; modes, highlights and a streamed ask (a failure after the first event: a last error event)", () =>
    Effect.gen(function*() {
      const uri = join(root, "db")
      yield* fillCollection(uri)
      const chatServer = yield* startServer(chatHandler)
      const services = Layer.mergeAll(
        Layer.orDie(LanceDbStore.layer({ uri })),
        Chat.layer({ model: "chat-1" }).pipe(Layer.provide(clientLayer(chatServer.url)))
      )
      const [off, url] = yield* Effect.all([
        serveOurs(services, { apiKey: Redacted.make(key) }),
        serveOurs(services, { apiKey: Redacted.make(key), playground: true })
      ])

      const [offPage, page, script, style, listNoKey, postRoot] = yield* Effect.promise(() =>
        Promise.all([
          fetch(`${off}/`, { headers: auth }),
          fetch(`${url}/`),
          fetch(`${url}/playground/app.js`),
          fetch(`${url}/playground/style.css`),
          fetch(`${url}/v1/collections`),
          fetch(`${url}/`, { method: "POST" })
        ])
      )
      expect(offPage.status).toBe(404)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(page.headers.get("content-security-policy")).toContain("default-src 'self'")
      const html = yield* Effect.promise(() => page.text())
      expect(html).toContain(`<script type="module" src="/playground/app.js"></script>`)
      // nothing from elsewhere: every src and href is a path of this server
      expect([...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])).toEqual(["/playground/style.css", "/playground/app.js"])
      expect(script.status).toBe(200)
      expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(yield* Effect.promise(() => script.text())).toContain("/v1/collections")
      expect(style.status).toBe(200)
      expect(style.headers.get("content-type")).toBe("text/css; charset=utf-8")
      expect(listNoKey.status).toBe(401)
      expect(postRoot.status).toBe(401)

      // what the server can do with the collection: no embedder, no reranker, a chat model
      const info = yield* Effect.promise(() => fetch(`${url}/v1/collections/docs`, { headers: auth }).then((r) => r.json()))
      expect(info).toEqual({ collection: "docs", embedding: null, modes: ["fulltext"], rerank: false, ask: true })
      const [missing, noKey] = yield* Effect.promise(() =>
        Promise.all([fetch(`${url}/v1/collections/nope`, { headers: auth }), fetch(`${url}/v1/collections/docs`)])
      )
      expect(missing.status).toBe(404)
      expect(noKey.status).toBe(401)

      // highlight: the query's analysed terms (stop words dropped, stemmed) and the whole words carrying them
      const [plain, lit] = yield* Effect.promise(() =>
        Promise.all([
          post(url, "/v1/collections/docs/query", { query: "the lighthouses keepers", limit: 3 }).then((r) => r.json() as Promise<any>),
          post(url, "/v1/collections/docs/query", { query: "the lighthouses keepers", limit: 3, highlight: true }).then((r) => r.json() as Promise<any>)
        ])
      )
      expect(plain.terms).toBeUndefined()
      expect(plain.hits[0].highlights).toBeUndefined()
      expect(lit.terms).toEqual(["lighthous", "keeper"])
      expect(lit.hits.map((h: { id: string }) => h.id)).toEqual(plain.hits.map((h: { id: string }) => h.id))
      const keeper = lit.hits.find((h: { id: string }) => h.id === "notes/keeper.txt#0")
      expect(keeper.text).toBe(chunks.find((c) => c.id === "notes/keeper.txt#0")!.text)
      expect(keeper.highlights).toEqual([[4, 14], [15, 21]])
      expect(marked(keeper)).toEqual(["lighthouse", "keeper"])
      const lens = lit.hits.find((h: { id: string }) => h.id === "guides/lighthouse.md#0")
      // `lighthouse` whole; `The` (a stop word) and `light` inside another word never
      expect(marked(lens)).toEqual(["lighthouse"])

      // ask, streamed: the sources, the model's search and its sources, the deltas, then the answer
      const streamed = yield* Effect.promise(() =>
        post(url, "/v1/collections/docs/ask", { question: "Who invented the lighthouse lens?", stream: true, highlight: true })
      )
      expect(streamed.status).toBe(200)
      expect(streamed.headers.get("content-type")).toBe("text/event-stream")
      const got = events(yield* Effect.promise(() => streamed.text()))
      const types = got.map((e) => e.type)
      expect(types.slice(0, 3)).toEqual(["sources", "tool_call", "sources"])
      expect(types.at(-1)).toBe("done")
      expect(types.slice(3, -1).every((t) => t === "delta")).toBe(true)
      expect(got[1]).toEqual({ type: "tool_call", round: 1, name: "search_documents", query: "harbour dredged" })
      const answer = got.at(-1).answer
      expect(got.filter((e) => e.type === "delta").map((e) => e.text).join("")).toBe(answer.text)
      expect(answer.text).toContain("Augustin Fresnel in 1822 [")
      expect(answer.unknownCitations).toEqual([99])
      const lensSource = got[0].sources.find((s: { id: string }) => s.id === "guides/lighthouse.md#0")
      // `who` and `the` are stop words; `lens` is the term `len`, `invented` the term `invent`
      expect(marked(lensSource)).toEqual(["lens", "invented", "lighthouse"])
      expect(marked(answer.cited.find((s: { id: string }) => s.id === "guides/lighthouse.md#0"))).toEqual(["lens", "invented", "lighthouse"])

      // a failure before the first event keeps its status; without stream the answer is JSON as before
      const [unknown, whole] = yield* Effect.promise(() =>
        Promise.all([
          post(url, "/v1/collections/nope/ask", { question: "anything", stream: true }),
          post(url, "/v1/collections/docs/ask", { question: "Who invented the lighthouse lens?" }).then((r) => r.json() as Promise<any>)
        ])
      )
      expect(unknown.status).toBe(404)
      expect(unknown.headers.get("content-type")).toContain("application/json")
      expect(whole.text).toBe(answer.text)
      expect(whole.sources[0].highlights).toBeUndefined()

      // a failure after the first event (the model refuses once the sources are out): a last error event
      const refusing = yield* startServer(() => ({ status: 400, json: { error: { message: "the model refused: context too long", type: "invalid_request_error" } } }))
      const url2 = yield* serveOurs(
        Layer.mergeAll(Layer.orDie(LanceDbStore.layer({ uri })), Chat.layer({ model: "chat-1" }).pipe(Layer.provide(clientLayer(refusing.url)))),
        { playground: true }
      )
      const broken = yield* Effect.promise(() => post(url2, "/v1/collections/docs/ask", { question: "Who invented the lighthouse lens?", stream: true }))
      expect(broken.status).toBe(200)
      const brokenEvents = events(yield* Effect.promise(() => broken.text()))
      expect(brokenEvents.map((e) => e.type)).toEqual(["sources", "error"])
      expect(brokenEvents[1].error.message).toContain("the model refused: context too long")
    }))
})
