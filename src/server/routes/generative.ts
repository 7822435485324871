/**
 * The generative endpoints of the API (chat completions, image, video and music generation),
 * served by whatever `Chat`, `Images`, `Video` and `Music` services the server was given. The
 * library has no local engine for them, so in practice these are the REMOTE layers pointed at
 * an upstream deployment: the server is then a gateway for them. An endpoint whose service was
 * not given answers 501 with a wire error body that says so (not an anonymous 404).
 *
 * Bodies are decoded with the client's own request schemas (a 400 names the field) and
 * responses encoded with its response schemas; typed errors keep their family (`fromError`: an
 * upstream 429 stays a 429 with its `Retry-After`, an upstream 5xx is a 502, a time-out a 504).
 *
 * ## What a gateway loses
 *
 * The client schemas are tolerant structs, so re-encoding what the upstream sent is faithful
 * for every field they know and drops the others:
 *
 * - request fields the client does not model (e.g. `response_format`, `n`, `stream_options`,
 *   `presence_penalty`, `logprobs`) are not forwarded to the upstream;
 * - response fields the client does not model (e.g. `system_fingerprint`, `logprobs`,
 *   `delta.refusal`) are not returned, and decode defaults are written out (`index` 0,
 *   `message.role` `assistant`, `content` / `finish_reason` null, a chunk's `choices` `[]`,
 *   `delta` `{}`).
 *
 * ## Chat streaming (`stream: true`)
 *
 * `Chat.Service.stream` yields whole `chat.completion.chunk` objects (not bare deltas), so each
 * upstream chunk is re-encoded as one event `data: <chunk>` (one chunk per event, in order),
 * and the stream ends with `data: [DONE]`. The response starts once the first chunk has
 * arrived: an upstream failure before it (429, 5xx, 401, …) is answered with its own status
 * and error body, not a 200 stream. A failure after it is sent as one event
 * `data: {"error": {message, type, code}}` and the stream ends there (no `[DONE]`). SSE
 * `id:`/`event:` fields and comments of the upstream stream are not forwarded.
 *
 * ## Task-creating requests
 *
 * `POST /v1/video_generation` and `POST /svc/submit/music` honour the client's
 * `Idempotency-Key` on this server: a retry with the same key gets the first answer again and
 * creates no second upstream task. The remote layer sends the upstream its own key (the same
 * on each of its retries); the client's key itself is not passed on.
 *
 * A video request the upstream refused with a non-zero `base_resp.status_code` is answered as
 * the upstream did (200 with that `base_resp`), so the client reads the same `TaskFailed`; a
 * refused music submission likewise comes back as `{status, error}` without a task.
 */
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Chunk, type Context, Effect, Option, Schema, type Scope, Stream } from "effect"
import * as Chat from "../../api/Chat.js"
import * as Images from "../../api/Images.js"
import * as Music from "../../api/Music.js"
import * as Video from "../../api/Video.js"
import type * as RagError from "../../RagError.js"
import * as State from "../internal/state.js"
import {
  badRequest,
  errorBody,
  fromError,
  handle,
  jsonBody,
  jsonResponse,
  service,
  type WireError
} from "../internal/wire.js"

const chatEndpoint = "POST /v1/chat/completions"
const imagesEndpoint = "POST /v1/images/generations"
const videoSubmitEndpoint = "POST /v1/video_generation"
const videoQueryEndpoint = "GET /v1/query/video_generation"
const videoRetrieveEndpoint = "GET /v1/files/retrieve"
const musicSubmitEndpoint = "POST /svc/submit/music"
const musicStatusEndpoint = "GET /svc/music/status"

/** The 501 of an endpoint without its service: no local engine, point the client elsewhere. */
const missing = (endpoint: string, what: string): WireError => ({
  status: 501,
  message:
    `${endpoint}: this server has no ${what} engine (effect-rag has no local one); point the client at a deployment that serves it`,
  type: "not_implemented",
  code: "not_configured"
})

/** The service of the Tag, or the 501 of {@link missing}. */
const gateway = <I, S>(tag: Context.Tag<I, S>, endpoint: string, what: string) =>
  service(tag, endpoint, what).pipe(Effect.mapError(() => missing(endpoint, what)))

/** The request's `Idempotency-Key`, if any. */
const idempotencyKey = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers["idempotency-key"])

