/**
 * The image formats the fixtures do not cover (WEBP, GIF, BMP, TIFF) and audio.
 *
 * The images are the fixture scan `png/testocr.png` (made by others) re-encoded at test time:
 * WEBP and GIF by skia (@napi-rs/canvas), BMP and TIFF by the two small uncompressed writers
 * below, whose layouts are fixed by the formats' specifications. Each must OCR to every snippet
 * the manifest lists for the PNG.
 *
 * Audio: the local engine has no speech model; with `layerWithRemoteSpeech` it sends the audio
 * (a real WAV written here) to the remote upload endpoint, served on loopback, and returns the
 * transcript that endpoint gives.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { createCanvas, loadImage } from "@napi-rs/canvas"
import { Effect, Layer } from "effect"
import * as Upload from "../../src/api/Upload.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { clientLayer, formOf, startServer } from "../support/server.js"
import { fixtureFile, manifest } from "./fixtures.js"

const collapse = (s: string) => s.replace(/\s+/g, " ")
const snippets = manifest.find((f) => f.path === "png/testocr.png")!.must_contain

/** RGBA pixels of the fixture scan. */
const scan = Effect.promise(async () => {
  const img = await loadImage(Buffer.from(fixtureFile("png/testocr.png").data))
  const canvas = createCanvas(img.width, img.height)
  const ctx = canvas.getContext("2d")
  ctx.drawImage(img, 0, 0)
  return { canvas, width: img.width, height: img.height, rgba: ctx.getImageData(0, 0, img.width, img.height).data }
})

/** A 24-bit BMP (BITMAPINFOHEADER, bottom-up rows padded to 4 bytes). */
const bmp = (w: number, h: number, rgba: Uint8ClampedArray): Uint8Array => {
  const row = Math.ceil((w * 3) / 4) * 4
  const out = Buffer.alloc(54 + row * h)
  out.write("BM", 0, "ascii")
  out.writeUInt32LE(out.length, 2)
  out.writeUInt32LE(54, 10)
  out.writeUInt32LE(40, 14)
  out.writeInt32LE(w, 18)
  out.writeInt32LE(h, 22)
  out.writeUInt16LE(1, 26)
  out.writeUInt16LE(24, 28)
  out.writeUInt32LE(row * h, 34)
  for (let y = 0; y < h; y++) {
    const o = 54 + (h - 1 - y) * row
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4
      out[o + x * 3] = rgba[i + 2]!
      out[o + x * 3 + 1] = rgba[i + 1]!
      out[o + x * 3 + 2] = rgba[i]!
    }
  }
  return new Uint8Array(out)
}

/** A baseline uncompressed RGB TIFF (little-endian, one strip). */
const tiff = (w: number, h: number, rgba: Uint8ClampedArray): Uint8Array => {
  const pixels = w * h * 3
  const entries: Array<[tag: number, type: number, count: number, value: number]> = []
  const ifdAt = 8
  const ifdSize = 2 + 11 * 12 + 4
  const bitsAt = ifdAt + ifdSize
  const dataAt = bitsAt + 6
  entries.push([256, 4, 1, w]) // ImageWidth
  entries.push([257, 4, 1, h]) // ImageLength
  entries.push([258, 3, 3, bitsAt]) // BitsPerSample 8,8,8 (at bitsAt)
  entries.push([259, 3, 1, 1]) // Compression: none
  entries.push([262, 3, 1, 2]) // PhotometricInterpretation: RGB
  entries.push([273, 4, 1, dataAt]) // StripOffsets
  entries.push([277, 3, 1, 3]) // SamplesPerPixel
  entries.push([278, 4, 1, h]) // RowsPerStrip
  entries.push([279, 4, 1, pixels]) // StripByteCounts
  entries.push([284, 3, 1, 1]) // PlanarConfiguration: chunky
  entries.push([296, 3, 1, 1]) // ResolutionUnit: none
  const out = Buffer.alloc(dataAt + pixels)
  out.write("II", 0, "ascii")
  out.writeUInt16LE(42, 2)
  out.writeUInt32LE(ifdAt, 4)
  out.writeUInt16LE(entries.length, ifdAt)
  entries.forEach(([tag, type, count, value], k) => {
    const o = ifdAt + 2 + k * 12
    out.writeUInt16LE(tag, o)
    out.writeUInt16LE(type, o + 2)
    out.writeUInt32LE(count, o + 4)
    if (type === 3 && count === 1) out.writeUInt16LE(value, o + 8)
    else out.writeUInt32LE(value, o + 8)
  })
  out.writeUInt32LE(0, ifdAt + 2 + entries.length * 12) // no next IFD
  for (let k = 0; k < 3; k++) out.writeUInt16LE(8, bitsAt + k * 2)
  for (let i = 0, o = dataAt; i < w * h; i++, o += 3) {
    out[o] = rgba[i * 4]!
    out[o + 1] = rgba[i * 4 + 1]!
    out[o + 2] = rgba[i * 4 + 2]!
  }
  return new Uint8Array(out)
}

