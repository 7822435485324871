/**
 * `effect-rag eval build` and `eval run` through the real CLI in child processes, on shared
 * fixture documents ingested into a temp `--db` (with the offline USE-lite embedder, so that
 * hybrid runs), the model path against a loopback chat server, and `--baseline` against a
 * planted regression (a collection that lost documents).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Eval from "../../src/bench/Eval.js"
import * as AnswerCheck from "../../src/pipeline/AnswerCheck.js"
import { sharedPath } from "../../src/internal/shared.js"
import { runCli } from "../support/cli.js"
import { delta, sse } from "../pipeline/answer-fixtures.js"
import { startServer, testKey } from "../support/server.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-eval-cli-"))
const db = join(root, "db")
const docs = sharedPath("fixtures", "docs")
const four = ["docx/IllustrativeCases.docx", "pptx/SampleShow.pptx", "SOURCES.md", "xml/jn-encoding-iso-8859-1.rss"].map((f) => join(docs, f))

beforeAll(async () => {
  const [full, partial] = await Promise.all([
    runCli(["ingest", ...four, "--db", db, "--collection", "fixtures", "--embedder", "use-lite"], {}, { timeoutMs: 240_000 }),
    // the planted regression: the same documents but two, full text only
    runCli(["ingest", ...four.slice(0, 2), "--db", db, "--collection", "partial"], {}, { timeoutMs: 240_000 })
  ])
  expect(full.code, full.stderr).toBe(0)
  expect(partial.code, partial.stderr).toBe(0)
}, 300_000)
afterAll(() => rmSync(root, { recursive: true, force: true }))

const at = ["--db", db, "--collection", "fixtures"]
const interval = /\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]/

describe("effect-rag eval", () => {
  it.live("build with no model writes a known-item BEIR set; run compares fulltext and hybrid with intervals; --baseline gates", () =>
    Effect.gen(function*() {
      const set = join(root, "set")
      const built = yield* Effect.promise(() => runCli(["eval", "build", ...at, "--out", set, "--size", "12", "--seed", "3"]))
      expect(built.code, built.stderr).toBe(0)
      expect(built.stdout).toContain("wrote 12 known-item queries from 12 chunks (4 documents")
      expect(built.stdout).toContain("easier than real questions")
      for (const f of ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "manifest.json"]) expect(existsSync(join(set, f)), f).toBe(true)
      const manifest = JSON.parse(readFileSync(join(set, "manifest.json"), "utf8")) as Eval.Manifest
      expect(manifest).toMatchObject({ method: "known-item", model: null, seed: 3, size: 12, queries: 12, documents: 4, collection: "fixtures" })
      const corpus = readFileSync(join(set, "corpus.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Eval.SetDocument)
      expect(corpus).toHaveLength(4)
      const qrels = readFileSync(join(set, "qrels", "test.tsv"), "utf8").trim().split("\n")
      expect(qrels[0]).toBe("query-id\tcorpus-id\tscore")
      expect(qrels).toHaveLength(13)
      expect(qrels.slice(1).every((l) => corpus.some((d) => l.endsWith(`\t${d._id}\t1`)))).toBe(true)

      const runJson = join(root, "run.json")
      const run = yield* Effect.promise(() =>
        runCli(["eval", "run", ...at, "--set", set, "--modes", "fulltext,hybrid", "--embedder", "use-lite", "--resamples", "500", "--json", runJson], {}, { timeoutMs: 180_000 })
      )
      expect(run.code, run.stderr).toBe(0)
      const lines = run.stdout.split("\n")
      expect(lines[0]).toContain("12 queries (known-item); means with 95 % intervals (paired bootstrap, 500 resamples, seed 1)")
      expect(lines[1]).toMatch(/^setting +nDCG@10 +Recall@100 +MRR@10 +p50 ms +p95 ms$/)
      for (const mode of ["fulltext", "hybrid"]) {
        const line = lines.find((l) => l.startsWith(`${mode} `))!
        expect(line.match(new RegExp(interval, "g"))?.length, line).toBe(3)
      }
      expect(run.stdout).toContain("difference with fulltext (* significant: the 95 % interval excludes 0)")
      expect(run.stdout).toMatch(/^hybrid +[+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]/m)
      const report = JSON.parse(readFileSync(runJson, "utf8")) as Eval.RunReport
      expect(report.settings.map((s) => s.name)).toEqual(["fulltext", "hybrid"])
      expect(report.settings[1]!.mode).toBe("hybrid")
      expect(report.settings[0]!.perQuery["ndcg@10"]).toHaveLength(12)

      const [same, regressed, planted] = yield* Effect.promise(() =>
        Promise.all([
          runCli(["eval", "run", ...at, "--set", set, "--modes", "fulltext", "--resamples", "500", "--baseline", runJson]),
          runCli(["eval", "run", "--db", db, "--collections", "partial", "--set", set, "--modes", "fulltext", "--resamples", "500", "--baseline", runJson]),
          runCli(["eval", "run", ...at, "--set", set, "--modes", "fulltext", "--baseline", join(root, "missing.json")])
        ])
      )
      expect(same.code, same.stderr).toBe(0)
      expect(same.stdout).toContain("compared with the baseline")
      expect(same.stdout).not.toContain("REGRESSION")
      expect(regressed.code, regressed.stdout + regressed.stderr).toBe(4)
      expect(regressed.stdout).toMatch(/^fulltext +nDCG@10 .* REGRESSION$/m)
      expect(regressed.stderr).toContain("significant regression(s) against the baseline")
      expect(planted.code).toBe(2)
      expect(planted.stderr).toContain("--baseline")
    }), 600_000)

  it.scopedLive("build with a chat model: the shipped prompt, copied questions rejected, the manifest says how", () =>
    Effect.gen(function*() {
      let n = 0
      const server = yield* startServer((req, res) => {
        if (req.path !== "/v1/chat/completions") return { status: 404, json: { error: { message: "no route" } } }
        const body = req.json as { stream?: boolean; messages: Array<{ role: string; content: string }> }
        if (body.stream === true) {
          // ask (eval run --answers): the text of source [1] cited (supported), then a claim no source holds
          const lines = body.messages.find((m) => m.role === "user")!.content.split("\n")
          const first = lines[lines.findIndex((l) => l.startsWith("[1] ")) + 1] ?? ""
          sse(res, [delta({ content: `${first.replace(/[.?!]+$/, "")} [1]. ` }), delta({ content: "Purple dragons guard the treasury [1]." }), delta({}, "stop")])
          return
        }
        if (body.messages[0]?.content === AnswerCheck.judgePrompt) {
          // the judge (eval run --answers --judge): the dragons are not in the passage
          const verdict = body.messages[1]!.content.includes("Purple dragons") ? "UNSUPPORTED" : "SUPPORTED"
          return { json: { choices: [{ index: 0, message: { role: "assistant", content: verdict }, finish_reason: "stop" }] } }
        }
        const passage = body.messages[1]!.content.split("Passage:\n")[1] ?? ""
        n++
        // a copy of the passage's first words (rejected), then a question in other words (kept)
        const copy = passage.split(/\s+/).slice(0, 12).join(" ")
        return {
          json: {
            choices: [{ index: 0, message: { role: "assistant", content: `1. ${copy}?\n2. Which topic number ${n} does this concern?` }, finish_reason: "stop" }]
          }
        }
      })
      const env = { EFFECT_RAG_BASE_URL: server.url, EFFECT_RAG_API_KEY: testKey, EFFECT_RAG_CHAT_MODEL: "chat-1" }
      const set = join(root, "generated")
      const [built, noModel] = yield* Effect.promise(() =>
        Promise.all([
          runCli(["eval", "build", ...at, "--out", set, "--size", "5"], env),
          runCli(["eval", "build", ...at, "--out", join(root, "none"), "--method", "generated"])
        ])
      )
      expect(built.code, built.stderr).toBe(0)
      expect(built.stdout).toContain("wrote 5 generated queries from 5 chunks")
      expect(built.stdout).toContain(`model chat-1, prompt ${Eval.promptVersion}, seed 1; rejected: 5 overlap`)
      const manifest = JSON.parse(readFileSync(join(set, "manifest.json"), "utf8")) as Eval.Manifest
      expect(manifest).toMatchObject({ method: "generated", model: "chat-1", promptVersion: Eval.promptVersion, queries: 5, rejected: { overlap: 5 } })
      const queries = readFileSync(join(set, "queries.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Eval.SetQuery)
      expect(queries.every((q) => /^Which topic number \d+ does this concern\?$/.test(q.text))).toBe(true)
      expect(server.received).toHaveLength(5)
      for (const r of [...server.received]) {
        const body = r.json as { model: string; messages: Array<{ role: string; content: string }> }
        expect(body.model).toBe("chat-1")
        expect(body.messages[0]).toEqual({ role: "system", content: Eval.questionPrompt })
        expect(r.headers["authorization"]).toBe(`Bearer ${testKey}`)
      }
      expect(noModel.code).toBe(2)
      expect(noModel.stderr).toContain("needs a chat model")
      expect(built.stdout + built.stderr).not.toContain(testKey)

      // --answers: the first 3 questions asked through the same server, scored against their citations
      const [answered, judged] = yield* Effect.promise(() =>
        Promise.all([
          runCli(["eval", "run", ...at, "--set", set, "--modes", "fulltext", "--answers", "3", "--resamples", "200", "--json", join(root, "answers.json")], env),
          runCli(["eval", "run", ...at, "--set", set, "--modes", "fulltext", "--answers", "2", "--judge", "--resamples", "200"], env)
        ])
      )
      expect(answered.code, answered.stderr).toBe(0)
      expect(answered.stdout).toContain("answers by chat-1 (fulltext on fixtures): citation precision 0.500 [0.500, 0.500] over 3 of 3 answers with citations; 3 cited sentence(s) supported, 3 unsupported, 0 without citation")
      const saved = JSON.parse(readFileSync(join(root, "answers.json"), "utf8")) as { citations: Eval.CitationReport }
      expect(saved.citations).toMatchObject({ questions: 3, supported: 3, unsupported: 3 })
      expect(server.received.filter((r) => (r.json as { stream?: boolean }).stream === true)).toHaveLength(5)
      // --judge: the same answers judged by the model, one call per cited sentence
      expect(judged.code, judged.stderr).toBe(0)
      expect(judged.stdout).toContain("citation precision (judged by the chat model) 0.500 [0.500, 0.500] over 2 of 2 answers with citations; 2 cited sentence(s) supported, 2 unsupported")
      expect(server.received.filter((r) => (r.json as { messages: Array<{ content: string }> }).messages[0]?.content === AnswerCheck.judgePrompt)).toHaveLength(4)
    }), 120_000)
})
