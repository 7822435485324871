/**
 * The import graph of `src/`: read with the TypeScript parser (every `import`, `export … from`,
 * `import()` and `import("…").T`, type-only ones included), then checked against three rules:
 *
 * 1. `internal/` is private to its folder: a file imports `X/internal/…` only from inside `X`
 *    (`src/internal/` is shared by all of `src/`).
 * 2. The layer table below: which top-level area may import which (the same table is in
 *    `docs/contributing.md`). An area is a folder of `src/` or a module at its root.
 * 3. No import cycles, between files of any areas.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const src = resolve(dirname(fileURLToPath(import.meta.url)), "..", "src")

// =============================================================================
// The layer table
// =============================================================================

/** The modules at the root of `src/` that everything may use. */
const base = ["RagError", "RagConfig", "internal"] as const

/**
 * Which areas each area may import besides itself and {@link base}. `types` allows type-only
 * imports (nothing is loaded). The entry points (`index.ts`, `onnx.ts`, `use-lite.ts`,
 * `queue.ts`, `ai.ts`, `testing.ts`, `postgres.ts`) re-export and may import anything.
 */
const layers: Readonly<Record<string, Readonly<Record<string, "yes" | "types">>>> = {
  RagError: {},
  RagConfig: {},
  internal: {},
  api: {},
  store: {},
  engines: { api: "yes" },
  pipeline: { api: "yes", store: "yes" },
  ai: { api: "yes" },
  bench: { api: "yes", store: "yes", pipeline: "yes" },
  // the server speaks to ports only (its Firecrawl routes use `Web` and `WebCrawlScope`, so they
  // serve over a remote engine too); its collection routes query through the pipeline
  server: { api: "yes", pipeline: "yes", store: "yes" },
  Wiring: { api: "yes", engines: "yes", store: "yes" },
  Layers: { api: "yes", engines: "yes", Wiring: "yes" },
  cli: { api: "yes", store: "yes", pipeline: "yes", bench: "yes", server: "yes", Wiring: "yes", Layers: "yes", engines: "types" }
}

const entryPoints = new Set(["index.ts", "onnx.ts", "use-lite.ts", "queue.ts", "ai.ts", "testing.ts", "postgres.ts"])

// =============================================================================
// The graph
// =============================================================================

interface Edge {
  readonly from: string
  readonly to: string
  readonly typeOnly: boolean
}

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith(".ts") ? [path] : []
  })

/** The relative imports of a file, each with whether it is type-only. */
const importsOf = (file: string): Array<{ readonly specifier: string; readonly typeOnly: boolean }> => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const found: Array<{ specifier: string; typeOnly: boolean }> = []
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause
      const typeOnly = clause !== undefined && (clause.isTypeOnly ||
        (clause.name === undefined && clause.namedBindings !== undefined && ts.isNamedImports(clause.namedBindings) &&
          clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((e) => e.isTypeOnly)))
      found.push({ specifier: node.moduleSpecifier.text, typeOnly })
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly })
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined && ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false })
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found.filter((i) => i.specifier.startsWith("."))
}

/** `src/`-relative path of an import, `.js` written for the `.ts` file. */
const target = (from: string, specifier: string): string =>
  relative(src, resolve(dirname(join(src, from)), specifier)).replace(/\.js$/, ".ts")

const edges: ReadonlyArray<Edge> = sourceFiles(src).flatMap((file) => {
  const from = relative(src, file)
  return importsOf(file).map((i) => ({ from, to: target(from, i.specifier), typeOnly: i.typeOnly }))
})

/** The area of a file: its top-level folder, or its own name at the root. */
const areaOf = (file: string): string => {
  const parts = file.split("/")
  return parts.length === 1 ? parts[0]!.replace(/\.ts$/, "") : parts[0]!
}

/** The folder whose `internal/` a path is in (`""` for `src/internal/`), if any. */
const internalOwner = (file: string): string | undefined => {
  const parts = file.split("/")
  const at = parts.lastIndexOf("internal", parts.length - 2)
  return at < 0 ? undefined : parts.slice(0, at).join("/")
}

/** The import cycles: strongly connected components of more than one file (Tarjan). */
const cycles = (all: ReadonlyArray<Edge>): Array<Array<string>> => {
  const next = new Map<string, Array<string>>()
  for (const e of all) next.set(e.from, [...(next.get(e.from) ?? []), e.to])
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  let counter = 0
  const connect = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter)
    counter++
    stack.push(v)
    onStack.add(v)
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of next.keys()) if (!index.has(v)) connect(v)
  return found
}

// =============================================================================
// The rules
// =============================================================================

describe("architecture: the import graph of src/", () => {
  it("reads the graph (every file, every kind of import)", () => {
    // the parser finds what the code holds: a namespace re-export, a dynamic import, a type import
    expect(edges).toContainEqual({ from: "index.ts", to: "api/Chat.ts", typeOnly: false })
    expect(edges.some((e) => e.from === "Wiring.ts" && e.to === "store/LanceDbStore.ts" && !e.typeOnly)).toBe(true)
    expect(edges.some((e) => e.from === "Wiring.ts" && e.to === "api/Embeddings.ts" && e.typeOnly)).toBe(true)
    expect(new Set(edges.map((e) => e.from)).size).toBeGreaterThan(90)
    // every import names a file that exists
    const files = new Set(sourceFiles(src).map((f) => relative(src, f)))
    expect(edges.filter((e) => !files.has(e.to)).map((e) => `${e.from} -> ${e.to}`)).toEqual([])
  })

  it("no file imports another folder's internal/", () => {
    const violations = edges
      .filter((e) => {
        const owner = internalOwner(e.to)
        return owner !== undefined && owner !== "" && !e.from.startsWith(`${owner}/`)
      })
      .map((e) => `${e.from} -> ${e.to}`)
    expect(violations).toEqual([])
  })

  it("every area imports only what the layer table allows", () => {
    const violations = edges
      .filter((e) => {
        const from = areaOf(e.from)
        const to = areaOf(e.to)
        if (from === to || entryPoints.has(e.from) || (base as ReadonlyArray<string>).includes(to)) return false
        const rule = layers[from]?.[to]
        return rule === undefined || (rule === "types" && !e.typeOnly)
      })
      .map((e) => `${e.from} -> ${e.to}${e.typeOnly ? " (types)" : ""}`)
    expect(violations).toEqual([])
    // the table names every area there is
    const areas = new Set(edges.flatMap((e) => [e.from, e.to]).filter((f) => !entryPoints.has(f)).map(areaOf))
    expect([...areas].filter((a) => layers[a] === undefined)).toEqual([])
  })

  it("has no import cycles", () => {
    expect(cycles(edges)).toEqual([])
  })

  it("the checks see what they are for: a cycle, a private import and a broken rule are found", () => {
    const made: ReadonlyArray<Edge> = [
      { from: "a/A.ts", to: "a/B.ts", typeOnly: true },
      { from: "a/B.ts", to: "a/A.ts", typeOnly: false }
    ]
    expect(cycles(made)).toEqual([["a/A.ts", "a/B.ts"]])
    expect(internalOwner("store/internal/fusion.ts")).toBe("store")
    expect(internalOwner("internal/optional.ts")).toBe("")
    expect(internalOwner("store/VectorStore.ts")).toBeUndefined()
    expect(layers["api"]?.["engines"]).toBeUndefined()
    expect(layers["store"]?.["pipeline"]).toBeUndefined()
  })
})
