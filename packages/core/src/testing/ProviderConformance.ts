/**
 * The provider conformance suite: what every provider layer must do, checked
 * over real HTTP against `ProviderServer` with the provider's own wire format.
 * A new provider passes it to be done.
 *
 * A provider package supplies a {@link Fixture} (its layer and how to write a
 * {@link WireTurn.WireTurn} in its wire format) and runs every case, e.g. with
 * `@effect/vitest`:
 *
 * ```ts
 * for (const c of ProviderConformance.cases(fixture)) (c.clock === "test" ? it.effect : it.live)(c.name, () => c.test)
 * ```
 *
 * The cases cover text, reasoning, parallel calls and usage; every error
 * status, `Retry-After` and its cap; truncated, cut and stalled streams and the
 * per-turn deadline; interruption closing the socket; and hostile servers: an
 * API key canary that must appear in no error, delta or span, redirects to
 * another host, credentials in the base URL, and oversized error bodies.
 *
 * @since 0.1.0
 */
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Redacted, Schedule, Stream } from "effect"
import type { Scope } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import * as assert from "node:assert/strict"
import type * as AiError from "../AiError.ts"
import * as Item from "../Item.ts"
import * as LanguageModel from "../LanguageModel.ts"
import type * as Provider from "../Provider.ts"
import * as ProviderRetry from "../ProviderRetry.ts"
import * as ProviderStream from "../ProviderStream.ts"
import * as Turn from "../Turn.ts"
import type * as TurnDelta from "../TurnDelta.ts"
import * as ProviderServer from "./ProviderServer.ts"
import * as SpanRecorder from "./SpanRecorder.ts"
import * as WireTurn from "./WireTurn.ts"

/** What a provider package supplies to run the suite. */
export interface Fixture {
  /** The provider's name in errors. */
  readonly provider: string
  /** The lower-case header that carries the key. */
  readonly credentialHeader: string
  /** The provider's layer with these settings, on the `HttpClient` in context. */
  readonly layer: (settings: Provider.Settings) => Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient>
  /** The SSE frames of `turn` in the provider's documented wire format; `complete: false` leaves out what ends the turn. */
  readonly frames: (turn: WireTurn.WireTurn, options?: { readonly complete: boolean }) => ReadonlyArray<string>
  /** The frames of a stream that fails, before any delta, with a server error saying `message`. */
  readonly serverError: (message: string) => ReadonlyArray<string>
}

/** One case of the suite. `clock: "test"` cases run under `TestClock` (`it.effect`), the others in real time (`it.live`). */
export interface Case {
  readonly name: string
  readonly clock: "live" | "test"
  readonly test: Effect.Effect<void, unknown>
}

const canary = "sk-CANARY-7d1f00aa-DO-NOT-LEAK"
const hello = [Item.userMessage("Hello")]

type Server = ProviderServer.ProviderServer["Service"]

/** Runs `body` with the server and the provider pointed at it (no retries unless `settings` asks). */
const withProvider = <A, E>(
  fixture: Fixture,
  body: (
    server: Server,
    model: LanguageModel.LanguageModel["Service"]
  ) => Effect.Effect<A, E, Scope.Scope | HttpClient.HttpClient>,
  settings?: Partial<Provider.Settings>
): Effect.Effect<A, E> =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const model = yield* LanguageModel.LanguageModel.pipe(
      Effect.provide(fixture.layer({ apiKey: Redacted.make(canary), baseUrl: server.url, retryPolicy: ProviderRetry.none, ...settings }))
    )
    return yield* body(server, model)
  }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)))

/** Runs a turn to its end; the deltas and, when it failed, the error. */
const runTurn = (model: LanguageModel.LanguageModel["Service"], options: LanguageModel.TurnOptions = {}) =>
  Effect.gen(function*() {
    const deltas: Array<TurnDelta.TurnDelta> = []
    const exit = yield* model.streamTurn(hello, options).pipe(
      Stream.runForEachArray((chunk) => Effect.sync(() => deltas.push(...chunk))),
      Effect.exit
    )
    return { deltas, error: Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined }
  })

