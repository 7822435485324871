/**
 * `effect-rag models [--json]`: lists the models of the configured service.
 *
 * @since 0.1.0
 */
import { Command, Options } from "@effect/cli"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Models from "../../api/Models.js"
import * as Wiring from "../../Wiring.js"
import * as Shared from "../options.js"

const json = Options.boolean("json").pipe(Options.withDescription("print the model list as JSON"))

/** Formats model records as an aligned text table. */
export const formatTable = (list: Models.ModelList): string => {
  const rows = list.data.map((m) => [m.id, m.type ?? m.object ?? "", m.owned_by ?? m.name ?? ""] as const)
  const header = ["ID", "TYPE", "OWNER/NAME"] as const
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(header), ...rows.map(line)].join("\n")
}

/**
 * The `models` command. The remote layer is built inside the command, after `--config` (or
 * `./effect-rag.config.json`) is applied, so the file's `baseUrl` and `apiKey` count.
 */
export const command = Command.make("models", { json, config: Shared.config }, ({ config, json }) =>
  Effect.gen(function*() {
    const Models = yield* Shared.load(() => import("../../api/Models.js"))
    const list = yield* Effect.flatMap(Models.Models, (models) => models.list).pipe(
      Effect.provide(Models.layer.pipe(Layer.provide(Wiring.apiClient)))
    )
    yield* Console.log(json ? JSON.stringify(list, null, 2) : formatTable(list))
  }).pipe(Shared.withConfigFile(config), Shared.exitOnUsage)).pipe(Command.withDescription("List the models of the configured service (GET /v1/models)."))
