/**
 * The crawl job store: a status batch is one moment's view. A page that becomes visible while
 * a batch is being read back from the spill file belongs to the next request; the batch read
 * before it does not grow a `next` for it (a finished job was seen "completed" with part of its
 * pages and a `next`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { makeStore } from "../../../src/engines/web/internal/jobs.js"

const page = (n: number) => ({ markdown: `page ${n}`, metadata: { sourceURL: `http://x.test/${n}`, statusCode: 200 } })

describe("crawl job store", () => {
  it.scoped("a page written while a batch is read back is not in that batch's next", () =>
    Effect.gen(function*() {
      const store = yield* makeStore({ dir: undefined, pageSize: 100, pageBytes: 1 << 20 })
      const job = yield* store.create("http://x.test/", Date.now() + 60_000)
      store.reserve(job, 2)
      yield* store.record(job, page(0) as never, 0)
      expect(job.ready).toBe(1)
      // the second page lands while the first batch is being read (its file open and read are I/O)
      const started = yield* Deferred.make<void>()
      const reading = yield* Effect.fork(Effect.zipRight(Deferred.succeed(started, undefined), store.read(job, 0)))
      yield* Deferred.await(started)
      yield* store.record(job, page(1) as never, 1)
      expect(job.ready).toBe(2)
      const first = yield* Fiber.join(reading)
      expect(first.pages.map((p) => p.markdown)).toEqual(["page 0"])
      expect(first.next).toBeUndefined()
      // the next request sees both
      const again = yield* store.read(job, 0)
      expect(again.pages.map((p) => p.markdown)).toEqual(["page 0", "page 1"])
      expect(again.next).toBeUndefined()
    }))
})
