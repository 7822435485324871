/**
 * `effect-rag collections list|stats NAME|drop NAME [--db DIR|URI] [--json] [--config FILE]`: the
 * collections of a LanceDB database. Manifest collections (`<name>__ingest`, the ingest's
 * completion markers) are hidden from `list`, counted in `stats` and dropped with their
 * collection by `drop`; `stats` and `drop` refuse a manifest's own name (exit 2).
 *
 * Exit status: 0 success, 1 failure (no database at `--db`, a collection that does not exist, a
 * store error), 2 bad usage (a manifest's name). Nothing here creates a database folder.
 *
 * Wiring: `command` is self-contained (it provides LanceDB itself).
 *
 * @since 0.1.0
 */
import { Args, Command } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import type * as IngestModule from "../../pipeline/Ingest.js"
import { type Collection, CollectionNotFound, StoreError, VectorStore, type VectorStoreError } from "../../store/VectorStore.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

type Ingest = typeof IngestModule

/** Statistics of a collection. */
export interface CollectionStats {
  readonly name: string
  readonly chunks: number
  readonly documents: number
  /** Documents whose ingest completed (a marker in the manifest matching the stored chunks). */
  readonly completeDocuments: number
  /** Documents with chunks but no matching marker: an interrupted ingest (a rerun finishes them). */
  readonly incompleteDocuments: number
  readonly embedding: { readonly model: string; readonly dimension: number } | null
  readonly fields: Readonly<Record<string, string>>
  /**
   * Bytes of the collection: on disk, its table folder (`<db>/<name>.lance`); on an object store,
   * the data files as LanceDB counts them (`totalBytes` of the table's statistics).
   */
  readonly bytes: number
}

const folderBytes = (path: string): number => {
  try {
    const info = statSync(path)
    if (!info.isDirectory()) return info.size
    return readdirSync(path).reduce((n, e) => n + folderBytes(join(path, e)), 0)
  } catch {
    return 0
  }
}

/**
 * The bytes of a collection (see {@link CollectionStats.bytes}): its folder on disk; on an object
 * store, what LanceDB counts; 0 for a store that keeps no files (the memory store).
 */
