/**
 * What the pipeline commands (`ingest`, `query`, `ask`, `collections`) share: the `--db`,
 * `--collection`, `--json` and `--config` flags, the configuration file, and the layers built
 * from the configuration.
 *
 * Configuration precedence: flags, then `EFFECT_RAG_*` environment variables, then the config
 * file (`--config FILE`, or `effect-rag.config.json` in the working directory when present),
 * then defaults. The config file holds the same settings as the environment, in camelCase:
 *
 * ```json
 * { "baseUrl": "https://api.example.com", "chatModel": "gpt-4o-mini", "embedder": "none",
 *   "upload": "local", "db": ".effect-rag/db" }
 * ```
 *
 * A key in the config file (`apiKey`, `awsSecretAccessKey`) is accepted but the environment is the
 * better place; it is read as `Redacted` like the environment variable and never printed.
 *
 * `--db` / `EFFECT_RAG_DB` / `db` is a folder, an object-store URI (`s3://bucket/prefix`,
 * `gs://…`, `az://…`) or `memory:` (see `Wiring.storeSchemes`); the object store's settings come from the environment or the config file
 * (`s3Endpoint`, `s3Region`, `s3AllowHttp`, `awsAccessKeyId`, `awsSecretAccessKey`,
 * `storageOptions`: see `LanceDbStore.storageConfig` and `docs/stores.md`).
 *
 * @since 0.1.0
 */
