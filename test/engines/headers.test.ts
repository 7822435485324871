/**
 * `remove_headers` (`removeRepeatedLines`): running heads and page numbers go, a table's header
 * row repeated at the top of every page it runs over stays.
 */
import { describe, expect, it } from "vitest"
import { removeRepeatedLines } from "../../src/engines/documents/internal/chunk/headers.js"

describe("removeRepeatedLines", () => {
  it("drops running heads and page numbers but never a table row repeated on every page", () => {
    const pages = [1, 2, 3, 4].map((n) =>
      [
        "Annual report of the station",
        "| Sample | Site | Weight |",
        "| --- | --- | --- |",
        `| s${n} | north | ${n}.5 |`,
        "",
        `Page ${n} of 4`
      ].join("\n")
    )
    const { pages: out, removed } = removeRepeatedLines(pages)
    expect(removed).toBe(8) // the head and the page number of each page
    out.forEach((page, i) => {
      expect(page.split("\n").filter((l) => l.trim() !== "")).toEqual([
        "| Sample | Site | Weight |",
        "| --- | --- | --- |",
        `| s${i + 1} | north | ${i + 1}.5 |`
      ])
    })
  })
})
