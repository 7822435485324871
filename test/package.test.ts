/**
 * package.json as a consumer's npm reads it: no script that runs at their install, an export
 * for every public module (so a consumer's declaration emit can name each type), the optional
 * entry points, and nothing of the repository's own tooling in the published files.
 * (scripts/pack-check.mjs installs the packed tarball for real; `.ci/run` runs it.)
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..")
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>
  exports: Record<string, string | { types: string; default: string }>
  engines: { node: string }
  files: Array<string>
}
const entries = ["index", "onnx", "use-lite", "queue", "postgres", "ai", "testing"]
const namespaces = entries.flatMap((entry) =>
  [...readFileSync(join(root, "src", `${entry}.ts`), "utf8").matchAll(/export \* as (\w+) from "\.\/(.+)\.js"/g)]
    .map((m) => ({ name: m[1]!, path: m[2]! }))
)

describe("package.json", () => {
  it("runs nothing at a consumer's install (dist is built by prepack)", () => {
    for (const s of ["preinstall", "install", "postinstall", "prepare"]) expect(pkg.scripts[s], s).toBeUndefined()
    expect(pkg.scripts["prepack"]).toBe("npm run build")
  })

  it("exports each entry point and every public module by its namespace's name, types first", () => {
    expect(namespaces.length).toBeGreaterThan(25)
    const expected: Record<string, string> = Object.fromEntries([
      ...entries.map((e) => [e === "index" ? "." : `./${e}`, e]),
      ...namespaces.map((n) => [`./${n.name}`, n.path])
    ])
    for (const [key, path] of Object.entries(expected)) {
      expect(pkg.exports[key], key).toEqual({ types: `./dist/${path}.d.ts`, default: `./dist/${path}.js` })
      expect(existsSync(join(root, "src", `${path}.ts`)), path).toBe(true)
    }
    expect(Object.keys(pkg.exports).sort()).toEqual([...Object.keys(expected), "./package.json"].sort())
  })

  it("supports Node 20 and later; the generated API reference is not published", () => {
    expect(pkg.engines.node).toBe(">=20")
    expect(pkg.files).toContain("!docs/api")
  })
})
