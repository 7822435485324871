/**
 * The remote `Upload.layer` and `LocalFiles.layer` provide one interface: the same program runs
 * over either layer. Here the remote client talks to a loopback stub whose `/upload` route
 * answers with this engine's results (a minimal stand-in for the later server), and both
 * layers give the same decoded results.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import * as ApiHttp from "../../src/api/internal/ApiHttp.js"
import * as RagConfig from "../../src/RagConfig.js"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/LocalFiles.js"
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

/**
 * An HttpClient whose `/upload` runs the local engine on the multipart body (a stand-in for
 * the later server; the real transport is exercised by the API client's own tests).
 */
const engineClient = (local: Upload.Service, seen: Array<string>) =>
  Layer.succeed(
    HttpClient.HttpClient,
    HttpClient.make((request) =>
      Effect.promise(async () => {
        seen.push(new URL(request.url).pathname)
        const body = request.body
        if (body._tag !== "FormData") throw new Error(`unexpected body ${body._tag}`)
        const form = body.formData
        const part = form.get("file") as File
        const file: Upload.UploadFile = { name: part.name, data: new Uint8Array(await part.arrayBuffer()) }
        const options = Object.fromEntries(
          Upload.booleanFields.flatMap((f) => (form.has(f) ? [[f, form.get(f) === "true"]] : []))
        ) as Upload.UploadOptions
        const run: Effect.Effect<unknown, Upload.UploadError> =
          form.get("extract_mode") === "embeddings" ? local.extractChunks(file, options) : local.extract(file, options)
        const result = await Effect.runPromise(Effect.either(run))
        const [status, json] = result._tag === "Right"
          ? [200, result.right]
          : [500, { status: false, content: "", type: "error", error: result.left.message }]
        return HttpClientResponse.fromWeb(request, new Response(JSON.stringify(json), { status, headers: { "content-type": "application/json" } }))
      })
    )
  )

describe("one interface", () => {
  it("both layers have the Upload service's type", () => {
    expect(layers).toHaveLength(2)
    for (const l of layers) expect(Layer.isLayer(l)).toBe(true)
  })

  it.scoped("the same program gives the same results over the local and the remote layer", () =>
    Effect.gen(function*() {
      const local = yield* Effect.provide(Upload.Upload, LocalFiles.layer({ isolation: "inline" }))
      const seen: Array<string> = []
      const remote = Upload.layer.pipe(
        Layer.provide(ApiHttp.layerWithoutHttpClient),
        Layer.provide(Layer.merge(engineClient(local, seen), RagConfig.layer({ apiKey: "sk-test", baseUrl: "http://127.0.0.1:9" })))
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
