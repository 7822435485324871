/**
 * A real S3-compatible server on loopback for the object-storage tests: `s3rver` (an S3 server in
 * Node, objects in a temp folder), started by the test, one bucket.
 *
 * Two things about `s3rver` 3.7 that matter to LanceDB, both covered by `test/store/s3.test.ts`:
 * - Its delimiter listing misses a common prefix whose objects all sit two or more levels below
 *   it (it never walks into such folders), so LanceDB's `tableNames()` would see no table. The
 *   helper lists without the delimiter and groups the keys itself, as S3 does.
 * - It ignores `If-None-Match: *` on PUT (it overwrites), so LanceDB's conditional-put commit
 *   cannot detect a concurrent commit. `conditionalPut: true` adds the check in front of the
 *   store (412 when the key exists, one PUT per key at a time), the way AWS S3, MinIO, R2, GCS and
 *   Azure behave.
 *
 * `pairCommits(true)` makes two LanceDB writers race deterministically: the next PUT of a table
 * version (`…/_versions/<v>.manifest`, or its staging copy `<v>.manifest-<id>` that the DynamoDB
 * commit store writes first) waits (at most 15 s) until a second PUT of the same version
 * arrives, then both go on together (once; later commits are not held).
 *
 * {@link startDynamo} starts `dynalite` (DynamoDB on an in-memory LevelDB) for LanceDB's
 * `s3+ddb://` commit store.
 */
import S3rver from "s3rver"
import { mkdtempSync, rmSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Redacted } from "effect"
import type * as LanceDbStore from "../../src/store/LanceDbStore.js"

/** A running server. */
export interface S3Server {
  readonly endpoint: string
  readonly bucket: string
  /** `s3://<bucket>/<prefix>`. */
  readonly uri: (prefix: string) => string
  /** The storage options of the adapter (s3rver accepts the key pair `S3RVER`/`S3RVER`). */
  readonly storage: LanceDbStore.StorageOptions
  /** The same as environment variables (for the CLI and child processes). */
  readonly env: Readonly<Record<string, string>>
  /** The same as raw LanceDB `storageOptions`. */
  readonly lance: Readonly<Record<string, string>>
  /** Arms (or disarms) the pairing of the next two commits of one version (see the module comment). */
  readonly pairCommits: (on: boolean) => void
  /** Pairs formed so far: two writers that PUT the same table version at once. */
  readonly pairs: () => number
  /** Conditional PUTs refused with 412 so far (with `conditionalPut`). */
  readonly preconditionFailures: () => number
  /** Object keys under a prefix. */
  readonly keys: (prefix: string) => Promise<ReadonlyArray<string>>
  readonly close: () => Promise<void>
}

interface ListResult {
  readonly objects: Array<{ readonly key: string }>
  readonly commonPrefixes: Array<string>
  readonly isTruncated: boolean
}

interface Store {
  listObjects(bucket: string, options: Record<string, unknown>): Promise<ListResult>
  existsObject(bucket: string, key: string): Promise<boolean>
}

interface KoaContext {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string | undefined>
  status: number
  body: unknown
  set(name: string, value: string): void
}

type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>

