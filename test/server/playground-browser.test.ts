/**
 * The playground page as a person uses it, in Debian's headless Chromium driven by
 * `playwright-core` (no browser download: `/usr/bin/chromium`). The built `effect-rag serve
 * --db DIR --playground --gateway --embedder use-lite --reranker remote`, with a server key,
 * over a collection ingested from the shared fixtures into a temp dir, with a loopback chat
 * model and reranker at the HTTP edge; an `eval run --json` file made by the CLI on the same
 * collection.
 *
 * Skipped, with a message, only when `/usr/bin/chromium` is absent and `EFFECT_RAG_CI` is not
 * set (local development); `.ci/run` installs Chromium and sets it, so there it fails instead.
 * Screenshots go to `$EFFECT_RAG_SCREENSHOTS` or `<tmpdir>/effect-rag-playground-screenshots`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import type { Browser, Page } from "playwright-core"
import { sharedPath } from "../../src/internal/shared.js"
import { stem, stopWords, words } from "../../src/store/TextAnalysis.js"
import { delta } from "../pipeline/answer-fixtures.js"
import { type BuiltCli, repoRoot, runBuiltCli, spawnBuiltCli } from "../support/cli.js"

const chromiumPath = "/usr/bin/chromium"
const inCi = process.env["EFFECT_RAG_CI"] !== undefined && process.env["EFFECT_RAG_CI"] !== ""
const skip = !existsSync(chromiumPath) && !inCi
if (skip) {
  console.warn(`playground browser test skipped: ${chromiumPath} is absent (apt-get install --no-install-recommends chromium); .ci/run installs it and runs this test`)
}

const serverKey = "playground-test-key"
const shots = process.env["EFFECT_RAG_SCREENSHOTS"] ?? join(tmpdir(), "effect-rag-playground-screenshots")
const docs = sharedPath("fixtures", "docs")
const files = [join(docs, "pdf", "tracemonkey.pdf"), join(docs, "SOURCES.md")]

let root = ""
let serve: BuiltCli | undefined
let url = ""
let chat: Server | undefined
let reranked = 0
let browser: Browser | undefined
let runJson = ""
/** Released by the test: the fake model holds the end of its answer until then. */
let releaseAnswer: () => void = () => {}
const answerHeld = new Promise<void>((resolve) => (releaseAnswer = resolve))

/**
 * The chat model at the HTTP edge: streams an answer citing the prompt's sources [1] and [2]
 * and an invented [9]; the second sentence waits for {@link releaseAnswer}, so the test sees the
 * first one on the page before the answer is done.
 */
