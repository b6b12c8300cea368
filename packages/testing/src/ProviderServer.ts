/**
 * A loopback HTTP server that plays a provider's part in tests.
 *
 * Tests queue answers and then run real provider code against `url` over real
 * HTTP on 127.0.0.1. A server made for a provider's wire format
 * ({@link layerWire}, with `ResponsesWire.wire`, `GeminiWire.wire` or
 * `AnthropicWire.wire`) answers with a `Turn` or an `AiError` written the way
 * that provider's server writes them; any server answers with raw replies:
 * SSE frames, HTTP errors with headers, slow, stalled and cut-off streams. It
 * records every request and tells when a client hung up before its response
 * was finished, so a test can check that interrupting a consumer really aborts
 * the request. A request nothing was scripted for fails at once with a `400`
 * that says so (not a `500` a provider would retry).
 *
 * @since 0.1.0
 */
import * as AiError from "@agentloop/core/AiError"
import type * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import type * as Turn from "@agentloop/core/Turn"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Http from "node:http"

/**
 * A request the server received.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordedRequest {
  readonly method: string
  /** Path and query, e.g. `/responses` or `/v1/models/x:streamGenerateContent?alt=sse`. */
  readonly url: string
  /** Header names are lower-case. */
  readonly headers: Readonly<Record<string, string>>
  /** The body parsed as JSON, or the raw text when it is not JSON. */
  readonly body: unknown
}

/**
 * How the server answers one request. Build with {@link sse}, {@link status},
 * {@link oversized}, {@link hang}, or, on a server with a wire format,
 * {@link turn} and {@link error}.
 *
 * @since 0.1.0
 * @category models
 */
export type Reply = SseReply | StatusReply | OversizedReply | HangReply | TurnReply | ErrorReply

/**
 * What a test scripts for one request: a {@link Reply}, or, on a server with
 * a wire format, a `Turn` (as {@link turn} with its defaults) or an `AiError`
 * (as {@link error}).
 *
 * @since 0.1.0
 * @category models
 */
export type Answer = Reply | Turn.Turn | AiError.AiError

/**
 * A `text/event-stream` answer; see {@link sse}.
 *
 * @since 0.1.0
 * @category models
 */
export interface SseReply {
  readonly _tag: "Sse"
  /** The frames, encoded; each is one write unless `chunkSize` says otherwise. */
  readonly frames: ReadonlyArray<Uint8Array>
  readonly chunkSize: number | undefined
  readonly delay: Duration.Duration | undefined
  readonly stallAfter: number | undefined
  readonly disconnectAfter: number | undefined
  readonly keepalive: Duration.Duration | undefined
}

/**
 * A complete answer with a status, headers and a body; see {@link status}.
 *
 * @since 0.1.0
 * @category models
 */
export interface StatusReply {
  readonly _tag: "Status"
  readonly status: number
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
}

/**
 * A status with a body of `size` bytes, written as the client reads it; see {@link oversized}.
 *
 * @since 0.1.0
 * @category models
 */
export interface OversizedReply {
  readonly _tag: "Oversized"
  readonly status: number
  readonly size: number
}

/**
 * No answer at all, not even headers; see {@link hang}.
 *
 * @since 0.1.0
 * @category models
 */
export interface HangReply {
  readonly _tag: "Hang"
}

/**
 * A turn in the server's wire format; see {@link turn}.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnReply {
  readonly _tag: "Turn"
  readonly turn: Turn.Turn
  readonly options: TurnOptions
}

/**
 * An error in the server's wire format; see {@link error}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorReply {
  readonly _tag: "Error"
  readonly error: AiError.AiError
}

/**
 * What answers a request nothing was queued for; see {@link ProviderServer} `handle`.
 *
 * @since 0.1.0
 * @category models
 */
export type Handler = (request: RecordedRequest, index: number) => Answer | Effect.Effect<Answer>

