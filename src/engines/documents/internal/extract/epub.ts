/**
 * EPUB 2 and 3 books: the chapters (XHTML content documents) in spine order, one unit each, as
 * Markdown through the HTML writer (`markdown.ts`). Each unit is named by its title in the
 * book's navigation (EPUB 3 `nav.xhtml`, else EPUB 2 `toc.ncx`), so a chunk cites its chapter;
 * a chapter whose text starts without a heading gets that title as a `#` heading. Title,
 * description and properties (creator, language, publisher, date, subjects) from the package
 * document (OPF). Spine items that are not XHTML (images) are skipped.
 *
 * Hostile input: the container is opened with the zip limits; the XML parts go through the
 * entity-bounded XML parser; XHTML goes through htmlparser2, which expands no DTD entities.
 */
import { posix } from "node:path"
import { htmlToMarkdown, parseHtml } from "./markdown.js"
import { ExtractFailure, type Extracted, type Unit } from "./types.js"
import { attrsOf, childrenOf, parseOrdered, tagOf, textOf, type XNode } from "./xml.js"
import { openZip } from "./zip.js"

/** A tag name without its namespace prefix (`opf:item` → `item`). */
const local = (tag: string) => tag.slice(tag.indexOf(":") + 1)

/** The first descendant whose local name is `name`. */
const findLocal = (nodes: ReadonlyArray<XNode>, name: string): XNode | undefined => {
  for (const n of nodes) {
    const t = tagOf(n)
    if (t === undefined || t === "#text") continue
    if (local(t) === name) return n
    const inner = findLocal(childrenOf(n), name)
    if (inner) return inner
  }
  return undefined
}

/** Every descendant whose local name is `name` (not inside matches). */
const allLocal = (nodes: ReadonlyArray<XNode>, name: string, out: Array<XNode> = []): Array<XNode> => {
  for (const n of nodes) {
    const t = tagOf(n)
    if (t === undefined || t === "#text") continue
    if (local(t) === name) out.push(n)
    else allLocal(childrenOf(n), name, out)
  }
  return out
}

const clean = (s: string) => s.replace(/\s+/g, " ").trim()

