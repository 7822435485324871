/**
 * The server's limits on what one client can make it do: request body sizes per route, how
 * long a body may pause, JSON nesting, inputs per embeddings and rerank call, how long model
 * work may take, how much web work one request may start (a crawl's `limit`, a batch's URLs,
 * jobs running at once) and how much of a client's input an error quotes. `Server.layer` provides them from its options (`effect-rag serve` from
 * its flags); without that, routes read the defaults. `docs/server.md` lists them.
 */
import { Context } from "effect"

/** The limits. Every field has a default (`Server.defaultLimits`). */
export interface Limits {
  /** Body of a JSON route (web, scrape, crawl, map, generation): bytes. Default 1 MiB. */
  readonly jsonBodyBytes: number
  /** Body of `/v1/embeddings`, `/v1/rerank` and `/v1/chat/completions`: bytes. Default 8 MiB. */
  readonly modelBodyBytes: number
  /** A request body that sends nothing for this long is answered 408 and its connection closed (ms). Default 30 s. */
  readonly bodyIdleMs: number
  /** Deepest nesting of arrays and objects in a JSON body. Default 64. */
  readonly jsonDepth: number
  /** Inputs of one `/v1/embeddings` call. Default 256. */
  readonly embeddingInputs: number
  /** Documents of one `/v1/rerank` call. Default 256. */
  readonly rerankDocuments: number
  /** Characters of one embeddings input, rerank query or rerank document. Default 32,768. */
  readonly inputChars: number
  /** Time one embeddings or rerank call may take before it is answered 504 (ms). Default 60 s. */
  readonly modelTimeoutMs: number
  /**
   * Upload bytes held in memory at once, across every upload being received or waiting for
   * extraction. An upload that would go over is answered 503 with `Retry-After`. Default 256 MiB.
   */
  readonly uploadBytesInFlight: number
  /** Largest `limit` of one crawl (v1, v2 and `single` routing); more is a 400. Default 10,000. */
  readonly crawlLimit: number
  /** URLs of one batch scrape (v1, v2); more is a 400. Default 1,000. */
  readonly batchUrls: number
  /** Largest `limit` (links) of one map (v1, v2 and `single` routing); more is a 400. Default 30,000. */
  readonly mapLimit: number
  /**
   * Crawl and batch scrape jobs of the local web engine running at once; a start over it is
   * answered 429 with `Retry-After`. Default 4.
   */
  readonly crawlJobs: number
  /**
   * Characters of a client's input an error message quotes: a longer run of the message (a
   * URL, a field's value) is cut to this many characters and its length said. Default 1,024.
   */
  readonly echoChars: number
}

/** The defaults. */
export const defaults: Limits = {
  jsonBodyBytes: 1024 * 1024,
  modelBodyBytes: 8 * 1024 * 1024,
  bodyIdleMs: 30_000,
  jsonDepth: 64,
  embeddingInputs: 256,
  rerankDocuments: 256,
  inputChars: 32_768,
  modelTimeoutMs: 60_000,
  uploadBytesInFlight: 256 * 1024 * 1024,
  crawlLimit: 10_000,
  batchUrls: 1_000,
  mapLimit: 30_000,
  crawlJobs: 4,
  echoChars: 1_024
}

/**
 * The `effect-rag serve` flag that sets each limit (`src/cli/commands/serve.ts`): a refusal
 * names the limit's option and its flag, so both a library user and an operator of `serve`
 * know what to raise.
 */
export const serveFlags: { readonly [K in keyof Limits]: string } = {
  jsonBodyBytes: "--max-json-bytes",
  modelBodyBytes: "--max-model-body-bytes",
  bodyIdleMs: "--body-idle-ms",
  jsonDepth: "--max-json-depth",
  embeddingInputs: "--max-embedding-inputs",
  rerankDocuments: "--max-rerank-documents",
  inputChars: "--max-input-chars",
  modelTimeoutMs: "--model-timeout-ms",
  uploadBytesInFlight: "--upload-memory-bytes",
  crawlLimit: "--max-crawl-limit",
  batchUrls: "--max-batch-urls",
  mapLimit: "--max-map-limit",
  crawlJobs: "--max-crawl-jobs",
  echoChars: "--max-echo-chars"
}

/** A limit as a refusal names it: `inputChars, effect-rag serve --max-input-chars`. */
export const named = (limit: keyof Limits): string => `${limit}, effect-rag serve ${serveFlags[limit]}`

/** The limits a server runs with (the defaults unless provided). */
export class ServerLimits extends Context.Reference<ServerLimits>()("effect-rag/server/ServerLimits", {
  defaultValue: (): Limits => defaults
}) {}

/** The defaults with the given fields replaced (an undefined field keeps its default). */
export const resolve = (given: Partial<{ readonly [K in keyof Limits]: Limits[K] | undefined }> = {}): Limits => {
  const out: { -readonly [K in keyof Limits]: Limits[K] } = { ...defaults }
  for (const key of Object.keys(defaults) as Array<keyof Limits>) {
    const value = given[key]
    if (value !== undefined) {
      if (!Number.isFinite(value) || value <= 0) throw new RangeError(`server limit ${key} must be a positive number, not ${value}`)
      out[key] = value
    }
  }
  return out
}