const startChat = () =>
  new Promise<string>((resolve) => {
    chat = createServer((req, res) => {
      let body = ""
      req.on("data", (d: Buffer) => (body += d.toString()))
      req.on("end", () => {
        if (req.url === "/v1/rerank") {
          // the reranker: passages that say "native" first, then the order it was given
          reranked++
          const { documents } = JSON.parse(body) as { documents: Array<string> }
          const results = documents.map((d, index) => ({ index, relevance_score: (d.match(/native/gi)?.length ?? 0) + 1 / (index + 2) }))
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ results }))
          return
        }
        if (req.url !== "/v1/chat/completions") {
          res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "no route" } }))
          return
        }
        res.writeHead(200, { "content-type": "text/event-stream" })
        const send = (e: unknown) => res.write(`data: ${JSON.stringify(e)}\n\n`)
        send(delta({ role: "assistant" }))
        send(delta({ content: "TraceMonkey records hot loops " }))
        send(delta({ content: "as traces [1]. " }))
        void answerHeld.then(() => {
          send(delta({ content: "The traces are compiled to native code [2, 9]." }))
          send(delta({}, "stop"))
          res.end("data: [DONE]\n\n")
        })
      })
    })
    chat.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(chat!.address() as AddressInfo).port}`))
  })

/** Resolves with the server's URL once the built `serve` listens. */
const listening = (cli: BuiltCli) =>
  new Promise<string>((resolve, reject) => {
    const started = Date.now()
    const poll = setInterval(() => {
      const m = /Listening on (http:\/\/[\d.]+:\d+)/.exec(cli.stdout() + cli.stderr())
      if (m) {
        clearInterval(poll)
        resolve(m[1]!)
      } else if (Date.now() - started > 90_000) {
        clearInterval(poll)
        reject(new Error(`serve did not start: ${cli.stdout()}${cli.stderr()}`))
      }
    }, 100)
    void cli.done.then((r) => {
      clearInterval(poll)
      reject(new Error(`serve exited with ${r.code}: ${r.stdout}${r.stderr}`))
    })
  })

beforeAll(async () => {
  if (skip) return
  expect(existsSync(chromiumPath), `${chromiumPath} is missing: .ci/run installs chromium (EFFECT_RAG_CI is set)`).toBe(true)
  expect(existsSync(join(repoRoot, "dist", "playground", "app.js")), "the playground script is not built: npm run build").toBe(true)
  mkdirSync(shots, { recursive: true })
  root = mkdtempSync(join(tmpdir(), "effect-rag-playground-"))
  const db = join(root, "db")
  const at = ["--db", db, "--collection", "fixtures"]
  const [ingested, chatUrl] = await Promise.all([
    runBuiltCli(["ingest", ...files, ...at, "--embedder", "use-lite"], {}, { timeoutMs: 240_000 }),
    startChat()
  ])
  expect(ingested.code, ingested.stderr).toBe(0)
  serve = spawnBuiltCli(
    ["serve", "--port", "0", "--db", db, "--playground", "--gateway", "--embedder", "use-lite", "--reranker", "remote"],
    {
      EFFECT_RAG_SERVER_KEY: serverKey,
      EFFECT_RAG_BASE_URL: chatUrl,
      EFFECT_RAG_API_KEY: "upstream-key",
      EFFECT_RAG_CHAT_MODEL: "fake-chat",
      EFFECT_RAG_RERANK_MODEL: "fake-rerank"
    },
    { timeoutMs: 300_000 }
  )
  runJson = join(root, "run.json")
  const evaluated = (async () => {
    const built = await runBuiltCli(["eval", "build", ...at, "--out", join(root, "set"), "--size", "8"])
    expect(built.code, built.stderr).toBe(0)
    const run = await runBuiltCli(
      ["eval", "run", ...at, "--set", join(root, "set"), "--modes", "fulltext,hybrid,vector", "--embedder", "use-lite", "--resamples", "200", "--json", runJson],
      {},
      { timeoutMs: 180_000 }
    )
    expect(run.code, run.stderr).toBe(0)
  })()
  const { chromium } = await import("playwright-core")
  const [address, launched] = await Promise.all([
    listening(serve),
    chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] }),
    evaluated
  ])
  url = address
  browser = launched
}, 300_000)

afterAll(async () => {
  releaseAnswer()
  await browser?.close()
  serve?.kill("SIGTERM")
  await serve?.done
  chat?.close()
  if (root !== "") rmSync(root, { recursive: true, force: true })
})

/** The words of a passage the analyser gives one of `terms` (what the page must mark). */
const expectedMarks = (text: string, terms: ReadonlySet<string>) =>
  words(text).filter((w) => w.length <= 40 && !stopWords.has(w) && terms.has(stem(w)))

const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, name), fullPage: true })

describe.skipIf(skip)("the playground page in Chromium", () => {
  it("asks for the key, searches three modes side by side (one reranked) with the stemmed terms marked, streams an answer whose citations lead to their passages, shows an eval run", async () => {
    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } })
    const failed: Array<string> = []
    page.on("pageerror", (e) => failed.push(e.message))
    page.on("requestfailed", (r) => failed.push(`${r.url()}: ${r.failure()?.errorText}`))
    await page.goto(url)

    // the server has a key: the page asks for it, then lists the collections
    await page.locator("#key-form").waitFor({ state: "visible" })
    await expect.poll(() => page.locator("#status").textContent()).toContain("needs an API key")
    await page.fill("#key", "not-the-key")
    await page.click("#key-form button")
    await expect.poll(() => page.locator("#status").textContent()).toBe("the server refused this key: type another")
    expect(await page.locator("#key-form").isVisible()).toBe(true)
    await page.fill("#key", serverKey)
    await page.click("#key-form button")
    await expect.poll(() => page.locator("#collection option").allTextContents()).toEqual(["fixtures"])
    await expect.poll(() => page.locator("#modes label").allTextContents()).toEqual(["fulltext", "vector", "hybrid", "hybrid + rerank"])
    expect(await page.locator("#modes input:checked").evaluateAll((boxes) => boxes.map((b) => (b as unknown as { value: string }).value)))
      .toEqual(["fulltext", "hybrid", "hybrid + rerank"])

    // a query: one column per mode, hits with score, source and page, the analysed terms marked
    await page.fill("#query", "compiling traces")
    await page.click("#search")
    await page.locator(".column").nth(2).waitFor()
    expect(await page.locator(".column h3").allTextContents()).toEqual(["fulltext · 5 hits", "hybrid · 5 hits", "hybrid + rerank · 5 hits"])
    await expect.poll(() => page.locator("#terms").textContent()).toBe("analysed terms: compil, trace")
    const terms = new Set(["compil", "trace"])
    for (const mode of ["fulltext", "hybrid", "hybrid + rerank"]) {
      const first = page.locator(`.column[data-mode="${mode}"] .hit`).first()
      expect(await first.locator(".score").textContent()).toMatch(/^\d+\.\d{3}$/)
      expect(files.map((f) => basename(f))).toContain(basename((await first.locator(".source").textContent())!))
      const passage = (await first.locator(".passage").textContent())!
      const marks = await first.locator(".passage mark").allTextContents()
      // every word the analyser stems to a query term is marked, and nothing else
      expect(marks.map((m) => m.toLowerCase())).toEqual(expectedMarks(passage, terms))
      expect(marks.length).toBeGreaterThan(0)
    }
    // the reranker's order: the passages that say "native" first
    expect(reranked).toBeGreaterThan(0)
    expect(await page.locator(`.column[data-mode="hybrid + rerank"] .hit .passage`).first().textContent()).toMatch(/native/i)
    const fulltextFirst = page.locator(`.column[data-mode="fulltext"] .hit`).first()
    expect(await fulltextFirst.locator(".source").textContent()).toContain("tracemonkey.pdf")
    expect(await fulltextFirst.locator(".place").textContent()).toMatch(/^page \d+$/)
    // stemmed, not a substring match: other forms than the query's words are marked too
    const allMarks = new Set((await page.locator(".column mark").allTextContents()).map((m) => m.toLowerCase()))
    expect([...allMarks].some((m) => m !== "compiling" && m !== "traces")).toBe(true)
    await shot(page, "1-search.png")

    // ask: the answer streams (its first sentence shows while the model holds the rest), then
    // its citations link to the numbered sources
    await page.click("#ask")
    await expect.poll(() => page.locator("#answer").textContent()).toBe("TraceMonkey records hot loops as traces [1]. ")
    expect(await page.locator("#status").textContent()).toBe("asking…")
    expect(await page.locator("#sources .hit").count()).toBeGreaterThanOrEqual(2)
    await page.locator("#ask-panel").screenshot({ path: join(shots, "2-streaming.png") })
    releaseAnswer()
    await expect.poll(() => page.locator("#status").textContent()).toBe("answered")
    expect(await page.locator("#answer").textContent()).toBe("TraceMonkey records hot loops as traces [1]. The traces are compiled to native code [2, 9].")
    expect(await page.locator("#answer a.cite").allTextContents()).toEqual(["1", "2"])
    expect(await page.locator("#answer .unknown").allTextContents()).toEqual(["9"])
    expect(await page.locator("#answer-meta").textContent()).toBe("fake-chat: 2 source(s) cited of 6; cited numbers with no source: 9")
    // the question's terms are marked in the sources too
    expect(await page.locator("#sources mark").count()).toBeGreaterThan(0)

    // a click on citation 2: its passage is marked and scrolled into view
    await page.locator("#answer a.cite", { hasText: "2" }).click()
    const source2 = page.locator("#source-2")
    await expect.poll(() => source2.getAttribute("class")).toBe("hit marked")
    expect(await page.locator("#sources .hit.marked").count()).toBe(1)
    await expect.poll(() => source2.evaluate((e) => {
      const r = e.getBoundingClientRect()
      return r.top >= 0 && r.bottom <= (globalThis as unknown as { innerHeight: number }).innerHeight
    })).toBe(true)
    const passage2 = (await source2.locator(".passage").textContent())!
    expect((await source2.locator("mark").allTextContents()).map((m) => m.toLowerCase())).toEqual(expectedMarks(passage2, terms))
    await page.screenshot({ path: join(shots, "3-citation.png") })
    await page.locator("#answer a.cite", { hasText: "1" }).click()
    await expect.poll(() => page.locator("#sources .hit.marked").getAttribute("id")).toBe("source-1")

    // an eval run from its file: the table with intervals, the differences, a plot per metric
    const report = JSON.parse(readFileSync(runJson, "utf8")) as { settings: Array<{ name: string; summary: Record<string, unknown> }> }
    await page.setInputFiles("#eval-file", runJson)
    await page.locator("#eval-table").waitFor()
    expect(await page.locator("#eval-table tr[data-setting]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-setting"))))
      .toEqual(report.settings.map((s) => s.name))
    const hybridRow = await page.locator(`#eval-table tr[data-setting="hybrid"] td`).allTextContents()
    expect(hybridRow.filter((c) => /^\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]$/.test(c))).toHaveLength(3)
    expect(report.settings.map((s) => s.name)).toEqual(["fulltext", "hybrid", "vector"])
    expect(await page.locator("#eval-diffs tr").count()).toBe(3)
    const metrics = Object.keys(report.settings[0]!.summary).filter((k) => !k.endsWith("_ms"))
    expect(await page.locator(".plot").evaluateAll((fs) => fs.map((f) => f.getAttribute("data-metric")))).toEqual(metrics)
    for (const m of metrics) {
      expect(await page.locator(`.plot[data-metric="${m}"] rect.bar`).count()).toBe(3)
      expect(await page.locator(`.plot[data-metric="${m}"] line.interval`).count()).toBe(3)
    }
    await page.locator("#eval-panel").screenshot({ path: join(shots, "4-eval.png") })

    expect(failed).toEqual([])
    await page.close()
  }, 120_000)
})
