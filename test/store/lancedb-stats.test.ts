/**
 * The term statistics of a LanceDB collection above the candidate bound (forced with
 * `memoryIndexRows: 0, textCandidateRows: 0`), persisted in the side table `<name>.terms`:
 * documents replaced by as many others (the same row count, other words) make the next
 * `optimize()` draw them again, as a row count moved by more than a tenth does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { sharedPath } from "../../src/internal/shared.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { terms } from "../../src/store/TextAnalysis.js"
import type { Chunk } from "../../src/store/VectorStore.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-stats-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const abstracts: Array<Chunk> = readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .slice(0, 400)
  .map((l) => {
    const d = JSON.parse(l) as { _id: string; title: string; text: string }
    return { id: `s${d._id}`, documentId: d._id, title: d.title, text: d.text, metadata: {} }
  })
const before = abstracts.slice(0, 200)
const after = abstracts.slice(200, 400)

/** A term's exact document frequency in `content` (title and text, as the adapter stores them). */
const df = (chunks: ReadonlyArray<Chunk>, term: string) => chunks.filter((d) => terms(`${d.title}\n${d.text}`).includes(term)).length

describe("LanceDB term statistics (side table)", () => {
  it.live("documents replaced by as many others are sampled again at the next optimize()", () =>
    Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(Layer.fresh(LanceDbStore.layer({ uri: join(root, "db"), memoryIndexRows: 0, textCandidateRows: 0 })))
      const store = Context.get(context, LanceDbStore.LanceDbStore)
      const c = yield* store.collection({ name: "replaced" })
      // terms whose frequency differs between the two halves: a stale table keeps the first's
      const probes = ["cell", "protein", "patient", "gene", "risk"].map((w) => terms(w)[0]!)
        .filter((t) => df(before, t) !== df(after, t))
      expect(probes.length).toBeGreaterThan(2)
      const side = () =>
        Effect.promise(async () => {
          const t = await store.connection.openTable("replaced.terms")
          const rows = await t.query().where(`term IN (' rows', ' length', ${probes.map((p) => `'${p}'`).join(", ")})`).toArray()
          return Object.fromEntries(rows.map((r) => [String(r["term"]), Number(r["content"])]))
        })
      const expected = (chunks: ReadonlyArray<Chunk>) =>
        Object.fromEntries([
          [" rows", chunks.length],
          [" length", chunks.reduce((n, d) => n + terms(`${d.title}\n${d.text}`).length, 0)],
          ...probes.map((p) => [p, df(chunks, p)]).filter(([, n]) => n !== 0)
        ])

      yield* c.upsert(before)
      yield* c.optimize()
      expect(yield* side()).toEqual(expected(before))

      // every document replaced by another: 200 rows before and after
      yield* c.deleteDocuments(before.map((d) => d.documentId))
      yield* c.upsert(after)
      expect(yield* c.count()).toBe(200)
      yield* c.optimize()
      expect(yield* side()).toEqual(expected(after))

      // a few rows rewritten (within a tenth): the sample stands, nothing is drawn again
      const version = yield* Effect.promise(() => store.connection.openTable("replaced.terms").then((t) => t.version()))
      yield* c.upsert(after.slice(0, 5).map((d) => ({ ...d, text: `${d.text} rewritten` })))
      yield* c.optimize()
      expect(yield* Effect.promise(() => store.connection.openTable("replaced.terms").then((t) => t.version()))).toBe(version)
    })), 120_000)
})
