/**
 * RTF through the `Upload` service: a document in the shape Word and WordPad write (font,
 * colour and style tables, `\info`, `\*` destinations, a field, a table, `\'hh` bytes in the
 * document's code page, `\uN` with fallback characters, `\bin` data), and the nesting limit.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { detect } from "../../src/engines/documents/internal/extract/detect.js"
import { maxRtfDepth, readRtf } from "../../src/engines/documents/internal/extract/rtf.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"

const enc = new TextEncoder()

const doc = String.raw`{\rtf1\ansi\ansicpg1252\deff0\nouicompat\deflang1033{\fonttbl{\f0\fnil\fcharset0 Calibri;}{\f1\fswiss Arial;}}
{\colortbl ;\red0\green0\blue255;}
{\stylesheet{\s0 Normal;}{\s1 heading 1;}}
{\*\generator Riched20 10.0.19041}
{\info{\title Mill report}{\subject Water mills of the Aire}{\author Ada Writer}{\creatim\yr2024\mo3\dy5}}
\viewkind4\uc1
\pard\sa200\sl276\slmult1\f0\fs22\lang9 Caf\'e9 on the river \endash  the mill\rquote s wheel.\par
Greek: \u945?\u946? and \uc2\u8364 EU end.\uc1\par
{\field{\*\fldinst{HYPERLINK "https://example.org"}}{\fldrslt{\ul The link text}}}\tab after a tab.\par
\trowd\cellx2000\cellx4000
\intbl River\cell Mills\cell\row
\intbl Aire\cell 12\cell\row
\pard {\*\shppict{\pict\pngblip 89504e47}}{\bin4 ab}c}After the picture.\par
Braces \{ and \} and a backslash \\.\par
}`

describe("RTF reader", () => {
  it("detects RTF by its header and reads text, info, code page bytes and Unicode", () => {
    expect(detect("letter", enc.encode(doc))).toEqual({ _tag: "format", format: "rtf" })
    const { info, text } = readRtf(enc.encode(doc))
    expect(info).toEqual({ title: "Mill report", subject: "Water mills of the Aire", author: "Ada Writer" })
    expect(text).not.toContain("Calibri")
    expect(text).not.toContain("Riched20")
    expect(text).not.toContain("HYPERLINK")
  })
})

layer(LocalFiles.layer({ timeout: "60 seconds" }))("RTF through the Upload service", (it) => {
  it.effect("paragraphs, a table, the field's result; the title and author from \\info", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const r = yield* upload.extractChunks({ name: "report.rtf", data: enc.encode(doc) })
      expect([r.type, r.format]).toEqual(["docx", "rtf"])
      expect(r.data.data.metadata.title).toBe("Mill report")
      expect(r.data.data.metadata.description).toBe("Water mills of the Aire")
      expect(r.data.data.metadata.properties).toEqual({ author: "Ada Writer" })
      expect(r.data.data.chunks.map((c) => c.content).join("\n")).toBe(
        "Café on the river – the mill’s wheel.\n" +
          "Greek: αβ and € end.\n" +
          "The link text\tafter a tab.\n" +
          "River | Mills\n" +
          "Aire | 12\n" +
          "After the picture.\n" +
          "Braces { and } and a backslash \\."
      )
    }))

  it.effect("groups nested deeper than the limit are limit_exceeded; a file that is not RTF is corrupt", () =>
    Effect.gen(function*() {
      const upload = yield* Upload.Upload
      const deep = "{\\rtf1 " + "{".repeat(maxRtfDepth + 1) + "x" + "}".repeat(maxRtfDepth + 1) + "}"
      const e = yield* Effect.flip(upload.extract({ name: "deep.rtf", data: enc.encode(deep) }))
      expect([e._tag, e._tag === "ExtractionError" && e.reason]).toEqual(["ExtractionError", "limit_exceeded"])
      const ok = yield* upload.extract({ name: "shallow.rtf", data: enc.encode("{\\rtf1 " + "{".repeat(100) + "deep text" + "}".repeat(100) + "}") })
      expect(ok.content).toBe("deep text")
      const bad = yield* Effect.flip(upload.extract({ name: "fake.rtf", data: enc.encode("not rtf at all") }))
      expect(bad._tag === "ExtractionError" && bad.reason).toBe("corrupt")
    }))
})
