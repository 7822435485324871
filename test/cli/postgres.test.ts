/**
 * `--db postgres://…` through the real command line (from source, in child processes), against
 * the PostgreSQL the Postgres suite uses (PGlite + pgvector over the wire protocol on loopback,
 * or Debian's PostgreSQL with `EFFECT_RAG_TEST_POSTGRES=1`): ingest, query, collections, and a
 * password in the URL never printed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { displayUri } from "../../src/store/StoreUri.js"
import { runCli } from "../support/cli.js"
import { type PostgresServer, startPostgres } from "../support/postgres.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-cli-postgres-"))
let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
}, 120_000)
afterAll(async () => {
  await server?.stop()
  rmSync(root, { recursive: true, force: true })
})

const secret = "s3cret-pw-never-printed"

describe("effect-rag --db postgres://", () => {
  it("a URI's password is shown as ***", () => {
    expect(displayUri("postgres://app:hunter2@db.example:5432/rag?schema=x")).toBe("postgres://app:***@db.example:5432/rag?schema=x")
    expect(displayUri("postgres://app@db.example/rag")).toBe("postgres://app@db.example/rag")
    expect(displayUri("/var/data/db")).toBe("/var/data/db")
  })

  it("ingest, query and collections on PostgreSQL; the password is never printed", async () => {
    const docs = join(root, "docs")
    mkdirSync(docs, { recursive: true })
    writeFileSync(join(docs, "harbour.md"), "# Harbour\n\nThe harbour lighthouse keeper lights the lamp at dusk.\n")
    writeFileSync(join(docs, "garden.md"), "# Garden\n\nTomatoes ripen in the greenhouse by late July.\n")
    // PGlite and a local trust-authenticated server ignore the password: it is there to be hidden
    const url = server.url.replace(`//${server.user}@`, `//${server.user}:${secret}@`)
    const at = ["--db", url, "--collection", "notes"]

    const ingest = await runCli(["ingest", docs, ...at, "--json"])
    expect(ingest.code, ingest.stderr).toBe(0)
    expect(JSON.parse(ingest.stdout)).toMatchObject({ documents: 2, ingested: 2, failed: 0 })
    const again = await runCli(["ingest", docs, ...at, "--json"])
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout)).toMatchObject({ ingested: 0, skipped: 2 })

    const query = await runCli(["query", "lighthouse lamp", ...at, "--json"])
    expect(query.code, query.stderr).toBe(0)
    const result = JSON.parse(query.stdout) as { db: string; hits: Array<{ source: string }> }
    expect(result.hits[0]!.source).toContain("harbour.md")
    expect(result.db).toContain(":***@")

    const list = await runCli(["collections", "list", "--db", url, "--json"])
    expect(list.code, list.stderr).toBe(0)
    expect(JSON.stringify(JSON.parse(list.stdout).collections)).toContain("notes")

    for (const r of [ingest, again, query, list]) {
      expect(r.stdout + r.stderr).not.toContain(secret)
    }
  }, 240_000)
})