const completed = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const ends = deltas.filter((delta) => delta.type === "turn_complete")
  const last = deltas[deltas.length - 1]
  assert.equal(ends.length, 1, "exactly one turn_complete")
  assert.ok(last?.type === "turn_complete", "turn_complete is the last delta")
  return last.turn
}

const failed = (result: { readonly error: AiError.AiError | undefined }): AiError.AiError => {
  assert.ok(result.error !== undefined, "the turn fails")
  return result.error
}

const joined = (deltas: ReadonlyArray<TurnDelta.TurnDelta>, type: "text_delta" | "reasoning_delta"): string =>
  deltas.flatMap((delta) => delta.type === type ? [delta.delta] : []).join("")

// Real time, even under TestClock: lets real I/O run between clock steps.
const realPause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

/**
 * Moves the test clock `step` seconds at a time, letting real I/O run in
 * between, until `fiber` ends; returns its exit and the seconds moved.
 */
const driveClock = <A, E>(fiber: Fiber.Fiber<A, E>, limit: Duration.Input, step = 1) =>
  Effect.gen(function*() {
    let seconds = 0
    const max = Duration.toSeconds(Duration.fromInputUnsafe(limit))
    while (fiber.pollUnsafe() === undefined && seconds <= max) {
      yield* TestClock.adjust(Duration.seconds(step))
      seconds += step
      yield* realPause
    }
    return { exit: yield* Fiber.await(fiber), seconds }
  })

const turnCases = (fixture: Fixture): ReadonlyArray<Case> => [
  {
    name: "streams text in order, split at every byte, and completes the turn with its usage",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const turn = WireTurn.text("Hel", "lo, ", "wörld ✓ 🎉")
        yield* server.reply(ProviderServer.sse(fixture.frames(turn), { chunkSize: 1 }))
        const { deltas, error } = yield* runTurn(model)
        assert.equal(error, undefined)
        assert.deepEqual(deltas.filter((d) => d.type === "text_delta").map((d) => d.delta), turn.text)
        const result = completed(deltas)
        assert.equal(Turn.text(result), "Hello, wörld ✓ 🎉")
        assert.equal(result.stopReason, "stop")
        assert.deepEqual(result.usage, turn.usage)
        assert.deepEqual(deltas[deltas.length - 2], { type: "usage", usage: turn.usage })
        const [request] = yield* server.requests
        assert.equal(request?.method, "POST")
        assert.equal(request?.headers[fixture.credentialHeader]?.includes(canary), true)
      }))
  },
  {
    name: "streams reasoning as reasoning deltas and items, kept out of the answer",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const turn: WireTurn.WireTurn = {
          id: "resp_reasoning",
          reasoning: ["First, ", "the sky."],
          text: ["Blue."],
          usage: WireTurn.usage(20, 300, 8, 256)
        }
        yield* server.reply(ProviderServer.sse(fixture.frames(turn)))
        const { deltas } = yield* runTurn(model, { params: { reasoningEffort: "low" } })
        assert.equal(joined(deltas, "reasoning_delta"), "First, the sky.")
        const result = completed(deltas)
        assert.equal(Turn.text(result), "Blue.")
        assert.ok(result.items.some((item) => item.type === "reasoning"), "a reasoning item")
        assert.deepEqual(result.usage, turn.usage)
      }))
  },
  {
    name: "streams parallel calls, each with its arguments, and stops for tool calls",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const calls = [
          { id: "call_a", name: "weather", arguments: "{\"city\":\"Zürich\",\"note\":\"東京 🌧\"}" },
          { id: "call_b", name: "search", arguments: "{\"q\":\"café\"}" }
        ]
        yield* server.reply(ProviderServer.sse(
          fixture.frames({ id: "resp_calls", text: ["Checking."], calls, usage: WireTurn.usage(40, 30) }),
          { chunkSize: 7 }
        ))
        const { deltas } = yield* runTurn(model)
        for (const call of calls) {
          const pieces = deltas.flatMap((d) => d.type === "function_call_arguments_delta" && d.call_id === call.id ? [d.delta] : [])
          assert.equal(pieces.join(""), call.arguments)
          assert.ok(deltas.some((d) => d.type === "function_call_start" && d.call_id === call.id && d.name === call.name))
          assert.ok(deltas.some((d) => d.type === "function_call_done" && d.call_id === call.id && d.arguments === call.arguments))
        }
        const result = completed(deltas)
        assert.equal(result.stopReason, "tool_calls")
        assert.deepEqual(
          Turn.functionCalls(result).map((call) => [call.call_id, call.name, JSON.parse(call.arguments)]),
          calls.map((call) => [call.id, call.name, JSON.parse(call.arguments)])
        )
      }))
  }
]

