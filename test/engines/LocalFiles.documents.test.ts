/**
 * The formats of issue 26 through the `Upload` service (the local engine, in its extraction
 * processes): Markdown front matter, Jupyter notebooks, OpenDocument text, spreadsheet and
 * presentation (packages and flat XML, with a zip bomb and a DTD), EPUB 2 and 3, each file's own `format`,
 * and the chunk's `section` for citations. The documents are small ones written here in the
 * shapes the tools that make them write (Jekyll/Hugo front matter, nbformat 4 and 3,
 * LibreOffice's ODF packages); the benchmark corpus holds the third-party ones.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { zipSync } from "fflate"
import * as Upload from "../../src/api/Upload.js"
import { blocks } from "../../src/engines/documents/internal/chunk/chunker.js"
import { adocHeadings, rstHeadings } from "../../src/engines/documents/internal/extract/markup.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { fixtureFile, manifest } from "./fixtures.js"
import { flatOdf, metaXml, odfPackage } from "./odf-docs.js"

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

const odtBody = `<office:text><text:sequence-decls/><text:h text:style-name="H1" text:outline-level="1">Annual <text:span>report</text:span></text:h>
<text:p text:style-name="P1">First   paragraph<text:s text:c="3"/>with <text:a xlink:href="https://x.test">a link</text:a>.<text:note text:id="ftn1" text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body><text:p>The footnote text.</text:p></text:note-body></text:note></text:p>
<text:list text:style-name="L1"><text:list-item><text:p>one</text:p><text:list><text:list-item><text:p>nested</text:p></text:list-item></text:list></text:list-item><text:list-item><text:p>two</text:p></text:list-item></text:list>
<table:table table:name="Table1"><table:table-column table:number-columns-repeated="3"/><table:table-header-rows><table:table-row><table:table-cell office:value-type="string"><text:p>Name</text:p></table:table-cell><table:table-cell table:number-columns-spanned="2"><text:p>Value</text:p></table:table-cell><table:covered-table-cell/></table:table-row></table:table-header-rows><table:table-row><table:table-cell><text:p>a|b</text:p></table:table-cell><table:table-cell><text:p>1</text:p></table:table-cell><table:table-cell><text:p>2</text:p></table:table-cell></table:table-row></table:table>
<text:h text:outline-level="2">Second</text:h><text:p>After<office:annotation><dc:creator>Bob</dc:creator><text:p>check this</text:p></office:annotation> text, see <text:bookmark-ref text:reference-format="text" text:ref-name="intro">Annual report</text:bookmark-ref>.</text:p>
<text:tracked-changes><text:changed-region text:id="c1"><text:deletion><text:p>deleted words</text:p></text:deletion></text:changed-region></text:tracked-changes>
<text:section text:name="S1"><text:p>In a section <draw:frame draw:name="Image1"><draw:image xlink:href="Pictures/x.png"/><svg:title>A chart of sales</svg:title></draw:frame></text:p></text:section>
</office:text>`

const odtText = "# Annual report\n\nFirst paragraph with a link.[1]\n\n- one\n  - nested\n- two\n\n" +
  "| Name | Value |  |\n| --- | --- | --- |\n| a\\|b | 1 | 2 |\n\n## Second\n\nAfter text, see Annual report.\n\nIn a section A chart of sales\n\n" +
  "Notes:\n\n[1] The footnote text.\n\nComments:\n\n- Bob: check this"

const odpBody = `<office:presentation><draw:page draw:name="page1"><draw:frame presentation:class="title"><draw:text-box><text:p>Quarterly review</text:p></draw:text-box></draw:frame><draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item><text:p>Revenue up</text:p></text:list-item><text:list-item><text:p>Costs down</text:p></text:list-item></text:list></draw:text-box></draw:frame><draw:frame presentation:class="page-number"><draw:text-box><text:p>1</text:p></draw:text-box></draw:frame><presentation:notes><draw:page-thumbnail presentation:class="page"/><draw:frame presentation:class="notes"><draw:text-box><text:p>Mention the new office.</text:p></draw:text-box></draw:frame></presentation:notes></draw:page><draw:page draw:name="page2"><draw:frame><table:table><table:table-row><table:table-cell><text:p>Region</text:p></table:table-cell><table:table-cell><text:p>Total</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell><text:p>North</text:p></table:table-cell><table:table-cell><text:p>12</text:p></table:table-cell></table:table-row></table:table></draw:frame></draw:page></office:presentation>`

// LibreOffice writes a sheet's unused rows and columns as one repeated row of repeated cells
const odsBody = `<office:spreadsheet><table:table table:name="Sales"><table:table-column table:number-columns-repeated="2"/><table:table-row><table:table-cell office:value-type="string"><text:p>Region</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>Total</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="string"><text:p>North</text:p></table:table-cell><table:table-cell office:value-type="float" office:value="12.5"><text:p>12.5</text:p></table:table-cell></table:table-row><table:table-row table:number-rows-repeated="1048574"><table:table-cell table:number-columns-repeated="1024"/></table:table-row></table:table><table:table table:name="Costs"><table:table-row><table:table-cell office:value-type="string"><text:p>Rent</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>`

layer(LocalFiles.layer({ timeout: "60 seconds" }))("OpenDocument through the Upload service", (it) => {
  it.effect("ODT and flat FODT: headings, lists, tables, notes, comments; no deleted text; meta as title and properties", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const meta = metaXml("The annual report", "What the year brought", ["finance", "2024"])
      for (const f of [{ name: "report.odt", data: odfPackage("odt", odtBody, meta) }, { name: "report.fodt", data: flatOdf("odt", odtBody, meta) }]) {
        const r = yield* upload.extractChunks(f)
        expect([r.type, r.format]).toEqual(["docx", "odt"])
        expect(r.data.data.chunks.map((c) => c.content).join("\n\n")).toBe(odtText)
        expect(r.data.data.metadata.title).toBe("The annual report")
        expect(r.data.data.metadata.description).toBe("What the year brought")
        expect(r.data.data.metadata.properties).toEqual({
          creator: "Ada Lovelace",
          generator: "LibreOffice/7.4.7.2$Linux_X86_64",
          keywords: "finance, 2024"
        })
        expect(r.usage.total_pages).toBe(2)
        expect(r.data.data.chunks.map((c) => c.section)).toEqual(["Annual report", "Second"])
      }
      // detected by content: an ODT without its extension
      const bare = yield* upload.extract({ name: "report", data: odfPackage("odt", odtBody) })
      expect(bare.format).toBe("odt")
    }))

  it.effect("ODP: one page per slide, the title as heading and name, notes; footers and slide numbers left out", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extract({ name: "deck.odp", data: odfPackage("odp", odpBody) }, { page_based: true })
      expect([r.type, r.format]).toEqual(["pptx", "odp"])
      expect(r.pages).toEqual([
        { page: 1, name: "Quarterly review", content: "## Quarterly review\n\n- Revenue up\n- Costs down\n\n### Notes\n\nMention the new office." },
        { page: 2, name: "page2", content: "| Region | Total |\n| --- | --- |\n| North | 12 |" }
      ])
      const flat = yield* upload.extract({ name: "deck.fodp", data: flatOdf("odp", odpBody) })
      expect(flat.content).toBe(r.content)
    }))

  it.effect("ODS and flat FODS: every sheet as a table, chunks name their sheet; a million repeated empty rows cost nothing", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      for (const f of [{ name: "sales.ods", data: odfPackage("ods", odsBody, metaXml("Sales", "")) }, { name: "sales.fods", data: flatOdf("ods", odsBody) }]) {
        const r = yield* upload.extractChunks(f)
        expect([r.type, r.format]).toEqual(["xlsx", "ods"])
        expect(r.data.data.chunks.map((c) => [c.content, c.from_page, c.from_sheet])).toEqual([
          ["## Sales\n\n| Region | Total |\n| --- | --- |\n| North | 12.5 |", 1, "Sales"],
          ["## Costs\n\n| Rent |\n| --- |", 2, "Costs"]
        ])
      }
    }))

  it.effect("hostile ODF: a zip bomb is limit_exceeded, a DTD (billion laughs) is corrupt, a package without content.xml is corrupt; data descriptors are no bomb", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const reason = (f: Upload.UploadFile) =>
        Effect.map(Effect.flip(upload.extract(f)), (e) => (e._tag === "ExtractionError" ? e.reason : e._tag))
      const big = `<office:text><text:p>${"A".repeat(40 * 1024 * 1024)}</text:p></office:text>`
      const bomb = odfPackage("odt", big)
      expect(bomb.length).toBeLessThan(200_000)
      expect(yield* reason({ name: "bomb.odt", data: bomb })).toBe("limit_exceeded")
      const lol = `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>`
      const flat = new TextDecoder().decode(flatOdf("odt", "<office:text><text:p>&lol3;</text:p></office:text>"))
        .replace("?>\n", `?>\n${lol}`)
      expect(yield* reason({ name: "lol.fodt", data: enc.encode(flat) })).toBe("corrupt")
      const inPackage = odfPackage("ods", odsBody, undefined, {
        "content.xml": enc.encode(`<?xml version="1.0"?>${lol}<office:document-content><office:body>&lol3;</office:body></office:document-content>`)
      })
      expect(yield* reason({ name: "lol.ods", data: inPackage })).toBe("corrupt")
      const { Zip, ZipDeflate, ZipPassThrough } = yield* Effect.promise(() => import("fflate"))
      // a package written as OpenOffice writes it: entries with data descriptors (no sizes in
      // the local headers); 1.5 MiB of words inflating ~5 times is no bomb
      const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
      let seed = 7
      const para = () => Array.from({ length: 12 }, () => words[(seed = (seed * 48271) % 2147483647) % 8]).join(" ")
      const long = Array.from({ length: 20_000 }, () => `<text:p>${para()}</text:p>`).join("")
      const parts: Array<Uint8Array> = []
      const streamed = new Zip((err, chunk) => {
        if (err) throw err
        parts.push(chunk)
      })
      const entry = (name: string, data: Uint8Array, store: boolean) => {
        const e = store ? new ZipPassThrough(name) : new ZipDeflate(name, { level: 6 })
        streamed.add(e)
        e.push(data, true)
      }
      entry("mimetype", enc.encode("application/vnd.oasis.opendocument.text"), true)
      entry("content.xml", enc.encode(`<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>${long}</office:text></office:body></office:document-content>`), false)
      streamed.end()
      const descriptorOdt = new Uint8Array(Buffer.concat(parts))
      expect(descriptorOdt[6]! & 0x08).toBe(0x08) // general purpose flag bit 3: sizes in a data descriptor
      const ok = yield* upload.extract({ name: "descriptors.odt", data: descriptorOdt })
      expect(ok.content.split("\n\n").length).toBe(20_000)
      const empty = zipSync({ mimetype: [enc.encode("application/vnd.oasis.opendocument.text"), { level: 0 }], "meta.xml": enc.encode("<x/>") })
      expect(yield* reason({ name: "empty.odt", data: empty })).toBe("corrupt")
    }))
})

/** An EPUB as a book tool writes one: stored `mimetype` first, the container, the OPF, chapters. */
const epub = (version: 2 | 3, chapters: Record<string, string>, extra: Record<string, Uint8Array> = {}) => {
  const xhtml = (body: string) =>
    enc.encode(`<?xml version="1.0" encoding="utf-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>x</title><style>p{}</style></head><body>${body}</body></html>`)
  const nav = `<nav epub:type="toc"><ol><li><a href="text/ch2.xhtml">The Second Chapter</a></li><li><a href="text/ch1.xhtml#start">Opening</a></li></ol></nav>`
  const ncx = `<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap><navPoint id="n1" playOrder="1"><navLabel><text>Opening</text></navLabel><content src="text/ch1.xhtml"/></navPoint><navPoint id="n2" playOrder="2"><navLabel><text>The Second Chapter</text></navLabel><content src="text/ch2.xhtml"/></navPoint></navMap></ncx>`
  const opf = `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="${version}.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>A Small Book</dc:title><dc:creator>Jane Writer</dc:creator><dc:language>en</dc:language><dc:description>&lt;p&gt;A book &lt;b&gt;about&lt;/b&gt; tests.&lt;/p&gt;</dc:description></metadata>` +
    `<manifest><item id="ch2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/><item id="ch1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/><item id="cover" href="cover.jpg" media-type="image/jpeg"/>` +
    (version === 3 ? `<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>` : `<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>`) +
    `</manifest><spine${version === 2 ? ` toc="ncx"` : ""}><itemref idref="cover"/><itemref idref="ch1"/><itemref idref="ch2"/></spine></package>`
  return zipSync({
    mimetype: [enc.encode("application/epub+zip"), { level: 0 }],
    "META-INF/container.xml": enc.encode(`<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`),
    "OEBPS/content.opf": enc.encode(opf),
    ...(version === 3 ? { "OEBPS/nav.xhtml": xhtml(nav) } : { "OEBPS/toc.ncx": enc.encode(ncx) }),
    ...Object.fromEntries(Object.entries(chapters).map(([k, v]) => [`OEBPS/text/${k}`, xhtml(v)])),
    ...extra
  })
}