/**
 * The running server. Provide it with {@link layer}.
 *
 * @since 0.1.0
 * @category services
 */
export class ProviderServer extends Context.Service<ProviderServer, {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  readonly url: string
  /** The wire format the server writes turns and errors in, if it was made with one. */
  readonly wire: ProviderWire.ProviderWire | undefined
  /**
   * Queues answers; each incoming request takes the next one, in order. A
   * `Turn` or an `AiError` needs a server with a wire format ({@link layerWire}):
   * without one, this dies saying so.
   */
  readonly reply: (...answers: ReadonlyArray<Answer>) => Effect.Effect<void>
  /**
   * Answers, from now on, every request the queue has no answer for with what
   * `handler` says, from the request and its index (0 for the first request
   * the server received): for servers that outlive one run, or requests that
   * come in no fixed order.
   */
  readonly handle: (handler: Handler) => Effect.Effect<void>
  /**
   * Drops the queued answers and the handler, and returns the answers no
   * request took: a test that goes on after an interrupted run starts again
   * from an empty script, and can check what its last run left unasked.
   */
  readonly reset: Effect.Effect<ReadonlyArray<Answer>>
  /** Every request received so far, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /**
   * Waits until at least `count` requests have arrived, then returns them all;
   * a test syncs on a request with it instead of polling {@link requests}.
   */
  readonly awaitRequests: (count: number) => Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Completes once a client has closed a connection before its response body was finished. */
  readonly awaitClientAbort: Effect.Effect<void>
}>()("@agentloop/testing/ProviderServer") {}

const encoder = new TextEncoder()

/**
 * How a streamed reply is paced and broken; see {@link sse}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Pacing {
  readonly chunkSize?: number | undefined
  readonly delay?: Duration.Input | undefined
  readonly stallAfter?: number | undefined
  readonly disconnectAfter?: number | undefined
  readonly keepalive?: Duration.Input | undefined
}

/**
 * How {@link turn} writes and paces a turn.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnOptions extends ProviderWire.TurnOptions {
  /** The pause between two frames (real time, even under `TestClock`). */
  readonly delay?: Duration.Input | undefined
}

/**
 * A Server-Sent Events reply of `frames`, raw SSE blocks (see {@link sseEvent}).
 * Each frame is one write, and the server lets its event loop turn between
 * writes, so the client reads each frame as its own chunk, as from a real
 * server that flushes every event.
 *
 * - `chunkSize` splits the body's bytes into writes of that many bytes
 *   instead, so a multi-byte UTF-8 character or a frame can be cut in two;
 * - `delay` pauses that long between writes (real time, even under `TestClock`);
 * - `stallAfter` sends that many bytes and then nothing, keeping the connection open;
 * - `disconnectAfter` sends that many bytes and then destroys the socket;
 * - `keepalive` sends, after the frames, an SSE comment at that interval
 *   forever (real time), as servers do to keep an idle connection open.
 *
 * @since 0.1.0
 * @category responses
 */
export const sse = (frames: ReadonlyArray<string>, options?: Pacing): SseReply => ({
  _tag: "Sse",
  frames: frames.map((frame) => encoder.encode(frame)),
  chunkSize: options?.chunkSize,
  delay: options?.delay === undefined ? undefined : Duration.fromInputUnsafe(options.delay),
  stallAfter: options?.stallAfter,
  disconnectAfter: options?.disconnectAfter,
  keepalive: options?.keepalive === undefined ? undefined : Duration.fromInputUnsafe(options.keepalive)
})

/**
 * One SSE frame: an optional `event:` line, a `data:` line with `data` as JSON, and the blank line.
 *
 * @since 0.1.0
 * @category responses
 */