/** Reads a query parameter struct; a missing or bad one is a 400 naming it. */
const query = <A, I extends Readonly<Record<string, string | ReadonlyArray<string> | undefined>>>(
  endpoint: string,
  schema: Schema.Schema<A, I>
) => HttpServerRequest.schemaSearchParams(schema).pipe(Effect.mapError((e) => badRequest(endpoint, e)))

/** The part of a client error message after the prefix the client adds (so it is not added twice). */
const after = (message: string, marker: RegExp): string => {
  const match = marker.exec(message)
  return match === null ? message : message.slice(match.index + match[0].length)
}

// =============================================================================
// Chat completions
// =============================================================================

/** The wire request: the client's request plus `stream`. */
const ChatWireRequest = Schema.extend(Chat.ChatRequest, Schema.Struct({ stream: Schema.optional(Schema.Boolean) }))

const encoder = new TextEncoder()
const event = (data: string) => encoder.encode(`data: ${data}\n\n`)
const encodeChunk = Schema.encode(Schema.parseJson(Chat.ChatChunk))

/** The error event of a stream that failed after it started. */
const errorEvent = (e: RagError.ApiError | RagError.StreamError): Uint8Array => {
  if (e._tag === "StreamError") {
    const message = after(e.message, /: the stream reported an error: /)
    return event(JSON.stringify({ error: { message, type: e.type ?? "stream_error", code: e.code ?? null } }))
  }
  return event(JSON.stringify(errorBody(fromError(e))))
}

/**
 * A streamed completion as `text/event-stream`. The first chunk is awaited before answering,
 * so a failure that comes before any chunk keeps its status. The pull lives in the request's
 * scope, which stays open while the response body is written.
 */
const chatStream = (chat: Chat.Service, request: Chat.ChatRequest) =>
  Effect.gen(function*() {
    const pull = yield* Stream.toPull(chat.stream(request))
    const first = yield* pull.pipe(
      Effect.map(Option.some),
      Effect.catchAll((e) =>
        Option.match(e, { onNone: () => Effect.succeed(Option.none<Chunk.Chunk<Chat.ChatChunk>>()), onSome: Effect.fail })
      ),
      Effect.mapError((e): WireError =>
        e._tag === "StreamError"
          ? {
            status: 502,
            message: after(e.message, /: the stream reported an error: /),
            type: e.type ?? "upstream_error",
            code: e.code ?? null
          }
          : fromError(e)
      )
    )
    const chunks: Stream.Stream<Chat.ChatChunk, RagError.ApiError | RagError.StreamError> = Option.match(first, {
      onNone: () => Stream.empty,
      onSome: (chunk) => Stream.concat(Stream.fromChunk(chunk), Stream.repeatEffectChunkOption(pull))
    })
    const body = chunks.pipe(
      Stream.mapEffect((chunk) => Effect.orDie(encodeChunk(chunk))), // our decoded chunks always encode
      Stream.map(event),
      Stream.concat(Stream.succeed(event("[DONE]"))),
      Stream.catchAll((e) => Stream.succeed(errorEvent(e)))
    )
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache" }
    })
  })

const chatCompletions: Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  WireError,
  HttpServerRequest.HttpServerRequest | Scope.Scope
> = Effect.gen(function*() {
  const chat = yield* gateway(Chat.Chat, chatEndpoint, "chat completion")
  const { stream, ...request } = yield* jsonBody(chatEndpoint, ChatWireRequest, "model")
  if (stream === true) return yield* chatStream(chat, request)
  const completion = yield* chat.create(request).pipe(Effect.mapError(fromError))
  return yield* jsonResponse(Chat.ChatCompletion, completion)
})

// =============================================================================
// Images
// =============================================================================

const imageGenerations = Effect.gen(function*() {
  const images = yield* gateway(Images.Images, imagesEndpoint, "image generation")
  const request = yield* jsonBody(imagesEndpoint, Images.ImageRequest)
  const response = yield* images.generate(request).pipe(Effect.mapError(fromError))
  return yield* jsonResponse(Images.ImageResponse, response)
})

// =============================================================================
// Video
// =============================================================================

/**
 * A video call's errors: a refusal by `base_resp` is answered as the upstream answered it
 * (200 with the non-zero `base_resp`), anything else by its family.
 */
