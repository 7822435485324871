/**
 * The behaviour every `VectorStore` backend must have, as a vitest suite: a new backend runs
 * `contract("name", () => MyStore.layer(...))` from its own test file and passes every test the
 * built-in stores pass (upserts and their counts, deletes, filters that cannot inject, full
 * text, vectors, hybrid, listing documents, the embedding spec, and access lists: a restricted
 * `ReadScope` applies inside every read, before ranking and the limit).
 *
 * From `effect-rag/testing`; it needs `vitest` and `@effect/vitest` (optional peer dependencies
 * that a test setup has).
 *
 * @since 0.1.0
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, type Layer } from "effect"
import { type Chunk, type Collection, Filter, ReadScope, VectorStore } from "./VectorStore.js"

/**
 * Deterministic unit vectors in 4-d (one axis per topic).
 *
 * @since 0.1.0
 * @category utils
 */
export const axis = (i: number, noise = 0): Array<number> => {
  const v = [0.05, 0.05, 0.05, 0.05]
  v[i % 4] = 1
  v[(i + 1) % 4] = v[(i + 1) % 4]! + noise
  return v
}

/**
 * A small corpus: 3 documents, 6 chunks, with metadata.
 *
 * @since 0.1.0
 * @category utils
 */
export const corpus: ReadonlyArray<Chunk> = [
  { id: "a1", documentId: "A", title: "Solar panels", text: "Photovoltaic cells convert sunlight into electricity.", vector: axis(0), metadata: { lang: "en", year: 2020, draft: false } },
  { id: "a2", documentId: "A", title: "Solar panels", text: "Panel efficiency drops when the cells get hot.", vector: axis(0, 0.2), metadata: { lang: "en", year: 2020, draft: false } },
  { id: "b1", documentId: "B", title: "Sourdough bread", text: "A starter of wild yeast leavens the dough.", vector: axis(1), metadata: { lang: "en", year: 2018, draft: true } },
  { id: "b2", documentId: "B", title: "Sourdough bread", text: "Bake the loaf in a hot oven with steam.", vector: axis(1, 0.3), metadata: { lang: "fr", year: 2018, draft: true } },
  { id: "c1", documentId: "C", title: "Tide pools", text: "Anemones and crabs live in rocky tide pools.", vector: axis(2), metadata: { lang: "en", year: 2023, draft: false, note: "it's \"quoted\"" } },
  { id: "c2", documentId: "C", title: "Tide pools", text: "Low tide exposes the pools twice a day.", vector: axis(2, 0.1), metadata: { lang: "de", year: 2023, draft: false } }
]

/**
 * @since 0.1.0
 * @category utils
 */
export const spec = {
  name: "contract",
  embedding: { model: "test-4d", dimension: 4 },
  fields: { lang: "string", year: "number", draft: "boolean", note: "string" }
} as const

/**
 * Two tenants in one collection: `tenant-a` and `tenant-b` chunks, a public one (`*`) and one
 * without an access list (readable only unrestricted). B's and the unlisted chunk are the best
 * matches of the probes below, so a backend that filters after ranking returns nothing or a leak.
 *
 * @since 0.1.0
 * @category utils
 */
export const tenantCorpus: ReadonlyArray<Chunk> = [
  { id: "ta1", documentId: "TA", title: "Alpha plant", text: "The alpha plant pumps river water through its cooling loop.", vector: axis(0), metadata: { lang: "en", year: 2020, draft: false }, access: ["tenant-a"] },
  { id: "ta2", documentId: "TA", title: "Alpha plant", text: "Shutdown drills at the alpha plant happen monthly.", vector: axis(0, 0.2), metadata: { lang: "en", year: 2021, draft: false }, access: ["tenant-a", "auditors"] },
  { id: "tb1", documentId: "TB", title: "Beta sodium reactor", text: "The beta reactor cooling loop uses liquid sodium; the sodium pumps are secret.", vector: axis(1), metadata: { lang: "en", year: 2022, draft: true }, access: ["tenant-b"] },
  { id: "tb2", documentId: "TB", title: "Beta sodium reactor", text: "Sodium fires in the beta reactor are fought with dry powder.", vector: axis(1, 0.1), metadata: { lang: "fr", year: 2022, draft: true }, access: ["tenant-b"] },
  { id: "pub", documentId: "P", title: "Glossary", text: "A cooling loop carries heat away from a reactor core.", vector: axis(2), metadata: { lang: "en", year: 2019, draft: false }, access: ["*"] },
  { id: "old", documentId: "N", title: "Legacy sodium notes", text: "Old notes on the sodium cooling loop of the beta reactor.", vector: axis(1, 0.05), metadata: { lang: "en", year: 2010, draft: false } }
]

