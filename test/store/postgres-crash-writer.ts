/**
 * The writer the kill -9 test (PostgresStore.test.ts) kills: upserts 40 documents of 25 chunks,
 * one upsert per document in transactions of 10 chunks, printing `done N` after each document.
 */
import { Effect } from "effect"
import * as PostgresStore from "../../src/store/PostgresStore.js"
import { VectorStore } from "../../src/store/VectorStore.js"

const [url] = process.argv.slice(2) as [string]
const program = Effect.gen(function*() {
  const c = yield* (yield* VectorStore).collection({ name: "crash" })
  for (let d = 0; d < 40; d++) {
    const r = yield* c.upsert(Array.from({ length: 25 }, (_, i) => ({
      id: `d${d}-${i}`,
      documentId: `d${d}`,
      title: `Crash document ${d}`,
      text: `chunk ${i} of crash document ${d} about ${["pumps", "valves", "seals", "gaskets"][(d + i) % 4]}`
    })))
    console.log(`done ${d} ${r.inserted}`)
  }
})
Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(PostgresStore.layerFromUrl(url, { batchSize: 10 }))))).catch((e) => {
  console.error(e)
  process.exit(1)
})