const statuses: ReadonlyArray<readonly [number, AiError.AiError["_tag"]]> = [
  [400, "InvalidRequest"],
  [401, "AuthFailed"],
  [403, "AuthFailed"],
  [404, "InvalidRequest"],
  [408, "Timeout"],
  [413, "ContextLengthExceeded"],
  [429, "RateLimited"],
  [500, "Unavailable"],
  [502, "Unavailable"],
  [503, "Unavailable"],
  [504, "Timeout"]
]

const errorCases = (fixture: Fixture): ReadonlyArray<Case> => [
  {
    name: "maps every error status to its AiError with the provider's message",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        for (const [status, tag] of statuses) {
          yield* server.reply(ProviderServer.status(status, { error: { message: `failed with ${status}` } }))
          const error = failed(yield* runTurn(model))
          assert.equal(error._tag, tag, `status ${status}`)
          assert.equal(error.message.includes(`failed with ${status}`), true, error.message)
        }
      }))
  },
  {
    name: "waits for a 429's Retry-After before retrying",
    clock: "test",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.status(429, { error: { message: "slow down" } }, { "retry-after": "20" }),
          ProviderServer.sse(fixture.frames(WireTurn.text("ok")))
        )
        const fiber = yield* Effect.forkChild(runTurn(model))
        const { exit, seconds } = yield* driveClock(fiber, "1 minute")
        assert.ok(Exit.isSuccess(exit) && exit.value.error === undefined, "the retry succeeds")
        assert.ok(seconds >= 20, `waited ${seconds}s`)
        assert.equal((yield* server.requests).length, 2)
      }), { retryPolicy: Schedule.recurs(1) })
  },
  {
    name: "fails at once with RateLimited and its retryAfter when Retry-After exceeds the cap",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.status(429, { error: { message: "later" } }, { "retry-after": "3600" }))
        const error = failed(yield* runTurn(model))
        assert.equal(error._tag, "RateLimited")
        assert.ok(error._tag === "RateLimited" && error.retryAfter !== undefined)
        assert.equal(Duration.toSeconds(error.retryAfter), 3600)
        assert.equal((yield* server.requests).length, 1)
      }), { retryPolicy: Schedule.recurs(3) })
  },
  {
    name: "retries a server error sent in the stream before any delta",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(fixture.serverError("try again")),
          ProviderServer.sse(fixture.frames(WireTurn.text("ok")))
        )
        const { deltas } = yield* runTurn(model)
        assert.equal(Turn.text(completed(deltas)), "ok")
        assert.equal((yield* server.requests).length, 2)
      }), { retryPolicy: Schedule.recurs(1) })
  },
  {
    name: "fails with IncompleteTurn after the deltas when the stream ends early, and with Unavailable when it is cut",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const turn = WireTurn.text("cut ", "off")
        yield* server.reply(ProviderServer.sse(fixture.frames(turn, { complete: false })))
        const truncated = yield* runTurn(model)
        assert.equal(joined(truncated.deltas, "text_delta"), "cut off")
        assert.equal(failed(truncated)._tag, "IncompleteTurn")
        const frames = fixture.frames(turn)
        yield* server.reply(ProviderServer.sse(frames, { disconnectAfter: frames.join("").length - 3 }))
        assert.equal(failed(yield* runTurn(model))._tag, "Unavailable")
        // Deltas reached the consumer: neither failure was retried.
        assert.equal((yield* server.requests).length, 2)
      }), { retryPolicy: Schedule.recurs(3) })
  },
  {
    name: "fails with MalformedEvent when an event is not JSON",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([...fixture.frames(WireTurn.text("a"), { complete: false }), "data: {\"broken\n\n"]))
        assert.equal(failed(yield* runTurn(model))._tag, "MalformedEvent")
      }))
  }
]

