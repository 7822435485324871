/**
 * LanceDB on an S3-compatible server (`s3rver` on loopback, started here): the VectorStore
 * contract on `s3://…`, the storage options from the configuration (secrets `Redacted`), and how
 * commits behave when two writers commit the same table version at once — with a server that
 * honours `If-None-Match: *` on PUT and with one that ignores it, and LanceDB's `s3+ddb://`
 * DynamoDB commit store on `dynalite` (`docs/stores.md`).
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as LanceDbStore from "../../src/store/LanceDbStore.js"
import { type Chunk, VectorStore } from "../../src/store/VectorStore.js"
import { type DynamoServer, startDynamo, startS3, type S3Server } from "../support/s3.js"
import { axis, contract, corpus, spec } from "../../src/store/VectorStoreContract.js"

let plain: S3Server
let conditional: S3Server
let dynamo: DynamoServer
beforeAll(async () => {
  plain = await startS3()
  conditional = await startS3({ conditionalPut: true })
  dynamo = await startDynamo()
})
afterAll(async () => {
  await plain?.close()
  await conditional?.close()
  await dynamo?.close()
})

let n = 0
contract("lancedb on s3", () => LanceDbStore.layer({ uri: conditional.uri(`contract${n++}`), storage: conditional.storage }))

const chunksOf = (doc: number, count: number): Array<Chunk> =>
  Array.from({ length: count }, (_, i) => ({
    id: `d${doc}-c${i}`,
    documentId: `d${doc}`,
    text: `chunk ${i} of document ${doc}`,
    vector: axis(doc, i / count),
    metadata: { lang: "en", year: 2000 + doc }
  }))

/** Two connections each upsert one document (one commit each) while the server pairs the commits. */
const racingWriters = (s3: S3Server, uri: string) =>
  Effect.gen(function*() {
    const at = () => Layer.fresh(LanceDbStore.layer({ uri, storage: s3.storage }))
    // the table, its indexes and a first document, before the race
    yield* Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.collection(spec), (c) => c.upsert(chunksOf(0, 5))))
      .pipe(Effect.provide(at())))
    const writer = (doc: number) =>
      Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.collection(spec), (c) => c.upsert(chunksOf(doc, 5))))
        .pipe(Effect.provide(at())))
    const pairsBefore = s3.pairs()
    s3.pairCommits(true)
    const results = yield* Effect.all([writer(1), writer(2)], { concurrency: 2 }).pipe(
      Effect.ensuring(Effect.sync(() => s3.pairCommits(false)))
    )
    // both writers really wrote the same table version at once
    expect(s3.pairs()).toBe(pairsBefore + 1)
    const stored = yield* Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.open("contract"), (c) => c.listDocuments()))
      .pipe(Effect.provide(at())))
    return { results, stored }
  })

