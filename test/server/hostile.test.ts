/**
 * The server against hostile clients: each input is made here, sent over loopback HTTP to a
 * server this file starts, and a watchdog (`test/support/watchdog.ts`) pings the same server
 * meanwhile to prove its event loop stayed free. Worst first, as `docs/server.md` lists the
 * limits: bodies of any size, CPU-heavy chunking, slow senders, crawl patterns, image bombs,
 * OCR out of memory, multipart limits, deep JSON, IPv6 forms of private addresses, and bodies
 * sent without the key or in too many inputs.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { crc32, deflateSync } from "node:zlib"
import * as Embeddings from "../../src/api/Embeddings.js"
import * as Rerank from "../../src/api/Rerank.js"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import * as LocalWeb from "../../src/engines/web/LocalWeb.js"
import { Isolate } from "../../src/engines/documents/internal/extract/isolate.js"
import { compileFilter } from "../../src/engines/web/internal/path-filter.js"
import { checkHost, rangeOf } from "../../src/engines/web/internal/ssrf.js"
import { Redacted } from "effect"
import { rawPost, zeros } from "../support/raw.js"
import { serveOurs, startServer } from "../support/server.js"
import { realSleep } from "../support/time.js"
import { watched } from "../support/watchdog.js"

// =============================================================================
// Helpers
// =============================================================================

/**
 * The longest stall the watchdog may see, in CPU time of this process (generous: the inputs
 * below used to stall for minutes; wall time is not bounded, a busy host stretches it).
 */
const stallBoundMs = 15_000

/** The hang guard of the tests that start extraction processes (a loaded host runs them many times slower). */
const hangGuardMs = 600_000

const encoder = new TextEncoder()
const json = { "content-type": "application/json" }
const boundary = "----hostile-boundary"
const multipart = { "content-type": `multipart/form-data; boundary=${boundary}` }

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes
}

/** A multipart body from parts: `[name, value]` text fields and `[name, filename, bytes]` files. */
const form = (parts: ReadonlyArray<readonly [string, string] | readonly [string, string, Uint8Array]>): Uint8Array => {
  const pieces: Array<Uint8Array> = []
  for (const part of parts) {
    const head = part.length === 3
      ? `--${boundary}\r\nContent-Disposition: form-data; name="${part[0]}"; filename="${part[1]}"\r\nContent-Type: application/octet-stream\r\n\r\n`
      : `--${boundary}\r\nContent-Disposition: form-data; name="${part[0]}"\r\n\r\n`
    pieces.push(encoder.encode(head), part.length === 3 ? part[2] : encoder.encode(part[1]), encoder.encode("\r\n"))
  }
  pieces.push(encoder.encode(`--${boundary}--\r\n`))
  return new Uint8Array(Buffer.concat(pieces))
}

/** A POST with a JSON body through fetch; status and parsed body. */
const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { method: "POST", headers: { ...json, ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // keep the text
    }
    return { status: response.status, json: parsed as Record<string, any> }
  })

/** A PNG chunk. */
const pngChunk = (type: string, data: Uint8Array): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, "latin1")
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0)
  return Buffer.concat([head, data, crc])
}

/** A greyscale PNG of `width`×`height` pixels (by its header) with the given IDAT bytes. */
const pngWith = (width: number, height: number, idat: Uint8Array): Uint8Array => {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 0 // greyscale
  return new Uint8Array(Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", idat),
    pngChunk("IEND", new Uint8Array(0))
  ]))
}

/** A small valid-looking PNG whose header claims `width`×`height` pixels (one row of data). */
const pngClaiming = (width: number, height: number): Uint8Array => pngWith(width, height, deflateSync(Buffer.alloc(64)))

/** An engine that records what reached it and answers at once. */
const recording = () => {
  const calls: Array<{ method: string; name: string; options: Upload.UploadOptions | undefined }> = []
  const answer = (method: string) => (file: Upload.UploadFile, options?: Upload.UploadOptions) =>
    Effect.sync((): Upload.StandardResult => {
      calls.push({ method, name: file.name, options })
      return { status: true, content: "ok", type: "text", error: "" }
    })
  const chunks = (file: Upload.UploadFile, options?: Upload.UploadOptions) =>
    Effect.sync((): Upload.EmbeddingsResult => {
      calls.push({ method: "extractChunks", name: file.name, options })
      return {
        id: "chunks-1",
        object: "chunks",
        created: 0,
        data: { success: true, data: { metadata: { title: "", description: "", language: "" }, chunks: [] } },
        usage: { total_chunks: 0, total_extracted_text: 0, total_tokens: 0, total_pages: 1 },
        type: "text",
        error: ""
      }
    })
  return {
    calls,
    layer: Layer.succeed(Upload.Upload, Upload.Upload.of({ extract: answer("extract"), files: answer("files"), extractChunks: chunks }))
  }
}

