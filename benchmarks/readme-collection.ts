/**
 * Builds a second BEIR-layout collection offline, to check that full-text changes tuned on
 * SciFact do not hurt elsewhere: every installed npm package with a README and a description
 * (this repository's `node_modules`, and npm's own when present). Query = the package.json
 * `description`; the one relevant document = that package's README (title = package name),
 * with every verbatim copy of the description removed from it so that the task is not trivial.
 *
 *   npx tsx benchmarks/readme-collection.ts OUT_DIR [NODE_MODULES_DIR...]
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const out = process.argv[2]
if (out === undefined) {
  console.error("usage: tsx benchmarks/readme-collection.ts OUT_DIR [NODE_MODULES_DIR...]")
  process.exit(2)
}
const roots = process.argv.length > 3 ? process.argv.slice(3) : ["node_modules", "/usr/lib/node_modules/npm/node_modules"]

const packageDirs = (root: string): Array<string> => {
  if (!existsSync(root)) return []
  const dirs: Array<string> = []
  for (const name of readdirSync(root).sort()) {
    if (name.startsWith(".")) continue
    if (name.startsWith("@")) {
      for (const sub of readdirSync(join(root, name)).sort()) dirs.push(join(root, name, sub))
    } else dirs.push(join(root, name))
  }
  return dirs
}

const docs: Array<{ _id: string; title: string; text: string }> = []
const queries: Array<{ _id: string; text: string }> = []
const seen = new Set<string>()
for (const root of roots) {
  for (const dir of packageDirs(root)) {
    let pkg: { name?: unknown; description?: unknown }
    try {
      pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as typeof pkg
    } catch {
      continue
    }
    const name = typeof pkg.name === "string" ? pkg.name : undefined
    const description = typeof pkg.description === "string" ? pkg.description.trim() : ""
    if (name === undefined || seen.has(name) || description.split(/\s+/).length < 3) continue
    const readme = readdirSync(dir).find((f) => /^readme(\.md|\.markdown|\.txt)?$/i.test(f))
    if (readme === undefined) continue
    let text = readFileSync(join(dir, readme), "utf8")
    text = text.split(description).join(" ")
    if (text.trim().length < 200) continue
    seen.add(name)
    const id = `p${docs.length}`
    docs.push({ _id: id, title: name, text: text.slice(0, 20_000) })
    queries.push({ _id: `q${queries.length}`, text: description })
  }
}
mkdirSync(join(out, "qrels"), { recursive: true })
writeFileSync(join(out, "corpus.jsonl"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n")
writeFileSync(join(out, "queries.jsonl"), queries.map((q) => JSON.stringify(q)).join("\n") + "\n")
writeFileSync(
  join(out, "qrels", "test.tsv"),
  "query-id\tcorpus-id\tscore\n" + queries.map((q, i) => `${q._id}\tp${i}\t1`).join("\n") + "\n"
)
console.log(`${docs.length} documents, ${queries.length} queries -> ${out}`)
