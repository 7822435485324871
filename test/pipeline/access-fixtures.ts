/**
 * Two tenants in one collection, for the cross-tenant tests: real Markdown documents ingested
 * by `Ingest.run` with per-source access rules, a deterministic in-process embedder, and a
 * loopback chat handler whose model asks the `search_documents` tool for the other tenant's
 * secret and cites every source it was given.
 */
import { Effect, Layer } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type * as Embeddings from "../../src/api/Embeddings.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as Ingest from "../../src/pipeline/Ingest.js"
import type { VectorStore } from "../../src/store/VectorStore.js"
import type { Handler, Received } from "../support/server.js"
import { delta, sse } from "./answer-fixtures.js"

/** The word only tenant B's (and the unlisted legacy) documents hold. */
export const secret = "zanzibar"

/** Text and paths only B's and the unlisted documents hold (not the probe): none may reach tenant A. */
export const leakMarkers: ReadonlyArray<string> = ["dry powder", "edition", "tenant-b/", "legacy/", "Beta fires", "Legacy notes"]

/** B's best-matching sentence: every probe below asks for it. */
export const probe = "The beta reactor cooling loop uses liquid sodium. Codeword zanzibar."

const files: Record<string, Record<string, string>> = {
  "tenant-a": {
    "alpha.md": "# Alpha plant\n\nThe alpha plant pumps river water through its cooling loop. Its pumps are serviced every spring.\n",
    "drills.md": "# Alpha drills\n\nShutdown drills at the alpha plant happen monthly, and the cooling loop is flushed.\n"
  },
  "tenant-b": {
    "secret.md": `# Beta reactor\n\n${probe}\n`,
    "fires.md": `# Beta fires\n\nSodium fires in the beta reactor are fought with dry powder near the ${secret} valve.\n`
  },
  public: {
    "glossary.md": "# Glossary\n\nA cooling loop carries heat away from a reactor core.\n"
  },
  legacy: {
    "notes.md": `# Legacy notes\n\nOld notes on the sodium cooling loop of the beta reactor, ${secret} edition.\n`
  }
}

/** Writes the four folders under `root`; returns their `file://` prefixes. */
export const writeTenantDocs = (root: string) => {
  const prefixes: Record<string, string> = {}
  for (const [folder, docs] of Object.entries(files)) {
    const dir = join(root, folder)
    mkdirSync(dir, { recursive: true })
    for (const [name, text] of Object.entries(docs)) writeFileSync(join(dir, name), text)
    prefixes[folder] = pathToFileURL(dir).href + "/"
  }
  return prefixes as { "tenant-a": string; "tenant-b": string; public: string; legacy: string }
}

/** The access rules of the run: one per tenant folder, `*` for the public one, none for legacy. */
export const rules = (prefixes: ReturnType<typeof writeTenantDocs>): ReadonlyArray<Ingest.AccessRule> => [
  { prefix: prefixes["tenant-a"], access: ["tenant-a"] },
  { prefix: prefixes["tenant-b"], access: ["tenant-b"] },
  { prefix: prefixes.public, access: ["*"] }
]

/** A deterministic bag-of-letters embedder: real vectors without a model download. */
export const embedText = (t: string): Float32Array => {
  const v = new Float32Array(16)
  for (const ch of t.toLowerCase()) v[ch.charCodeAt(0) % 16]! += 1
  return v
}

/** The embedder service (model `letters`). */
export const letters: Embeddings.Service = {
  defaultModel: "letters",
  dimension: 16,
  create: () => Effect.die("unused"),
  embed: (texts) => Effect.sync(() => ({ model: "letters", vectors: texts.map(embedText), totalTokens: 0 }))
}

/** Ingests the four folders into `collection` with the rules and the embedder. */
export const ingestTenants = (root: string, collection = "shared") =>
  Effect.gen(function*() {
    const prefixes = writeTenantDocs(root)
    const summary = yield* Ingest.run(
      { sources: Object.keys(files).map((f) => Ingest.Source.path(join(root, f))), collection },
      { accessRules: rules(prefixes), embedder: { id: "letters", service: letters }, batchWindow: 20 }
    )
    return { prefixes, summary }
  })

/** The document engine the ingest needs (in-process). */
export const uploadLayer = LocalFiles.layer({ isolation: "inline" })

/** Whether a document id belongs to tenant A or the public folder. */
export const readableByA = (prefixes: ReturnType<typeof writeTenantDocs>) => (documentId: string) =>
  documentId.startsWith(prefixes["tenant-a"]) || documentId.startsWith(prefixes.public)

type Msg = { role: string; content?: string | null }

/**
 * The chat server's model: round 1 calls `search_documents` for the probe; round 2 cites every
 * number from 1 to 8 (sources it was not given are reported as unknown, never invented).
 */
export const greedyChat: Handler = (req: Received, res) => {
  if (req.path !== "/v1/chat/completions") return { status: 404, json: { error: { message: "no route" } } }
  const body = req.json as { messages: Array<Msg> }
  const last = body.messages[body.messages.length - 1]!
  if (last.role === "user") {
    sse(res, [
      delta({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "search_documents", arguments: JSON.stringify({ query: probe, limit: 5 }) } }] }, "tool_calls")
    ])
    return
  }
  sse(res, [delta({ role: "assistant" }), delta({ content: "Cooling loops [1][2][3][4][5][6][7][8]." }), delta({}, "stop")])
}

/** Every text a chat server was sent (prompts and tool results). */
export const sentToChat = (received: ReadonlyArray<Received>): string =>
  received.map((r) => r.body.toString("utf8")).join("\n")

/** A store layer and the upload engine, for ingesting. */
export const ingestLayer = <E>(store: Layer.Layer<VectorStore, E>) => Layer.merge(uploadLayer, store)