/** A zip path resolved against the part that names it, without a fragment; undefined if it leaves the zip. */
const resolve = (base: string, href: string): string | undefined => {
  let target: string
  try {
    target = decodeURIComponent(href.split("#")[0]!)
  } catch {
    target = href.split("#")[0]!
  }
  if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined
  const joined = posix.normalize(posix.join(posix.dirname(base), target))
  return joined.startsWith("../") ? undefined : joined.replace(/^\.\//, "")
}

/** Chapter titles by content document path, from an EPUB 3 nav document (the `toc` nav). */
const navTitles = (xhtml: string, path: string): Map<string, string> => {
  const titles = new Map<string, string>()
  const root = parseHtml(xhtml)
  const navs: Array<typeof root> = []
  const visit = (n: typeof root) => {
    if (n.name === "nav") navs.push(n)
    for (const c of n.children ?? []) visit(c)
  }
  visit(root)
  const toc = navs.find((n) => (n.attribs?.["epub:type"] ?? "").split(/\s+/).includes("toc")) ?? navs[0]
  if (!toc) return titles
  const links = (n: typeof root) => {
    if (n.name === "a" && n.attribs?.href) {
      const target = resolve(path, n.attribs.href)
      const text = clean(htmlToMarkdown(n))
      if (target && text && !titles.has(target)) titles.set(target, text)
    }
    for (const c of n.children ?? []) links(c)
  }
  links(toc)
  return titles
}

/** Chapter titles by content document path, from an EPUB 2 NCX (navPoints in order). */
const ncxTitles = (xml: string, path: string): Map<string, string> => {
  const titles = new Map<string, string>()
  const nodes = parseOrdered(xml, path)
  for (const point of allLocalDeep(nodes, "navPoint")) {
    const label = findLocal(childrenOf(point), "navLabel")
    const content = childrenOf(point).find((c) => local(tagOf(c) ?? "") === "content")
    const src = content ? attrsOf(content)["src"] : undefined
    const target = src ? resolve(path, src) : undefined
    const text = label ? clean(textOf([label])) : ""
    if (target && text && !titles.has(target)) titles.set(target, text)
  }
  return titles
}

/** Every descendant with the local name, nested ones too, in document order. */
const allLocalDeep = (nodes: ReadonlyArray<XNode>, name: string, out: Array<XNode> = []): Array<XNode> => {
  for (const n of nodes) {
    const t = tagOf(n)
    if (t === undefined || t === "#text") continue
    if (local(t) === name) out.push(n)
    allLocalDeep(childrenOf(n), name, out)
  }
  return out
}

/** Extracts an EPUB. */
export const extractEpub = async (data: Uint8Array): Promise<Extracted> => {
  const zip = openZip(data)
  const containerXml = zip.text("META-INF/container.xml")
  if (containerXml === undefined) throw new ExtractFailure("corrupt", "the EPUB has no META-INF/container.xml")
  const container = parseOrdered(containerXml, "META-INF/container.xml")
  const rootfile = allLocal(container, "rootfile").map(attrsOf).find((a) => (a["media-type"] ?? "application/oebps-package+xml") === "application/oebps-package+xml")
  const opfPath = rootfile?.["full-path"]
  const opfXml = opfPath ? zip.text(opfPath) : undefined
  if (!opfPath || opfXml === undefined) throw new ExtractFailure("corrupt", "the EPUB's package document (OPF) is missing")
  const opf = parseOrdered(opfXml, opfPath)
  const manifest = new Map<string, { href: string; type: string; properties: string }>()
  for (const item of allLocal(opf, "item")) {
    const a = attrsOf(item)
    const href = a["href"] ? resolve(opfPath, a["href"]) : undefined
    if (a["id"] && href) manifest.set(a["id"], { href, type: a["media-type"] ?? "", properties: a["properties"] ?? "" })
  }
  const spineNode = findLocal(opf, "spine")
  if (!spineNode) throw new ExtractFailure("corrupt", "the EPUB's package document has no spine")
  const spine = allLocal(childrenOf(spineNode), "itemref").map((r) => manifest.get(attrsOf(r)["idref"] ?? "")).filter((x) => x !== undefined)
  // navigation: EPUB 3 nav first, else the NCX the spine names
  let titles = new Map<string, string>()
  const nav = [...manifest.values()].find((m) => m.properties.split(/\s+/).includes("nav"))
  const navXhtml = nav ? zip.text(nav.href) : undefined
  if (nav && navXhtml !== undefined) titles = navTitles(navXhtml, nav.href)
  if (titles.size === 0) {
    const ncx = manifest.get(attrsOf(spineNode)["toc"] ?? "") ?? [...manifest.values()].find((m) => m.type === "application/x-dtbncx+xml")
    const ncxXml = ncx ? zip.text(ncx.href) : undefined
    if (ncx && ncxXml !== undefined) titles = ncxTitles(ncxXml, ncx.href)
  }
  const units: Array<Unit> = []
  const warnings: Array<string> = []
  let missing = 0
  for (const item of spine) {
    if (!/x?html|xml/.test(item.type) && !/\.x?html?$/i.test(item.href)) continue
    const xhtml = zip.text(item.href)
    if (xhtml === undefined) {
      missing++
      continue
    }
    let content = htmlToMarkdown(xhtml)
    const title = titles.get(item.href)
    if (title && content && !/^#{1,6} /.test(content)) content = `# ${title}\n\n${content}`
    if (!content.trim()) continue
    units.push({ page: units.length + 1, ...(title ? { name: title } : {}), content })
  }
  if (missing > 0) warnings.push(`${missing} chapter(s) named in the spine are missing from the EPUB`)
  const metadata = findLocal(opf, "metadata")
  const meta = (name: string) =>
    metadata ? allLocal(childrenOf(metadata), name).map((n) => clean(textOf([n]))).filter(Boolean) : []
  const properties: Record<string, string> = {}
  for (const key of ["creator", "language", "publisher", "date", "subject", "rights", "identifier"]) {
    const values = meta(key)
    if (values.length > 0) properties[key] = values.join(", ")
  }
  const description = meta("description")[0]
  return {
    format: "epub",
    units: units.length > 0 ? units : [{ page: 1, content: "" }],
    title: meta("title")[0],
    description: description ? clean(htmlToMarkdown(description)) : undefined,
    ...(Object.keys(properties).length > 0 ? { metadata: properties } : {}),
    warnings
  }
}