import { Options } from "@effect/cli"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { accessSync, constants, existsSync, mkdirSync, readFileSync, statSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { pendingCalls } from "../internal/files.js"
import * as Optional from "../internal/optional.js"
import * as RagError from "../RagError.js"
import * as Wiring from "../Wiring.js"

// =============================================================================
// Loading on first use
// =============================================================================

/**
 * Loads a module on first use. The command definitions import only `effect` and `@effect/cli`;
 * a handler loads what it runs (LanceDB and Arrow, the document and web engines, the HTTP
 * client), so `--version`, `--help` and a usage error never pay for them and `query` never
 * loads the extractors.
 */
export const load = <M>(module: () => Promise<M>): Effect.Effect<M> => Effect.promise(module)

// =============================================================================
// Shared flags
// =============================================================================

/**
 * `--db DIR|URI`: the store (`Wiring.storeSchemes`): a LanceDB folder or object-store URI, or
 * `memory:` (default `$EFFECT_RAG_DB` or `.effect-rag/db` in the working directory).
 */
export const db = Options.text("db").pipe(
  Options.withPseudoName("DIR|URI"),
  Options.withDescription("the database: a folder or s3://bucket/prefix, gs://…, az://… (LanceDB), or memory: (this process only) (default: $EFFECT_RAG_DB or ./.effect-rag/db)"),
  Options.optional
)

/** `--collection NAME` (default `$EFFECT_RAG_COLLECTION` or `default`). */
export const collection = Options.text("collection").pipe(
  Options.withPseudoName("NAME"),
  Options.withDescription("the collection name (default: $EFFECT_RAG_COLLECTION or 'default')"),
  Options.optional
)

/**
 * `--queue redis://…`: the Redis URL of the ingest queue (`ingest --queue`, `worker`). It may
 * hold a password, so it is read as `Redacted`; `$EFFECT_RAG_QUEUE` when the flag is absent.
 */
export const queue = Options.redacted("queue").pipe(
  Options.withPseudoName("redis://HOST:PORT"),
  Options.withDescription("the Redis URL of the ingest queue (default: $EFFECT_RAG_QUEUE); never printed"),
  Options.optional
)

/** `--json`: machine-readable output. */
/**
 * `--embedder NAME`, optional (the caller falls back to `EFFECT_RAG_EMBEDDER`, then `none`);
 * `note` follows the description: what the choice means for the command.
 */
export const embedder = (note: string) =>
  Options.text("embedder").pipe(
    Options.withPseudoName("NAME"),
    Options.optional,
    Options.withDescription(`none | remote | use-lite | onnx:DIR (default: $EFFECT_RAG_EMBEDDER or none); ${note}`)
  )

export const json = Options.boolean("json").pipe(Options.withDescription("print JSON for scripts"))

/** `--extract-timeout-ms MS`: the local document engine's per-file time-out (`LocalFiles` `timeout`). */
export const extractTimeoutMs = Options.integer("extract-timeout-ms").pipe(
  Options.withPseudoName("MS"),
  Options.optional,
  Options.withDescription("time one file's extraction (and chunking) may take in ms, with the local document engine (default 120000)")
)

/** A usage problem of `--extract-timeout-ms`, or `undefined` when it is absent or a positive integer. */
export const checkExtractTimeout = (ms: Option.Option<number> | undefined): string | undefined =>
  ms !== undefined && Option.isSome(ms) && !(Number.isInteger(ms.value) && ms.value >= 1)
    ? "--extract-timeout-ms must be a positive integer"
    : undefined

/** `--config FILE`: a JSON configuration file (checked when the command starts, see {@link checkConfigFile}). */
export const config = Options.text("config").pipe(
  Options.withPseudoName("FILE"),
  Options.withDescription("a JSON config file (default: ./effect-rag.config.json when present)"),
  Options.optional
)

// =============================================================================
// Paths, checked up front
// =============================================================================

/**
 * A usage problem: a flag value or a path given on the command line that cannot be used. Printed
 * on one line; exit 2, before anything is read or written.
 */
export class UsageError extends Error {
  readonly _tag = "UsageError"
}

/**
 * Succeeds when the optional part is installed; otherwise a {@link UsageError} (exit 2) whose
 * message is the `npm install` line that adds it.
 */
export const requirePart = (part: Optional.PartName): Effect.Effect<void, UsageError> =>
  Effect.mapError(Optional.ensure(part), (e) => new UsageError(e.message))

/**
 * A choice of the wiring as the command line reports it: a missing optional package
 * (`MissingPackage`, its message the `npm install` line) and a setting with a value that is not
 * one of its choices (`ConfigurationError`) are usage problems (exit 2, nothing read or written).
 */
export const asUsage = (command: string) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, RagError.MissingPackage | RagError.ConfigurationError> | UsageError, R> =>
  Effect.catchIf(
    self,
    (e): e is Extract<E, RagError.MissingPackage | RagError.ConfigurationError> =>
      e instanceof RagError.MissingPackage || (e instanceof RagError.ConfigurationError && e.endpoint === "config"),
    (e) => Effect.fail(new UsageError(e instanceof RagError.MissingPackage ? e.message : `${command}: ${e.message}`))
  ) as Effect.Effect<A, Exclude<E, RagError.MissingPackage | RagError.ConfigurationError> | UsageError, R>

const errno = (e: unknown): string => (e as NodeJS.ErrnoException)?.code ?? (e as Error)?.message ?? String(e)

/** The file system entry at a path, or undefined when there is none (a file in the way counts as none). */
const statOf = (path: string) => {
  try {
    return statSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

/**
 * Makes sure `--db` names a usable database folder before anything is written: an existing
 * folder, or one that can be created, one level at a time from the nearest existing parent
 * (a recursive `mkdir` spins for ever on paths like `/proc/x`). Fails with a one-line reason.
 */
export const prepareDbFolder = (db: string): Either.Either<string, UsageError> => {
  // an object store is checked when it is opened; the memory store needs nothing
  if (Wiring.storeAdapter(db).location !== "folder") return Either.right(db)
  const missing: Array<string> = []
  let at = db
  let info = statOf(at)
  while (info === undefined) {
    missing.unshift(at)
    const parent = dirname(at)
    if (parent === at) return Either.left(new UsageError(`--db ${db}: no existing parent folder`))
    at = parent
    info = statOf(at)
  }
  if (!info.isDirectory()) {
    return Either.left(new UsageError(`--db ${db}: ${at === db ? "it" : at} is not a folder`))
  }
  for (const folder of missing) {
    try {
      mkdirSync(folder)
    } catch (e) {
      // another process (a second worker started at the same time) made it first
      if (errno(e) === "EEXIST" && statOf(folder)?.isDirectory() === true) continue
      return Either.left(new UsageError(`--db ${db}: cannot create ${folder} (${errno(e)})`))
    }
  }
  try {
    accessSync(db, constants.W_OK)
  } catch (e) {
    return Either.left(new UsageError(`--db ${db}: not writable (${errno(e)})`))
  }
  return Either.right(db)
}

/** Whether `db` is an existing database folder or not a folder at all (commands that only read never create one). */
export const existingDbFolder = (db: string): Either.Either<string, UsageError> => {
  // a missing collection elsewhere is CollectionNotFound
  if (Wiring.storeAdapter(db).location !== "folder") return Either.right(db)
  const info = statOf(db)
  if (info === undefined) return Either.left(new UsageError(`no database at ${db}: run \`effect-rag ingest PATH --db ${db}\` first, or pass --db`))
  if (!info.isDirectory()) return Either.left(new UsageError(`--db ${db}: not a folder`))
  return Either.right(db)
}

/** Checks `--config FILE` (an existing, readable file) before the command reads anything else. */
export const checkConfigFile = (file: Option.Option<string>): Either.Either<Option.Option<string>, UsageError> => {
  if (Option.isNone(file)) return Either.right(file)
  const info = statOf(file.value)
  if (info === undefined) return Either.left(new UsageError(`--config ${file.value}: no such file`))
  if (!info.isFile()) return Either.left(new UsageError(`--config ${file.value}: not a file`))
  try {
    accessSync(file.value, constants.R_OK)
  } catch (e) {
    return Either.left(new UsageError(`--config ${file.value}: not readable (${errno(e)})`))
  }
  return Either.right(file)
}

/** Config-file keys and the environment variables they stand for. */
export const fileKeys: Readonly<Record<string, string>> = {
  apiKey: "EFFECT_RAG_API_KEY",
  baseUrl: "EFFECT_RAG_BASE_URL",
  uploadUrl: "EFFECT_RAG_UPLOAD_URL",
  crawlUrl: "EFFECT_RAG_CRAWL_URL",
  timeout: "EFFECT_RAG_TIMEOUT",
  maxRetries: "EFFECT_RAG_MAX_RETRIES",
  webRoutes: "EFFECT_RAG_WEB_ROUTES",
  chatModel: "EFFECT_RAG_CHAT_MODEL",
  embeddingModel: "EFFECT_RAG_EMBEDDING_MODEL",
  embeddingDimension: "EFFECT_RAG_EMBEDDING_DIMENSION",
  rerankModel: "EFFECT_RAG_RERANK_MODEL",
  embedder: "EFFECT_RAG_EMBEDDER",
  reranker: "EFFECT_RAG_RERANKER",
  upload: "EFFECT_RAG_UPLOAD",
  web: "EFFECT_RAG_WEB",
  db: "EFFECT_RAG_DB",
  collection: "EFFECT_RAG_COLLECTION",
  s3Endpoint: "EFFECT_RAG_S3_ENDPOINT",
  s3Region: "EFFECT_RAG_S3_REGION",
  s3AllowHttp: "EFFECT_RAG_S3_ALLOW_HTTP",
  awsAccessKeyId: "AWS_ACCESS_KEY_ID",
  awsSecretAccessKey: "AWS_SECRET_ACCESS_KEY",
  awsSessionToken: "AWS_SESSION_TOKEN",
  storageOptions: "EFFECT_RAG_STORAGE_OPTIONS"
}

/**
 * Reads a config file into environment-variable names. Unknown keys fail (a typo should not be
 * silently ignored), as does a file that is not a JSON object.
 */
export const readConfigFile = (path: string): Effect.Effect<Map<string, string>, RagError.ConfigurationError> =>
  Effect.try({
    try: () => {
      const parsed: unknown = JSON.parse(readFileSync(path, "utf8"))
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object")
      const out = new Map<string, string>()
      for (const [key, value] of Object.entries(parsed)) {
        const env = fileKeys[key]
        if (env === undefined) throw new Error(`unknown key ${JSON.stringify(key)} (known: ${Object.keys(fileKeys).join(", ")})`)
        // an object (storageOptions) is passed on as JSON
        if (value !== null && value !== undefined) out.set(env, typeof value === "object" ? JSON.stringify(value) : String(value))
      }
      return out
    },
    catch: (cause) =>
      new RagError.ConfigurationError({
        endpoint: "config",
        message: `cannot use config file ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

/**
 * The configuration provider for a command: the environment, falling back to the config file
 * (the given one, or `./effect-rag.config.json` when present).
 */
export const configProvider = (
  file: Option.Option<string>
): Effect.Effect<ConfigProvider.ConfigProvider, RagError.ConfigurationError> =>
  Effect.gen(function*() {
    const env = ConfigProvider.fromEnv()
    const path = Option.getOrElse(file, () => resolve("effect-rag.config.json"))
    if (Option.isNone(file) && !existsSync(path)) return env
    const values = yield* readConfigFile(path)
    return env.pipe(ConfigProvider.orElse(() => ConfigProvider.fromMap(values)))
  })

/**
 * Provides the config provider of `--config` to an effect (and to the layers it builds). A
 * `--config` path that is missing or not a readable file fails with {@link UsageError} (exit 2)
 * before the command does anything.
 */
export const withConfigFile = (file: Option.Option<string>) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | RagError.ConfigurationError | UsageError, R> =>
  Effect.flatMap(checkConfigFile(file), () => Effect.flatMap(configProvider(file), (provider) => Effect.withConfigProvider(self, provider)))

/** A setting from the environment or the config file (after {@link withConfigFile}): `Wiring.setting`. */
export const setting = Wiring.setting

/** Resolves `--queue` (flag, then `EFFECT_RAG_QUEUE`); none when neither is set. */
export const resolveQueue = (flag: Option.Option<Redacted.Redacted<string>>): Effect.Effect<Option.Option<Redacted.Redacted<string>>> =>
  Option.match(flag, {
    onSome: (q) => Effect.succeed(Option.some(q)),
    onNone: () => Effect.map(setting("EFFECT_RAG_QUEUE"), Option.map((s) => Redacted.make(s)))
  })

/** Resolves `--collection` (flag, then `EFFECT_RAG_COLLECTION`, then `default`). */
export const resolveCollection = (flag: Option.Option<string>): Effect.Effect<string> =>
  Wiring.choose(flag, "EFFECT_RAG_COLLECTION", "default")

/**
 * Exit codes of every command: 0 all done, 1 failed, 2 bad usage (nothing was read or written),
 * 3 partial (some documents failed, the rest are stored), 4 a significant regression
 * (`eval run --baseline`). A run stopped by SIGINT exits 130,
 * by SIGTERM 143 (128 + the signal number, as shells do).
 */
export const ExitCode = {
  success: 0,
  failure: 1,
  usage: 2,
  /** Some items failed, the rest succeeded (e.g. an ingest with failed documents). */
  partial: 3,
  /** `eval run --baseline`: a metric is significantly lower than the saved run's. */
  regression: 4,
  sigint: 130,
  sigterm: 143
} as const

/**
 * An engine's message in the command line's terms: the web engine's refusal of a private
 * address names its library option (`allowPrivate`); on the command line it is `--allow-private`.
 * A refusal that a server sent (it names `effect-rag serve --allow-private` beside the options,
 * see `server/internal/wire.ts`) is left as it is: the flag that opens it is the server's.
 */
export const forCli = (message: string): string =>
  printable(
    message
      .replace(/allowPrivate or allowHosts(?!, the LocalWeb options)/g, "--allow-private")
      .replace(/\ballowPrivate\b(?! or allowHosts, the LocalWeb options)/g, "--allow-private")
  )

/** Control characters: C0, DEL, C1, and the Unicode bidirectional controls (marks, embeddings, overrides, isolates). */
const controls = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/** The controls JSON.stringify leaves raw (DEL, C1, bidirectional controls). */
const rawInJson = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/**
 * `JSON.stringify` for output: the same JSON, with DEL, C1 and bidirectional controls written as
 * `\uXXXX` escapes too (JSON escapes only C0), so that printed JSON holds no control character
 * a terminal would act on; it parses to the same value.
 */
export const jsonText = (value: unknown, space?: number): string =>
  JSON.stringify(value, null, space).replace(rawInJson, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * A name or message as it may reach a terminal or a log: every control character written
 * visibly (`\n`, `\r`, `\t`, `\x1b`, `\u202e`), so a file name cannot start a line, move the
 * cursor, colour the output or reorder what is shown. `--json` output needs none of this (JSON
 * escapes C0 controls; the others are inert in a JSON string).
 */
export const printable = (text: string): string =>
  text.replace(controls, (c) => {
    const code = c.charCodeAt(0)
    return c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\t" ? "\\t"
      : code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}`
      : `\\u${code.toString(16).padStart(4, "0")}`
  })

// =============================================================================
// Stop signals
// =============================================================================

let stop: "SIGINT" | "SIGTERM" | undefined
let stopGraceMs = 2_000

/** The stop signal the process received (SIGINT or SIGTERM), if any. */
export const stopSignal = (): "SIGINT" | "SIGTERM" | undefined => stop

/** The exit code of a run stopped by a signal: 130 for SIGINT, 143 for SIGTERM. */
export const signalExitCode = (signal: "SIGINT" | "SIGTERM"): number =>
  signal === "SIGINT" ? ExitCode.sigint : ExitCode.sigterm

/**
 * Ends the process by `signal` itself, with the default action restored (the status a shell
 * shows is 128 + the signal's number, 130 / 143). `process.exit` cannot be used when a file
 * system call blocks a thread of libuv's pool (a FIFO's `open` waiting for a writer, a hung
 * network mount): it waits for every thread of the pool, for ever. SIGKILL follows if the
 * signal is ignored (a parent that set it to ignored).
 */
export const exitBySignal = (signal: "SIGINT" | "SIGTERM"): void => {
  process.removeAllListeners(signal)
  process.kill(process.pid, signal)
  setTimeout(() => process.kill(process.pid, "SIGKILL"), 500)
}

/**
 * Exits with `code` (through `exit`, default `process.exit`) once the file system calls in
 * flight have returned (reads an interrupt abandoned return within milliseconds); when one is
 * still blocked after a second (see `internal/files.ts`), by the stop signal (the same status in
 * a shell) or SIGKILL without one: `process.exit` would wait for that call for ever.
 */
export const exitNow = (code: number, exit: (code: number) => void = (c) => process.exit(c)): void => {
  if (pendingCalls() === 0) return exit(code)
  // reads abandoned by an interrupt usually return within milliseconds: wait for them a little
  const started = Date.now()
  const poll = setInterval(() => {
    if (pendingCalls() === 0) {
      clearInterval(poll)
      return exit(code)
    }
    if (Date.now() - started < 1_000) return
    clearInterval(poll)
    process.stderr.write(`effect-rag: a file read did not return (a hung file system?); not waiting for it\n`)
    if (stop !== undefined) return exitBySignal(stop)
    process.kill(process.pid, "SIGKILL")
  }, 10)
}

/**
 * Records SIGINT and SIGTERM (the runtime's own handlers interrupt the program). When the
 * program has not ended `graceMs` after the signal (a native call that does not return, a file
 * read blocked in the thread pool), the process ends anyway, by the signal itself (status 130 /
 * 143): the ingest's write protocol makes any stop safe, so the user never waits on a stuck
 * process. A second signal ends it at once.
 */
export const watchStopSignals = (graceMs = 2_000): void => {
  stopGraceMs = graceMs
  const onSignal = (signal: "SIGINT" | "SIGTERM") => () => {
    if (stop !== undefined) return exitBySignal(stop)
    stop = signal
    setTimeout(() => {
      process.stderr.write(`effect-rag: stopped by ${signal}\n`)
      exitBySignal(signal)
    }, stopGraceMs).unref()
  }
  process.on("SIGINT", onSignal("SIGINT"))
  process.on("SIGTERM", onSignal("SIGTERM"))
}

/**
 * Sets the stop grace of {@link watchStopSignals} for this process (`worker` finishes the jobs
 * in hand, which takes longer than abandoning them).
 */
export const setStopGrace = (graceMs: number): void => {
  stopGraceMs = graceMs
}

/**
 * Prints a queue error (never the URL's credentials: its message holds none) and sets the exit
 * code: 2 for a queue URL that cannot mean what it says (`invalid_url`) and a queue of another
 * store or collection (`store_mismatch`), where nothing was read or written; 1 otherwise
 * (`ingest --queue`, `worker`).
 */
export const queueFailed = (json: boolean, e: { readonly _tag: string; readonly reason?: string; readonly message: string }) =>
  Effect.gen(function*() {
    if (json) yield* Console.log(JSON.stringify({ error: { _tag: e._tag, reason: e.reason, message: e.message } }))
    yield* Console.error(`effect-rag: ${e._tag}${e.reason === undefined ? "" : ` (${e.reason})`}: ${e.message}`)
    const usage = e._tag === "QueueError" && (e.reason === "invalid_url" || e.reason === "store_mismatch")
    yield* setExitCode(usage ? ExitCode.usage : ExitCode.failure)
  })

/** Prints a {@link UsageError} on one line and sets exit code 2; other errors pass through. */
export const exitOnUsage = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A | void, Exclude<E, UsageError>, R> =>
  Effect.catchIf(
    self,
    (e): e is Extract<E, UsageError> => e instanceof UsageError,
    (e) =>
      Effect.sync(() => process.stderr.write(`effect-rag: ${e.message}\n`)).pipe(Effect.zipRight(setExitCode(ExitCode.usage)))
  ) as Effect.Effect<A | void, Exclude<E, UsageError>, R>

/** Sets the process exit code (never lowers a failure to a success). */
export const setExitCode = (code: number): Effect.Effect<void> =>
  Effect.sync(() => {
    const current = typeof process.exitCode === "number" ? process.exitCode : 0
    if (code !== 0 && (current === 0 || code === ExitCode.failure)) process.exitCode = code
  })
