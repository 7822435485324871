/**
 * The asynchronous-job client that `Music` and `Video` share, built from a description of an
 * endpoint family: submit a task (JSON `POST`, sent with an `Idempotency-Key`), query its
 * status (`GET`), and poll the status (see `poll.ts`) until it is terminal, then turn the last
 * status into the family's result or a typed error. What differs between families (paths,
 * schemas, how a response is accepted, the failure reason, the result) is the family's; the
 * order of the steps and the errors' shapes are the same for all.
 *
 * @since 0.1.0
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type * as RagError from "../../RagError.js"
import { DecodeError, TaskFailed } from "../../RagError.js"
import type { Call, Service as Http } from "../ApiHttp.js"
import * as Poll from "./poll.js"

/** Where a status stands. */
export type Phase = "succeeded" | "failed" | "in_progress"

/** How a family submits a task. */
export interface SubmitSpec<Req, ReqI, Res, ResI, Submitted> {
  /** `POST /…`, named in errors. */
  readonly endpoint: string
  readonly path: string
  readonly request: Schema.Schema<Req, ReqI>
  readonly response: Schema.Schema<Res, ResI>
  /** The accepted submission (with its task id), or why the service did not accept it. */
  readonly accept: (http: Http, response: Res) => Effect.Effect<Submitted, TaskFailed | DecodeError>
}

/** How a family queries a task's status. */
export interface StatusSpec<Res, ResI, Status extends { readonly status: string }, E> {
  /** `GET /…`, named in errors. */
  readonly endpoint: string
  /** The span of one query (`Video.query`, `Music.status`). */
  readonly span: string
  /** Where the status of `taskId` is asked. */
  readonly call: (taskId: string) => Pick<Call, "path" | "urlParams">
  readonly response: Schema.Schema<Res, ResI>
  /** The status the client can read, or why not. */
  readonly accept: (http: Http, taskId: string, response: Res) => Effect.Effect<Status, E>
}

/** How a family reads a terminal status. */
export interface Outcome<Status extends { readonly status: string }, Done> {
  /** `video`, `music`: named in messages. */
  readonly kind: string
  readonly phaseOf: (status: string) => Phase
  /** The reason of a failed task as the service gave it (scrubbed by the client), if any. */
  readonly reason: (last: Status) => string | undefined
  /** Appended to the failure message when there is no reason. */
  readonly noReason: (last: Status) => string
  /** The result of a succeeded task, undefined when the status lacks it. */
  readonly result: (taskId: string, last: Status) => Done | undefined
  /** The field a succeeded status must have, and what the error says when it lacks it. */
  readonly missing: { readonly path: string; readonly what: string }
}

/** An endpoint family of asynchronous jobs. */
export interface Family<Req, ReqI, SubRes, SubResI, Submitted, StRes, StResI, Status extends { readonly status: string }, E, Done>
  extends Outcome<Status, Done>
{
  /** `Video`, `Music`: the prefix of the spans. */
  readonly name: string
  readonly submit: SubmitSpec<Req, ReqI, SubRes, SubResI, Submitted>
  readonly status: StatusSpec<StRes, StResI, Status, E>
}

/** The per-call options of {@link JobClient.wait}. */
export interface WaitOptions<Status> extends Poll.Timing {
  /** Time before the first status query (none when undefined). */
  readonly initialDelay?: Duration.DurationInput | undefined
  readonly onProgress?:
    | ((progress: { readonly taskId: string; readonly status: string; readonly poll: number; readonly response: Status }) => Effect.Effect<void>)
    | undefined
}

/** The layer-wide settings of a client. */
export interface Settings<Status> {
  readonly interval: Duration.Duration
  readonly maxWait: Duration.Duration
  /** Run after every status query that succeeded (e.g. freeing a budget place when terminal). */
  readonly onStatus?: ((taskId: string, status: Status) => Effect.Effect<void>) | undefined
}

