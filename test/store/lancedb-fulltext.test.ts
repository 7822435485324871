/**
 * The LanceDB adapter's two full-text engines: the in-memory index (collections of at most
 * `memoryIndexRows` rows) and LanceDB's native index. Both score BM25 over title + text plus a
 * boosted title; they share the analyzer's choices (stop words, stemming), so on real abstracts
 * they rank alike. The in-memory copy follows the table: another connection's writes are seen.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { sharedPath } from "../../src/internal/shared.js"
import * as Retrieve from "../../src/pipeline/Retrieve.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { terms } from "../../src/store/TextAnalysis.js"
import { type Chunk, type Collection, Filter, type TextQuery, VectorStore } from "../../src/store/VectorStore.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-fts-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshDir = () => join(root, `db${n++}`)

// 600 SciFact abstracts and 40 of its claims as queries
const lines = (file: string) => readFileSync(sharedPath("bench", "scifact", file), "utf8").split("\n").filter((l) => l.trim() !== "")
const abstracts: Array<Chunk> = lines("corpus.jsonl").slice(0, 600).map((l, i) => {
  const d = JSON.parse(l) as { _id: string; title: string; text: string }
  return { id: `s${d._id}`, documentId: d._id, title: d.title, text: d.text, metadata: { part: i % 3 === 0 ? "a" : "b" } }
})
const claims = lines("queries.jsonl").slice(0, 40).map((l) => (JSON.parse(l) as { text: string }).text)
const spec = { name: "scifact", fields: { part: "string" as const } }

const storeAt = (uri: string, memoryIndexRows?: number) => Layer.fresh(LanceDbStore.layer({ uri, memoryIndexRows }))
const ids = (hits: ReadonlyArray<{ readonly id: string }>) => hits.map((h) => h.id)
const overlap = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.filter((x) => b.includes(x)).length / Math.max(1, a.length)

/** Runs `f` with a handle on the same table through each engine. */
const bothEngines = <A>(uri: string, f: (memory: Collection, native: Collection) => Effect.Effect<A, unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const memory = yield* Effect.flatMap(VectorStore, (s) => s.open("scifact")).pipe(Effect.provide(storeAt(uri)))
    const native = yield* Effect.flatMap(VectorStore, (s) => s.open("scifact")).pipe(Effect.provide(storeAt(uri, 0)))
    return yield* f(memory, native)
  }))

