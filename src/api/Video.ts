/**
 * Video generation (MiniMax-style, asynchronous): submit a task, poll its status, retrieve the
 * file.
 *
 * - `POST {baseUrl}/v1/video_generation` creates a task (sent with an `Idempotency-Key`, the same
 *   on every retry, so a retried submission never creates a second task).
 * - `GET {baseUrl}/v1/query/video_generation?task_id=` reports its status: `Queueing`,
 *   `Preparing`, `Processing` (in progress), `Success` (with `file_id`) or `Fail`. Any other
 *   value is treated as in progress.
 * - `GET {baseUrl}/v1/files/retrieve?file_id=` gives the file's `download_url`.
 *
 * A non-zero `base_resp.status_code` in any of these responses fails with `TaskFailed`
 * carrying `status_msg`. {@link Service.generate} runs the whole flow: submit, poll on a
 * `Schedule` (every 10 s by default), report each status to an optional `onProgress` callback,
 * retrieve the file.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Schema } from "effect"
import type * as RagError from "../RagError.js"
import { DecodeError, TaskFailed } from "../RagError.js"
import { ApiHttp, type Service as ApiHttpService } from "./ApiHttp.js"
import * as Job from "./internal/job.js"

// =============================================================================
// Schemas
// =============================================================================

/**
 * The model identifiers the service documents. {@link VideoRequest} accepts any string for
 * `model` (the model-list endpoint is the authority and new models appear there first); this
 * schema is for callers that want to validate against the documented set.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VideoModel = Schema.Literal("T2V-01-Director", "I2V-01-Director", "S2V-01", "I2V-01", "I2V-01-live", "T2V-01")
/**
 * @since 0.1.0
 * @category models
 */
export type VideoModel = typeof VideoModel.Type

/**
 * An image reference for image-to-video: a `data:` URL (base64 image data) or an `http(s)` URL.
 * Bare base64 without the `data:` prefix is refused before sending (`InvalidRequest`), because
 * the service could not tell its type.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImageReference = Schema.String.pipe(
  Schema.filter((s) => /^(data:[^,]*,|https?:\/\/)/i.test(s), {
    message: () => "expected a data: URL or an http(s) URL"
  })
)

/**
 * The submission body, encoded exactly. `model` takes any string (see {@link VideoModel} for the
 * documented ones); `prompt` may hold Director camera instructions such as `[Truck left, Pan
 * right]`; `first_frame_image` is the image of image-to-video models.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VideoRequest = Schema.Struct({
  model: Schema.String,
  prompt: Schema.String,
  first_frame_image: Schema.optional(ImageReference)
})
/**
 * @since 0.1.0
 * @category models
 */
export type VideoRequest = typeof VideoRequest.Type

/**
 * The status block of every video response; `status_code` 0 means accepted.
 *
 * @since 0.1.0
 * @category schemas
 */