/**
 * The read scope of a `tenant-a` principal (its id and the public entry).
 *
 * @since 0.1.0
 * @category utils
 */
export const scopeA: ReadScope = ReadScope.entries(["tenant-a", "*"])

/** Runs `f` on a fresh, empty store of the backend under test (each test its own). */
type WithStore = <A, E>(f: (s: VectorStore["Type"]) => Effect.Effect<A, E>) => Effect.Effect<A, unknown>

/** The optional `scan`: every chunk, or those a filter matches, sorted by id. */
const scanTests = (withStore: WithStore): void => {
  it.scoped("scan (an optional method) reads every chunk, or those matching a filter, sorted by id", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        if (c.scan === undefined) return
        const all = yield* c.scan()
        expect(all.map((h) => h.id)).toEqual(corpus.map((x) => x.id).sort())
        for (const h of all) {
          const source = corpus.find((x) => x.id === h.id)!
          expect(h).toMatchObject({ documentId: source.documentId, text: source.text, score: 0 })
        }
        const a = yield* c.scan({ _tag: "Compare", field: "documentId", op: "=", value: "A" })
        expect(a.map((h) => h.id)).toEqual(corpus.filter((x) => x.documentId === "A").map((x) => x.id).sort())
      })))

  it.scoped("get (an optional method) reads the chunks of the ids it holds, sorted by id", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        if (c.get === undefined) return
        const [first, second] = [corpus[2]!, corpus[0]!]
        const got = yield* c.get([first.id, "no-such-id", second.id, first.id])
        expect(got.map((h) => h.id)).toEqual([first.id, second.id].sort())
        for (const h of got) {
          const source = corpus.find((x) => x.id === h.id)!
          expect(h).toMatchObject({ documentId: source.documentId, text: source.text, score: 0 })
        }
        expect(yield* c.get([])).toEqual([])
        expect(yield* c.get(["no-such-id"])).toEqual([])
      })))

}

/** Writes: upsert counts (inserted, updated, unchanged), counts and documents. */
const writeTests = (withStore: WithStore): void => {
  it.scoped("upserts, counts, lists documents; re-upserting changes nothing", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        const first = yield* c.upsert(corpus)
        expect(first).toEqual({ inserted: 6, updated: 0 })
        const before = yield* c.searchText("tide pools", { limit: 10 })
        const again = yield* c.upsert(corpus)
        expect(again).toEqual({ inserted: 0, updated: 0 })
        const changed = yield* c.upsert([{ ...corpus[0]!, text: "Photovoltaic cells turn sunlight into power." }])
        expect(changed).toEqual({ inserted: 0, updated: 1 })
        yield* c.upsert([corpus[0]!])
        expect(yield* c.count()).toBe(6)
        expect(yield* c.listDocuments()).toEqual([
          { documentId: "A", chunks: 2 },
          { documentId: "B", chunks: 2 },
          { documentId: "C", chunks: 2 }
        ])
        const after = yield* c.searchText("tide pools", { limit: 10 })
        expect(after.map((h) => h.id)).toEqual(before.map((h) => h.id))
        for (const [i, h] of after.entries()) expect(h.score).toBeCloseTo(before[i]!.score, 5)
      })))

  it.scoped("a collection created with fullText: false stores, lists and deletes; a text search fails with InvalidInput", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection({ name: "bookkeeping", fullText: false })
        const plain = corpus.map(({ vector: _vector, ...chunk }) => chunk)
        expect(yield* c.upsert(plain)).toEqual({ inserted: 6, updated: 0 })
        expect(yield* c.upsert(plain)).toEqual({ inserted: 0, updated: 0 })
        expect(yield* c.count()).toBe(6)
        expect((yield* c.listDocuments()).map((d) => d.documentId)).toEqual(["A", "B", "C"])
        expect(yield* c.deleteDocuments(["B"])).toBe(2)
        expect(yield* c.count()).toBe(4)
        const text = yield* Effect.exit(c.searchText("tide pools"))
        expect(Exit.isFailure(text) && JSON.stringify(text.cause)).toContain("InvalidInput")
        // fixed at creation: opened again, or asked for without the flag, it still has no full text
        expect((yield* store.open("bookkeeping")).spec.fullText).toBe(false)
        const again = yield* store.collection({ name: "bookkeeping" })
        expect(again.spec.fullText).toBe(false)
        expect(Exit.isFailure(yield* Effect.exit(again.searchText("tide pools")))).toBe(true)
        const bad = yield* Effect.exit(store.collection({ name: "odd", fullText: "no" as unknown as boolean }))
        expect(Exit.isFailure(bad) && JSON.stringify(bad.cause)).toContain("InvalidInput")
      })))
}