const timeCases = (fixture: Fixture): ReadonlyArray<Case> => [
  {
    name: "ends a stalled stream with Timeout after the default idle timeout, closing the connection",
    clock: "test",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const frames = fixture.frames(WireTurn.text("thinking", " more"))
        yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.slice(0, -1).join("").length }))
        const fiber = yield* Effect.forkChild(runTurn(model))
        const { exit, seconds } = yield* driveClock(fiber, "6 minutes", 5)
        assert.ok(Exit.isSuccess(exit) && exit.value.error?._tag === "Timeout", "Timeout")
        assert.ok(seconds >= 300 && seconds <= 310, `timed out after ${seconds}s`)
        yield* server.awaitClientAbort
      }))
  },
  {
    name: "ends with Timeout when no response comes within the default request timeout",
    clock: "test",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.hang)
        const fiber = yield* Effect.forkChild(runTurn(model))
        const { exit, seconds } = yield* driveClock(fiber, "2 minutes", 2)
        assert.ok(Exit.isSuccess(exit) && exit.value.error?._tag === "Timeout", "Timeout")
        assert.ok(seconds >= 60 && seconds <= 64, `timed out after ${seconds}s`)
        yield* server.awaitClientAbort
      }))
  },
  {
    name: "ends a turn kept busy by keepalive comments with Timeout at its deadline",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(fixture.frames(WireTurn.text("still"), { complete: false }), { keepalive: "10 millis" }))
        const result = yield* runTurn(model)
        assert.equal(joined(result.deltas, "text_delta"), "still")
        const error = failed(result)
        assert.equal(error._tag, "Timeout")
        assert.match(error.message, /turn/)
        yield* server.awaitClientAbort
      }), { idleTimeout: "50 millis", turnTimeout: "200 millis" })
  },
  {
    name: "closes the connection when the consumer stops early or is interrupted",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const frames = fixture.frames(WireTurn.text(...Array.from({ length: 100 }, (_, i) => `w${i} `)))
        yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.slice(0, -10).join("").length }))
        const first = yield* model.streamTurn(hello, {}).pipe(Stream.take(1), Stream.runCollect)
        assert.equal(first[0]?.type, "text_delta")
        yield* server.awaitClientAbort
      }).pipe(
        Effect.andThen(withProvider(fixture, (server, model) =>
          Effect.gen(function*() {
            const frames = fixture.frames(WireTurn.text("waiting"), { complete: false })
            yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.join("").length }))
            const started = yield* Deferred.make<void>()
            const fiber = yield* model.streamTurn(hello, {}).pipe(
              Stream.tap(() => Deferred.succeed(started, undefined)),
              Stream.runDrain,
              Effect.forkChild
            )
            yield* Deferred.await(started)
            yield* Fiber.interrupt(fiber)
            yield* server.awaitClientAbort
          })))
      ))
  }
]