// =============================================================================
// 1. Bodies of any size
// =============================================================================

describe("hostile: request bodies", () => {
  it.scopedLive("a JSON body over the route's limit is a 413 with the wire error body, read no further; the server lives", () =>
    Effect.gen(function*() {
      const url = yield* serveOurs(LocalWeb.layer().pipe(Layer.provide(LocalFiles.layer({ isolation: "inline" }))))
      const total = 64 * 1024 * 1024
      async function* endlessJson(): AsyncGenerator<Uint8Array> {
        yield encoder.encode(`{"url":"http://example.com/","padding":"`)
        for (let left = total; left > 0; left -= 65536) yield new Uint8Array(65536).fill(0x61)
        yield encoder.encode(`"}`)
      }
      const { result, seen } = yield* watched(url, rawPost(`${url}/v1/scrape`, json, endlessJson()))
      expect(result.status).toBe(413)
      // a Firecrawl route: Firecrawl's error body, with the limit's code
      expect(result.json).toEqual({ success: false, error: expect.stringContaining("limit"), code: "body_too_large" })
      expect(result.headers["connection"]).toBe("close")
      expect(result.written).toBeLessThan(total / 2)
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
      // a body announced as too large is refused before any of it is read
      const announced = yield* rawPost(`${url}/v1/scrape`, { ...json, "content-length": String(600 * 1024 * 1024) }, zeros(8 * 1024 * 1024))
      expect(announced.status).toBe(413)
      expect(announced.written).toBeLessThan(8 * 1024 * 1024)
      // within the limit, the route still works: a 400 naming the field
      const ok = yield* postJson(`${url}/v1/scrape`, { nope: 1 })
      expect(ok.status).toBe(400)
      expect(ok.json["error"]).toContain("url")
    }))
})

// =============================================================================
// 2. CPU-heavy chunking
// =============================================================================

describe("hostile: embeddings-mode chunking", () => {
  it.scopedLive("a text that is slow to tokenise is chunked off the server's event loop, under the per-file time-out", () =>
    Effect.gen(function*() {
      const engine = yield* LocalFiles.make({ timeout: "5 seconds" })
      const url = yield* serveOurs(Layer.succeed(Upload.Upload, engine))
      // one 256 KiB word: byte-pair encoding of a long run is quadratic
      const text = new Uint8Array(256 * 1024).fill(0x61)
      const body = form([["file", "run.txt", text], ["extract_mode", "embeddings"]])
      const { result, seen } = yield* watched(url, rawPost(`${url}/upload`, multipart, once(body)))
      // done in time, or the typed time-out of the extraction process: never a stalled server
      if (result.status === 200) {
        expect(result.json).toMatchObject({ object: "chunks" })
      } else {
        expect(result.status).toBe(500)
        expect(result.json).toMatchObject({ status: false, reason: "timeout" })
      }
      expect(seen.answered).toBeGreaterThan(0)
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
    }), { timeout: hangGuardMs })
})

// =============================================================================
// 3. Slow senders
// =============================================================================

describe("hostile: slow senders", () => {
  it.scopedLive("four uploads that send 200 bytes and stall hold no extraction slot", () =>
    Effect.gen(function*() {
      const engine = recording()
      const url = yield* serveOurs(engine.layer)
      async function* stall(): AsyncGenerator<Uint8Array> {
        yield form([["file", "slow.txt", new Uint8Array(100)]]).subarray(0, 200)
        yield* [] // then nothing, until the client is interrupted
        await new Promise<void>(() => {})
      }
      const stalled = yield* Effect.forEach([1, 2, 3, 4], () => Effect.fork(rawPost(`${url}/upload`, multipart, stall())))
      yield* realSleep(300)
      const { result, seen } = yield* watched(url, rawPost(`${url}/upload`, multipart, once(form([["file", "a.txt", encoder.encode("hello")]]))))
      expect(result.status).toBe(200)
      expect(engine.calls.map((c) => c.name)).toEqual(["a.txt"])
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
      yield* Effect.forEach(stalled, Fiber.interrupt)
    }))
})

// =============================================================================
// 4. Crawl patterns
// =============================================================================

