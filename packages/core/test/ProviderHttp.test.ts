import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Redacted, Result, Schedule, Schema, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { TestClock } from "effect/testing"
import * as AiError from "../src/AiError.ts"
import * as ProviderHttp from "../src/ProviderHttp.ts"
import * as ProviderServer from "../src/testing/ProviderServer.ts"
import * as SpanRecorder from "../src/testing/SpanRecorder.ts"

const TestLayer = Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)
const canary = "sk-canary-0123456789-DO-NOT-LEAK"

const events = (options?: Partial<ProviderHttp.StreamOptions>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    return ProviderHttp.streamEvents({
      provider: "test",
      request: HttpClientRequest.post(`${server.url}/stream?key=${canary}`).pipe(
        HttpClientRequest.bearerToken(canary),
        HttpClientRequest.bodyJsonUnsafe({ stream: true })
      ),
      secrets: [Redacted.make(canary)],
      ...options
    })
  })

const failure = (options?: Partial<ProviderHttp.StreamOptions>) =>
  Effect.flatMap(events(options), (stream) => Effect.flip(Stream.runCollect(stream)))

describe("ProviderHttp.streamEvents", () => {
  it.live("parses events split at every byte, keeping multi-byte characters and ignoring retry fields", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse([
        ProviderServer.sseEvent({ text: "ünïcødé ✓ 🎉" }, "delta"),
        ": a comment\nretry: 10\n\n",
        ProviderServer.sseEvent({ done: true })
      ], { chunkSize: 1 }))
      const received = yield* Stream.runCollect(yield* events())
      expect(received.map((e) => [e.event, e.data])).toStrictEqual([
        ["delta", JSON.stringify({ text: "ünïcødé ✓ 🎉" })],
        ["message", JSON.stringify({ done: true })]
      ])
      const [request] = yield* server.requests
      expect(request?.headers.authorization).toBe(`Bearer ${canary}`)
      // The key moved from the URL text to a redacted parameter is still sent.
      expect(request?.url).toBe(`/stream?key=${canary}`)
      expect(request?.body).toStrictEqual({ stream: true })
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails with MalformedEvent instead of buffering an event longer than maxEventSize", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse([
        ProviderServer.sseEvent({ text: "short" }),
        ProviderServer.sseEvent({ text: "x".repeat(4096) })
      ], { chunkSize: 512 }))
      const received: Array<string> = []
      const error = yield* (yield* events({ maxEventSize: 1024 })).pipe(
        Stream.runForEach((event) => Effect.sync(() => received.push(event.data))),
        Effect.flip
      )
      expect(received).toStrictEqual([JSON.stringify({ text: "short" })])
      expect(error).toMatchObject({ _tag: "MalformedEvent", event: "(too large)" })
      expect(error.message).toContain("1024")
    }).pipe(Effect.provide(TestLayer)))

  it.live("maps HTTP statuses to AiErrors with the provider's message", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const cases: ReadonlyArray<readonly [ProviderServer.Reply, string, Partial<Record<string, unknown>>]> = [
        [ProviderServer.status(401, { error: { message: `bad key ${canary}` } }), "AuthFailed", { status: 401 }],
        [ProviderServer.status(403, { error: { message: "forbidden" } }), "AuthFailed", { status: 403, message: "forbidden" }],
        [ProviderServer.status(429, { error: { message: "slow" } }, { "retry-after": "7" }), "RateLimited", {
          message: "slow",
          retryAfter: Duration.seconds(7)
        }],
        [ProviderServer.status(408, "too slow"), "Timeout", { message: "too slow" }],
        [ProviderServer.status(504, { message: "gateway" }), "Timeout", { message: "gateway" }],
        [ProviderServer.status(413, { error: { message: "huge" } }), "ContextLengthExceeded", { message: "huge" }],
        [
          ProviderServer.status(400, { error: { message: "This model's maximum context length is 128000 tokens" } }),
          "ContextLengthExceeded",
          {}
        ],
        [ProviderServer.status(400, { error: { message: "unknown parameter: foo" } }), "InvalidRequest", {
          status: 400,
          message: "unknown parameter: foo"
        }],
        [ProviderServer.status(404, [{ error: { message: "no such model" } }]), "InvalidRequest", {
          status: 404,
          message: "no such model"
        }],
        [ProviderServer.status(500, "boom"), "Unavailable", { status: 500, message: "boom" }],
        [ProviderServer.status(503, ""), "Unavailable", { status: 503, message: "(empty body)" }]
      ]
      for (const [reply, tag, fields] of cases) {
        yield* server.reply(reply)
        const error = yield* failure()
        expect(error._tag).toBe(tag)
        expect(error).toMatchObject(fields)
        expect(error.message).not.toContain(canary)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reads Retry-After given as an HTTP date", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* TestClock.setTime(Date.parse("2030-01-01T00:00:00Z"))
      yield* server.reply(ProviderServer.status(429, "later", { "retry-after": "Tue, 01 Jan 2030 00:00:30 GMT" }))
      const error = yield* failure()
      expect(error).toMatchObject({ _tag: "RateLimited", retryAfter: Duration.seconds(30) })
    }).pipe(Effect.provide(TestLayer)))

  it.live("reads retry-after-ms before Retry-After, and a 503's Retry-After too", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(
        ProviderServer.status(429, "later", { "retry-after-ms": "1500", "retry-after": "9" }),
        ProviderServer.status(503, "overloaded", { "retry-after": "4" })
      )
      expect(yield* failure()).toMatchObject({ _tag: "RateLimited", retryAfter: Duration.millis(1500) })
      expect(yield* failure()).toMatchObject({ _tag: "Unavailable", status: 503, retryAfter: Duration.seconds(4) })
    }).pipe(Effect.provide(TestLayer)))

  it.live("lets the provider decide what a 400 means and where its message is", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.status(400, { detail: { text: "TOKENS" } }))
      const error = yield* failure({
        isContextLengthError: (status, body) => status === 400 && body.includes("TOKENS"),
        errorMessage: (body) => `custom: ${body.length}`
      })
      expect(error).toMatchObject({ _tag: "ContextLengthExceeded", message: "custom: 28" })
    }).pipe(Effect.provide(TestLayer)))

  it.live("turns a refused connection into Unavailable", () =>
    Effect.gen(function*() {
      const url = yield* ProviderServer.ProviderServer.pipe(
        Effect.map((server) => server.url),
        Effect.provide(ProviderServer.layer)
      )
      const error = yield* ProviderHttp.streamEvents({
        provider: "test",
        request: HttpClientRequest.post(`${url}/stream?key=${canary}`)
      }).pipe(Stream.runCollect, Effect.flip)
      expect(error._tag).toBe("Unavailable")
      expect(error.message).not.toContain(canary)
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.live("turns a connection cut mid-stream into Unavailable after the events already received", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const first = ProviderServer.sseEvent({ n: 1 })
      yield* server.reply(ProviderServer.sse([first, ProviderServer.sseEvent({ n: 2 })], {
        disconnectAfter: first.length + 3
      }))
      const received: Array<string> = []
      const error = yield* (yield* events()).pipe(
        Stream.runForEach((e) => Effect.sync(() => received.push(e.data))),
        Effect.flip
      )
      expect(received).toStrictEqual([JSON.stringify({ n: 1 })])
      expect(error._tag).toBe("Unavailable")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with Timeout when the body stalls longer than idleTimeout, and aborts the request", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const first = ProviderServer.sseEvent({ n: 1 })
      yield* server.reply(ProviderServer.sse([first, ProviderServer.sseEvent({ n: 2 })], { stallAfter: first.length }))
      const gotFirst = yield* Deferred.make<void>()
      const fiber = yield* (yield* events({ idleTimeout: "30 seconds" })).pipe(
        Stream.tap(() => Deferred.succeed(gotFirst, undefined)),
        Stream.runCollect,
        Effect.forkChild
      )
      yield* Deferred.await(gotFirst)
      yield* TestClock.adjust("29 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.await(fiber)
      expect(exit).toStrictEqual(Exit.fail(new AiError.Timeout({ provider: "test", message: "no data for 30s while streaming" })))
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with Timeout when no response arrives within requestTimeout, and aborts the request", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.hang)
      const fiber = yield* (yield* events({ requestTimeout: "1 minute" })).pipe(Stream.runCollect, Effect.forkChild)
      // The request reached the server, so the timeout's timer is already on the TestClock.
      yield* server.awaitRequests(1)
      yield* TestClock.adjust("1 minute")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error._tag).toBe("Timeout")
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("aborts the request when the consumer stops early", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse(
        Array.from({ length: 50 }, (_, n) => ProviderServer.sseEvent({ n })),
        { chunkSize: 16, delay: "5 millis" }
      ))
      const taken = yield* Stream.runCollect(Stream.take(yield* events(), 2))
      expect(taken.map((e) => e.data)).toStrictEqual(["{\"n\":0}", "{\"n\":1}"])
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("keeps the key out of every span attribute and error", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const { spans, tracer } = SpanRecorder.make()
      yield* server.reply(
        ProviderServer.status(401, { error: { message: `Incorrect API key provided: ${canary}` } }),
        ProviderServer.sse([ProviderServer.sseEvent({ ok: true })])
      )
      const error = yield* failure().pipe(Effect.withTracer(tracer))
      yield* Stream.runCollect(yield* events()).pipe(Effect.withTracer(tracer))
      expect(spans.length).toBeGreaterThan(0)
      const seen = SpanRecorder.text(spans)
      expect(seen).toContain("url.full")
      expect(seen).toContain("http.request.header.authorization")
      expect(seen).not.toContain(canary)
      expect(error.message).toBe("Incorrect API key provided: <redacted>")
    }).pipe(
      // Record every header on the spans, so a key that escaped redaction would show.
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.provide(TestLayer)
    ))
})

