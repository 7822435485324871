/**
 * Music generation (asynchronous): submit a prompt, poll the task, use the returned audio URL.
 *
 * - `POST {baseUrl}/svc/submit/music` creates a task (sent with an `Idempotency-Key`, the same on
 *   every retry) and answers `{status: "success", data: {task_id, estimated_completion_time}}`.
 * - `GET {baseUrl}/svc/music/status/{task_id}` answers `queued`, `processing`, `completed` (with
 *   `data.audio_url` and `data.cover_image`) or `failed`; any other status is in progress.
 *
 * {@link Service.generate} polls first after `estimated_completion_time` (capped at 60 s by
 * default), then every 5 s.
 *
 * The service allows 50 active generations per API key. The client keeps that budget per key
 * (and host), shared by every layer built for it in the process: a submission (`submit`, or
 * `generate`'s) takes a place before it is sent, and the 51st waits for one to free instead
 * of being refused with a 429. A place frees when the submission fails, when `status`, `wait`
 * or `generate` sees the task `completed` or `failed`, when `generate` ends in any way
 * (interruption included), or when {@link Service.release} is called; a task that nobody polls
 * keeps its place until `maxWait` after its submission (checked at the next submission).
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Exit, Layer, Option, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"
import type * as RagError from "../RagError.js"
import { DecodeError, TaskFailed } from "../RagError.js"
import { ApiHttp, type Service as ApiHttpService } from "./ApiHttp.js"
import * as Job from "./internal/job.js"

// =============================================================================
// Schemas
// =============================================================================

/**
 * The submission body, encoded exactly; omitted fields take the service's defaults (`mv` v5).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MusicRequest = Schema.Struct({
  /** Description of the music. */
  prompt: Schema.String,
  /** Comma-separated genre tags. */
  tags: Schema.optional(Schema.String),
  /** Track title. */
  title: Schema.optional(Schema.String),
  /** Model version (the service's default is `v5`). */
  mv: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type MusicRequest = typeof MusicRequest.Type

/** An error detail some responses carry: a text or `{message}`. */
const ErrorDetail = Schema.Union(Schema.String, Schema.Struct({ message: Schema.optional(Schema.String) }))

/**
 * The `data` of a submission response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MusicSubmitData = Schema.Struct({
  task_id: Schema.optional(Schema.String),
  /** Seconds until the track should be ready. */
  estimated_completion_time: Schema.optional(Schema.Number)
})
/**
 * @since 0.1.0
 * @category models
 */
export type MusicSubmitData = typeof MusicSubmitData.Type

/**
 * The submission response, decoded tolerantly (a refused submission may carry no task).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MusicSubmitResponse = Schema.Struct({
  status: Schema.optional(Schema.String),
  data: Schema.optional(MusicSubmitData),
  message: Schema.optional(Schema.String),
  error: Schema.optional(ErrorDetail)
})
/**
 * @since 0.1.0
 * @category models
 */
export type MusicSubmitResponse = typeof MusicSubmitResponse.Type

/**
 * A submission the service accepted: it has a task id.
 *
 * @since 0.1.0
 * @category models
 */
export type MusicSubmitted = MusicSubmitResponse & {
  readonly data: MusicSubmitData & { readonly task_id: string }
}

/**
 * The `data` of a status response; `audio_url` and `cover_image` are set once `completed`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MusicTrack = Schema.Struct({
  task_id: Schema.optional(Schema.String),
  /** Absolute URL of the audio, on the storage host. */
  audio_url: Schema.optional(Schema.String),
  /** Absolute URL of the cover image. */
  cover_image: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  tags: Schema.optional(Schema.String),
  error: Schema.optional(ErrorDetail)
})
/**
 * @since 0.1.0
 * @category models
 */
export type MusicTrack = typeof MusicTrack.Type

/**
 * The status response, decoded tolerantly: only `status` is required.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MusicStatusResponse = Schema.Struct({
  /** `queued`, `processing`, `completed` or `failed`. */
  status: Schema.String,
  data: Schema.optional(MusicTrack),
  message: Schema.optional(Schema.String),
  error: Schema.optional(ErrorDetail)
})
/**
 * @since 0.1.0
 * @category models
 */
export type MusicStatusResponse = typeof MusicStatusResponse.Type

// =============================================================================
// Service
// =============================================================================

/**
 * One status report of {@link WaitOptions.onProgress}.
 *
 * @since 0.1.0
 * @category models
 */
