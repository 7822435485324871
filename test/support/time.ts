/**
 * Time helpers for tests that mix real I/O (a loopback server) with the TestClock.
 */
import { Chunk, Clock, Effect, TestClock } from "effect"

/** A real (wall-clock) pause, usable under the TestClock too. */
export const realSleep = (ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

/** Waits (in real time, at most ~5 s) until `check` holds; dies with `what` otherwise. */
export const eventually = (check: () => boolean | Effect.Effect<boolean>, what: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let i = 0; i < 1000; i++) {
      const result = check()
      if (typeof result === "boolean" ? result : yield* result) return
      yield* realSleep(5)
    }
    return yield* Effect.die(new Error(`timed out waiting for: ${what}`))
  })

/** Whether a TestClock sleep ends exactly `ms` after the current test time. */
export const sleepPendingIn = (ms: number): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    return Chunk.toReadonlyArray(yield* TestClock.sleeps()).includes(now + ms)
  })