/** A mono 16-bit PCM WAV of a 440 Hz tone. */
const wav = (seconds: number, rate = 16_000): Uint8Array => {
  const samples = Math.round(seconds * rate)
  const out = Buffer.alloc(44 + samples * 2)
  out.write("RIFF", 0, "ascii")
  out.writeUInt32LE(36 + samples * 2, 4)
  out.write("WAVEfmt ", 8, "ascii")
  out.writeUInt32LE(16, 16)
  out.writeUInt16LE(1, 20) // PCM
  out.writeUInt16LE(1, 22) // mono
  out.writeUInt32LE(rate, 24)
  out.writeUInt32LE(rate * 2, 28)
  out.writeUInt16LE(2, 32)
  out.writeUInt16LE(16, 34)
  out.write("data", 36, "ascii")
  out.writeUInt32LE(samples * 2, 40)
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / rate) * 12_000), 44 + i * 2)
  return new Uint8Array(out)
}

layer(LocalFiles.layer({ timeout: "60 seconds" }))("image formats through OCR", (it) => {
  const cases: ReadonlyArray<readonly [name: string, make: (s: Effect.Effect.Success<typeof scan>) => Promise<Uint8Array> | Uint8Array]> = [
    ["scan.webp", (s) => s.canvas.encode("webp", 100)],
    ["scan.gif", (s) => s.canvas.encode("gif", 100)],
    ["scan.bmp", (s) => bmp(s.width, s.height, s.rgba)],
    ["scan.tiff", (s) => tiff(s.width, s.height, s.rgba)]
  ]
  for (const [name, make] of cases) {
    it.effect(`${name}: OCR reads every snippet of the fixture it was made from`, () =>
      Effect.gen(function*() {
        const s = yield* scan
        const data = new Uint8Array(yield* Effect.promise(async () => make(s)))
        const upload = yield* Upload.Upload
        // no type and a neutral name for one of them: detection goes by the bytes
        const r = yield* upload.extract({ name: name === "scan.tiff" ? "scan.bin" : name, data }, { enable_ocr: true })
        expect(r.type).toBe("image")
        for (const snippet of snippets) expect(collapse(r.content)).toContain(collapse(snippet))
      }))
  }
})

describe("audio", () => {
  it.scoped("with the remote speech service, the WAV goes to the upload endpoint and the transcript comes back", () =>
    Effect.gen(function*() {
      const audio = wav(0.5)
      const server = yield* startServer(() => ({ json: { status: true, content: "a four hundred forty hertz tone", type: "audio", error: "" } }))
      const upload = yield* Effect.provide(
        Upload.Upload,
        LocalFiles.layerWithRemoteSpeech({ isolation: "inline" }).pipe(Layer.provide(clientLayer(server.url, { uploadUrl: server.url })))
      )
      const r = yield* upload.extract({ name: "tone.wav", data: audio })
      expect(r).toMatchObject({ status: true, type: "audio", content: "a four hundred forty hertz tone" })
      // only the audio went to the server, byte for byte
      expect(server.received).toHaveLength(1)
      const form = yield* Effect.promise(() => formOf(server.received[0]!))
      const sent = form.get("file") as File
      expect(new Uint8Array(yield* Effect.promise(() => sent.arrayBuffer()))).toEqual(audio)
      // a document does not go there
      yield* upload.extract({ name: "note.txt", data: new TextEncoder().encode("local text") })
      expect(server.received).toHaveLength(1)
    }))

  it.effect("without a speech service, a real WAV fails with speech_unavailable", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(
        Effect.flatMap(Upload.Upload, (u) => u.extract({ name: "tone.wav", data: wav(0.2) })).pipe(
          Effect.provide(LocalFiles.layer({ isolation: "inline" }))
        )
      )
      expect(e._tag === "ExtractionError" ? e.reason : e._tag).toBe("speech_unavailable")
    }))
})