export interface MusicProgress {
  readonly taskId: string
  /** The status as the service wrote it (`queued`, `processing`, `completed`, …). */
  readonly status: string
  /** 1 for the first status query of this wait, then 2, 3, … */
  readonly poll: number
  /** The whole status response. */
  readonly response: MusicStatusResponse
}

/**
 * Options of {@link Service.wait}; the defaults come from {@link RemoteOptions}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Time before the first status query (default 0). */
  readonly initialDelay?: Duration.DurationInput | undefined
  /** Time between two status queries after the first (default 5 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /**
   * How long to wait (initial delay included) before giving up with `TaskFailed` (status
   * `TimedOut`; default 30 minutes). The task may still finish: wait for it again by its id.
   */
  readonly maxWait?: Duration.DurationInput | undefined
  /**
   * Called with every status the service reports, the terminal one included, before the next
   * query is scheduled. It runs on the polling fiber, so a slow callback delays the next poll.
   */
  readonly onProgress?: ((progress: MusicProgress) => Effect.Effect<void>) | undefined
}

/**
 * Options of {@link Service.generate}. The first poll comes `estimated_completion_time` after
 * the submission, at most `maxFirstPollDelay` (default 60 s); without an estimate it comes after
 * one `pollInterval`.
 *
 * @since 0.1.0
 * @category models
 */
export interface GenerateOptions extends Omit<WaitOptions, "initialDelay"> {
  readonly maxFirstPollDelay?: Duration.DurationInput | undefined
}

/**
 * The result of a completed task.
 *
 * @since 0.1.0
 * @category models
 */
export interface MusicResult {
  readonly taskId: string
  /** Absolute URL of the generated audio. */
  readonly audioUrl: string
  /** Absolute URL of the cover image, when the service sent one. */
  readonly coverImage: string | undefined
  /** The whole `data` of the `completed` status response. */
  readonly data: MusicTrack
}

/**
 * The music generation service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** How many generations of this key may be in flight at once (default 50). */
  readonly maxInFlight: number
  /**
   * Submits a task (with an `Idempotency-Key`) once a place in the key's budget is free (see the
   * module notes): the task holds it until `status` or `wait` sees it finish, or
   * {@link Service.release}. Fails with
   * `TaskFailed` when the service answers without a task id and a `status` other than
   * `success`, `DecodeError` when it answers `success` without a task id, `InvalidRequest` for
   * a body that does not encode, and the `ApiError` of the HTTP call otherwise.
   */
  readonly submit: (request: MusicRequest) => Effect.Effect<MusicSubmitted, RagError.ApiError | TaskFailed>
  /**
   * Frees the budget place of a task submitted with {@link Service.submit} (for a task the
   * caller stops following); no effect for a task that holds none.
   */
  readonly release: (taskId: string) => Effect.Effect<void>
  /** Queries a task's status once; a `failed` status is a successful query (see {@link wait}). */
  readonly status: (taskId: string) => Effect.Effect<MusicStatusResponse, RagError.ApiError>
  /**
   * Polls an existing task until `completed` or `failed` (see {@link WaitOptions}). Fails with
   * `TaskFailed` on `failed` (status `failed`) or after `maxWait` (status `TimedOut`), with
   * `DecodeError` when `completed` comes without `data.audio_url`.
   */
  readonly wait: (taskId: string, options?: WaitOptions) => Effect.Effect<MusicResult, RagError.ApiError | TaskFailed>
  /**
   * Submits and waits, holding one place of the key's budget throughout: when all are taken,
   * the call waits before sending anything. Interrupting it frees its place. The errors of
   * {@link submit} and {@link wait}.
   */
  readonly generate: (
    request: MusicRequest,
    options?: GenerateOptions
  ) => Effect.Effect<MusicResult, RagError.ApiError | TaskFailed>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Music extends Context.Tag("effect-rag/api/Music")<Music, Service>() {}

/**
 * Where a status stands: `completed` and `failed` are terminal, anything else is in progress.
 *
 * @since 0.1.0
 * @category utils
 */
export const phaseOf = (status: string): "succeeded" | "failed" | "in_progress" => {
  const s = status.toLowerCase()
  return s === "completed" ? "succeeded" : s === "failed" ? "failed" : "in_progress"
}

const errorText = (
  ...sources: ReadonlyArray<typeof ErrorDetail.Type | undefined>
): string | undefined => {
  for (const e of sources) {
    if (typeof e === "string" && e !== "") return e
    if (typeof e === "object" && e.message !== undefined && e.message !== "") return e.message
  }
  return undefined
}

