/**
 * The LangChain.js peer of `effect-rag ingest` for `npm run bench:ingest`: the idiomatic
 * pipeline, run as its own process:
 *   DirectoryLoader + TextLoader (every `.md` / `.txt` file of a folder)
 *   → RecursiveCharacterTextSplitter, by js-tiktoken `cl100k_base` tokens (512, overlap 64)
 *     or by characters (2,048, overlap 256: about the same chunk size in English)
 *   → one LanceDB table (`id`, `text`, `source`) with a native full-text index on `text`.
 * (LangChain's LanceDB vector store needs an embedder; a full-text collection is written with
 * LanceDB's own API, as its documentation shows.)
 *
 * Usage: node benchmarks/peers/langchain-ingest.mjs DIR DB token|char
 * Prints one JSON line: documents, chunks, totalMs, writeMs.
 */
import { DirectoryLoader } from "@langchain/classic/document_loaders/fs/directory"
import { TextLoader } from "@langchain/classic/document_loaders/fs/text"
import { RecursiveCharacterTextSplitter } from "@langchain/textsplitters"
import * as lancedb from "@lancedb/lancedb"
import { Tiktoken } from "js-tiktoken/lite"
import cl100k from "js-tiktoken/ranks/cl100k_base"

const [dir, db, by] = process.argv.slice(2)
const started = performance.now()
const loader = new DirectoryLoader(dir, { ".md": (p) => new TextLoader(p), ".txt": (p) => new TextLoader(p) })
const docs = await loader.load()
let splitter
if (by === "token") {
  // LangChain's own `fromTiktokenEncoder` downloads the ranks; these ship in js-tiktoken
  const enc = new Tiktoken(cl100k)
  splitter = new RecursiveCharacterTextSplitter({ chunkSize: 512, chunkOverlap: 64, lengthFunction: (t) => enc.encode(t).length })
} else {
  splitter = new RecursiveCharacterTextSplitter({ chunkSize: 2048, chunkOverlap: 256 })
}
const chunks = await splitter.splitDocuments(docs)
const writing = performance.now()
const conn = await lancedb.connect(db)
const table = await conn.createTable("docs", chunks.map((c, i) => ({ id: `${c.metadata.source}#${i}`, text: c.pageContent, source: c.metadata.source })))
await table.createIndex("text", { config: lancedb.Index.fts() })
const done = performance.now()
conn.close()
console.log(JSON.stringify({ documents: docs.length, chunks: chunks.length, totalMs: done - started, writeMs: done - writing }))
