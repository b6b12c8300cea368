/**
 * A stream of `Schema` events over Server-Sent Events, both ways: a server
 * turns a run's event stream (`agent.stream(...)`, or any stream of Schema
 * values) into an SSE response, and a client, in a browser or in Node, reads it
 * back into the same typed events.
 *
 * The wire format: each event is an SSE `message` whose `data` is the event's
 * JSON encoding; a failure is one `failure` event carrying the encoded error
 * (a `Termination.Error`, say); a stream that ends well ends with one `end`
 * event; a server that broke sends one `error` event carrying only an error id
 * that its log has with the details. Keepalive comments (`: keepalive`) keep proxies from closing an idle
 * connection. A client whose connection ends without `end` or `failure` knows
 * the stream was cut off, and fails with `EventStreamError` rather than
 * passing a half run off as a whole one.
 *
 * Closing the connection interrupts the stream on the server: the run stops,
 * down to its provider's HTTP request.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Sse } from "effect/encoding"
import * as Exit from "effect/Exit"
import { dual, identity } from "effect/Function"
import { HttpServerResponse } from "effect/http"
import * as Pull from "effect/Pull"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AgentEvent from "../agent/AgentEvent.ts"
import * as StepError from "../step/StepError.ts"
import * as StepEvent from "../step/StepEvent.ts"
import * as Termination from "../Termination.ts"
import * as SseFrames from "./internal/sseFrames.ts"
import * as UIMessageStream from "./UIMessageStream.ts"

/**
 * The schemas of a stream's events and of the error it may fail with. Neither may need services.
 *
 * @since 0.1.0
 * @category models
 */
export interface Codec<A, E> {
  readonly events: Schema.Codec<A, unknown>
  readonly failure: Schema.Codec<E, unknown>
}

/**
 * The codec of an `AgentLoop` run whose output is text: `AgentEvent`s, failing with a `Termination.Error`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const agent: Codec<AgentEvent.AgentEvent, Termination.Error> = {
  events: AgentEvent.AgentEvent,
  failure: Termination.Error
}

/**
 * The codec of a step program's stream (`Step.stream(...)`) whose output
 * `output` describes: its `StepEvent`s and the final `Output` event, failing
 * with a `StepError`. A program whose steps fail with errors of their own
 * needs their schema: `{ events: StepEvent.schema(output), failure: Schema.Union([StepError.StepError, Mine]) }`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const steps = <S extends Schema.Top>(output: S) => ({
  events: StepEvent.schema(output),
  failure: StepError.StepError
})

/**
 * Options of the server side.
 *
 * @since 0.1.0
 * @category models
 */
export interface EncodeOptions {
  /** How often to send a keepalive comment while no event is due (default 15 seconds; `Duration.infinity` for never). */
  readonly keepAlive?: Duration.Input | undefined
}

/**
 * Headers of an event-stream response: no caching, no proxy buffering.
 *
 * @since 0.1.0
 * @category constants
 */
export const headers: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

/**
 * The SSE text of a stream: one `message` per event, then `end`, or `failure`
 * with the encoded error. The result never fails; a defect, or an event or
 * error that its schema cannot encode (a bug of the server), ends it with an
 * `error` event that carries only an id, logged with the details.
 *
 * The events of each chunk of `stream` are encoded into one string, so a
 * server writes a chunk of deltas at once rather than one write per delta.
 * Data-first (`encode(stream, codec)`) or data-last, in a pipe.
 *
 * @example
 * ```ts
 * import { AgentLoop, EventStream } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   // A server writes a run's events as Server-Sent Events...
 *   const body = agent.stream({ input: "Hi" }).pipe(EventStream.encodeBytes(EventStream.agent))
 *   // ...and a client reads them back as the same typed events.
 *   const events = yield* Stream.runCollect(body.pipe(EventStream.decode(EventStream.agent)))
 *   console.log(events.map((event) => event._tag).join(" ")) // TurnStarted Delta Delta TurnCompleted Verdict Finished
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode: {
  <A, E>(
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): <R>(stream: Stream.Stream<A, E, R>) => Stream.Stream<string, never, R>
  <A, E, R>(
    stream: Stream.Stream<A, E, R>,
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): Stream.Stream<string, never, R>
} = /* @__PURE__ */ dual(
  (args) => Stream.isStream(args[0]),
  <A, E, R>(stream: Stream.Stream<A, E, R>, codec: Codec<A, E>, options: EncodeOptions = {}) => {
    const encodeFailure = Schema.encodeEffect(Schema.fromJsonString(Schema.toCodecJson(codec.failure)))
    const frames = SseFrames.messages(stream, codec.events, identity).pipe(
      Stream.concat(Stream.succeed(SseFrames.endFrame)),
      Stream.catchCause((cause) => SseFrames.failed(cause, encodeFailure))
    )
    return SseFrames.keepingAlive(frames, options.keepAlive)
  }
)

