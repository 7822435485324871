/**
 * Who is calling the server: the API keys it knows, each mapped to a principal and to the
 * collections it may read or write, and the {@link Caller} a request runs as.
 *
 * - No key configured: the server is open; every request runs as the local operator
 *   (unrestricted, every collection).
 * - `EFFECT_RAG_SERVER_KEY` (`Options.apiKey`): the operator key, as before keys files:
 *   unrestricted, every collection.
 * - A keys file (`Options.keys`): each key reads only the collections it lists, as its principal;
 *   a key that lists none reads none (deny by default). Any known key may use the service API
 *   (embeddings, rerank, upload, web, models).
 *
 * Keys are `Redacted` from the moment they are read; comparisons are constant-time and every
 * known key is compared, so the time does not tell which one matched.
 */
import { Context, Effect, Redacted, Schema } from "effect"
import { timingSafeEqual } from "node:crypto"
import * as Principal from "../../pipeline/Principal.js"

/** One API key of a keys file. */
export interface KeyGrant {
  readonly key: Redacted.Redacted<string>
  /** The principal its queries run as. */
  readonly principal: Principal.Value
  /** Collection names it may read (`*`: every collection). */
  readonly read: ReadonlyArray<string>
  /** Collection names it may write (`*`: every collection). */
  readonly write: ReadonlyArray<string>
}

/** The caller of a request. */
export interface Caller {
  readonly principal: Principal.Value
  readonly canRead: (collection: string) => boolean
  readonly canWrite: (collection: string) => boolean
}

/** The Tag of the request's caller (provided by the server's key check). */
export class CallerTag extends Context.Tag("effect-rag/server/Caller")<CallerTag, Caller>() {}

/** The caller of an open server or of the operator key: unrestricted, every collection. */
export const operator: Caller = { principal: Principal.unrestricted, canRead: () => true, canWrite: () => true }

/**
 * The caller of a request that needs no key (the playground's page assets, which hold no
 * data): it may read and write nothing.
 */
export const anonymous: Caller = { principal: Principal.make("anonymous"), canRead: () => false, canWrite: () => false }

const grants = (names: ReadonlyArray<string>) => (collection: string) => names.includes("*") || names.includes(collection)

/** The caller of a key grant. */
export const callerOf = (grant: KeyGrant): Caller => ({
  principal: grant.principal,
  canRead: grants(grant.read),
  canWrite: grants(grant.write)
})

const sameKey = (given: Buffer, expected: string): boolean => {
  const b = Buffer.from(expected)
  return given.length === b.length && timingSafeEqual(given, b)
}

/**
 * The caller a bearer key authenticates as, or undefined (unknown key). Every configured key is
 * compared (constant time each), whichever matches.
 */
export const authenticate = (
  given: string,
  apiKey: Redacted.Redacted<string> | undefined,
  keys: ReadonlyArray<KeyGrant>
): Caller | undefined => {
  const g = Buffer.from(given)
  let found: Caller | undefined
  if (apiKey !== undefined && sameKey(g, Redacted.value(apiKey))) found = operator
  for (const k of keys) {
    if (sameKey(g, Redacted.value(k.key)) && found === undefined) found = callerOf(k)
  }
  return found
}

// =============================================================================
// Keys file
// =============================================================================

const Names = Schema.Array(Schema.String.pipe(Schema.pattern(/^(\*|[A-Za-z0-9_-]{1,64})$/)))

const KeyEntry = Schema.Struct({
  key: Schema.String.pipe(Schema.minLength(16), Schema.maxLength(512), Schema.pattern(/^[\x21-\x7e]+$/)),
  principal: Schema.Union(
    Schema.Literal("unrestricted"),
    Schema.Struct({ id: Schema.String, groups: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }) })
  ),
  read: Schema.optionalWith(Names, { default: () => [] }),
  write: Schema.optionalWith(Names, { default: () => [] })
})

/** The keys file: `{ "keys": [{ "key", "principal", "read", "write" }] }` (see `docs/server.md`). */
export const KeysFile = Schema.Struct({ keys: Schema.Array(KeyEntry) })

/**
 * Parses a keys file's text. The message of a failure never holds a key: it names the entry by
 * its index.
 */
export const parseKeys = (text: string): Effect.Effect<ReadonlyArray<KeyGrant>, string> =>
  Effect.gen(function*() {
    const json = yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: () => "the keys file is not JSON" })
    const raw = json as { keys?: ReadonlyArray<unknown> } | null
    if (typeof raw !== "object" || raw === null || !Array.isArray(raw.keys)) {
      return yield* Effect.fail("the keys file must be a JSON object with a \"keys\" array")
    }
    const out: Array<KeyGrant> = []
    const seen = new Set<string>()
    for (const [i, entry] of raw.keys.entries()) {
      const decoded = yield* Schema.decodeUnknown(KeyEntry)(entry).pipe(
        // the decode message could quote the key: name the entry and the fields instead
        Effect.mapError(() =>
          `keys[${i}]: expected { key: 16 to 512 printable ASCII characters, principal: "unrestricted" | { id, groups? }, read?: [names], write?: [names] }`
        )
      )
      if (seen.has(decoded.key)) return yield* Effect.fail(`keys[${i}]: the same key is listed twice`)
      seen.add(decoded.key)
      const principal = decoded.principal === "unrestricted"
        ? Principal.unrestricted
        : Principal.make(decoded.principal.id, decoded.principal.groups)
      const problem = Principal.check(principal)
      if (problem !== undefined) return yield* Effect.fail(`keys[${i}].principal: ${problem}`)
      out.push({ key: Redacted.make(decoded.key), principal, read: decoded.read, write: decoded.write })
    }
    return out
  })
