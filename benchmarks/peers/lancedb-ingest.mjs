/**
 * LanceDB alone, for `npm run bench:ingest`: the floor of an ingest into LanceDB with full text.
 * Reads every `.md` / `.txt` file of a folder whole (no extraction, no chunking), writes one
 * table (`id`, `text`) in one append and builds the native full-text index.
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
const rows = []
for (const name of names) rows.push({ id: name, text: await readFile(join(dir, name), "utf8") })
const writing = performance.now()
const conn = await lancedb.connect(db)
const table = await conn.createTable("docs", rows)
await table.createIndex("text", { config: lancedb.Index.fts() })
const done = performance.now()
conn.close()
console.log(JSON.stringify({ documents: rows.length, chunks: rows.length, totalMs: done - started, writeMs: done - writing }))