const hostileCases = (fixture: Fixture): ReadonlyArray<Case> => [
  {
    name: "never puts the key in an error, a delta or a span, and annotates the current span with the server",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const { spans, tracer } = SpanRecorder.make()
        yield* server.reply(
          ProviderServer.status(401, { error: { message: `Incorrect API key provided: ${canary}` } }),
          ProviderServer.status(500, `upstream said ${canary}`),
          ProviderServer.sse(fixture.serverError(`the key ${canary} is bad`)),
          ProviderServer.sse(fixture.frames(WireTurn.text("fine")))
        )
        const results = yield* Effect.forEach([1, 2, 3, 4], () => runTurn(model)).pipe(
          Effect.withSpan("chat"),
          Effect.withTracer(tracer),
          // Record every header on the client spans, so a key that escaped redaction would show.
          Effect.provideService(HttpClient.TracerHeaderFilter, () => true)
        )
        const errors = results.flatMap((result) => result.error === undefined ? [] : [result.error])
        assert.equal(errors.length, 3)
        for (const error of errors) assert.equal(JSON.stringify(error).includes(canary), false, error.message)
        assert.equal(JSON.stringify(results.map((result) => result.deltas)).includes(canary), false)
        const seen = SpanRecorder.text(spans)
        assert.equal(seen.includes(canary), false)
        const clientSpans = spans.filter((span) => span.attributes.has(`http.request.header.${fixture.credentialHeader}`))
        assert.equal(clientSpans.length, 4)
        for (const span of clientSpans) {
          assert.equal(span.attributes.get(`http.request.header.${fixture.credentialHeader}`), "<redacted>")
        }
        const chat = spans.find((span) => span.name === "chat")
        assert.equal(chat?.attributes.get("server.address"), "127.0.0.1")
        assert.equal(chat?.attributes.get("server.port"), Number(new URL(server.url).port))
      }))
  },
  {
    name: "never sends the key to another host: a redirect there fails, a 307 to the same origin is followed",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        const other = yield* ProviderServer.make
        yield* server.reply(ProviderServer.status(307, "", { location: `${other.url}/steal` }))
        const error = failed(yield* runTurn(model))
        assert.equal(error._tag, "InvalidRequest")
        assert.equal(error.message.includes(canary), false)
        yield* server.reply(ProviderServer.status(302, "", { location: `${server.url}/moved` }))
        assert.equal(failed(yield* runTurn(model))._tag, "InvalidRequest")
        assert.equal((yield* other.requests).length, 0)
        yield* server.reply(
          ProviderServer.status(308, "", { location: `${server.url}/moved` }),
          ProviderServer.sse(fixture.frames(WireTurn.text("moved")))
        )
        assert.equal(Turn.text(completed((yield* runTurn(model)).deltas)), "moved")
        const requests = yield* server.requests
        const [first, moved] = requests.slice(-2)
        assert.equal(moved?.url.split("?")[0], "/moved")
        assert.deepEqual(moved?.body, first?.body)
        assert.equal(moved?.headers[fixture.credentialHeader]?.includes(canary), true)
      }))
  },
  {
    name: "refuses a base URL carrying credentials, without sending or quoting them",
    clock: "live",
    test: withProvider(fixture, (server) =>
      Effect.gen(function*() {
        const { spans, tracer } = SpanRecorder.make()
        const base = new URL(server.url)
        base.username = "user"
        base.password = canary
        const model = yield* LanguageModel.LanguageModel.pipe(
          Effect.provide(fixture.layer({ apiKey: Redacted.make("sk-other"), baseUrl: base.href, retryPolicy: ProviderRetry.none }))
        )
        const error = failed(yield* runTurn(model).pipe(Effect.withSpan("chat"), Effect.withTracer(tracer)))
        assert.equal(error._tag, "InvalidRequest")
        assert.equal(JSON.stringify(error).includes(canary), false)
        assert.equal(SpanRecorder.text(spans).includes(canary), false)
        assert.equal((yield* server.requests).length, 0)
      }))
  },
  {
    name: "bounds error messages and reads only the start of a huge error body",
    clock: "live",
    test: withProvider(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.status(500, { error: { message: "x".repeat(10_000_000) } }))
        const long = failed(yield* runTurn(model))
        assert.equal(long._tag, "Unavailable")
        assert.ok(long.message.length <= ProviderStream.maxMessageLength + 100, `${long.message.length} characters`)
        yield* server.reply(ProviderServer.oversized(502, 300_000_000))
        const huge = failed(yield* runTurn(model))
        assert.equal(huge._tag, "Unavailable")
        assert.ok(huge.message.length <= ProviderStream.maxMessageLength + 100)
        yield* server.awaitClientAbort
        yield* server.reply(ProviderServer.sse(fixture.serverError("y".repeat(1_000_000))))
        const streamed = failed(yield* runTurn(model))
        assert.ok(streamed.message.length <= ProviderStream.maxMessageLength + 100)
      }))
  }
]

/** Every case of the suite for the provider `fixture` describes. */
export const cases = (fixture: Fixture): ReadonlyArray<Case> => [
  ...turnCases(fixture),
  ...errorCases(fixture),
  ...timeCases(fixture),
  ...hostileCases(fixture)
]