export const BaseResp = Schema.Struct({
  status_code: Schema.Number,
  status_msg: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type BaseResp = typeof BaseResp.Type

/**
 * The submission response, decoded tolerantly (a refused submission may carry no task id).
 *
 * @since 0.1.0
 * @category schemas
 */
export const VideoSubmitResponse = Schema.Struct({
  task_id: Schema.optional(Schema.String),
  base_resp: Schema.optional(BaseResp)
})
/**
 * @since 0.1.0
 * @category models
 */
export type VideoSubmitResponse = typeof VideoSubmitResponse.Type

/**
 * A submission the service accepted: it has a task id.
 *
 * @since 0.1.0
 * @category models
 */
export type VideoSubmitted = VideoSubmitResponse & { readonly task_id: string }

/**
 * The status query response, decoded tolerantly. `file_id` is accepted as a string or a number
 * (MiniMax-style services send both) and is turned into a string by {@link Service.wait}.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VideoStatusResponse = Schema.Struct({
  task_id: Schema.optional(Schema.String),
  status: Schema.optional(Schema.String),
  file_id: Schema.optional(Schema.Union(Schema.String, Schema.Number)),
  base_resp: Schema.optional(BaseResp)
})
/**
 * @since 0.1.0
 * @category models
 */
export type VideoStatusResponse = typeof VideoStatusResponse.Type

/**
 * A status the client could read: it has a `status`.
 *
 * @since 0.1.0
 * @category models
 */
export type VideoStatus = VideoStatusResponse & { readonly status: string }

/**
 * The file record of the retrieval response; only `download_url` is required.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VideoFile = Schema.Struct({
  file_id: Schema.optional(Schema.Union(Schema.String, Schema.Number)),
  download_url: Schema.String,
  filename: Schema.optional(Schema.String),
  bytes: Schema.optional(Schema.Number),
  created_at: Schema.optional(Schema.Number),
  purpose: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type VideoFile = typeof VideoFile.Type

/**
 * The retrieval response, decoded tolerantly (a refused retrieval may carry no file).
 *
 * @since 0.1.0
 * @category schemas
 */
export const VideoFileResponse = Schema.Struct({
  file: Schema.optional(VideoFile),
  base_resp: Schema.optional(BaseResp)
})
/**
 * @since 0.1.0
 * @category models
 */
export type VideoFileResponse = typeof VideoFileResponse.Type

// =============================================================================
// Service
// =============================================================================

/**
 * One status report of {@link WaitOptions.onProgress}.
 *
 * @since 0.1.0
 * @category models
 */
export interface VideoProgress {
  readonly taskId: string
  /** The status as the service wrote it (`Queueing`, `Processing`, `Success`, …). */
  readonly status: string
  /** 1 for the first status query of this wait, then 2, 3, … */
  readonly poll: number
  /** The whole status response. */
  readonly response: VideoStatus
}

/**
 * Options of {@link Service.wait}; the defaults come from {@link RemoteOptions}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Time between two status queries (default 10 s). The first query is sent at once. */
  readonly pollInterval?: Duration.DurationInput | undefined
  /**
   * How long to poll before giving up with `TaskFailed` (status `TimedOut`; default 1 hour).
   * The task may still finish: resume with {@link Service.wait} and the task id of the error.
   */
  readonly maxWait?: Duration.DurationInput | undefined
  /**
   * Called with every status the service reports, the terminal one included, before the next
   * query is scheduled. It runs on the polling fiber, so a slow callback delays the next poll.
   */
  readonly onProgress?: ((progress: VideoProgress) => Effect.Effect<void>) | undefined
}

/**
 * Options of {@link Service.generate}: those of {@link Service.wait}.
 *
 * @since 0.1.0
 * @category models
 */
export type GenerateOptions = WaitOptions

/**
 * A task that reached `Success`.
 *
 * @since 0.1.0
 * @category models
 */
export interface VideoDone {
  readonly taskId: string
  readonly fileId: string
  /** The last status response. */
  readonly response: VideoStatus
}

/**
 * The result of {@link Service.generate}.
 *
 * @since 0.1.0
 * @category models
 */
export interface VideoResult {
  readonly taskId: string
  readonly fileId: string
  /** Where the generated video can be downloaded (on the storage host). */
  readonly downloadUrl: string
  /** The whole file record of the retrieval response. */
  readonly file: VideoFile
}

/**
 * The video generation service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /**
   * Submits a task (with an `Idempotency-Key`). Fails with `TaskFailed` when the service
   * refuses it (non-zero `base_resp.status_code`, `status` `Rejected`), with `DecodeError` when
   * an accepted submission has no `task_id`, with `InvalidRequest` when `first_frame_image` is
   * neither a data URL nor a URL, and with the `ApiError` of the HTTP call otherwise.
   */
  readonly submit: (request: VideoRequest) => Effect.Effect<VideoSubmitted, RagError.ApiError | TaskFailed>
  /**
   * Queries a task's status once. A `Fail` status is a successful query (see {@link wait});
   * a non-zero `base_resp.status_code` fails with `TaskFailed`, a response without `status`
   * with `DecodeError`.
   */
  readonly query: (taskId: string) => Effect.Effect<VideoStatus, RagError.ApiError | TaskFailed>
  /**
   * Retrieves a generated file's record. Fails with `TaskFailed` on a non-zero
   * `base_resp.status_code`, `DecodeError` when there is no `file.download_url`, `NotFound` for
   * an unknown file id.
   */
  readonly retrieve: (fileId: string) => Effect.Effect<VideoFile, RagError.ApiError | TaskFailed>
  /**
   * Polls an existing task until `Success` or `Fail` (see {@link WaitOptions}). Fails with
   * `TaskFailed` on `Fail` (status `Fail`), on a non-zero `base_resp.status_code`, or after
   * `maxWait` (status `TimedOut`); with `DecodeError` when `Success` comes without `file_id`.
   */
  readonly wait: (taskId: string, options?: WaitOptions) => Effect.Effect<VideoDone, RagError.ApiError | TaskFailed>
  /**
   * Submits, waits for the task, then retrieves the file: the errors of {@link submit},
   * {@link wait} and {@link retrieve}.
   */
  readonly generate: (
    request: VideoRequest,
    options?: GenerateOptions
  ) => Effect.Effect<VideoResult, RagError.ApiError | TaskFailed>
}

