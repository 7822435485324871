/**
 * `effect-rag query` and `effect-rag ask` through the real CLI in a child process, on a LanceDB
 * collection in a temp `--db`, with `ask` against a loopback chat server.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import type * as Answer from "../../src/pipeline/Answer.js"
import * as AnswerCheck from "../../src/pipeline/AnswerCheck.js"
import { runCli } from "../support/cli.js"
import { startServer, testKey } from "../support/server.js"
import { chatHandler, fillCollection } from "./answer-fixtures.js"

const root = mkdtempSync(join(tmpdir(), "effect-rag-answer-cli-"))
const db = join(root, "db")
beforeAll(() => Effect.runPromise(fillCollection(db)))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const at = ["--db", db, "--collection", "docs"]

describe("effect-rag query / ask", () => {
  it.live("query --json prints cited hits; filters apply; text output and errors", () =>
    Effect.gen(function*() {
      const [json, text, badFilter, noDb] = yield* Effect.promise(() =>
        Promise.all([
          runCli(["query", "Fresnel lens lighthouse", ...at, "--json", "--limit", "3", "--filter", "source=guides/lighthouse.md"]),
          runCli(["query", "harbour dredged", ...at]),
          runCli(["query", "lens", ...at, "--filter", "lang=en"]),
          runCli(["query", "lens", "--db", join(root, "missing"), "--collection", "docs"])
        ])
      )
      expect(json.code).toBe(0)
      const result = JSON.parse(json.stdout) as Answer.QueryResult & { db: string }
      expect(result.db).toBe(db)
      expect(result.mode).toBe("fulltext")
      expect(result.hits.length).toBe(2)
      expect(result.hits.every((h) => h.source === "guides/lighthouse.md")).toBe(true)
      expect(result.hits[0]).toMatchObject({ n: 1, page: 1, chunk: 0, title: "Lighthouse optics" })

      expect(text.code).toBe(0)
      expect(text.stdout).toMatch(/^\[1\] \d+\.\d{3} {2}reports\/harbour\.pdf, page 2, chunk 1 {2}Harbour history$/m)
      expect(text.stdout).toContain("The harbour was dredged in 1910")

      expect(badFilter.code).toBe(1)
      expect(badFilter.stderr).toContain("InvalidFilter")
      expect(noDb.code).toBe(1)
      expect(noDb.stderr).toContain("no database at")
    }))

  it.scopedLive("ask answers through the loopback chat server with citations; no model exits 1 with the hint", () =>
    Effect.gen(function*() {
      const server = yield* startServer(chatHandler)
      const env = { EFFECT_RAG_BASE_URL: server.url, EFFECT_RAG_API_KEY: testKey, EFFECT_RAG_CHAT_MODEL: "chat-1" }
      const [json, plain, noModel] = yield* Effect.promise(() =>
        Promise.all([
          runCli(["ask", "Who invented the Fresnel lens?", ...at, "--json", "--limit", "2", "--check"], env),
          runCli(["ask", "Who invented the Fresnel lens?", ...at, "--limit", "2", "--check"], env),
          runCli(["ask", "Who invented the Fresnel lens?", ...at], { EFFECT_RAG_BASE_URL: server.url, EFFECT_RAG_API_KEY: testKey })
        ])
      )
      expect(json.code).toBe(0)
      const answer = JSON.parse(json.stdout) as Answer.Answer
      expect(answer.text).toContain("Augustin Fresnel in 1822 [1]")
      expect(answer.cited.map((s) => s.source)).toEqual(["guides/lighthouse.md", "reports/harbour.pdf"])
      expect(answer.searches[0]?.query).toBe("harbour dredged")
      expect(answer.unknownCitations).toEqual([99])
      // --check: both sentences are held by the passages they cite
      const check = (answer as Answer.Answer & { check: AnswerCheck.Check }).check
      expect(check.sentences.map((x) => [x.status, x.cited])).toEqual([["supported", [answer.cited[0]!.n]], ["supported", [answer.cited[1]!.n, 99]]])

      expect(plain.code).toBe(0)
      expect(plain.stdout).toMatch(/^The Fresnel lens was invented by Augustin Fresnel in 1822 \[1\]\./)
      expect(plain.stdout).toContain("Sources:\n[1] guides/lighthouse.md, page 1, chunk 0 (Lighthouse optics)")
      expect(plain.stdout).toContain("note: the answer cites [99], which matches no source")
      expect(plain.stdout).toContain("Check (lexical support, threshold 0.5): 2 of 2 sentence(s) supported by their citations, 0 unsupported, 0 without citation")

      expect(noModel.code).toBe(1)
      expect(noModel.stderr).toContain("ChatNotConfigured")
      expect(noModel.stderr).toContain("EFFECT_RAG_CHAT_MODEL")
      expect(noModel.stdout + noModel.stderr).not.toContain(testKey)
      // two CLI runs, two rounds each (tool call, then the answer); the run without a model sent nothing
      expect(server.received.length).toBe(4)
    }))

  it.scopedLive("ask --check --judge: a chat model judges each cited sentence; --judge without --check is a usage error", () =>
    Effect.gen(function*() {
      const server = yield* startServer((req, res) => {
        const body = req.json as { model: string; messages: Array<{ role: string; content: string }> }
        if (body.messages[0]?.content !== AnswerCheck.judgePrompt) return chatHandler(req, res)
        const sentence = body.messages[1]!.content
        const verdict = sentence.endsWith("Sentence: The harbour was dredged in 1910.") ? "NOT SUPPORTED" : "SUPPORTED"
        return { json: { model: body.model, choices: [{ index: 0, message: { role: "assistant", content: verdict }, finish_reason: "stop" }] } }
      })
      const env = { EFFECT_RAG_BASE_URL: server.url, EFFECT_RAG_API_KEY: testKey, EFFECT_RAG_CHAT_MODEL: "chat-1" }
      const [json, usage] = yield* Effect.promise(() =>
        Promise.all([
          runCli(["ask", "Who invented the Fresnel lens?", ...at, "--json", "--limit", "2", "--check", "--judge", "--judge-model", "judge-2"], env),
          runCli(["ask", "Who invented the Fresnel lens?", ...at, "--judge"], env)
        ])
      )
      expect(json.code).toBe(0)
      const check = (JSON.parse(json.stdout) as { check: AnswerCheck.Check }).check
      expect(check).toMatchObject({ method: "judge", model: "judge-2", supported: 1, unsupported: 1 })
      expect(check.sentences.map((x) => x.verdict)).toEqual(["supported", "unsupported"])
      const judged = server.received.map((r) => r.json as { model: string; messages: Array<{ content: string }> }).filter((b) => b.messages[0]?.content === AnswerCheck.judgePrompt)
      expect(judged.map((b) => b.model)).toEqual(["judge-2", "judge-2"])
      expect(usage.code).toBe(2)
      expect(usage.stderr).toContain("--judge and --judge-model go with --check")
    }))
})
