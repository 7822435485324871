/**
 * The HTML → Markdown writer (`extract/markdown.ts`), on small HTML made here: the structure each
 * element gives, whitespace as a browser collapses it, hidden content dropped; the document
 * engine's plain flavour and the web engine's rich one (written as the turndown setup it
 * replaced wrote the same HTML, except where a case says otherwise).
 */
import { describe, expect, it } from "@effect/vitest"
import { htmlToMarkdown, visibleText, parseHtml } from "../../src/engines/documents/internal/extract/markdown.js"

describe("htmlToMarkdown", () => {
  it("paragraphs, line breaks and inline elements: whitespace collapsed, emphasis plain, links as text", () => {
    expect(htmlToMarkdown(`<p>Intro  <b>bold</b>\n text<br>second <a href="https://x.test/a">line</a></p><p>next</p>`)).toBe(
      "Intro bold text\nsecond line\n\nnext"
    )
  })

  it("nested, loose and numbered lists; an <ol> counts from its start", () => {
    const md = htmlToMarkdown(
      `<ul><li>one<ul><li>nested a</li><li>nested b</li></ul></li><li><p>two</p><p>two more</p></li></ul><ol start="3"><li>three</li><li>four</li></ol>`
    )
    expect(md).toBe("- one\n  - nested a\n  - nested b\n- two\n\n  two more\n\n3. three\n4. four")
  })

  it("quotes, code blocks as written, inline code, headings and rules", () => {
    const md = htmlToMarkdown(
      `<blockquote><p>quoted</p><p>again</p></blockquote><pre><code class="language-js">let x = 1\n  indented</code></pre><p>inline <code>a  b</code> end</p><hr><h2> Head <em>ing</em> </h2>after`
    )
    expect(md).toBe("> quoted\n>\n> again\n\n```js\nlet x = 1\n  indented\n```\n\ninline `a b` end\n\n---\n\n## Head ing\n\nafter")
  })

  it("tables: caption, spanned header, escaped pipes, cell paragraphs on one line; a layout table's cells are blocks", () => {
    const md = htmlToMarkdown(
      `<table><caption>Rates</caption><tr><th colspan=2>Header</th></tr><tr><td>a|b</td><td><p>c</p><p>d</p></td></tr></table>` +
        `<table><tr><td><table><tr><td>inner</td></tr></table></td><td>layout cell</td></tr></table>`
    )
    expect(md).toBe("Rates\n\n| Header |  |\n| --- | --- |\n| a\\|b | c d |\n\n| inner |\n| --- |\n\nlayout cell")
  })

  it("drops what a reader never sees: head, scripts, styles, templates, hidden elements", () => {
    const html = `<html><head><title>T</title><style>.a{}</style></head><body><div>shown<span hidden>h1</span>` +
      `<span aria-hidden="true">h2</span><p style="DISPLAY: none">h3</p><p style="visibility:hidden">h4</p>` +
      `<script>h5</script><template>h6</template><noscript>h7</noscript></div><img alt="a picture"></body></html>`
    expect(htmlToMarkdown(html)).toBe("shown\n\na picture")
    expect(visibleText(parseHtml(html))).toBe("shown")
  })

  it("text without any element, entities decoded, no escapes", () => {
    expect(htmlToMarkdown("a -&gt; b [1] *star* _under_")).toBe("a -> b [1] *star* _under_")
  })
})

