/**
 * The ingest pipeline on real LanceDB in temp folders, with the local document engine: the
 * idempotency (a second run writes nothing: no upsert, no table version change), change
 * detection, prune, a bad document recorded while the rest ingest, progress events, embeddings.
 */
import { afterAll, describe, expect, it } from "vitest"
import { Chunk as C, Effect, Layer, Stream } from "effect"
import { copyFileSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type * as Embeddings from "../../src/api/Embeddings.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { sharedPath } from "../../src/internal/shared.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { Filter, VectorStore } from "../../src/store/VectorStore.js"
import { documentCounts, dumpTable, markdown, tableVersion, tempDir, writeCorpus } from "./fixtures/ingest-helpers.js"

const roots: Array<string> = []
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true })
})
const fresh = (prefix: string) => {
  const dir = tempDir(prefix)
  roots.push(dir)
  return { folder: join(dir, "docs"), db: join(dir, "db") }
}

const layerFor = (db: string) => Layer.mergeAll(LocalFiles.layer({ isolation: "inline" }), LanceDbStore.layer({ uri: db }))

const ingest = (db: string, request: Ingest.Request, options: Ingest.Options = {}) =>
  Effect.runPromise(Ingest.run(request, { batchWindow: 50, ...options }).pipe(Effect.provide(layerFor(db))))

const idOf = (path: string) => pathToFileURL(path).href

