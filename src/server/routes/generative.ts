/**
 * The generative endpoints of the API (chat completions, image, video and music generation).
 * The library has no local engine for them, so this server answers them with a 501 that says
 * so, in the wire error body, instead of an anonymous 404: a client pointed at the server learns
 * what is missing. (Serving them by proxying a remote deployment is possible with the same
 * route code and the remote layers, and is not built yet.)
 */
import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { errorResponse } from "../internal/wire.js"

const unavailable = (endpoint: string, what: string) =>
  Effect.succeed(errorResponse({
    status: 501,
    message: `${endpoint}: this server has no ${what} engine (effect-rag has no local one); point the client at a deployment that serves it`,
    type: "not_implemented",
    code: "not_configured"
  }))

/** 501 routes of the generative endpoints. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.post("/v1/chat/completions", unavailable("POST /v1/chat/completions", "chat completion")),
  HttpRouter.post("/v1/images/generations", unavailable("POST /v1/images/generations", "image generation")),
  HttpRouter.post("/v1/video_generation", unavailable("POST /v1/video_generation", "video generation")),
  HttpRouter.get("/v1/query/video_generation", unavailable("GET /v1/query/video_generation", "video generation")),
  HttpRouter.get("/v1/files/retrieve", unavailable("GET /v1/files/retrieve", "video generation")),
  HttpRouter.post("/svc/submit/music", unavailable("POST /svc/submit/music", "music generation")),
  HttpRouter.get("/svc/music/status/:id", unavailable("GET /svc/music/status", "music generation"))
)
