/**
 * `effect-rag ask QUESTION [--model M] [--search] [--no-tools] [--check [--judge] [--judge-model M]] [--limit N] [--mode ...]
 * [--filter key=value]... [--embedder ...] [--reranker ...] [--db DIR] [--collection NAME]
 * [--json] [--config FILE]`: answers a question from a collection through the chat service,
 * with numbered citations, then lists the cited sources.
 *
 * On a terminal the answer streams as it is written; otherwise it is printed when complete.
 * `--check` then checks each sentence against the passages it cites (`pipeline/AnswerCheck`)
 * and lists those not supported (in `--json`: the `check` field); `--judge` has a chat model
 * judge each cited sentence instead (`AnswerCheck.judge`).
 * `--search` answers through AI search instead (no collection involved). The chat model comes
 * from `--model`, then `EFFECT_RAG_CHAT_MODEL` (environment or config file); the API from
 * `EFFECT_RAG_BASE_URL` and `EFFECT_RAG_API_KEY`. Without a model or key the command exits 1
 * with a `ChatNotConfigured` message that says what to set.
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as Answer from "../../pipeline/Answer.js"
import type * as Search from "../../api/Search.js"
import * as Shared from "../options.js"
import { exitOnUsage, location, nonBlank, resolvePrincipal, resolveRetrieval, retrievalOptions, withFilter } from "../retrieval.js"
import * as Wiring from "../../Wiring.js"

/** The sources list printed after an answer: the cited ones, or all when none is cited. */
export const formatSources = (answer: Answer.Answer): string => {
  const line = (s: Answer.Source) => `[${s.n}] ${location(s)}${s.title !== undefined && s.title !== s.source ? ` (${s.title})` : ""}`
  if (answer.sources.length === 0) return "Sources: none found"
  const lines = answer.cited.length > 0
    ? ["Sources:", ...answer.cited.map(line)]
    : ["Sources (none cited):", ...answer.sources.map(line)]
  if (answer.unknownCitations.length > 0) {
    const numbers = answer.unknownCitations.map((n) => `[${n}]`).join(" ")
    lines.push(`note: the answer cites ${numbers}, which ${answer.unknownCitations.length === 1 ? "matches" : "match"} no source`)
  }
  return lines.join("\n")
}

/** `provider/model` or `model` (provider `openai`) for the AI search path. */
const modelChoice = (spec: string): Search.ModelChoice => {
  const at = spec.indexOf("/")
  return at > 0 ? { provider: spec.slice(0, at), model: spec.slice(at + 1) } : { provider: "openai", model: spec }
}

/** The remote Chat and Search layers, configured from the environment and the config file (loaded on first use). */
const apiLayer = (model: string | undefined) =>
  Layer.unwrapEffect(Effect.gen(function*() {
    const Chat = yield* Shared.load(() => import("../../api/Chat.js"))
    const Search = yield* Shared.load(() => import("../../api/Search.js"))
    return Layer.mergeAll(Chat.layer({ model }), Search.layer).pipe(Layer.provide(Wiring.apiClient))
  }))

