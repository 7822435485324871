#!/usr/bin/env node
// Adds lockfile entries for platform-specific optional dependencies that the npm registry
// mirror of our build machines does not carry (e.g. @lancedb/lancedb-darwin-arm64). npm leaves
// them out of package-lock.json when it cannot resolve them, and `npm ci` then refuses the lock
// as "not in sync". Each added entry names the version, marks it optional and records the
// os/cpu/libc read from the package name, exactly as npm writes such entries when it can
// resolve them; `npm ci` skips them on other platforms without fetching anything.
// Run after any `npm install` that changes the lock: `node scripts/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from "node:fs"

const path = new URL("../package-lock.json", import.meta.url)
const lock = JSON.parse(readFileSync(path, "utf8"))
const packages = lock.packages

const OS = ["darwin", "linux", "win32", "freebsd", "openbsd", "android", "openharmony", "sunos", "aix", "netbsd"]
const CPU = ["arm64", "x64", "ia32", "arm", "loong64", "ppc64", "riscv64", "s390x", "mips64el"]

const platformOf = (name) => {
  const parts = name.split("/").pop().split("-")
  const os = parts.find((p) => OS.includes(p))
  const cpu = parts.find((p) => CPU.includes(p))
  const libc = parts.includes("musl") ? "musl" : os === "linux" && (parts.includes("gnu") || parts.includes("gnueabihf")) ? "glibc" : undefined
  return { os, cpu, libc }
}

/** Where node would find `dep` from the package at `location`. */
const resolve = (location, dep) => {
  let base = location
  for (;;) {
    const candidate = (base ? base + "/" : "") + "node_modules/" + dep
    if (packages[candidate]) return candidate
    if (!base) return undefined
    const i = base.lastIndexOf("/node_modules/")
    base = i === -1 ? "" : base.slice(0, i)
  }
}

let added = 0
for (const [location, entry] of Object.entries(packages)) {
  for (const [dep, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    if (resolve(location, dep)) continue
    if (!/^\d+\.\d+\.\d+([-+].*)?$/.test(spec)) continue // only exact platform pins
    const { os, cpu, libc } = platformOf(dep)
    if (!os && !cpu) continue // not a platform package: leave it to npm
    const key = "node_modules/" + dep
    packages[key] = {
      version: spec,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc: [libc] } : {}),
      ...(os ? { os: [os] } : {})
    }
    added++
  }
}
const sorted = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)))
lock.packages = sorted
writeFileSync(path, JSON.stringify(lock, null, 2) + "\n")
console.log(`complete-lockfile: added ${added} platform entr${added === 1 ? "y" : "ies"}`)
