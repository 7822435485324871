/**
 * The extraction dispatcher: detects the format and runs its extractor. Encrypted OLE
 * containers (OOXML with a password, XLS with FILEPASS) are decrypted with officecrypto-tool
 * when a password is given. Every failure leaves as an {@link ExtractFailure}.
 */
import { detect } from "./detect.js"
import { ExtractFailure, type Extracted, type ExtractRequest, type Format } from "./types.js"

// The extractors and their parsing libraries (pdf.js, SheetJS, htmlparser2, tesseract)
// load on first use: a process that never extracts a format (the CLI's own process, whose
// extraction runs in worker processes) does not pay for loading it.
// Each module is imported once and its promise kept: a dynamic import of a loaded module still
// resolves its specifier again on every call (through any loader hooks, such as tsx's).
const once = <A>(load: () => Promise<A>): () => Promise<A> => {
  let loaded: Promise<A> | undefined
  return () => (loaded ??= load())
}
const docx = once(() => import("./docx.js"))
const formats = once(() => import("./formats.js"))
const frontmatter = once(() => import("./frontmatter.js"))
const notebook = once(() => import("./notebook.js"))
const odf = once(() => import("./odf.js"))
const epub = once(() => import("./epub.js"))
const email = once(() => import("./email.js"))
const rtf = once(() => import("./rtf.js"))
const markup = once(() => import("./markup.js"))
const pdf = once(() => import("./pdf.js"))
const pptx = once(() => import("./pptx.js"))
const sheet = once(() => import("./sheet.js"))
const text = once(() => import("./text.js"))
const xlsx = once(() => import("@e965/xlsx"))

export * from "./types.js"

/** Turns anything an extractor threw into an {@link ExtractFailure}. */
export const toFailure = (e: unknown): ExtractFailure => {
  if (e instanceof ExtractFailure) return e
  const message = (e as Error)?.message ?? String(e)
  if (e instanceof RangeError || /allocation failed|out of memory|invalid (array|string) length/i.test(message)) {
    return new ExtractFailure("limit_exceeded", `the document exceeds a memory limit: ${message}`)
  }
  return new ExtractFailure("corrupt", `the document cannot be read: ${message}`)
}

type Cfb = { FullPaths: Array<string> }