/**
 * The SSE bytes of a stream, as {@link encode} writes them.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeBytes: {
  <A, E>(
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): <R>(stream: Stream.Stream<A, E, R>) => Stream.Stream<Uint8Array, never, R>
  <A, E, R>(
    stream: Stream.Stream<A, E, R>,
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): Stream.Stream<Uint8Array, never, R>
} = /* @__PURE__ */ dual(
  (args) => Stream.isStream(args[0]),
  <A, E, R>(stream: Stream.Stream<A, E, R>, codec: Codec<A, E>, options?: EncodeOptions) =>
    Stream.encodeText(encode(stream, codec, options))
)

/**
 * An `effect/http` response streaming `stream` as Server-Sent Events. The
 * stream runs with the services of the handler that built the response; when
 * the client goes away, it is interrupted.
 *
 * @example
 * ```ts
 * import { Schema, Stream } from "effect"
 * import { EventStream } from "@agentloop/core"
 *
 * const codec = { events: Schema.Struct({ n: Schema.Number }), failure: Schema.Never }
 * const numbers = Stream.make({ n: 1 }, { n: 2 })
 * // data-first, or data-last in a pipe
 * const response = EventStream.toHttpResponse(numbers, codec)
 * const same = numbers.pipe(EventStream.toHttpResponse(codec))
 * ```
 *
 * @since 0.1.0
 * @category conversions
 */