export const sseEvent = (data: unknown, event?: string): string =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`

/**
 * A complete reply with `status`; `body` is sent as is when a string, as JSON otherwise.
 *
 * @since 0.1.0
 * @category responses
 */
export const status = (status: number, body: unknown, headers?: Record<string, string>): StatusReply => ({
  _tag: "Status",
  status,
  body: typeof body === "string" ? body : JSON.stringify(body),
  headers: {
    "content-type": typeof body === "string" ? "text/plain" : "application/json",
    ...headers
  }
})

/**
 * A `text/plain` answer with `status` whose body is `size` bytes of `x`,
 * produced only as fast as the client reads it: a test of how much of a huge
 * error body a client reads, without holding it in memory.
 *
 * @since 0.1.0
 * @category responses
 */
export const oversized = (status: number, size: number): Reply => ({ _tag: "Oversized", status, size })

/**
 * Never answers: no status, no headers, the connection stays open (for request timeouts).
 *
 * @since 0.1.0
 * @category responses
 */
export const hang: Reply = { _tag: "Hang" }

/**
 * `turn` as the server's provider streams it (its wire format's
 * `ProviderWire.turn`): text, reasoning and arguments in pieces of
 * `chunkSize` characters, one frame each, `delay` apart.
 *
 * @since 0.1.0
 * @category responses
 */
export const turn = (turn: Turn.Turn, options: TurnOptions = {}): Reply => ({ _tag: "Turn", turn, options })

/**
 * `error` as the server's provider reports it (its wire format's `ProviderWire.error`).
 *
 * @since 0.1.0
 * @category responses
 */
export const error = (error: AiError.AiError): Reply => ({ _tag: "Error", error })

const isAiError = Schema.is(AiError.AiError)

/** The reply an answer stands for: a bare turn or error is written with the defaults. */
const toReply = (answer: Answer): Reply => {
  if (!("_tag" in answer)) return turn(answer)
  return isAiError(answer) ? error(answer) : answer
}

// Delays are real time: the server stands for a remote peer, which a test's TestClock does not control.
const realSleep = (duration: Duration.Duration): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
    return Effect.sync(() => clearTimeout(timer))
  })

// Writes made in one turn of the event loop reach the client as one chunk; a turn between them keeps them apart.
const nextTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const immediate = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(immediate))
})

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((size, part) => size + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

const split = (bytes: Uint8Array, size: number): Array<Uint8Array> => {
  const out: Array<Uint8Array> = []
  for (let start = 0; start < bytes.length; start += size) out.push(bytes.subarray(start, start + size))
  return out
}

/** The writes of an SSE reply, `end` bytes in all: its frames, or pieces of `chunkSize` bytes. */
const writesOf = (reply: SseReply, end: number): Array<Uint8Array> => {
  const units = reply.chunkSize === undefined || reply.chunkSize <= 0
    ? reply.frames
    : split(concat(reply.frames), reply.chunkSize)
  const out: Array<Uint8Array> = []
  let sent = 0
  for (const unit of units) {
    if (sent >= end) break
    const piece = unit.subarray(0, end - sent)
    out.push(piece)
    sent += piece.length
  }
  return out
}

const parseBody = (text: string): unknown => {
  if (text.length === 0) return text
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const fillerChunk = new Uint8Array(64 * 1024).fill(120)

const filler = (size: number): Iterable<Uint8Array> => ({
  *[Symbol.iterator]() {
    for (let sent = 0; sent < size; sent += fillerChunk.length) {
      yield fillerChunk.subarray(0, Math.min(fillerChunk.length, size - sent))
    }
  }
})

const keepaliveComment = encoder.encode(": keepalive\n\n")

/**
 * How {@link make} builds a server.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The provider wire format turns and errors are written in. */
  readonly wire?: ProviderWire.ProviderWire | undefined
}

const bodyByteLength = (reply: SseReply): number => reply.frames.reduce((size, frame) => size + frame.length, 0)

/** What the server says to a request nothing was scripted for, in the wire's error format when it has one. */
const unscripted = (wire: ProviderWire.ProviderWire | undefined, request: RecordedRequest, index: number): Reply => {
  const message = `ProviderServer: nothing scripted for request #${index + 1} (${request.method} ${request.url}): ` +
    "the test queued no answer for it (reply) and set no handler (handle)"
  return wire === undefined
    ? status(400, { error: { message } })
    : error(new AiError.InvalidRequest({ provider: wire.provider, status: 400, message }))
}