describe("LanceDbStore full text: in memory and LanceDB's index", () => {
  it.live("rank real abstracts alike: plain, title-boosted, weighted and filtered queries, and the whole RM3 path", () =>
    Effect.gen(function*() {
      const uri = freshDir()
      yield* Effect.scoped(Effect.gen(function*() {
        const c = yield* Effect.flatMap(VectorStore, (s) => s.collection(spec))
        yield* c.upsert(abstracts)
        yield* c.optimize()
      }).pipe(Effect.provide(storeAt(uri))))
      yield* bothEngines(uri, (memory, native) =>
        Effect.gen(function*() {
          const top1: Array<boolean> = []
          const gaps: Array<number> = []
          const shared: Array<number> = []
          for (const q of claims) {
            for (const options of [{ limit: 10 }, { limit: 10, titleBoost: 0.3 }, { limit: 10, filter: Filter.eq("part", "a") }]) {
              const m = yield* memory.searchText(q, options)
              const l = yield* native.searchText(q, options)
              expect(m.length).toBe(l.length)
              if (options.filter) for (const h of m) expect(h.metadata["part"]).toBe("a")
              top1.push(m[0]?.id === l[0]?.id)
              shared.push(overlap(ids(m), ids(l)))
              // the same BM25: where both rank a row, their scores agree (the stemmers differ on a few words)
              for (const h of m.slice(0, 3)) {
                const other = l.find((x) => x.id === h.id)
                if (other !== undefined) gaps.push(Math.abs(other.score - h.score) / other.score)
              }
            }
            const m = yield* Retrieve.retrieve(memory, q, { limit: 10 })
            const l = yield* Retrieve.retrieve(native, q, { limit: 10 })
            top1.push(m[0]?.id === l[0]?.id)
            shared.push(overlap(ids(m), ids(l)))
          }
          const mean = shared.reduce((a, b) => a + b, 0) / shared.length
          const same = top1.filter(Boolean).length / top1.length
          expect(mean).toBeGreaterThan(0.9)
          expect(same).toBeGreaterThan(0.9)
          expect(gaps.length).toBeGreaterThan(200)
          expect(gaps.filter((g) => g < 0.1).length / gaps.length).toBeGreaterThan(0.9)
          // weighted words: a heavier word outranks a lighter one, in both engines
          for (const c of [memory, native]) {
            const w = yield* c.searchText({ terms: [{ text: "diffusion", weight: 2 }, { text: "aspirin", weight: 0.01 }] }, { limit: 3 })
            expect(w[0]?.text.toLowerCase()).toContain("diffusion")
          }
          // RM3 from the engine's own analysis of the hits: the expansion it makes from their texts
          const stems = (q: TextQuery) =>
            typeof q === "string" ? q : new Map(q.terms.map((t) => [terms(t.text)[0]!, Math.round(t.weight * 1e9)]))
          for (const q of claims.slice(0, 10)) {
            const first = yield* memory.searchText(q, { limit: 10, titleBoost: 0.3 })
            const analysed = yield* memory.termCounts!(first.map((h) => h.id))
            expect(analysed.every((a) => a !== undefined && a.length > 0)).toBe(true)
            const fromIndex = Retrieve.feedbackQuery(q, first, Retrieve.defaultFeedback, analysed)
            expect(stems(fromIndex)).toEqual(stems(Retrieve.feedbackQuery(q, first, Retrieve.defaultFeedback)))
          }
          expect(yield* memory.termCounts!(["no such id"])).toEqual([undefined])
          // LanceDB's index holds no analysis: the caller analyses the texts
          expect(yield* native.termCounts!([abstracts[0]!.id])).toEqual([undefined])
          // words of one weight go to LanceDB as one match: it scores the sum of the words' own scores
          const pair = yield* native.searchText({ terms: [{ text: "diffusion", weight: 0.5 }, { text: "tensor", weight: 0.5 }] }, { limit: 50 })
          const alone = new Map<string, number>()
          for (const w of ["diffusion", "tensor"]) {
            for (const h of yield* native.searchText({ terms: [{ text: w, weight: 0.5 }] }, { limit: 600 })) {
              alone.set(h.id, (alone.get(h.id) ?? 0) + h.score)
            }
          }
          expect(pair.length).toBeGreaterThan(5)
          for (const h of pair) expect(h.score).toBeCloseTo(alone.get(h.id)!, 4)
          // words the analyzer drops entirely give nothing, not an error
          expect(yield* memory.searchText("the of and", { limit: 5 })).toEqual([])
          expect(yield* native.searchText("the of and", { limit: 5 })).toEqual([])
          return { mean, same }
        }))
    }), 120_000)

  it.live("the in-memory copy follows the table: writes and deletes by another connection are searched at once", () =>
    Effect.gen(function*() {
      const uri = freshDir()
      yield* Effect.scoped(Effect.gen(function*() {
        const reader = yield* Effect.flatMap(VectorStore, (s) => s.collection(spec)).pipe(Effect.provide(storeAt(uri)))
        const writer = yield* Effect.flatMap(VectorStore, (s) => s.collection(spec)).pipe(Effect.provide(storeAt(uri)))
        yield* writer.upsert(abstracts.slice(0, 50))
        expect(ids(yield* reader.searchText("zyxolite marmalade", { limit: 5 }))).toEqual([])
        expect((yield* reader.searchText(abstracts[7]!.title!, { limit: 1 }))[0]?.id).toBe(abstracts[7]!.id)
        yield* writer.upsert([{ id: "new", documentId: "new", text: "zyxolite marmalade on toast", metadata: { part: "a" } }])
        expect(ids(yield* reader.searchText("zyxolite marmalade", { limit: 5 }))).toEqual(["new"])
        yield* writer.upsert([{ id: "new", documentId: "new", text: "plain toast", metadata: { part: "a" } }])
        expect(ids(yield* reader.searchText("zyxolite", { limit: 5 }))).toEqual([])
        yield* writer.deleteDocuments(["new", abstracts[7]!.documentId])
        expect(ids(yield* reader.searchText("plain toast", { limit: 5 }))).not.toContain("new")
        expect(ids(yield* reader.searchText(abstracts[7]!.title!, { limit: 10 }))).not.toContain(abstracts[7]!.id)
        // the reader's own writes too
        yield* reader.upsert([{ id: "own", documentId: "own", text: "quokka census", metadata: { part: "b" } }])
        expect(ids(yield* reader.searchText("quokka", { limit: 5 }))).toEqual(["own"])
        const bad = yield* Effect.exit(reader.searchText("quokka", { filter: Filter.eq("nope", "x") }))
        expect(Exit.isFailure(bad) && JSON.stringify(bad.cause)).toContain("InvalidInput")
      }))
    }), 120_000)

  it.live("above memoryIndexRows the handle searches LanceDB's index: the very scores of a handle that always does", () =>
    Effect.gen(function*() {
      const uri = freshDir()
      yield* Effect.scoped(Effect.gen(function*() {
        const c = yield* Effect.flatMap(VectorStore, (s) => s.collection(spec)).pipe(Effect.provide(storeAt(uri)))
        yield* c.upsert(abstracts.slice(0, 40))
      }))
      const search = (memoryIndexRows: number) =>
        Effect.scoped(Effect.flatMap(VectorStore, (s) => s.open("scifact")).pipe(
          Effect.flatMap((c) => c.searchText(claims[0]!, { limit: 10, titleBoost: 0.3 })),
          Effect.provide(storeAt(uri, memoryIndexRows))
        ))
      const native = yield* search(0)
      const bounded = yield* search(39)
      const memory = yield* search(40)
      expect(native.length).toBeGreaterThan(0)
      expect(bounded).toEqual(native)
      expect(memory.map((h) => h.score)).not.toEqual(native.map((h) => h.score))
    }), 120_000)
})
