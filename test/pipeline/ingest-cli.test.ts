/**
 * The `ingest` and `collections` commands, parsed and run by @effect/cli in this process (the
 * same root-command setup as `main.ts`): exit codes (0, 3, 2), the `--json` summary, a rerun
 * writing nothing, `collections list/stats/drop`; a crawled site's broken links against a URL
 * source that answers 404; `--no-ocr` and `--extract-timeout-ms`.
 */
import { NodeContext } from "@effect/platform-node"
import { Effect, Exit, Scope } from "effect"
import { createCanvas, loadImage } from "@napi-rs/canvas"
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it, vi } from "vitest"
import { sharedPath } from "../../src/internal/shared.js"
import { startSite } from "../engines/web/site.js"
import { pdf } from "../support/pdf-writer.js"
import { run } from "./fixtures/cli-child.js"
import { dumpTable, tempDir, writeCorpus } from "./fixtures/ingest-helpers.js"

const root = tempDir("cli")
afterAll(() => rmSync(root, { recursive: true, force: true }))
afterEach(() => {
  process.exitCode = 0
  vi.restoreAllMocks()
})

/** Runs the CLI; returns the exit code and what went to stdout (console.log). */
const cli = async (...args: Array<string>) => {
  process.exitCode = 0
  const out: Array<string> = []
  vi.spyOn(console, "log").mockImplementation((...a: Array<unknown>) => void out.push(a.map(String).join(" ")))
  vi.spyOn(process.stderr, "write").mockImplementation(() => true)
  await Effect.runPromise(run(["node", "effect-rag", ...args]).pipe(Effect.provide(NodeContext.layer)))
  vi.restoreAllMocks()
  const code = typeof process.exitCode === "number" ? process.exitCode : 0
  process.exitCode = 0
  return { code, stdout: out.join("\n") }
}

