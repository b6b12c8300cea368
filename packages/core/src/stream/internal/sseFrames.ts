/**
 * The frames of an event stream, as `EventStream` and `ResumableStream`
 * write them: a `message` per event (with its id when it has one), `end`,
 * `failure` with the encoded error, `error` for a server that broke, and
 * keepalive comments.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Sse } from "effect/encoding"
import * as Exit from "effect/Exit"
import type * as Pull from "effect/Pull"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as JsonEncoder from "../../internal/jsonEncoder.ts"

/** One SSE frame. */
export const frame = (event: string, data: string, id?: string | undefined): string =>
  Sse.encoder.write({ _tag: "Event", event, id, data })

/** The frame of a stream that ended well. */
export const endFrame = frame("end", "{}")

const keepAliveFrame = ": keepalive\n\n"

const defaultKeepAlive = Duration.seconds(15)

/**
 * The `error` frame of a stream the server broke (a defect, an event or error
 * its schema cannot encode): a client learns only that it broke, and the id of
 * the log entry, with the details, that the server wrote (a defect's message
 * and stack name the server's files and can carry anything).
 */
export const broken = (what: string, cause: Cause.Cause<unknown>): Stream.Stream<string> =>
  Stream.fromEffect(Effect.gen(function*() {
    const id = `err_${Math.abs(yield* Random.nextInt).toString(36)}`
    yield* Effect.logError(`EventStream: ${what}; the client was sent error ${id}`, cause).pipe(
      Effect.annotateLogs("agentloop.error.id", id)
    )
    return frame("error", JSON.stringify({ message: `the server failed (error ${id}, in its log)`, id }))
  }))

/**
 * The `message` frames of a stream's elements, one string for each chunk:
 * a run's deltas arrive a network read at a time, and go on as one write.
 * `eventOf` is an element's event, `idOf` its SSE id (none: no `id:` line). An
 * event that does not encode fails the stream with its `SchemaError` after
 * the frames of the events before it.
 */
export const messages = <T, A, E, R>(
  stream: Stream.Stream<T, E, R>,
  events: Schema.Codec<A, unknown>,
  eventOf: (element: T) => A,
  idOf?: ((element: T) => string | undefined) | undefined
): Stream.Stream<string, E | Schema.SchemaError, R> => {
  const encodeEvent = JsonEncoder.make(Schema.toCodecJson(events))
  return Stream.transformPull(stream, (pull) =>
    Effect.sync(() => {
      let failure: Effect.Effect<never, Schema.SchemaError> | undefined
      const next: Pull.Pull<Arr.NonEmptyReadonlyArray<string>, E | Schema.SchemaError, void> = Effect.suspend(() =>
        failure ?? Effect.flatMap(pull, (chunk): Pull.Pull<Arr.NonEmptyReadonlyArray<string>, Schema.SchemaError> => {
          let text = ""
          for (const element of chunk) {
            const data = encodeEvent(eventOf(element))
            if (Exit.isFailure(data)) {
              if (text === "") return Effect.failCause(data.cause)
              failure = Effect.failCause(data.cause)
              break
            }
            text += frame("message", data.value, idOf?.(element))
          }
          return Effect.succeed(Arr.of(text))
        })
      )
      return next
    }))
}

/**
 * The frames that end a stream that failed with `cause`: `failure` with the
 * error `encodeFailure` encodes, or `error` when it cannot, or for a defect
 * or an event that did not encode.
 */
export const failed = <E>(
  cause: Cause.Cause<E | Schema.SchemaError>,
  encodeFailure: (error: E) => Effect.Effect<string, Schema.SchemaError>
): Stream.Stream<string> => {
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "None") return broken("the stream died", cause)
  const error = failure.value
  if (Schema.isSchemaError(error)) return broken("an event could not be encoded", cause)
  return Stream.unwrap(Effect.match(encodeFailure(error), {
    onFailure: (encoding) => broken("the failure could not be encoded", Cause.fail(encoding)),
    onSuccess: (data) => Stream.succeed(frame("failure", data))
  }))
}

/** `frames` with a keepalive comment every `keepAlive` (default 15 seconds; never when infinite or zero). */
export const keepingAlive = <R>(
  frames: Stream.Stream<string, never, R>,
  keepAlive: Duration.Input | undefined
): Stream.Stream<string, never, R> => {
  const every = Duration.fromInputUnsafe(keepAlive ?? defaultKeepAlive)
  if (!Duration.isFinite(every) || Duration.isZero(every)) return frames
  const keepAlives = Stream.fromSchedule(Schedule.spaced(every)).pipe(Stream.map(() => keepAliveFrame))
  return Stream.merge(frames, keepAlives, { haltStrategy: "left" })
}