const chapters = {
  "ch1.xhtml": `<p id="start">It was a quiet morning in the valley.</p><p>The river ran &amp; the mill turned.</p>`,
  "ch2.xhtml": `<h2>Chapter Two</h2><p>Evening came.</p><table><tr><th>Day</th><th>Miles</th></tr><tr><td>Monday</td><td>12</td></tr></table>`
}

layer(LocalFiles.layer({ timeout: "60 seconds" }))("EPUB through the Upload service", (it) => {
  it.effect("EPUB 3 and EPUB 2: chapters in spine order, one page each named from the navigation; metadata from the OPF", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      for (const version of [3, 2] as const) {
        const r = yield* upload.extractChunks({ name: `book${version}.epub`, data: epub(version, chapters) })
        expect([r.type, r.format]).toEqual(["text", "epub"])
        expect(r.data.data.chunks.map((c) => [c.from_page, c.section, c.content])).toEqual([
          [1, "Opening", "# Opening\n\nIt was a quiet morning in the valley.\n\nThe river ran & the mill turned."],
          [2, "Chapter Two", "## Chapter Two\n\nEvening came.\n\n| Day | Miles |\n| --- | --- |\n| Monday | 12 |"]
        ])
        expect(r.usage.total_pages).toBe(2)
        const meta = r.data.data.metadata
        expect([meta.title, meta.description]).toEqual(["A Small Book", "A book about tests."])
        expect(meta.properties).toEqual({ creator: "Jane Writer", language: "en" })
        const pages = yield* upload.extract({ name: `book${version}.epub`, data: epub(version, chapters) }, { page_based: true })
        expect(pages.pages?.map((p) => p.name)).toEqual(["Opening", "The Second Chapter"])
      }
    }))

  it.effect("hostile EPUB: a zip bomb chapter is limit_exceeded; no container or OPF is corrupt", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const reason = (f: Upload.UploadFile) =>
        Effect.map(Effect.flip(upload.extract(f)), (e) => (e._tag === "ExtractionError" ? e.reason : e._tag))
      const bomb = epub(3, { ...chapters, "ch1.xhtml": `<p>${"A".repeat(40 * 1024 * 1024)}</p>` })
      expect(bomb.length).toBeLessThan(200_000)
      expect(yield* reason({ name: "bomb.epub", data: bomb })).toBe("limit_exceeded")
      const noContainer = zipSync({ mimetype: [enc.encode("application/epub+zip"), { level: 0 }], "a.xhtml": enc.encode("<p>x</p>") })
      expect(yield* reason({ name: "broken.epub", data: noContainer })).toBe("corrupt")
    }))
})

