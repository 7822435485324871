/** The shared document corpus: the manifest and its files. */
import { readFileSync } from "node:fs"
import { basename, join } from "node:path"
import type { UploadFile } from "../../src/api/Upload.js"
import { sharedPath } from "../../src/internal/shared.js"

/** One manifest entry. */
export interface FixtureEntry {
  readonly path: string
  readonly format: string
  readonly expect: "ok" | "error"
  readonly must_contain: ReadonlyArray<string>
  readonly pages_or_sheets_or_slides: {
    readonly pages?: number
    readonly slides?: number
    readonly sheets?: number
    readonly sheet_names?: ReadonlyArray<string>
    readonly images?: number
    readonly rows_including_header?: number
    readonly columns?: number
  } | null
  readonly password?: string
  readonly decrypted_must_contain?: ReadonlyArray<string>
  readonly notes?: string
}

/** The folder of the document fixtures. */
export const docsDir = sharedPath("fixtures", "docs")

/** The manifest's entries. */
export const manifest: ReadonlyArray<FixtureEntry> = (
  JSON.parse(readFileSync(join(docsDir, "manifest.json"), "utf8")) as { files: ReadonlyArray<FixtureEntry> }
).files

/** A fixture as an upload. */
export const fixtureFile = (path: string): UploadFile => {
  const data = readFileSync(join(docsDir, path))
  return { name: basename(path), data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) }
}

/** The manifest's snippet rule: every whitespace run is one space, on both sides. */
export const normalize = (s: string): string => s.replace(/\s+/g, " ")

/** The snippets of `snippets` that `text` does not contain under the snippet rule. */
export const missingSnippets = (text: string, snippets: ReadonlyArray<string>): Array<string> => {
  const hay = normalize(text)
  return snippets.filter((s) => !hay.includes(normalize(s)))
}