const compoundStreams = async (data: Uint8Array): Promise<Array<string>> => {
  const XLSX = await xlsx()
  try {
    const cfb = XLSX.CFB.read(data, { type: "array" }) as unknown as Cfb
    // the root storage is usually "Root Entry", but writers name it as they like ("R")
    return cfb.FullPaths.map((p) => p.replace(/^[^/]*\//, "").replace(/\/$/, ""))
  } catch (e) {
    throw new ExtractFailure("corrupt", `the compound (OLE) file cannot be read: ${(e as Error).message}`)
  }
}

const decrypt = async (data: Uint8Array, password: string): Promise<Uint8Array> => {
  const { default: officeCrypto } = await import("officecrypto-tool")
  try {
    return new Uint8Array(await officeCrypto.decrypt(Buffer.from(data), { password }))
  } catch (e) {
    const message = (e as Error)?.message ?? String(e)
    if (/password/i.test(message)) {
      throw new ExtractFailure("wrong_password", "the document is encrypted and the password given is wrong")
    }
    throw new ExtractFailure("corrupt", `the encrypted document cannot be decrypted: ${message}`)
  }
}

/** Handles an OLE compound file: encrypted OOXML, XLS (maybe encrypted), or an old format. */
const extractCompound = async (req: ExtractRequest, depth: number): Promise<Extracted> => {
  const streams = await compoundStreams(req.data)
  const { extractWorkbook } = await sheet()
  const password = req.options.password
  if (streams.includes("EncryptionInfo") && streams.includes("EncryptedPackage")) {
    if (password === undefined) {
      throw new ExtractFailure("password_required", "the Office document is encrypted: a password is required")
    }
    if (depth > 0) throw new ExtractFailure("corrupt", "the decrypted document is encrypted again")
    return extractDocument({ ...req, data: await decrypt(req.data, password) }, depth + 1)
  }
  if (streams.includes("Workbook") || streams.includes("Book")) {
    try {
      return await extractWorkbook(req.data, "xls", req.options)
    } catch (e) {
      if (e instanceof ExtractFailure && e.reason === "wrong_password" && password !== undefined && depth === 0) {
        // SheetJS reads no encrypted BIFF: decrypt (RC4) and read the clear workbook
        return extractWorkbook(await decrypt(req.data, password), "xls", { ...req.options, password: undefined })
      }
      throw e
    }
  }
  if (streams.includes("WordDocument")) throw new ExtractFailure("unsupported", "legacy Word (.doc) files are not supported; save as .docx")
  if (streams.includes("PowerPoint Document")) {
    throw new ExtractFailure("unsupported", "legacy PowerPoint (.ppt) files are not supported; save as .pptx")
  }
  throw new ExtractFailure("unsupported", "this compound (OLE) file is not a supported document")
}

const byFormat = async (format: Format, req: ExtractRequest, depth: number): Promise<Extracted> => {
  const { data, options } = req
  switch (format) {
    case "pdf":
      return (await pdf()).extractPdf(data, options)
    case "docx":
      return (await docx()).extractDocx(data, options)
    case "pptx":
      return (await pptx()).extractPptx(data, options)
    case "xlsx":
    case "xls":
    case "ods":
      return (await sheet()).extractWorkbook(data, format, options)
    case "odt":
      return imagesOnlyOdf(data, options, "odt", async () => (await odf()).extractOdt(data))
    case "epub":
      return (await epub()).extractEpub(data)
    case "email":
      // an attachment goes through this dispatcher again; an e-mail attached to an e-mail nests
      return (await email()).extractEmail(req, (attachment) => {
        if (depth >= 8) {
          return Promise.reject(new ExtractFailure("limit_exceeded", "attachments nest more than 8 levels deep"))
        }
        return extractDocument(attachment, depth + 1)
      })
    case "mbox":
      return (await email()).extractMbox(data)
    case "rtf":
      return (await rtf()).extractRtf(data)
    case "rst":
    case "asciidoc":
      return (await markup()).extractMarkup(data, format)
    case "odp":
      return imagesOnlyOdf(data, options, "odp", async () => (await odf()).extractOdp(data))
    case "csv":
      return (await sheet()).extractCsv(data, req.name)
    case "json":
      return (await formats()).extractJson(data)
    case "xml":
      return (await formats()).extractXml(data)
    case "html":
      return (await formats()).extractHtml(data)
    case "txt":
      return (await text()).extractTxt(data)
    case "markdown":
      return (await frontmatter()).extractMarkdown(data)
    case "notebook":
      return (await notebook()).extractNotebook(data)
    case "svg":
      return (await formats()).extractSvg(data, options)
    case "image":
      return (await formats()).extractImage(data, options)
    case "audio":
      throw new ExtractFailure(
        "speech_unavailable",
        "audio needs a speech-recognition service and none is configured for the local engine"
      )
  }
}

/** `images_only` for an ODF text or presentation: the pictures of its package, as stored. */
const imagesOnlyOdf = async (
  data: Uint8Array,
  options: ExtractRequest["options"],
  format: "odt" | "odp",
  read: () => Promise<Extracted>
): Promise<Extracted> =>
  options.imagesOnly ? (await import("./ooxml.js")).odfPictures(data, format, "document") : read()

/** Extracts a document; rejects with an {@link ExtractFailure} only. */
export const extractDocument = async (req: ExtractRequest, depth = 0): Promise<Extracted> => {
  try {
    if (req.data.byteLength === 0) throw new ExtractFailure("corrupt", "the file is empty")
    const detected = detect(req.name, req.data, req.type)
    if (detected._tag === "compound") {
      // an XLS saved with a .xls name but no password goes straight to SheetJS in extractCompound
      return await extractCompound(req, depth)
    }
    if (detected._tag === "unknown") {
      throw new ExtractFailure("unsupported", `the format of ${req.name} is not supported`)
    }
    return noneEmpty(await byFormat(detected.format, req, depth), req)
  } catch (e) {
    throw toFailure(e)
  }
}

/**
 * A non-empty document that yields no text is a failure (`empty`), never a success with empty
 * content. `images_only` asks for images, not text: there an empty result with its warning stands.
 */
const noneEmpty = (doc: Extracted, req: ExtractRequest): Extracted => {
  if (req.options.imagesOnly) return doc
  if ((doc.images?.length ?? 0) > 0 || doc.units.some((u) => u.content.trim() !== "")) return doc
  const why = doc.warnings.length > 0 ? ` (${doc.warnings.join("; ")})` : ""
  const hint = doc.format === "image" || (doc.format === "pdf" && req.options.enableOcr === false)
    ? "; its pages may be images: enable_ocr=true reads them"
    : doc.format === "pdf"
    ? "; OCR found no text on its pages either"
    : ""
  throw new ExtractFailure("empty", `the document yields no text${why}${hint}`)
}

/** The format a file would be read as (for the layer's audio routing); undefined if unknown. */
export const formatOf = (name: string, data: Uint8Array, type?: string): Format | "compound" | undefined => {
  const d = detect(name, data, type)
  return d._tag === "format" ? d.format : d._tag === "compound" ? "compound" : undefined
}