describe("reStructuredText and AsciiDoc headings", () => {
  it("rst: over- and underlined titles, levels in order of first appearance; transitions and literal blocks stay", () => {
    const rst = [
      "=====",
      "Guide",
      "=====",
      "",
      "Intro text.",
      "",
      "Install",
      "-------",
      "",
      "Run this::",
      "",
      "    pip install thing",
      "    ------",
      "",
      "Details",
      "~~~~~~~",
      "",
      "----------",
      "",
      "Usage",
      "-----",
      "Text."
    ].join("\n")
    expect(rstHeadings(rst)).toBe(
      "# Guide\n\nIntro text.\n\n## Install\n\nRun this::\n\n    pip install thing\n    ------\n\n### Details\n\n----------\n\n## Usage\nText."
    )
  })

  it("AsciiDoc: = levels (document title), nothing inside delimited blocks", () => {
    const adoc = "= User Guide\nAda Writer\n\n== Setup\n\n----\n== not a heading\n----\n\n=== Details ===\ntext"
    expect(adocHeadings(adoc)).toBe("# User Guide\nAda Writer\n\n## Setup\n\n----\n== not a heading\n----\n\n### Details\ntext")
  })
})

layer(LocalFiles.layer({ timeout: "60 seconds" }))("reStructuredText and AsciiDoc through the Upload service", (it) => {
  it.effect("the heading is the title and each chunk's section; the format is the file's own", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extractChunks(file("guide.rst", "Guide\n=====\n\nIntro.\n\nInstall\n-------\n\nSteps."))
      expect([r.type, r.format, r.data.data.metadata.title]).toEqual(["text", "rst", "Guide"])
      expect(r.data.data.chunks.map((c) => [c.section, c.content])).toEqual([["Guide", "# Guide\n\nIntro."], ["Install", "## Install\n\nSteps."]])
      const a = yield* upload.extractChunks(file("guide.adoc", "= Guide\n\n== Install\n\nSteps."))
      expect([a.format, a.data.data.metadata.title]).toEqual(["asciidoc", "Guide"])
      expect(a.data.data.chunks.map((c) => c.section)).toEqual(["Guide", "Install"])
    }))
})