describe("LanceDB on S3", () => {
  it.live("the server: s3rver ignores If-None-Match on PUT (overwrites); the conditional mode answers 412", () =>
    Effect.promise(async () => {
      for (const [s3, second, body] of [[plain, 200, "two"], [conditional, 412, "one"]] as const) {
        const url = `${s3.endpoint}/${s3.bucket}/probe/object.txt`
        const put = (text: string) => fetch(url, { method: "PUT", body: text, headers: { "if-none-match": "*" } })
        expect((await put("one")).status).toBe(200)
        expect((await put("two")).status).toBe(second)
        expect(await (await fetch(url)).text()).toBe(body)
      }
    }))

  it.live("conditional PUT: two writers committing the same version conflict, one retries, nothing is lost", () =>
    Effect.gen(function*() {
      const before = conditional.preconditionFailures()
      const { results, stored } = yield* racingWriters(conditional, conditional.uri("race-conditional"))
      // the second PUT of the same manifest was refused: a real commit conflict, resolved by a retry
      expect(conditional.preconditionFailures()).toBeGreaterThan(before)
      expect(results.map((r) => r.inserted)).toEqual([5, 5])
      expect(stored).toEqual([{ documentId: "d0", chunks: 5 }, { documentId: "d1", chunks: 5 }, { documentId: "d2", chunks: 5 }])
    }), 120_000)

  it.live("no conditional PUT: both writers succeed and the later manifest overwrites the earlier (a lost commit)", () =>
    Effect.gen(function*() {
      const { results, stored } = yield* racingWriters(plain, plain.uri("race-plain"))
      // both report success…
      expect(results.map((r) => r.inserted)).toEqual([5, 5])
      // …but only one of the two documents is in the table: the other commit was overwritten
      expect(stored.map((d) => d.documentId).filter((d) => d !== "d0")).toHaveLength(1)
      expect(stored.find((d) => d.documentId === "d0")?.chunks).toBe(5)
    }), 120_000)

  it.live("s3+ddb://: the commits go through LanceDB's DynamoDB commit store (dynalite), one record per version", () =>
    Effect.gen(function*() {
      yield* Effect.promise(() => dynamo.createCommitTable("lance_commits"))
      const at = () =>
        Layer.fresh(LanceDbStore.layer({
          uri: `s3+ddb://${plain.bucket}/ddb?ddbTableName=lance_commits`,
          storage: { ...plain.storage, options: { dynamodb_endpoint: dynamo.endpoint } }
        }))
      for (const doc of [1, 2]) {
        yield* Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.collection(spec), (c) => c.upsert(chunksOf(doc, 5))))
          .pipe(Effect.provide(at())))
      }
      const stored = yield* Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.open("contract"), (c) => c.listDocuments()))
        .pipe(Effect.provide(at())))
      expect(stored).toEqual([{ documentId: "d1", chunks: 5 }, { documentId: "d2", chunks: 5 }])
      const versions = (yield* Effect.promise(() => plain.keys("ddb/contract.lance/_versions/"))).filter((k) => k.endsWith(".manifest"))
      expect(yield* Effect.promise(() => dynamo.count("lance_commits"))).toBe(versions.length)
    }), 60_000)

  it.live("storage options from the configuration: endpoint, region, credentials (Redacted), extra options", () =>
    Effect.gen(function*() {
      const provider = ConfigProvider.fromMap(new Map([
        ["EFFECT_RAG_DB", conditional.uri("from-config")],
        ["EFFECT_RAG_S3_ENDPOINT", conditional.endpoint],
        ["EFFECT_RAG_S3_REGION", "us-east-1"],
        ["AWS_ACCESS_KEY_ID", "S3RVER"],
        ["AWS_SECRET_ACCESS_KEY", "S3RVER"],
        ["EFFECT_RAG_STORAGE_OPTIONS", JSON.stringify({ timeout: "60s" })]
      ]))
      const storage = yield* Effect.withConfigProvider(LanceDbStore.storageConfig, provider)
      expect(Redacted.isRedacted(storage.secretAccessKey)).toBe(true)
      expect(JSON.stringify(storage)).toContain(`"secretAccessKey":"<redacted>"`)
      expect(String(storage.secretAccessKey)).toBe("<redacted>")
      expect(LanceDbStore.lanceStorageOptions(storage)).toEqual({
        aws_endpoint: conditional.endpoint,
        aws_region: "us-east-1",
        aws_access_key_id: "S3RVER",
        aws_secret_access_key: "S3RVER",
        // inferred from the http:// endpoint
        allow_http: "true",
        timeout: "60s"
      })
      // layerConfig: EFFECT_RAG_DB=s3://… with these options writes to the server
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* VectorStore
        const c = yield* store.collection(spec)
        yield* c.upsert(corpus)
        expect(yield* c.count()).toBe(6)
        expect(yield* store.list()).toEqual(["contract"])
      }).pipe(Effect.provide(LanceDbStore.layerConfig), Effect.withConfigProvider(provider)))
      expect((yield* Effect.promise(() => conditional.keys("from-config/contract.lance/_versions/"))).length).toBeGreaterThan(0)

      const bad = yield* Effect.exit(Effect.withConfigProvider(
        LanceDbStore.storageConfig,
        ConfigProvider.fromMap(new Map([["EFFECT_RAG_STORAGE_OPTIONS", "[1]"]]))
      ))
      expect(Exit.isFailure(bad) && JSON.stringify(bad.cause)).toContain("EFFECT_RAG_STORAGE_OPTIONS must be a JSON object")
    }), 60_000)

  it("tells object-store URIs from folders", () => {
    expect(["s3://b/p", "gs://b/p", "az://c/p", "s3+ddb://b/p?ddbTableName=t"].map(LanceDbStore.isObjectStoreUri)).toEqual([true, true, true, true])
    expect(["/tmp/db", "./db", "file:///tmp/db", "C:\\db", "db"].map(LanceDbStore.isObjectStoreUri)).toEqual([false, false, false, false, false])
  })
})
