/**
 * The document engine's HTML → Markdown writer (`extract/markdown.ts`), on small HTML made here:
 * the structure each element gives, whitespace as a browser collapses it, hidden content dropped.
 */
import { describe, expect, it } from "@effect/vitest"
import { htmlToMarkdown, visibleText, parseHtml } from "../../src/engines/internal/extract/markdown.js"

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