describe("htmlToMarkdown, rich flavour (the web engine's)", () => {
  const rich = (html: string) => htmlToMarkdown(html, { inline: "rich" })

  it("links with titles, emphasis with its whitespace outside, strike-through; empty emphasis dropped", () => {
    expect(
      rich(
        `<p>Intro  <b>bold </b>text<br>second <a href="https://x.test/a" title='say "hi"'>line</a> and ` +
          `<a href="https://x.test/b c">sp</a>, <a href="https://x.test/(p)">paren</a>.</p>` +
          `<p>next <i> it </i>, <strong></strong>, <del>gone</del> <s>s</s> <a>no href</a></p>`
      )
    ).toBe(
      `Intro **bold** text\nsecond [line](https://x.test/a "say \\"hi\\"") and [sp](<https://x.test/b c>), ` +
        `[paren](https://x.test/\\(p\\)).\n\nnext *it* , , ~~gone~~ ~~s~~ no href`
    )
  })

  it("images (escaped alt, title; none without src), a linked image, an empty link", () => {
    // turndown: two spaces after the first image, none before the empty link (its whitespace rule)
    expect(
      rich(
        `<p><img src="https://x.test/i.png" alt="a [b] *c*" title="T"> <img alt="no src"> ` +
          `<a href="https://x.test/"><img src="https://x.test/l.png" alt="logo"></a> <a href="https://x.test/e"></a></p>`
      )
    ).toBe(`![a \\[b\\] \\*c\\*](https://x.test/i.png "T") [![logo](https://x.test/l.png)](https://x.test/) [](https://x.test/e)`)
  })

  it("escapes Markdown characters in text, those that only matter there where a line starts", () => {
    expect(
      rich(
        "<p>a_b *c* [d] `e` back\\slash 1. x</p><p>- dash</p><p>+ plus</p><p># hash</p><p>1. one</p>" +
          "<p>&gt; quote</p><p>=== eq</p><p>~~~ t</p><p>a<br>- b</p><p><b>1. Intro</b></p>"
      )
    ).toBe(
      "a\\_b \\*c\\* \\[d\\] \\`e\\` back\\\\slash 1. x\n\n\\- dash\n\n\\+ plus\n\n\\# hash\n\n1\\. one\n\n" +
        "\\> quote\n\n\\=== eq\n\n\\~~~ t\n\na\n\\- b\n\n**1\\. Intro**"
    )
    // turndown escaped where any text node started, mid-line too (`**\-x**`); here only where a line starts
    expect(rich("<p>text <b>-x</b> 2. y</p>")).toBe("text **-x** 2. y")
  })

  it("inline code between enough backticks, not escaped; code blocks fenced past the fences they hold", () => {
    expect(rich("<p>inline <code>a  b_c</code>, <code>x `y` z</code>, <code>`tick</code>, <code> </code>, <code> pad </code>.</p>"))
      .toBe("inline `a b_c`, ``x `y` z``, `` `tick ``, , `pad` .")
    // turndown fenced only <pre><code>: a bare <pre> was escaped running text
    expect(rich("<pre><code class=\"language-js\">let x = 1\n```\n  indented</code></pre><pre>bare *pre*</pre>"))
      .toBe("````js\nlet x = 1\n```\n  indented\n````\n\n```\nbare *pre*\n```")
  })

  it("lists: a blank line after an item that ends with a block; numbers from start; task list boxes", () => {
    expect(
      rich(
        `<ul><li><p>one</p></li><li><p>two</p></li><li>three</li><li>four<ul><li>nested</li></ul></li><li>five</li></ul>` +
          `<ol start="3"><li>three</li><li><div>four</div></li><li>five</li></ol>`
      )
    ).toBe("- one\n\n- two\n\n- three\n- four\n  - nested\n- five\n\n3. three\n4. four\n\n5. five")
    // turndown: "- [ ]  todo" (the box's space and the text's)
    expect(rich(`<ul><li><input type="checkbox" checked>done</li><li><input type="checkbox"> todo</li><li><label><input type="checkbox">lab</label></li></ul>`))
      .toBe("- [x] done\n- [ ] todo\n- [ ] lab")
  })

  it("headings keep their inline Markdown on one line; quotes; tables of plain cells, a spanned cell repeated", () => {
    // turndown: the <br> split the heading over two lines; its table cells were glued textContent ("cd")
    expect(rich(`<h2>Head <a href="https://x.test/h">link</a> <em>em</em><br>more</h2><h3><img src="https://x.test/i.png" alt="pic"></h3><h1></h1>`))
      .toBe("## Head [link](https://x.test/h) *em* more\n\n### ![pic](https://x.test/i.png)")
    expect(rich(`<blockquote><p>quoted <em>x</em></p><p>again</p></blockquote><hr>`)).toBe("> quoted *x*\n>\n> again\n\n---")
    expect(rich(`<table><tr><th colspan="2">Wide</th></tr><tr><td><a href="https://x.test/">a</a>|b</td><td><b>c</b><p>d</p></td></tr></table>`))
      .toBe("| Wide | Wide |\n| --- | --- |\n| a\\|b | c d |")
  })

  it("a link around blocks links the text of each (turndown wrote `[` and `](…)` on lines of their own)", () => {
    expect(rich(`<div><a href="https://x.test/card"><h3>Card title</h3><p>Card <b>text</b></p></a> after</div>`))
      .toBe("### [Card title](https://x.test/card)\n\n[Card **text**](https://x.test/card)\n\nafter")
  })

  it("hidden elements dropped, aria-hidden ones kept (visible: Wikipedia's formula images); a drawing between words is a space", () => {
    // turndown kept hidden text ("hiddenh")
    expect(
      rich(
        `<p>a <span aria-hidden="true"><img src="https://x.test/f.svg" alt="x^2"></span><span style="display:none">hidden</span>` +
          `<span hidden>h</span> b</p><p>one<svg> <title>icon</title> </svg>two</p>`
      )
    ).toBe("a ![x^2](https://x.test/f.svg) b\n\none two")
  })
})

describe("hostile nesting", () => {
  it("a page of 50,000 nested elements keeps its text in both flavours (the tree's depth is bounded, no stack overflow)", () => {
    const n = 50_000
    const html = `<p>top</p>${"<div><span>".repeat(n)}deep <b>text</b> here${"</span></div>".repeat(n)}<p>after</p>`
    for (const inline of ["plain", "rich"] as const) {
      const md = htmlToMarkdown(html, { inline })
      expect(md).toMatch(/^top\n\n/)
      expect(md).toContain("deep text here")
      expect(md).toMatch(/after$/)
    }
    expect(visibleText(parseHtml(html))).toContain("deep text here")
  })

  it("the web engine's page processing survives it too", async () => {
    const { processHtml } = await import("../../src/engines/web/internal/html.js")
    const page = processHtml(`<html><body>${"<div>".repeat(20_000)}deep words${"</div>".repeat(20_000)}</body></html>`, "http://example.test/")
    expect(page.markdown).toContain("deep words")
  })
})
