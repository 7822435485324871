/**
 * The pure parts of `Eval`: the paired bootstrap on cases with a known answer, the stratified
 * seeded sample, known-item queries, the overlap filter, and a build + run over the in-memory
 * store (a real collection through the port).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as Chat from "../../src/api/Chat.js"
import * as Eval from "../../src/bench/Eval.js"
import * as Principal from "../../src/pipeline/Principal.js"
import * as MemoryStore from "../../src/store/MemoryStore.js"
import { type Chunk, type Hit, VectorStore } from "../../src/store/VectorStore.js"
import { delta, sse } from "../pipeline/answer-fixtures.js"
import { clientLayer, startServer } from "../support/server.js"

const hit = (id: string, documentId: string, text: string): Hit => ({ id, documentId, text, title: undefined, metadata: {}, score: 0 })

describe("paired bootstrap", () => {
  it.effect("identical runs: difference 0, interval [0, 0], not significant, p = 1", () =>
    Effect.gen(function*() {
      const a = [0.2, 0.9, 0.5, 0, 1, 0.3, 0.7, 0.1]
      const d = yield* Eval.pairedDifference(a, [...a], { resamples: 1000, seed: 7 })
      expect(d).toEqual({ mean: 0, lo: 0, hi: 0, significant: false, p: 1 })
    }))

  it.effect("a run that wins on every query is significant; losing on every query too, with the sign", () =>
    Effect.gen(function*() {
      const a = Array.from({ length: 30 }, (_, i) => (i % 5) / 10)
      const b = a.map((x) => x + 0.05 + (x > 0.2 ? 0.1 : 0))
      const up = yield* Eval.pairedDifference(a, b)
      expect(up.significant).toBe(true)
      expect(up.lo).toBeGreaterThan(0)
      expect(up.p).toBe(0)
      expect(up.mean).toBeCloseTo(0.05 + 0.1 * (12 / 30), 10)
      const down = yield* Eval.pairedDifference(b, a)
      expect(down.significant).toBe(true)
      expect(down.hi).toBeLessThan(0)
    }))

  it.effect("a difference that changes sign across queries with mean about 0 is not significant", () =>
    Effect.gen(function*() {
      const a = Array.from({ length: 40 }, () => 0.5)
      const b = a.map((x, i) => x + (i % 2 === 0 ? 0.3 : -0.3))
      const d = yield* Eval.pairedDifference(a, b)
      expect(d.mean).toBeCloseTo(0, 10)
      expect(d.lo).toBeLessThan(0)
      expect(d.hi).toBeGreaterThan(0)
      expect(d.significant).toBe(false)
    }))

  it.effect("the same seed gives the same interval; the interval holds the mean; lists of other lengths fail", () =>
    Effect.gen(function*() {
      const v = [0, 1, 1, 0, 1, 0.5, 0.25, 1, 0, 0.75]
      const x = Eval.interval(v, { seed: 3 })
      expect(Eval.interval(v, { seed: 3 })).toEqual(x)
      expect(x.mean).toBeCloseTo(0.55, 10)
      expect(x.lo).toBeLessThan(x.mean)
      expect(x.hi).toBeGreaterThan(x.mean)
      const bad = yield* Effect.exit(Eval.pairedDifference([1, 2], [1]))
      expect(Exit.isFailure(bad)).toBe(true)
    }))
})

describe("sampling and known-item queries", () => {
  const chunks = [
    ...Array.from({ length: 10 }, (_, i) => hit(`a${i}`, "A", `alpha document chunk ${i} about solar panels and photovoltaic cells in deserts number ${i} words`)),
    hit("b0", "B", "bravo document about tide pools anemones and hermit crabs living on rocky shores at low tide"),
    hit("c0", "C", "too short to ask"),
    hit("d0", "D", "delta document on lighthouse lenses invented by Augustin Fresnel for beams seen from far away")
  ]

  it("is stratified (every usable document before a second chunk of any), seeded and skips short chunks", () => {
    const s = Eval.sample(chunks, { size: 3, seed: 1 })
    expect(new Set(s.map((c) => c.documentId))).toEqual(new Set(["A", "B", "D"]))
    expect(Eval.sample(chunks, { size: 3, seed: 1 })).toEqual(s)
    const all = Eval.sample(chunks, { size: 100, seed: 2 })
    expect(all.length).toBe(12)
    expect(all.some((c) => c.id === "c0")).toBe(false)
    expect(Eval.sample(chunks, { size: 5, seed: 1 }).map((c) => c.id)).not.toEqual(Eval.sample(chunks, { size: 5, seed: 9 }).map((c) => c.id))
  })

  it("a known-item query takes the chunk's rarest words in their order in the chunk", () => {
    const stats = Eval.termStats(chunks)
    // every word of d0 but "document" (in A, B and D) occurs once in the collection: ties go by position
    expect(Eval.knownItemQuery(chunks[12]!, stats, 4)).toBe("delta lighthouse lenses invented")
    // "document" (in 12 of the 13 chunks) is the least distinctive word of a0
    const q = Eval.knownItemQuery(chunks[0]!, stats, 4)!
    expect(q.split(" ")).toHaveLength(4)
    expect(q).not.toContain("document")
  })

  it("overlap: copied sentences score 1, own words 0; questions are parsed from numbered lines", () => {
    const text = "The Fresnel lens was invented by Augustin Fresnel in 1822 to make lighthouse beams visible."
    expect(Eval.overlap("The Fresnel lens was invented by Augustin Fresnel in 1822?", text)).toBe(1)
    expect(Eval.overlap("Who designed the optics that let coastal beacons be seen from afar?", text)).toBe(0)
    expect(Eval.parseQuestions("1. Who made it?\n- What year?\n\nQ3: Why so?")).toEqual(["Who made it?", "What year?", "Why so?"])
  })
})

describe("build and run over a collection", () => {
  const docs: ReadonlyArray<Chunk> = [
    { id: "l#0", documentId: "lighthouse", title: "Lighthouse optics", text: "The Fresnel lens was invented by Augustin Fresnel in 1822 to make lighthouse beams visible from far away at sea.", metadata: {} },
    { id: "l#1", documentId: "lighthouse", title: "Lighthouse optics", text: "A lighthouse lamp burned whale oil before kerosene replaced it in the late nineteenth century along most coasts.", metadata: {} },
    { id: "h#0", documentId: "harbour", title: "Harbour history", text: "The harbour was dredged in 1910 so that steamships could dock at the quay beside the old fish market hall.", metadata: {} },
    { id: "f#0", documentId: "fruit", title: "Fruit", text: "Bananas are yellow and grow in tropical climates where the rainfall is high and frost never comes to the plantations.", metadata: {} }
  ]

  it.effect("builds a known-item set whose queries find their document; run compares two settings", () =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "docs" })
      yield* c.upsert(docs)
      const set = yield* Eval.build(c, { size: 10, seed: 1 })
      expect(set.manifest).toMatchObject({ method: "known-item", model: null, seed: 1, size: 10, sampledChunks: 4, queries: 4, documents: 3, chunks: 4 })
      expect(set.corpus.map((d) => d._id)).toEqual(["fruit", "harbour", "lighthouse"])
      expect(set.corpus[2]!.text).toContain("Fresnel lens")
      expect(set.corpus[2]!.text).toContain("whale oil")
      const loaded: Eval.LoadedSet = { dir: "mem", manifest: set.manifest, queries: set.queries, qrels: set.qrels }
      const report = yield* Eval.run(loaded, [
        { name: "fulltext", collection: c, retrieve: { mode: "fulltext" } },
        { name: "fulltext again", collection: c, retrieve: { mode: "fulltext" } }
      ], { resamples: 200 })
      expect(report.settings[0]!.summary["ndcg@10"].mean).toBe(1)
      expect(report.settings[1]!.vsFirst!["ndcg@10"]).toMatchObject({ mean: 0, significant: false })
      expect(Eval.table(report)).toMatch(/fulltext again +1\.000 \[1\.000, 1\.000\]/)
      const same = yield* Eval.compareWithBaseline(report, report)
      expect(same.some((r) => r.regression)).toBe(false)
      const better = {
        ...report,
        settings: report.settings.map((s) => ({ ...s, perQuery: { ...s.perQuery, "ndcg@10": s.perQuery["ndcg@10"].map(() => 1) } }))
      }
      const worse = {
        ...report,
        settings: report.settings.map((s) => ({ ...s, perQuery: { ...s.perQuery, "ndcg@10": s.perQuery["ndcg@10"].map(() => 0.2) } }))
      }
      const rows = yield* Eval.compareWithBaseline(worse, better)
      expect(rows.filter((r) => r.regression).map((r) => `${r.setting} ${r.metric}`)).toEqual(["fulltext ndcg@10", "fulltext again ndcg@10"])
      const other = yield* Effect.exit(Eval.compareWithBaseline(report, { ...report, set: { ...report.set, id: "0000" } }))
      expect(Exit.isFailure(other)).toBe(true)
      for (const junk of [{}, null, { ...report, settings: [{ name: "fulltext" }] }]) {
        const bad = yield* Effect.flip(Eval.compareWithBaseline(report, junk as unknown as Eval.RunReport))
        expect(bad.message).toContain("not a saved eval run")
      }
    }).pipe(Effect.provide(MemoryStore.layer)))
})

describe("citation precision", () => {
  it.scopedLive("asks each question through a loopback chat server and scores the answers against their citations", () =>
    Effect.gen(function*() {
      // the model copies the text of source [1] (supported), then adds a claim no source holds (unsupported)
      const server = yield* startServer((req, res) => {
        const body = req.json as { messages: Array<{ role: string; content: string }> }
        const user = body.messages.find((m) => m.role === "user")!.content
        const lines = user.split("\n")
        const first = lines[lines.findIndex((l) => l.startsWith("[1] ")) + 1] ?? ""
        sse(res, [delta({ role: "assistant" }), delta({ content: `${first.replace(/\.$/, "")} [1]. ` }), delta({ content: "Purple dragons guard the treasury [1]." }), delta({}, "stop")])
      })
      const store = yield* VectorStore
      const c = yield* store.collection({ name: "docs" })
      yield* c.upsert([
        { id: "l#0", documentId: "lighthouse", title: "Lighthouse optics", text: "The Fresnel lens was invented by Augustin Fresnel in 1822 to make lighthouse beams visible.", metadata: {} },
        { id: "h#0", documentId: "harbour", title: "Harbour history", text: "The harbour was dredged in 1910 so that steamships could dock at the quay.", metadata: {} }
      ])
      const set: Eval.LoadedSet = {
        dir: "mem",
        manifest: undefined,
        queries: [{ _id: "q1", text: "Fresnel lens lighthouse" }, { _id: "q2", text: "harbour dredged steamships" }],
        qrels: new Map([["q1", new Map([["lighthouse", 1]])], ["q2", new Map([["harbour", 1]])]])
      }
      const r = yield* Eval.citationPrecision(set, c, { model: "chat-1", tools: false, limit: 1 }).pipe(
        Effect.provide(Chat.layer().pipe(Layer.provide(clientLayer(server.url)))),
        Effect.provide(Principal.layerUnrestricted)
      )
      expect(r).toMatchObject({ questions: 2, answersWithCitations: 2, supported: 2, unsupported: 2, uncited: 0, relevantCited: 2 })
      expect(r.precision).toEqual({ mean: 0.5, lo: 0.5, hi: 0.5 })
      expect(server.received).toHaveLength(2)
      expect(Eval.citationLine(r)).toContain("citation precision 0.500 [0.500, 0.500] over 2 of 2 answers with citations")
    }).pipe(Effect.provide(MemoryStore.layer)))
})
