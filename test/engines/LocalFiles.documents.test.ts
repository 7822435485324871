/**
 * The formats of issue 26 through the `Upload` service (the local engine, in its extraction
 * processes): Markdown front matter, Jupyter notebooks, each file's own `format`, and the
 * chunk's `section` for citations. The documents are small ones written here in the shapes the
 * tools that make them write (Jekyll/Hugo front matter, nbformat 4 and 3); the benchmark corpus
 * holds the third-party ones.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { blocks } from "../../src/engines/internal/chunk/chunker.js"
import * as LocalFiles from "../../src/engines/LocalFiles.js"
import { fixtureFile, manifest } from "./fixtures.js"

const enc = new TextEncoder()
const file = (name: string, text: string): Upload.UploadFile => ({ name, data: enc.encode(text) })

const jekyll = `---
layout: post
title: "Release notes: version 2"
description: What changed in the second release
tags: [release, notes]
date: 2024-03-01
---
# Version 2

The second release adds the quarterly export.

    indented code block
      keeps its shape

## Upgrading

\`\`\`sh
# not a heading: a shell comment
npm install thing@2

    ./configure --fast
\`\`\`
`

const hugo = `+++
title = "Hugo page"
summary = "A page written for Hugo"
[params]
author = "Ada"
+++

Body of the Hugo page.
`

/** A notebook as Jupyter writes it (nbformat 4): a plot, a data frame, a stream, an error. */
const notebook = JSON.stringify({
  nbformat: 4,
  nbformat_minor: 5,
  metadata: {
    kernelspec: { name: "python3", display_name: "Python 3 (ipykernel)", language: "python" },
    language_info: { name: "python", version: "3.11.4" }
  },
  cells: [
    {
      cell_type: "markdown",
      metadata: {},
      source: ["# Penguin sizes\n", "\n", "We compare flipper lengths.\n", "![chart](attachment:chart.png)"],
      attachments: { "chart.png": { "image/png": "iVBORw0KGgo".repeat(400) } }
    },
    {
      cell_type: "code",
      execution_count: 1,
      metadata: {},
      source: ["def mean(xs):\n", "    return sum(xs) / len(xs)\n", "print(mean([181, 186, 195]))"],
      outputs: [
        { output_type: "stream", name: "stdout", text: ["\u001b[1m187.33333333333334\u001b[0m\n"] },
        {
          output_type: "display_data",
          metadata: {},
          data: { "image/png": "iVBORw0KGgo".repeat(2000), "text/plain": ["<Figure size 640x480 with 1 Axes>"] }
        },
        {
          output_type: "execute_result",
          execution_count: 1,
          metadata: {},
          data: {
            "text/html": ["<table><thead><tr><th>species</th><th>flipper</th></tr></thead>", "<tbody><tr><td>Adelie</td><td>190</td></tr></tbody></table>"],
            "text/plain": ["  species  flipper\n0  Adelie      190"]
          }
        },
        { output_type: "error", ename: "KeyError", evalue: "'beak'", traceback: ["\u001b[0;31mKeyError\u001b[0m"] }
      ]
    }
  ]
})

/** nbformat 3: worksheets, heading cells, `input`, `pyout`. */
const notebook3 = JSON.stringify({
  nbformat: 3,
  metadata: { name: "old" },
  worksheets: [{
    cells: [
      { cell_type: "heading", level: 2, source: ["Old style"] },
      { cell_type: "code", language: "python", input: ["x = 41 + 1\n", "x"], outputs: [{ output_type: "pyout", text: ["42"] }] }
    ]
  }]
})