/**
 * The Tag.
 *
 * @since 0.1.0
 * @category context
 */
export class Video extends Context.Tag("effect-rag/api/Video")<Video, Service>() {}

// =============================================================================
// Helpers
// =============================================================================

/**
 * Builds the `data:` URL of `first_frame_image` from image bytes and their MIME type.
 *
 * @since 0.1.0
 * @category utils
 */
export const imageDataUrl = (bytes: Uint8Array, mimeType: string): string =>
  `data:${mimeType};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")}`

/**
 * Where a status stands: `Success` and `Fail` are terminal, anything else is in progress.
 *
 * @since 0.1.0
 * @category utils
 */
export const phaseOf = (status: string): "succeeded" | "failed" | "in_progress" => {
  const s = status.toLowerCase()
  return s === "success" ? "succeeded" : s === "fail" ? "failed" : "in_progress"
}

// =============================================================================
// Remote layer
// =============================================================================

const submitEndpoint = "POST /v1/video_generation"
const queryEndpoint = "GET /v1/query/video_generation"
const retrieveEndpoint = "GET /v1/files/retrieve"

/**
 * Options of the remote layer: the defaults of every {@link Service.wait} and generate.
 *
 * @since 0.1.0
 * @category models
 */
export interface RemoteOptions {
  /** Time between two status queries (default 10 s). */
  readonly pollInterval?: Duration.DurationInput | undefined
  /** How long to poll before failing with `TaskFailed` `TimedOut` (default 1 hour). */
  readonly maxWait?: Duration.DurationInput | undefined
}

/** Fails with TaskFailed when `base_resp.status_code` is present and not 0. */
const checkBaseResp = (
  http: ApiHttpService,
  endpoint: string,
  baseResp: BaseResp | undefined,
  taskId: string | undefined,
  status: string
): Effect.Effect<void, TaskFailed> => {
  if (baseResp === undefined || baseResp.status_code === 0) return Effect.void
  const msg = http.scrub(baseResp.status_msg ?? "no status_msg")
  return Effect.fail(
    new TaskFailed({
      endpoint,
      taskId,
      status,
      statusCode: baseResp.status_code,
      message: `${endpoint}: base_resp.status_code ${baseResp.status_code}: ${msg}`
    })
  )
}

/** The accepted submission: no refusal in `base_resp`, and a task id. */
const acceptSubmission = (http: ApiHttpService, response: VideoSubmitResponse) =>
  Effect.gen(function*() {
    const taskId = response.task_id === undefined || response.task_id === "" ? undefined : response.task_id
    yield* checkBaseResp(http, submitEndpoint, response.base_resp, taskId, "Rejected")
    if (taskId === undefined) {
      return yield* new DecodeError({
        endpoint: submitEndpoint,
        path: "task_id",
        message: `${submitEndpoint} accepted the task but returned no task_id`
      })
    }
    return { ...response, task_id: taskId } satisfies VideoSubmitted
  })

