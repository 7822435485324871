/**
 * Crash-resume: a child process (`fixtures/ingest-child.ts`) ingesting a folder is killed with
 * SIGKILL at several points — right after its 1st, 2nd, 5th and 7th store write (between the
 * chunk upsert, stale delete, marker and prune steps of the write protocol), and after a random
 * delay — then the same ingest is rerun to completion. The collection
 * (ids, texts, titles, metadata, documents) and its manifest must equal an uninterrupted run's.
 *
 * The runs start from a collection that already holds an older version of the folder (so the
 * resumed runs also replace changed documents, add new ones and prune a removed one), except one
 * that starts from an empty database.
 */
import { afterAll, describe, expect, it } from "vitest"
import { Effect, Layer } from "effect"
import { cpSync, rmSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { documentCounts, dumpManifest, dumpTable, markdown, runIngestChild, tempDir, writeCorpus } from "./fixtures/ingest-helpers.js"

const root = tempDir("crash")
afterAll(() => rmSync(root, { recursive: true, force: true }))
const folder = join(root, "docs")
const collection = "docs"

/** Runs the child; kills it (SIGKILL) when `killAt` says so. */
const runChild = (db: string, killAt?: { afterWrites?: number; afterMs?: number }) =>
  runIngestChild({ folder, db, collection }, killAt)

const snapshot = async (db: string) => {
  const rows = await dumpTable(db, collection)
  return { rows, documents: documentCounts(rows), manifest: await dumpManifest(db, collection) }
}

/** The same ingest in this process (the uninterrupted run, the resumes and the reruns). */
const ingestHere = (db: string) =>
  Effect.runPromise(
    Ingest.run({ sources: [Ingest.Source.path(folder)], collection, prune: true }, { batchWindow: 50, batchDocuments: 3 }).pipe(
      Effect.provide(Layer.mergeAll(LocalFiles.layer({ isolation: "inline" }), LanceDbStore.layer({ uri: db })))
    )
  )

describe("Ingest crash-resume", () => {
  it("a run killed with SIGKILL at any point and rerun equals an uninterrupted run", async () => {
    // v1 of the folder, ingested completely into the base database
    const paths = writeCorpus(folder, 24, 6)
    const base = join(root, "base")
    await ingestHere(base)
    // v2: three documents changed, one removed, three added
    for (const i of [0, 7, 13]) writeFileSync(paths[i]!, markdown(i, 14, 2))
    unlinkSync(paths[20]!)
    for (const i of [30, 31, 32]) writeFileSync(join(folder, `new-${i}.md`), markdown(i, 8))

    const fromBase = (name: string) => {
      const db = join(root, name)
      cpSync(base, db, { recursive: true })
      return db
    }

    // the uninterrupted run
    const refDb = fromBase("reference")
    const ref = await ingestHere(refDb)
    expect(ref).toMatchObject({ ingested: 6, pruned: 1, failed: 0 })
    const expected = await snapshot(refDb)
    expect(Object.keys(expected.documents).length).toBe(24 + 2 - 1 + 3)

    const cases: Array<{ name: string; db: string; kills: Array<{ afterWrites?: number; afterMs?: number }> }> = [
      { name: "after the 1st write", db: fromBase("k1"), kills: [{ afterWrites: 1 }] },
      { name: "after the 5th write", db: fromBase("k5"), kills: [{ afterWrites: 5 }] },
      { name: "at a random delay", db: fromBase("kr"), kills: [{ afterMs: Math.floor(Math.random() * 700) }] },
      { name: "twice in a row, from an empty database", db: join(root, "empty"), kills: [{ afterWrites: 2 }, { afterWrites: 7 }] }
    ]
    let interrupted = 0
    for (const c of cases) {
      for (const k of c.kills) {
        const r = await runChild(c.db, k)
        if (r.killed) {
          interrupted++
          // a kill after a given write leaves the job unfinished (a timed kill may land after the
          // last write, before the process ends: then the job is done, which is just as right)
          if (k.afterWrites !== undefined) expect(await snapshot(c.db), c.name).not.toEqual(expected)
        }
      }
      const resumed = await ingestHere(c.db)
      expect(resumed.failed, c.name).toBe(0)
      const got = await snapshot(c.db)
      expect(got.documents, c.name).toEqual(expected.documents)
      expect(got.rows, c.name).toEqual(expected.rows)
      expect(got.manifest, c.name).toEqual(expected.manifest)
      // and a further rerun writes nothing
      const again = await ingestHere(c.db)
      expect(again.writes, c.name).toBe(0)
    }
    // the write-count kills always land (the random one may come after the end)
    expect(interrupted).toBeGreaterThanOrEqual(4)
  }, 120_000)
})
