/**
 * An experiment, not a test: two LanceDB writers racing for one table version through the
 * `s3+ddb://` DynamoDB commit store, on s3rver (no conditional PUT) and dynalite, both started
 * here on loopback. The S3 server holds the first writer's manifest PUT until the second arrives
 * (`pairCommits`, see `test/support/s3.ts`), so every round is a real race. Per round it prints
 * whether each writer succeeded and whether the table can still be opened, and at the end the
 * counts. `benchmarks/README.md` quotes its output.
 *
 *   npx tsx scripts/s3-ddb-race.ts [ROUNDS]   (default 20)
 */
import { Effect, Layer } from "effect"
import * as LanceDbStore from "../src/store/LanceDbStore.js"
import { VectorStore } from "../src/store/VectorStore.js"
import { startDynamo, startS3 } from "../test/support/s3.js"

const rounds = Math.max(1, Number(process.argv[2] ?? "20") || 20)
const spec = { name: "race", embedding: { model: "test-4d", dimension: 4 } } as const
const chunksOf = (doc: number) =>
  Array.from({ length: 5 }, (_, i) => ({ id: `d${doc}-c${i}`, documentId: `d${doc}`, text: `chunk ${i} of document ${doc}`, vector: [doc, 1, i, 0.5] }))

const s3 = await startS3()
const dynamo = await startDynamo()
await dynamo.createCommitTable("lance_commits")
let bothOk = 0
let writerFailed = 0
let unreadable = 0
try {
  for (let round = 0; round < rounds; round++) {
    const at = () =>
      Layer.fresh(LanceDbStore.layer({
        uri: `s3+ddb://${s3.bucket}/round-${round}?ddbTableName=lance_commits`,
        storage: { ...s3.storage, options: { dynamodb_endpoint: dynamo.endpoint } }
      }))
    const upsert = (doc: number) =>
      Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.collection(spec), (c) => c.upsert(chunksOf(doc))))).pipe(
        Effect.provide(at()),
        Effect.either
      )
    await Effect.runPromise(upsert(0))
    s3.pairCommits(true)
    const writers = await Effect.runPromise(Effect.all([upsert(1), upsert(2)], { concurrency: 2 }))
    s3.pairCommits(false)
    const after = await Effect.runPromise(
      Effect.scoped(Effect.flatMap(VectorStore, (s) => Effect.flatMap(s.open("race"), (c) => c.count()))).pipe(Effect.provide(at()), Effect.either)
    )
    const failed = writers.filter((w) => w._tag === "Left").length
    if (failed === 0) bothOk++
    else writerFailed++
    if (after._tag === "Left") unreadable++
    console.log(
      `round ${round}: writers ${writers.map((w) => (w._tag === "Left" ? `failed (${w.left.message.slice(0, 80)})` : "ok")).join(", ")}; ` +
        `table ${after._tag === "Left" ? `unreadable (${after.left.message.slice(0, 80)})` : `${after.right} rows`}`
    )
  }
} finally {
  await s3.close()
  await dynamo.close()
}
console.log(`${rounds} races: ${bothOk} with both writers ok, ${writerFailed} with a failed writer, ${unreadable} leaving the table unreadable`)