describe("ingest and collections commands", () => {
  it("exit codes, --json summary, idempotent rerun, collections list/stats/drop", async () => {
    const folder = join(root, "docs")
    const db = join(root, "db")
    writeCorpus(folder, 3, 3)
    const ok = await cli("ingest", folder, "--db", db, "--collection", "notes", "--json", "--exclude", "*.xlsx")
    expect(ok.code).toBe(0)
    const first = JSON.parse(ok.stdout)
    expect(first).toMatchObject({ db, collection: "notes", ingested: 4, failed: 0 })

    copyFileSync(sharedPath("fixtures", "docs", "pdf", "bug1020226-corrupt.pdf"), join(folder, "corrupt.pdf"))
    const partial = await cli("ingest", folder, "--db", db, "--collection", "notes", "--json", "--exclude", "*.xlsx")
    expect(partial.code).toBe(3)
    const second = JSON.parse(partial.stdout)
    expect(second).toMatchObject({ ingested: 0, skipped: 4, failed: 1, writes: 0 })
    expect(second.failures[0].error).toMatchObject({ _tag: "ExtractionError", reason: "corrupt" })

    expect((await cli("ingest", "--db", db)).code).toBe(2)

    const list = await cli("collections", "list", "--db", db, "--json")
    expect(JSON.parse(list.stdout).collections).toEqual([{ name: "notes", chunks: first.chunks.total, documents: 4 }])
    const stats = JSON.parse((await cli("collections", "stats", "notes", "--db", db, "--json")).stdout)
    expect(stats).toMatchObject({ name: "notes", documents: 4, completeDocuments: 4, incompleteDocuments: 0, embedding: null })
    expect(stats.bytes).toBeGreaterThan(0)
    expect((await cli("collections", "drop", "notes", "--db", db)).code).toBe(0)
    expect(JSON.parse((await cli("collections", "list", "--db", db, "--json")).stdout).collections).toEqual([])
    expect((await cli("collections", "drop", "notes", "--db", db)).code).toBe(1)
  })

  it("a site whose links 404: the broken pages are listed, not failures (exit 0); a URL source that 404s is a failure (exit 3)", async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const site = await Effect.runPromise(Scope.extend(startSite, scope))
      const folder = join(root, "own")
      const db = join(root, "db-site")
      writeCorpus(folder, 1, 0)
      const crawled = await cli("ingest", folder, "--site", `${site.origin}/`, "--max-depth", "1", "--allow-private", "--db", db, "--collection", "site", "--json")
      const summary = JSON.parse(crawled.stdout)
      expect(crawled.code).toBe(0)
      expect(summary).toMatchObject({ failed: 0, brokenPages: [{ site: `${site.origin}/`, url: `${site.origin}/missing`, statusCode: 404 }] })
      expect(summary.ingested).toBeGreaterThan(1)

      const named = await cli("ingest", `${site.origin}/missing`, `${site.origin}/about`, "--allow-private", "--db", db, "--collection", "pages", "--json")
      expect(named.code).toBe(3)
      expect(JSON.parse(named.stdout)).toMatchObject({
        ingested: 1,
        failed: 1,
        failures: [{ source: `${site.origin}/missing`, error: { _tag: "SourceError", reason: "page_failed", message: expect.stringContaining("HTTP 404") } }]
      })
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 120_000)

  it("a scanned PDF is OCR'd by default and its text stored; --no-ocr leaves it failed as empty; not with --queue", async () => {
    // the fixture scan (made by others) as the one page of an image-only PDF
    const img = await loadImage(readFileSync(sharedPath("fixtures", "docs", "png", "testocr.png")))
    const canvas = createCanvas(img.width, img.height)
    const ctx = canvas.getContext("2d")
    ctx.fillStyle = "#ffffff"
    ctx.fillRect(0, 0, img.width, img.height)
    ctx.drawImage(img, 0, 0)
    const folder = join(root, "scans")
    mkdirSync(folder, { recursive: true })
    writeFileSync(join(folder, "scan.pdf"), pdf([{ image: { jpeg: new Uint8Array(await canvas.encode("jpeg", 95)), width: img.width, height: img.height } }]))
    const db = join(root, "scans-db")

    const ocr = await cli("ingest", folder, "--db", db, "--collection", "scans", "--json")
    expect(ocr.code).toBe(0)
    expect(JSON.parse(ocr.stdout)).toMatchObject({ ingested: 1, failed: 0 })
    const rows = await dumpTable(db, "scans")
    expect(rows.length).toBeGreaterThan(0)
    expect(rows.map((r) => r.text).join(" ").replace(/\s+/g, " ")).toContain("The quick brown dog jumped over the")
    expect(rows.map((r) => (JSON.parse(r.metadata) as { ocr?: boolean }).ocr)).toEqual(rows.map(() => true))

    const off = await cli("ingest", folder, "--db", db, "--collection", "no-ocr", "--json", "--no-ocr")
    expect(off.code, off.stdout).toBe(1) // every document failed
    expect(JSON.parse(off.stdout).failures[0].error).toMatchObject({ _tag: "ExtractionError", reason: "empty" })
    expect((await cli("ingest", folder, "--queue", "redis://127.0.0.1:1", "--no-ocr")).code).toBe(2)
  }, 120_000)

  it("--extract-timeout-ms: a file past it fails as a time-out and the run goes on; a bad value, or the flag with --queue, is a usage error", async () => {
    const folder = join(root, "timeouts")
    mkdirSync(folder, { recursive: true })
    copyFileSync(sharedPath("fixtures", "docs", "pdf", "TAMReview.pdf"), join(folder, "review.pdf"))
    writeFileSync(join(folder, "note.md"), "# Note\n\nA short note, read in this process.\n")
    const db = join(root, "timeouts-db")
    // 1 ms: no PDF extraction (a round trip to the extraction process and pdf.js's parse) ends
    // that soon on any host; a slower host only makes it more certain
    const r = await cli("ingest", folder, "--db", db, "--collection", "timeouts", "--json", "--no-ocr", "--extract-timeout-ms", "1")
    expect(r.code, r.stdout).toBe(3)
    const summary = JSON.parse(r.stdout)
    expect(summary).toMatchObject({ ingested: 1, failed: 1 })
    expect(summary.failures[0].error).toMatchObject({ _tag: "ExtractionError", reason: "timeout" })
    expect((await cli("ingest", folder, "--db", db, "--extract-timeout-ms", "0")).code).toBe(2)
    expect((await cli("ingest", folder, "--queue", "redis://127.0.0.1:1", "--extract-timeout-ms", "1000")).code).toBe(2)
  }, 120_000)
})
