#!/usr/bin/env node
// The command line as a few bundled ES modules (`npm run build`, after `tsc`): dist/cli/main.js
// and what it loads of `effect` and `@effect/*` become dist/bundle/effect-rag.js plus one chunk
// per lazily loaded command part (`import()` kept, code splitting), with linked source maps that
// lead back to src/ (through tsc's maps). bin/effect-rag.js runs it.
//
// Why: Node loads each ES module file on its own (open, read, compile, resolve); the unbundled CLI
// loads ~690 of them for one `query`, 239 of them fast-check and pure-rand that effect/Schema
// imports statically and the CLI never calls. The bundle is a handful of files and tree-shaking
// drops what is not reachable. Figures: benchmarks/README.md ("Start-up").
//
// Only our own code (dist/) and the Effect packages are bundled. Every other package stays an
// `import`/`require` of node_modules: the native ones (@lancedb/lancedb, @napi-rs/canvas), the
// one whose values cross into a native one (apache-arrow), the optional ones (never bundled: they
// may be absent), and the rest, loaded lazily or small. The library entry points (`exports`) stay
// the unbundled tsc output.
//
// `import.meta.url` in a bundled module of dist/ is rewritten to that module's own URL in dist/
// (relative to the chunk, so the package may be installed anywhere): files found beside a module
// (the extraction process's worker.js, the playground's script, package.json by walking up,
// `createRequire`) are found where they were.
//
//   node scripts/bundle-cli.mjs [--metafile FILE] [--outdir DIR] [--minify] [--no-splitting]
//
// (--outdir, --minify and --no-splitting are for measuring variants; npm run build uses none.)
import { build } from "esbuild"
import { readFile, rm, writeFile } from "node:fs/promises"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const dist = join(repo, "dist")
const { values: args } = parseArgs({
  options: { metafile: { type: "string" }, outdir: { type: "string" }, minify: { type: "boolean" }, "no-splitting": { type: "boolean" } }
})
const outdir = resolve(args.outdir ?? join(dist, "bundle"))

/**
 * The packages bundled into the CLI: the Effect family, and the pure-JavaScript packages they
 * import (found at build time from where the Effect packages are, so they need not be hoisted
 * beside effect-rag in a consumer's node_modules; ws's optional native helpers stay external).
 */
const bundled = new Set([
  "effect",
  "@effect/cli",
  "@effect/platform",
  "@effect/platform-node",
  "@effect/platform-node-shared",
  "@effect/printer",
  "@effect/printer-ansi",
  "@effect/typeclass",
  "fast-check",
  "pure-rand",
  "find-my-way-ts",
  "mime",
  "multipasta",
  "ws"
])

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageOf = (specifier) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")

/** Keeps every bare import outside {@link bundled} external (as written). */
const externals = {
  name: "externals",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (a) => {
      if (a.path.startsWith("node:")) return { path: a.path, external: true }
      return bundled.has(packageOf(a.path)) ? undefined : { path: a.path, external: true }
    })
  }
}

/**
 * Two edits to modules of the Effect packages, each checked (the build fails when the text is
 * not found, e.g. after an update), each keeping the behaviour and dropping code the CLI loads at
 * every start and never runs:
 * - @effect/cli's file-option parsers import yaml, toml and ini statically (400 KiB, a fifth of
 *   what `--help` loaded); no option of ours reads a file through them: each is now required
 *   when a parser first runs.
 * - effect/Schema's one direct call into fast-check (the arbitrary of a non-empty chunk) goes
 *   through the `fc` it is given (the same module), so tree-shaking drops fast-check (90 KiB).
 */
const patches = [
  {
    file: /[\\/]@effect[\\/]cli[\\/]dist[\\/]esm[\\/]internal[\\/]files\.js$/,
    edits: [
      ['import * as Ini from "ini";', 'const Ini = { parse: (c) => require("ini").parse(c) };'],
      ['import * as Toml from "toml";', 'const Toml = { parse: (c) => require("toml").parse(c) };'],
      ['import * as Yaml from "yaml";', 'const Yaml = { parse: (c) => require("yaml").parse(c) };']
    ]
  },
  {
    file: /[\\/]effect[\\/]dist[\\/]esm[\\/]Schema\.js$/,
    edits: [["const nonEmptyChunkArbitrary = item => fc => fastCheck_.array(", "const nonEmptyChunkArbitrary = item => fc => fc.array("]]
  }
]

const patched = {
  name: "patches",
  setup(b) {
    for (const { file, edits } of patches) {
      b.onLoad({ filter: file }, async (a) => {
        let text = await readFile(a.path, "utf8")
        for (const [from, to] of edits) {
          if (!text.includes(from)) throw new Error(`${a.path}: \`${from}\` not found (update scripts/bundle-cli.mjs)`)
          text = text.replace(from, to)
        }
        return { contents: text, loader: "js", resolveDir: dirname(a.path) }
      })
    }
  }
}

/** `import.meta.url` of a module of dist/ → its own URL, relative to the chunk it lands in. */
const ownUrl = {
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (a) => {
      if (!a.path.startsWith(dist + sep)) return undefined
      const text = await readFile(a.path, "utf8")
      if (!text.includes("import.meta.url")) return undefined
      const rel = relative(outdir, a.path).split(sep).join("/")
      return {
        contents: text.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`),
        loader: "js",
        resolveDir: dirname(a.path)
      }
    })
  }
}

await rm(outdir, { recursive: true, force: true })
const result = await build({
  entryPoints: { "effect-rag": join(dist, "cli", "main.js") },
  outdir,
  bundle: true,
  splitting: !args["no-splitting"],
  minifyWhitespace: args.minify === true,
  minifySyntax: args.minify === true,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  sourcesContent: false,
  chunkNames: "chunk-[hash]",
  // `require` for the bundled CommonJS (ws: its Node built-ins and optional native helpers) and
  // @effect/cli's parsers' yaml/toml/ini, resolved from the chunk's place in the package
  banner: { js: `import { createRequire as __cr } from "node:module"; const require = __cr(import.meta.url);` },
  plugins: [externals, patched, ownUrl],
  metafile: true,
  logLevel: "warning",
  logOverride: { "unsupported-dynamic-import": "silent" }
})
if (args.metafile) await writeFile(args.metafile, JSON.stringify(result.metafile))
const outputs = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith(".js"))
const bytes = outputs.reduce((n, [, o]) => n + o.bytes, 0)
console.log(`bundled the CLI: ${outputs.length} files, ${(bytes / 1024).toFixed(0)} KiB in ${relative(repo, outdir)}`)
