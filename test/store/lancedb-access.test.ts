/**
 * A LanceDB table written before access lists (no `access` column): it opens and answers
 * unrestricted reads as before, a restricted read matches nothing, and the first write adds the
 * column, after which access lists apply. The old table is made by dropping the column from a
 * table of the current adapter (the rest of the schema and the stored spec are those of a
 * table the previous release wrote).
 */
import { describe, expect, it } from "@effect/vitest"
import * as lancedb from "@lancedb/lancedb"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { Filter, ReadScope, VectorStore } from "../../src/store/VectorStore.js"
import { axis, corpus, spec } from "../../src/store/VectorStoreContract.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-lance-access-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0

const columns = async (uri: string, name: string) => {
  const db = await lancedb.connect(uri)
  try {
    const t = await db.openTable(name)
    const schema = await t.schema()
    return { names: schema.fields.map((f) => f.name), spec: schema.metadata.get("effect_rag.spec") }
  } finally {
    db.close()
  }
}

describe("LanceDbStore: a table from before access lists", () => {
  for (const memoryIndexRows of [undefined, 0]) {
    it.live(`opens, reads unrestricted, denies restricted reads, and gains the column on the first write (memoryIndexRows ${memoryIndexRows ?? "default"})`, () =>
      Effect.gen(function*() {
        const uri = join(root, `db${n++}`)
        yield* Effect.scoped(Effect.gen(function*() {
          const c = yield* (yield* VectorStore).collection(spec)
          yield* c.upsert(corpus)
          yield* c.optimize()
        }).pipe(Effect.provide(LanceDbStore.layer({ uri }))))
        yield* Effect.promise(async () => {
          const db = await lancedb.connect(uri)
          await (await db.openTable(spec.name)).dropColumns(["access"])
          db.close()
        })
        const old = yield* Effect.promise(() => columns(uri, spec.name))
        expect(old.names).not.toContain("access")
        expect(old.spec).toBeDefined()

        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* VectorStore
          const c = yield* store.open(spec.name)
          expect(c.spec.embedding).toEqual(spec.embedding)
          // unrestricted reads as before
          expect(yield* c.count()).toBe(6)
          expect((yield* c.searchText("wild yeast starter", { limit: 1 }))[0]?.id).toBe("b1")
          expect((yield* c.searchVector(axis(2), { limit: 1 }))[0]?.id).toBe("c1")
          expect((yield* c.listDocuments()).length).toBe(3)
          // restricted: nothing has a list, so nothing is readable
          const scope = ReadScope.entries(["tenant-a", "*"])
          expect(yield* c.count(undefined, { scope })).toBe(0)
          expect(yield* c.searchText("wild yeast starter", { limit: 5, scope })).toEqual([])
          expect(yield* c.searchVector(axis(2), { limit: 5, scope })).toEqual([])
          expect(yield* c.searchHybrid({ text: "oven steam", vector: axis(1) }, { limit: 5, scope })).toEqual([])
          expect(yield* c.listDocuments({ scope })).toEqual([])
          // the first write adds the column; access lists then apply, the old rows keep none
          yield* c.upsert([{ ...corpus[0]!, id: "a9", access: ["tenant-a"] }])
          expect(yield* c.count(undefined, { scope })).toBe(1)
          expect((yield* c.searchText("photovoltaic sunlight", { limit: 5, scope })).map((h) => h.id)).toEqual(["a9"])
          expect(yield* c.count()).toBe(7)
          expect(yield* c.count(Filter.eq("documentId", "A"))).toBe(3)
        }).pipe(Effect.provide(LanceDbStore.layer({ uri, memoryIndexRows }))))
        const after = yield* Effect.promise(() => columns(uri, spec.name))
        expect(after.names).toContain("access")
        expect(after.spec).toBe(old.spec)
      }))
  }
})
