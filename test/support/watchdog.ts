/**
 * A watchdog for the server's event loop: while a hostile request runs, it sends one cheap
 * request after another (`GET /watchdog`, answered 404 by the router) and records how long
 * each took. A server whose event loop is held answers none of them until it is free again,
 * so the longest wait is the longest stall. The bound a test asserts is generous (seconds, for
 * stalls the hostile inputs used to cause for minutes), not a speed figure.
 *
 * Each wait is measured twice: in wall time, and in the CPU time this process spent meanwhile
 * (`process.cpuUsage`, all its threads). A held event loop is the process computing: its CPU
 * time grows with the stall. A busy host (load 20-45 on 2 cores) stretches the wall time of
 * every wait, the process getting a small share of a core, but not its CPU time: tests assert
 * on `longestCpuMs`, which does not depend on what else the host runs.
 */
import { Effect, Fiber } from "effect"

/** What the watchdog saw. */
export interface Seen {
  /** Requests answered while it ran. */
  readonly answered: number
  /** The longest time one of them took, or the time since the last answer when it stopped (ms, wall). */
  readonly longestMs: number
  /** The most CPU time the process spent during one such wait (ms, user + system, all threads). */
  readonly longestCpuMs: number
}

/** The CPU time the process has spent so far (ms). */
const cpuMs = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** One watchdog request; resolves when answered (any status). */
const ping = (url: string): Promise<void> =>
  fetch(`${url}/watchdog`).then((r) => r.arrayBuffer()).then(() => undefined)

/**
 * Runs `effect` (the hostile request) with the watchdog pinging `url` meanwhile; returns its
 * result and what the watchdog saw. The watchdog is also asked once more afterwards, so the
 * server is known to be alive.
 */
export const watched = <A, E, R>(url: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    let answered = 0
    let longest = 0
    let longestCpu = 0
    let last = Date.now()
    let lastCpu = cpuMs()
    let stop = false
    const loop = Effect.promise(async () => {
      while (!stop) {
        const start = Date.now()
        const startCpu = cpuMs()
        await ping(url)
        const now = Date.now()
        const nowCpu = cpuMs()
        longest = Math.max(longest, now - start)
        longestCpu = Math.max(longestCpu, nowCpu - startCpu)
        last = now
        lastCpu = nowCpu
        answered++
        await new Promise((r) => setTimeout(r, 20))
      }
    })
    const fiber = yield* Effect.fork(loop)
    const result = yield* Effect.ensuring(effect, Effect.sync(() => (stop = true)))
    yield* Fiber.join(fiber)
    longest = Math.max(longest, Date.now() - last)
    longestCpu = Math.max(longestCpu, cpuMs() - lastCpu)
    yield* Effect.promise(() => ping(url))
    return { result, seen: { answered, longestMs: Math.round(longest), longestCpuMs: Math.round(longestCpu) } satisfies Seen }
  })
