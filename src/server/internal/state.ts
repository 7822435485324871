/**
 * Per-server state that routes share: the bound on uploads being extracted at once (work, not
 * bodies still arriving), the budget of upload bytes held in memory, the `Idempotency-Key`
 * replay of task-creating requests, and the lock under which a crawl or batch start counts
 * the running jobs. `Server.layer` provides it; the routes
 * look it up optionally, so `Server.app` also runs without it (no bound, no replay, the
 * default budget per request).
 */
import { Context, Deferred, Effect, Exit, Option } from "effect"
import { IdempotencyKey } from "../../api/ApiHttp.js"
import type { Budget } from "./form.js"
import { defaults } from "./limits.js"

/** A budget of `capacity` bytes. */
export const budget = (capacity: number): Budget => {
  let used = 0
  return {
    take: (n) => {
      if (used + n > capacity) return false
      used += n
      return true
    },
    give: (n) => {
      used = Math.max(0, used - n)
    }
  }
}

/** Options of the shared state. */
export interface Options {
  /**
   * Uploads extracted at once; more wait their turn (default 4). A body still arriving holds
   * no slot: an upload takes one once its whole form is in.
   */
  readonly maxConcurrentUploads?: number | undefined
  /** How long a task-creating answer is kept for replay (default 24 hours, in ms). */
  readonly idempotencyTtlMs?: number | undefined
  /** Most keys remembered; the oldest is forgotten first (default 10,000). */
  readonly idempotencyEntries?: number | undefined
}

/** The service. */
export interface Service {
  /** Runs an upload's extraction within the bound. */
  readonly upload: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The budget of upload bytes held in memory. */
  readonly uploadBytes: Budget
  /**
   * Runs a task-creating request once per `key` (scoped by `scope`, e.g. the endpoint): a
   * request with a key seen before gets the first answer again (waiting for it if it is still
   * being made) instead of creating a second task. A failed first attempt is forgotten, so a
   * retry runs again. The key is passed on to the remote calls the effect makes, so an upstream
   * deployment recognises the retry too. Without a key, the effect just runs.
   */
  readonly idempotent: <A, E, R>(
    scope: string,
    key: string | undefined,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /**
   * Runs a job start alone: no other start runs between its count of the running jobs and
   * its own job's start, so two starts never both take the last place.
   */
  readonly jobStart: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** The Tag. */
export class ServerState extends Context.Tag("effect-rag/server/ServerState")<ServerState, Service>() {}

/** Builds the state; `uploadBytesInFlight` is the upload byte budget (`limits.ts`). */
export const make = (options: Options = {}, uploadBytesInFlight = defaults.uploadBytesInFlight): Effect.Effect<Service> =>
  Effect.gen(function*() {
    const uploads = yield* Effect.makeSemaphore(Math.max(1, options.maxConcurrentUploads ?? 4))
    const starts = yield* Effect.makeSemaphore(1)
    const ttl = options.idempotencyTtlMs ?? 24 * 60 * 60 * 1000
    const capacity = Math.max(1, options.idempotencyEntries ?? 10_000)
    // insertion-ordered: the first entry is the oldest
    const entries = new Map<string, { readonly at: number; readonly answer: Deferred.Deferred<unknown, unknown> }>()

    const idempotent = <A, E, R>(scope: string, key: string | undefined, effect: Effect.Effect<A, E, R>) =>
      key === undefined || key === ""
        ? effect
        : Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            const id = `${scope}\u0000${key}`
            const now = Date.now()
            for (const [k, v] of entries) {
              if (now - v.at <= ttl && entries.size <= capacity) break
              entries.delete(k)
            }
            const seen = entries.get(id)
            if (seen !== undefined) return yield* restore(Deferred.await(seen.answer as Deferred.Deferred<A, E>))
            const answer = yield* Deferred.make<A, E>()
            entries.set(id, { at: now, answer: answer as Deferred.Deferred<unknown, unknown> })
            // an upstream behind a remote layer gets the client's key too (see ApiHttp.IdempotencyKey)
            const exit = yield* Effect.exit(restore(Effect.locally(effect, IdempotencyKey, Option.some(key))))
            if (Exit.isFailure(exit)) entries.delete(id)
            yield* Deferred.done(answer, exit)
            return yield* exit
          })
        )

    return {
      upload: uploads.withPermits(1),
      uploadBytes: budget(uploadBytesInFlight),
      idempotent,
      jobStart: starts.withPermits(1)
    }
  })

/** The state's upload bound, or none. */
export const upload = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.serviceOption(ServerState), (state) => Option.isSome(state) ? state.value.upload(effect) : effect)

/** The state's upload byte budget, or one of the default size for this request alone. */
export const uploadBytes: Effect.Effect<Budget> = Effect.map(
  Effect.serviceOption(ServerState),
  (state) => Option.isSome(state) ? state.value.uploadBytes : budget(defaults.uploadBytesInFlight)
)

/** The state's idempotent replay, or a plain run. */
export const idempotent = <A, E, R>(scope: string, key: string | undefined, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.serviceOption(ServerState),
    (state) => Option.isSome(state) ? state.value.idempotent(scope, key, effect) : effect
  )

/** The state's job start lock, or a plain run. */
export const jobStart = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.serviceOption(ServerState), (state) => Option.isSome(state) ? state.value.jobStart(effect) : effect)