export const toHttpResponse: {
  <A, E>(
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): <R>(stream: Stream.Stream<A, E, R>) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  <A, E, R>(
    stream: Stream.Stream<A, E, R>,
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
} = /* @__PURE__ */ dual(
  (args) => Stream.isStream(args[0]),
  <A, E, R>(
    stream: Stream.Stream<A, E, R>,
    codec: Codec<A, E>,
    options?: EncodeOptions
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
    Effect.map(
      Effect.context<R>(),
      (context) =>
        HttpServerResponse.stream(Stream.provideContext(encodeBytes(stream, codec, options), context), { headers })
    )
)

/**
 * A web `Response` streaming `stream` as Server-Sent Events, for any framework
 * whose route handlers return one (Hono, Next.js, Bun, Deno…). Cancelling the
 * body (the client went away) interrupts the stream.
 *
 * @example
 * ```ts
 * import { AgentLoop, EventStream } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * // A fetch-style handler (Bun, Deno, Next.js route handlers): a run's events as an SSE `Response`.
 * const handler = (_request: Request) =>
 *   Effect.flatMap(AgentLoop.AgentLoop, (agent) => EventStream.toWebResponse(agent.stream({ input: "Hi" }), EventStream.agent))
 *
 * const program = Effect.gen(function*() {
 *   const response = yield* handler(new Request("http://localhost/chat", { method: "POST" }))
 *   console.log(response.headers.get("content-type")) // text/event-stream; charset=utf-8
 *   // What a client reads back from the body: the run's typed events.
 *   const events = yield* Stream.fromReadableStream({ evaluate: () => response.body!, onError: (error) => error }).pipe(
 *     EventStream.decode(EventStream.agent),
 *     Stream.runCollect
 *   )
 *   console.log(events.at(-1)?._tag) // Finished
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category conversions
 */
export const toWebResponse = <A, E, R>(
  stream: Stream.Stream<A, E, R>,
  codec: Codec<A, E>,
  options?: EncodeOptions
): Effect.Effect<Response, never, R> =>
  Effect.map(
    Stream.toReadableStreamEffect(encodeBytes(stream, codec, options)),
    (body) => new Response(body, { headers })
  )

/**
 * Why a client could not read an event stream.
 *
 * @since 0.1.0
 * @category errors
 */
export class EventStreamError extends Schema.TaggedError<EventStreamError>()("EventStreamError", {
  reason: Schema.Literals(["http", "truncated", "malformed", "server"]),
  message: Schema.String,
  status: Schema.optionalKey(Schema.Number)
}) {}

/**
 * A client's `Last-Event-ID` names no event this server wrote: it is not an
 * id of the stream's format, or it is past the events of the run it asks
 * for. A server answers `400`, rather than start the stream over (the client
 * would show events twice) or skip what it never had.
 *
 * @since 0.3.0
 * @category errors
 */
export class InvalidLastEventId extends Schema.TaggedError<InvalidLastEventId>()("InvalidLastEventId", {
  /** The header's value as it came, cut at 200 characters. */
  value: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Last-Event-ID ${JSON.stringify(this.value)} is not an id of this stream: ${this.reason}`
  }
}

/** The longest `Last-Event-ID` read; a longer one is refused before it is parsed. */
const maxLastEventIdLength = 8192

/**
 * The `Last-Event-ID` a reconnecting client sent (a browser's `EventSource`
 * sends it by itself), read with `id`, the schema of the stream's ids:
 * `undefined` when there is none (the client starts from the beginning), and
 * {@link InvalidLastEventId} when the value is not one `id` decodes, or is
 * longer than 8,192 characters. `headers` are the request's, their names in
 * lower case (as `effect/http` gives them; `Object.fromEntries(request.headers)`
 * for a web `Request`).
 *
 * @example
 * ```ts
 * import { EventStream } from "@agentloop/core"
 * import { Schema, SchemaTransformation } from "effect"
 *
 * // Ids that are positions in a log: 0, 1, 2...
 * const Position = Schema.String.check(Schema.isPattern(/^\d{1,15}$/)).pipe(
 *   Schema.decodeTo(Schema.Int, SchemaTransformation.numberFromString)
 * )
 * console.log(EventStream.lastEventId({ "last-event-id": "17" }, Position)) // { _id: 'Result', _tag: 'Success', value: 17 }
 * console.log(EventStream.lastEventId({}, Position)._tag) // Success (from the beginning)
 * console.log(EventStream.lastEventId({ "last-event-id": "abc" }, Position)._tag) // Failure
 * ```
 *
 * @since 0.3.0
 * @category server
 */
export const lastEventId = <A>(
  headers: Readonly<Record<string, string | undefined>>,
  id: Schema.Codec<A, string>
): Result.Result<A | undefined, InvalidLastEventId> => {
  const value = headers["last-event-id"]
  if (value === undefined || value === "") return Result.succeed(undefined)
  const refuse = (reason: string) =>
    Result.fail(new InvalidLastEventId({ value: value.length > 200 ? `${value.slice(0, 200)}…` : value, reason }))
  if (value.length > maxLastEventIdLength) return refuse(`longer than ${maxLastEventIdLength} characters`)
  const decoded = Schema.decodeUnknownOption(id)(value)
  return decoded._tag === "Some" ? Result.succeed(decoded.value) : refuse("this server writes no such id")
}

/**
 * Options of the client side.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecodeOptions {
  /** The largest event accepted, in characters (default 16 MiB); a larger one fails the stream as malformed. */
  readonly maxEventSize?: number | undefined
}

const malformed = (message: string) => new EventStreamError({ reason: "malformed", message })

const ServerError = Schema.fromJsonString(Schema.Struct({ message: Schema.String }))

/**
 * Reads an event stream's bytes back into its events. The stream fails with
 * the server's typed error after a `failure` event, and with `EventStreamError`
 * when the bytes end without `end` (`truncated`), an event does not decode
 * (`malformed`), or the server broke (`server`).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode =
  <A, E>(codec: Codec<A, E>, options: DecodeOptions = {}) =>
  <EIn, R>(bytes: Stream.Stream<Uint8Array, EIn, R>): Stream.Stream<A, E | EIn | EventStreamError, R> => {
    const decodeEvent = Schema.decodeUnknownExit(Schema.fromJsonString(Schema.toCodecJson(codec.events)))
    const decodeFailure = Schema.decodeUnknownExit(Schema.fromJsonString(Schema.toCodecJson(codec.failure)))
    const events = Stream.decodeText(bytes).pipe(
      Stream.pipeThroughChannel(Sse.decode<EIn, unknown>({ maxEventSize: options.maxEventSize ?? 16 * 1024 * 1024 })),
      Stream.mapError((error) =>
        Sse.Retry.is(error)
          ? malformed("the server asked to reconnect, which an event stream does not do")
          : error instanceof Sse.SseError || error instanceof Sse.EventTooLarge
          ? malformed(`not a valid event stream: ${String(error)}`)
          : error
      )
    )
    return Stream.transformPull(events, (pull) =>
      Effect.sync(() => {
        let ended = false
        const next: Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E | EIn | EventStreamError, void> = Effect.suspend(() =>
          ended ? Cause.done() : pull.pipe(
            Pull.catchDone(() =>
              Effect.fail(
                new EventStreamError({ reason: "truncated", message: "the event stream ended before its end event" })
              )
            ),
            Effect.flatMap((chunk) => {
              const out: Array<A> = []
              for (const event of chunk) {
                switch (event.event) {
                  case "message": {
                    const decoded = decodeEvent(event.data)
                    if (Exit.isFailure(decoded)) {
                      return Effect.fail(malformed(`an event did not decode: ${Cause.pretty(decoded.cause)}`))
                    }
                    out.push(decoded.value)
                    break
                  }
                  case "failure": {
                    const decoded = decodeFailure(event.data)
                    return Exit.isSuccess(decoded)
                      ? Effect.fail(decoded.value)
                      : Effect.fail(malformed(`the failure did not decode: ${Cause.pretty(decoded.cause)}`))
                  }
                  case "error": {
                    const decoded = Schema.decodeUnknownExit(ServerError)(event.data)
                    const message = Exit.isSuccess(decoded) ? decoded.value.message : event.data
                    return Effect.fail(new EventStreamError({ reason: "server", message }))
                  }
                  case "end":
                    ended = true
                    return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : Cause.done()
                  default:
                    break
                }
              }
              return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : next
            })
          )
        )
        return next
      }))
  }

/**
 * Requests an event stream with `fetch` and reads its events. Interrupting the
 * stream aborts the request, which the server sees as the client going away.
 * A response that is not a successful `text/event-stream` fails with an
 * `EventStreamError` of reason `http`, carrying its status.
 *
 * @since 0.1.0
 * @category client
 */
export const fetch = <A, E>(
  codec: Codec<A, E>,
  input: string | URL,
  init?: RequestInit,
  options?: DecodeOptions
): Stream.Stream<A, E | EventStreamError> =>
  Stream.unwrap(Effect.gen(function*() {
    const response = yield* Effect.tryPromise({
      try: (signal) => globalThis.fetch(input, { ...init, signal }),
      catch: (error) => new EventStreamError({ reason: "http", message: `the request failed: ${String(error)}` })
    })
    const type = response.headers.get("content-type") ?? ""
    if (!response.ok || !type.startsWith("text/event-stream") || response.body === null) {
      yield* Effect.promise(() => response.body?.cancel() ?? Promise.resolve())
      return yield* new EventStreamError({
        reason: "http",
        status: response.status,
        message: `expected an event stream, got HTTP ${response.status} ${
          type === "" ? "without a content type" : type
        }`
      })
    }
    const body = response.body
    return decode(codec, options)(Stream.fromReadableStream({
      evaluate: () => body,
      onError: (error) =>
        new EventStreamError({ reason: "truncated", message: `the connection broke: ${String(error)}` })
    }))
  }))

/**
 * The events of {@link fetch} as an async iterable, for code outside Effect:
 * `for await (const event of EventStream.iterate(...))`. The loop throws the
 * server's typed error, or an `EventStreamError`; breaking out of it aborts
 * the request.
 *
 * @since 0.1.0
 * @category client
 */
export const iterate = <A, E>(
  codec: Codec<A, E>,
  input: string | URL,
  init?: RequestInit,
  options?: DecodeOptions
): AsyncIterable<A> => Stream.toAsyncIterableWith(fetch(codec, input, init, options), Context.empty())

/**
 * A run's events as the AI SDK's UI message stream chunks, for `useChat`: see `UIMessageStream.fromEvents`.
 *
 * @since 0.2.0
 * @category UI message stream
 */
export const toUIMessageStream = UIMessageStream.fromEvents

/**
 * A web `Response` streaming a run as the AI SDK's UI message stream (header
 * `x-vercel-ai-ui-message-stream: v1`): see `UIMessageStream.toResponse`.
 *
 * @since 0.2.0
 * @category UI message stream
 */
export const toUIMessageStreamResponse = UIMessageStream.toResponse
