/**
 * The job-polling shape that `Music` and `Video` share: query a task's status on a `Schedule`
 * until it leaves "in progress", report each status to an optional `onProgress` callback, and
 * fail with `TaskFailed` `TimedOut` after `maxWait`.
 *
 * @since 0.1.0
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { TaskFailed } from "../../RagError.js"

/** The per-call timing options of a wait (each falls back to the layer's default). */
export interface Timing {
  readonly pollInterval?: Duration.DurationInput | undefined
  readonly maxWait?: Duration.DurationInput | undefined
}

/** A wait's interval and deadline: the call's options, else the layer's defaults. */
export const timing = (
  opts: Timing,
  defaults: { readonly interval: Duration.Duration; readonly maxWait: Duration.Duration }
): { readonly interval: Duration.Duration; readonly maxWait: Duration.Duration } => ({
  interval: opts.pollInterval === undefined ? defaults.interval : Duration.decode(opts.pollInterval),
  maxWait: opts.maxWait === undefined ? defaults.maxWait : Duration.decode(opts.maxWait)
})

/** What {@link untilDone} polls and how. */
export interface Polling<S extends { readonly status: string }, E, R> {
  /** `music`, `video`: named in the time-out message. */
  readonly kind: string
  /** The status endpoint (`GET /…`), named in the time-out error. */
  readonly endpoint: string
  readonly taskId: string
  /** One status query. */
  readonly status: Effect.Effect<S, E, R>
  /** Whether a status is terminal. */
  readonly done: (status: S) => boolean
  readonly interval: Duration.Duration
  readonly maxWait: Duration.Duration
  /** Waited before the first query (none when undefined: the first query runs at once). */
  readonly initialDelay?: Duration.Duration | undefined
  /** Called with every status, numbered from 1. */
  readonly onProgress?: ((progress: { readonly taskId: string; readonly status: string; readonly poll: number; readonly response: S }) => Effect.Effect<void>) | undefined
}

/**
 * Polls until a terminal status and returns it: the first query after `initialDelay`, the next
 * ones `interval` apart; `TaskFailed` `TimedOut` (the task may still complete) after `maxWait`.
 */
export const untilDone = <S extends { readonly status: string }, E, R>(polling: Polling<S, E, R>): Effect.Effect<S, E | TaskFailed, R> =>
  Effect.gen(function*() {
    const polls = yield* Ref.make(0)
    const { onProgress, taskId } = polling
    const once = polling.status.pipe(
      Effect.tap((response) =>
        Ref.updateAndGet(polls, (n) => n + 1).pipe(
          Effect.flatMap((poll) => onProgress === undefined ? Effect.void : onProgress({ taskId, status: response.status, poll, response }))
        )
      )
    )
    // `passthrough` makes the repetition return the last (terminal) status.
    const repeated = once.pipe(
      Effect.repeat({ schedule: Schedule.passthrough<number, S, never>(Schedule.spaced(polling.interval)), until: polling.done })
    )
    return yield* (polling.initialDelay === undefined ? repeated : Effect.zipRight(Effect.sleep(polling.initialDelay), repeated)).pipe(
      Effect.timeoutFail({
        duration: polling.maxWait,
        onTimeout: () =>
          new TaskFailed({
            endpoint: polling.endpoint,
            taskId,
            status: "TimedOut",
            message: `${polling.kind} task ${taskId} did not finish within ${Duration.format(polling.maxWait)}; ` +
              `it may still complete: wait for it again with its task id`
          })
      })
    )
  })
