/**
 * A loopback HTTP server that plays a provider's part in tests.
 *
 * Tests queue replies (recorded-format SSE streams, HTTP errors with headers,
 * slow, stalled and cut-off streams) and then run real provider code against
 * `url` over real HTTP on 127.0.0.1. The server records every request and tells
 * when a client hung up before its response was finished, so a test can check
 * that interrupting a consumer really aborts the request.
 *
 * @since 0.1.0
 */
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Deferred, Duration, Effect, Layer, Option, Ref, type Scope, Stream, SubscriptionRef } from "effect"
import { HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Http from "node:http"

/** A request the server received. */
export interface RecordedRequest {
  readonly method: string
  /** Path and query, e.g. `/responses` or `/v1/models/x:streamGenerateContent?alt=sse`. */
  readonly url: string
  /** Header names are lower-case. */
  readonly headers: Readonly<Record<string, string>>
  /** The body parsed as JSON, or the raw text when it is not JSON. */
  readonly body: unknown
}

/** How the server answers one request. Build with {@link sse}, {@link status}, {@link oversized} or {@link hang}. */
export type Reply = SseReply | StatusReply | OversizedReply | HangReply

/** A `text/event-stream` answer; see {@link sse}. */
export interface SseReply {
  readonly _tag: "Sse"
  readonly body: Uint8Array
  readonly chunkSize: number | undefined
  readonly delay: Duration.Duration | undefined
  readonly stallAfter: number | undefined
  readonly disconnectAfter: number | undefined
  readonly keepalive: Duration.Duration | undefined
}

/** A complete answer with a status, headers and a body; see {@link status}. */
export interface StatusReply {
  readonly _tag: "Status"
  readonly status: number
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
}

/** A status with a body of `size` bytes, written as the client reads it; see {@link oversized}. */
export interface OversizedReply {
  readonly _tag: "Oversized"
  readonly status: number
  readonly size: number
}

/** No answer at all, not even headers; see {@link hang}. */
export interface HangReply {
  readonly _tag: "Hang"
}

/** The running server. Provide it with {@link layer}. */
export class ProviderServer extends Context.Service<ProviderServer, {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  readonly url: string
  /** Queues replies; each incoming request takes the next one, in order. */
  readonly reply: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
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
 * A Server-Sent Events reply. `frames` are raw SSE blocks (see {@link sseEvent})
 * joined into the body.
 *
 * - `chunkSize` splits the body's bytes into writes of that many bytes, so a
 *   multi-byte UTF-8 character can be cut in two; the server lets its event
 *   loop turn between writes, so the client reads each write as its own chunk;
 * - `delay` pauses between writes instead (real time, even under `TestClock`);
 * - `stallAfter` sends that many bytes and then nothing, keeping the connection open;
 * - `disconnectAfter` sends that many bytes and then destroys the socket;
 * - `keepalive` sends, after the frames, an SSE comment at that interval
 *   forever (real time), as servers do to keep an idle connection open.
 */
export const sse = (frames: ReadonlyArray<string>, options?: {
  readonly chunkSize?: number | undefined
  readonly delay?: Duration.Input | undefined
  readonly stallAfter?: number | undefined
  readonly disconnectAfter?: number | undefined
  readonly keepalive?: Duration.Input | undefined
}): Reply => ({
  _tag: "Sse",
  body: encoder.encode(frames.join("")),
  chunkSize: options?.chunkSize,
  delay: options?.delay === undefined ? undefined : Duration.fromInputUnsafe(options.delay),
  stallAfter: options?.stallAfter,
  disconnectAfter: options?.disconnectAfter,
  keepalive: options?.keepalive === undefined ? undefined : Duration.fromInputUnsafe(options.keepalive)
})

/** One SSE frame: an optional `event:` line, a `data:` line with `data` as JSON, and the blank line. */
export const sseEvent = (data: unknown, event?: string): string =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`

/** A complete reply with `status`; `body` is sent as is when a string, as JSON otherwise. */
export const status = (status: number, body: unknown, headers?: Record<string, string>): Reply => ({
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
 */
export const oversized = (status: number, size: number): Reply => ({ _tag: "Oversized", status, size })

/** Never answers: no status, no headers, the connection stays open (for request timeouts). */
export const hang: Reply = { _tag: "Hang" }

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

const pieces = (body: Uint8Array, end: number, size: number | undefined): Array<Uint8Array> => {
  const step = size === undefined || size <= 0 ? Math.max(end, 1) : size
  const out: Array<Uint8Array> = []
  for (let start = 0; start < end; start += step) out.push(body.subarray(start, Math.min(end, start + step)))
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
 * Starts a server on a random port of 127.0.0.1; it stops, closing every open
 * connection, with the scope. A test that needs a second host (the target of
 * a redirect) starts one with this; most use {@link layer}.
 */
export const make: Effect.Effect<ProviderServer["Service"], never, Scope.Scope> = Effect.gen(function*() {
    const nodeServer = Http.createServer()
    const server = yield* NodeHttpServer.make(() => nodeServer, {
      port: 0,
      host: "127.0.0.1",
      gracefulShutdownTimeout: Duration.zero
    }).pipe(Effect.orDie)
    const queue = yield* Ref.make<ReadonlyArray<Reply>>([])
    const recorded = yield* SubscriptionRef.make<ReadonlyArray<RecordedRequest>>([])
    const aborted = yield* Deferred.make<void>()

    const respond = (
      request: HttpServerRequest.HttpServerRequest,
      reply: Reply | undefined,
      index: number
    ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
      if (reply === undefined) {
        return Effect.succeed(HttpServerResponse.jsonUnsafe({
          error: {
            message: `ProviderServer: no reply queued for request #${index + 1} (${request.method} ${request.url}); ` +
              "the test script ran out of replies"
          }
        }, { status: 500 }))
      }
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
      const end = Math.min(reply.body.length, reply.stallAfter ?? reply.disconnectAfter ?? reply.body.length)
      const pause = reply.delay === undefined ? nextTurn : realSleep(reply.delay)
      // One element per write: the server writes a whole chunk of the stream at once.
      const writes = Stream.fromIterable(pieces(reply.body, end, reply.chunkSize)).pipe(
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

    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const text = yield* Effect.orElseSucceed(request.text, () => "")
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value
      const received: RecordedRequest = { method: request.method, url: request.url, headers, body: parseBody(text) }
      const index = yield* SubscriptionRef.modify(recorded, (all) => [all.length, [...all, received]])
      const reply = yield* Ref.modify(queue, (replies): [Reply | undefined, ReadonlyArray<Reply>] => [replies[0], replies.slice(1)])
      return yield* respond(request, reply, index)
    })

    yield* HttpServer.serveEffect(app).pipe(Effect.provideService(HttpServer.HttpServer, server))
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))

    const address = nodeServer.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    return ProviderServer.of({
      url: `http://127.0.0.1:${port}`,
      reply: (...replies) => Ref.update(queue, (queued) => [...queued, ...replies]),
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

/** Starts the server for a test; see {@link make}. */
export const layer: Layer.Layer<ProviderServer> = Layer.effect(ProviderServer, make)
