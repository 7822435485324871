#!/usr/bin/env node
/**
 * The `effect-rag` command line: one entry point, one subcommand per file under `commands/`.
 *
 * Exit status: 0 done, 1 failed, 2 bad usage (nothing was read or written), 3 partial (some
 * documents failed, the rest are stored), 4 a significant regression (`eval run --baseline`),
 * 130 / 143 stopped by SIGINT / SIGTERM.
 *
 * Start-up: this module and the command definitions import only `effect` and `@effect/cli`;
 * each command loads what it runs when it runs (`Shared.load`). The modules loaded before a
 * command runs, and those `query` runs, import `effect/Module` and `@effect/platform/Module`
 * paths, never the package barrels (which load every module of the package: about 100 more
 * files of `effect`, the HTTP server and workers of `@effect/platform`).
 *
 * One list of commands ({@link tree}'s source) builds the parser and dispatch, the strict option
 * check and the help (`argv.ts`); the options are checked before any command runs, and the usage
 * errors of `@effect/cli` are printed in our words (`effect-rag: missing argument TEXT for …`).
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { packageRoot } from "../internal/shared.js"
import * as Argv from "./argv.js"
import * as ask from "./commands/ask.js"
import * as bench from "./commands/bench.js"
import * as collections from "./commands/collections.js"
import * as evaluate from "./commands/eval.js"
import * as extract from "./commands/extract.js"
import * as ingest from "./commands/ingest.js"
import * as models from "./commands/models.js"
import * as query from "./commands/query.js"
import * as serve from "./commands/serve.js"
import * as web from "./commands/web.js"
import * as worker from "./commands/worker.js"
import * as Shared from "./options.js"
import * as Wiring from "../Wiring.js"

const version = (): string => {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version
  } catch {
    return "0.0.0"
  }
}

/** `extract` runs on the `Upload` service chosen by `EFFECT_RAG_UPLOAD` (loaded when it runs). */
const extractCommand = extract.command.pipe(Command.provide(Wiring.uploadFromConfig()))

/**
 * The commands, in the order of `effect-rag --help`: the one list that builds the parser and
 * dispatch (`Command.withSubcommands`), the strict option check and the help (`Argv.treeOf`
 * reads each command's declaration, and a group's subcommands from the group itself). A new
 * command is one entry here (see docs/contributing.md).
 */
const commands = [
  ingest.command,
  query.command,
  ask.command,
  collections.command,
  models.command,
  extractCommand,
  web.scrapeCommand,
  web.crawlCommand,
  web.mapCommand,
  bench.command,
  evaluate.command,
  serve.command,
  worker.command
] as const

/**
 * A console that drops what `@effect/cli` prints on a usage error while it parses (the error
 * is reworded and printed by `main`); a command's handler gets `real` back.
 */
interface ParseConsole extends Console.Console {
  readonly real: Console.Console
}

const parseConsole = (real: Console.Console): ParseConsole => ({ ...real, real, error: () => Effect.void })

const root = Command.make("effect-rag").pipe(
  Command.withDescription("Typed, reliable, measurable RAG on Effect: the AI API as typed services, local engines, LanceDB."),
  Command.withSubcommands(commands),
  Command.transformHandler((handler) =>
    Effect.flatMap(Effect.console, (console) => "real" in console ? Effect.withConsole(handler, (console as ParseConsole).real) : handler)
  )
)

/** The command tree (for the strict option check and the help). */
export const tree: Argv.Node = Argv.treeOf("effect-rag", root.descriptor, commands)

/** Runs the CLI with the given arguments (`process.argv` shape). */
export const run = Command.run(root, { name: "effect-rag", version: version() })

const describe = (error: unknown): string => {
  const text = typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? `${"_tag" in error ? `${String(error._tag)}: ` : ""}${error.message}`
    : String(error)
  // one line: never a stack trace
  return Shared.forCli(text.split("\n")[0]!)
}

/** A usage error: one line on stderr, exit 2. */
const usage = (message: string) => Console.error(`effect-rag: ${message}`).pipe(Effect.zipRight(Shared.setExitCode(Shared.ExitCode.usage)))

const main = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const args = argv.slice(2)
    const checked = Argv.check(tree, args)
    switch (checked._tag) {
      case "Usage":
        return usage(checked.message)
      case "Help":
        return Console.log(Argv.help(checked.path, version()))
      case "Version":
        return Console.log(version())
      case "Ok":
        return Effect.flatMap(Effect.console, (real) => Effect.withConsole(run(argv), parseConsole(real))).pipe(
          Effect.catchIf(ValidationError.isValidationError, (error) =>
            usage(Argv.usageMessage(checked.path, args, HelpDoc.toAnsiText(error._tag === "HelpRequested" ? HelpDoc.empty : error.error))))
        )
    }
  })

const program = main(process.argv).pipe(
  Effect.scoped,
  Effect.provide(NodeContext.layer),
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some" && failure.value instanceof Shared.UsageError) return usage(failure.value.message)
    const message = failure._tag === "Some" ? describe(failure.value) : Cause.pretty(cause).split("\n")[0]!
    return Console.error(`effect-rag: ${message}`).pipe(Effect.zipRight(Shared.setExitCode(Shared.ExitCode.failure)))
  })
)

Shared.watchStopSignals()
NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  // a run stopped by a signal exits 128 + the signal number; otherwise the code the command set
  // (and never waits on a file read blocked in the thread pool: see Shared.exitNow)
  teardown: (exit, onExit) => {
    const signal = Shared.stopSignal()
    const code = signal !== undefined ? Shared.signalExitCode(signal)
      : Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? Shared.ExitCode.failure
      : typeof process.exitCode === "number" ? process.exitCode : 0
    Shared.exitNow(code, onExit)
  }
})
