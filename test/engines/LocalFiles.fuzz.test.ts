/**
 * Fuzz: seeded truncations and byte flips of every fixture end in a result or a typed error
 * within the time-out; none ends in a defect (an untyped crash) or hangs.
 */
import { expect, it, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import * as Upload from "../../src/api/Upload.js"
import { startupMs } from "../../src/engines/documents/internal/extract/isolate.js"
import * as LocalFiles from "../../src/engines/documents/LocalFiles.js"
import { fixtureFile, manifest } from "./fixtures.js"

/** mulberry32: a small seeded PRNG, so every run fuzzes the same cases. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface Case {
  readonly label: string
  readonly file: Upload.UploadFile
}

/** The mutants of one file: truncations, scattered byte flips, and a clobbered block. */
const mutants = (path: string, count: number, random: () => number): Array<Case> => {
  const original = fixtureFile(path)
  const data = original.data
  const out: Array<Case> = []
  for (let i = 0; i < count; i++) {
    const copy = data.slice()
    let label: string
    let bytes: Uint8Array
    switch (i % 3) {
      case 0: {
        const at = Math.floor(random() * data.length)
        bytes = copy.subarray(0, at)
        label = `truncated at ${at}`
        break
      }
      case 1: {
        const flips = 1 + Math.floor(random() * 32)
        for (let k = 0; k < flips; k++) copy[Math.floor(random() * copy.length)] = Math.floor(random() * 256)
        bytes = copy
        label = `${flips} bytes flipped`
        break
      }
      default: {
        const at = Math.floor(random() * data.length)
        const len = Math.min(copy.length - at, 1 + Math.floor(random() * 512))
        for (let k = 0; k < len; k++) copy[at + k] = Math.floor(random() * 256)
        bytes = copy
        label = `${len} bytes clobbered at ${at}`
      }
    }
    out.push({ label: `${path}: ${label}`, file: { name: original.name, data: bytes } })
  }
  return out
}

const timeout = 20_000
const random = prng(20240613)
const cases = manifest.flatMap((entry) => {
  const size = fixtureFile(entry.path).data.length
  // bigger files cost more per case: fewer cases, still every fixture
  const count = size > 500_000 ? 4 : size > 100_000 ? 8 : 12
  return mutants(entry.path, count, random)
})

const allowed = new Set(["ExtractionError", "PayloadTooLarge", "InvalidRequest"])

layer(LocalFiles.layer({ timeout: `${timeout} millis`, concurrency: 2 }))("fuzz", (it) => {
  it.effect(
    `${cases.length} seeded mutants of the fixtures end in a result or a typed error`,
    () =>
      Effect.gen(function*() {
        expect(cases.length).toBeGreaterThanOrEqual(250)
        const upload = yield* Upload.Upload
        const outcomes = yield* Effect.forEach(
          cases,
          (c) =>
            Effect.gen(function*() {
              const started = Date.now()
              // OCR off: a mutant PDF that loses its text layer would be OCR'd page by page (the
              // default), minutes of CI for the parsers' robustness that this test is about
              const exit = yield* Effect.exit(upload.extract(c.file, { page_based: true, enable_ocr: false }))
              return { c, exit, ms: Date.now() - started }
            }),
          { concurrency: 2 }
        )
        const tally = new Map<string, number>()
        for (const { c, exit, ms } of outcomes) {
          // bounded by the engine's own limits: the time-out of the request, after the start of a
          // fresh extraction process when the case needs one (every case after a time-out does),
          // which is bounded apart and not counted in the time-out: tens of seconds on a loaded
          // host (28.6 s measured at load 30), so not a margin of a few seconds; plus a margin
          // for sending the file and killing the process
          expect(ms, c.label).toBeLessThan(startupMs + timeout + 5_000)
          if (Exit.isSuccess(exit)) {
            expect(exit.value.status, c.label).toBe(true)
            expect(typeof exit.value.content, c.label).toBe("string")
            tally.set("ok", (tally.get("ok") ?? 0) + 1)
            continue
          }
          // never a defect or an interruption: a typed failure
          expect(Cause.isDie(exit.cause), `${c.label}: ${Cause.pretty(exit.cause)}`).toBe(false)
          const error = Cause.failureOption(exit.cause)
          expect(Option.isSome(error), c.label).toBe(true)
          const e = Option.getOrThrow(error)
          expect(allowed.has(e._tag), `${c.label}: ${e._tag}`).toBe(true)
          const key = e._tag === "ExtractionError" ? e.reason : e._tag
          tally.set(key, (tally.get(key) ?? 0) + 1)
        }
        const slowest = Math.max(...outcomes.map((o) => o.ms))
        console.log("fuzz outcomes:", Object.fromEntries(tally), `slowest case ${slowest} ms`)
        expect([...tally.values()].reduce((a, b) => a + b, 0)).toBe(cases.length)
      }),
    // a hang guard only: the cases take about 36 times as long at a load average of 40 on 2 cores
    1_200_000
  )
})
