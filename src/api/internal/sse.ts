/**
 * A server-sent events decoder: text lines in, events out (WHATWG rules: `data:` lines of one
 * event are joined with newlines, a blank line ends the event, `:` lines are comments).
 */
import * as Chunk from "effect/Chunk"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** One server-sent event. */
export interface SseEvent {
  readonly event: string | undefined
  readonly data: string
}

interface State {
  readonly event: string | undefined
  readonly data: ReadonlyArray<string>
}

const empty: State = { event: undefined, data: [] }

const field = (line: string): [string, string] => {
  const colon = line.indexOf(":")
  if (colon === -1) return [line, ""]
  const value = line.slice(colon + 1)
  return [line.slice(0, colon), value.startsWith(" ") ? value.slice(1) : value]
}

/** Decodes a stream of text (any chunking) into events. */
export const decode = <E, R>(text: Stream.Stream<string, E, R>): Stream.Stream<SseEvent, E, R> =>
  text.pipe(
    Stream.splitLines,
    // A sentinel blank line at the end flushes an event the server did not terminate.
    Stream.concat(Stream.make("")),
    Stream.mapAccum(empty, (state, line): [State, Option.Option<SseEvent>] => {
      if (line === "") {
        return state.data.length === 0
          ? [empty, Option.none()]
          : [empty, Option.some({ event: state.event, data: state.data.join("\n") })]
      }
      if (line.startsWith(":")) return [state, Option.none()]
      const [name, value] = field(line)
      if (name === "data") return [{ ...state, data: [...state.data, value] }, Option.none()]
      if (name === "event") return [{ ...state, event: value }, Option.none()]
      return [state, Option.none()]
    }),
    Stream.mapConcatChunk((o) => (Option.isSome(o) ? Chunk.of(o.value) : Chunk.empty()))
  )