describe("hostile: crawl path patterns", () => {
  it.scopedLive("a catastrophic pattern meets a hostile link in linear time; RE2-only syntax is a 400", () =>
    Effect.gen(function*() {
      const trap = `/${"a".repeat(40)}!`
      const site = yield* startServer((req) =>
        req.path === "/"
          ? { headers: { "content-type": "text/html" }, text: `<html><body><a href="${trap}">t</a><a href="/aaa">ok</a></body></html>` }
          : { headers: { "content-type": "text/html" }, text: `<html><body><p>page ${req.path}</p></body></html>` }
      )
      const url = yield* serveOurs(
        LocalWeb.layer({ allowPrivate: true }).pipe(Layer.provide(LocalFiles.layer({ isolation: "inline" })))
      )
      const crawl = Effect.gen(function*() {
        const started = yield* postJson(`${url}/v1/crawl`, { url: `${site.url}/`, includePaths: ["^/(a+)+$"] })
        expect(started.status).toBe(200)
        for (;;) {
          const job = yield* Effect.promise(() => fetch(`${url}/v1/crawl/${started.json["id"]}`).then((r) => r.json() as Promise<Record<string, any>>))
          if (job["status"] !== "scraping") return job
          yield* realSleep(50)
        }
      })
      const { result: job, seen } = yield* watched(url, crawl)
      expect(job["status"]).toBe("completed")
      const paths = (job["data"] as Array<{ metadata: { sourceURL?: string; url?: string } }>).map((p) =>
        new URL(p.metadata.sourceURL ?? p.metadata.url ?? "").pathname
      )
      expect(paths.sort()).toEqual(["/", "/aaa"])
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
      const lookbehind = yield* postJson(`${url}/v1/crawl`, { url: `${site.url}/`, excludePaths: ["(?<=a)b"] })
      expect(lookbehind.status).toBe(400)
      expect(lookbehind.json["error"]).toContain("RE2")
      expect(() => compileFilter(Array.from({ length: 101 }, () => "a"), [])).toThrow(SyntaxError)
    }), { timeout: 60_000 })
})

// =============================================================================
// 5, 6. Image bombs and OCR
// =============================================================================

describe("hostile: image headers", () => {
  for (const isolation of ["process", "inline"] as const) {
    it.scopedLive(`a tiny PNG claiming 100000x100000 or 30000x30000 pixels is limit_exceeded before decoding; a damaged one is corrupt (${isolation})`, () =>
      Effect.gen(function*() {
        const engine = yield* LocalFiles.make({ isolation, timeout: "60 seconds" })
        const url = yield* serveOurs(Layer.succeed(Upload.Upload, engine))
        for (const [w, h] of [[100_000, 100_000], [30_000, 30_000]] as const) {
          const png = pngClaiming(w, h)
          expect(png.byteLength).toBeLessThan(300)
          const { result, seen } = yield* watched(
            url,
            rawPost(`${url}/upload`, multipart, once(form([["file", "bomb.png", png], ["enable_ocr", "true"]])))
          )
          expect(result.status).toBe(400)
          expect(result.json).toMatchObject({ status: false, reason: "limit_exceeded", error: expect.stringContaining(`${w}x${h}`) })
          expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
        }
        // a PNG whose pixels the decoder cannot read: a typed failure, never `status: true` with empty text
        const damaged = yield* rawPost(
          `${url}/upload`,
          multipart,
          once(form([["file", "damaged.png", pngWith(200, 100, new Uint8Array(50).fill(7))], ["enable_ocr", "true"]]))
        )
        expect(damaged.status).toBe(400)
        expect(damaged.json).toMatchObject({ status: false, reason: "corrupt" })
        // without OCR nothing decodes it: the image comes back as a data URL
        const plain = yield* rawPost(`${url}/upload`, multipart, once(form([["file", "bomb.png", pngClaiming(100_000, 100_000)]])))
        expect(plain.status).toBe(200)
      }), { timeout: hangGuardMs })
  }

  it("an extraction process past its memory high-water mark is replaced after it answers", async () => {
    const isolate = new Isolate({ concurrency: 1, memoryMb: 512, recycleMb: 1 })
    try {
      const req = {
        name: "a.txt",
        data: encoder.encode("hello"),
        options: { enableOcr: false, imagesOnly: false, textOnly: false, ocrLanguages: "eng" }
      }
      const first = await isolate.run(req, 60_000)
      expect(first.units[0]?.content).toBe("hello")
      expect(isolate.retired).toBe(1)
      const second = await isolate.run(req, 60_000)
      expect(second.units[0]?.content).toBe("hello")
      expect(isolate.retired).toBe(2)
    } finally {
      isolate.close()
    }
  }, hangGuardMs)
})