// =============================================================================
// Remote layer
// =============================================================================

const submitEndpoint = "POST /svc/submit/music"
const statusEndpoint = "GET /svc/music/status/{task_id}"

/**
 * Options of the remote layer: the in-flight limit and the polling defaults.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteOptions {
  /**
   * Generations in flight at once (default 50, the service's limit per key). Layers for the
   * same key and the same limit share one budget.
   */
  readonly maxInFlight?: number | undefined
  /** Time between two status queries (default 5 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** Upper bound of the wait before the first status query (default 60 s). */
  readonly maxFirstPollDelay?: Duration.DurationInput | undefined
  /** How long to wait for a task before failing with `TaskFailed` `TimedOut` (default 30 minutes). */
  readonly maxWait?: Duration.DurationInput | undefined
}

// =============================================================================
// The per-key budget of active generations
// =============================================================================

/** The active generations of one key: a semaphore of places and the tasks holding one. */
interface Budget {
  readonly places: Effect.Semaphore
  /** Task id → submission time (ms) of the tasks holding a place. */
  readonly active: Map<string, number>
}

/**
 * One budget per (host, key, limit) in the process, shared by every layer built for that key.
 * The key is hashed: no secret is kept as a map key.
 */
const budgets = new Map<string, Budget>()

const budgetFor = (baseUrl: string, apiKey: Option.Option<Redacted.Redacted<string>>, limit: number): Budget => {
  const id = createHash("sha256")
    .update(`${baseUrl}\u0000${Option.match(apiKey, { onNone: () => "", onSome: Redacted.value })}\u0000${limit}`)
    .digest("hex")
  let budget = budgets.get(id)
  if (budget === undefined) {
    budget = { places: Effect.unsafeMakeSemaphore(limit), active: new Map() }
    budgets.set(id, budget)
  }
  return budget
}

/** Frees a task's place when it holds one. */
const releaseIn = (budget: Budget, taskId: string): Effect.Effect<void> =>
  Effect.suspend(() => (budget.active.delete(taskId) ? budget.places.release(1) : Effect.void)).pipe(Effect.asVoid)

/** Frees the places of tasks submitted more than `maxWait` ago that nobody saw finish. */
const expireIn = (budget: Budget, maxWait: Duration.Duration): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const stale = [...budget.active].filter(([, at]) => now - at > Duration.toMillis(maxWait))
    return Effect.forEach(stale, ([taskId]) => releaseIn(budget, taskId), { discard: true })
  })

/**
 * Runs a submission holding a place of the budget: takes one before sending, keeps it for the
 * task, or gives it back when no task came of it.
 */
const withPlace = <E>(
  budget: Budget,
  maxWait: Duration.Duration,
  send: Effect.Effect<MusicSubmitted, E>
): Effect.Effect<MusicSubmitted, E> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.zipRight(
      expireIn(budget, maxWait),
      restore(budget.places.take(1)).pipe(
        Effect.zipRight(
          restore(send).pipe(
            Effect.onExit((exit): Effect.Effect<void> =>
              // a replayed submission (same task) already holds a place: give this one back
              Exit.isSuccess(exit) && !budget.active.has(exit.value.data.task_id)
                ? Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => void budget.active.set(exit.value.data.task_id, now)))
                : Effect.asVoid(budget.places.release(1))
            )
          )
        )
      )
    )
  )

/** The accepted submission: a task id, else a refusal (`TaskFailed`) or a `DecodeError`. */
const acceptSubmission = (
  http: ApiHttpService,
  response: MusicSubmitResponse
): Effect.Effect<MusicSubmitted, TaskFailed | DecodeError> => {
  const taskId = response.data?.task_id
  if (taskId !== undefined && taskId !== "") {
    return Effect.succeed({ ...response, data: { ...response.data, task_id: taskId } })
  }
  const status = response.status ?? "unknown"
  if (status.toLowerCase() !== "success") {
    const detail = errorText(response.error, response.message) ?? "no task_id"
    return Effect.fail(
      new TaskFailed({
        endpoint: submitEndpoint,
        status,
        message: `${submitEndpoint} refused the task (status ${status}): ${http.scrub(detail)}`
      })
    )
  }
  return Effect.fail(
    new DecodeError({
      endpoint: submitEndpoint,
      path: "data.task_id",
      message: `${submitEndpoint} answered success but returned no data.task_id`
    })
  )
}