describe("ProviderHttp.retry", () => {
  const unavailable = new AiError.Unavailable({ provider: "test", message: "down" })

  /** A stream whose nth run (from 0) does what `runs[n]` says, counting runs. */
  const scripted = (runs: ReadonlyArray<Stream.Stream<number, AiError.AiError>>) => {
    let count = 0
    const stream = Stream.suspend(() => runs[count++] ?? Stream.fail(unavailable))
    return { stream, count: () => count }
  }

  it.effect("re-runs a stream that failed with a retryable error before emitting", () =>
    Effect.gen(function*() {
      const { count, stream } = scripted([Stream.fail(unavailable), Stream.make(1, 2)])
      const fiber = yield* Effect.forkChild(Stream.runCollect(ProviderHttp.retry(stream)))
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(fiber)).toStrictEqual([1, 2])
      expect(count()).toBe(2)
    }))

  it.effect("never re-runs once an element reached the consumer", () =>
    Effect.gen(function*() {
      const { count, stream } = scripted([Stream.concat(Stream.make(1), Stream.fail(unavailable)), Stream.make(1, 2)])
      const exit = yield* Effect.exit(Stream.runCollect(ProviderHttp.retry(stream, Schedule.forever)))
      expect(exit).toStrictEqual(Exit.fail(unavailable))
      expect(count()).toBe(1)
    }))

  it.effect("never re-runs a non-retryable error", () =>
    Effect.gen(function*() {
      const auth = new AiError.AuthFailed({ provider: "test", status: 401, message: "no" })
      const { count, stream } = scripted([Stream.fail(auth), Stream.make(1)])
      const exit = yield* Effect.exit(Stream.runCollect(stream.pipe(ProviderHttp.retry(Schedule.forever))))
      expect(exit).toStrictEqual(Exit.fail(auth))
      expect(count()).toBe(1)
    }))

  for (
    const error of [
      new AiError.RateLimited({ provider: "test", message: "429", retryAfter: Duration.seconds(20) }),
      new AiError.Unavailable({ provider: "test", message: "503", retryAfter: Duration.seconds(20) })
    ]
  ) {
    it.effect(`waits at least a ${error._tag}'s retryAfter, even when the policy asks for less`, () =>
      Effect.gen(function*() {
        const { count, stream } = scripted([Stream.fail(error), Stream.make(1)])
        const fiber = yield* Effect.forkChild(Stream.runCollect(ProviderHttp.retry(stream, Schedule.spaced("1 second"))))
        yield* TestClock.adjust("19 seconds")
        expect(count()).toBe(1)
        yield* TestClock.adjust("1 second")
        expect(yield* Fiber.join(fiber)).toStrictEqual([1])
        expect(count()).toBe(2)
      }))
  }

  it.effect("gives up with the last error when the policy is exhausted", () =>
    Effect.gen(function*() {
      const { count, stream } = scripted([])
      const fiber = yield* Effect.forkChild(Effect.exit(Stream.runCollect(ProviderHttp.retry(stream))))
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(fiber)).toStrictEqual(Exit.fail(unavailable))
      expect(count()).toBe(4)
    }))

  it.live("recovers from a 500 over HTTP, and noRetry does not", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.status(500, "down"), ProviderServer.sse([ProviderServer.sseEvent({ ok: 1 })]))
      const received = yield* Stream.runCollect(ProviderHttp.retry(yield* events(), Schedule.recurs(2)))
      expect(received.map((e) => e.data)).toStrictEqual(["{\"ok\":1}"])
      expect((yield* server.requests).length).toBe(2)
      yield* server.reply(ProviderServer.status(500, "down"), ProviderServer.sse([ProviderServer.sseEvent({ ok: 1 })]))
      const error = yield* Effect.flip(Stream.runCollect(ProviderHttp.retry(yield* events(), ProviderHttp.noRetry)))
      expect(error._tag).toBe("Unavailable")
    }).pipe(Effect.provide(TestLayer)))
})

