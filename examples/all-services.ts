/**
 * Calls every service of the API once, through the typed Effect services.
 *
 *   npm run demo                      # against a local wire-format demo server (no key, no network)
 *   EFFECT_RAG_API_KEY=... EFFECT_RAG_BASE_URL=https://... npm run demo   # against a real deployment
 *
 * With the demo server the answers are canned (it is not an AI service): the example shows the
 * calls, the types and the wiring, not model quality.
 */
import { Console, Effect, Layer, Stream } from "effect"
import { Chat, Embeddings, Images, Layers, Models, Music, Rerank, Search, Upload, Video, Web } from "effect-rag"
import { startDemoServer } from "./support/wire-demo-server.js"

const program = Effect.gen(function*() {
  const models = yield* (yield* Models.Models).list
  yield* Console.log(`models: ${models.data.map((m) => m.id).join(", ")}`)

  const chat = yield* Chat.Chat
  const model = process.env["EFFECT_RAG_CHAT_MODEL"] ?? models.data[0]?.id ?? "demo-chat"
  const reply = yield* chat.create({ model, messages: [{ role: "user", content: "Say hello." }] })
  yield* Console.log(`chat: ${reply.choices[0]?.message.content}`)
  const streamed = yield* Stream.runCollect(Chat.textDeltas(chat.stream({ model, messages: [{ role: "user", content: "Stream hello." }] })))
  yield* Console.log(`chat stream: ${[...streamed].join("")}`)

  const embedded = yield* (yield* Embeddings.Embeddings).embed(["alpha", "beta gamma"])
  yield* Console.log(`embeddings: ${embedded.vectors.length} vectors of ${embedded.vectors[0]?.length} dims`)

  const ranked = yield* (yield* Rerank.Rerank).rerank({ model: "mixr-v1", query: "short", documents: ["a long document", "short"] })
  yield* Console.log(`rerank: best document index ${ranked.results[0]?.index}`)

  const image = yield* (yield* Images.Images).generate({ prompt: "a lighthouse at dusk" })
  yield* Console.log(`image: ${image.data[0]?.url}`)

  const video = yield* (yield* Video.Video).generate(
    { model: "T2V-01-Director", prompt: "[Truck left] a harbour at dawn" },
    { pollInterval: process.env["EFFECT_RAG_API_KEY"] ? "10 seconds" : "50 millis" }
  )
  yield* Console.log(`video: ${video.downloadUrl}`)

  const music = yield* (yield* Music.Music).generate(
    { prompt: "calm piano", title: "Demo" },
    { pollInterval: process.env["EFFECT_RAG_API_KEY"] ? "5 seconds" : "50 millis" }
  )
  yield* Console.log(`music: ${music.audioUrl}`)

  const extracted = yield* (yield* Upload.Upload).extract({ name: "note.txt", data: new TextEncoder().encode("Hello from a file.") })
  yield* Console.log(`upload: ${extracted.type}: ${extracted.content}`)

  const web = yield* Web.Web
  const started = yield* web.crawl({ url: "https://example.com", limit: 5 })
  const pages = yield* Stream.runCollect(web.crawlPages(started.id))
  yield* Console.log(`crawl: ${pages.length} page(s)`)
  const map = yield* web.map({ url: "https://example.com" })
  yield* Console.log(`map: ${map.links.length} link(s)`)
  const scraped = yield* web.scrape({ url: "https://example.com", formats: ["markdown"] })
  yield* Console.log(`scrape: ${scraped.data.metadata.title}`)

  const answer = yield* (yield* Search.Search).search({
    params: {
      query: "What is effect-rag?",
      chatModel: { provider: "openai", model: "gpt-4o-mini" },
      embeddingModel: { provider: "openai", model: "text-embedding-3-small" },
      focusMode: "webSearch",
      optimizationMode: "speed"
    }
  })
  yield* Console.log(`search: ${answer.choices[0]?.message.content}`)
})

const main = async () => {
  const real = process.env["EFFECT_RAG_API_KEY"] !== undefined && process.env["EFFECT_RAG_BASE_URL"] !== undefined
  const demo = real ? undefined : await startDemoServer()
  if (demo) console.log(`(no EFFECT_RAG_API_KEY/EFFECT_RAG_BASE_URL: using the wire-format demo server at ${demo.url})`)
  const layer: Layer.Layer<Layers.RemoteServices, unknown> = demo
    ? Layers.remote({ baseUrl: demo.url, apiKey: "demo-key" })
    : Layers.Remote
  try {
    await Effect.runPromise(program.pipe(Effect.provide(layer)))
  } finally {
    await demo?.stop()
  }
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
