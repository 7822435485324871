/**
 * The command tree of the CLI, read from the one list of commands in `main.ts`: strict
 * command-line checks, the help text and the wording of usage errors, all derived from the
 * commands' own declarations (their `@effect/cli` `Usage` and help).
 *
 * `@effect/cli` takes an unknown `--flag` as a positional value when a command has repeated
 * positional arguments (`ingest --verbose --db DIR a.bin` read `--verbose`, `--db` and `DIR` as
 * paths), and names the wrong flag in some errors. {@link check} walks the arguments against the
 * options each command declares (read from its public `Usage`) and refuses, naming it:
 *
 * - an unknown command (`unknown command bogus for effect-rag`),
 * - an option the command does not have (`unknown option --verbose for effect-rag ingest`),
 * - an option placed before the command name (`effect-rag --db X ingest`),
 * - an option that needs a value given none.
 *
 * Options may come before or after the positional arguments; `--` ends the options. What is
 * left to `@effect/cli` (a missing argument, a value of the wrong type) is reworded by
 * {@link usageMessage} in the same style.
 *
 * {@link help} renders `--help` from the same declarations: `effect-rag ingest` (not `$ ingest`)
 * in the usage line, repeatable options shown as optional (`[--site URL]...`), each option's
 * own description without the generic type sentence of `@effect/cli`, and none of the built-in
 * options users do not need (`--wizard`, `--completions`, `--log-level`; still accepted).
 *
 * @since 0.1.0
 */
import { CliConfig, HelpDoc, type Usage } from "@effect/cli"
import * as Descriptor from "@effect/cli/CommandDescriptor"

/** A command of the tree: its name, its declaration, and its subcommands (none for a leaf). */
export interface Node {
  readonly name: string
  readonly descriptor: Descriptor.Command<unknown>
  readonly children: ReadonlyArray<Node>
}

/** The node of a command declaration; a group's subcommands in name order. */
const nodeOf = (descriptor: Descriptor.Command<unknown>): Node => {
  const name = [...Descriptor.getNames(descriptor)][0]!
  const children = [...Descriptor.getSubcommands(descriptor)]
    .filter(([child]) => child !== name)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, child]) => nodeOf(child))
  return { name, descriptor, children }
}

/**
 * The tree of a program named `name` whose commands are `commands` (in the order of the help);
 * `root` is the program's own declaration (its description heads the help).
 */
export const treeOf = (
  name: string,
  root: Descriptor.Command<unknown>,
  commands: ReadonlyArray<{ readonly descriptor: Descriptor.Command<any> }>
): Node => ({ name, descriptor: root, children: commands.map((c) => nodeOf(c.descriptor)) })

/** How the help is rendered: without the built-in options of `@effect/cli`. */
const helpConfig = CliConfig.make({ showBuiltIns: false })

/** What {@link check} decided. */
export type Checked =
  | { readonly _tag: "Ok"; readonly path: ReadonlyArray<Node> }
  | { readonly _tag: "Usage"; readonly message: string }
  | { readonly _tag: "Help"; readonly path: ReadonlyArray<Node> }
  | { readonly _tag: "Version" }

/** Options every command accepts (the built-ins of `@effect/cli`); `true` when they take a value. */
const builtIns: ReadonlyMap<string, boolean> = new Map([
  ["--help", false],
  ["-h", false],
  ["--wizard", false],
  ["--version", false],
  ["--completions", true],
  ["--log-level", true]
])

interface OptionSpec {
  readonly names: ReadonlyArray<string>
  readonly takesValue: boolean
  readonly repeated: boolean
  readonly optional: boolean
  readonly value: string | undefined
}

