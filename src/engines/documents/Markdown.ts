/**
 * HTML to Markdown as the document engine writes it (headings, lists, tables, code blocks,
 * links), public to the other engines: the web engine turns fetched pages into Markdown with
 * the same converter, so a page and an uploaded HTML file of it give the same text.
 *
 * @since 0.1.0
 */
export { htmlToMarkdown } from "./internal/extract/markdown.js"
