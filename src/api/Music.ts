/**
 * Music generation (asynchronous): submit a prompt, poll the task, use the returned audio URL.
 *
 * - `POST {baseUrl}/svc/submit/music` creates a task (sent with an `Idempotency-Key`, the same on
 *   every retry) and answers `{status: "success", data: {task_id, estimated_completion_time}}`.
 * - `GET {baseUrl}/svc/music/status/{task_id}` answers `queued`, `processing`, `completed` (with
 *   `data.audio_url` and `data.cover_image`) or `failed`; any other status is in progress.
 *
 * {@link Service.generate} polls first after `estimated_completion_time` (capped at 60 s by
 * default), then every 5 s. The service allows 50 generations of one API key at once: each
 * service instance (one per layer, i.e. per key) holds a semaphore of 50 permits created once
 * in {@link make}, and every `generate` holds one permit from before its submission until it
 * has finished polling. The 51st call waits for a permit and is not sent until one frees.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Ref, Schedule, Schema } from "effect"
import type * as RagError from "../RagError.js"
import { DecodeError, TaskFailed } from "../RagError.js"
import { ApiHttp } from "./internal/ApiHttp.js"

// =============================================================================
// Schemas
// =============================================================================

/** The submission body, encoded exactly; omitted fields take the service's defaults (`mv` v5). */
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
export type MusicRequest = typeof MusicRequest.Type

/** An error detail some responses carry: a text or `{message}`. */
const ErrorDetail = Schema.Union(Schema.String, Schema.Struct({ message: Schema.optional(Schema.String) }))

/** The `data` of a submission response. */
export const MusicSubmitData = Schema.Struct({
  task_id: Schema.optional(Schema.String),
  /** Seconds until the track should be ready. */
  estimated_completion_time: Schema.optional(Schema.Number)
})
export type MusicSubmitData = typeof MusicSubmitData.Type

/** The submission response, decoded tolerantly (a refused submission may carry no task). */
export const MusicSubmitResponse = Schema.Struct({
  status: Schema.optional(Schema.String),
  data: Schema.optional(MusicSubmitData),
  message: Schema.optional(Schema.String),
  error: Schema.optional(ErrorDetail)
})
export type MusicSubmitResponse = typeof MusicSubmitResponse.Type

/** A submission the service accepted: it has a task id. */
export type MusicSubmitted = MusicSubmitResponse & {
  readonly data: MusicSubmitData & { readonly task_id: string }
}

/** The `data` of a status response; `audio_url` and `cover_image` are set once `completed`. */
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
export type MusicTrack = typeof MusicTrack.Type

/** The status response, decoded tolerantly: only `status` is required. */
export const MusicStatusResponse = Schema.Struct({
  /** `queued`, `processing`, `completed` or `failed`. */
  status: Schema.String,
  data: Schema.optional(MusicTrack),
  message: Schema.optional(Schema.String),
  error: Schema.optional(ErrorDetail)
})
export type MusicStatusResponse = typeof MusicStatusResponse.Type

// =============================================================================
// Service
// =============================================================================

/** One status report of {@link WaitOptions.onProgress}. */
export interface MusicProgress {
  readonly taskId: string
  /** The status as the service wrote it (`queued`, `processing`, `completed`, …). */
  readonly status: string
  /** 1 for the first status query of this wait, then 2, 3, … */
  readonly poll: number
  /** The whole status response. */
  readonly response: MusicStatusResponse
}

/** Options of {@link Service.wait}; the defaults come from {@link RemoteOptions}. */
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
 */
export interface GenerateOptions extends Omit<WaitOptions, "initialDelay"> {
  readonly maxFirstPollDelay?: Duration.DurationInput | undefined
}

/** The result of a completed task. */
export interface MusicResult {
  readonly taskId: string
  /** Absolute URL of the generated audio. */
  readonly audioUrl: string
  /** Absolute URL of the cover image, when the service sent one. */
  readonly coverImage: string | undefined
  /** The whole `data` of the `completed` status response. */
  readonly data: MusicTrack
}

