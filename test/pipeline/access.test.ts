/**
 * Cross-tenant reads through the library path: two tenants' real documents ingested into one
 * collection with per-source access rules (real LanceDB in a temp folder, and the MemoryStore),
 * then read as tenant A by every mode (default full text with expansion, plain full text,
 * vector, hybrid, document roll-up), with filters that try to widen access, with a reranker,
 * and through `ask` with a loopback chat server whose model asks for tenant B's secret.
 * B's chunk is the best match of every probe (checked unrestricted), so a post-filter of the
 * top hits would return nothing or leak.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Chat from "../../src/api/Chat.js"
import type * as Rerank from "../../src/api/Rerank.js"
import * as Answer from "../../src/pipeline/Answer.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as Principal from "../../src/pipeline/Principal.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import { Filter, VectorStore } from "../../src/store/VectorStore.js"
import { clientLayer, startServer } from "../support/server.js"
import { greedyChat, ingestTenants, leakMarkers, letters, probe, readableByA, rules, secret, sentToChat, uploadLayer } from "./access-fixtures.js"

const roots: Array<string> = []
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})
const tempRoot = () => {
  const r = mkdtempSync(join(tmpdir(), "effect-rag-access-"))
  roots.push(r)
  return r
}

const tenantA = Principal.layer(Principal.make("tenant-a", ["staff"]))
const tenantB = Principal.layer(Principal.make("tenant-b"))

/** The two stores: LanceDB on disk and one MemoryStore instance shared by ingest and reads. */
const variants: ReadonlyArray<{ readonly name: string; readonly store: () => Layer.Layer<VectorStore, unknown> }> = [
  { name: "lancedb", store: () => LanceDbStore.layer({ uri: join(tempRoot(), "db") }) },
  { name: "memory", store: () => Layer.succeed(VectorStore, Effect.runSync(MemoryStore.make)) }
]

type Hits = ReadonlyArray<{ readonly documentId: string; readonly text: string }>

