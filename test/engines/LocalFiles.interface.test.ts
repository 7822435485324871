/**
 * The remote `Upload.layer` and `LocalFiles.layer` provide one interface: the same program runs
 * over either layer. Here the remote client talks, over real HTTP on loopback, to our own
 * server (`Server.layer`) serving this engine, and both layers give the same decoded results.
 */
import { FetchHttpClient, HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as ApiHttp from "../../src/api/ApiHttp.js"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as RagConfig from "../../src/RagConfig.js"
import * as Server from "../../src/server/Server.js"
import { fixtureFile } from "./fixtures.js"

// both layers are values of one type: the Upload service, differing only in what they need
const layers: ReadonlyArray<Layer.Layer<Upload.Upload, never, ApiHttp.ApiHttp>> = [
  Upload.layer,
  LocalFiles.layer({ isolation: "inline" })
]

/** One program, written once against the Tag. */
const program = (file: Upload.UploadFile) =>
  Effect.gen(function*() {
    const upload = yield* Upload.Upload
    const standard = yield* upload.extract(file, { remove_headers: true })
    const chunks = yield* upload.extractChunks(file)
    return { standard, chunks }
  })

/** The client's transport (Node's fetch, as `ApiHttp.layer` uses), recording the paths it sends to. */
const recordingClient = (seen: Array<string>) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(
      HttpClient.HttpClient,
      HttpClient.tapRequest((request) => Effect.sync(() => seen.push(new URL(request.url).pathname)))
    )
  ).pipe(Layer.provide(FetchHttpClient.layer))

describe("one interface", () => {
  it("both layers have the Upload service's type", () => {
    expect(layers).toHaveLength(2)
    for (const l of layers) expect(Layer.isLayer(l)).toBe(true)
  })

  it.scopedLive("the same program gives the same results over the local and the remote layer", () =>
    Effect.gen(function*() {
      // our server, on a free loopback port, serving the local engine
      const server = yield* Layer.build(Server.layer({ port: 0 }).pipe(Layer.provide(LocalFiles.layer({ isolation: "inline" }))))
      const url = yield* Effect.provide(Server.baseUrl, server)
      const seen: Array<string> = []
      const remote = Upload.layer.pipe(
        Layer.provide(ApiHttp.layerWithoutHttpClient),
        Layer.provide(Layer.merge(recordingClient(seen), RagConfig.layer({ apiKey: "sk-test", baseUrl: url, uploadUrl: url })))
      )
      const file = fixtureFile("json/us_presidents.json")
      const viaLocal = yield* Effect.provide(program(file), LocalFiles.layer({ isolation: "inline" }))
      const viaRemote = yield* Effect.provide(program(file), remote)
      expect(viaRemote.standard).toEqual(viaLocal.standard)
      const strip = (r: Upload.EmbeddingsResult) => ({ ...r, id: "", created: 0 })
      expect(strip(viaRemote.chunks)).toEqual(strip(viaLocal.chunks))
      // both are exactly the spec's shapes
      expect(Schema.is(Upload.StandardResult)(viaLocal.standard)).toBe(true)
      expect(Schema.is(Upload.EmbeddingsResult)(viaLocal.chunks)).toBe(true)
      expect(seen).toEqual(["/upload", "/upload"])
    }))
})
