/**
 * Access lists through the real command line (from source, in child processes): `ingest
 * --access`, `query --as/--group`, and `serve --db --keys` with a keys file.
 */
import { describe, expect, it } from "vitest"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { runCli, startServe } from "../support/cli.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-cli-access-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const write = (folder: string, name: string, text: string) => {
  mkdirSync(join(root, folder), { recursive: true })
  writeFileSync(join(root, folder, name), text)
}

const hits = (stdout: string): Array<string> =>
  (JSON.parse(stdout) as { hits: Array<{ source: string }> }).hits.map((h) => h.source)

describe("effect-rag: access lists on the command line", () => {
  it("ingest --access, query --as / --group, serve --keys", async () => {
    write("a", "alpha.md", "# Alpha\n\nThe alpha team keeps the harbour lighthouse lamp lit.\n")
    write("b", "beta.md", "# Beta\n\nThe beta team keeps the harbour lighthouse secret codeword zanzibar.\n")
    write("p", "open.md", "# Open\n\nThe harbour lighthouse is open to visitors on Sundays.\n")
    const db = join(root, "db")
    const at = ["--db", db, "--collection", "docs"]
    const ingests = [
      await runCli(["ingest", join(root, "a"), ...at, "--access", "tenant-a", "--json"]),
      await runCli(["ingest", join(root, "b"), ...at, "--access", "tenant-b", "--access", "auditors", "--json"]),
      await runCli(["ingest", join(root, "p"), ...at, "--access", "*", "--json"])
    ]
    for (const r of ingests) expect(r.code, r.stderr).toBe(0)

    const [operator, asA, asAuditor, groupOnly, badAccess] = await Promise.all([
      runCli(["query", "harbour lighthouse zanzibar", ...at, "--json"]),
      runCli(["query", "harbour lighthouse zanzibar", ...at, "--json", "--as", "tenant-a"]),
      runCli(["query", "harbour lighthouse zanzibar", ...at, "--json", "--as", "carol", "--group", "auditors"]),
      runCli(["query", "harbour", ...at, "--group", "auditors"]),
      runCli(["ingest", join(root, "p"), ...at, "--access", "bad\u0001entry"])
    ])
    expect(operator.code, operator.stderr).toBe(0)
    expect(hits(operator.stdout).length).toBe(3)
    expect(hits(operator.stdout)[0]).toContain("beta.md")
    expect(asA.code, asA.stderr).toBe(0)
    expect(hits(asA.stdout).map((s) => s.split("/").pop()).sort()).toEqual(["alpha.md", "open.md"])
    expect(asA.stdout).not.toContain("codeword")
    expect(hits(asAuditor.stdout).map((s) => s.split("/").pop()).sort()).toEqual(["beta.md", "open.md"])
    expect(groupOnly.code).toBe(2)
    expect(groupOnly.stderr).toContain("--group needs --as")
    expect(badAccess.code).toBe(2)
    expect(badAccess.stderr).toContain("--access")

    const keys = join(root, "keys.json")
    writeFileSync(keys, JSON.stringify({
      keys: [
        { key: "sk-cli-tenant-a-0123456789", principal: { id: "tenant-a" }, read: ["docs"] },
        { key: "sk-cli-nobody-0123456789", principal: { id: "nobody" } }
      ]
    }))
    const server = await startServe(["--db", db, "--keys", keys])
    try {
      const query = (key: string | undefined) =>
        fetch(`${server.url}/v1/collections/docs/query`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
          body: JSON.stringify({ query: "harbour lighthouse zanzibar" })
        })
      expect((await query(undefined)).status).toBe(401)
      expect((await query("sk-cli-nobody-0123456789")).status).toBe(403)
      const a = await query("sk-cli-tenant-a-0123456789")
      expect(a.status).toBe(200)
      const body = await a.text()
      expect(body).not.toContain("codeword")
      expect((JSON.parse(body) as { hits: Array<unknown> }).hits.length).toBe(2)
      expect(server.output()).toContain("key required (2 key(s)")
      expect(server.output()).not.toContain("sk-cli-")
    } finally {
      await server.stop()
    }
  }, 120_000)
})
