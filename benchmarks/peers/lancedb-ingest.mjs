/**
 * LanceDB alone, for `npm run bench:ingest` and `bench:scale`: the floor of an ingest into LanceDB
 * with full text, as issue #24 defines it: read, cut, one append, FTS index. Reads every `.md` /
 * `.txt` file of a folder, cuts it at fixed character offsets (2,048 characters, 256 of overlap:
 * the char-splitter peer's sizes, about 512 tokens of English; no separators, no structure, no
 * token count), writes one table (`id`, `text`) in one append and builds the native full-text
 * index.
 *
 * Usage: node benchmarks/peers/lancedb-ingest.mjs DIR DB
 * Prints one JSON line: documents, chunks, totalMs, writeMs.
 */
import * as lancedb from "@lancedb/lancedb"
import { readdir, readFile } from "node:fs/promises"
import { join } from "node:path"

const [dir, db] = process.argv.slice(2)
const started = performance.now()
const names = (await readdir(dir, { recursive: true })).filter((n) => /\.(md|txt)$/.test(n)).sort()
/** Characters per chunk and of overlap (as `langchain-ingest.mjs char`). */
const size = 2048
const overlap = 256
const rows = []
for (const name of names) {
  const text = await readFile(join(dir, name), "utf8")
  for (let at = 0, k = 0; ; at += size - overlap, k++) {
    rows.push({ id: `${name}#${k}`, text: text.slice(at, at + size) })
    if (at + size >= text.length) break
  }
}
const writing = performance.now()
const conn = await lancedb.connect(db)
const table = await conn.createTable("docs", rows)
await table.createIndex("text", { config: lancedb.Index.fts() })
const done = performance.now()
conn.close()
console.log(JSON.stringify({ documents: names.length, chunks: rows.length, totalMs: done - started, writeMs: done - writing }))