const jats = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.2 20190208//EN" "JATS-archivearticle1.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article" dtd-version="1.2">
<front><journal-meta><journal-title-group><journal-title>Journal of Tests</journal-title></journal-title-group><issn>1234-5678</issn></journal-meta>
<article-meta><title-group><article-title>Rivers and
  their mills</article-title></title-group><abstract><p>We measure
  how mills use rivers.</p></abstract></article-meta></front>
<body><sec id="s1"><title>Introduction</title><p>Level 2 with an
  <ext-link ext-link-type="uri" xlink:href="https://x.test">embedded
  link</ext-link> in the
  text.<xref ref-type="bibr" rid="b1">1</xref></p>
<sec id="s1.1"><title>Background</title><p>Older work.</p>
<list list-type="bullet"><list-item><p>first point</p></list-item><list-item><p>second point</p></list-item></list></sec></sec>
<sec><title>Results</title><table-wrap id="t1"><label>Table 1</label><caption><p>Mills per river.</p></caption><table><thead><tr><th>River</th><th>Mills</th></tr></thead><tbody><tr><td>Aire</td><td>12</td></tr></tbody></table></table-wrap></sec></body>
<back><ref-list><title>References</title><ref id="b1"><mixed-citation>Smith J. Mills. 1990.</mixed-citation></ref></ref-list></back></article>`

const docbook = `<?xml version="1.0"?><book xmlns="http://docbook.org/ns/docbook" version="5.0"><info><title>The Guide</title><abstract><para>How to use it.</para></abstract></info>
<chapter><title>Getting started</title><para>Install the
  package first.</para><section><title>Requirements</title><itemizedlist><listitem><para>Node 20</para></listitem></itemizedlist>
