import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runCli } from "../support/cli.js"
import { startServer, testKey } from "../support/server.js"

const list = {
  object: "list",
  data: [
    { id: "chat-large", object: "model", created: 1, owned_by: "acme" },
    { id: "embed-small", object: "model", created: 2, owned_by: "acme" }
  ]
}

describe("effect-rag CLI", () => {
  it.scopedLive("models --json lists the models through the configured service", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: list }))
      const result = yield* Effect.promise(() =>
        runCli(["models", "--json"], { EFFECT_RAG_API_KEY: testKey, EFFECT_RAG_BASE_URL: server.url })
      )
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout)).toEqual(list)
      expect(server.received[0]?.headers.authorization).toBe(`Bearer ${testKey}`)
    }))

  it.scopedLive("models prints a table; a 401 exits 1 without printing the key", () =>
    Effect.gen(function*() {
      const ok = yield* startServer(() => ({ json: list }))
      const table = yield* Effect.promise(() =>
        runCli(["models"], { EFFECT_RAG_API_KEY: testKey, EFFECT_RAG_BASE_URL: ok.url })
      )
      expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+TYPE\s+OWNER\/NAME$/)
      expect(table.stdout).toContain("embed-small")

      const denied = yield* startServer(() => ({ status: 401, json: { error: { message: `bad key ${testKey}` } } }))
      const result = yield* Effect.promise(() =>
        runCli(["models"], { EFFECT_RAG_API_KEY: testKey, EFFECT_RAG_BASE_URL: denied.url })
      )
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("Unauthorized")
      expect(result.stdout + result.stderr).not.toContain(testKey)
    }))

  it.scopedLive("models reads baseUrl and apiKey from --config FILE", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => ({ json: list }))
      const dir = mkdtempSync(join(tmpdir(), "effect-rag-models-config-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const file = join(dir, "config.json")
      writeFileSync(file, JSON.stringify({ baseUrl: server.url, apiKey: testKey }))
      const result = yield* Effect.promise(() => runCli(["models", "--json", "--config", file]))
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout)).toEqual(list)
      expect(server.received[0]?.headers.authorization).toBe(`Bearer ${testKey}`)
    }))

  it.live("--version, --help and a missing key", () =>
    Effect.gen(function*() {
      const version = yield* Effect.promise(() => runCli(["--version"]))
      expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
      const help = yield* Effect.promise(() => runCli(["--help"]))
      expect(help.stdout).toContain("models")
      const noKey = yield* Effect.promise(() => runCli(["models"], { EFFECT_RAG_BASE_URL: "http://127.0.0.1:9" }))
      expect(noKey.code).toBe(1)
      expect(noKey.stderr).toContain("EFFECT_RAG_API_KEY")
    }))
})