// =============================================================================
// 7. Multipart limits
// =============================================================================

describe("hostile: multipart limits", () => {
  it.scopedLive("a long field or a 33rd part after the file refuses the whole form naming the limit; fields after the file count", () =>
    Effect.gen(function*() {
      const engine = recording()
      const url = yield* serveOurs(engine.layer)
      const file = ["file", "a.txt", encoder.encode("hello")] as const
      const longField = yield* rawPost(`${url}/upload`, multipart, once(form([file, ["note", "x".repeat(5000)], ["extract_mode", "embeddings"]])))
      expect(longField.status).toBe(400)
      expect(longField.json).toMatchObject({ status: false, code: "field_too_large", error: expect.stringContaining("maxFieldBytes") })
      const parts = Array.from({ length: 32 }, (_, i) => [`x${i}`, "1"] as const)
      const tooMany = yield* rawPost(`${url}/upload`, multipart, once(form([file, ...parts, ["extract_mode", "embeddings"]])))
      expect(tooMany.status).toBe(400)
      expect(tooMany.json).toMatchObject({ code: "too_many_parts", error: expect.stringContaining("maxParts") })
      expect(engine.calls).toEqual([])
      // the same fields within the limits, after the file: all of them reach the engine
      const { result, seen } = yield* watched(
        url,
        rawPost(`${url}/upload`, multipart, once(form([file, ["note", "x".repeat(100)], ["text_only", "true"], ["extract_mode", "embeddings"]])))
      )
      expect(result.status).toBe(200)
      expect(engine.calls).toEqual([{ method: "extractChunks", name: "a.txt", options: { text_only: true, enable_ocr: false } }])
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
    }))
})

// =============================================================================
// 8. Deep and malformed JSON
// =============================================================================

describe("hostile: JSON", () => {
  it.scopedLive("5,000-deep nesting and malformed JSON are 400s with the wire error body; a defect a 500 with it", () =>
    Effect.gen(function*() {
      const embeddings = Layer.succeed(Embeddings.Embeddings, {
        defaultModel: "m",
        dimension: 1,
        create: () => Effect.die(new Error("not reached")),
        embed: () => Effect.die(new Error("not reached"))
      } as unknown as Embeddings.Service)
      const url = yield* serveOurs(embeddings)
      const deep = "[".repeat(5000) + "]".repeat(5000)
      const { result, seen } = yield* watched(url, postJson(`${url}/v1/embeddings`, `{"model":"m","input":${deep}}`))
      expect(result.status).toBe(400)
      expect(result.json).toEqual({ error: { message: expect.stringContaining("64 levels"), type: "invalid_request_error", code: "json_too_deep" } })
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
      for (const bad of ["{", "{\"model\": }", "\u0000"]) {
        const r = yield* postJson(`${url}/v1/embeddings`, bad)
        expect(r.status).toBe(400)
        expect(r.json).toMatchObject({ error: { code: "invalid_json" } })
      }
      // deep but within the limit: an ordinary 400 naming the field
      const shallow = yield* postJson(`${url}/v1/embeddings`, `{"model":"m","input":${"[".repeat(10)}${"]".repeat(10)}}`)
      expect(shallow.status).toBe(400)
      expect(shallow.json["error"]["message"]).toContain("input")
      // a defect behind a valid request: a 500 with the wire error body, and the server goes on
      const defect = yield* postJson(`${url}/v1/embeddings`, { model: "m", input: "x" })
      expect(defect.status).toBe(500)
      expect(defect.json).toEqual({ error: { message: expect.any(String), type: "server_error", code: null } })
      expect((yield* postJson(`${url}/v1/embeddings`, "{")).status).toBe(400)
    }))
})

// =============================================================================
// 9. IPv6 forms of private addresses
// =============================================================================

