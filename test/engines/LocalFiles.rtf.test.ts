/**
 * RTF through the `Upload` service: a document in the shape Word and WordPad write (font,
 * colour and style tables, `\info`, `\*` destinations, a field, a table, `\'hh` bytes in the
 * document's code page, `\uN` with fallback characters, `\bin` data), and the nesting limit;
 * `\'hh` bytes in the current font's charset (`\fcharsetN`, `\cpgN`) and in Mac code pages.
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

/** Reads a one-line RTF body after a font table; the text as `extractRtf` would see it. */
const textOf = (head: string, fonts: string, body: string) => readRtf(enc.encode(`{\\rtf1${head}{\\fonttbl${fonts}}\n${body}\\par\n}`)).text.trim()

describe("RTF code pages", () => {
  it("decodes \\'hh bytes in the charset of the current font, as Word writes them", () => {
    const fonts = String.raw`{\f0\fswiss\fcharset0 Arial;}{\f1\froman\fcharset161 Arial Greek;}{\f2\froman\fcharset204 Arial Cyr;}` +
      String.raw`{\f3\fnil\fcharset128 MS Mincho;}{\f4\fnil\fcharset134 SimSun;}{\f5\fnil\fcharset136 MingLiU;}` +
      String.raw`{\f6\froman\fcharset177 Arial Hebrew;}{\f7\froman\fcharset238 Arial CE;}{\f8\froman\fcharset162 Arial Tur;}` +
      String.raw`{\f9\fnil\fcharset222 Tahoma;}{\f10\froman\fcharset186 Arial Baltic;}{\f11\fnil\fcharset178 Arial Arabic;}`
    const body = String.raw`\f0 caf\'e9 \f1\'d9 \f2\'cf\'f0\'e8\'e2\'e5\'f2 \f3\'83\'65\'83\'58\'83\'67 \f4\'d6\'d0\'ce\'c4 \f5\'a4\'a4\'a4\'e5 ` +
      String.raw`\f6\'f9\'ec\'e5\'ed \f7\'a3\'f3d\'9f \f8\'f0\'fd\'fe \f9\'e4\'b7\'c2 \f10\'c0\'cb \f11\'e3\'d1\'cd\'c8\'c7`
    expect(textOf("\\ansi\\ansicpg1252\\deff0", fonts, body)).toBe("café Ω Привет テスト 中文 中文 שלום Łódź ğış ไทย ĄĖ مرحبا")
  })

  it("reads a Shift-JIS trail byte written as a plain character; a font's charset ends with its group", () => {
    // テスト is 83 65 83 58 83 67: Word writes the ASCII trail bytes as characters
    const fonts = String.raw`{\f0\fnil\fcharset0 Arial;}{\f1\fnil\fcharset128 MS Gothic;}`
    expect(textOf("\\ansi\\deff0", fonts, String.raw`{\f1\'83e\'83X\'83g} and {\f1 \'83\'65}X \'e9`)).toBe("テスト and テX é")
  })

  it("the document's code page (\\ansicpg, \\mac) for fonts without a charset; \\cpgN before \\fcharsetN; \\fcharset0 is Windows-1252", () => {
    expect(textOf("\\ansi\\ansicpg1251\\deff0", "{\\f0 Arial;}", "\\'cf\\'f0\\'e8")).toBe("При")
    expect(textOf("\\mac\\deff0", "{\\f0 Helvetica;}", "caf\\'8e")).toBe("café")
    // a font table without a group per font, as Cocoa writes it; 10001 is Mac Japanese
    expect(textOf("\\mac\\ansicpg10001", "\\f0\\fnil\\fcharset78 HiraKakuPro-W6;\\f1\\fswiss\\fcharset77 Helvetica;", "\\f0 \\'82\\'a8 \\f1 caf\\'8e"))
      .toBe("お café")
    expect(textOf("\\mac\\ansicpg10007\\deff0", "{\\f0 Geneva;}", "\\'84")).toBe("Д")
    expect(textOf("\\ansi\\deff0", "{\\f0\\fcharset238\\cpg1251 Arial;}", "\\'cf")).toBe("П")
    // the © of a Big5 document's Latin font
    expect(textOf("\\ansi\\ansicpg950", "\\f0\\fnil\\fcharset0 LucidaGrande;", "\\f0 \\'a9 2004")).toBe("© 2004")
    expect(textOf("\\ansi\\deff1", "{\\f0\\fcharset0 Arial;}{\\f1\\fcharset204 Arial Cyr;}", "\\'cf\\f0\\'e9\\plain\\'cf")).toBe("ПéП")
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
