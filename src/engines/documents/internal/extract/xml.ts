/**
 * XML through fast-xml-parser, with entity expansion bounded (count, size, total expansions)
 * and documents walked in order. Helpers for the WordprocessingML/DrawingML paragraph model.
 */
import { XMLParser } from "fast-xml-parser"
import { ExtractFailure } from "./types.js"

/** A node of fast-xml-parser's ordered output: `{ tag: children, ":@": attributes }` or `{ "#text": … }`. */
export type XNode = Record<string, unknown>

const entityLimits = {
  enabled: true,
  maxEntitySize: 10_000,
  maxEntityCount: 100,
  maxExpansionDepth: 5,
  maxTotalExpansions: 10_000,
  maxExpandedLength: 1_000_000
}

/**
 * How deep elements may nest in an XML document or a part of a zip package (every reader of
 * XML: Office and OpenDocument parts, EPUB package documents, XML articles, SVG). Real
 * documents stay far below it (a table in a table in a Word document adds three levels); a
 * deeper document fails with {@link tooDeep} (`limit_exceeded`), whatever the parser's stack.
 */
export const maxXmlDepth = 256

/** The failure of a part whose elements nest deeper than {@link maxXmlDepth}. */
export const tooDeep = (what: string): ExtractFailure =>
  new ExtractFailure("limit_exceeded", `${what}: elements nested more than ${maxXmlDepth} levels deep`)

const ordered = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  trimValues: false,
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: entityLimits,
  htmlEntities: true,
  cdataPropName: "#cdata",
  maxNestedTags: maxXmlDepth
})

/** Parses XML in document order; malformed input fails with `corrupt`, an entity bomb or elements nested too deep with `limit_exceeded`. */
export const parseOrdered = (xml: string, what: string): Array<XNode> => {
  try {
    return ordered.parse(xml) as Array<XNode>
  } catch (e) {
    const message = (e as Error)?.message ?? String(e)
    if (/entit|expan/i.test(message)) throw new ExtractFailure("limit_exceeded", `${what}: ${message}`)
    // fast-xml-parser's bound on element depth (maxNestedTags): a limit, not a malformed document
    if (/nested tags/i.test(message)) throw tooDeep(what)
    throw new ExtractFailure("corrupt", `${what} is not well-formed XML: ${message}`)
  }
}

/** The tag name of an ordered node (the one key that is not `:@`). */
export const tagOf = (node: XNode): string | undefined => Object.keys(node).find((k) => k !== ":@")

/** The children of an ordered node. */
export const childrenOf = (node: XNode): Array<XNode> => {
  const tag = tagOf(node)
  const value = tag === undefined ? undefined : node[tag]
  return Array.isArray(value) ? (value as Array<XNode>) : []
}

/** The attributes of an ordered node. */
export const attrsOf = (node: XNode): Record<string, string> => (node[":@"] as Record<string, string>) ?? {}

/** Visits nodes depth-first; return false from `visit` to skip a node's children. */
export const walk = (nodes: ReadonlyArray<XNode>, visit: (node: XNode, tag: string) => boolean | void): void => {
  const stack: Array<XNode> = [...nodes].reverse()
  while (stack.length > 0) {
    const node = stack.pop()!
    const tag = tagOf(node)
    if (tag === undefined) continue
    if (visit(node, tag) === false) continue
    const kids = childrenOf(node)
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!)
  }
}

/** The first descendant (or self) with the tag. */
export const find = (nodes: ReadonlyArray<XNode>, tag: string): XNode | undefined => {
  let found: XNode | undefined
  walk(nodes, (n, t) => {
    if (found) return false
    if (t === tag) {
      found = n
      return false
    }
  })
  return found
}

/** All descendants (or selves) with the tag, not looking inside matches. */
export const findAll = (nodes: ReadonlyArray<XNode>, tag: string): Array<XNode> => {
  const out: Array<XNode> = []
  walk(nodes, (n, t) => {
    if (t === tag) {
      out.push(n)
      return false
    }
  })
  return out
}

/** All text under the nodes (text and CDATA), concatenated. */
export const textOf = (nodes: ReadonlyArray<XNode>): string => {
  let out = ""
  walk(nodes, (n, t) => {
    if (t === "#text") out += String(n["#text"] ?? "")
    else if (t === "#cdata") out += textOf(childrenOf(n))
  })
  return out
}

/**
 * The paragraphs under the nodes in the OOXML text model: `p` is the paragraph tag (`w:p`,
 * `a:p`), `t` the text run tag (`w:t`, `a:t`); tabs and breaks become whitespace. With
 * `skip`, the subtrees of those tags are left out (e.g. `mc:Fallback`, which repeats text).
 */
export const paragraphs = (
  nodes: ReadonlyArray<XNode>,
  tags: { readonly p: string; readonly t: string; readonly tab: string; readonly br: string },
  skip: ReadonlyArray<string> = ["mc:Fallback", "w:del", "w:delText"]
): Array<string> => {
  const out: Array<string> = []
  for (const p of findAll(nodes, tags.p)) {
    let text = ""
    walk(childrenOf(p), (n, t) => {
      if (skip.includes(t)) return false
      if (t === tags.p) {
        // a nested paragraph (a text box inside a paragraph)
        const inner = paragraphs([n], tags, skip)
        if (inner.length > 0) text += (text ? "\n" : "") + inner.join("\n")
        return false
      }
      if (t === tags.t) {
        text += textOf(childrenOf(n))
        return false
      }
      if (t === tags.tab) text += "\t"
      else if (t === tags.br) text += "\n"
    })
    out.push(text)
  }
  return out
}
