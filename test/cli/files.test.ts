/**
 * Files the built `effect-rag` meets in real folders (issue #22): special files (a FIFO, a
 * symlink to one) are skipped with their reason instead of blocking the run; a name that is not
 * UTF-8 is read by its bytes and recognised as unchanged on a rerun; names with newlines, ESC
 * and bidi controls are printed escaped (stderr lines, summary) while `--json` stays valid JSON;
 * the internal manifest collections cannot be dropped, inspected or ingested into by name.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runBuiltCli } from "../support/cli.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-files-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const text = (topic: string) => `# ${topic}\n\nThe ${topic} notes talk about lance, arrow and effect streams.\n`
const mkfifo = (path: string) => execFileSync("mkfifo", [path])

describe("special files", () => {
  it("a FIFO and a symlink to it in a folder are skipped with their reason; the ingest ends (exit 0)", async () => {
    const folder = join(root, "fifo")
    mkdirSync(folder)
    writeFileSync(join(folder, "a.md"), text("alpha"))
    mkfifo(join(folder, "pipe"))
    symlinkSync(join(folder, "pipe"), join(folder, "pipe-link"))
    const db = join(root, "fifo-db")
    const r = await runBuiltCli(["ingest", folder, "--db", db, "--json"], {}, { timeoutMs: 60_000 })
    expect(r.code, r.stderr).toBe(0)
    const s = JSON.parse(r.stdout)
    expect(s).toMatchObject({ documents: 1, ingested: 1, failed: 0 })
    expect(s.ignored).toEqual([
      expect.objectContaining({ source: join(folder, "pipe"), reason: "fifo" }),
      expect.objectContaining({ source: join(folder, "pipe-link"), reason: "fifo" })
    ])
    const plain = await runBuiltCli(["ingest", folder, "--db", db], {}, { timeoutMs: 60_000 })
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stderr).toContain(`skipped ${join(folder, "pipe")}: a FIFO (named pipe), not a regular file`)
    expect(plain.stdout).toMatch(/1 unchanged, 0 failed, 0 pruned/)
    expect(plain.stdout).toContain("not regular files (skipped): 2")
  })
})

describe("file names", () => {
  it("a name that is not UTF-8 is ingested by its bytes; a rerun sees it unchanged", async () => {
    const folder = join(root, "bytes")
    mkdirSync(folder)
    const bad = Buffer.concat([Buffer.from(`${folder}/caf`), Buffer.from([0xe9, 0xff]), Buffer.from(".md")])
    writeFileSync(bad, text("bytes"))
    const sub = Buffer.concat([Buffer.from(`${folder}/dir`), Buffer.from([0xfe])])
    mkdirSync(sub)
    writeFileSync(Buffer.concat([sub, Buffer.from("/inner.md")]), text("inner"))
    const db = join(root, "bytes-db")
    const first = await runBuiltCli(["ingest", folder, "--db", db, "--json"], {}, { timeoutMs: 60_000 })
    expect(first.code, first.stderr).toBe(0)
    expect(JSON.parse(first.stdout)).toMatchObject({ documents: 2, ingested: 2, failed: 0 })
    const again = await runBuiltCli(["ingest", folder, "--db", db, "--json"], {}, { timeoutMs: 60_000 })
    expect(again.code, again.stderr).toBe(0)
    expect(JSON.parse(again.stdout)).toMatchObject({ documents: 2, ingested: 0, skipped: 2, writes: 0 })
    const q = await runBuiltCli(["query", "bytes notes", "--db", db, "--json"], {}, { timeoutMs: 60_000 })
    expect(q.code, q.stderr).toBe(0)
    const ids = JSON.parse(q.stdout).hits.map((x: { documentId: string }) => x.documentId)
    // the document id: the file URL, the bytes that are not UTF-8 percent-escaped
    expect(ids).toContain(`file://${folder}/caf%E9%FF.md`)
    expect(ids).toContain(`file://${folder}/dir%FE/inner.md`)
  })

  it("newlines, ESC and bidi controls in names are printed escaped; --json stays valid JSON", async () => {
    const folder = join(root, "forge")
    mkdirSync(folder)
    const forged = "x\nfailed secrets.db: ExtractionError (corrupt): FAKE LINE.pdf"
    writeFileSync(join(folder, forged), "%PDF-1.7 not really a pdf")
    writeFileSync(join(folder, "e\x1b[31mred\u202egnp.md"), text("escape"))
    const db = join(root, "forge-db")
    const r = await runBuiltCli(["ingest", folder, "--db", db], {}, { timeoutMs: 60_000 })
    expect(r.code, r.stderr).toBe(3)
    const all = r.stdout + r.stderr
    expect(all).not.toMatch(/^failed secrets\.db/m)
    expect(all).not.toMatch(/[\x1b\u202e]/)
    expect(r.stderr).toContain("failed " + join(folder, "x\\nfailed secrets.db: ExtractionError (corrupt): FAKE LINE.pdf"))
    expect(r.stderr).toContain("e\\x1b[31mred\\u202egnp.md")
    expect(r.stdout).toContain("x\\nfailed secrets.db")
    const json = await runBuiltCli(["ingest", folder, "--db", join(root, "forge-db2"), "--json"], {}, { timeoutMs: 60_000 })
    expect(json.code).toBe(3)
    expect(json.stdout).not.toMatch(/[\x1b\u202e\n]failed secrets/)
    const s = JSON.parse(json.stdout)
    expect(s.failures[0].source).toBe(join(folder, forged))
    expect(json.stderr).not.toMatch(/[\x1b\u202e]/)
    expect(json.stderr).not.toMatch(/^failed secrets\.db/m)
  })
})

describe("internal collections", () => {
  it("collections drop|stats refuse a manifest collection (exit 2); ingest refuses a reserved name", async () => {
    const folder = join(root, "internal")
    mkdirSync(folder)
    writeFileSync(join(folder, "a.md"), text("internal"))
    const db = join(root, "internal-db")
    expect((await runBuiltCli(["ingest", folder, "--db", db])).code).toBe(0)
    const drop = await runBuiltCli(["collections", "drop", "default__ingest", "--db", db])
    expect(drop.code).toBe(2)
    expect(drop.stderr).toMatch(/default__ingest is the internal manifest of collection default/)
    const stats = await runBuiltCli(["collections", "stats", "default__ingest", "--db", db])
    expect(stats.code).toBe(2)
    const after = await runBuiltCli(["collections", "stats", "default", "--db", db, "--json"])
    expect(JSON.parse(after.stdout)).toMatchObject({ documents: 1, completeDocuments: 1 })
    const reserved = await runBuiltCli(["ingest", folder, "--db", db, "--collection", "notes__ingest"])
    expect(reserved.code).toBe(2)
    expect(reserved.stderr).toMatch(/reserved/)
  })
})