describe("hostile: SSRF through IPv6 forms that carry IPv4", () => {
  it("every such form is classified by the IPv4 address inside", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["::127.0.0.1", "loopback"],
      ["::7f00:1", "loopback"],
      ["::ffff:127.0.0.1", "loopback"],
      ["::ffff:10.0.0.1", "private"],
      ["64:ff9b::127.0.0.1", "loopback"],
      ["64:ff9b::a9fe:a9fe", "linkLocal"],
      ["64:ff9b:1::192.168.0.1", "private"],
      ["2002:7f00:1::", "loopback"],
      ["2002:a00:1::1", "private"],
      ["::ffff:8.8.8.8", "unicast"],
      ["64:ff9b::8.8.8.8", "unicast"],
      ["2002:808:808::1", "unicast"]
    ]
    expect(cases.map(([address]) => [address, rangeOf(address)])).toEqual(cases)
    for (const [address, range] of cases) {
      expect(checkHost({ allowPrivate: false, allowHosts: [] }, `[${address}]`) === undefined).toBe(range === "unicast")
    }
  })

  it.scopedLive("a scrape of http://[::127.0.0.1]/ is refused over the wire", () =>
    Effect.gen(function*() {
      const url = yield* serveOurs(LocalWeb.layer().pipe(Layer.provide(LocalFiles.layer({ isolation: "inline" }))))
      for (const host of ["[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"]) {
        const { result } = yield* watched(url, postJson(`${url}/v1/scrape`, { url: `http://${host}/` }))
        expect(result.status).toBeGreaterThanOrEqual(400)
        expect(result.status).toBeLessThan(500)
        expect(JSON.stringify(result.json)).toContain("refused")
        // the option and the flag that would open it
        expect(JSON.stringify(result.json)).toContain("allowPrivate or allowHosts, the LocalWeb options, or with effect-rag serve --allow-private")
      }
    }))
})

// =============================================================================
// 10. No key, too many inputs
// =============================================================================

describe("hostile: unauthenticated bodies and per-call limits", () => {
  it.scopedLive("an upload without the key is a 401 and its body is not drained", () =>
    Effect.gen(function*() {
      const engine = recording()
      const url = yield* serveOurs(engine.layer, { apiKey: Redacted.make("sk-server") })
      const total = 1024 * 1024 * 1024
      async function* huge(): AsyncGenerator<Uint8Array> {
        yield encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n`)
        yield* zeros(total)
      }
      const { result, seen } = yield* watched(url, rawPost(`${url}/upload`, multipart, huge()))
      expect(result.status).toBe(401)
      expect(result.headers["connection"]).toBe("close")
      expect(result.written).toBeLessThan(64 * 1024 * 1024)
      expect(engine.calls).toEqual([])
      expect(seen.longestCpuMs, `stalled ${seen.longestCpuMs} ms of CPU (${seen.longestMs} ms wall)`).toBeLessThan(stallBoundMs)
    }))

  it.scopedLive("embeddings and rerank calls over the input limits are 400s naming the limit and its serve flag; the model is not called", () =>
    Effect.gen(function*() {
      let called = 0
      const embeddings = Layer.succeed(Embeddings.Embeddings, {
        defaultModel: "m",
        dimension: 1,
        create: (r: Embeddings.EmbeddingsRequest) =>
          Effect.sync(() => {
            called++
            const inputs = typeof r.input === "string" ? [r.input] : r.input
            return { data: inputs.map((_, index) => ({ index, embedding: [1] })) }
          }),
        embed: () => Effect.die(new Error("not used"))
      } as unknown as Embeddings.Service)
      const rerank = Layer.succeed(Rerank.Rerank, {
        defaultModel: "r",
        rerank: () => Effect.sync(() => ((called++), { results: [] }))
      } as unknown as Rerank.Service)
      const url = yield* serveOurs(Layer.merge(embeddings, rerank))
      const many = yield* postJson(`${url}/v1/embeddings`, { model: "m", input: Array.from({ length: 2000 }, () => "x") })
      expect(many.status).toBe(400)
      expect(many.json).toEqual({
        error: { message: expect.stringContaining("(server limit embeddingInputs, effect-rag serve --max-embedding-inputs)"), type: "invalid_request_error", code: "limit_exceeded" }
      })
      const long = yield* postJson(`${url}/v1/embeddings`, { model: "m", input: ["ok", "y".repeat(40_000)] })
      expect(long.status).toBe(400)
      expect(long.json["error"]["message"]).toContain("input[1]")
      expect(long.json["error"]["message"]).toContain("(server limit inputChars, effect-rag serve --max-input-chars)")
      const docs = yield* postJson(`${url}/v1/rerank`, { model: "r", query: "q", documents: Array.from({ length: 300 }, () => "d") })
      expect(docs.status).toBe(400)
      expect(docs.json["error"]["message"]).toContain("(server limit rerankDocuments, effect-rag serve --max-rerank-documents)")
      expect(called).toBe(0)
      const within = yield* postJson(`${url}/v1/embeddings`, { model: "m", input: Array.from({ length: 256 }, () => "x") })
      expect(within.status).toBe(200)
      expect(called).toBe(1)
    }))
})