/** The client of one family. */
export interface JobClient<Req, Submitted, Status, E, Done> {
  /** Submits a task (no span: the family's module adds its own around it). */
  readonly submit: (request: Req) => Effect.Effect<Submitted, RagError.ApiError | TaskFailed>
  /** Queries a task's status once. */
  readonly status: (taskId: string) => Effect.Effect<Status, RagError.ApiError | E>
  /** Polls a task until terminal: its result, or `TaskFailed` (failed, timed out), `DecodeError`. */
  readonly wait: (taskId: string, options?: WaitOptions<Status>) => Effect.Effect<Done, RagError.ApiError | E | TaskFailed>
}

const submitWith = <Req, ReqI, Res, ResI, Submitted>(http: Http, spec: SubmitSpec<Req, ReqI, Res, ResI, Submitted>) =>
  Effect.fnUntraced(function*(request: Req): Effect.fn.Return<Submitted, RagError.ApiError | TaskFailed> {
    const body = yield* http.encode(spec.endpoint, spec.request, request)
    const response = yield* http.json(
      { endpoint: spec.endpoint, method: "POST", host: "base", path: spec.path, body: { _tag: "Json", value: body }, idempotent: true },
      spec.response
    )
    return yield* spec.accept(http, response)
  })

const statusWith = <Res, ResI, Status extends { readonly status: string }, E>(
  http: Http,
  spec: StatusSpec<Res, ResI, Status, E>,
  onStatus: Settings<Status>["onStatus"]
) =>
(taskId: string): Effect.Effect<Status, RagError.ApiError | E> =>
  http.json({ endpoint: spec.endpoint, method: "GET", host: "base", ...spec.call(taskId) }, spec.response).pipe(
    Effect.flatMap((response) => spec.accept(http, taskId, response)),
    Effect.tap((status) => (onStatus === undefined ? Effect.void : onStatus(taskId, status))),
    Effect.withSpan(spec.span, { attributes: { taskId } })
  )

/** The result of a terminal status: the family's result, or `TaskFailed` / `DecodeError`. */
const finish = <Status extends { readonly status: string }, Done>(
  http: Http,
  outcome: Outcome<Status, Done>,
  endpoint: string,
  taskId: string,
  last: Status
): Effect.Effect<Done, TaskFailed | DecodeError> => {
  if (outcome.phaseOf(last.status) === "failed") {
    const reason = outcome.reason(last)
    return Effect.fail(
      new TaskFailed({
        endpoint,
        taskId,
        status: last.status,
        message: `${outcome.kind} task ${taskId} failed` + (reason === undefined ? outcome.noReason(last) : `: ${http.scrub(reason)}`)
      })
    )
  }
  const done = outcome.result(taskId, last)
  return done !== undefined ? Effect.succeed(done) : Effect.fail(
    new DecodeError({ endpoint, path: outcome.missing.path, message: `${endpoint}: task ${taskId} ${outcome.missing.what}` })
  )
}

/** Builds the client of `family` on `http`. */
export const make = <Req, ReqI, SubRes, SubResI, Submitted, StRes, StResI, Status extends { readonly status: string }, E, Done>(
  http: Http,
  family: Family<Req, ReqI, SubRes, SubResI, Submitted, StRes, StResI, Status, E, Done>,
  settings: Settings<Status>
): JobClient<Req, Submitted, Status, E, Done> => {
  const status = statusWith(http, family.status, settings.onStatus)
  const wait = (taskId: string, opts: WaitOptions<Status> = {}): Effect.Effect<Done, RagError.ApiError | E | TaskFailed> =>
    Poll.untilDone({
      kind: family.kind,
      endpoint: family.status.endpoint,
      taskId,
      status: status(taskId),
      done: (response) => family.phaseOf(response.status) !== "in_progress",
      ...Poll.timing(opts, { interval: settings.interval, maxWait: settings.maxWait }),
      initialDelay: opts.initialDelay === undefined ? undefined : Duration.decode(opts.initialDelay),
      onProgress: opts.onProgress
    }).pipe(
      Effect.flatMap((last) => finish(http, family, family.status.endpoint, taskId, last)),
      Effect.withSpan(`${family.name}.wait`, { attributes: { taskId } })
    )
  return { submit: submitWith(http, family.submit), status, wait }
}