const videoFailure = <A, I>(schema: Schema.Schema<A, I>, refused: (baseResp: Video.BaseResp, e: RagError.TaskFailed) => A) =>
(e: RagError.ApiError | RagError.TaskFailed) =>
  e._tag === "TaskFailed" && e.statusCode !== undefined
    ? jsonResponse(schema, refused({ status_code: e.statusCode, status_msg: after(e.message, /base_resp\.status_code -?\d+(\.\d+)?: /) }, e))
    : Effect.fail(fromError(e))

const videoSubmit = Effect.gen(function*() {
  const video = yield* gateway(Video.Video, videoSubmitEndpoint, "video generation")
  const request = yield* jsonBody(videoSubmitEndpoint, Video.VideoRequest)
  const key = yield* idempotencyKey
  return yield* State.idempotent("videoSubmit", key, video.submit(request)).pipe(
    Effect.flatMap((submitted) => jsonResponse(Video.VideoSubmitResponse, submitted)),
    Effect.catchAll(videoFailure(Video.VideoSubmitResponse, (base_resp, e) => ({
      ...(e.taskId === undefined ? {} : { task_id: e.taskId }),
      base_resp
    })))
  )
})

const VideoQuery = Schema.Struct({ task_id: Schema.String.pipe(Schema.minLength(1)) })

const videoQuery = Effect.gen(function*() {
  const video = yield* gateway(Video.Video, videoQueryEndpoint, "video generation")
  const { task_id } = yield* query(videoQueryEndpoint, VideoQuery)
  return yield* video.query(task_id).pipe(
    Effect.flatMap((status) => jsonResponse(Video.VideoStatusResponse, status)),
    Effect.catchAll(videoFailure(Video.VideoStatusResponse, (base_resp, e) => ({
      task_id,
      ...(e.status === "Error" ? {} : { status: e.status }),
      base_resp
    })))
  )
})

const FileQuery = Schema.Struct({ file_id: Schema.String.pipe(Schema.minLength(1)) })

const videoRetrieve = Effect.gen(function*() {
  const video = yield* gateway(Video.Video, videoRetrieveEndpoint, "video generation")
  const { file_id } = yield* query(videoRetrieveEndpoint, FileQuery)
  return yield* video.retrieve(file_id).pipe(
    Effect.flatMap((file) =>
      jsonResponse(Video.VideoFileResponse, { file, base_resp: { status_code: 0, status_msg: "success" } })
    ),
    Effect.catchAll(videoFailure(Video.VideoFileResponse, (base_resp) => ({ base_resp })))
  )
})

// =============================================================================
// Music
// =============================================================================

const musicSubmit = Effect.gen(function*() {
  const music = yield* gateway(Music.Music, musicSubmitEndpoint, "music generation")
  const request = yield* jsonBody(musicSubmitEndpoint, Music.MusicRequest)
  const key = yield* idempotencyKey
  return yield* State.idempotent("musicSubmit", key, music.submit(request)).pipe(
    Effect.flatMap((submitted) => jsonResponse(Music.MusicSubmitResponse, submitted)),
    Effect.catchAll((e) =>
      // a refused submission: answered as the upstream did, without a task
      e._tag === "TaskFailed"
        ? jsonResponse(Music.MusicSubmitResponse, {
          status: e.status,
          error: after(e.message, /refused the task \(status [^)]*\): /)
        })
        : Effect.fail(fromError(e))
    )
  )
})

const musicStatus = Effect.gen(function*() {
  const music = yield* gateway(Music.Music, musicStatusEndpoint, "music generation")
  const params = yield* HttpRouter.params
  const id = params["id"] ?? ""
  const status = yield* music.status(id).pipe(Effect.mapError(fromError))
  return yield* jsonResponse(Music.MusicStatusResponse, status)
})

// =============================================================================
// Routes
// =============================================================================

/** The routes of the generative endpoints. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post("/v1/chat/completions", handle(chatCompletions)),
  HttpRouter.post("/v1/images/generations", handle(imageGenerations)),
  HttpRouter.post("/v1/video_generation", handle(videoSubmit)),
  HttpRouter.get("/v1/query/video_generation", handle(videoQuery)),
  HttpRouter.get("/v1/files/retrieve", handle(videoRetrieve)),
  HttpRouter.post("/svc/submit/music", handle(musicSubmit)),
  HttpRouter.get("/svc/music/status/:id", handle(musicStatus))
)
