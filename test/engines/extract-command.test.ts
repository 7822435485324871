/**
 * `effect-rag extract`: parses the command line, prints the spec's JSON per file with
 * `--json`, and sets a non-zero exit status when any file fails.
 */
import { Command } from "@effect/cli"
import { NodeContext } from "@effect/platform-node"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Console, Effect, HashMap, Layer } from "effect"
import { join } from "node:path"
import { command, parseOptions } from "../../src/cli/commands/extract.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { docsDir } from "./fixtures.js"

// the lead mounts `command` under the single entry point; mount it the same way here
const root = Command.make("effect-rag").pipe(Command.withSubcommands([command]))
const cli = Command.run(root, { name: "effect-rag", version: "0.0.0" })

/** Runs the command line and returns what it printed. */
const runCli = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const err: Array<string> = []
    const base = yield* Console.consoleWith(Effect.succeed)
    const capture = {
      ...base,
      log: (...a: ReadonlyArray<unknown>) => Effect.sync(() => void out.push(a.join(" "))),
      error: (...a: ReadonlyArray<unknown>) => Effect.sync(() => void err.push(a.join(" ")))
    } as Console.Console
    yield* cli(["node", "effect-rag", ...args]).pipe(Effect.withConsole(capture))
    return { out, err }
  }).pipe(Effect.provide(Layer.merge(NodeContext.layer, LocalFiles.layer({ isolation: "inline" }))))

afterEach(() => {
  process.exitCode = undefined
})

describe("effect-rag extract", () => {
  it.effect("prints one spec-shaped JSON object per file and fails the exit status on a bad file", () =>
    Effect.gen(function*() {
      const { out } = yield* runCli([
        "extract",
        join(docsDir, "json/us_presidents.json"),
        join(docsDir, "pdf/bug1020226-corrupt.pdf"),
        "--option",
        "page_based=true",
        "--json"
      ])
      expect(out).toHaveLength(2)
      const [ok, bad] = out.map((l) => JSON.parse(l))
      expect(ok).toMatchObject({ status: true, type: "text", error: "" })
      expect(ok.content).toContain("President Barack Obama [D]")
      expect(ok.pages).toHaveLength(1)
      expect(bad).toMatchObject({ status: false, content: "", type: "error" })
      expect(bad.error).toContain("corrupt")
      expect(process.exitCode).toBe(1)
    }))

  it.effect("embeddings mode and a password", () =>
    Effect.gen(function*() {
      const { out } = yield* runCli([
        "extract",
        join(docsDir, "pdf/issue6010_1-encrypted.pdf"),
        "--mode",
        "embeddings",
        "--password",
        "abc",
        "--json"
      ])
      const r = JSON.parse(out[0]!)
      expect(r.object).toBe("chunks")
      expect(r.data.data.chunks[0].content).toContain("Issue 6010")
      expect(r.usage.total_pages).toBe(1)
      expect(process.exitCode).toBeUndefined()
    }))

  it.effect("human output, and a bad --option is refused", () =>
    Effect.gen(function*() {
      const { out } = yield* runCli(["extract", join(docsDir, "csv/country-codes.csv")])
      expect(out[0]).toContain("(csv)") // the file's own format (the result's `format`), not the spec's `type` "text"
      const bad = yield* runCli(["extract", join(docsDir, "csv/country-codes.csv"), "--option", "enable_magic=true"])
      expect(bad.err.join("\n")).toContain("unknown option enable_magic")
      expect(process.exitCode).toBe(2)
    }))

  it("parses --option values", () => {
    const r = parseOptions(HashMap.make(["enable_ocr", "true"], ["extract_mode", "embeddings"]), "standard")
    expect(r).toEqual({ options: { enable_ocr: true }, mode: "embeddings" })
    expect("error" in parseOptions(HashMap.make(["text_only", "maybe"]), "standard")).toBe(true)
  })
})
