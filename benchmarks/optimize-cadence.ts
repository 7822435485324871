/**
 * `npx tsx benchmarks/optimize-cadence.ts DIR DB ROWS FRACTION`: the store's index upkeep on a
 * bulk load, on its own. Upserts the first ROWS Markdown files of DIR (a `bench:scale` corpus
 * kept with `--keep`) through `LanceDbStore` into DB, 512 rows per upsert (one chunk per file, no
 * chunking), then one `optimize()`, with `reindexFraction` FRACTION (0: the fixed thresholds of
 * `reindexAfter` / `maxFragments`). Prints one JSON line: wall and CPU seconds of the process
 * (LanceDB's threads included) and the final `optimize()`'s wall. Run it once per fraction, one
 * after the other, each into a fresh DB (benchmarks/README.md, "Scale").
 */
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import * as LanceDbStore from "../src/store/LanceDbStore.js"
import { VectorStore } from "../src/store/VectorStore.js"

const [dir, db, rowsArg, fractionArg] = process.argv.slice(2)
if (dir === undefined || db === undefined || rowsArg === undefined || fractionArg === undefined) {
  throw new Error("usage: npx tsx benchmarks/optimize-cadence.ts DIR DB ROWS FRACTION")
}
const rows = Number(rowsArg)
const reindexFraction = Number(fractionArg)

/** The first `rows` files of the corpus, folder by folder in name order. */
const files: Array<string> = []
for (const sub of readdirSync(dir).sort()) {
  for (const name of readdirSync(join(dir, sub)).sort()) {
    if (files.length < rows) files.push(join(dir, sub, name))
  }
  if (files.length >= rows) break
}

const started = performance.now()
const cpu = process.cpuUsage()
let optimizeMs = 0
await Effect.runPromise(
  Effect.gen(function*() {
    const collection = yield* (yield* VectorStore).collection({ name: "t" })
    for (let i = 0; i < files.length; i += 512) {
      yield* collection.upsert(files.slice(i, i + 512).map((file, k) => ({
        id: `c${i + k}`,
        documentId: `d${i + k}`,
        text: readFileSync(file, "utf8")
      })))
    }
    const before = performance.now()
    yield* collection.optimize()
    optimizeMs = performance.now() - before
  }).pipe(Effect.provide(LanceDbStore.layer({ uri: db, reindexFraction })))
)
const used = process.cpuUsage(cpu)
console.log(JSON.stringify({
  rows: files.length,
  reindexFraction,
  wallS: (performance.now() - started) / 1000,
  cpuS: (used.user + used.system) / 1e6,
  finalOptimizeS: optimizeMs / 1000
}))