/** Full text: ranking, stemming, stop words, weighted terms. */
const fullTextTests = (withStore: WithStore): void => {
  it.scoped("full-text search ranks the matching chunk first and returns its fields", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        const hits = yield* c.searchText("wild yeast starter", { limit: 3 })
        expect(hits[0]?.id).toBe("b1")
        expect(hits[0]?.documentId).toBe("B")
        expect(hits[0]?.title).toBe("Sourdough bread")
        expect(hits[0]?.metadata).toEqual({ lang: "en", year: 2018, draft: true })
        // stemming: "converting" finds "convert"
        expect((yield* c.searchText("converting sunlight", { limit: 1 }))[0]?.id).toBe("a1")
        // only stop words: no hits, no error
        expect(yield* c.searchText("the and of", { limit: 5 })).toEqual([])
        // weighted terms
        const w = yield* c.searchText({ terms: [{ text: "oven", weight: 2 }, { text: "tide", weight: 0.1 }] }, { limit: 6 })
        expect(w[0]?.id).toBe("b2")
      })))

}

/** Vectors by cosine, and hybrid search with both fusions. */
const vectorTests = (withStore: WithStore): void => {
  it.scoped("vector search by cosine; hybrid fuses both", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        const v = yield* c.searchVector(axis(2), { limit: 2 })
        expect(v.map((h) => h.documentId)).toEqual(["C", "C"])
        expect(v[0]?.id).toBe("c1")
        expect(v[0]!.score).toBeCloseTo(1, 4)
        const h = yield* c.searchHybrid({ text: "oven steam", vector: axis(1) }, { limit: 3 })
        expect(h[0]?.id).toBe("b2")
        const r = yield* c.searchHybrid({ text: "oven steam", vector: axis(1) }, { limit: 3, fusion: { _tag: "Rrf" } })
        expect(r[0]?.id).toBe("b2")
      })))

}

/** Filters: typed values and combinators, and values that try to inject into the predicate. */
const filterTests = (withStore: WithStore): void => {
  it.scoped("filters: typed values, combinators, documentId, nulls", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        expect(yield* c.count(Filter.eq("lang", "en"))).toBe(4)
        expect(yield* c.count(Filter.and(Filter.eq("lang", "en"), Filter.gte("year", 2020)))).toBe(3)
        expect(yield* c.count(Filter.or(Filter.eq("draft", true), Filter.eq("lang", "de")))).toBe(3)
        expect(yield* c.count(Filter.not(Filter.in("lang", ["en", "fr"])))).toBe(1)
        expect(yield* c.count(Filter.eq("documentId", "A"))).toBe(2)
        expect(yield* c.count(Filter.eq("note", null))).toBe(5)
        expect(yield* c.count(Filter.eq("note", "it's \"quoted\""))).toBe(1)
        const hits = yield* c.searchText("pools tide", { limit: 10, filter: Filter.eq("lang", "de") })
        expect(hits.map((x) => x.id)).toEqual(["c2"])
        const vh = yield* c.searchVector(axis(2), { limit: 10, filter: Filter.lt("year", 2020) })
        expect(vh.every((x) => x.documentId === "B")).toBe(true)
      })))


  it.scoped("filter values cannot inject into the predicate", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        for (
          const evil of [
            "en' OR '1'='1",
            "en') OR (1=1",
            "x'; DROP TABLE contract; --",
            "en\\' OR 1=1 --",
            "' OR lang <> '",
            "en` OR `1`=`1"
          ]
        ) {
          expect(yield* c.count(Filter.eq("lang", evil))).toBe(0)
          expect(yield* c.deleteWhere(Filter.eq("lang", evil))).toBe(0)
          expect(yield* c.count(Filter.in("documentId", [evil, "A"]))).toBe(2)
        }
        // a field name is never text: unknown fields are refused
        const bad = yield* Effect.exit(c.count(Filter.eq("lang = 'en' OR 1=1 --", "x")))
        expect(Exit.isFailure(bad) && JSON.stringify(bad.cause)).toContain("InvalidInput")
        const badType = yield* Effect.exit(c.count(Filter.eq("year", "2020 OR 1=1")))
        expect(Exit.isFailure(badType) && JSON.stringify(badType.cause)).toContain("InvalidInput")
        const nan = yield* Effect.exit(c.count(Filter.gt("year", Number.NaN)))
        expect(Exit.isFailure(nan)).toBe(true)
        expect(yield* c.count()).toBe(6)
      })))

}

