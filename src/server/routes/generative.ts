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
 * ## Pass-through
 *
 * When the server has the upstream's client (`ApiHttp`, which `effect-rag serve --gateway`
 * provides), chat completions and image generations are passed through: the request body is
 * checked for what the route needs (`model`, `messages`, `stream`; `prompt`: a 400 names the
 * field; the upstream judges the rest) and then sent to the upstream as the client wrote it, so every OpenAI field reaches it (`stream_options`, `response_format`, `n`,
 * `logprobs`, `seed`, ...); the upstream's answer is checked with the response schema (a body
 * that does not decode is a 502) and returned as the upstream wrote it (`system_fingerprint`,
 * `usage` chunks, `delta.refusal`, ...), one upstream event per event in a stream.
 *
 * Without it (a server given only the `Chat` or `Images` services), the client schemas are the
 * wire: fields they do not model are not forwarded, and decode defaults are written out
 * (`index` 0, `message.role` `assistant`, `content` / `finish_reason` null, a chunk's
 * `choices` `[]`, `delta` `{}`).
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
import { type Chunk, type Context, Effect, Option, type ParseResult, Schema, type Scope, Stream } from "effect"
import * as Chat from "../../api/Chat.js"
import { issuePath } from "../../api/ApiErrors.js"
import * as ApiHttp from "../../api/ApiHttp.js"
import * as Images from "../../api/Images.js"
import * as Music from "../../api/Music.js"
import * as Video from "../../api/Video.js"
import * as RagError from "../../RagError.js"
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
 * A streamed completion as `text/event-stream`, from the events' data (JSON text, one chunk
 * each). The first chunk is awaited before answering, so a failure that comes before any chunk
 * keeps its status. The pull lives in the request's scope, which stays open while the response
 * body is written.
 */
const chatStream = (events: Stream.Stream<string, RagError.ApiError | RagError.StreamError>) =>
  Effect.gen(function*() {
    const pull = yield* Stream.toPull(events)
    const first = yield* pull.pipe(
      Effect.map(Option.some),
      Effect.catchAll((e) =>
        Option.match(e, { onNone: () => Effect.succeed(Option.none<Chunk.Chunk<string>>()), onSome: Effect.fail })
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
    const chunks: Stream.Stream<string, RagError.ApiError | RagError.StreamError> = Option.match(first, {
      onNone: () => Stream.empty,
      onSome: (chunk) => Stream.concat(Stream.fromChunk(chunk), Stream.repeatEffectChunkOption(pull))
    })
    const body = chunks.pipe(
      Stream.map(event),
      Stream.concat(Stream.succeed(event("[DONE]"))),
      Stream.catchAll((e) => Stream.succeed(errorEvent(e)))
    )
    return HttpServerResponse.stream(body, {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache" }
    })
  })

/**
 * What a passed-through chat request must have (the upstream judges the rest: a narrower
 * schema here would refuse values the upstream accepts).
 */
const ChatPass = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Schema.Unknown),
  stream: Schema.optional(Schema.Boolean)
})

/** What a passed-through image request must have. */
const ImagesPass = Schema.Struct({ prompt: Schema.String })

/**
 * A passed-through body: read once (within the route's size limit), checked for what the
 * gateway needs with `schema`, and kept as written for the upstream.
 */
const passBody = <A, I>(endpoint: string, schema: Schema.Schema<A, I>, size?: "json" | "model") =>
  Effect.gen(function*() {
    const raw = yield* jsonBody(endpoint, Schema.Unknown, size)
    const checked = yield* Schema.decodeUnknown(schema)(raw).pipe(Effect.mapError((e) => badRequest(endpoint, e)))
    return { raw, checked }
  })

/** The upstream's client, when the server is a gateway (pass-through). */
const upstream = Effect.serviceOption(ApiHttp.ApiHttp)

/** A JSON call to the upstream with the client's own body. */
const passCall = (endpoint: string, path: string, body: unknown, stream = false): ApiHttp.Call => ({
  endpoint,
  method: "POST",
  host: "base",
  path,
  body: { _tag: "Json", value: body },
  ...(stream ? { timeout: "stream" as const } : {})
})

