/**
 * The peer extractors `npm run bench:extract` compares the local engine with, each with the
 * formats it reads and its documented text API. Plain JavaScript beside its own node_modules
 * (`npm run bench:peers` installs them), so the library neither depends on nor type-checks them.
 */
import { readFileSync } from "node:fs"
import { readFile } from "node:fs/promises"

const versionOf = (pkg) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url), "utf8")).version

const joinDocs = (docs) => docs.map((d) => d.text ?? d.pageContent ?? "").join("\n\n")

/** officeparser 8: parseOffice → AST → `to('text')`. */
const officeparser = {
  name: "officeparser",
  version: () => versionOf("officeparser-8"),
  formats: ["pdf", "docx", "pptx", "xlsx", "csv", "html", "odt", "ods", "odp"],
  extract: async (path, format) => {
    const { OfficeParser } = await import("officeparser-8")
    const ast = await OfficeParser.parseOffice(await readFile(path), { fileType: format })
    return (await ast.to("text")).value
  }
}

const llamaReaders = {
  pdf: async () => new (await import("@llamaindex/readers/pdf")).PDFReader(),
  docx: async () => new (await import("@llamaindex/readers/docx")).DocxReader(),
  html: async () => new (await import("@llamaindex/readers/html")).HTMLReader(),
  csv: async () => new (await import("@llamaindex/readers/csv")).CSVReader(),
  json: async () => new (await import("@llamaindex/readers/json")).JSONReader(),
  xml: async () => new (await import("@llamaindex/readers/xml")).XMLReader(),
  txt: async () => new (await import("@llamaindex/readers/text")).TextFileReader(),
  markdown: async () => new (await import("@llamaindex/readers/markdown")).MarkdownReader()
}

/** LlamaIndex.TS readers (@llamaindex/readers): `loadDataAsContent` of the format's reader. */
const llamaindex = {
  name: "llamaindex",
  version: () => versionOf("@llamaindex/readers"),
  formats: Object.keys(llamaReaders),
  extract: async (path, format) => {
    const reader = await llamaReaders[format]()
    return joinDocs(await reader.loadDataAsContent(new Uint8Array(await readFile(path))))
  }
}

const langchainLoaders = {
  pdf: async (p) => new (await import("@langchain/community/document_loaders/fs/pdf")).PDFLoader(p),
  docx: async (p) => new (await import("@langchain/community/document_loaders/fs/docx")).DocxLoader(p),
  pptx: async (p) => new (await import("@langchain/community/document_loaders/fs/pptx")).PPTXLoader(p),
  csv: async (p) => new (await import("@langchain/community/document_loaders/fs/csv")).CSVLoader(p),
  json: async (p) => new (await import("@langchain/classic/document_loaders/fs/json")).JSONLoader(p),
  txt: async (p) => new (await import("@langchain/classic/document_loaders/fs/text")).TextLoader(p),
  markdown: async (p) => new (await import("@langchain/classic/document_loaders/fs/text")).TextLoader(p)
}

/** LangChain.js document loaders (@langchain/community, @langchain/classic): `load()`. */
const langchain = {
  name: "langchain",
  version: () => versionOf("@langchain/community"),
  formats: Object.keys(langchainLoaders),
  extract: async (path, format) => joinDocs(await (await langchainLoaders[format](path)).load())
}

export const peers = { officeparser, llamaindex, langchain }
