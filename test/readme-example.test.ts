/**
 * The README's library example is `examples/ingest-and-query.ts` (which `npm test` type-checks
 * and the newcomer test runs), word for word: the code block under "Embed it in an app" equals
 * the file without its header comment.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { repoRoot } from "./support/cli.js"

describe("README", () => {
  it("shows examples/ingest-and-query.ts as it is", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8")
    const section = readme.slice(readme.indexOf("## Embed it in an app"))
    const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
    const file = readFileSync(join(repoRoot, "examples", "ingest-and-query.ts"), "utf8").replace(/^\/\*\*[\s\S]*?\*\/\n/, "")
    expect(block).toBe(file)
  })
})
