/**
 * `npx tsx benchmarks/inprocess-text.ts [--bytes N]`: how long the local engine holds the
 * caller's event loop for plain text at the in-process bound (`LocalFiles` `inProcessBytes`,
 * 16 KiB by default), on texts built to be slow there: one word, alternating blanks and tabs, a
 * run of spaces, random CJK, `#` / `|` / `- ` runs, sentences, emoji, mixed Markdown. Each file
 * goes through `Upload.extractChunks` (embeddings mode, 512-token chunks) of an engine with the
 * default `process` isolation, so the time is the in-process path end to end (after one tiny
 * warm-up file that loads the tokenizer); a second pass over the same text shows the warm
 * figure (the tokenizer caches merged words). Prints a table (worst first) with the load average; writes
 * `benchmarks/results/inprocess-text.json`.
 */
import { Effect } from "effect"
import type * as Upload from "../src/api/Upload.js"
import * as LocalFiles from "../src/engines/documents/LocalFiles.js"
import { resultsPath, runInfo, writeReport } from "./internal/results.js"
import { rng } from "./internal/rng.js"

const args = process.argv.slice(2)
const at = args.indexOf("--bytes")
const bytes = at >= 0 ? Number(args[at + 1]) : LocalFiles.defaultInProcessBytes

const encoder = new TextEncoder()
/** `text` cut to at most `bytes` UTF-8 bytes (whole characters). */
const fit = (text: string): Uint8Array => {
  let data = encoder.encode(text)
  let end = Math.min(text.length, bytes)
  while (data.byteLength > bytes) data = encoder.encode(text.slice(0, (end = Math.floor(end * 0.98))))
  return data
}

const rand = rng(7)
const texts: Record<string, string> = {
  "one word": "a".repeat(bytes),
  "blanks and tabs": "x" + " \t".repeat(bytes / 2 - 1) + "y",
  "spaces": "x" + " ".repeat(bytes - 2) + "y",
  "random ASCII": Array.from({ length: bytes }, () => String.fromCharCode(33 + Math.floor(rand() * 90))).join(""),
  "random CJK": Array.from({ length: bytes }, () => String.fromCodePoint(0x4e00 + Math.floor(rand() * 2000))).join(""),
  "# run": "#".repeat(bytes),
  "| run": "|a".repeat(bytes),
  "- run": "- ".repeat(bytes),
  "sentences": "A. ".repeat(bytes),
  "emoji": "😀".repeat(bytes),
  "words": Array.from({ length: bytes }, (_, i) => `w${i % 977}`).join(" "),
  "Markdown": ("# h\n\n" + "x ".repeat(200) + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n").repeat(Math.ceil(bytes / 400))
}
const files: Array<Upload.UploadFile> = Object.entries(texts).map(([name, text]) => ({ name: `${name}.txt`, data: fit(text) }))

const info = runInfo()
const rows = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const upload = yield* LocalFiles.make({ inProcessBytes: bytes })
  // the tokenizer and language models load once per process: not charged to the first text
  yield* upload.extractChunks({ name: "warm-up.txt", data: encoder.encode("Warm-up text for the tokenizer.") })
  const out: Array<{ text: string; bytes: number; coldMs: number; warmMs: number; chunks: number }> = []
  for (const file of files) {
    const time = Effect.gen(function*() {
      const started = performance.now()
      const r = yield* Effect.either(upload.extractChunks(file))
      return { ms: performance.now() - started, chunks: r._tag === "Right" ? r.right.usage.total_chunks : 0 }
    })
    const cold = yield* time
    const warm = yield* time
    out.push({ text: file.name.replace(/\.txt$/, ""), bytes: file.data.byteLength, coldMs: cold.ms, warmMs: warm.ms, chunks: cold.chunks })
  }
  return out.sort((a, b) => b.coldMs - a.coldMs)
})))

console.log(`plain text in-process at ${bytes} bytes; load average ${info.loadAverage.join(" ")} on ${info.cpus} CPUs`)
console.log(`${"text".padEnd(16)} ${"bytes".padStart(6)} ${"first ms".padStart(9)} ${"again ms".padStart(9)} ${"chunks".padStart(6)}`)
for (const r of rows) {
  console.log(`${r.text.padEnd(16)} ${String(r.bytes).padStart(6)} ${r.coldMs.toFixed(0).padStart(9)} ${r.warmMs.toFixed(0).padStart(9)} ${String(r.chunks).padStart(6)}`)
}
console.log(`wrote ${writeReport(resultsPath("inprocess-text"), { command: `npx tsx benchmarks/inprocess-text.ts ${args.join(" ")}`.trim(), ...info, bytes, rows })}`)
