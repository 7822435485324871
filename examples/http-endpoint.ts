/**
 * A backend HTTP endpoint that embeds effect-rag to answer questions about a collection:
 *
 *   POST /ask  {"question": "…", "limit"?: 6}  →  {"answer", "sources": [{n, source, page, chunk, title}], "unknownCitations"}
 *
 * Run it (after `effect-rag ingest …`) against a real deployment or any server that speaks the
 * chat format:
 *
 *   EFFECT_RAG_BASE_URL=https://… EFFECT_RAG_API_KEY=… EFFECT_RAG_CHAT_MODEL=… \
 *     npx tsx examples/http-endpoint.ts --db .effect-rag/db --collection default --port 3000
 *   curl -s localhost:3000/ask -d '{"question": "What does the guide say about backups?"}'
 *
 * `router` and `layer` are exported so that tests (and other servers) can mount them:
 * `test/pipeline/answer-examples.test.ts` runs this handler against a loopback chat server.
 */
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"
import { parseArgs } from "node:util"
import { pathToFileURL } from "node:url"
import { Answer, ApiHttp, Chat, LanceDbStore, Principal, RagConfig } from "effect-rag"

/** The request body. */
export const AskBody = Schema.Struct({
  question: Schema.String.pipe(Schema.minLength(1)),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 20)))
})

/** The routes, answering from `collection`. Needs `Chat` and a `VectorStore`. */
export const router = (collection: string) =>
  HttpRouter.empty.pipe(
    HttpRouter.post(
      "/ask",
      Effect.gen(function*() {
        const body = yield* HttpServerRequest.schemaBodyJson(AskBody)
        // This endpoint has no users: it answers from every chunk. A multi-user endpoint provides
        // the caller's principal (Principal.make(id, groups)) instead; `effect-rag serve --keys`
        // maps API keys to principals.
        const answer = yield* Answer.ask(collection, body.question, { limit: body.limit }).pipe(
          Effect.provideService(Principal.Principal, Principal.unrestricted)
        )
        return yield* HttpServerResponse.json({
          answer: answer.text,
          sources: answer.cited.map(({ n, source, page, chunk, title }) => ({ n, source, page, chunk, title })),
          unknownCitations: answer.unknownCitations
        })
      }).pipe(
        Effect.catchTags({
          ParseError: (e) => HttpServerResponse.json({ error: `bad request: ${e.message}` }, { status: 400 }),
          RequestError: () => HttpServerResponse.json({ error: "bad request: expected a JSON body" }, { status: 400 }),
          CollectionNotFound: (e) => HttpServerResponse.json({ error: e.message }, { status: 404 }),
          ChatNotConfigured: (e) => HttpServerResponse.json({ error: e.message }, { status: 503 })
        }),
        // Anything else (the chat API failing, the store failing) is a 502 with the typed tag,
        // never the API key: RagError messages are scrubbed of it.
        Effect.catchAll((e) => HttpServerResponse.json({ error: `${e._tag}: ${"message" in e ? e.message : ""}` }, { status: 502 }))
      )
    )
  )

/**
 * The services the routes need: LanceDB at `db` (a folder or `s3://…` with the storage settings
 * from the environment) and the remote Chat configured from `EFFECT_RAG_*`.
 */
export const layer = (db: string, chatModel = process.env["EFFECT_RAG_CHAT_MODEL"]) =>
  Layer.mergeAll(
    LanceDbStore.layerAt(db),
    Chat.layer({ model: chatModel }).pipe(Layer.provide(ApiHttp.layer), Layer.provide(RagConfig.layerConfig))
  )

const main = () => {
  const { values } = parseArgs({
    options: {
      db: { type: "string", default: process.env["EFFECT_RAG_DB"] ?? ".effect-rag/db" },
      collection: { type: "string", default: process.env["EFFECT_RAG_COLLECTION"] ?? "default" },
      port: { type: "string", default: "3000" }
    }
  })
  const server = router(values.collection).pipe(
    HttpServer.serve(),
    HttpServer.withLogAddress,
    Layer.provide(NodeHttpServer.layer(createServer, { port: Number(values.port) })),
    Layer.provide(layer(values.db))
  )
  NodeRuntime.runMain(Layer.launch(server))
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main()
