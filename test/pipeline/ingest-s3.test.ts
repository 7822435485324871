/**
 * The ingest pipeline on object storage: a collection in `s3://…` on an S3-compatible server
 * (`s3rver`, started here on loopback, without conditional PUT: one writer at a time is safe on
 * any S3 server, see `docs/stores.md`).
 *
 * - The CLI (`ingest`, `query`, `collections`) with `--db s3://…` and the object store's settings
 *   in a config file, then the real binary with them in the environment: shared fixtures
 *   ingested, found by a query, a rerun writes nothing, `--prune` removes a deleted file.
 * - Crash-resume as in `ingest-crash.test.ts`: a child process ingesting into `s3://…` is killed
 *   with SIGKILL between store writes; the rerun ends with the collection an uninterrupted run
 *   writes. The child reaches the server through the `AWS_*` variables LanceDB reads itself.
 */
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { rmSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import * as collections from "../../src/cli/commands/collections.js"
import * as ingest from "../../src/cli/commands/ingest.js"
import * as query from "../../src/cli/commands/query.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { runCli } from "../support/cli.js"
import { startS3, type S3Server } from "../support/s3.js"
import { copyTextFixtures, documentCounts, dumpManifest, dumpTable, markdown, runIngestChild, tempDir, textFixtures, writeCorpus } from "./fixtures/ingest-helpers.js"

const root = tempDir("s3")
let s3: S3Server
beforeAll(async () => {
  s3 = await startS3()
})
afterAll(async () => {
  await s3?.close()
  rmSync(root, { recursive: true, force: true })
})
afterEach(() => {
  process.exitCode = 0
  vi.restoreAllMocks()
})

const cliRoot = Command.make("effect-rag").pipe(Command.withSubcommands([ingest.command, query.command, collections.command]))
const runRoot = Command.run(cliRoot, { name: "effect-rag", version: "test" })

/** Runs the CLI in this process; returns the exit code and what went to stdout. */
const cli = async (...args: Array<string>) => {
  process.exitCode = 0
  const out: Array<string> = []
  vi.spyOn(console, "log").mockImplementation((...a: Array<unknown>) => void out.push(a.map(String).join(" ")))
  vi.spyOn(process.stderr, "write").mockImplementation(() => true)
  await Effect.runPromise(runRoot(["node", "effect-rag", ...args]).pipe(Effect.scoped, Effect.provide(NodeContext.layer)))
  vi.restoreAllMocks()
  const code = typeof process.exitCode === "number" ? process.exitCode : 0
  process.exitCode = 0
  return { code, stdout: out.join("\n") }
}

const fixtures = textFixtures

describe("ingest into s3://", () => {
  it("CLI: --db s3://… with the settings in a config file; query; a rerun writes nothing; --prune", async () => {
    const folder = join(root, "fixtures")
    copyTextFixtures(folder)
    const config = join(root, "s3.config.json")
    writeFileSync(config, JSON.stringify({
      s3Endpoint: s3.endpoint,
      s3Region: "us-east-1",
      awsAccessKeyId: "S3RVER",
      awsSecretAccessKey: "S3RVER",
      storageOptions: { timeout: "60s" }
    }))
    const db = s3.uri("cli")
    const common = ["--db", db, "--collection", "fixtures", "--config", config, "--json"]

    const first = await cli("ingest", folder, ...common)
    expect(first.code).toBe(0)
    const summary = JSON.parse(first.stdout)
    expect(summary).toMatchObject({ db, collection: "fixtures", ingested: fixtures.length, failed: 0 })
    expect(summary.chunks.total).toBeGreaterThan(fixtures.length)
    // the table lives on the server, nothing on local disk
    expect((await s3.keys("cli/fixtures.lance/_versions/")).length).toBeGreaterThan(0)

    const found = await cli("query", "Abraham Lincoln", ...common)
    expect(found.code).toBe(0)
    const hits = JSON.parse(found.stdout).hits as Array<{ source: string }>
    expect(hits[0]?.source).toContain("us_presidents.json")

    const again = JSON.parse((await cli("ingest", folder, ...common)).stdout)
    expect(again).toMatchObject({ ingested: 0, skipped: fixtures.length, writes: 0 })

    unlinkSync(join(folder, "SampleShow.pptx"))
    const pruned = JSON.parse((await cli("ingest", folder, ...common, "--prune")).stdout)
    expect(pruned).toMatchObject({ ingested: 0, pruned: 1, failed: 0 })
    const stats = JSON.parse((await cli("collections", "stats", "fixtures", "--db", db, "--config", config, "--json")).stdout)
    expect(stats).toMatchObject({ db, documents: fixtures.length - 1, completeDocuments: fixtures.length - 1, incompleteDocuments: 0 })
    expect(stats.bytes).toBeGreaterThan(0)
    const list = JSON.parse((await cli("collections", "list", "--db", db, "--config", config, "--json")).stdout)
    expect(list.collections).toEqual([{ name: "fixtures", chunks: stats.chunks, documents: fixtures.length - 1 }])

    // the real binary, with the settings in the environment (EFFECT_RAG_DB, EFFECT_RAG_S3_*, AWS_*)
    const real = await runCli(["query", "Abraham Lincoln", "--collection", "fixtures", "--json"], { ...s3.env, EFFECT_RAG_DB: db }, { timeoutMs: 120_000 })
    expect(real.code, real.stderr).toBe(0)
    expect(JSON.parse(real.stdout).hits[0].source).toContain("us_presidents.json")
    expect(real.stderr).not.toContain("S3RVER")
    // a missing collection on the store is a clear error, not a local-folder message
    await expect(cli("query", "x", "--db", db, "--collection", "nope", "--config", config)).rejects.toThrow(`no collection nope in ${db}`)
  }, 240_000)

  it("a run killed with SIGKILL and rerun equals an uninterrupted run", async () => {
    const folder = join(root, "crash")
    const collection = "docs"
    const paths = writeCorpus(folder, 8, 4)
    const ingestHere = (db: string) =>
      Effect.runPromise(
        Ingest.run({ sources: [Ingest.Source.path(folder)], collection, prune: true }, { batchWindow: 50, batchDocuments: 3 }).pipe(
          Effect.provide(Layer.mergeAll(LocalFiles.layer({ isolation: "inline" }), LanceDbStore.layer({ uri: db, storage: s3.storage })))
        )
      )
    const snapshot = async (db: string) => {
      const rows = await dumpTable(db, collection, s3.lance)
      return { rows, documents: documentCounts(rows), manifest: await dumpManifest(db, collection, s3.lance) }
    }
    // the child reaches the server through the variables LanceDB reads itself
    const childEnv = {
      AWS_ENDPOINT: s3.endpoint,
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
      AWS_ALLOW_HTTP: "true"
    }

    // v1 in two databases, then v2: two documents changed, one removed, two added
    const [ref, killed, empty] = [s3.uri("crash/reference"), s3.uri("crash/killed"), s3.uri("crash/empty")]
    await ingestHere(ref)
    await ingestHere(killed)
    for (const i of [0, 5]) writeFileSync(paths[i]!, markdown(i, 9, 2))
    unlinkSync(paths[3]!)
    for (const i of [20, 21]) writeFileSync(join(folder, `new-${i}.md`), markdown(i, 5))

    expect(await ingestHere(ref)).toMatchObject({ ingested: 4, pruned: 1, failed: 0 })
    const expected = await snapshot(ref)
    expect(Object.keys(expected.documents).length).toBe(8 + 2 - 1 + 2)

    for (const c of [{ db: killed, kills: [{ afterWrites: 2 }] }, { db: empty, kills: [{ afterWrites: 3 }] }]) {
      for (const k of c.kills) {
        const r = await runIngestChild({ folder, db: c.db, collection, env: childEnv }, k)
        expect(r.killed, c.db).toBe(true)
        expect(await snapshot(c.db), c.db).not.toEqual(expected)
      }
      const resumed = await ingestHere(c.db)
      expect(resumed.failed, c.db).toBe(0)
      const got = await snapshot(c.db)
      expect(got.documents, c.db).toEqual(expected.documents)
      expect(got.rows, c.db).toEqual(expected.rows)
      expect(got.manifest, c.db).toEqual(expected.manifest)
      expect((await ingestHere(c.db)).writes, c.db).toBe(0)
    }
  }, 240_000)
})
