/**
 * Strict command-line checks and the help text, before `@effect/cli` parses anything.
 *
 * `@effect/cli` takes an unknown `--flag` as a positional value when a command has repeated
 * positional arguments (`ingest --verbose --db DIR a.bin` read `--verbose`, `--db` and `DIR` as
 * paths), and names the wrong flag in some errors. {@link check} walks the arguments against the
 * options each command declares (read from its public `Usage`) and refuses, naming it:
 *
 * - an option the command does not have (`unknown option --verbose for effect-rag ingest`),
 * - an option placed before the command name (`effect-rag --db X ingest`),
 * - an option that needs a value given none.
 *
 * Options may come before or after the positional arguments; `--` ends the options.
 *
 * {@link help} renders `--help` from the same declarations: `effect-rag ingest` (not `$ ingest`)
 * in the usage line, repeatable options shown as optional (`[--site URL]...`), and each option's
 * own description without the generic type sentence of `@effect/cli`.
 *
 * @since 0.1.0
 */
import { CliConfig, Command, HelpDoc, type Usage } from "@effect/cli"

/** A command of the tree: its name, the command, and its subcommands. */
export interface Node {
  readonly name: string
  readonly command: Command.Command<any, any, any, any>
  readonly children: ReadonlyArray<Node>
}

/** What {@link check} decided. */
export type Checked =
  | { readonly _tag: "Ok" }
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
 * `--help`/`-h` asks for a command's help, `Version` for a lone `--version`, `Usage` with a
 * message for a bad option, `Ok` otherwise (unknown command names and missing arguments are
 * left to `@effect/cli`).
 */
export const check = (root: Node, args: ReadonlyArray<string>): Checked => {
  const path: Array<Node> = [root]
  let i = 0
  // the command names
  while (i < args.length) {
    const a = args[i]!
    const node = path[path.length - 1]!
    if (a === "--help" || a === "-h") return { _tag: "Help", path }
    if (a === "--version" && path.length === 1) return args.length === 1 ? { _tag: "Version" } : { _tag: "Ok" }
    if (a.startsWith("-")) {
      // the built-ins of @effect/cli that belong before a command name
      if (a === "--wizard" || a === "--completions" || a === "--log-level" || a === "--version") return { _tag: "Ok" }
      if (node.children.length > 0) {
        return {
          _tag: "Usage",
          message: `${a.split("=")[0]} must come after a command name: ${nameOf(path)} ${node.children.map((c) => c.name).join("|")} ${a.split("=")[0]} ...`
        }
      }
      break
    }
    const child = node.children.find((c) => c.name === a)
    if (child === undefined) break
    path.push(child)
    i++
    if (child.children.length === 0) break
  }
  const leaf = path[path.length - 1]!
  if (leaf.children.length > 0) return { _tag: "Ok" }
  const known = new Map<string, boolean>(builtIns)
  for (const o of optionsOf(Command.getUsage(leaf.command))) for (const n of o.names) known.set(n, o.takesValue)
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
  return { _tag: "Ok" }
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
  const usage = Command.getUsage(leaf.command)
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
    : clean(Command.getHelp(leaf.command, CliConfig.defaultConfig))
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
  const doc = Command.getHelp(node.command, CliConfig.defaultConfig)
  const find = (d: HelpDoc.HelpDoc): string | undefined => {
    if (d._tag === "Paragraph") return textOf(d)
    if (d._tag === "Sequence") return find(d.left) ?? find(d.right)
    return undefined
  }
  const first = doc._tag === "Sequence" ? find(doc.right) ?? find(doc) : find(doc)
  return (first ?? "").trim()
}
