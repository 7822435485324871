/**
 * Where the shared fixtures and benchmark data live: `$EFFECT_RAG_SHARED` when set, otherwise
 * `../shared` beside the repository root (found by walking up from this file to the folder
 * holding effect-rag's package.json).
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

/** The repository (package) root of effect-rag. */
export const packageRoot = (): string => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const pkg = join(dir, "package.json")
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, "utf8")) as { name?: string }).name === "effect-rag") return dir
      } catch {
        // not ours; keep walking
      }
    }
    const parent = dirname(dir)
    if (parent === dir) return process.cwd()
    dir = parent
  }
}

/** The shared data folder (fixtures, spec, benchmarks). */
export const sharedDir = (): string => {
  const fromEnv = process.env["EFFECT_RAG_SHARED"]
  return fromEnv !== undefined && fromEnv !== "" ? resolve(fromEnv) : resolve(packageRoot(), "..", "shared")
}

/** A path inside the shared folder. */
export const sharedPath = (...segments: ReadonlyArray<string>): string => join(sharedDir(), ...segments)