const storedBytes = (db: string, name: string): Effect.Effect<number, VectorStoreError> => {
  switch (Wiring.storeAdapter(db).location) {
    case "folder":
      return Effect.sync(() => folderBytes(join(db, `${name}.lance`)))
    case "process":
      return Effect.succeed(0)
    case "remote":
      return Effect.flatMap(
        Effect.flatMap(Shared.load(() => import("../../store/LanceDbStore.js")), (m) => Effect.serviceOption(m.LanceDbStore)),
        (s) =>
          Option.isNone(s) ? Effect.succeed(0) : Effect.tryPromise({
            try: async () => (await (await s.value.connection.openTable(name)).stats()).totalBytes,
            catch: (cause) => new StoreError({ op: "stats", message: `stats: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
          })
      )
  }
}

/** Reads the statistics of a collection (one scan of its document ids and one of its manifest). */
export const stats = (
  db: string,
  c: Collection,
  manifest: Option.Option<Collection>
): Effect.Effect<CollectionStats, VectorStoreError> =>
  Effect.gen(function*() {
    const Ingest = yield* Shared.load(() => import("../../pipeline/Ingest.js"))
    const chunks = yield* c.count()
    const docs = yield* c.listDocuments()
    const counts = new Map(docs.map((d) => [d.documentId, d.chunks]))
    const markers = Option.isSome(manifest) ? yield* Ingest.completedDocuments(c, manifest.value) : []
    const complete = markers.filter((m) => counts.get(m.documentId) === m.chunks).length
    const completeIds = new Set(markers.filter((m) => counts.get(m.documentId) === m.chunks).map((m) => m.documentId))
    return {
      name: c.spec.name,
      chunks,
      documents: docs.length,
      completeDocuments: complete,
      incompleteDocuments: Option.isSome(manifest) ? docs.filter((d) => !completeIds.has(d.documentId)).length : 0,
      embedding: c.spec.embedding ?? null,
      fields: c.spec.fields ?? {},
      bytes: yield* storedBytes(db, c.spec.name)
    }
  })

const openManifest = (Ingest: Ingest, name: string) =>
  Effect.flatMap(VectorStore, (store) =>
    store.list().pipe(
      Effect.flatMap((names) =>
        names.includes(Ingest.manifestName(name)) ? Effect.map(store.open(Ingest.manifestName(name)), Option.some) : Effect.succeed(Option.none<Collection>())
      )
    ))

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`

/** Runs a subcommand body with the store of the resolved `--db` (`Wiring.storeLayer`), mapping failures to exit 1. */
const withStore = (
  args: { readonly db: Option.Option<string>; readonly config: Option.Option<string>; readonly json: boolean },
  body: (db: string, Ingest: Ingest) => Effect.Effect<void, VectorStoreError, VectorStore>
) =>
  Effect.gen(function*() {
    const db = yield* Wiring.dbUri(args.db)
    const exists = Shared.existingDbFolder(db)
    if (Either.isLeft(exists)) return yield* new CollectionNotFound({ name: "", message: exists.left.message })
    const Ingest = yield* Shared.load(() => import("../../pipeline/Ingest.js"))
    yield* body(db, Ingest).pipe(Effect.provide(Wiring.storeLayer(db)))
  }).pipe(
    Shared.withConfigFile(args.config),
    Effect.catchIf((e) => e._tag !== "UsageError", (e) =>
      (args.json ? Console.log(JSON.stringify({ error: { _tag: e._tag, message: e.message } })) : Effect.void).pipe(
        Effect.zipRight(Console.error(`effect-rag collections: ${e._tag}: ${e.message}`)),
        Effect.zipRight(Shared.setExitCode(Shared.ExitCode.failure))
      )),
    Shared.exitOnUsage
  )

const common = { db: Shared.db, json: Shared.json, config: Shared.config }

/** The suffix of the ingest manifests (`Ingest.manifestName`): names ending with it are reserved. */
const manifestSuffix = "__ingest"

/**
 * Refuses a manifest collection's name (exit 2, nothing opened): a manifest belongs to its
 * collection, and dropping it alone would make every document of the collection incomplete.
 */
const refuseManifest = (command: string, collection: string) =>
  <A, E, R>(self: Effect.Effect<A, E, R>) =>
    collection.endsWith(manifestSuffix)
      ? Shared.exitOnUsage(Effect.fail(
        new Shared.UsageError(
          `collections ${command}: ${Shared.printable(collection)} is the internal manifest of collection ` +
            `${Shared.printable(collection.slice(0, -manifestSuffix.length))} (names ending with ${manifestSuffix} are reserved); ` +
            `it goes with its collection: \`collections ${command} ${Shared.printable(collection.slice(0, -manifestSuffix.length))}\``
        )
      ))
      : self
const name = Args.text({ name: "NAME" }).pipe(Args.withDescription("the collection name"))

/** `collections list`: names with chunk and document counts. */
export const listCommand = Command.make("list", common, (args) =>
  withStore(args, (db, Ingest) =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const names = (yield* store.list()).filter((n) => !Ingest.isManifest(n)).sort()
      const rows = yield* Effect.forEach(names, (n) =>
        Effect.gen(function*() {
          const c = yield* store.open(n)
          return { name: n, chunks: yield* c.count(), documents: (yield* c.listDocuments()).length }
        }))
      if (args.json) return yield* Console.log(JSON.stringify({ db: Wiring.displayUri(db), collections: rows }, null, 2))
      if (rows.length === 0) return yield* Console.log(`no collections in ${Wiring.displayUri(db)}`)
      for (const r of rows) yield* Console.log(`${Shared.printable(r.name)}\t${r.documents} documents\t${r.chunks} chunks`)
    }))).pipe(Command.withDescription("List the collections of the database"))

/** `collections stats NAME`. */
export const statsCommand = Command.make("stats", { ...common, name }, (args) =>
  withStore(args, (db, Ingest) =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const c = yield* store.open(args.name)
      const s = yield* stats(db, c, yield* openManifest(Ingest, args.name))
      if (args.json) return yield* Console.log(Shared.jsonText({ db: Wiring.displayUri(db), ...s }, 2))
      yield* Console.log([
        `collection ${Shared.printable(s.name)} in ${Wiring.displayUri(db)}`,
        `documents: ${s.documents} (${s.completeDocuments} complete, ${s.incompleteDocuments} incomplete)`,
        `chunks: ${s.chunks}`,
        `embedding: ${s.embedding === null ? "none (full-text only)" : `${s.embedding.model} (${s.embedding.dimension}-d)`}`,
        `fields: ${Object.entries(s.fields).map(([k, t]) => `${k}:${t}`).join(", ") || "none"}`,
        `${Wiring.storeAdapter(db).location === "folder" ? "on disk" : "stored"}: ${mib(s.bytes)}`
      ].join("\n"))
    })).pipe(refuseManifest("stats", args.name))).pipe(Command.withDescription("Statistics of a collection"))

/** `collections drop NAME`: drops the collection and its manifest (a manifest's own name is refused, exit 2). */
export const dropCommand = Command.make("drop", { ...common, name }, (args) =>
  withStore(args, (db, Ingest) =>
    Effect.gen(function*() {
      const store = yield* VectorStore
      const names = yield* store.list()
      if (!names.includes(args.name) && !names.includes(Ingest.manifestName(args.name))) {
        if (args.json) yield* Console.log(JSON.stringify({ db: Wiring.displayUri(db), dropped: null, error: { _tag: "CollectionNotFound", message: `no collection ${args.name}` } }))
        yield* Console.error(`effect-rag collections: no collection ${Shared.printable(args.name)} in ${Wiring.displayUri(db)}`)
        return yield* Shared.setExitCode(Shared.ExitCode.failure)
      }
      yield* Ingest.dropCollection(args.name)
      if (args.json) return yield* Console.log(Shared.jsonText({ db: Wiring.displayUri(db), dropped: args.name }))
      yield* Console.log(`dropped ${Shared.printable(args.name)}`)
    })).pipe(refuseManifest("drop", args.name))).pipe(Command.withDescription("Drop a collection (and its ingest manifest)"))

/** `collections` with `list`, `stats` and `drop`. */
export const command = Command.make("collections").pipe(
  Command.withDescription("List, inspect and drop collections"),
  Command.withSubcommands([listCommand, statsCommand, dropCommand])
)
