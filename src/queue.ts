/**
 * `effect-rag/queue`: ingestion past one machine, one job per document on a Redis queue (BullMQ)
 * and workers that write batches to the collection.
 *
 * An optional part: it needs the optional peer dependency `bullmq` (`npm install bullmq@^5.81.5`).
 * Without it, `enqueue`, `status` and `worker` fail with `RagError.MissingPackage`, whose message
 * is that install line.
 *
 * @since 0.1.0
 */
export * as IngestQueue from "./pipeline/IngestQueue.js"