/** The music generation service. */
export interface Service {
  /** How many generations of this service may be in flight at once (default 50). */
  readonly maxInFlight: number
  /**
   * Submits a task (with an `Idempotency-Key`), outside the in-flight limit: callers that use
   * it directly must keep within the service's 50 active generations themselves. Fails with
   * `TaskFailed` when the service answers without a task id and a `status` other than
   * `success`, `DecodeError` when it answers `success` without a task id, `InvalidRequest` for
   * a body that does not encode, and the `ApiError` of the HTTP call otherwise.
   */
  readonly submit: (request: MusicRequest) => Effect.Effect<MusicSubmitted, RagError.ApiError | TaskFailed>
  /** Queries a task's status once; a `failed` status is a successful query (see {@link wait}). */
  readonly status: (taskId: string) => Effect.Effect<MusicStatusResponse, RagError.ApiError>
  /**
   * Polls an existing task until `completed` or `failed` (see {@link WaitOptions}). Fails with
   * `TaskFailed` on `failed` (status `failed`) or after `maxWait` (status `TimedOut`), with
   * `DecodeError` when `completed` comes without `data.audio_url`.
   */
  readonly wait: (taskId: string, options?: WaitOptions) => Effect.Effect<MusicResult, RagError.ApiError | TaskFailed>
  /**
   * Submits and waits, holding one of the `maxInFlight` permits throughout: when all are
   * taken, the call waits before sending anything. Interrupting it frees its permit. The
   * errors of {@link submit} and {@link wait}.
   */
  readonly generate: (
    request: MusicRequest,
    options?: GenerateOptions
  ) => Effect.Effect<MusicResult, RagError.ApiError | TaskFailed>
}

/** The Tag. */
export class Music extends Context.Tag("effect-rag/api/Music")<Music, Service>() {}

/** Where a status stands: `completed` and `failed` are terminal, anything else is in progress. */
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

/** Options of the remote layer: the in-flight limit and the polling defaults. */
export interface RemoteOptions {
  /** Generations in flight at once (default 50, the service's limit per key). */
  readonly maxInFlight?: number | undefined
  /** Time between two status queries (default 5 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** Upper bound of the wait before the first status query (default 60 s). */
  readonly maxFirstPollDelay?: Duration.DurationInput | undefined
  /** How long to wait for a task before failing with `TaskFailed` `TimedOut` (default 30 minutes). */
  readonly maxWait?: Duration.DurationInput | undefined
}

