/**
 * The command tree read from the commands' own declarations (`Argv.treeOf`): the strict check,
 * the help without `@effect/cli`'s built-ins, and `@effect/cli`'s own usage errors (produced by
 * its real parser here) reworded like ours. In-process and fast; the built command line is
 * exercised end to end by newcomer.test.ts.
 */
import { CliConfig, Command, HelpDoc } from "@effect/cli"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import * as Argv from "../../src/cli/argv.js"
import * as collections from "../../src/cli/commands/collections.js"
import * as evaluate from "../../src/cli/commands/eval.js"
import * as query from "../../src/cli/commands/query.js"

const commands = [query.command, collections.command, evaluate.command] as const
const root = Command.make("effect-rag").pipe(Command.withSubcommands(commands))
const tree = Argv.treeOf("effect-rag", root.descriptor, commands)

/** The text of the error `@effect/cli`'s own parser gives for `args` (the command name first). */
const cliError = (descriptor: Descriptor.Command<unknown>, args: ReadonlyArray<string>): string => {
  const result = Effect.runSync(
    Effect.either(Descriptor.parse(descriptor, args, CliConfig.defaultConfig)).pipe(Effect.provide(NodeContext.layer))
  )
  if (Either.isRight(result)) throw new Error(`${args.join(" ")} parsed`)
  return HelpDoc.toAnsiText(result.left.error)
}

const pathTo = (...names: ReadonlyArray<string>) => {
  const checked = Argv.check(tree, names)
  if (checked._tag !== "Ok" && checked._tag !== "Help") throw new Error(`${names.join(" ")}: ${checked._tag}`)
  return checked.path
}

describe("Argv: the one command tree", () => {
  it("reads the commands and a group's subcommands from their declarations", () => {
    expect(tree.children.map((c) => c.name)).toEqual(["query", "collections", "eval"])
    expect(tree.children[1]!.children.map((c) => c.name)).toEqual(["drop", "list", "stats"])
    expect(tree.children[0]!.children).toEqual([])
  })

  it("refuses an unknown command or option and shows the help of a group named alone", () => {
    expect(Argv.check(tree, ["bogus"])).toEqual({ _tag: "Usage", message: "unknown command bogus for effect-rag (see effect-rag --help)" })
    expect(Argv.check(tree, ["collections", "bogus"])).toMatchObject({ message: "unknown command bogus for effect-rag collections (see effect-rag collections --help)" })
    expect(Argv.check(tree, ["query", "--verbose", "x"])).toMatchObject({ message: "unknown option --verbose for effect-rag query (see effect-rag query --help)" })
    expect(Argv.check(tree, ["query", "x", "--limit"])).toMatchObject({ message: "--limit needs a value (see effect-rag query --help)" })
    expect(Argv.check(tree, ["--db", "x", "query"])).toMatchObject({ _tag: "Usage" })
    const group = Argv.check(tree, ["collections"])
    expect(group._tag).toBe("Help")
    expect(Argv.check(tree, [])._tag).toBe("Help")
    const ok = Argv.check(tree, ["collections", "stats", "--json", "docs"])
    expect(ok._tag).toBe("Ok")
    expect(ok._tag === "Ok" && ok.path.map((n) => n.name)).toEqual(["effect-rag", "collections", "stats"])
    // the built-ins are still accepted
    expect(Argv.check(tree, ["query", "x", "--log-level", "debug"])._tag).toBe("Ok")
  })

  it("renders help from the declarations, without the built-in options users do not need", () => {
    const help = Argv.help(pathTo("query", "--help"), "9.9.9")
    expect(help).toContain("effect-rag query [--limit N]")
    expect(help).toContain("--mode fulltext | vector | hybrid")
    for (const builtIn of ["--wizard", "--completions", "--log-level"]) expect(help).not.toContain(builtIn)
    const group = Argv.help(pathTo("collections"), "9.9.9")
    expect(group).toContain("effect-rag collections drop|list|stats ...")
    expect(group).toContain("effect-rag collections stats")
    expect(group).not.toContain("--wizard")
  })

  it("words @effect/cli's own errors like ours, naming the command and the option", () => {
    const q = pathTo("query", "x")
    const missing = cliError(query.command.descriptor, ["query"])
    expect(missing).toContain("Missing argument <TEXT>")
    expect(Argv.usageMessage(q, [], missing)).toBe("missing argument TEXT for effect-rag query (see effect-rag query --help)")

    const notInteger = cliError(query.command.descriptor, ["query", "--limit", "abc", "x"])
    expect(Argv.usageMessage(q, ["query", "--limit", "abc", "x"], notInteger)).toBe("--limit abc: not an integer (see effect-rag query --help)")
    expect(Argv.usageMessage(q, ["query", "--limit=abc", "x"], notInteger)).toBe("--limit abc: not an integer (see effect-rag query --help)")

    const choice = cliError(query.command.descriptor, ["query", "--db", "d", "--mode", "bad", "x"])
    expect(Argv.usageMessage(q, ["query", "--db", "d", "--mode", "bad", "x"], choice)).toBe(
      "--mode bad: expected one of fulltext, vector, hybrid (see effect-rag query --help)"
    )

    const run = pathTo("eval", "run")
    const missingOption = cliError(evaluate.runCommand.descriptor, ["run"])
    expect(Argv.usageMessage(run, ["eval", "run"], missingOption)).toMatch(/^missing option --\S+ for effect-rag eval run \(see effect-rag eval run --help\)$/)
  })
})