/** The music job family: submit, status, and how a terminal status reads. */
const family: Job.Family<
  MusicRequest,
  typeof MusicRequest.Encoded,
  MusicSubmitResponse,
  typeof MusicSubmitResponse.Encoded,
  MusicSubmitted,
  MusicStatusResponse,
  typeof MusicStatusResponse.Encoded,
  MusicStatusResponse,
  never,
  MusicResult
> = {
  kind: "music",
  name: "Music",
  submit: { endpoint: submitEndpoint, path: "/svc/submit/music", request: MusicRequest, response: MusicSubmitResponse, accept: acceptSubmission },
  status: {
    endpoint: statusEndpoint,
    span: "Music.status",
    call: (taskId) => ({ path: `/svc/music/status/${encodeURIComponent(taskId)}` }),
    response: MusicStatusResponse,
    accept: (_http, _taskId, response) => Effect.succeed(response)
  },
  phaseOf,
  reason: (last) => errorText(last.data?.error, last.error, last.message),
  noReason: () => "",
  result: (taskId, last) => {
    const data = last.data
    return data?.audio_url === undefined || data.audio_url === ""
      ? undefined
      : { taskId, audioUrl: data.audio_url, coverImage: data.cover_image, data }
  },
  missing: { path: "data.audio_url", what: "completed without data.audio_url" }
}

/** When `generate` polls first: after the estimate (at most `cap`), else after one interval. */
const firstPollDelay = (
  estimate: number | undefined,
  cap: Duration.Duration,
  interval: Duration.Duration
): Duration.Duration =>
  estimate !== undefined && Number.isFinite(estimate) && estimate >= 0
    ? Duration.min(Duration.millis(estimate * 1000), cap)
    : interval

/**
 * Builds the remote service on {@link ApiHttp}; joins the budget of its key (see module notes).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: RemoteOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* ApiHttp
    const maxInFlight = Math.max(1, Math.floor(options.maxInFlight ?? 50))
    const budget = budgetFor(http.settings.baseUrl, http.settings.apiKey, maxInFlight)
    const defaultInterval = Duration.decode(options.pollInterval ?? "5 seconds")
    const defaultFirstPollCap = Duration.decode(options.maxFirstPollDelay ?? "60 seconds")
    const defaultMaxWait = Duration.decode(options.maxWait ?? "30 minutes")
    const release = (taskId: string) => releaseIn(budget, taskId)
    const jobs = Job.make(http, family, {
      interval: defaultInterval,
      maxWait: defaultMaxWait,
      // a task seen `completed` or `failed` gives its place back
      onStatus: (taskId, response) => (phaseOf(response.status) === "in_progress" ? Effect.void : release(taskId))
    })

    const submit = (request: MusicRequest) =>
      withPlace(budget, defaultMaxWait, jobs.submit(request)).pipe(Effect.withSpan("Music.submit"))

    const wait = (taskId: string, opts: WaitOptions = {}) =>
      jobs.wait(taskId, { ...opts, initialDelay: opts.initialDelay ?? Duration.zero })

    const generate = (
      request: MusicRequest,
      opts: GenerateOptions = {}
    ): Effect.Effect<MusicResult, RagError.ApiError | TaskFailed> =>
      Effect.gen(function*() {
        const submitted = yield* submit(request)
        yield* Effect.addFinalizer(() => release(submitted.data.task_id))
        const interval = opts.pollInterval === undefined ? defaultInterval : Duration.decode(opts.pollInterval)
        const cap = opts.maxFirstPollDelay === undefined ? defaultFirstPollCap : Duration.decode(opts.maxFirstPollDelay)
        const initialDelay = firstPollDelay(submitted.data.estimated_completion_time, cap, interval)
        return yield* wait(submitted.data.task_id, { ...opts, initialDelay })
      }).pipe(
        // The place taken by `submit` is held until polling ends (success, failure or
        // interruption): the 51st call queues in `submit` without sending anything.
        Effect.scoped,
        Effect.withSpan("Music.generate")
      )

    return Music.of({ maxInFlight, submit, release, status: jobs.status, wait, generate })
  })

/**
 * The remote layer (needs {@link ApiHttp}); layers for the same key share one budget.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RemoteOptions = {}): Layer.Layer<Music, never, ApiHttp> =>
  Layer.effect(Music, make(options))
