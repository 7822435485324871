/**
 * Shared fixtures of the query/answer tests: a small LanceDB collection written through the
 * `VectorStore` port, and a loopback chat handler that streams SSE, makes one
 * `search_documents` tool call and then answers with citations.
 */
import { Effect } from "effect"
import type { ServerResponse } from "node:http"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { type Chunk, type CollectionSpec, VectorStore } from "../../src/store/VectorStore.js"
import type { Handler, Received } from "../support/server.js"

/** The collection spec: the metadata fields the ingestion pipeline writes. */
export const spec: CollectionSpec = {
  name: "docs",
  fields: { source: "string", page: "number", chunk: "number", title: "string" }
}

const doc = (source: string, title: string, pages: ReadonlyArray<string>): Array<Chunk> =>
  pages.map((text, i) => ({
    id: `${source}#${i}`,
    documentId: source,
    title,
    text,
    metadata: { source, page: i + 1, chunk: i, title }
  }))

/** Four documents: the lens, the harbour, the keeper, and an unrelated one. */
export const chunks: ReadonlyArray<Chunk> = [
  ...doc("guides/lighthouse.md", "Lighthouse optics", [
    "The Fresnel lens was invented by Augustin Fresnel in 1822 to make lighthouse beams visible from far away.",
    "A lighthouse lamp burned whale oil before kerosene replaced it."
  ]),
  ...doc("reports/harbour.pdf", "Harbour history", [
    "The old town grew around the fishing fleet.",
    "The harbour was dredged in 1910 so that steamships could dock at the quay."
  ]),
  ...doc("notes/keeper.txt", "The keeper", [
    "The lighthouse keeper Ada lived on the island for thirty years and logged every storm."
  ]),
  ...doc("misc/fruit.txt", "Fruit", ["Bananas are yellow and grow in tropical climates."])
]

/** Writes the collection into a LanceDB folder. */
export const fillCollection = (uri: string) =>
  Effect.scoped(
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.collection(spec)
      yield* c.upsert(chunks)
    }).pipe(Effect.provide(LanceDbStore.layer({ uri })))
  )

/** Writes SSE `data:` events, in small pieces so that events straddle writes. */
export const sse = (res: ServerResponse, events: ReadonlyArray<unknown>) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  const text = [...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"].join("")
  for (let i = 0; i < text.length; i += 37) res.write(text.slice(i, i + 37))
  res.end()
}

/** A streamed chat chunk. */
export const delta = (d: Record<string, unknown>, finish: string | null = null, usage?: unknown) => ({
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: d, finish_reason: finish }],
  ...(usage ? { usage } : {})
})

type Msg = { role: string; content?: string | null; tool_calls?: unknown }

/** The number a prompt text gives to a source path (`[n] … (path, page p)`), or undefined. */
export const numberOf = (text: string, source: string): number | undefined => {
  for (const line of text.split("\n")) {
    const m = /^\[(\d+)\] /.exec(line)
    if (m && line.includes(`${source},`)) return Number(m[1])
  }
  return undefined
}

/**
 * The chat server: round 1 calls `search_documents` ("harbour dredged"), split over several
 * deltas; round 2 answers citing the lighthouse source, the harbour source and an invented
 * number 99. Each request's body is kept by the test server.
 */
export const chatHandler: Handler = (req: Received, res) => {
  if (req.path !== "/v1/chat/completions") return { status: 404, json: { error: { message: "no route" } } }
  const body = req.json as { messages: Array<Msg>; tools?: unknown }
  const last = body.messages[body.messages.length - 1]!
  if (last.role === "user") {
    sse(res, [
      delta({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "search_documents", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: "{\"query\": \"harbour" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: " dredged\"}" } }] }, "tool_calls", { prompt_tokens: 100, completion_tokens: 10 })
    ])
    return
  }
  const user = body.messages.find((m) => m.role === "user")?.content ?? ""
  const tool = body.messages.find((m) => m.role === "tool")?.content ?? ""
  const lens = numberOf(String(user), "guides/lighthouse.md") ?? 0
  const harbour = numberOf(String(tool), "reports/harbour.pdf") ?? numberOf(String(user), "reports/harbour.pdf") ?? 0
  const words = ["The Fresnel lens ", "was invented by ", `Augustin Fresnel in 1822 [${lens}]. `, "The harbour ", `was dredged in 1910 [${harbour}, 99].`]
  sse(res, [
    delta({ role: "assistant" }),
    ...words.map((w) => delta({ content: w })),
    delta({}, "stop", { prompt_tokens: 200, completion_tokens: 30 })
  ])
}

/** An AI search reply with two web sources, cited [2] and [1]. */
export const searchReply = {
  id: "s1",
  object: "search.completion",
  model: "svc-ai-search",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: "Fresnel lenses concentrate light [2]; they were first used in 1823 [1].",
      sources: [
        { pageContent: "First installed at Cordouan in 1823.", metadata: { title: "Cordouan", url: "https://example.org/cordouan" } },
        { pageContent: "A Fresnel lens concentrates light.", metadata: { title: "Fresnel lens", url: "https://example.org/fresnel" } }
      ],
      suggestions: []
    },
    finish_reason: "stop"
  }],
  usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70 }
}