/** The options a usage declares, in order (positional arguments are left out). */
const optionsOf = (usage: Usage.Usage, repeated = false, optional = false): Array<OptionSpec> => {
  switch (usage._tag) {
    case "Named":
      return usage.names.some((n) => n.startsWith("-"))
        ? [{
          names: usage.names,
          takesValue: usage.acceptedValues._tag === "Some",
          repeated,
          optional,
          value: usage.acceptedValues._tag === "Some" ? usage.acceptedValues.value : undefined
        }]
        : []
    case "Optional":
      return optionsOf(usage.usage, repeated, true)
    case "Repeated":
      return optionsOf(usage.usage, true, true)
    case "Concat":
      return [...optionsOf(usage.left, repeated, optional), ...optionsOf(usage.right, repeated, optional)]
    case "Alternation":
      return [...optionsOf(usage.left, repeated, true), ...optionsOf(usage.right, repeated, true)]
    default:
      return []
  }
}

/** The positional arguments of a usage, as `<NAME>` / `<NAME>...` / `[<NAME>]`. */
const argsOf = (usage: Usage.Usage, repeated = false, optional = false): Array<string> => {
  switch (usage._tag) {
    case "Named":
      return usage.names.length === 1 && usage.names[0]!.startsWith("<")
        ? [optional && !repeated ? `[${usage.names[0]}]` : `${usage.names[0]}${repeated ? "..." : ""}`]
        : []
    case "Optional":
      return argsOf(usage.usage, repeated, true)
    case "Repeated":
      return argsOf(usage.usage, true, optional)
    case "Concat":
      return [...argsOf(usage.left, repeated, optional), ...argsOf(usage.right, repeated, optional)]
    default:
      return []
  }
}

const nameOf = (path: ReadonlyArray<Node>) => path.map((n) => n.name).join(" ")

/**
 * Checks `args` (without `node` and the script) against the command tree. Returns `Help` when
 * `--help`/`-h` asks for a command's help (or a group is named without a subcommand), `Version`
 * for a lone `--version`, `Usage` with a message for an unknown command or a bad option, `Ok`
 * with the command's path otherwise (missing arguments and ill-typed values are left to
 * `@effect/cli`, then reworded by {@link usageMessage}).
 */
export const check = (root: Node, args: ReadonlyArray<string>): Checked => {
  const path: Array<Node> = [root]
  let i = 0
  // the command names
  while (path[path.length - 1]!.children.length > 0) {
    const node = path[path.length - 1]!
    const a = args[i]
    if (a === undefined || a === "--help" || a === "-h") return { _tag: "Help", path }
    if (a === "--version" && path.length === 1) return args.length === 1 ? { _tag: "Version" } : { _tag: "Ok", path }
    // the built-ins of @effect/cli that belong before a command name
    if (a === "--wizard" || a === "--completions" || a === "--log-level" || a === "--version") return { _tag: "Ok", path }
    if (a.startsWith("-")) {
      const name = a.split("=")[0]
      return { _tag: "Usage", message: `${name} must come after a command name: ${nameOf(path)} ${node.children.map((c) => c.name).join("|")} ${name} ...` }
    }
    const child = node.children.find((c) => c.name === a)
    if (child === undefined) return { _tag: "Usage", message: `unknown command ${a} for ${nameOf(path)} (see ${nameOf(path)} --help)` }
    path.push(child)
    i++
  }
  const leaf = path[path.length - 1]!
  const known = new Map<string, boolean>(builtIns)
  for (const o of optionsOf(Descriptor.getUsage(leaf.descriptor))) for (const n of o.names) known.set(n, o.takesValue)
  for (; i < args.length; i++) {
    const a = args[i]!
    if (a === "--") break
    if (!a.startsWith("-") || a === "-" || /^-\d/.test(a)) continue
    const eq = a.indexOf("=")
    const name = a.startsWith("--") && eq > 0 ? a.slice(0, eq) : a
    const takesValue = known.get(name)
    if (takesValue === undefined) {
      return { _tag: "Usage", message: `unknown option ${name} for ${nameOf(path)} (see ${nameOf(path)} --help)` }
    }
    if (name === "--help" || name === "-h") return { _tag: "Help", path }
    if (takesValue && name === a) {
      if (i + 1 >= args.length) return { _tag: "Usage", message: `${name} needs a value (see ${nameOf(path)} --help)` }
      i++
    }
  }
  return { _tag: "Ok", path }
}

