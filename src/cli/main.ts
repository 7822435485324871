#!/usr/bin/env node
/**
 * The `effect-rag` command line: one entry point, one subcommand per file under `commands/`.
 *
 * Exit status: 0 success, 1 failure, 2 bad usage.
 *
 * @since 0.1.0
 */
import { Command, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Console, Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { packageRoot } from "../internal/shared.js"
import * as Layers from "../Layers.js"
import * as ask from "./commands/ask.js"
import * as bench from "./commands/bench.js"
import * as collections from "./commands/collections.js"
import * as extract from "./commands/extract.js"
import * as ingest from "./commands/ingest.js"
import * as models from "./commands/models.js"
import * as query from "./commands/query.js"
import * as serve from "./commands/serve.js"
import * as web from "./commands/web.js"

const version = (): string => {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version
  } catch {
    return "0.0.0"
  }
}

const root = Command.make("effect-rag").pipe(
  Command.withDescription("Typed, reliable, measurable RAG on Effect: the AI API as typed services, local engines, LanceDB."),
  Command.withSubcommands([
    ingest.command,
    query.command,
    ask.command,
    collections.command,
    models.command,
    extract.command.pipe(Command.provide(Layers.uploadFromConfig)),
    web.scrapeCommand,
    web.crawlCommand,
    web.mapCommand,
    bench.command,
    serve.command
  ])
)

/** Runs the CLI with the given arguments (`process.argv` shape). */
export const run = Command.run(root, { name: "effect-rag", version: version() })

const describe = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? `${"_tag" in error ? `${String(error._tag)}: ` : ""}${error.message}`
    : String(error)

const program = run(process.argv).pipe(
  Effect.scoped,
  Effect.provide(Layer.mergeAll(Layers.Remote, NodeContext.layer)),
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some" && ValidationError.isValidationError(failure.value)) {
      // @effect/cli has printed the usage problem already.
      return Effect.sync(() => {
        process.exitCode = 2
      })
    }
    const message = failure._tag === "Some" ? describe(failure.value) : Cause.pretty(cause)
    return Console.error(`effect-rag: ${message}`).pipe(Effect.zipRight(Effect.sync(() => {
      process.exitCode = 1
    })))
  })
)

NodeRuntime.runMain(program, { disableErrorReporting: true })