for (const variant of variants) {
  describe(`cross-tenant reads (${variant.name})`, () => {
    it.scopedLive("every mode: tenant A gets its best chunks, never B's or unlisted ones, even where they rank first", () =>
      Effect.gen(function*() {
        const root = tempRoot()
        const { prefixes, summary } = yield* ingestTenants(root)
        expect(summary.failed).toBe(0)
        expect(summary.ingested).toBe(6)
        const isA = readableByA(prefixes)
        const clean = (hits: Hits) => {
          expect(hits.length).toBeGreaterThan(0)
          for (const h of hits) {
            expect(isA(h.documentId)).toBe(true)
            expect(h.text.toLowerCase()).not.toContain(secret)
          }
        }
        const modes: ReadonlyArray<Answer.QueryOptions> = [
          {},
          { retrieve: { fullText: Retrieve.plainFullText } },
          { mode: "vector", embeddings: letters },
          { mode: "hybrid", embeddings: letters },
          { mode: "hybrid", embeddings: letters, groupBy: "document" },
          { embeddings: letters } // default with an embedder: hybrid with expansion
        ]
        for (const options of modes) {
          for (const limit of [1, 10]) {
            // unrestricted: B's (or the unlisted) chunk is the best match
            const all = yield* Answer.query("shared", probe, { ...options, limit }).pipe(Effect.provide(Principal.layerUnrestricted))
            expect(isA(all.hits[0]!.documentId)).toBe(false)
            const a = yield* Answer.query("shared", probe, { ...options, limit }).pipe(Effect.provide(tenantA))
            clean(a.hits)
          }
        }
        // tenant B reads its own, and not A's
        const b = yield* Answer.query("shared", "alpha plant river pumps", { limit: 10 }).pipe(Effect.provide(tenantB))
        expect(b.hits.every((h) => h.documentId.startsWith(prefixes["tenant-b"]) || h.documentId.startsWith(prefixes.public))).toBe(true)
        const bProbe = yield* Answer.query("shared", probe, { limit: 1, mode: "hybrid", embeddings: letters }).pipe(Effect.provide(tenantB))
        expect(bProbe.hits[0]!.documentId).toBe(`${prefixes["tenant-b"]}secret.md`)
      }).pipe(Effect.provide(Layer.merge(uploadLayer, variant.store()))))

    it.scopedLive("filters cannot widen access: Or, Not, documentId, the access field; counts and document lists are scoped", () =>
      Effect.gen(function*() {
        const root = tempRoot()
        const { prefixes } = yield* ingestTenants(root)
        const c = yield* Effect.flatMap(VectorStore, (s) => s.open("shared"))
        const bDoc = `${prefixes["tenant-b"]}secret.md`
        const aDoc = `${prefixes["tenant-a"]}alpha.md`
        const legacy = `${prefixes.legacy}notes.md`
        const asA = <A, E>(e: Effect.Effect<A, E, Principal.Principal>) => Effect.provide(e, tenantA)
        const filters = [
          Filter.eq("documentId", bDoc),
          Filter.or(Filter.eq("documentId", bDoc), Filter.eq("documentId", legacy)),
          Filter.or(Filter.eq("documentId", bDoc), Filter.eq("documentId", aDoc)),
          Filter.not(Filter.eq("documentId", aDoc)),
          Filter.or(Filter.eq("source", join(root, "tenant-b", "secret.md")), Filter.not(Filter.eq("source", "x")))
        ]
        for (const filter of filters) {
          for (const mode of ["fulltext", "vector", "hybrid"] as const) {
            const r = yield* asA(Answer.query(c, probe, { filter, mode, embeddings: letters, limit: 10 }))
            expect(r.hits.every((h) => readableByA(prefixes)(h.documentId))).toBe(true)
          }
        }
        const parsed = yield* Answer.parseFilters([`documentId=${bDoc}`], c.spec)
        expect((yield* asA(Answer.query(c, probe, { filter: parsed }))).hits).toEqual([])
        // the access list is not a field a filter expression can name
        const accessField = yield* Effect.flip(Answer.parseFilters(["access=tenant-b"], c.spec))
        expect(accessField._tag).toBe("InvalidFilter")
        const raw = yield* Effect.flip(asA(Answer.query(c, probe, { filter: Filter.eq("access", "tenant-b") })))
        expect(raw._tag).toBe("InvalidInput")
        // counts and document lists in the principal's scope
        const scopeA = Principal.scopeOf(Principal.make("tenant-a", ["staff"]))
        expect((yield* c.listDocuments({ scope: scopeA })).map((d) => d.documentId)).toEqual(
          [`${prefixes["tenant-a"]}alpha.md`, `${prefixes["tenant-a"]}drills.md`, `${prefixes.public}glossary.md`].sort()
        )
        expect((yield* c.listDocuments()).length).toBe(6)
        const chunksA = (yield* c.listDocuments({ scope: scopeA })).reduce((n, d) => n + d.chunks, 0)
        expect(yield* c.count(undefined, { scope: scopeA })).toBe(chunksA)
        expect(yield* c.count(Filter.eq("documentId", bDoc), { scope: scopeA })).toBe(0)
        expect(yield* c.count(Filter.eq("documentId", bDoc))).toBeGreaterThan(0)
      }).pipe(Effect.provide(Layer.merge(uploadLayer, variant.store()))))

    it.scopedLive("a reranker sees only the principal's candidates", () =>
      Effect.gen(function*() {
        const root = tempRoot()
        const { prefixes } = yield* ingestTenants(root)
        const seen: Array<string> = []
        // scores the secret highest: had B's chunks been candidates, they would come first
        const reranker: Rerank.Service = {
          defaultModel: "fake-rerank",
          rerank: (request) =>
            Effect.sync(() => {
              seen.push(...request.documents)
              return {
                model: "fake-rerank",
                results: request.documents
                  .map((d, index) => ({ index, relevance_score: d.toLowerCase().includes(secret) ? 10 : 1 / (index + 1) }))
                  .sort((x, y) => y.relevance_score - x.relevance_score)
              } as Rerank.RerankResponse
            })
        }
        for (const mode of ["fulltext", "hybrid"] as const) {
          const r = yield* Answer.query("shared", probe, { mode, embeddings: letters, reranker, limit: 3 }).pipe(Effect.provide(tenantA))
          expect(r.reranked).toBe(true)
          expect(r.hits.length).toBeGreaterThan(0)
          expect(r.hits.every((h) => readableByA(prefixes)(h.documentId))).toBe(true)
        }
        expect(seen.length).toBeGreaterThan(0)
        expect(seen.join("\n").toLowerCase()).not.toContain(secret)
      }).pipe(Effect.provide(Layer.merge(uploadLayer, variant.store()))))

    it.scopedLive("ask: sources, tool results and citations hold only the principal's chunks (loopback chat)", () =>
      Effect.gen(function*() {
        const root = tempRoot()
        const { prefixes } = yield* ingestTenants(root)
        const server = yield* startServer(greedyChat)
        const chat = Chat.layer({ model: "chat-1" }).pipe(Layer.provide(clientLayer(server.url)))
        const answer = yield* Answer.ask("shared", probe, { limit: 3, embeddings: letters }).pipe(Effect.provide(Layer.merge(chat, tenantA)))
        expect(answer.searches.length).toBe(1)
        expect(answer.sources.length).toBeGreaterThan(0)
        expect(answer.sources.every((s) => readableByA(prefixes)(s.documentId))).toBe(true)
        expect(answer.cited.every((s) => readableByA(prefixes)(s.documentId))).toBe(true)
        expect(answer.unknownCitations.length).toBe(8 - answer.sources.length)
        // no text or path of B's or the unlisted documents reached the model (the question and
        // the model's tool query hold the probe itself, so look for what only the documents hold)
        const sent = sentToChat(server.received)
        for (const marker of leakMarkers) expect(sent).not.toContain(marker)
        // the same conversation unrestricted does send them: the probe reaches B's documents
        const before = server.received.length
        const open = yield* Answer.ask("shared", probe, { limit: 3, embeddings: letters }).pipe(Effect.provide(Layer.merge(chat, Principal.layerUnrestricted)))
        expect(open.sources.some((s) => s.text.toLowerCase().includes(secret))).toBe(true)
        expect(leakMarkers.some((m) => sentToChat(server.received.slice(before)).includes(m))).toBe(true)
      }).pipe(Effect.provide(Layer.merge(uploadLayer, variant.store()))))

    it.scopedLive("a new access list on re-ingest replaces the old one, unchanged content or not", () =>
      Effect.gen(function*() {
        const root = tempRoot()
        const { prefixes } = yield* ingestTenants(root)
        const sources = ["tenant-a", "tenant-b", "public", "legacy"].map((f) => Ingest.Source.path(join(root, f)))
        const bDoc = `${prefixes["tenant-b"]}secret.md`
        const c = yield* Effect.flatMap(VectorStore, (s) => s.open("shared"))
        const chunksB = yield* c.count(Filter.eq("documentId", bDoc))
        const run = (access: ReadonlyArray<string>) =>
          Ingest.run({ sources, collection: "shared" }, {
            accessRules: [...rules(prefixes).filter((r) => r.prefix !== prefixes["tenant-b"]), { prefix: prefixes["tenant-b"], access }],
            embedder: { id: "letters", service: letters },
            batchWindow: 20
          })
        const shared = yield* run(["tenant-b", "tenant-a"])
        expect(shared).toMatchObject({ ingested: 2, skipped: 4, failed: 0 })
        const seenByA = yield* Answer.query("shared", probe, { limit: 1 }).pipe(Effect.provide(tenantA))
        expect(seenByA.hits[0]!.documentId).toBe(bDoc)
        const back = yield* run(["tenant-b"])
        expect(back).toMatchObject({ ingested: 2, skipped: 4 })
        const hidden = yield* Answer.query("shared", probe, { limit: 10 }).pipe(Effect.provide(tenantA))
        expect(hidden.hits.some((h) => h.documentId.startsWith(prefixes["tenant-b"]))).toBe(false)
        // the old generation is gone: the document has as many chunks as before
        expect(yield* c.count(Filter.eq("documentId", bDoc))).toBe(chunksB)
        // the same list again: nothing rewritten
        expect(yield* run(["tenant-b"])).toMatchObject({ ingested: 0, skipped: 6, writes: 0 })
      }).pipe(Effect.provide(Layer.merge(uploadLayer, variant.store()))))
  })
}

