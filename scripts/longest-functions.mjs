#!/usr/bin/env node
/**
 * The longest functions and closures in `src/` (function declarations and expressions, arrow
 * functions, methods, constructors, accessors), by lines from the first to the last line of the
 * function, nested ones counted on their own too (but a function of at least 95 % of the lines of
 * the one around it, such as the generator of `(…) => Effect.gen(function*() {…})`, is not listed again). Prints the ten longest (or `--top N`) as
 * `lines  file:line  name`, where `name` is the function's own name or the name it is bound to
 * (`const make = …`, `worker: (…) => …`), `<anonymous>` inside its enclosing name otherwise.
 *
 *   node scripts/longest-functions.mjs [--top N] [DIR]
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"

const argv = process.argv.slice(2)
const topAt = argv.indexOf("--top")
const top = topAt >= 0 ? Number(argv[topAt + 1]) : 10
const dir = argv.filter((a, i) => !a.startsWith("--") && argv[i - 1] !== "--top")[0] ?? "src"
const root = process.cwd()

/** Every `.ts` file under `path` (no `.d.ts`). */
const files = (path) =>
  readdirSync(path, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(path, e.name)) : e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [join(path, e.name)] : []
  )

/** The name a function has or is bound to, if any. */
const ownName = (node) => {
  if (node.name !== undefined && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name) || ts.isPrivateIdentifier(node.name))) return node.name.text
  if (ts.isConstructorDeclaration(node)) return "constructor"
  const parent = node.parent
  if (parent !== undefined) {
    if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && ts.isIdentifier(parent.name)) {
      return parent.name.text
    }
    if (ts.isBinaryExpression(parent) && parent.right === node) return parent.left.getText()
    // `const make = Effect.gen(function*() {…})`, `const run = (…) => …pipe(…)`: the binding of the call
    let up = parent
    while (up !== undefined && (ts.isCallExpression(up) || ts.isPropertyAccessExpression(up) || ts.isParenthesizedExpression(up))) up = up.parent
    if (up !== parent && up !== undefined && (ts.isVariableDeclaration(up) || ts.isPropertyAssignment(up)) && ts.isIdentifier(up.name)) {
      return up.name.text
    }
  }
  return undefined
}

const found = []
for (const file of files(join(root, dir))) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const visit = (node, enclosing) => {
    let next = enclosing
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const own = ownName(node)
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line
      const lines = end - start + 1
      // the generator of `make = (…) => Effect.gen(function*() {…})` is the same closure as `make`:
      // a function of at least 95 % of the lines of the one around it is not listed again
      if (enclosing === undefined || lines < 0.95 * enclosing.lines) {
        found.push({ lines, file: relative(root, file), line: start + 1, name: own ?? `<anonymous> in ${enclosing?.name ?? "module"}` })
      }
      next = { name: own ?? enclosing?.name ?? "module", lines }
    }
    ts.forEachChild(node, (child) => visit(child, next))
  }
  visit(source, undefined)
}

found.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file) || a.line - b.line)
for (const f of found.slice(0, top)) console.log(`${String(f.lines).padStart(5)}  ${f.file}:${f.line}  ${f.name}`)