/** Starts s3rver on 127.0.0.1 (a free port) with one bucket. */
export const startS3 = async (options: { readonly bucket?: string; readonly conditionalPut?: boolean } = {}): Promise<S3Server> => {
  const bucket = options.bucket ?? "effect-rag"
  const directory = mkdtempSync(join(tmpdir(), "effect-rag-s3-"))
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket, configs: [] }]
  })
  const internals = server as unknown as { store: Store; middleware: Array<Middleware> }
  const store = internals.store

  // Delimiter listings computed from the full listing (see the module comment).
  const listObjects = store.listObjects.bind(store)
  store.listObjects = async (b, opts) => {
    const delimiter = typeof opts["delimiter"] === "string" ? opts["delimiter"] : ""
    if (delimiter === "") return listObjects(b, opts)
    const prefix = typeof opts["prefix"] === "string" ? opts["prefix"] : ""
    const all = await listObjects(b, { ...opts, delimiter: "", maxKeys: Infinity })
    const prefixes = new Set<string>()
    const objects = all.objects.filter((o) => {
      const i = o.key.slice(prefix.length).indexOf(delimiter)
      if (i === -1) return true
      prefixes.add(o.key.slice(0, prefix.length + i + delimiter.length))
      return false
    })
    return { objects, commonPrefixes: [...prefixes].sort(), isTruncated: false }
  }

  let refused = 0
  if (options.conditionalPut === true) {
    const locks = new Map<string, Promise<void>>()
    const conditional: Middleware = async (ctx, next) => {
      if (ctx.method !== "PUT" || ctx.headers["if-none-match"] !== "*") return next()
      const path = decodeURIComponent(ctx.path).replace(/^\//, "")
      const slash = path.indexOf("/")
      if (slash === -1) return next()
      const b = path.slice(0, slash)
      const key = path.slice(slash + 1)
      // one conditional PUT per key at a time: the existence check and the write are one step
      const previous = locks.get(path) ?? Promise.resolve()
      let release!: () => void
      const mine = new Promise<void>((r) => (release = r))
      const chained = previous.then(() => mine)
      locks.set(path, chained)
      await previous
      try {
        if (await store.existsObject(b, key)) {
          refused++
          ctx.status = 412
          ctx.set("Content-Type", "application/xml")
          ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code>` +
            `<Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition></Error>`
          return
        }
        await next()
      } finally {
        release()
        if (locks.get(path) === chained) locks.delete(path)
      }
    }
    internals.middleware.unshift(conditional)
  }

  let pairing = false
  let paired = 0
  const partners = new Map<string, () => void>()
  const pair: Middleware = async (ctx, next) => {
    if (!pairing || ctx.method !== "PUT" || !/\/_versions\/[^/]+\.manifest(-[^/]+)?$/.test(ctx.path)) return next()
    const version = ctx.path.replace(/(\.manifest)-[^/]+$/, "$1")
    const waiting = partners.get(version)
    if (waiting !== undefined) {
      // one pair per pairCommits(true): a retry after the race goes through unhindered
      pairing = false
      paired++
      partners.delete(version)
      waiting()
    } else {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 15_000)
        partners.set(version, () => {
          clearTimeout(timer)
          resolve()
        })
      })
      partners.delete(version)
    }
    return next()
  }
  internals.middleware.unshift(pair)

  const { port } = await server.run()
  const endpoint = `http://127.0.0.1:${port}`
  const storage: LanceDbStore.StorageOptions = {
    endpoint,
    region: "us-east-1",
    accessKeyId: "S3RVER",
    secretAccessKey: Redacted.make("S3RVER")
  }
  return {
    endpoint,
    bucket,
    uri: (prefix) => `s3://${bucket}/${prefix}`,
    storage,
    env: {
      EFFECT_RAG_S3_ENDPOINT: endpoint,
      EFFECT_RAG_S3_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER"
    },
    lance: {
      aws_endpoint: endpoint,
      aws_region: "us-east-1",
      aws_access_key_id: "S3RVER",
      aws_secret_access_key: "S3RVER",
      allow_http: "true"
    },
    pairCommits: (on) => {
      pairing = on
    },
    pairs: () => paired,
    preconditionFailures: () => refused,
    keys: async (prefix) => (await listObjects(bucket, { prefix, maxKeys: Infinity })).objects.map((o) => o.key),
    close: async () => {
      // close() waits for every open connection; LanceDB's client keeps its pooled ones open
      const closing = server.close()
      ;(server as unknown as { httpServer?: { closeAllConnections?: () => void } }).httpServer?.closeAllConnections?.()
      await closing
      rmSync(directory, { recursive: true, force: true })
    }
  }
}

/** A running DynamoDB (dynalite) for LanceDB's `s3+ddb://` commit store. */
export interface DynamoServer {
  readonly endpoint: string
  /** Creates a commit table with the key schema LanceDB expects (`base_uri` S hash, `version` N range). */
  readonly createCommitTable: (name: string) => Promise<void>
  /** The number of items (committed versions) in a table. */
  readonly count: (name: string) => Promise<number>
  readonly close: () => Promise<void>
}

interface DynaliteServer {
  listen(port: number, host: string, callback: () => void): void
  address(): AddressInfo
  close(callback: () => void): void
  closeAllConnections?(): void
}

/** Starts dynalite on 127.0.0.1 (a free port), tables in memory. */
export const startDynamo = async (): Promise<DynamoServer> => {
  const dynalite = createRequire(import.meta.url)("dynalite") as (options: Record<string, unknown>) => DynaliteServer
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const endpoint = `http://127.0.0.1:${server.address().port}`
  // dynalite checks that a request is signed, not the signature
  const call = async (target: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": `DynamoDB_20120810.${target}`,
        "x-amz-date": "20260101T000000Z",
        authorization: "AWS4-HMAC-SHA256 Credential=S3RVER/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"
      },
      body: JSON.stringify(body)
    })
    const json = (await response.json()) as Record<string, unknown>
    if (!response.ok) throw new Error(`dynalite ${target}: ${response.status} ${JSON.stringify(json)}`)
    return json
  }
  return {
    endpoint,
    createCommitTable: async (name) => {
      await call("CreateTable", {
        TableName: name,
        AttributeDefinitions: [{ AttributeName: "base_uri", AttributeType: "S" }, { AttributeName: "version", AttributeType: "N" }],
        KeySchema: [{ AttributeName: "base_uri", KeyType: "HASH" }, { AttributeName: "version", KeyType: "RANGE" }],
        BillingMode: "PAY_PER_REQUEST"
      })
    },
    count: async (name) => Number((await call("Scan", { TableName: name, Select: "COUNT" }))["Count"]),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // as above: the clients' pooled connections would hold close() open
        server.closeAllConnections?.()
      })
  }
}