/**
 * Sends the client's body to the upstream and answers with the upstream's JSON as written,
 * once it decodes with `schema` (else a 502 naming the field).
 */
const passJson = <A, I>(http: ApiHttp.Service, endpoint: string, path: string, body: unknown, schema: Schema.Schema<A, I>) =>
  http.json(passCall(endpoint, path, body), Schema.Unknown).pipe(
    Effect.tap((json) => Schema.decodeUnknown(schema)(json).pipe(Effect.mapError((e) => upstreamDecode(endpoint, e)))),
    Effect.mapError(fromError),
    Effect.map((json) => HttpServerResponse.unsafeJson(json))
  )

/** An upstream body that does not decode: a 502 naming the field. */
const upstreamDecode = (endpoint: string, e: ParseResult.ParseError) => {
  const { message, path } = issuePath(e)
  return new RagError.DecodeError({ endpoint, path, message: `${endpoint}: the upstream answered ${path === "" ? "a body" : path} that does not decode: ${message}` })
}

const decodeChunk = Schema.decodeUnknown(Chat.ChatChunk)

/**
 * The upstream's stream, event data as written: `[DONE]` ends it, an error event fails it
 * (`StreamError`), a chunk that does not decode fails it (`DecodeError`).
 */
const passStream = (http: ApiHttp.Service, body: unknown): Stream.Stream<string, RagError.ApiError | RagError.StreamError> =>
  http.sse(passCall(chatEndpoint, "/v1/chat/completions", body, true)).pipe(
    Stream.map((e) => e.data.trim()),
    Stream.takeWhile((data) => data !== "[DONE]"),
    Stream.mapEffect((data): Effect.Effect<string, RagError.ApiError | RagError.StreamError> => {
      const json = parseJson(data)
      if (json === undefined) {
        return Effect.fail(new RagError.DecodeError({ endpoint: chatEndpoint, path: "", message: `${chatEndpoint}: a stream event is not JSON` }))
      }
      if (typeof json === "object" && json !== null && "error" in json) {
        const error = (json as { error: unknown }).error
        const fields = typeof error === "object" && error !== null ? error as Record<string, unknown> : { message: error }
        return Effect.fail(new RagError.StreamError({
          endpoint: chatEndpoint,
          message: `${chatEndpoint}: the stream reported an error: ${http.scrub(String(fields["message"] ?? "unknown error"))}`,
          type: typeof fields["type"] === "string" ? fields["type"] : undefined,
          code: typeof fields["code"] === "string" ? fields["code"] : undefined
        }))
      }
      return decodeChunk(json).pipe(Effect.mapError((e) => upstreamDecode(chatEndpoint, e)), Effect.as(data))
    })
  )

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const chatCompletions: Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  WireError,
  HttpServerRequest.HttpServerRequest | Scope.Scope
> = Effect.gen(function*() {
  const chat = yield* gateway(Chat.Chat, chatEndpoint, "chat completion")
  const http = yield* upstream
  if (Option.isSome(http)) {
    const { checked: { stream }, raw } = yield* passBody(chatEndpoint, ChatPass, "model")
    if (stream === true) return yield* chatStream(passStream(http.value, raw))
    return yield* passJson(http.value, chatEndpoint, "/v1/chat/completions", raw, Chat.ChatCompletion)
  }
  const { stream, ...request } = yield* jsonBody(chatEndpoint, ChatWireRequest, "model")
  if (stream === true) {
    // our decoded chunks always encode
    return yield* chatStream(Stream.mapEffect(chat.stream(request), (chunk) => Effect.orDie(encodeChunk(chunk))))
  }
  const completion = yield* chat.create(request).pipe(Effect.mapError(fromError))
  return yield* jsonResponse(Chat.ChatCompletion, completion)
})

// =============================================================================
// Images
// =============================================================================

const imageGenerations = Effect.gen(function*() {
  const images = yield* gateway(Images.Images, imagesEndpoint, "image generation")
  const http = yield* upstream
  if (Option.isSome(http)) {
    const { raw } = yield* passBody(imagesEndpoint, ImagesPass)
    return yield* passJson(http.value, imagesEndpoint, "/v1/images/generations", raw, Images.ImageResponse)
  }
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
