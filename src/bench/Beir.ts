/**
 * Reading a BEIR-layout folder: `corpus.jsonl` (`{_id, title, text}` a line), `queries.jsonl`
 * (`{_id, text}`), and `qrels/<split>.tsv` (`query-id corpus-id score`, a header line).
 *
 * The corpus is read as a stream so that ingestion never holds it whole in memory.
 *
 * @since 0.1.0
 */
import { Data, Effect, Stream } from "effect"
import { createReadStream, existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { basename, join, resolve } from "node:path"
import { createInterface } from "node:readline"
import type { Qrels } from "./Metrics.js"

/**
 * A BEIR folder could not be read or a line does not parse.
 *
 * @since 0.1.0
 * @category errors
 */
export class BeirError extends Data.TaggedError("BeirError")<{
  readonly path: string
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * One corpus document.
 *
 * @since 0.1.0
 * @category models
 */
export interface BeirDoc {
  readonly id: string
  readonly title: string
  readonly text: string
}

/**
 * One query.
 *
 * @since 0.1.0
 * @category models
 */
export interface BeirQuery {
  readonly id: string
  readonly text: string
}

/**
 * A located dataset.
 *
 * @since 0.1.0
 * @category models
 */
export interface Dataset {
  readonly name: string
  readonly dir: string
  readonly corpusPath: string
  readonly queriesPath: string
  readonly qrelsPath: string
}

/**
 * Locates the files of a BEIR folder; fails naming the first missing file.
 *
 * @since 0.1.0
 * @category utils
 */
export const locate = (dir: string, split = "test"): Effect.Effect<Dataset, BeirError> =>
  Effect.suspend(() => {
    const root = resolve(dir)
    const ds: Dataset = {
      name: basename(root),
      dir: root,
      corpusPath: join(root, "corpus.jsonl"),
      queriesPath: join(root, "queries.jsonl"),
      qrelsPath: join(root, "qrels", `${split}.tsv`)
    }
    for (const p of [ds.corpusPath, ds.queriesPath, ds.qrelsPath]) {
      if (!existsSync(p)) {
        return Effect.fail(new BeirError({ path: p, message: `${p} does not exist (expected a BEIR folder)` }))
      }
    }
    return Effect.succeed(ds)
  })

const str = (v: unknown): string => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "")

const parseLine = (path: string, line: string, n: number): Effect.Effect<Record<string, unknown>, BeirError> =>
  Effect.try({
    try: () => JSON.parse(line) as Record<string, unknown>,
    catch: (cause) => new BeirError({ path, message: `${path}:${n}: not JSON`, cause })
  })

const lines = (path: string): Stream.Stream<string, BeirError> =>
  Stream.fromAsyncIterable(
    createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Infinity }),
    (cause) => new BeirError({ path, message: `${path}: read failed`, cause })
  )

/**
 * Streams the corpus documents in file order.
 *
 * @since 0.1.0
 * @category utils
 */
export const corpus = (ds: Dataset): Stream.Stream<BeirDoc, BeirError> =>
  lines(ds.corpusPath).pipe(
    Stream.zipWithIndex,
    Stream.filter(([line]) => line.trim() !== ""),
    Stream.mapEffect(([line, i]) => parseLine(ds.corpusPath, line, i + 1)),
    Stream.map((o) => ({ id: str(o["_id"]), title: str(o["title"]), text: str(o["text"]) }))
  )

/**
 * Reads the relevance judgements of the split.
 *
 * @since 0.1.0
 * @category utils
 */
export const qrels = (ds: Dataset): Effect.Effect<Qrels, BeirError> =>
  Effect.tryPromise({
    try: () => readFile(ds.qrelsPath, "utf8"),
    catch: (cause) => new BeirError({ path: ds.qrelsPath, message: `${ds.qrelsPath}: read failed`, cause })
  }).pipe(
    Effect.map((text) => {
      const out = new Map<string, Map<string, number>>()
      for (const [i, raw] of text.split(/\r?\n/).entries()) {
        const cols = raw.trim().split(/\t/)
        if (cols.length < 3 || (i === 0 && isNaN(Number(cols[2])))) continue
        const [qid, did, score] = cols as [string, string, string]
        const m = out.get(qid) ?? new Map<string, number>()
        m.set(did, Number(score))
        out.set(qid, m)
      }
      return out as Qrels
    })
  )

/**
 * Reads the queries that have judgements in `judged` (all queries when omitted), in file order.
 *
 * @since 0.1.0
 * @category utils
 */
export const queries = (ds: Dataset, judged?: Qrels): Effect.Effect<Array<BeirQuery>, BeirError> =>
  lines(ds.queriesPath).pipe(
    Stream.zipWithIndex,
    Stream.filter(([line]) => line.trim() !== ""),
    Stream.mapEffect(([line, i]) => parseLine(ds.queriesPath, line, i + 1)),
    Stream.map((o) => ({ id: str(o["_id"]), text: str(o["text"]) })),
    Stream.filter((q) => judged === undefined || judged.has(q.id)),
    Stream.runCollect,
    Effect.map((c) => Array.from(c))
  )
