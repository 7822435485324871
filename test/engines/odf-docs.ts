/**
 * Small OpenDocument packages written the way LibreOffice writes them (a stored `mimetype`
 * entry first, `content.xml`, `styles.xml`, `meta.xml`, `META-INF/manifest.xml`), for the tests.
 */
import { zipSync } from "fflate"

const enc = new TextEncoder()

/** The namespaces LibreOffice declares on a document's root. */
export const ns = [
  `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"`,
  `xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"`,
  `xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"`,
  `xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"`,
  `xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"`,
  `xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"`,
  `xmlns:dc="http://purl.org/dc/elements/1.1/"`,
  `xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"`
].join(" ")

const mimes = {
  odt: "application/vnd.oasis.opendocument.text",
  ods: "application/vnd.oasis.opendocument.spreadsheet",
  odp: "application/vnd.oasis.opendocument.presentation"
} as const

/** The `office:meta` element of a document with this title, description and keywords. */
export const metaXml = (title: string, description: string, keywords: ReadonlyArray<string> = []) =>
  `<office:meta><meta:generator>LibreOffice/7.4.7.2$Linux_X86_64</meta:generator><dc:title>${title}</dc:title>` +
  `<dc:description>${description}</dc:description><dc:creator>Ada Lovelace</dc:creator>` +
  keywords.map((k) => `<meta:keyword>${k}</meta:keyword>`).join("") +
  `<meta:document-statistic meta:page-count="2"/></office:meta>`

/** An ODF package: `body` is the content of `office:body`. */
export const odfPackage = (
  kind: keyof typeof mimes,
  body: string,
  meta = metaXml("", ""),
  extra: Record<string, Uint8Array> = {}
): Uint8Array =>
  zipSync({
    mimetype: [enc.encode(mimes[kind]), { level: 0 }],
    "content.xml": enc.encode(
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${ns} office:version="1.3"><office:body>${body}</office:body></office:document-content>`
    ),
    "styles.xml": enc.encode(
      `<?xml version="1.0" encoding="UTF-8"?><office:document-styles ${ns} office:version="1.3"><office:styles/></office:document-styles>`
    ),
    "meta.xml": enc.encode(`<?xml version="1.0" encoding="UTF-8"?><office:document-meta ${ns} office:version="1.3">${meta}</office:document-meta>`),
    "META-INF/manifest.xml": enc.encode(
      `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="${mimes[kind]}"/></manifest:manifest>`
    ),
    ...extra
  })

/** A flat ODF document (`.fodt`, `.fods`, `.fodp`). */
export const flatOdf = (kind: keyof typeof mimes, body: string, meta = metaXml("", "")): Uint8Array =>
  enc.encode(
    `<?xml version="1.0" encoding="UTF-8"?>\n<office:document ${ns} office:version="1.3" office:mimetype="${mimes[kind]}">${meta}<office:body>${body}</office:body></office:document>`
  )
