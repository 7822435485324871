/**
 * The escaping of printed names (`printable`, `jsonText`) and the lossless document id of a
 * name that is not UTF-8 (`fileDocumentId` of its bytes).
 */
import { describe, expect, it } from "vitest"
import { jsonText, printable } from "../../src/cli/options.js"
import { fileDocumentId, printablePath } from "../../src/pipeline/internal/ingest-sources.js"

describe("printed names", () => {
  it("control characters are escaped visibly; --json parses back to the same value", () => {
    const name = "a\nb\r\tc\x1b[31m\x7f\u009b\u202ed\u2066é😀"
    expect(printable(name)).toBe("a\\nb\\r\\tc\\x1b[31m\\x7f\\x9b\\u202ed\\u2066é😀")
    const json = jsonText({ name })
    expect(json).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202e\u2066]/)
    expect(JSON.parse(json)).toEqual({ name })
  })

  it("the document id of a name that is not UTF-8 decodes back to its bytes", () => {
    const bytes = Buffer.concat([Buffer.from("/tmp/x/caf"), Buffer.from([0xe9, 0xff]), Buffer.from(" é%\uE000.md")])
    const id = fileDocumentId(bytes)
    expect(id).toBe("file:///tmp/x/caf%E9%FF%20%C3%A9%25%EE%80%80.md")
    const decoded = Buffer.from(decodeURI(id.replace(/%([0-9A-F]{2})/g, (_, h) => `%25${h}`)).slice("file://".length).replace(/%([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), "latin1")
    expect(decoded.equals(bytes)).toBe(true)
    expect(printablePath(bytes)).toBe("/tmp/x/caf\\xe9\\xff é%\uE000.md")
    // a valid UTF-8 name keeps the id it always had
    expect(fileDocumentId(Buffer.from("/tmp/x/é.md"))).toBe(fileDocumentId("/tmp/x/é.md"))
  })
})
