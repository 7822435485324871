/**
 * The built command line (`bin/effect-rag.js` over `dist/`, as `npx effect-rag` runs it) on
 * what a new user tries first: strict options, unusable paths, Ctrl-C in the middle of an
 * ingest, HTML fragments and documents without text, empty queries, `--password`, `--help`.
 * Every case runs a real process; nothing is timed (speed lives in `npm run bench:startup`).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { sharedPath } from "../../src/internal/shared.js"
import { writeCorpus } from "../pipeline/fixtures/ingest-helpers.js"
import { runBuiltCli, spawnBuiltCli } from "../support/cli.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-newcomer-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** A fresh working folder (so a default `./.effect-rag/db` would show up in it). */
const workdir = (name: string): string => {
  const dir = join(root, name)
  mkdirSync(dir, { recursive: true })
  return dir
}

/** The one-line error contract: one line on stderr, no stack frame. */
const oneLine = (stderr: string) => {
  const lines = stderr.trim().split("\n")
  expect(lines).toHaveLength(1)
  expect(stderr).not.toMatch(/^\s+at /m)
}

describe("effect-rag, as a newcomer uses it", () => {
  it("refuses an unknown or misplaced option with exit 2, naming it, before reading or writing anything", async () => {
    const cwd = workdir("strict")
    writeFileSync(join(cwd, "a.txt"), "some text to ingest")
    const unknown = await runBuiltCli(["ingest", "--verbose", "--db", "db", "a.txt"], {}, { cwd })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown option --verbose for effect-rag ingest")
    oneLine(unknown.stderr)
    expect(existsSync(join(cwd, "db"))).toBe(false)
    expect(existsSync(join(cwd, ".effect-rag"))).toBe(false)

    const query = await runBuiltCli(["query", "--bogus", "--db", "X", "hi"], {}, { cwd })
    expect(query.code).toBe(2)
    expect(query.stderr).toContain("--bogus")
    expect(query.stderr).not.toContain("'--db'")

    const before = await runBuiltCli(["--db", "db", "ingest", "a.txt"], {}, { cwd })
    expect(before.code).toBe(2)
    expect(before.stderr).toContain("--db must come after a command name")

    const noValue = await runBuiltCli(["ingest", "a.txt", "--db"], {}, { cwd })
    expect(noValue.code).toBe(2)
    expect(noValue.stderr).toContain("--db needs a value")
    expect(existsSync(join(cwd, ".effect-rag"))).toBe(false)

    // options after the positional arguments are fine
    const after = await runBuiltCli(["ingest", "a.txt", "--db", "db", "--json"], {}, { cwd })
    expect(after.code).toBe(0)
    expect(JSON.parse(after.stdout)).toMatchObject({ ingested: 1, failed: 0 })
  }, 120_000)

  it("checks --db, --config and the sources up front: one line, exit 2, no loop, nothing created", async () => {
    const cwd = workdir("paths")
    writeFileSync(join(cwd, "a.txt"), "some text")
    writeFileSync(join(cwd, "file"), "not a folder")
    if (existsSync("/proc/self")) {
      // a recursive mkdir spins for ever on /proc/x
      const proc = await runBuiltCli(["ingest", "--db", "/proc/x", "a.txt"], {}, { cwd, timeoutMs: 60_000 })
      expect(proc.code).toBe(2)
      expect(proc.stderr).toContain("--db /proc/x: cannot create /proc/x")
      oneLine(proc.stderr)
    }
    const underFile = await runBuiltCli(["ingest", "--db", "file/sub", "a.txt"], {}, { cwd })
    expect(underFile.code).toBe(2)
    expect(underFile.stderr).toContain("is not a folder")
    oneLine(underFile.stderr)

    const missing = await runBuiltCli(["ingest", "--db", "db", "a.txt", "gone.pdf"], {}, { cwd })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("no such file or folder: gone.pdf")
    expect(existsSync(join(cwd, "db"))).toBe(false)

    const config = await runBuiltCli(["query", "--config", "nope.json", "text"], {}, { cwd })
    expect(config.code).toBe(2)
    expect(config.stderr).toContain("--config nope.json: no such file")

    // reading commands never create a database
    const list = await runBuiltCli(["collections", "list", "--db", "nowhere"], {}, { cwd })
    expect(list.code).toBe(1)
    expect(list.stderr).toContain("no database at")
    expect(existsSync(join(cwd, "nowhere"))).toBe(false)

    // an empty folder is not a success
    mkdirSync(join(cwd, "empty"))
    const empty = await runBuiltCli(["ingest", "--db", "db", "empty"], {}, { cwd })
    expect(empty.code).toBe(1)
    expect(empty.stderr).toContain("nothing to ingest")
  }, 120_000)

  it("SIGINT in the middle of an ingest: summary of what was done, exit 130; a rerun finishes", async () => {
    const cwd = workdir("sigint")
    // large enough that the run is still going when its first batch is stored (about a second in)
    writeCorpus(join(cwd, "docs"), 600, 60)
    const run = spawnBuiltCli(["ingest", "docs", "--db", "db", "--concurrency", "1"], {}, { cwd })
    // plain progress lines (not a terminal): wait for the first stored document
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (/^ingested /m.test(run.stderr()) || run.stderr().includes("failed")) {
          clearInterval(poll)
          resolve()
        }
      }, 20)
      void run.done.then(() => {
        clearInterval(poll)
        resolve()
      })
    })
    run.kill("SIGINT")
    const stopped = await run.done
    expect(stopped.code).toBe(130)
    expect(stopped.stderr).toMatch(/stopped by SIGINT: \d+ of \d+ documents done \(\d+ ingested, 0 unchanged, 0 failed/)
    expect(stopped.stderr).not.toContain("EPIPE")

    const rerun = await runBuiltCli(["ingest", "docs", "--db", "db", "--json"], {}, { cwd, timeoutMs: 180_000 })
    expect(rerun.code).toBe(0)
    const summary = JSON.parse(rerun.stdout)
    expect(summary.failed).toBe(0)
    expect(summary.ingested + summary.skipped).toBe(summary.documents)
    expect(summary.skipped).toBeGreaterThan(0)
  }, 240_000)

  it("HTML of any shape yields its text; a document with no text is a typed 'empty' failure, never a success", async () => {
    const cwd = workdir("html")
    writeFileSync(join(cwd, "fragment.html"), "<div><p>Hello world fragment text one.</p></div>")
    const email = `<div dir="ltr"><div>Bonjour Équipe,</div>${
      Array.from({ length: 120 }, (_, i) => `<div><p>Ligne ${i}: les résultats trimestriels sont prêts.</p></div>`).join("")
    }<div>Cordialement, Zoë</div></div>`
    writeFileSync(join(cwd, "email.html"), email)
    writeFileSync(
      join(cwd, "legacy.html"),
      Buffer.from('<html><head><meta charset="windows-1252"></head><body><p>Cr\xe8me br\xfbl\xe9e \xe0 la carte.</p></body></html>', "latin1")
    )
    writeFileSync(join(cwd, "page.html"), "<!DOCTYPE html><html><head><title>T</title></head><body><nav>Home</nav><article><h1>Heading</h1><p>Full page paragraph.</p></article></body></html>")
    writeFileSync(join(cwd, "blank.html"), "<html><body><script>only()</script><style>p{}</style></body></html>")

    const extracted = await runBuiltCli(["extract", "--json", "fragment.html", "email.html", "legacy.html", "page.html", "blank.html"], {}, { cwd })
    expect(extracted.code).toBe(1)
    const [fragment, mail, legacy, page, blank] = extracted.stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(fragment).toMatchObject({ status: true, content: "Hello world fragment text one." })
    expect(Buffer.byteLength(email)).toBeGreaterThan(5_000)
    expect(mail.content).toContain("Bonjour Équipe,")
    expect(mail.content).toContain("Ligne 119: les résultats trimestriels sont prêts.")
    expect(mail.content).toContain("Cordialement, Zoë")
    expect(legacy.content).toBe("Crème brûlée à la carte.")
    expect(page.content).toContain("Full page paragraph.")
    expect(page.content).toMatch(/^Home$/m)
    expect(blank).toMatchObject({ status: false, type: "error" })
    expect(blank.error).toContain("yields no text")

    const ingest = await runBuiltCli(["ingest", "--db", "db", "--json", "fragment.html", "blank.html"], {}, { cwd })
    expect(ingest.code).toBe(3)
    const summary = JSON.parse(ingest.stdout)
    expect(summary).toMatchObject({ ingested: 1, failed: 1 })
    expect(summary.failures[0].error).toMatchObject({ _tag: "ExtractionError", reason: "empty" })
    const hits = await runBuiltCli(["query", "--db", "db", "--json", "fragment text"], {}, { cwd })
    expect(JSON.parse(hits.stdout).hits[0].text).toContain("Hello world fragment text one.")
  }, 120_000)

  it("an empty query or question exits 2; ask never calls the chat API for it", async () => {
    const cwd = workdir("blank-query")
    let requests = 0
    const server = createServer((_, res) => {
      requests++
      res.writeHead(500).end()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const query = await runBuiltCli(["query", ""], {}, { cwd })
      expect(query.code).toBe(2)
      expect(query.stderr).toContain("the query is empty")
      const ask = await runBuiltCli(["ask", "  ", "--model", "m"], { EFFECT_RAG_BASE_URL: baseUrl, EFFECT_RAG_API_KEY: "k" }, { cwd })
      expect(ask.code).toBe(2)
      expect(ask.stderr).toContain("the question is empty")
      expect(requests).toBe(0)
    } finally {
      server.close()
    }
  }, 60_000)

  it("ingest --password opens encrypted documents; without it they fail with password_required", async () => {
    const cwd = workdir("password")
    mkdirSync(join(cwd, "docs"))
    copyFileSync(sharedPath("fixtures", "docs", "pdf", "issue6010_1-encrypted.pdf"), join(cwd, "docs", "locked.pdf"))
    const without = await runBuiltCli(["ingest", "--db", "db", "--json", "docs"], {}, { cwd })
    expect(without.code).toBe(1)
    expect(JSON.parse(without.stdout).failures[0].error).toMatchObject({ reason: "password_required" })
    const withPassword = await runBuiltCli(["ingest", "--db", "db", "--json", "--password", "abc", "docs"], {}, { cwd })
    expect(withPassword.code).toBe(0)
    expect(JSON.parse(withPassword.stdout)).toMatchObject({ ingested: 1, failed: 0 })
    expect(withPassword.stdout + withPassword.stderr).not.toContain("abc")
    const hit = await runBuiltCli(["query", "--db", "db", "--json", "Issue 6010"], {}, { cwd })
    expect(JSON.parse(hit.stdout).hits.length).toBeGreaterThan(0)
  }, 120_000)

  it("--help and --version: `effect-rag ingest`, repeatable options optional, no generic type sentences", async () => {
    const help = await runBuiltCli(["ingest", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("effect-rag ingest [--site URL]... [--max-depth N] [--include GLOB]...")
    expect(help.stdout).toContain("--password PASSWORD")
    expect(help.stdout).not.toContain("A user-defined piece of text")
    expect(help.stdout).not.toContain("$ ingest")
    expect(help.stdout).not.toMatch(/\x1b\[/)
    const top = await runBuiltCli(["--help"])
    expect(top.stdout).toContain("EXIT STATUS")
    const version = await runBuiltCli(["--version"])
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
  }, 60_000)

  it("web errors in command-line terms: --allow-private, and an unreachable site is not a robots.txt refusal", async () => {
    const server = createServer((_, res) => res.end("<p>hi</p>"))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const port = (server.address() as AddressInfo).port
    server.close()
    const refused = await runBuiltCli(["scrape", `http://127.0.0.1:${port}/`])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("--allow-private")
    expect(refused.stderr).not.toContain("allowPrivate")
    const unreachable = await runBuiltCli(["crawl", "--allow-private", `http://127.0.0.1:${port}/`])
    expect(unreachable.code).toBe(1)
    expect(unreachable.stderr).toContain("cannot reach")
    expect(unreachable.stderr).not.toContain("robots.txt disallows")
  }, 60_000)
})