describe("Ingest", () => {
  it("ingests a folder, and a second run writes nothing (no upsert, same table versions)", async () => {
    const { folder, db } = fresh("idem")
    writeCorpus(folder, 8)
    const first = await ingest(db, { sources: [Ingest.Source.path(folder)], collection: "docs" })
    expect(first.failed).toBe(0)
    expect(first.ingested).toBe(10)
    expect(first.chunks.inserted).toBe(first.chunks.ingested)
    expect(first.chunks.total).toBe(first.chunks.ingested)
    expect(first.chunks.ingested).toBeGreaterThan(10) // several documents span several chunks
    const rows = await dumpTable(db, "docs")
    expect(rows.length).toBe(first.chunks.total)
    const meta = JSON.parse(rows[0]!.metadata) as Record<string, unknown>
    expect(meta).toMatchObject({ source_hash: expect.any(String), page: expect.any(Number), chunk: expect.any(Number) })
    expect(Object.keys(documentCounts(rows))).toContain(idOf(join(folder, "header-footer.docx")))

    const versions = [await tableVersion(db, "docs"), await tableVersion(db, Ingest.manifestName("docs"))]
    const second = await ingest(db, { sources: [Ingest.Source.path(folder)], collection: "docs" })
    expect(second).toMatchObject({ ingested: 0, skipped: 10, failed: 0, writes: 0 })
    expect(second.chunks).toMatchObject({ inserted: 0, updated: 0, deleted: 0, total: first.chunks.total })
    expect([await tableVersion(db, "docs"), await tableVersion(db, Ingest.manifestName("docs"))]).toEqual(versions)
    expect(await dumpTable(db, "docs")).toEqual(rows)
  })

  it("skips unchanged files by their stat, and still sees a same-size rewrite whose modification time was set back", async () => {
    const { folder, db } = fresh("stat")
    const paths = writeCorpus(folder, 4)
    // files changed less than the racy window before their read get no stat signature: age them
    await new Promise((r) => setTimeout(r, 2_700))
    const request: Ingest.Request = { sources: [Ingest.Source.path(folder)], collection: "docs" }
    const first = await ingest(db, request)
    expect(first.failed).toBe(0)
    const markers = (await dumpTable(db, Ingest.manifestName("docs"))).map((r) => JSON.parse(r.documentId) as Array<unknown>)
    expect(markers.length).toBe(first.ingested)
    expect(markers.every((m) => m.length === 4 && typeof m[3] === "string")).toBe(true) // [id, hash, chunks, stat signature]

    expect(await ingest(db, request)).toMatchObject({ ingested: 0, skipped: first.ingested, failed: 0, writes: 0 })

    // same size, other bytes, modification time restored: the change time still differs
    const target = paths.find((p) => p.endsWith(".md"))!
    const { atime, mtime, size } = statSync(target)
    const text = readFileSync(target, "utf8")
    const swapped = text.replace("# Document", "# Documant")
    expect(swapped).not.toBe(text)
    writeFileSync(target, swapped)
    utimesSync(target, atime, mtime)
    expect(statSync(target).size).toBe(size)
    const third = await ingest(db, request)
    expect(third).toMatchObject({ ingested: 1, skipped: first.ingested - 1, failed: 0 })
    const rows = (await dumpTable(db, "docs")).filter((r) => r.documentId === idOf(target))
    expect(rows.some((r) => r.text.includes("Documant") || r.title?.includes("Documant"))).toBe(true)
  })

  it("replaces the chunks of a changed document and leaves the others untouched; prune deletes removed ones", async () => {
    const { folder, db } = fresh("change")
    const paths = writeCorpus(folder, 6)
    const request: Ingest.Request = { sources: [Ingest.Source.path(folder)], collection: "docs", prune: true }
    await ingest(db, request)
    const before = await dumpTable(db, "docs")
    const changed = paths[1]!
    const removed = paths[4]!
    writeFileSync(changed, markdown(1, 30, 1)) // longer: more chunks
    unlinkSync(removed)
    const second = await ingest(db, request)
    expect(second).toMatchObject({ ingested: 1, skipped: 6, pruned: 1, failed: 0 })
    const after = await dumpTable(db, "docs")

    const by = (rows: typeof before, id: string) => rows.filter((r) => r.documentId === id)
    // the changed document: only its new generation, all of it
    const newRows = by(after, idOf(changed))
    expect(newRows.length).toBe(second.chunks.ingested)
    expect(newRows.every((r) => r.text.length > 0 && r.id.includes(JSON.parse(r.metadata).source_hash.slice(0, 16)))).toBe(true)
    expect(new Set(newRows.map((r) => JSON.parse(r.metadata).source_hash)).size).toBe(1)
    expect(newRows.some((r) => r.text.includes("revision 1") || r.title?.includes("revision 1"))).toBe(true)
    expect(by(before, idOf(changed)).some((r) => newRows.some((n) => n.id === r.id))).toBe(false)
    // the removed document is gone, the others are byte-identical
    expect(by(after, idOf(removed))).toEqual([])
    const untouched = (rows: typeof before) => rows.filter((r) => r.documentId !== idOf(changed) && r.documentId !== idOf(removed))
    expect(untouched(after)).toEqual(untouched(before))
    expect(second.chunks.deleted).toBe(by(before, idOf(changed)).length + by(before, idOf(removed)).length)
    // and the manifest agrees
    const markers = await dumpTable(db, Ingest.manifestName("docs"))
    expect(markers.map((m) => m.id).sort()).toEqual(Object.keys(documentCounts(after)).sort())
  })

  it("records a bad document with its typed error and ingests the rest; include/exclude globs apply", async () => {
    const { folder, db } = fresh("bad")
    writeCorpus(folder, 3)
    copyFileSync(sharedPath("fixtures", "docs", "pdf", "bug1020226-corrupt.pdf"), join(folder, "corrupt.pdf"))
    copyFileSync(sharedPath("fixtures", "docs", "pdf", "issue6010_1-encrypted.pdf"), join(folder, "sub", "encrypted.pdf"))
    writeFileSync(join(folder, "notes.txt"), "excluded by the glob")
    const summary = await ingest(db, {
      sources: [Ingest.Source.path(folder), Ingest.Source.path(join(folder, "missing.md"))],
      collection: "docs",
      exclude: ["*.txt"]
    })
    expect(summary.ingested).toBe(5)
    expect(summary.failed).toBe(3)
    const reasons = Object.fromEntries(summary.failures.map((f) => [f.source.split("/").pop(), f.error]))
    expect(reasons["corrupt.pdf"]).toMatchObject({ _tag: "ExtractionError", reason: "corrupt" })
    expect(reasons["encrypted.pdf"]).toMatchObject({ _tag: "ExtractionError", reason: "password_required" })
    expect(reasons["missing.md"]).toMatchObject({ _tag: "SourceError", reason: "not_found" })
    const docs = Object.keys(documentCounts(await dumpTable(db, "docs")))
    expect(docs.length).toBe(5)
    expect(docs.some((d) => d.endsWith(".txt") || d.endsWith(".pdf"))).toBe(false)

    const only = await ingest(db, { sources: [Ingest.Source.path(folder)], collection: "md", include: ["sub/**"] })
    expect(only.documents).toBe(3) // sub/doc-02.md, sub/right-to-left.xlsx, sub/encrypted.pdf
  })

  it("reports progress as a stream of typed events, ending with the summary", async () => {
    const { folder, db } = fresh("events")
    writeCorpus(folder, 4)
    writeFileSync(join(folder, "broken.docx"), "not a zip")
    const events = await Effect.runPromise(
      Ingest.events({ sources: [Ingest.Source.path(folder)], collection: "docs" }, { batchDocuments: 2, batchWindow: 50 }).pipe(
        Stream.runCollect,
        Effect.map(C.toReadonlyArray),
        Effect.provide(layerFor(db))
      )
    )
    const tags = events.map((e) => e._tag)
    expect(tags[0]).toBe("Planned")
    expect(events[0]).toEqual({ _tag: "Planned", total: 7 })
    expect(tags.filter((t) => t === "Ingested").length).toBe(6)
    expect(tags.filter((t) => t === "Failed").length).toBe(1)
    expect(tags.filter((t) => t === "BatchWritten").length).toBeGreaterThanOrEqual(3)
    const last = events[events.length - 1]!
    expect(last._tag).toBe("Finished")
    if (last._tag !== "Finished") return
    expect(last.summary).toMatchObject({ ingested: 6, failed: 1, documents: 7 })
    const written = events.flatMap((e) => (e._tag === "BatchWritten" ? [e.inserted] : [])).reduce((a, b) => a + b, 0)
    expect(written).toBe(last.summary.chunks.inserted)
  })

  it("stores the embedder's vectors, and filters on the declared fields work", async () => {
    const { folder, db } = fresh("embed")
    writeCorpus(folder, 3, 4)
    // A deterministic bag-of-letters embedder: real vectors without a model download.
    const embed = (t: string) => {
      const v = new Float32Array(8)
      for (const ch of t) v[ch.charCodeAt(0) % 8]! += 1
      return v
    }
    let calls = 0
    const service: Embeddings.Service = {
      defaultModel: "letters",
      dimension: 8,
      create: () => Effect.die("unused"),
      embed: (texts) => Effect.sync(() => {
        calls++
        return { model: "letters", vectors: texts.map(embed), totalTokens: 0 }
      })
    }
    const summary = await ingest(db, { sources: [Ingest.Source.path(folder)], collection: "vec" }, {
      embedder: { id: "letters", service },
      batchDocuments: 100,
      batchWindow: 60_000
    })
    expect(summary.failed).toBe(0)
    expect(calls).toBe(1) // one batch: one embed call for all chunks
    const hits = await Effect.runPromise(Effect.gen(function*() {
      const c = yield* (yield* VectorStore).open("vec")
      expect(c.spec.embedding).toEqual({ model: "letters", dimension: 8 })
      const source = join(folder, "doc-00.md")
      const n = yield* c.count(Filter.eq("source", source))
      const v = yield* c.searchVector(embed("lance arrow"), { limit: 3, filter: Filter.eq("source", source) })
      return { n, v }
    }).pipe(Effect.provide(LanceDbStore.layer({ uri: db }))))
    expect(hits.n).toBeGreaterThan(0)
    expect(hits.v.length).toBe(Math.min(3, hits.n))
    expect(hits.v.every((h) => h.metadata["source"] === join(folder, "doc-00.md"))).toBe(true)
  })
})
