#!/usr/bin/env node
// `effect-rag --version` answers without loading the command line (a few milliseconds); every
// other invocation runs the bundled command line, dist/bundle/effect-rag.js (`npm run build`:
// scripts/bundle-cli.mjs; a handful of files instead of the ~690 modules of dist/cli/main.js).
import { readFileSync } from "node:fs"
import * as nodeModule from "node:module"

if (process.argv.length === 3 && process.argv[2] === "--version") {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  process.stdout.write(`${pkg.version}\n`)
} else {
  // Node 22.1+: V8's compiled code of the modules the command line loads is kept on disk (in
  // $NODE_COMPILE_CACHE, else the system's temp folder) and reused by the next run; Node 20 has
  // no such cache and skips it.
  nodeModule.enableCompileCache?.()
  await import("../dist/bundle/effect-rag.js")
}