/** The readable status: no error in `base_resp`, and a `status`. */
const acceptStatus = (http: ApiHttpService, taskId: string, response: VideoStatusResponse) =>
  Effect.gen(function*() {
    yield* checkBaseResp(http, queryEndpoint, response.base_resp, taskId, response.status ?? "Error")
    if (response.status === undefined) {
      return yield* new DecodeError({
        endpoint: queryEndpoint,
        path: "status",
        message: `${queryEndpoint} returned no status for task ${taskId}`
      })
    }
    return { ...response, status: response.status } satisfies VideoStatus
  })

/** The video job family: submit, query, and how a terminal status reads. */
const family: Job.Family<
  VideoRequest,
  typeof VideoRequest.Encoded,
  VideoSubmitResponse,
  typeof VideoSubmitResponse.Encoded,
  VideoSubmitted,
  VideoStatusResponse,
  typeof VideoStatusResponse.Encoded,
  VideoStatus,
  TaskFailed | DecodeError,
  VideoDone
> = {
  kind: "video",
  name: "Video",
  submit: { endpoint: submitEndpoint, path: "/v1/video_generation", request: VideoRequest, response: VideoSubmitResponse, accept: acceptSubmission },
  status: {
    endpoint: queryEndpoint,
    span: "Video.query",
    call: (taskId) => ({ path: "/v1/query/video_generation", urlParams: { task_id: taskId } }),
    response: VideoStatusResponse,
    accept: acceptStatus
  },
  phaseOf,
  // `base_resp` usually reports on the status query itself (`status_msg` "success" when the
  // query worked): that is no failure reason and is not quoted; any other message is the task's.
  reason: (last) => {
    const msg = last.base_resp?.status_msg?.trim()
    return msg === undefined || msg === "" || msg.toLowerCase() === "success" ? undefined : msg
  },
  noReason: (last) => ` (status ${last.status}; the service gave no reason)`,
  result: (taskId, last) =>
    last.file_id === undefined || last.file_id === "" ? undefined : { taskId, fileId: String(last.file_id), response: last },
  missing: { path: "file_id", what: "succeeded without a file_id" }
}

/**
 * Builds the remote service on {@link ApiHttp}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: RemoteOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* ApiHttp
    const jobs = Job.make(http, family, {
      interval: Duration.decode(options.pollInterval ?? "10 seconds"),
      maxWait: Duration.decode(options.maxWait ?? "1 hour")
    })
    const submit = (request: VideoRequest) => jobs.submit(request).pipe(Effect.withSpan("Video.submit"))

    const retrieve = Effect.fn("Video.retrieve")(function*(fileId: string) {
      const response = yield* http.json(
        { endpoint: retrieveEndpoint, method: "GET", host: "base", path: "/v1/files/retrieve", urlParams: { file_id: fileId } },
        VideoFileResponse
      )
      yield* checkBaseResp(http, retrieveEndpoint, response.base_resp, undefined, "Error")
      if (response.file === undefined) {
        return yield* new DecodeError({
          endpoint: retrieveEndpoint,
          path: "file",
          message: `${retrieveEndpoint} returned no file for file_id ${fileId}`
        })
      }
      return response.file
    })

    const generate = (
      request: VideoRequest,
      opts: GenerateOptions = {}
    ): Effect.Effect<VideoResult, RagError.ApiError | TaskFailed> =>
      Effect.gen(function*() {
        const submitted = yield* submit(request)
        const done = yield* jobs.wait(submitted.task_id, opts)
        const file = yield* retrieve(done.fileId)
        return { taskId: done.taskId, fileId: done.fileId, downloadUrl: file.download_url, file } satisfies VideoResult
      }).pipe(Effect.withSpan("Video.generate", { attributes: { model: request.model } }))

    return Video.of({ submit, query: jobs.status, retrieve, wait: jobs.wait, generate })
  })

/**
 * The remote layer (needs {@link ApiHttp}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RemoteOptions = {}): Layer.Layer<Video, never, ApiHttp> =>
  Layer.effect(Video, make(options))
