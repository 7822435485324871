/**
 * Larger collections from a BEIR corpus (issue #24's method): `count` copies of its documents,
 * taken in turn, each with the words of its title and of its text shuffled by a seeded generator.
 * The copies share the corpus's vocabulary and term statistics but match no query's judgements.
 */
import { Chunk as EChunk, Effect, Stream } from "effect"
import type * as Beir from "../../src/bench/Beir.js"
import type { Chunk, Collection } from "../../src/store/VectorStore.js"
import { rng } from "./rng.js"

const shuffle = (text: string, next: () => number): string => {
  const w = text.split(/\s+/).filter((x) => x !== "")
  for (let i = w.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1))
    const t = w[i]!
    w[i] = w[j]!
    w[j] = t
  }
  return w.join(" ")
}

/** The `i`-th padding chunk of `docs` (deterministic for a seed). */
export const paddingChunks = (docs: ReadonlyArray<Beir.BeirDoc>, count: number, seed = 24): Array<Chunk> => {
  const next = rng(seed)
  const out: Array<Chunk> = []
  for (let i = 0; i < count; i++) {
    const d = docs[i % docs.length]!
    const id = `pad${i}-${d.id}`
    const title = d.title === "" ? undefined : shuffle(d.title, next)
    out.push({ id, documentId: id, title, text: shuffle(d.text, next) })
  }
  return out
}

/** Adds `count` shuffled copies of the corpus to `collection` (batches of 4,096), then optimizes it. */
export const pad = (collection: Collection, corpus: Stream.Stream<Beir.BeirDoc, unknown>, count: number) =>
  Effect.gen(function*() {
    if (count <= 0) return 0
    const docs = EChunk.toReadonlyArray(yield* Stream.runCollect(corpus))
    const chunks = paddingChunks(docs, count)
    for (let i = 0; i < chunks.length; i += 4096) yield* collection.upsert(chunks.slice(i, i + 4096))
    yield* collection.optimize()
    return chunks.length
  })
