// Fresh npm projects as a user makes them, and what an install leaves on disk: shared by the
// pack-and-install check (scripts/pack-check.mjs) and the install-size benchmark
// (benchmarks/install.ts). Node built-ins only.
import { spawnSync } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/** Makes `dir/name` with a bare `package.json` (ESM, private) and returns its path. */
export const freshProject = (dir, name) => {
  const path = join(dir, name)
  mkdirSync(path, { recursive: true })
  writeFileSync(join(path, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, type: "module" }, null, 2))
  return path
}

/** The caller's environment without npm, onnxruntime or effect-rag settings (a user has none). */
export const cleanEnv = (extra = {}) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|ONNXRUNTIME_|EFFECT_RAG_|NODE_OPTIONS$|INIT_CWD$)/i.test(k))),
  npm_config_update_notifier: "false",
  ...extra
})

/** Runs `npm install --no-audit --no-fund ...packages` in `cwd`: exit code, output, seconds. */
export const npmInstall = (cwd, packages, env = cleanEnv()) => {
  const started = Date.now()
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", ...packages], { cwd, env, encoding: "utf8", maxBuffer: 64 << 20 })
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "", seconds: (Date.now() - started) / 1000 }
}

/** The warning lines of an npm run, without npm's framing lines around a list of packages. */
export const warningsOf = (r) =>
  `${r.out}\n${r.err}`.split("\n").filter((l) => /^npm (warn|ERR)/i.test(l)).map((l) => l.replace(/^npm \w+\s*/i, "").trim())
    .filter((l) => l !== "" && l !== "install-scripts" && !/^install-scripts\s+(\d+ packages? ha|Run `npm)/.test(l))

/** The bytes of the files under `dir` (apparent size: independent of the file system's blocks). */
export const sizeOf = (dir) => {
  let total = 0
  const stack = [dir]
  while (stack.length > 0) {
    const d = stack.pop()
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name)
      if (entry.isDirectory()) stack.push(p)
      else total += lstatSync(p).size
    }
  }
  return total
}

/** The package folders directly under a `node_modules` (scoped ones as `@scope/name`). */
export const packagesIn = (nodeModules) =>
  readdirSync(nodeModules).filter((n) => !n.startsWith(".")).flatMap((n) =>
    n.startsWith("@") ? readdirSync(join(nodeModules, n)).map((m) => `${n}/${m}`) : [n])

/**
 * Where any of `names` is installed under a `node_modules`, at any depth (nested copies under
 * another package's own `node_modules` included): paths relative to `nodeModules`.
 */
export const findPackages = (nodeModules, names) => {
  const wanted = new Set(names)
  const found = []
  const walk = (dir, prefix) => {
    if (!existsSync(dir)) return
    for (const name of packagesIn(dir)) {
      const path = `${prefix}${name}`
      if (wanted.has(name)) found.push(path)
      walk(join(dir, name, "node_modules"), `${path}/node_modules/`)
    }
  }
  walk(nodeModules, "")
  return found
}

/** The `top` largest packages under a `node_modules`, in MB (10^6 bytes). */
export const largestPackages = (nodeModules, top = 8) =>
  packagesIn(nodeModules).map((name) => ({ name, mb: sizeOf(join(nodeModules, name)) / 1e6 }))
    .sort((a, b) => b.mb - a.mb).slice(0, top)

/** Builds the package at `repo` and packs it into `dir` (no lifecycle scripts run twice); the tarball's path. */
export const packTarball = (repo, dir) => {
  let tarball
  for (const argv of [["run", "build"], ["pack", "--ignore-scripts", "--json", "--pack-destination", dir]]) {
    const r = spawnSync("npm", argv, { cwd: repo, encoding: "utf8", maxBuffer: 64 << 20 })
    if (r.status !== 0) throw new Error(`npm ${argv[0]} failed:\n${r.stdout}${r.stderr}`)
    if (argv[0] === "pack") tarball = join(dir, JSON.parse(r.stdout)[0].filename)
  }
  return tarball
}
