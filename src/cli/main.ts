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
 * files of `effect`, the HTTP server and workers of `@effect/platform`). The options are checked
 * strictly (`argv.ts`) before any command runs.
 *
 * @since 0.1.0
 */
import { Command, ValidationError } from "@effect/cli"
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

const leaf = (command: Argv.Node["command"], name: string): Argv.Node => ({ name, command, children: [] })

const subcommands: ReadonlyArray<Argv.Node> = [
  leaf(ingest.command, "ingest"),
  leaf(query.command, "query"),
  leaf(ask.command, "ask"),
  {
    name: "collections",
    command: collections.command,
    children: [leaf(collections.listCommand, "list"), leaf(collections.statsCommand, "stats"), leaf(collections.dropCommand, "drop")]
  },
  leaf(models.command, "models"),
  leaf(extractCommand, "extract"),
  leaf(web.scrapeCommand, "scrape"),
  leaf(web.crawlCommand, "crawl"),
  leaf(web.mapCommand, "map"),
  { name: "bench", command: bench.command, children: [leaf(bench.retrieval, "retrieval")] },
  { name: "eval", command: evaluate.command, children: [leaf(evaluate.buildCommand, "build"), leaf(evaluate.runCommand, "run")] },
  leaf(serve.command, "serve"),
  leaf(worker.command, "worker")
]

const root = Command.make("effect-rag").pipe(
  Command.withDescription("Typed, reliable, measurable RAG on Effect: the AI API as typed services, local engines, LanceDB."),
  Command.withSubcommands([
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
  ])
)

/** The command tree (for the strict option check and the help). */
export const tree: Argv.Node = { name: "effect-rag", command: root, children: subcommands }

/** Runs the CLI with the given arguments (`process.argv` shape). */
export const run = Command.run(root, { name: "effect-rag", version: version() })

const describe = (error: unknown): string => {
  const text = typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
    ? `${"_tag" in error ? `${String(error._tag)}: ` : ""}${error.message}`
    : String(error)
  // one line: never a stack trace
  return Shared.forCli(text.split("\n")[0]!)
}

const main = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const checked = Argv.check(tree, argv.slice(2))
    switch (checked._tag) {
      case "Usage":
        return Console.error(`effect-rag: ${checked.message}`).pipe(Effect.zipRight(Shared.setExitCode(Shared.ExitCode.usage)))
      case "Help":
        return Console.log(Argv.help(checked.path, version()))
      case "Version":
        return Console.log(version())
      case "Ok":
        return run(argv)
    }
  })

const program = main(process.argv).pipe(
  Effect.scoped,
  Effect.provide(NodeContext.layer),
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some" && ValidationError.isValidationError(failure.value)) {
      // @effect/cli has printed the usage problem already.
      return Shared.setExitCode(Shared.ExitCode.usage)
    }
    if (failure._tag === "Some" && failure.value instanceof Shared.UsageError) {
      return Console.error(`effect-rag: ${failure.value.message}`).pipe(Effect.zipRight(Shared.setExitCode(Shared.ExitCode.usage)))
    }
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