/** Deletes by document and by filter. */
const deleteTests = (withStore: WithStore): void => {
  it.scoped("deletes by document and by filter", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        expect(yield* c.deleteDocuments(["A", "missing"])).toBe(2)
        expect(yield* c.count()).toBe(4)
        expect((yield* c.searchText("photovoltaic sunlight", { limit: 5 })).length).toBe(0)
        expect(yield* c.deleteWhere(Filter.eq("lang", "fr"))).toBe(1)
        expect((yield* c.listDocuments()).map((d) => d.documentId)).toEqual(["B", "C"])
      })))

}

/** The embedding spec: vectors and collections of another model or dimension are refused; a collection without an embedding serves full text only. */
const embeddingTests = (withStore: WithStore): void => {
  it.scoped("refuses vectors and collections of another model or dimension", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection(spec)
        const wrongDim = yield* Effect.exit(c.upsert([{ id: "x", documentId: "X", text: "t", vector: [1, 2, 3] }]))
        expect(Exit.isFailure(wrongDim) && JSON.stringify(wrongDim.cause)).toContain("EmbeddingMismatch")
        const noVec = yield* Effect.exit(c.upsert([{ id: "x", documentId: "X", text: "t" }]))
        expect(Exit.isFailure(noVec) && JSON.stringify(noVec.cause)).toContain("EmbeddingMismatch")
        const otherModel = yield* Effect.exit(store.collection({ ...spec, embedding: { model: "other", dimension: 4 } }))
        expect(Exit.isFailure(otherModel) && JSON.stringify(otherModel.cause)).toContain("EmbeddingMismatch")
        const qDim = yield* Effect.exit(c.searchVector([1, 0]))
        expect(Exit.isFailure(qDim)).toBe(true)
        const badMeta = yield* Effect.exit(c.upsert([{ ...corpus[0]!, metadata: { year: "2020" } }]))
        expect(Exit.isFailure(badMeta) && JSON.stringify(badMeta.cause)).toContain("InvalidInput")
        const badName = yield* Effect.exit(store.collection({ name: "../etc" }))
        expect(Exit.isFailure(badName)).toBe(true)
      })))


  it.scoped("a collection without an embedding serves full text and says so for vectors", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection({ name: "textonly" })
        yield* c.upsert(corpus.map(({ vector: _v, ...rest }) => rest))
        expect((yield* c.searchText("anemones crabs", { limit: 1 }))[0]?.id).toBe("c1")
        const v = yield* Effect.exit(c.searchVector(axis(0)))
        expect(Exit.isFailure(v) && JSON.stringify(v.cause)).toContain("full-text search only")
        expect(yield* store.list()).toContain("textonly")
        yield* store.drop("textonly")
        expect(yield* store.list()).not.toContain("textonly")
      })))
}

const readableByA = new Set(["ta1", "ta2", "pub"])
const onlyA = (hits: ReadonlyArray<{ readonly id: string }>) => hits.every((h) => readableByA.has(h.id))