/** The option of `args` that was given `value` (`--limit abc`, `--limit=abc`), if any. */
const optionWith = (args: ReadonlyArray<string>, value: string): string | undefined => {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a.startsWith("--") && a.endsWith(`=${value}`) && a.indexOf("=") === a.length - value.length - 1) return a.slice(0, a.indexOf("="))
    if (a === value && i > 0 && args[i - 1]!.startsWith("-") && !args[i - 1]!.includes("=")) return args[i - 1]
  }
  return undefined
}

/** The value given to the option named `names` (the last one when it is repeated). */
const valueOf = (args: ReadonlyArray<string>, names: ReadonlyArray<string>): string | undefined => {
  let value: string | undefined
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    const eq = a.indexOf("=")
    if (eq > 0 && names.includes(a.slice(0, eq))) value = a.slice(eq + 1)
    else if (names.includes(a) && i + 1 < args.length) value = args[i + 1]
  }
  return value
}

/**
 * A usage error of `@effect/cli` (its `ValidationError` text) worded like ours and naming the
 * command: `missing argument TEXT for effect-rag query (see effect-rag query --help)`,
 * `--limit abc: not an integer (see …)`.
 */
export const usageMessage = (path: ReadonlyArray<Node>, args: ReadonlyArray<string>, text: string): string => {
  const line = text.replace(/\x1b\[[0-9;]*m/g, "").trim().split("\n")[0]!.trim()
  const see = `(see ${nameOf(path)} --help)`
  const valued = (value: string, problem: string) => {
    const option = optionWith(args, value)
    return `${option === undefined ? `'${value}'` : `${option} ${value}`}: ${problem} ${see}`
  }
  let m: RegExpMatchArray | null
  if ((m = line.match(/^Missing argument <([^>]+)>/)) !== null) return `missing argument ${m[1]} for ${nameOf(path)} ${see}`
  if (line.startsWith("Missing argument")) return `missing argument for ${nameOf(path)} ${see}`
  if ((m = line.match(/^Expected to find option: '([^']+)'/)) !== null) return `missing option ${m[1]} for ${nameOf(path)} ${see}`
  if ((m = line.match(/^Received unknown argument: '(.*)'$/)) !== null) return `unexpected argument ${m[1]} for ${nameOf(path)} ${see}`
  if ((m = line.match(/^'(.*)' is not an? (.+)$/)) !== null) {
    return valued(m[1]!, `not ${/^[aeiou]/.test(m[2]!) ? "an" : "a"} ${m[2]}`)
  }
  if ((m = line.match(/^Expected one of the following cases: (.*)$/)) !== null) {
    // the option declared with these choices, and the value it was given
    const choices = m[1]!.split(", ")
    const option = optionsOf(Descriptor.getUsage(path[path.length - 1]!.descriptor)).find((o) => o.value === choices.join(" | "))
    const given = option === undefined ? undefined : valueOf(args, option.names)
    return given !== undefined ? valued(given, `expected one of ${m[1]}`) : `expected one of ${m[1]} ${see}`
  }
  return `${line.charAt(0).toLowerCase()}${line.slice(1)} ${see}`
}

// =============================================================================
// Help
// =============================================================================

/** The generic sentences `@effect/cli` puts before every description ("A user-defined piece of text."). */
const generic = /^(A user-defined piece of text.*|A true or false value\.|An integer\.|A floating point number\.|A file.*|A directory.*|One of the following: .*|This setting is optional\.|This option may be repeated zero or more times\.|This argument may be repeated zero or more times\.)$/

const textOf = (doc: HelpDoc.HelpDoc): string => {
  const span = HelpDoc.getSpan(doc) as unknown as { _tag: string; value?: string; left?: unknown; right?: unknown }
  const flat = (s: { _tag: string; value?: string; left?: unknown; right?: unknown }): string =>
    s._tag === "Sequence" ? flat(s.left as typeof s) + flat(s.right as typeof s) : s.value ?? ""
  return flat(span)
}

/** Removes the generic sentences from a help document. */
const clean = (doc: HelpDoc.HelpDoc): HelpDoc.HelpDoc => {
  switch (doc._tag) {
    case "Paragraph":
      return generic.test(textOf(doc).trim()) ? HelpDoc.empty : doc
    case "Sequence":
      return HelpDoc.sequence(clean(doc.left), clean(doc.right))
    case "DescriptionList":
      return HelpDoc.descriptionList(doc.definitions.map(([span, d]) => [span, clean(d)] as [typeof span, HelpDoc.HelpDoc]) as [[
        (typeof doc.definitions)[0][0],
        HelpDoc.HelpDoc
      ]])
    case "Enumeration":
      return HelpDoc.enumeration(doc.elements.map(clean) as [HelpDoc.HelpDoc])
    default:
      return doc
  }
}

/** The usage line of a command: `effect-rag ingest [--site URL]... [--db DIR] <PATH|URL>...`. */
export const usageLine = (path: ReadonlyArray<Node>): string => {
  const leaf = path[path.length - 1]!
  if (leaf.children.length > 0) return `${nameOf(path)} ${leaf.children.map((c) => c.name).join("|")} ...`
  const usage = Descriptor.getUsage(leaf.descriptor)
  const options = optionsOf(usage).map((o) => {
    const flag = `${o.names[0]}${o.value !== undefined ? ` ${o.value}` : ""}`
    return o.repeated ? `[${flag}]...` : o.optional ? `[${flag}]` : flag
  })
  return [nameOf(path), ...options, ...argsOf(usage)].join(" ")
}

/** The help of a command, as plain text (ANSI styles only on a terminal without NO_COLOR). */
export const help = (path: ReadonlyArray<Node>, version: string): string => {
  const leaf = path[path.length - 1]!
  const commands = leaf.children.length > 0
    ? HelpDoc.sequence(
      HelpDoc.h1("COMMANDS"),
      HelpDoc.descriptionList(leaf.children.map((c) => [
        HelpDoc.getSpan(HelpDoc.p(`${nameOf([...path, c])}`)),
        HelpDoc.p(descriptionOf(c))
      ]) as [[ReturnType<typeof HelpDoc.getSpan>, HelpDoc.HelpDoc]])
    )
    : clean(Descriptor.getHelp(leaf.descriptor, helpConfig))
  const doc = HelpDoc.blocks([
    HelpDoc.p(`${nameOf(path)} (effect-rag ${version})`),
    HelpDoc.h1("USAGE"),
    HelpDoc.p(usageLine(path)),
    commands,
    ...(leaf.children.length > 0 ? [HelpDoc.p(`Run ${nameOf(path)} COMMAND --help for the options of a command.`)] : []),
    ...(path.length === 1
      ? [HelpDoc.h1("EXIT STATUS"), HelpDoc.p("0 done, 1 failed, 2 bad usage (nothing read or written), 3 partial (some documents failed, the rest are stored), 4 significant regression (eval run --baseline), 130/143 stopped by SIGINT/SIGTERM")]
      : [])
  ])
  const text = HelpDoc.toAnsiText(doc)
  const color = process.stdout.isTTY === true && process.env["NO_COLOR"] === undefined
  return color ? text : text.replace(/\x1b\[[0-9;]*m/g, "")
}

/** The first line of a command's description (for the command list). */
const descriptionOf = (node: Node): string => {
  const doc = Descriptor.getHelp(node.descriptor, helpConfig)
  const find = (d: HelpDoc.HelpDoc): string | undefined => {
    if (d._tag === "Paragraph") return textOf(d)
    if (d._tag === "Sequence") return find(d.left) ?? find(d.right)
    return undefined
  }
  const first = doc._tag === "Sequence" ? find(doc.right) ?? find(doc) : find(doc)
  return (first ?? "").trim()
}
