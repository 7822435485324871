/**
 * The bundled command line that `bin/effect-rag.js` runs (`dist/bundle/`, built by `npm run
 * build`: scripts/bundle-cli.mjs). The commands themselves are tested through it by the tests
 * that use `runBuiltCli`; this checks what makes the bundle portable and small.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { repoRoot } from "../support/cli.js"

const bundleDir = join(repoRoot, "dist", "bundle")
const files = (ext: string) =>
  existsSync(bundleDir) ? readdirSync(bundleDir).filter((f) => f.endsWith(ext)).map((f) => join(bundleDir, f)) : []

describe("the CLI bundle (dist/bundle, npm run build)", () => {
  it("is what bin/effect-rag.js runs, and is built", () => {
    expect(readFileSync(join(repoRoot, "bin", "effect-rag.js"), "utf8")).toContain(`import("../dist/bundle/effect-rag.js")`)
    expect(files(".js").map((f) => f.slice(bundleDir.length + 1))).toContain("effect-rag.js")
  })

  it("finds the files beside our modules where tsc put them: each import.meta.url names a module of dist/, no build path", () => {
    const targets = new Set<string>()
    for (const file of files(".js")) {
      const text = readFileSync(file, "utf8")
      expect(text, file).not.toContain(repoRoot)
      for (const m of text.matchAll(/new URL\("([^"]+)", import\.meta\.url\)\.href/g)) targets.add(m[1]!)
    }
    // shared.ts (package.json), the extraction isolate (worker.js), LanceDB's arrow require, ...
    expect([...targets]).toEqual(expect.arrayContaining(["../internal/shared.js", "../engines/documents/internal/extract/isolate.js"]))
    for (const target of targets) {
      expect(target.startsWith("../"), target).toBe(true)
      expect(existsSync(resolve(bundleDir, target)), target).toBe(true)
    }
  })

  it("leaves out what the CLI never runs (fast-check; @effect/cli's yaml, toml, ini) and maps back to src/", () => {
    const sources = files(".js.map").flatMap((f) => (JSON.parse(readFileSync(f, "utf8")) as { sources: Array<string> }).sources)
    expect(sources).toContain("../../src/cli/main.ts")
    expect(sources.some((s) => s.includes("node_modules/effect/"))).toBe(true)
    for (const left of ["/fast-check/", "/pure-rand/", "/yaml/", "/toml/", "/ini/", "/@lancedb/", "/apache-arrow/"]) {
      expect(sources.filter((s) => s.includes(left)), left).toEqual([])
    }
  })
})
