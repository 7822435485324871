/**
 * `effect-rag extract FILE... [--mode standard|embeddings] [--password P]
 * [--option NAME=VALUE]... [--json]`: extracts each file through the `Upload` service (the
 * local engine or the remote endpoint, whichever layer `main.ts` provides) and prints the
 * spec's upload result per file.
 *
 * `--option` takes the form fields of the upload endpoint (`enable_ocr`, `enable_vision`,
 * `save_all`, `text_only`, `vision_only`, `page_based`, `images_only`, `remove_headers`) with
 * `true`/`false`, and `extract_mode=default|embeddings` (same as `--mode`). With `--json`, each
 * file's result is printed as one JSON object per line, exactly the spec's shape; a file that
 * fails prints the spec's error body (`status: false, type: "error", error`). The exit status
 * is 1 when any file failed (set on `process.exitCode`, so the program still ends normally).
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Upload from "../../api/Upload.js"

/** The parsed command line. */
export interface ExtractArgs {
  readonly files: ReadonlyArray<string>
  readonly mode: "standard" | "embeddings"
  readonly password: Option.Option<Redacted.Redacted<string>>
  readonly option: HashMap.HashMap<string, string>
  readonly json: boolean
}

type BooleanField = (typeof Upload.booleanFields)[number]

/** Parses `--option NAME=VALUE` pairs into upload options and the mode; an error text for a bad one. */
export const parseOptions = (
  pairs: HashMap.HashMap<string, string>,
  mode: "standard" | "embeddings"
): { options: Upload.UploadOptions; mode: "standard" | "embeddings" } | { error: string } => {
  const options: Partial<Record<BooleanField, boolean>> = {}
  let resolvedMode = mode
  for (const [name, raw] of HashMap.toEntries(pairs)) {
    const value = raw.trim().toLowerCase()
    if (name === "extract_mode") {
      if (value !== "default" && value !== "embeddings") return { error: `extract_mode must be default or embeddings, not ${raw}` }
      resolvedMode = value === "embeddings" ? "embeddings" : "standard"
      continue
    }
    if (!(Upload.booleanFields as ReadonlyArray<string>).includes(name)) {
      return { error: `unknown option ${name}; expected one of ${[...Upload.booleanFields, "extract_mode"].join(", ")}` }
    }
    if (value !== "true" && value !== "false") return { error: `${name} must be true or false, not ${raw}` }
    options[name as BooleanField] = value === "true"
  }
  return { options, mode: resolvedMode }
}

type Outcome =
  | { readonly kind: "standard"; readonly r: Upload.StandardResult }
  | { readonly kind: "chunks"; readonly r: Upload.EmbeddingsResult }

/** The spec's error body for a file that failed. */
const errorBody = (message: string) => ({ status: false, content: "", type: "error", error: message })

const messageOf = (e: Upload.UploadError): string => `${e._tag}: ${e.message}`

/** Runs the command: needs only the `Upload` service. */
export const run = (args: ExtractArgs): Effect.Effect<void, never, Upload.Upload> =>
  Effect.gen(function*() {
    const upload = yield* Upload.Upload
    const parsed = parseOptions(args.option, args.mode)
    if ("error" in parsed) {
      yield* Console.error(`effect-rag extract: ${parsed.error}`)
      process.exitCode = 2
      return
    }
    const options: Upload.UploadOptions = Option.match(args.password, {
      onNone: () => parsed.options,
      onSome: (password) => ({ ...parsed.options, password })
    })
    let failed = 0
    for (const path of args.files) {
      const process_ = (file: Upload.UploadFile): Effect.Effect<Outcome, Upload.UploadError> =>
        parsed.mode === "embeddings"
          ? Effect.map(upload.extractChunks(file, options), (r): Outcome => ({ kind: "chunks", r }))
          : Effect.map(upload.extract(file, options), (r): Outcome => ({ kind: "standard", r }))
      const outcome = yield* Upload.fromPath(path).pipe(Effect.flatMap(process_), Effect.either)
      if (outcome._tag === "Left") {
        failed++
        const message = messageOf(outcome.left)
        if (args.json) yield* Console.log(JSON.stringify(errorBody(message)))
        else yield* Console.error(`✗ ${path}: ${message}`)
        continue
      }
      const result = outcome.right
      if (args.json) {
        yield* Console.log(JSON.stringify(result.r))
        continue
      }
      for (const w of result.r.warnings ?? []) yield* Console.error(`! ${path}: ${w}`)
      if (result.kind === "standard") {
        const r = result.r
        yield* Console.log(`== ${path} (${r.format ?? r.type}) ==`)
        if (r.pages) {
          for (const p of r.pages) yield* Console.log(`--- page ${p.page}${p.name ? ` (${p.name})` : ""} ---\n${p.content}`)
        } else yield* Console.log(r.content)
      } else {
        const r = result.r
        const m = r.data.data.metadata
        yield* Console.log(
          `== ${path} (${r.format ?? r.type}): ${r.usage.total_chunks} chunks, ${r.usage.total_tokens} tokens, ${r.usage.total_pages} pages, language ${m.language || "?"} ==`
        )
        if (m.title) yield* Console.log(`title: ${m.title}`)
        for (const [i, c] of r.data.data.chunks.entries()) {
          yield* Console.log(`--- chunk ${i + 1} (page ${c.from_page}, ${c.total_tokens} tokens) ---\n${c.content}`)
        }
      }
    }
    if (failed > 0) process.exitCode = 1
  })

/** The `extract` subcommand. */
export const command = Command.make(
  "extract",
  {
    files: Args.file({ name: "FILE" }).pipe(Args.atLeast(1)),
    mode: Options.choice("mode", ["standard", "embeddings"]).pipe(
      Options.withDefault("standard" as const),
      Options.withDescription("standard: the extracted content; embeddings: token-counted chunks")
    ),
    password: Options.redacted("password").pipe(
      Options.optional,
      Options.withDescription("password of an encrypted document (local engine only)")
    ),
    option: Options.keyValueMap("option").pipe(
      Options.withDefault(HashMap.empty<string, string>()),
      Options.withDescription("an upload form field, NAME=VALUE (e.g. enable_ocr=true); repeatable")
    ),
    json: Options.boolean("json").pipe(Options.withDescription("print the spec's JSON result, one object per file per line"))
  },
  (args) => run(args)
).pipe(Command.withDescription("Extract text (or embeddings-mode chunks) from documents"))