/** The `ask` command. */
export const command = Command.make(
  "ask",
  {
    question: Args.text({ name: "QUESTION" }).pipe(Args.withDescription("the question")),
    model: Options.text("model").pipe(
      Options.withPseudoName("MODEL"),
      Options.optional,
      Options.withDescription("the chat model (default: $EFFECT_RAG_CHAT_MODEL); with --search: provider/model")
    ),
    search: Options.boolean("search").pipe(Options.withDescription("answer through AI search instead of the collection")),
    noTools: Options.boolean("no-tools").pipe(Options.withDescription("do not offer the model the search_documents tool")),
    check: Options.boolean("check").pipe(
      Options.withDescription("check each sentence against the passages it cites (lexical support, threshold 0.5) and list those not supported")
    ),
    judge: Options.boolean("judge").pipe(
      Options.withDescription("with --check: a chat model judges each cited sentence instead (one call per sentence; the ask model, or --judge-model)")
    ),
    judgeModel: Options.text("judge-model").pipe(
      Options.withPseudoName("MODEL"),
      Options.optional,
      Options.withDescription("the model of --judge (default: the ask model, $EFFECT_RAG_CHAT_MODEL)")
    ),
    ...retrievalOptions(6)
  },
  (args) =>
    Effect.gen(function*() {
      const question = yield* nonBlank("the question", args.question)
      if ((args.judge || Option.isSome(args.judgeModel)) && !args.check) return yield* Effect.fail(new Shared.UsageError("--judge and --judge-model go with --check"))
      const Answer = yield* Shared.load(() => import("../../pipeline/Answer.js"))
      const model = Option.isSome(args.model) ? args.model : yield* Wiring.setting("EFFECT_RAG_CHAT_MODEL")
      const tty = process.stdout.isTTY === true && !args.json
      let answer: Answer.Answer
      if (args.search) {
        const principal = yield* resolvePrincipal(args)
        answer = yield* Answer.askWithSearch(question, Option.match(model, {
          onNone: () => ({}),
          onSome: (m) => ({ chatModel: modelChoice(m) })
        })).pipe(Effect.provide(Layer.merge(apiLayer(undefined), principal)))
        if (!args.json) yield* Console.log(answer.text)
      } else {
        if (Option.isNone(model)) {
          return yield* new Answer.ChatNotConfigured({ reason: "model", message: `ask needs a chat model: ${Answer.configureHint}.` })
        }
        const resolved = yield* resolveRetrieval(args)
        const principal = yield* resolvePrincipal(args)
        let streamed = false
        const final = yield* Effect.gen(function*() {
          const { collection, options } = yield* withFilter(resolved.collection, resolved.options, args.filter)
          const events = Answer.askStream(collection, question, { ...options, model: model.value, tools: !args.noTools })
          return yield* Stream.runFoldEffect(events, undefined as Answer.Answer | undefined, (last, e) => {
            if (e._tag === "Done") return Effect.succeed(e.answer)
            if (!tty) return Effect.succeed(last)
            if (e._tag === "Delta") {
              streamed = true
              return Effect.sync(() => process.stdout.write(e.text)).pipe(Effect.as(last))
            }
            if (e._tag === "ToolCall") return Console.error(`(searching the collection: ${e.query})`).pipe(Effect.as(last))
            return Effect.succeed(last)
          })
        }).pipe(Effect.provide(Layer.mergeAll(resolved.store, apiLayer(model.value), principal)))
        if (final === undefined) return yield* Effect.dieMessage("ask: the answer stream ended without an answer")
        answer = final
        if (!args.json) yield* Console.log(streamed ? "" : answer.text)
      }
      const AnswerCheck = args.check ? yield* Shared.load(() => import("../../pipeline/AnswerCheck.js")) : undefined
      const judgeModel = Option.isSome(args.judgeModel) ? args.judgeModel : args.search ? yield* Wiring.setting("EFFECT_RAG_CHAT_MODEL") : model
      if (args.judge && Option.isNone(judgeModel)) return yield* Effect.fail(new Shared.UsageError("--judge needs a chat model: pass --judge-model or set EFFECT_RAG_CHAT_MODEL"))
      const checked = AnswerCheck === undefined
        ? undefined
        : args.judge
        ? yield* AnswerCheck.judge(answer, { model: Option.getOrUndefined(judgeModel) }).pipe(Effect.provide(apiLayer(Option.getOrUndefined(judgeModel))))
        : AnswerCheck.check(answer)
      yield* Console.log(
        args.json
          ? JSON.stringify(checked === undefined ? answer : { ...answer, check: checked }, null, 2)
          : `\n${formatSources(answer)}${checked === undefined ? "" : `\n\n${AnswerCheck!.format(checked)}`}`
      )
    }).pipe(Shared.withConfigFile(args.config), exitOnUsage)
).pipe(Command.withDescription("Answer a question from a collection with cited sources (needs a chat model)."))