<programlisting>npm install
  thing</programlisting></section></chapter></book>`

const tei = `<?xml version="1.0"?><TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>A Letter</title></titleStmt><publicationStmt><p>Header text that is not the letter.</p></publicationStmt></fileDesc></teiHeader>
<text><body><div type="letter"><head>To my friend</head><p>Dear friend,<lb/>the weather
  is fine.</p></div></body></text></TEI>`

layer(LocalFiles.layer({ timeout: "60 seconds" }))("JATS, DocBook and TEI through the Upload service", (it) => {
  it.effect("sections as headings by depth, paragraphs on one line, lists, tables; title and abstract as metadata", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const a = yield* upload.extractChunks(file("article.xml", jats))
      expect(a.format).toBe("xml")
      expect(a.data.data.metadata.title).toBe("Rivers and their mills")
      expect(a.data.data.metadata.description).toBe("We measure how mills use rivers.")
      expect(a.data.data.chunks.map((c) => c.content).join("\n\n")).toBe(
        "# Rivers and their mills\n\n## Abstract\n\nWe measure how mills use rivers.\n\n" +
          "## Introduction\n\nLevel 2 with an embedded link in the text.1\n\n### Background\n\nOlder work.\n\n- first point\n- second point\n\n" +
          "## Results\n\nTable 1\n\nMills per river.\n\n| River | Mills |\n| --- | --- |\n| Aire | 12 |\n\n## References\n\nSmith J. Mills. 1990."
      )
      expect(a.data.data.chunks.map((c) => c.section)).toContain("Background")
      const d = yield* upload.extract(file("guide.xml", docbook))
      expect(d.content).toBe("# The Guide\n\n# Getting started\n\nInstall the package first.\n\n## Requirements\n\n- Node 20\n\n```\nnpm install\n  thing\n```")
      const t = yield* upload.extractChunks(file("letter.xml", tei))
      expect(t.data.data.metadata.title).toBe("A Letter")
      expect(t.data.data.chunks.map((c) => c.content).join("\n\n")).toBe("# A Letter\n\n## To my friend\n\nDear friend, the weather is fine.")
    }))

  it.effect("a PubMed Central .nxml file, and a JATS file without an XML declaration or extension, are read as JATS", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const bare = jats.replace(/^<\?xml[^>]*>\s*/, "")
      for (const name of ["PMC123.nxml", "article"]) {
        const r = yield* upload.extractChunks(file(name, bare))
        expect(r.format).toBe("xml")
        expect(r.data.data.metadata.title).toBe("Rivers and their mills")
        expect(r.data.data.chunks[0]?.content).toContain("# Rivers and their mills")
      }
    }))
})