describe("access enforcement is not optional", () => {
  it.scopedLive("a backend that does not enforce access lists refuses a restricted read (typed), serves an unrestricted one", () =>
    Effect.gen(function*() {
      const root = tempRoot()
      yield* ingestTenants(root)
      const c = yield* Effect.flatMap(VectorStore, (s) => s.open("shared"))
      const legacyAdapter = { ...c, enforcesAccess: undefined }
      const refused = yield* Effect.flip(Answer.query(legacyAdapter, probe).pipe(Effect.provide(tenantA)))
      expect(refused).toMatchObject({ _tag: "StoreError", op: "access" })
      const refusedRetrieve = yield* Effect.flip(Retrieve.retrieve(legacyAdapter, probe, { scope: Principal.scopeOf(Principal.make("tenant-a")) }))
      expect(refusedRetrieve._tag).toBe("StoreError")
      const served = yield* Answer.query(legacyAdapter, probe).pipe(Effect.provide(Principal.layerUnrestricted))
      expect(served.hits.length).toBeGreaterThan(0)
      // an invalid principal is refused, not widened
      const bad = yield* Effect.flip(Answer.query(c, probe).pipe(Effect.provide(Principal.layer(Principal.make("a\u0000b")))))
      expect(bad._tag).toBe("InvalidInput")
    }).pipe(Effect.provide(Layer.merge(uploadLayer, LanceDbStore.layer({ uri: join(tempRoot(), "db") })))))

  it("forgetting the principal is a type error", () => {
    // @ts-expect-error Answer.query needs a Principal in its context
    const missing: Effect.Effect<unknown, unknown, VectorStore> = Answer.query("shared", probe)
    // @ts-expect-error Answer.ask needs a Principal in its context
    const missingAsk: Effect.Effect<unknown, unknown, VectorStore | Chat.Chat> = Answer.ask("shared", probe)
    expect([typeof missing, typeof missingAsk]).toEqual(["object", "object"])
  })
})
