#!/usr/bin/env node
// `effect-rag --version` answers without loading the command line (a few milliseconds); every
// other invocation runs dist/cli/main.js.
import { readFileSync } from "node:fs"

if (process.argv.length === 3 && process.argv[2] === "--version") {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  process.stdout.write(`${pkg.version}\n`)
} else {
  await import("../dist/cli/main.js")
}
