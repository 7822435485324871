/**
 * Small plain text (detected type TXT, which includes Markdown, up to `inProcessBytes`) is
 * extracted and chunked in the calling process even with `process` isolation: the results are
 * the extraction processes' own, byte for byte (SciFact abstracts, the shared SOURCES.md,
 * hostile texts at the size bound, other encodings, typed failures), no extraction process is
 * started for such files, and everything else (larger text, other formats, a `.md` name on
 * other bytes) still goes to the extraction processes, which exit when idle.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { sharedPath } from "../../src/internal/shared.js"
import { fixtureFile } from "./fixtures.js"

const encoder = new TextEncoder()
const file = (name: string, data: string | Uint8Array): Upload.UploadFile => ({
  name,
  data: typeof data === "string" ? encoder.encode(data) : data
})

/** The extraction processes (children running `extract/worker`) of this process. */
const extractionProcesses = (): number =>
  readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return state !== "Z" && Number(ppid) === process.pid &&
        /extract\/worker\.[jt]s/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"))
    } catch {
      return false // ended meanwhile
    }
  }).length

/**
 * Waits until no extraction process of this process is left (those of a closed engine are
 * killed as its scope ends, and may take a moment to go on a loaded machine); returns 0.
 */
const noneLeft = Effect.gen(function*() {
  for (let i = 0; i < 300 && extractionProcesses() > 0; i++) yield* Effect.sleep("100 millis")
  expect(extractionProcesses()).toBe(0)
  return 0
})

/** A result without what differs between two calls (its id and time). */
const comparable = (r: Upload.EmbeddingsResult) => ({ ...r, id: "", created: 0 })

/** The first `n` SciFact abstracts as Markdown files, as the ingest benchmark writes them. */
const scifact = (n: number): Array<Upload.UploadFile> =>
  readFileSync(sharedPath("bench", "scifact", "corpus.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .slice(0, n)
    .map((l) => JSON.parse(l) as { _id: string; title: string; text: string })
    .map((d) => file(`${d._id}.md`, `# ${d.title}\n\n${d.text}\n`))

const bound = LocalFiles.defaultInProcessBytes
const cjk = Array.from({ length: Math.floor(bound / 3) }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 2000))).join("")

/** Texts at the size bound that are slow for naive code: one word, blank runs, CJK, markup. */
const hostile: ReadonlyArray<Upload.UploadFile> = [
  file("word.txt", "a".repeat(bound)),
  file("blanks.md", "x" + " \t".repeat(bound / 2 - 1) + "y"),
  file("spaces.txt", " ".repeat(bound - 1) + "x"),
  file("cjk.txt", cjk),
  file("hashes.md", "#".repeat(bound)),
  file("pipes.md", "|a".repeat(bound / 2)),
  file("latin1.txt", Uint8Array.from([...Array(200)].flatMap(() => [0x63, 0x61, 0x66, 0xe9, 0x20])))
]

const both = Effect.gen(function*() {
  const here = yield* LocalFiles.make({ concurrency: 1 })
  const there = yield* LocalFiles.make({ concurrency: 1, inProcessBytes: 0 })
  return { here, there }
})

describe("LocalFiles: small plain text in-process", () => {
  it.scopedLive("gives the extraction processes' results, without starting one", () =>
    Effect.gen(function*() {
      const { here, there } = yield* both
      const files = [...scifact(40), fixtureFile("SOURCES.md"), ...hostile]
      for (const f of files) expect(f.data.byteLength).toBeLessThanOrEqual(bound)
      const before = yield* noneLeft
      const ours = yield* Effect.forEach(files, (f) => here.extractChunks(f))
      const std = yield* here.extract(files[0]!, { page_based: true })
      // nothing needed an extraction process: none was started
      expect(extractionProcesses()).toBe(before)
      const theirs = yield* Effect.forEach(files, (f) => there.extractChunks(f))
      expect(extractionProcesses()).toBeGreaterThan(before)
      expect(ours.map(comparable)).toEqual(theirs.map(comparable))
      expect(std).toEqual(yield* there.extract(files[0]!, { page_based: true }))
      // the chunks are real: SciFact's first abstract, English, token-counted
      expect(ours[0]!.data.data.metadata.language).toBe("en")
      expect(ours[0]!.data.data.chunks[0]!.total_tokens).toBeGreaterThan(50)
      expect(ours.find((_, i) => files[i]!.name === "latin1.txt")!.data.data.chunks[0]!.content).toContain("café")
    }), { timeout: 120_000 })

  it.scopedLive("fails with the same typed errors", () =>
    Effect.gen(function*() {
      const { here, there } = yield* both
      for (const f of [file("blank.md", "  \n\n \t \n"), file("empty.txt", "")]) {
        const a = yield* Effect.flip(here.extractChunks(f))
        const b = yield* Effect.flip(there.extractChunks(f))
        expect(a).toEqual(b)
        expect(a._tag).toBe("ExtractionError")
      }
    }), { timeout: 60_000 })

  it.scopedLive("sends larger text and other formats to an extraction process", () =>
    Effect.gen(function*() {
      const upload = yield* LocalFiles.make({ concurrency: 1 })
      const before = yield* noneLeft
      const large = "Plain words of a long note. ".repeat(Math.ceil((bound + 1) / 28))
      const r = yield* upload.extractChunks(file("large.md", large))
      expect(r.data.data.chunks.length).toBeGreaterThan(1)
      expect(extractionProcesses()).toBe(before + 1)
    }), { timeout: 60_000 })

  it.scopedLive("decides by detected type: a .md name on PDF bytes is a PDF, read in an extraction process", () =>
    Effect.gen(function*() {
      const upload = yield* LocalFiles.make({ concurrency: 1 })
      const pdf = fixtureFile("pdf/helloworld-bad-xref.pdf")
      expect(pdf.data.byteLength).toBeLessThanOrEqual(bound)
      const before = yield* noneLeft
      const r = yield* Effect.either(upload.extractChunks({ ...pdf, name: "notes.md" }))
      expect(extractionProcesses()).toBe(before + 1)
      if (r._tag === "Right") expect(r.right.type).toBe("pdf")
    }), { timeout: 60_000 })

  it.scopedLive("an extraction process exits after its idle time, and a fresh one serves the next file", () =>
    Effect.gen(function*() {
      const upload = yield* LocalFiles.make({ concurrency: 1, processIdle: "2 seconds" })
      // text over the in-process bound: read in an extraction process
      const large = file("large.txt", "Words of a long note. ".repeat(Math.ceil((bound + 1) / 22)))
      const before = yield* noneLeft
      const first = yield* upload.extract(large)
      expect(extractionProcesses()).toBe(before + 1)
      // generous: the process exits once idle; poll until it has gone (a loaded machine is slow)
      for (let i = 0; i < 200 && extractionProcesses() > before; i++) yield* Effect.sleep("100 millis")
      expect(extractionProcesses()).toBe(before)
      const again = yield* upload.extract(large)
      expect(again.content).toBe(first.content)
      expect(extractionProcesses()).toBe(before + 1)
    }), { timeout: 60_000 })
})
