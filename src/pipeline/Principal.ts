/**
 * Who a query runs for. `Answer.query`, `ask`, `askStream` and `askWithSearch` take the
 * principal from this service, so a program that forgets to provide one does not compile.
 *
 * - {@link unrestricted}: reads every chunk (trusted local use: the CLI's operator, scripts,
 *   benchmarks).
 * - {@link make} `(id, groups)`: reads only the chunks whose access list holds the id, one of
 *   the groups, or the public entry `*`. A chunk stored without an access list is not readable
 *   by a restricted principal.
 *
 * Ids and group names share one namespace (an access-list entry matches either); prefixes such
 * as `user:` and `group:` keep them apart when that matters.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { checkAccess, publicAccess, ReadScope } from "../store/VectorStore.js"

/**
 * A principal: unrestricted, or an id with its groups.
 *
 * @since 0.1.0
 * @category models
 */
export type Value =
  | { readonly _tag: "Unrestricted" }
  | { readonly _tag: "Restricted"; readonly id: string; readonly groups: ReadonlyArray<string> }

/**
 * The Tag: the principal a query runs for.
 *
 * @since 0.1.0
 * @category context
 */
export class Principal extends Context.Tag("effect-rag/pipeline/Principal")<Principal, Value>() {}

/**
 * The principal that reads every chunk.
 *
 * @since 0.1.0
 * @category utils
 */
export const unrestricted: Value = { _tag: "Unrestricted" }

/**
 * A restricted principal. Throws nothing: entries are checked when a read uses them (an
 * invalid one fails the read with `InvalidInput`); {@link check} tells in advance.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (id: string, groups: ReadonlyArray<string> = []): Value => ({ _tag: "Restricted", id, groups })

/**
 * A message when the id or a group is not a valid access-list entry, else undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const check = (p: Value): string | undefined => (p._tag === "Unrestricted" ? undefined : checkAccess([p.id, ...p.groups]))

/**
 * The store read scope of a principal: everything, or its id, its groups and the public entry.
 *
 * @since 0.1.0
 * @category utils
 */
export const scopeOf = (p: Value): ReadScope =>
  p._tag === "Unrestricted" ? ReadScope.all : ReadScope.entries([p.id, ...p.groups, publicAccess])

/**
 * A layer providing a principal.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (p: Value): Layer.Layer<Principal> => Layer.succeed(Principal, p)

/**
 * A layer providing {@link unrestricted}.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerUnrestricted: Layer.Layer<Principal> = layer(unrestricted)