/** Searches of every kind, unrestricted and in {@link scopeA}, on {@link tenantCorpus}. */
const scopedSearches = (c: Collection) =>
  Effect.gen(function*() {
    // unrestricted (no scope, or All) sees every chunk; B's chunk is the best match
    expect(readableByA.has((yield* c.searchText("beta sodium reactor cooling loop", { limit: 1 }))[0]!.id)).toBe(false)
    expect(readableByA.has((yield* c.searchVector(axis(1), { limit: 1 }))[0]!.id)).toBe(false)
    expect(yield* c.count()).toBe(6)
    expect(yield* c.count(undefined, { scope: ReadScope.all })).toBe(6)
    // full text, limit 1: the best readable chunk, not an empty page and not B's
    const text = yield* c.searchText("beta sodium reactor cooling loop", { limit: 1, scope: scopeA })
    expect(text.length).toBe(1)
    expect(onlyA(text)).toBe(true)
    const textAll = yield* c.searchText("sodium beta cooling loop plant", { limit: 10, scope: scopeA, titleBoost: 0.5 })
    expect(textAll.length).toBeGreaterThan(0)
    expect(onlyA(textAll)).toBe(true)
    // weighted terms (what query expansion sends)
    const weighted = yield* c.searchText({ terms: [{ text: "sodium", weight: 5 }, { text: "loop", weight: 0.1 }] }, { limit: 3, scope: scopeA })
    expect(onlyA(weighted)).toBe(true)
    // vector: B's axis, limit 1
    const vec = yield* c.searchVector(axis(1), { limit: 1, scope: scopeA })
    expect(vec.length).toBe(1)
    expect(onlyA(vec)).toBe(true)
    // hybrid, both fusions, few candidates
    for (const fusion of [undefined, { _tag: "Rrf" } as const]) {
      const h = yield* c.searchHybrid({ text: "beta sodium reactor", vector: axis(1) }, { limit: 2, candidates: 2, scope: scopeA, fusion })
      expect(h.length).toBeGreaterThan(0)
      expect(onlyA(h)).toBe(true)
    }
  })

/** Filters that try to widen {@link scopeA}. */
const scopedFilters = (c: Collection) =>
  Effect.gen(function*() {
    // filters cannot widen the scope: Or, Not, documentId, an undeclared `access` field
    expect(yield* c.count(Filter.eq("documentId", "TB"), { scope: scopeA })).toBe(0)
    expect(yield* c.count(Filter.or(Filter.eq("documentId", "TB"), Filter.eq("lang", "en")), { scope: scopeA })).toBe(3)
    expect(yield* c.count(Filter.not(Filter.eq("documentId", "TA")), { scope: scopeA })).toBe(1)
    expect(yield* c.count(Filter.or(Filter.eq("draft", true), Filter.not(Filter.eq("draft", true))), { scope: scopeA })).toBe(3)
    const orHits = yield* c.searchText("sodium", { limit: 10, scope: scopeA, filter: Filter.or(Filter.eq("documentId", "TB"), Filter.eq("documentId", "N")) })
    expect(orHits).toEqual([])
    const accessField = yield* Effect.exit(c.count(Filter.eq("access", "tenant-b"), { scope: scopeA }))
    expect(Exit.isFailure(accessField) && JSON.stringify(accessField.cause)).toContain("InvalidInput")
  })

/** Counts, documents, term counts and scans in a scope; hits without access lists. */
const scopedReads = (c: Collection) =>
  Effect.gen(function*() {
    // counts, documents
    expect(yield* c.count(undefined, { scope: scopeA })).toBe(3)
    expect(yield* c.listDocuments({ scope: scopeA })).toEqual([{ documentId: "P", chunks: 1 }, { documentId: "TA", chunks: 2 }])
    expect((yield* c.listDocuments()).map((d) => d.documentId)).toEqual(["N", "P", "TA", "TB"])
    // a group entry; an empty scope reads nothing; a chunk without a list is never readable restricted
    expect((yield* c.listDocuments({ scope: ReadScope.entries(["auditors"]) }))).toEqual([{ documentId: "TA", chunks: 1 }])
    expect(yield* c.count(undefined, { scope: ReadScope.entries([]) })).toBe(0)
    expect(yield* c.searchText("legacy notes", { limit: 5, scope: ReadScope.entries(["tenant-b", "*"]) })).not.toContainEqual(expect.objectContaining({ id: "old" }))
    // the analysed terms of a chunk outside the scope are not handed out
    if (c.termCounts !== undefined) {
      yield* c.searchText("sodium", { limit: 10 })
      const terms = yield* c.termCounts(["tb1", "old"], { scope: scopeA })
      expect(terms).toEqual([undefined, undefined])
    }
    // scan (optional) reads only the chunks in the scope
    if (c.scan !== undefined) {
      expect((yield* c.scan(undefined, { scope: scopeA })).map((h) => h.id)).toEqual(["pub", "ta1", "ta2"])
      expect((yield* c.scan()).length).toBe(6)
    }
    // get (optional) reads only the chunks in the scope
    if (c.get !== undefined) {
      expect((yield* c.get(["tb1", "ta1", "pub"], { scope: scopeA })).map((h) => h.id)).toEqual(["pub", "ta1"])
    }
    // hits carry no access list
    for (const h of yield* c.searchText("alpha plant", { limit: 3, scope: scopeA })) expect(Object.keys(h)).not.toContain("access")
  })