describe("ProviderHttp.redactErrors", () => {
  it.effect("cuts secrets out of the message of every kind of error, keeping its other fields", () =>
    Effect.gen(function*() {
      const secret = Redacted.make(canary)
      const errors: ReadonlyArray<AiError.AiError> = [
        new AiError.AuthFailed({ provider: "p", status: 401, message: `bad ${canary}` }),
        new AiError.RateLimited({ provider: "p", message: canary, retryAfter: Duration.seconds(2) }),
        new AiError.Timeout({ provider: "p", message: canary }),
        new AiError.ContextLengthExceeded({ provider: "p", message: canary }),
        new AiError.InvalidRequest({ provider: "p", status: 400, message: canary }),
        new AiError.Unavailable({ provider: "p", message: `${canary}${canary}` }),
        new AiError.MalformedEvent({ provider: "p", event: "e", message: canary }),
        new AiError.IncompleteTurn({ message: canary })
      ]
      for (const error of errors) {
        const redacted = yield* Effect.flip(Stream.runDrain(ProviderHttp.redactErrors(Stream.fail(error), [secret])))
        expect(redacted._tag).toBe(error._tag)
        expect(redacted.message).not.toContain(canary)
        expect(redacted.message).toContain("<redacted>")
        expect({ ...redacted, message: "" }).toStrictEqual({ ...error, message: "" })
      }
    }))
})

describe("ProviderHttp.decodeEvent", () => {
  const decode = ProviderHttp.decodeEvent("test", Schema.Struct({ type: Schema.Literal("delta"), text: Schema.String }))
  const event = (data: string, name = "message") => ({ _tag: "Event" as const, event: name, id: undefined, data })

  it("decodes the JSON data of an event", () => {
    expect(decode(event("{\"type\":\"delta\",\"text\":\"hi\"}"))).toStrictEqual(Result.succeed({ type: "delta", text: "hi" }))
  })

  it("names the event in MalformedEvent: SSE name, else the JSON type", () => {
    const named = decode(event("{\"type\":\"delta\",\"text\":1}", "response.output_text.delta"))
    expect(Result.isFailure(named) && named.failure.event).toBe("response.output_text.delta")
    const typed = decode(event("{\"type\":\"other\"}"))
    expect(Result.isFailure(typed) && typed.failure).toMatchObject({ _tag: "MalformedEvent", provider: "test", event: "other" })
  })

  it("reports data that is not JSON", () => {
    const result = decode(event("{\"type\":\"delta\",", "delta"))
    expect(Result.isFailure(result) && result.failure.message).toMatch(/^data is not JSON/)
  })
})
