/**
 * PPTX from its XML parts (fast-xml-parser over the limited zip): every slide in
 * presentation order, its title as a heading, text shapes, tables as Markdown tables, then its
 * notes and its comments (legacy and modern) with their authors.
 */
import { markdownTable } from "./markdown.js"
import { isXmlPart, mediaDataUrls, naturalCompare, parsePart, properties, relationships } from "./ooxml.js"
import { ExtractFailure, type Extracted, type ExtractOptions, type Unit } from "./types.js"
import { attrsOf, childrenOf, find, findAll, paragraphs, textOf, type XNode } from "./xml.js"
import { openZip, type Zip } from "./zip.js"

const drawingTags = { p: "a:p", t: "a:t", tab: "a:tab", br: "a:br" } as const

const clean = (s: string) => s.replace(/[ \t]+/g, " ").replace(/ *\n */g, "\n").trim()

const placeholderType = (shape: XNode): string | undefined => {
  const nv = find(childrenOf(shape), "p:nvPr")
  const ph = nv ? find(childrenOf(nv), "p:ph") : undefined
  return ph ? (attrsOf(ph)["type"] ?? "body") : undefined
}

/** The blocks of a shape tree in order: [kind, markdown]. */
const shapeBlocks = (nodes: ReadonlyArray<XNode>, skipTypes: ReadonlyArray<string>): Array<{ title: boolean; text: string }> => {
  const out: Array<{ title: boolean; text: string }> = []
  for (const node of nodes) {
    const tag = Object.keys(node).find((k) => k !== ":@")
    if (tag === "p:sp") {
      const type = placeholderType(node)
      if (type && skipTypes.includes(type)) continue
      const body = find(childrenOf(node), "p:txBody")
      if (!body) continue
      const text = clean(paragraphs([body], drawingTags).map(clean).filter(Boolean).join("\n"))
      if (text) out.push({ title: type === "title" || type === "ctrTitle", text })
    } else if (tag === "p:graphicFrame") {
      const tbl = find(childrenOf(node), "a:tbl")
      if (tbl) {
        const rows = findAll(childrenOf(tbl), "a:tr").map((tr) =>
          findAll(childrenOf(tr), "a:tc").map((tc) => clean(paragraphs([tc], drawingTags).join(" ")))
        )
        const table = markdownTable(rows)
        if (table) out.push({ title: false, text: table })
      } else {
        const text = clean(paragraphs(childrenOf(node), drawingTags).map(clean).filter(Boolean).join("\n"))
        if (text) out.push({ title: false, text })
      }
    } else if (tag === "p:grpSp" || tag === "mc:AlternateContent" || tag === "mc:Choice") {
      out.push(...shapeBlocks(childrenOf(node), skipTypes))
    }
  }
  return out
}

const spTree = (nodes: ReadonlyArray<XNode>): Array<XNode> => {
  const tree = find(nodes, "p:spTree")
  return tree ? childrenOf(tree) : []
}

const commentAuthors = (zip: Zip): Map<string, string> => {
  const out = new Map<string, string>()
  for (const part of ["ppt/commentAuthors.xml", "ppt/authors.xml"]) {
    const nodes = parsePart(zip, part)
    if (!nodes) continue
    for (const a of [...findAll(nodes, "p:cmAuthor"), ...findAll(nodes, "p188:author")]) {
      const attrs = attrsOf(a)
      if (attrs["id"] && attrs["name"]) out.set(attrs["id"], attrs["name"])
    }
  }
  return out
}

const slideComments = (zip: Zip, part: string, authors: Map<string, string>): Array<string> => {
  const nodes = parsePart(zip, part)
  if (!nodes) return []
  const out: Array<string> = []
  for (const cm of [...findAll(nodes, "p:cm"), ...findAll(nodes, "p188:cm")]) {
    const attrs = attrsOf(cm)
    const textNode = find(childrenOf(cm), "p:text")
    const text = clean(
      textNode ? textOf([textNode]) : paragraphs(childrenOf(cm), drawingTags).map(clean).filter(Boolean).join("\n")
    )
    if (!text) continue
    const author = authors.get(attrs["authorId"] ?? "")
    out.push(`- ${author ? `${author}: ` : ""}${text}`)
  }
  return out
}

/** Extracts a PPTX. */
export const extractPptx = async (data: Uint8Array, options: ExtractOptions): Promise<Extracted> => {
  const zip = openZip(data, (n) => isXmlPart(n) || (options.imagesOnly && n.startsWith("ppt/media/")))
  const presentation = parsePart(zip, "ppt/presentation.xml")
  if (!presentation) throw new ExtractFailure("corrupt", "the PPTX has no ppt/presentation.xml")
  const props = properties(zip)
  if (options.imagesOnly) {
    const images = mediaDataUrls(zip, "ppt/media/")
    return {
      format: "pptx",
      units: [{ page: 1, content: images.join("\n") }],
      title: props.title,
      description: props.description,
      images,
      warnings: images.length === 0 ? ["images_only: the presentation has no embedded images"] : []
    }
  }
  const rels = relationships(zip, "ppt/presentation.xml")
  let slideParts = findAll(presentation, "p:sldId")
    .map((s) => rels.get(attrsOf(s)["r:id"] ?? "")?.target)
    .filter((t): t is string => t !== undefined && zip.text(t) !== undefined)
  if (slideParts.length === 0) {
    slideParts = zip.names.filter((n) => /^ppt\/slides\/slide\d+\.xml$/.test(n)).sort(naturalCompare)
  }
  const authors = commentAuthors(zip)
  const units: Array<Unit> = []
  for (const [i, part] of slideParts.entries()) {
    const slide = parsePart(zip, part) ?? []
    const blocks = shapeBlocks(spTree(slide), ["sldNum", "dt", "ftr"])
    const title = blocks.find((b) => b.title)?.text.replace(/\s+/g, " ")
    const lines: Array<string> = []
    for (const b of blocks) lines.push(b.title ? `## ${b.text.replace(/\s+/g, " ")}` : b.text)
    const slideRels = relationships(zip, part)
    const notes: Array<string> = []
    const comments: Array<string> = []
    for (const rel of slideRels.values()) {
      if (rel.type.endsWith("/notesSlide")) {
        for (const b of shapeBlocks(spTree(parsePart(zip, rel.target) ?? []), ["sldNum", "sldImg"])) notes.push(b.text)
      } else if (rel.type.endsWith("/comments")) {
        comments.push(...slideComments(zip, rel.target, authors))
      }
    }
    if (notes.length > 0) lines.push(`### Notes\n\n${notes.join("\n\n")}`)
    if (comments.length > 0) lines.push(`### Comments\n\n${comments.join("\n")}`)
    units.push({ page: i + 1, ...(title ? { name: title } : {}), content: lines.join("\n\n") })
  }
  return { format: "pptx", units, title: props.title, description: props.description, warnings: [] }
}
