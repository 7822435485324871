/**
 * One writer process of the two-process test (PostgresStore.test.ts): upserts 10 documents of
 * 20 chunks in batches of 7, a document both writers write, then deletes half of its own
 * documents; prints the shared document's upsert counts as JSON.
 */
import { Effect } from "effect"
import * as PostgresStore from "../../src/store/PostgresStore.js"
import { type Chunk, VectorStore } from "../../src/store/VectorStore.js"

// the contract suite's spec (not imported: that module loads vitest)
const spec = {
  name: "contract",
  embedding: { model: "test-4d", dimension: 4 },
  fields: { lang: "string", year: "number", draft: "boolean", note: "string" }
} as const
const axis = (i: number): Array<number> => [0, 1, 2, 3].map((j) => (j === i % 4 ? 1 : 0.05))

const [url, k] = process.argv.slice(2) as [string, string]
const chunks = (doc: string, tag: string): Array<Chunk> =>
  Array.from({ length: 20 }, (_, i) => ({
    id: `${doc}-${i}`,
    documentId: doc,
    title: `Document ${doc}`,
    text: `chunk ${i} of ${doc} written by ${tag}`,
    vector: axis(i),
    metadata: { lang: "en", year: 2000 + i }
  }))

const program = Effect.gen(function*() {
  const c = yield* (yield* VectorStore).collection(spec)
  for (let d = 0; d < 10; d++) {
    const r = yield* c.upsert(chunks(`w${k}-d${d}`, `writer ${k}`))
    if (r.inserted !== 20) throw new Error(`expected 20 inserted, got ${JSON.stringify(r)}`)
  }
  const shared = yield* c.upsert(chunks("shared", `shared writer ${k}`))
  const gone = yield* c.deleteDocuments([0, 2, 4, 6, 8].map((d) => `w${k}-d${d}`))
  if (gone !== 100) throw new Error(`expected 100 deleted, got ${gone}`)
  console.log(JSON.stringify({ shared }))
})

Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(PostgresStore.layerFromUrl(url, { batchSize: 7 }))))).catch((e) => {
  console.error(e)
  process.exit(1)
})