/** Builds the remote service on {@link ApiHttp}; creates the in-flight semaphore once. */
export const make = (options: RemoteOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* ApiHttp
    const maxInFlight = Math.max(1, Math.floor(options.maxInFlight ?? 50))
    const inFlight = yield* Effect.makeSemaphore(maxInFlight)
    const defaultInterval = Duration.decode(options.pollInterval ?? "5 seconds")
    const defaultFirstPollCap = Duration.decode(options.maxFirstPollDelay ?? "60 seconds")
    const defaultMaxWait = Duration.decode(options.maxWait ?? "30 minutes")

    const submit = Effect.fn("Music.submit")(function*(request: MusicRequest) {
      const body = yield* http.encode(submitEndpoint, MusicRequest, request)
      const response = yield* http.json(
        {
          endpoint: submitEndpoint,
          method: "POST",
          host: "base",
          path: "/svc/submit/music",
          body: { _tag: "Json", value: body },
          idempotent: true
        },
        MusicSubmitResponse
      )
      const taskId = response.data?.task_id
      if (taskId === undefined || taskId === "") {
        const status = response.status ?? "unknown"
        if (status.toLowerCase() !== "success") {
          const detail = errorText(response.error, response.message) ?? "no task_id"
          return yield* new TaskFailed({
            endpoint: submitEndpoint,
            status,
            message: `${submitEndpoint} refused the task (status ${status}): ${http.scrub(detail)}`
          })
        }
        return yield* new DecodeError({
          endpoint: submitEndpoint,
          path: "data.task_id",
          message: `${submitEndpoint} answered success but returned no data.task_id`
        })
      }
      return { ...response, data: { ...response.data, task_id: taskId } } satisfies MusicSubmitted
    })

    const status = (taskId: string): Effect.Effect<MusicStatusResponse, RagError.ApiError> =>
      http.json(
        {
          endpoint: statusEndpoint,
          method: "GET",
          host: "base",
          path: `/svc/music/status/${encodeURIComponent(taskId)}`
        },
        MusicStatusResponse
      ).pipe(Effect.withSpan("Music.status", { attributes: { taskId } }))

    const wait = (taskId: string, opts: WaitOptions = {}): Effect.Effect<MusicResult, RagError.ApiError | TaskFailed> =>
      Effect.gen(function*() {
        const interval = opts.pollInterval === undefined ? defaultInterval : Duration.decode(opts.pollInterval)
        const maxWait = opts.maxWait === undefined ? defaultMaxWait : Duration.decode(opts.maxWait)
        const initialDelay = Duration.decode(opts.initialDelay ?? Duration.zero)
        const polls = yield* Ref.make(0)
        const onProgress = opts.onProgress
        const once = status(taskId).pipe(
          Effect.tap((response) =>
            Ref.updateAndGet(polls, (n) => n + 1).pipe(
              Effect.flatMap((poll) =>
                onProgress === undefined ? Effect.void : onProgress({ taskId, status: response.status, poll, response })
              )
            )
          )
        )
        const last = yield* Effect.sleep(initialDelay).pipe(
          Effect.zipRight(
            once.pipe(
              // `passthrough` makes the repetition return the last (terminal) status.
              Effect.repeat({
                schedule: Schedule.passthrough<number, MusicStatusResponse, never>(Schedule.spaced(interval)),
                until: (response) => phaseOf(response.status) !== "in_progress"
              })
            )
          ),
          Effect.timeoutFail({
            duration: maxWait,
            onTimeout: () =>
              new TaskFailed({
                endpoint: statusEndpoint,
                taskId,
                status: "TimedOut",
                message: `music task ${taskId} did not finish within ${Duration.format(maxWait)}; ` +
                  `it may still complete: wait for it again with its task id`
              })
          })
        )
        if (phaseOf(last.status) === "failed") {
          const detail = errorText(last.data?.error, last.error, last.message)
          return yield* new TaskFailed({
            endpoint: statusEndpoint,
            taskId,
            status: last.status,
            message: `music task ${taskId} failed` + (detail === undefined ? "" : `: ${http.scrub(detail)}`)
          })
        }
        const data = last.data
        if (data?.audio_url === undefined || data.audio_url === "") {
          return yield* new DecodeError({
            endpoint: statusEndpoint,
            path: "data.audio_url",
            message: `${statusEndpoint}: task ${taskId} completed without data.audio_url`
          })
        }
        return { taskId, audioUrl: data.audio_url, coverImage: data.cover_image, data } satisfies MusicResult
      }).pipe(Effect.withSpan("Music.wait", { attributes: { taskId } }))

    const generate = (
      request: MusicRequest,
      opts: GenerateOptions = {}
    ): Effect.Effect<MusicResult, RagError.ApiError | TaskFailed> =>
      Effect.gen(function*() {
        const submitted = yield* submit(request)
        const interval = opts.pollInterval === undefined ? defaultInterval : Duration.decode(opts.pollInterval)
        const cap = opts.maxFirstPollDelay === undefined ? defaultFirstPollCap : Duration.decode(opts.maxFirstPollDelay)
        const estimate = submitted.data.estimated_completion_time
        const initialDelay = estimate !== undefined && Number.isFinite(estimate) && estimate >= 0
          ? Duration.min(Duration.millis(estimate * 1000), cap)
          : interval
        return yield* wait(submitted.data.task_id, { ...opts, initialDelay })
      }).pipe(
        // One permit from before the submission until polling ends (success, failure or
        // interruption): the 51st call queues here without sending anything.
        inFlight.withPermits(1),
        Effect.withSpan("Music.generate")
      )

    return Music.of({ maxInFlight, submit, status, wait, generate })
  })

/** The remote layer (needs {@link ApiHttp}); one in-flight limit per layer instance. */
export const layer = (options: RemoteOptions = {}): Layer.Layer<Music, never, ApiHttp> =>
  Layer.effect(Music, make(options))