/**
 * Starts a server on a random port of 127.0.0.1, writing turns and errors in
 * `options.wire`; it stops, closing every open connection, with the scope. A
 * test that needs a second host (the target of a redirect) starts one with
 * this; most use {@link layer} or {@link layerWire}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<ProviderServer["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const { wire } = options
    const nodeServer = Http.createServer()
    const server = yield* NodeHttpServer.make(() => nodeServer, {
      port: 0,
      host: "127.0.0.1",
      gracefulShutdownTimeout: Duration.zero
    }).pipe(Effect.orDie)
    const queue = yield* Ref.make<ReadonlyArray<Answer>>([])
    const handler = yield* Ref.make<Handler | undefined>(undefined)
    const recorded = yield* SubscriptionRef.make<ReadonlyArray<RecordedRequest>>([])
    const aborted = yield* Deferred.make<void>()

    const needsWire = (what: string) =>
      `ProviderServer: ${what} needs a server made with a wire format, such as ` +
      "ProviderServer.layerWire(ResponsesWire.wire); this one has none"

    /** The reply in bytes: turns and errors written in the wire format (a server without one refuses them). */
    const written = (reply: Reply): Exclude<Reply, TurnReply | ErrorReply> => {
      if (reply._tag !== "Turn" && reply._tag !== "Error") return reply
      if (wire === undefined) return status(400, { error: { message: needsWire(`answering with a ${reply._tag}`) } })
      if (reply._tag === "Turn") {
        const { chunkSize, complete, delay } = reply.options
        return sse(wire.turn(reply.turn, { chunkSize, complete }), { delay })
      }
      const answer = wire.error(reply.error)
      return { _tag: "Status", status: answer.status, body: answer.body, headers: answer.headers }
    }

    const respond = (
      request: HttpServerRequest.HttpServerRequest,
      reply: Exclude<Reply, TurnReply | ErrorReply>
    ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
      if (reply._tag === "Status") {
        return Effect.succeed(HttpServerResponse.text(reply.body, { status: reply.status, headers: reply.headers }))
      }
      const nodeRequest = NodeHttpServerRequest.toIncomingMessage(request)
      const nodeResponse = NodeHttpServerRequest.toServerResponse(request)
      let closedByServer = false
      nodeResponse.on("close", () => {
        if (!nodeResponse.writableEnded && !closedByServer) Deferred.doneUnsafe(aborted, Effect.void)
      })
      // The server runs handlers uninterruptibly; the wait must opt in, or a client abort could never end it.
      if (reply._tag === "Hang") return Effect.interruptible(Effect.never)
      if (reply._tag === "Oversized") {
        return Effect.succeed(HttpServerResponse.stream(Stream.fromIterable(filler(reply.size)), {
          status: reply.status,
          contentType: "text/plain"
        }))
      }
      const end = Math.min(bodyByteLength(reply), reply.stallAfter ?? reply.disconnectAfter ?? Number.POSITIVE_INFINITY)
      const pause = reply.delay === undefined ? nextTurn : realSleep(reply.delay)
      // One element per write: the server writes a whole chunk of the stream at once.
      const writes = Stream.fromIterable(writesOf(reply, end)).pipe(
        Stream.mapEffect((piece, i) => i === 0 ? Effect.succeed(piece) : Effect.as(pause, piece))
      )
      const tail: Stream.Stream<Uint8Array> = reply.disconnectAfter !== undefined
        ? Stream.fromEffect(Effect.sync(() => {
          closedByServer = true
          // destroySoon flushes what was written before cutting the connection, so the client sees exactly `end` bytes.
          nodeRequest.socket.destroySoon()
        })).pipe(Stream.drain, Stream.concat(Stream.never))
        : reply.stallAfter !== undefined
        ? Stream.never
        : reply.keepalive !== undefined
        ? Stream.fromEffectRepeat(Effect.as(realSleep(reply.keepalive), keepaliveComment))
        : Stream.empty
      nodeRequest.socket.setNoDelay(true)
      return Effect.succeed(HttpServerResponse.stream(Stream.concat(writes, tail), {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-cache" }
      }))
    }

    /** The answer to the request: the next queued one, else the handler's, else a refusal that says why. */
    const answerFor = (received: RecordedRequest, index: number): Effect.Effect<Reply> =>
      Effect.gen(function*() {
        const queued = yield* Ref.modify(
          queue,
          (answers): [Answer | undefined, ReadonlyArray<Answer>] => [answers[0], answers.slice(1)]
        )
        if (queued !== undefined) return toReply(queued)
        const handle = yield* Ref.get(handler)
        if (handle === undefined) return unscripted(wire, received, index)
        const handled = handle(received, index)
        return toReply(Effect.isEffect(handled) ? yield* handled : handled)
      })

    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const text = yield* Effect.orElseSucceed(request.text, () => "")
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value
      const received: RecordedRequest = { method: request.method, url: request.url, headers, body: parseBody(text) }
      const index = yield* SubscriptionRef.modify(recorded, (all) => [all.length, [...all, received]])
      return yield* respond(request, written(yield* answerFor(received, index)))
    })

    yield* HttpServer.serveEffect(app).pipe(Effect.provideService(HttpServer.HttpServer, server))
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))

    const address = nodeServer.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return ProviderServer.of({
      url: `http://127.0.0.1:${port}`,
      wire,
      reply: (...answers) => {
        const needing = answers.map(toReply).find((reply) => reply._tag === "Turn" || reply._tag === "Error")
        return needing !== undefined && wire === undefined
          ? Effect.die(new Error(needsWire(`replying with a ${needing._tag}`)))
          : Ref.update(queue, (queued) => [...queued, ...answers])
      },
      handle: (next) => Ref.set(handler, next),
      reset: Effect.andThen(Ref.set(handler, undefined), Ref.getAndSet(queue, [])),
      requests: SubscriptionRef.get(recorded),
      awaitRequests: (count) =>
        SubscriptionRef.changes(recorded).pipe(
          Stream.filter((all) => all.length >= count),
          Stream.runHead,
          // `changes` never ends, so the head is always there.
          Effect.map(Option.getOrThrow)
        ),
      awaitClientAbort: Deferred.await(aborted)
    })
  })

/**
 * Starts a server without a wire format for a test; see {@link make}.
 *
 * @example
 * ```ts
 * import { ProviderServer } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * // A loopback HTTP server that answers each request with the next scripted reply, and records what it got.
 * const program = Effect.gen(function*() {
 *   const server = yield* ProviderServer.ProviderServer
 *   yield* server.reply(ProviderServer.status(429, { error: { message: "slow down" } }, { "retry-after": "1" }))
 *   const response = yield* Effect.promise(() =>
 *     fetch(`${server.url}/v1/chat`, { method: "POST", body: JSON.stringify({ model: "m" }) })
 *   )
 *   console.log(response.status, response.headers.get("retry-after")) // 429 1
 *   console.log((yield* server.requests).map((request) => request.url)) // [ '/v1/chat' ]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(ProviderServer.layer)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ProviderServer> = Layer.effect(ProviderServer, make())

/**
 * Starts a server that writes turns and errors in `wire`, for a test; see {@link make}.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWire = (wire: ProviderWire.ProviderWire): Layer.Layer<ProviderServer> =>
  Layer.effect(ProviderServer, make({ wire }))