/** Access lists: a restricted read scope in every read, and changes to a chunk's list. */
const accessTests = (withStore: WithStore): void => {
  it.scoped("access lists: a restricted scope applies inside every read, before ranking and the limit", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection({ ...spec, name: "tenants" })
        expect(c.enforcesAccess).toBe(true)
        yield* c.upsert(tenantCorpus)
        yield* scopedSearches(c)
        yield* scopedFilters(c)
        yield* scopedReads(c)
      })))


  it.scoped("access lists: changing a chunk's list is an update; invalid entries are refused", () =>
    withStore((store) =>
      Effect.gen(function*() {
        const c = yield* store.collection({ ...spec, name: "tenants" })
        yield* c.upsert(tenantCorpus)
        expect(yield* c.upsert(tenantCorpus)).toEqual({ inserted: 0, updated: 0 })
        const tb1 = tenantCorpus.find((x) => x.id === "tb1")!
        expect(yield* c.upsert([{ ...tb1, access: ["tenant-a"] }])).toEqual({ inserted: 0, updated: 1 })
        expect((yield* c.searchVector(axis(1), { limit: 1, scope: scopeA }))[0]?.id).toBe("tb1")
        expect(yield* c.count(Filter.eq("documentId", "TB"), { scope: ReadScope.entries(["tenant-b"]) })).toBe(1)
        // dropping the list: readable unrestricted only
        const { access: _a, ...noList } = tb1
        expect(yield* c.upsert([noList])).toEqual({ inserted: 0, updated: 1 })
        expect(yield* c.count(Filter.eq("documentId", "TB"), { scope: scopeA })).toBe(0)
        expect(yield* c.count(Filter.eq("documentId", "TB"))).toBe(2)
        for (const bad of ["", "a\u0000b", "line\nbreak", "x".repeat(257)]) {
          const up = yield* Effect.exit(c.upsert([{ ...tb1, access: [bad] }]))
          expect(Exit.isFailure(up) && JSON.stringify(up.cause)).toContain("InvalidInput")
          const read = yield* Effect.exit(c.count(undefined, { scope: ReadScope.entries([bad]) }))
          expect(Exit.isFailure(read) && JSON.stringify(read.cause)).toContain("InvalidInput")
        }
        // entries with quotes and SQL are data
        yield* c.upsert([{ ...tb1, id: "q", access: ["o'brien", "x') OR 1=1 --"] }])
        expect(yield* c.count(undefined, { scope: ReadScope.entries(["o'brien"]) })).toBe(1)
        expect(yield* c.count(undefined, { scope: ReadScope.entries(["x') OR 1=1 --"]) })).toBe(1)
        expect(yield* c.count(undefined, { scope: ReadScope.entries(["' OR '1'='1"]) })).toBe(0)
        expect(yield* c.count(undefined, { scope: ReadScope.entries(["%"]) })).toBe(0)
        expect(yield* c.count(undefined, { scope: ReadScope.entries(["o_brien"]) })).toBe(0)
      })))
}

/**
 * Runs the contract against a backend. `layer` must give a fresh, empty store each call.
 *
 * @since 0.1.0
 * @category utils
 */
export const contract = (name: string, layer: () => Layer.Layer<VectorStore, unknown>) =>
  describe(`VectorStore contract: ${name}`, () => {
    const withStore: WithStore = (f) => Effect.flatMap(VectorStore, f).pipe(Effect.provide(layer()))
    scanTests(withStore)
    writeTests(withStore)
    fullTextTests(withStore)
    vectorTests(withStore)
    filterTests(withStore)
    deleteTests(withStore)
    embeddingTests(withStore)
    accessTests(withStore)
  })