layer(LocalFiles.layer({ timeout: "60 seconds" }))("Markdown and notebooks through the Upload service", (it) => {
  it.effect("YAML front matter: title, description and properties, never text; code keeps its indentation", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      // bigger than the in-process limit: this one goes through an extraction process
      const big = jekyll + "\nFiller paragraph.\n".repeat(1200)
      for (const f of [file("notes.md", jekyll), file("notes.markdown", big)]) {
        const r = yield* upload.extractChunks(f)
        expect(r.type).toBe("text")
        expect(r.format).toBe("markdown")
        const meta = r.data.data.metadata
        expect(meta.title).toBe("Release notes: version 2")
        expect(meta.description).toBe("What changed in the second release")
        expect(meta.properties).toEqual({
          layout: "post",
          title: "Release notes: version 2",
          description: "What changed in the second release",
          tags: "release, notes",
          date: "2024-03-01"
        })
        const text = r.data.data.chunks.map((c) => c.content).join("\n\n")
        expect(text).not.toContain("layout:")
        expect(text).not.toContain("---")
        expect(text).toContain("    indented code block\n      keeps its shape")
        expect(text).toContain("```sh\n# not a heading: a shell comment\nnpm install thing@2\n\n    ./configure --fast\n```")
        // sections for citations: the shell comment is no heading
        const sections = r.data.data.chunks.map((c) => c.section)
        expect(sections[0]).toBe("Version 2")
        expect(sections).toContain("Upgrading")
        expect(sections).not.toContain("not a heading: a shell comment")
      }
      const standard = yield* upload.extract(file("notes.md", jekyll))
      expect(standard.format).toBe("markdown")
      expect(standard.content.startsWith("# Version 2")).toBe(true)
    }))

  it.effect("TOML front matter; a leading thematic break that is no front matter stays text", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extractChunks(file("page.md", hugo))
      expect(r.data.data.metadata.title).toBe("Hugo page")
      expect(r.data.data.metadata.description).toBe("A page written for Hugo")
      expect(r.data.data.metadata.properties?.params).toBe("author: Ada")
      expect(r.data.data.chunks.map((c) => c.content).join("\n")).toBe("Body of the Hugo page.")
      const rule = "---\n\nA paragraph between rules.\n\n---\nMore text."
      const plain = yield* upload.extract(file("rule.md", rule))
      expect(plain.content).toBe(rule)
    }))

  it.effect("front matter that cannot be parsed is left out with a warning; an alias bomb is bounded", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const broken = yield* upload.extract(file("broken.md", "---\ntitle: [unclosed\nauthor: x\n---\nThe body."))
      expect(broken.content).toBe("The body.")
      expect(broken.warnings?.join(" ")).toMatch(/front matter cannot be parsed/)
      // the "billion laughs" of YAML: aliases of aliases
      let bomb = "---\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
      for (let i = 1; i < 12; i++) bomb += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(", ")}]\n`
      bomb += "---\nAfter the bomb."
      const r = yield* upload.extract(file("bomb.md", bomb))
      expect(r.content).toBe("After the bomb.")
    }))

  it.effect("a notebook: Markdown cells, code in the kernel's language, text outputs; images and base64 dropped", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extractChunks(file("penguins.ipynb", notebook))
      expect(r.format).toBe("notebook")
      expect(r.type).toBe("text")
      const text = r.data.data.chunks.map((c) => c.content).join("\n\n")
      expect(text).toBe(
        "# Penguin sizes\n\nWe compare flipper lengths.\nchart\n\n" +
          "```python\ndef mean(xs):\n    return sum(xs) / len(xs)\nprint(mean([181, 186, 195]))\n```\n\n" +
          "```text\n187.33333333333334\n```\n\n" +
          "| species | flipper |\n| --- | --- |\n| Adelie | 190 |\n\n" +
          "```text\nKeyError: 'beak'\n```"
      )
      expect(text).not.toContain("iVBORw0KGgo")
      expect(r.data.data.chunks.length).toBe(1)
      expect(r.data.data.chunks[0]!.section).toBe("Penguin sizes")
      expect(r.data.data.metadata.title).toBe("Penguin sizes")
      expect(r.data.data.metadata.properties).toEqual({ kernel: "Python 3 (ipykernel)", language: "python", code_cells: "1" })
    }))

  it.effect("an nbformat 3 notebook; a notebook that is not one fails as corrupt", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extract(file("old.ipynb", notebook3))
      expect(r.content).toBe("## Old style\n\n```python\nx = 41 + 1\nx\n```\n\n```text\n42\n```")
      const bad = yield* Effect.flip(upload.extract(file("bad.ipynb", "{\"cells\": ")))
      expect(bad._tag).toBe("ExtractionError")
      expect(bad._tag === "ExtractionError" && bad.reason).toBe("corrupt")
      const notNb = yield* Effect.flip(upload.extract(file("list.ipynb", "{\"a\": 1}")))
      expect(notNb._tag === "ExtractionError" && notNb.reason).toBe("corrupt")
    }))

  it.effect("each file's own format beside the spec's type: xls, html, markdown", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const xls = manifest.find((f) => f.format === "xls" && f.expect === "ok" && !f.password)
      const html = manifest.find((f) => f.format === "html" && f.expect === "ok")
      expect(xls).toBeDefined()
      expect(html).toBeDefined()
      const a = yield* upload.extract(fixtureFile(xls!.path))
      expect([a.type, a.format]).toEqual(["xlsx", "xls"])
      const b = yield* upload.extract(fixtureFile(html!.path))
      expect([b.type, b.format]).toEqual(["text", "html"])
      const c = yield* upload.extract(file("plain.txt", "   indented first line\nsecond"))
      expect([c.type, c.format, c.content]).toEqual(["text", "txt", "   indented first line\nsecond"])
    }))
})

describe("chunk blocks", () => {
  it("a fenced block is one block with its blank lines; `#` lines in it are code; an unclosed fence runs on", () => {
    expect(blocks("# Title\n\n```py\n# comment\n\n    x = 1\n| not | table |\n```\n\n    indented\n    code\n\ntext")).toEqual([
      { kind: "heading", text: "# Title" },
      { kind: "text", text: "```py\n# comment\n\n    x = 1\n| not | table |\n```" },
      { kind: "text", text: "    indented\n    code" },
      { kind: "text", text: "text" }
    ])
    expect(blocks("~~~\na\n\nb")).toEqual([{ kind: "text", text: "~~~\na\n\nb" }])
    // inline code that starts a line is no fence
    expect(blocks("```js x``` is inline\n\n# H")).toEqual([
      { kind: "text", text: "```js x``` is inline" },
      { kind: "heading", text: "# H" }
    ])
  })
})
