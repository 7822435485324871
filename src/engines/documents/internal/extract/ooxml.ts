/**
 * Helpers shared by the OOXML extractors: part paths, relationships, document properties,
 * embedded media, and the refusal of DTDs (OOXML forbids them; refusing them rules out
 * entity-expansion attacks in every part).
 */
import { posix } from "node:path"
import { attrsOf, find, findAll, parseOrdered, textOf, type XNode } from "./xml.js"
import { ExtractFailure, type Extracted } from "./types.js"
import { openZip, type Zip } from "./zip.js"

/** Fails with `corrupt` when a part holds a DTD (not allowed in OOXML); returns its text. */
export const refuseDtd = (zip: Zip, name: string): string | undefined => {
  const xml = zip.text(name)
  if (xml !== undefined && /<!DOCTYPE/i.test(xml.slice(0, 4096))) {
    throw new ExtractFailure("corrupt", `${name} declares a DTD, which OOXML does not allow`)
  }
  return xml
}

/** Parses a part; fails with `corrupt` when it holds a DTD (not allowed in OOXML). */
export const parsePart = (zip: Zip, name: string): Array<XNode> | undefined => {
  const xml = refuseDtd(zip, name)
  return xml === undefined ? undefined : parseOrdered(xml, name)
}

/** Resolves a relationship target against the part that owns the relationship. */
export const resolveTarget = (owner: string, target: string): string =>
  target.startsWith("/") ? target.slice(1) : posix.normalize(posix.join(posix.dirname(owner), target))

/** The relationships of a part: id → { type, target (resolved) }. */
export const relationships = (zip: Zip, part: string): Map<string, { type: string; target: string }> => {
  const relsName = posix.join(posix.dirname(part), "_rels", posix.basename(part) + ".rels")
  const out = new Map<string, { type: string; target: string }>()
  const nodes = parsePart(zip, relsName)
  if (!nodes) return out
  for (const rel of findAll(nodes, "Relationship")) {
    const a = attrsOf(rel)
    if (a["Id"] && a["Target"] && a["TargetMode"] !== "External") {
      out.set(a["Id"], { type: a["Type"] ?? "", target: resolveTarget(part, a["Target"]) })
    }
  }
  return out
}

/** Title and description from `docProps/core.xml`; the page count from `docProps/app.xml`. */
export const properties = (zip: Zip): { title?: string; description?: string; pages?: number } => {
  const core = parsePart(zip, "docProps/core.xml")
  const app = parsePart(zip, "docProps/app.xml")
  const text = (nodes: Array<XNode> | undefined, tag: string) => {
    const node = nodes ? find(nodes, tag) : undefined
    const t = node ? textOf([node]).trim() : ""
    return t || undefined
  }
  const pages = Number(text(app, "Pages") ?? text(app, "Slides") ?? NaN)
  const description = text(core, "dc:description") ?? text(core, "dc:subject")
  const title = text(core, "dc:title")
  return {
    ...(title ? { title } : {}),
    ...(description ? { description } : {}),
    ...(Number.isFinite(pages) && pages > 0 ? { pages } : {})
  }
}

const mimeOf: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  bmp: "image/bmp",
  tif: "image/tiff",
  tiff: "image/tiff",
  webp: "image/webp",
  svg: "image/svg+xml",
  emf: "image/emf",
  wmf: "image/wmf"
}

/** The MIME type of an image file name, if it is one. */
export const imageMime = (name: string): string | undefined => mimeOf[posix.extname(name).slice(1).toLowerCase()]

/** Embedded images (`word/media`, `ppt/media`, `xl/media`) as data URLs. */
export const mediaDataUrls = (zip: Zip, folder: string): Array<string> =>
  zip.names
    .filter((n) => n.startsWith(folder) && imageMime(n) !== undefined)
    .sort(naturalCompare)
    .flatMap((n) => {
      const bytes = zip.bytes(n)
      return bytes ? [`data:${imageMime(n)};base64,${Buffer.from(bytes).toString("base64")}`] : []
    })

/**
 * `images_only` for an OpenDocument package (text, spreadsheet, presentation): the pictures of
 * its `Pictures/` folder, as stored, one unit; a warning when it has none (`what`: "document",
 * "workbook").
 */
export const odfPictures = (data: Uint8Array, format: Extracted["format"], what: string): Extracted => {
  const zip = data[0] === 0x50 && data[1] === 0x4b ? openZip(data, (n) => n.startsWith("Pictures/")) : undefined
  const images = zip ? mediaDataUrls(zip, "Pictures/") : []
  return {
    format,
    units: [{ page: 1, content: images.join("\n") }],
    images,
    warnings: images.length === 0 ? [`images_only: the ${what} has no embedded images`] : []
  }
}

/** Compares names with numbers in numeric order (`slide2` before `slide10`). */
export const naturalCompare = (a: string, b: string): number =>
  a.localeCompare(b, "en", { numeric: true, sensitivity: "base" })

/** Whether a zip entry should be inflated for text extraction (XML parts, not media). */
export const isXmlPart = (name: string): boolean => name.endsWith(".xml") || name.endsWith(".rels")
