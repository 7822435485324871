/**
 * RM3's second pass on a collection above the candidate bound (forced here with
 * `memoryIndexRows: 0, textCandidateRows: 0` on 600 SciFact abstracts): `textCandidates` takes
 * the first pass's candidates from LanceDB's index and ranks them in memory with the
 * collection's term statistics, instead of a second index query of ~40 weighted clauses. It must
 * rank as that query did, and as the in-memory engine does, with the filter and the read scope
 * applied; the statistics persisted in the side table `<name>.terms` must follow deletes and
 * re-ingests, stay out of the collection list and go with the collection.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { sharedPath } from "../../src/internal/shared.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { versionRecheckMs } from "../../src/store/internal/lance/stats.js"
import { terms } from "../../src/store/TextAnalysis.js"
import { type Chunk, type Collection, Filter, ReadScope, VectorStore } from "../../src/store/VectorStore.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-candidates-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

// 600 SciFact abstracts (a third readable by alice, a third by bob, a third public) and 30 claims
const lines = (file: string) => readFileSync(sharedPath("bench", "scifact", file), "utf8").split("\n").filter((l) => l.trim() !== "")
const abstracts: Array<Chunk> = lines("corpus.jsonl").slice(0, 600).map((l, i) => {
  const d = JSON.parse(l) as { _id: string; title: string; text: string }
  return {
    id: `s${d._id}`,
    documentId: d._id,
    title: d.title,
    text: d.text,
    metadata: { part: i % 2 === 0 ? "a" : "b" },
    access: [["alice"], ["bob"], ["*"]][i % 3]
  }
})
const accessOf = new Map(abstracts.map((c) => [c.id, c.access ?? []]))
const claims = lines("queries.jsonl").slice(0, 20).map((l) => (JSON.parse(l) as { text: string }).text)
const spec = { name: "scifact", fields: { part: "string" as const } }

const uri = join(root, "db")
// memoryIndexRows 0 and textCandidateRows 0: the handle is above both bounds, as a large collection is
const storeAt = (memoryIndexRows?: number) =>
  Layer.fresh(LanceDbStore.layer({ uri, memoryIndexRows, textCandidateRows: memoryIndexRows }))
// the store's layer built in the caller's scope: the connection stays open as long as the test
const open = (memoryIndexRows?: number) =>
  Effect.flatMap(Layer.build(storeAt(memoryIndexRows)), (context) =>
    Effect.flatMap(VectorStore, (s) => s.open("scifact")).pipe(Effect.provide(context)))
const ids = (hits: ReadonlyArray<{ readonly id: string }>) => hits.map((h) => h.id)
const overlap = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.filter((x) => b.includes(x)).length / Math.max(1, a.length)
const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)

const written = Effect.scoped(Effect.gen(function*() {
  const c = yield* Effect.flatMap(VectorStore, (s) => s.collection(spec)).pipe(Effect.provide(storeAt()))
  if ((yield* c.count()) === 0) {
    yield* c.upsert(abstracts)
    yield* c.optimize()
  }
}))

describe("RM3 over a first pass's candidates (LanceDB above the candidate bound)", () => {
  it.live("ranks as the old second query through LanceDB's index and as the in-memory engine", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* written
      const native = yield* open(0)
      const memory = yield* open()
      expect(native.textCandidates).toBeDefined()
      // the same handle without the capability: the old path (a second, weighted query through LanceDB)
      const old: Collection = { ...native, textCandidates: undefined }
      const withOld: Array<number> = []
      const withMemory: Array<number> = []
      const firstOld: Array<boolean> = []
      const gaps: Array<number> = []
      for (const q of claims) {
        const rescored = yield* Retrieve.retrieve(native, q, { limit: 10 })
        const before = yield* Retrieve.retrieve(old, q, { limit: 10 })
        // every row a candidate: the in-memory engine's very ranking (the same analyzer, the same statistics)
        const deep = yield* Retrieve.retrieve(native, q, { limit: 10, fullText: { feedbackDepth: 1000 } })
        const inMemory = yield* Retrieve.retrieve(memory, q, { limit: 10 })
        expect(rescored.length).toBe(10)
        for (let i = 1; i < rescored.length; i++) expect(rescored[i]!.score).toBeLessThanOrEqual(rescored[i - 1]!.score)
        withOld.push(overlap(ids(rescored), ids(before)))
        firstOld.push(rescored[0]!.id === before[0]!.id)
        withMemory.push(overlap(ids(deep), ids(inMemory)))
        for (const h of deep) {
          const m = inMemory.find((x) => x.id === h.id)
          if (m !== undefined) gaps.push(Math.abs(m.score - h.score) / m.score)
        }
      }
      expect(mean(withOld)).toBeGreaterThan(0.85)
      expect(firstOld.filter(Boolean).length / firstOld.length).toBeGreaterThanOrEqual(0.8)
      expect(mean(withMemory)).toBeGreaterThan(0.97)
      expect(Math.max(...gaps)).toBeLessThan(1e-4)
    })), 60_000)

  it.live("applies the filter and the read scope to the candidates, the feedback and the hits", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* written
      const native = yield* open(0)
      const old: Collection = { ...native, textCandidates: undefined }
      const alice = ReadScope.entries(["alice", "*"])
      const shared: Array<number> = []
      for (const q of claims.slice(0, 8)) {
        const filtered = yield* Retrieve.retrieve(native, q, { limit: 10, filter: Filter.eq("part", "a") })
        expect(filtered.length).toBeGreaterThan(0)
        for (const h of filtered) expect(h.metadata["part"]).toBe("a")
        const scoped = yield* Retrieve.retrieve(native, q, { limit: 10, scope: alice })
        expect(scoped.length).toBeGreaterThan(0)
        for (const h of scoped) expect(accessOf.get(h.id)!.some((e) => e === "alice" || e === "*")).toBe(true)
        const both = yield* Retrieve.retrieve(native, q, { limit: 10, scope: alice, filter: Filter.eq("part", "b") })
        for (const h of both) {
          expect(h.metadata["part"]).toBe("b")
          expect(accessOf.get(h.id)!.some((e) => e === "alice" || e === "*")).toBe(true)
        }
        shared.push(overlap(ids(scoped), ids(yield* Retrieve.retrieve(old, q, { limit: 10, scope: alice }))))
        // a scope no chunk is readable in: nothing, not even as a feedback document
        expect(yield* Retrieve.retrieve(native, q, { limit: 10, scope: ReadScope.entries(["mallory"]) })).toEqual([])
      }
      expect(mean(shared)).toBeGreaterThan(0.85)
      // a chunk outside the scope is no candidate: its terms are not handed out
      const candidates = (yield* native.textCandidates!(claims[0]!, { scope: ReadScope.entries(["bob"]), depth: 1000 }))!
      const bobs = abstracts.filter((c) => c.access?.[0] === "bob").map((c) => c.id)
      const others = abstracts.filter((c) => c.access?.[0] === "alice").map((c) => c.id)
      const terms = yield* candidates.termCounts(others)
      expect(terms.every((t) => t === undefined)).toBe(true)
      const hits = yield* candidates.search(claims[0]!, { limit: 50, titleBoost: 0.3 })
      expect(hits.length).toBeGreaterThan(0)
      for (const h of hits) expect(bobs).toContain(h.id)
    })), 60_000)

  it.live("keeps the term statistics in a side table that follows deletes and re-ingests", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(storeAt(0))
      const store = Context.get(context, LanceDbStore.LanceDbStore)
      const c = yield* store.collection({ name: "churn", fields: { part: "string" } })
      const docs = abstracts.slice(0, 200)
      yield* c.upsert(docs)
      yield* c.optimize()
      const cell = terms("cells")[0]!
      // the exact document frequency of a term and the rows, as the side table should hold them (all rows sampled)
      const df = (chunks: ReadonlyArray<Chunk>) => chunks.filter((d) => terms(`${d.title}\n${d.text}`).includes(cell)).length
      const side = () =>
        Effect.promise(async () => {
          const t = await store.connection.openTable("churn.terms")
          const rows = await t.query().where(`term IN (' rows', '${cell}')`).toArray()
          const at = new Map(rows.map((r) => [String(r["term"]), Number(r["content"])]))
          return { rows: at.get(" rows"), df: at.get(cell), version: await t.version() }
        })
      // written by the explicit optimize (an ingest's end), before any search
      const optimized = yield* side()
      expect(optimized).toMatchObject({ rows: 200, df: df(docs) })
      const query = claims[1]!
      const first = yield* Retrieve.retrieve(c, query, { limit: 10 })
      expect(first.length).toBe(10)
      expect(yield* side()).toEqual(optimized)
      // a side table, not a collection
      expect(yield* store.list()).not.toContain("churn.terms")
      expect(yield* store.list()).toContain("churn")

      // half the documents deleted: the row count moved by more than a tenth, a new sample
      yield* c.deleteDocuments(docs.slice(0, 100).map((d) => d.documentId))
      yield* Retrieve.retrieve(c, query, { limit: 10 })
      expect(yield* side()).toMatchObject({ rows: 100, df: df(docs.slice(100)) })
      // and ingested again
      yield* c.upsert(docs.slice(0, 100))
      const again = yield* Retrieve.retrieve(c, query, { limit: 10 })
      const written = yield* side()
      expect(written).toMatchObject({ rows: 200, df: df(docs) })
      expect(ids(again)).toEqual(ids(first))

      // a fresh handle (as a new process) reads the side table: the same ranking, nothing written again
      const fresh = yield* Effect.flatMap(Layer.build(storeAt(0)), (ctx) =>
        Effect.flatMap(VectorStore, (s) => s.open("churn")).pipe(Effect.provide(ctx)))
      const reopened = yield* Retrieve.retrieve(fresh, query, { limit: 10 })
      expect(ids(reopened)).toEqual(ids(first))
      reopened.forEach((h, i) => expect(h.score).toBeCloseTo(again[i]!.score, 9))
      expect((yield* side()).version).toBe(written.version)
      // more queries than it looks terms up for (then it reads the whole side table): still the same ranking
      for (const q of claims.slice(2, 14)) {
        expect(ids(yield* Retrieve.retrieve(fresh, q, { limit: 10 }))).toEqual(ids(yield* Retrieve.retrieve(c, q, { limit: 10 })))
      }

      // it goes with its collection
      yield* store.drop("churn")
      const names = yield* Effect.promise(() => store.connection.tableNames())
      expect(names).not.toContain("churn")
      expect(names).not.toContain("churn.terms")
    })), 60_000)

  it.live("sees another handle's writes once it asks the table's version again (at most a second later)", () =>
    Effect.scoped(Effect.gen(function*() {
      const reader = Context.get(yield* Layer.build(storeAt(0)), LanceDbStore.LanceDbStore)
      const writer = Context.get(yield* Layer.build(storeAt(0)), LanceDbStore.LanceDbStore)
      const c = yield* writer.collection({ name: "other", fields: { part: "string" } })
      const docs = abstracts.slice(0, 200)
      yield* c.upsert(docs)
      yield* c.optimize()
      const rowsInSide = () =>
        Effect.promise(async () => {
          const t = await reader.connection.openTable("other.terms")
          const rows = await t.query().where(`term = ' rows'`).toArray()
          return Number(rows[0]?.["content"])
        })
      const r = yield* reader.open("other")
      const query = claims[1]!
      const before = yield* Retrieve.retrieve(r, query, { limit: 10 })
      expect(before.length).toBe(10)
      expect(yield* rowsInSide()).toBe(200)
      // the other handle (as another process) deletes half the rows: the reader's count moved by
      // more than a tenth once it asks the table's version again, and it draws a new sample
      yield* c.deleteDocuments(docs.slice(0, 100).map((d) => d.documentId))
      yield* Effect.sleep(versionRecheckMs + 100)
      const after = yield* Retrieve.retrieve(r, query, { limit: 10 })
      expect(yield* rowsInSide()).toBe(100)
      const left = new Set(docs.slice(100).map((d) => d.documentId))
      expect(after.length).toBeGreaterThan(0)
      expect(after.every((h) => left.has(h.documentId))).toBe(true)
      yield* writer.drop("other")
    })), 60_000)
})
