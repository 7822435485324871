/**
 * The collection routes and the keys file over real HTTP on loopback: two tenants' documents
 * in one LanceDB collection (temp folder), OUR server with a keys file's grants, and every
 * route called with each key (none, unknown, tenant A, tenant B, a key without the collection,
 * an unrestricted key, the operator key). `ask` goes through a loopback chat server whose model
 * asks for tenant B's secret.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Chat from "../../src/api/Chat.js"
import * as Server from "../../src/server/Server.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import {
  greedyChat,
  ingestTenants,
  leakMarkers,
  letters,
  probe,
  readableByA,
  sentToChat,
  uploadLayer
} from "../pipeline/access-fixtures.js"
import { clientLayer, serveOurs, startServer } from "../support/server.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-server-acl-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const keyA = "sk-tenant-a-0123456789abcdef"
const keyB = "sk-tenant-b-0123456789abcdef"
const keyC = "sk-tenant-c-0123456789abcdef"
const keyAll = "sk-auditor-0123456789abcdef"
const operatorKey = "sk-operator-0123456789abcdef"

const keysFile = JSON.stringify({
  keys: [
    { key: keyA, principal: { id: "tenant-a", groups: ["staff"] }, read: ["shared"] },
    { key: keyB, principal: { id: "tenant-b" }, read: ["shared"], write: ["shared"] },
    { key: keyC, principal: { id: "tenant-c" }, read: ["other"] },
    { key: keyAll, principal: "unrestricted", read: ["*"] }
  ]
})

interface Reply {
  readonly status: number
  readonly json: any
}

const call = (url: string, method: string, path: string, key?: string, body?: unknown) =>
  Effect.promise(async (): Promise<Reply> => {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await r.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = text
    }
    return { status: r.status, json }
  })

const docIds = (r: Reply): Array<string> => (r.json.documents as Array<{ documentId: string }>).map((d) => d.documentId)
const hitIds = (r: Reply): Array<string> => (r.json.hits as Array<{ documentId: string }>).map((d) => d.documentId)

describe("server: collection routes and API keys", () => {
  it.scopedLive("every route with each key: deny by default, each tenant reads only its chunks", () =>
    Effect.gen(function*() {
      const uri = join(root, "db1")
      const docs = join(root, "docs1")
      const { prefixes } = yield* ingestTenants(docs).pipe(Effect.provide(Layer.merge(uploadLayer, LanceDbStore.layer({ uri }))))
      const isA = readableByA(prefixes)
      const isB = (id: string) => id.startsWith(prefixes["tenant-b"]) || id.startsWith(prefixes.public)
      const chatServer = yield* startServer(greedyChat)
      const keys = yield* Server.parseKeys(keysFile)
      const url = yield* serveOurs(
        Layer.mergeAll(
          Layer.orDie(LanceDbStore.layer({ uri })),
          Chat.layer({ model: "chat-1" }).pipe(Layer.provide(clientLayer(chatServer.url)))
        ),
        { keys, apiKey: Redacted.make(operatorKey), collections: { embedder: { id: "letters", service: letters } } }
      )
      const routes: ReadonlyArray<readonly [string, string, unknown]> = [
        ["GET", "/v1/collections", undefined],
        ["GET", "/v1/collections/shared/documents", undefined],
        ["POST", "/v1/collections/shared/query", { query: probe }],
        ["POST", "/v1/collections/shared/ask", { question: probe }]
      ]
      // no key, an unknown key: 401 on every route
      for (const [method, path, body] of routes) {
        expect((yield* call(url, method, path, undefined, body)).status).toBe(401)
        const wrong = yield* call(url, method, path, "sk-unknown-0123456789abcdef", body)
        expect(wrong.status).toBe(401)
        expect(JSON.stringify(wrong.json)).not.toContain("sk-")
      }
      // a key without the collection: it lists nothing, every route on it is 403
      expect((yield* call(url, "GET", "/v1/collections", keyC)).json.data).toEqual([])
      for (const [method, path, body] of routes.slice(1)) {
        const r = yield* call(url, method, path, keyC, body)
        expect(r.status).toBe(403)
        expect(JSON.stringify(r.json)).not.toContain("zanzibar")
      }
      // a collection that does not exist answers as one the key may not read (no existence oracle)
      expect((yield* call(url, "POST", "/v1/collections/missing/query", keyA, { query: "x" })).status).toBe(403)
      // a key that may read every collection: an unknown one is a 404
      expect((yield* call(url, "POST", "/v1/collections/missing/query", keyAll, { query: "x" })).status).toBe(404)
      // internal manifest tables are not collections
      expect((yield* call(url, "GET", "/v1/collections/shared__ingest/documents", keyAll)).status).toBe(404)
      expect((yield* call(url, "GET", "/v1/collections", keyAll)).json.data).toEqual([{ name: "shared" }])

      // documents and counts
      const docsA = yield* call(url, "GET", "/v1/collections/shared/documents", keyA)
      expect(docsA.status).toBe(200)
      expect(docIds(docsA).length).toBe(3)
      expect(docIds(docsA).every(isA)).toBe(true)
      expect(docsA.json.chunks).toBe((docsA.json.documents as Array<{ chunks: number }>).reduce((n, d) => n + d.chunks, 0))
      expect(docIds(yield* call(url, "GET", "/v1/collections/shared/documents", keyB)).every(isB)).toBe(true)
      for (const k of [keyAll, operatorKey]) {
        expect(docIds(yield* call(url, "GET", "/v1/collections/shared/documents", k)).length).toBe(6)
      }

      // query: every mode, with limit 1 (B's chunk is the best match)
      for (const mode of [undefined, "fulltext", "vector", "hybrid"]) {
        for (const limit of [1, 10]) {
          const body = { query: probe, limit, ...(mode === undefined ? {} : { mode }) }
          const all = yield* call(url, "POST", "/v1/collections/shared/query", keyAll, body)
          expect(all.status).toBe(200)
          expect(isA(hitIds(all)[0]!)).toBe(false)
          const a = yield* call(url, "POST", "/v1/collections/shared/query", keyA, body)
          expect(a.status).toBe(200)
          expect(hitIds(a).length).toBeGreaterThan(0)
          expect(hitIds(a).every(isA)).toBe(true)
          const b = yield* call(url, "POST", "/v1/collections/shared/query", keyB, body)
          expect(hitIds(b).every(isB)).toBe(true)
        }
      }
      // filters that try to widen access
      const bDoc = `${prefixes["tenant-b"]}secret.md`
      const byDoc = yield* call(url, "POST", "/v1/collections/shared/query", keyA, { query: probe, filter: [`documentId=${bDoc}`] })
      expect(byDoc.status).toBe(200)
      expect(byDoc.json.hits).toEqual([])
      const notDoc = yield* call(url, "POST", "/v1/collections/shared/query", keyA, { query: probe, filter: [`documentId!=${prefixes["tenant-a"]}alpha.md`], mode: "hybrid" })
      expect(hitIds(notDoc).every(isA)).toBe(true)
      const accessField = yield* call(url, "POST", "/v1/collections/shared/query", keyA, { query: probe, filter: ["access=tenant-b"] })
      expect(accessField.status).toBe(400)
      const grouped = yield* call(url, "POST", "/v1/collections/shared/query", keyA, { query: probe, group_by: "document", mode: "hybrid" })
      expect(hitIds(grouped).every(isA)).toBe(true)
      // no reranker on this server: asked for, a 501 (never a silent skip)
      expect((yield* call(url, "POST", "/v1/collections/shared/query", keyA, { query: probe, rerank: true })).status).toBe(501)

      // ask: the model's tool call asks for B's secret; sources and prompts hold only A's chunks
      const asked = yield* call(url, "POST", "/v1/collections/shared/ask", keyA, { question: probe, limit: 3 })
      expect(asked.status).toBe(200)
      const sources = asked.json.sources as Array<{ documentId: string }>
      expect(sources.length).toBeGreaterThan(0)
      expect(sources.every((s) => isA(s.documentId))).toBe(true)
      expect((asked.json.searches as Array<unknown>).length).toBe(1)
      const sent = sentToChat(chatServer.received)
      for (const marker of leakMarkers) expect(sent).not.toContain(marker)

      // the service API takes any known key (a route with nothing behind it: 501, not 401)
      expect((yield* call(url, "GET", "/v1/models", keyC)).status).toBe(501)
      expect((yield* call(url, "GET", "/v1/models")).status).toBe(401)
    }))

  it.scopedLive("without a store the collection routes answer 501; an open server runs as the operator", () =>
    Effect.gen(function*() {
      const bare = yield* serveOurs(Layer.empty)
      expect((yield* call(bare, "GET", "/v1/collections")).status).toBe(501)
      const uri = join(root, "db2")
      yield* ingestTenants(join(root, "docs2")).pipe(Effect.provide(Layer.merge(uploadLayer, LanceDbStore.layer({ uri }))))
      const open = yield* serveOurs(Layer.orDie(LanceDbStore.layer({ uri })))
      expect(docIds(yield* call(open, "GET", "/v1/collections/shared/documents")).length).toBe(6)
      // no chat model: ask is a 501
      expect((yield* call(open, "POST", "/v1/collections/shared/ask", undefined, { question: "x" })).status).toBe(501)
    }))

  it.effect("the keys file: keys are validated and never quoted in errors", () =>
    Effect.gen(function*() {
      const short = yield* Effect.flip(Server.parseKeys(JSON.stringify({ keys: [{ key: "short", principal: "unrestricted" }] })))
      expect(short).toContain("keys[0]")
      expect(short).not.toContain("short\"")
      const dup = yield* Effect.flip(Server.parseKeys(JSON.stringify({ keys: [{ key: keyA, principal: "unrestricted" }, { key: keyA, principal: "unrestricted" }] })))
      expect(dup).toContain("twice")
      expect(dup).not.toContain(keyA)
      const badPrincipal = yield* Effect.flip(Server.parseKeys(JSON.stringify({ keys: [{ key: keyA, principal: { id: "a\nb" } }] })))
      expect(badPrincipal).toContain("keys[0].principal")
      expect(badPrincipal).not.toContain(keyA)
      const badName = yield* Effect.flip(Server.parseKeys(JSON.stringify({ keys: [{ key: keyA, principal: "unrestricted", read: ["../x"] }] })))
      expect(badName).not.toContain(keyA)
      expect(yield* Effect.flip(Server.parseKeys("{"))).toContain("not JSON")
      const ok = yield* Server.parseKeys(keysFile)
      expect(ok.length).toBe(4)
      expect(String(ok[0]!.key)).not.toContain(keyA)
      expect(ok[0]!.read).toEqual(["shared"])
      expect(ok[0]!.write).toEqual([])
    }))
})
