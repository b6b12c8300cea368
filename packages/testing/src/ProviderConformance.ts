/**
 * The provider conformance suite: what every provider layer must do, checked
 * over real HTTP against `ProviderServer` with the provider's own wire format.
 * A new provider passes it to be done.
 *
 * A provider package supplies a `ProviderHarness.Fixture` (its layer and how to
 * write a `WireTurn` in its wire format) and runs every case, e.g. with
 * `@effect/vitest`:
 *
 * ```ts
 * for (const c of ProviderConformance.cases(fixture)) {
 *   ;(c.clock === "test" ? it.effect : it.live)(c.name, () => c.test, c.timeout)
 * }
 * ```
 *
 * The cases cover text, reasoning, parallel calls and usage; every error
 * status, `Retry-After` and its cap; truncated, cut and stalled streams and the
 * per-turn deadline; interruption closing the socket; and the servers of
 * `HostileServer`.
 *
 * @since 0.1.0
 */
import type * as AiError from "@agentloop/core/AiError"
import * as Turn from "@agentloop/core/Turn"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as assert from "node:assert/strict"
import * as HostileServer from "./HostileServer.ts"
import * as ProviderHarness from "./ProviderHarness.ts"
import * as ProviderServer from "./ProviderServer.ts"
import * as WireTurn from "./WireTurn.ts"

export type {
  /** One case of the suite. */
  Case
} from "./ProviderHarness.ts"

const turnCases = (fixture: ProviderHarness.Fixture): ReadonlyArray<ProviderHarness.Case> => [
  {
    name: "streams text in order, split at every byte, and completes the turn with its usage",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const turn = WireTurn.text("Hel", "lo, ", "wörld ✓ 🎉")
        yield* server.reply(ProviderServer.sse(fixture.frames(turn), { chunkSize: 1 }))
        const { deltas, error } = yield* ProviderHarness.turn(model)
        assert.equal(error, undefined)
        assert.deepEqual(deltas.filter((d) => d.type === "text_delta").map((d) => d.delta), turn.text)
        const result = ProviderHarness.completed(deltas)
        assert.equal(Turn.text(result), "Hello, wörld ✓ 🎉")
        assert.equal(result.stopReason, "stop")
        const usage = ProviderHarness.reportedUsage(fixture, turn.usage)
        assert.deepEqual(result.usage, usage)
        assert.deepEqual(deltas[deltas.length - 2], { type: "usage", usage })
        const [request] = yield* server.requests
        assert.equal(request?.method, "POST")
        assert.equal(request?.headers[fixture.credentialHeader]?.includes(ProviderHarness.canary), true)
      }))
  },
  {
    name: "streams reasoning as reasoning deltas and items, kept out of the answer",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const turn: WireTurn.WireTurn = {
          id: "resp_reasoning",
          reasoning: ["First, ", "the sky."],
          text: ["Blue."],
          usage: WireTurn.usage(20, 300, 8, 256)
        }
        yield* server.reply(ProviderServer.sse(fixture.frames(turn)))
        const { deltas } = yield* ProviderHarness.turn(model, { params: { reasoningEffort: "low" } })
        assert.equal(ProviderHarness.joined(deltas, "reasoning_delta"), "First, the sky.")
        const result = ProviderHarness.completed(deltas)
        assert.equal(Turn.text(result), "Blue.")
        assert.ok(result.items.some((item) => item.type === "reasoning"), "a reasoning item")
        assert.deepEqual(result.usage, ProviderHarness.reportedUsage(fixture, turn.usage))
      }))
  },
  {
    name: "streams parallel calls, each with its arguments, and stops for tool calls",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const calls = [
          { id: "call_a", name: "weather", arguments: "{\"city\":\"Zürich\",\"note\":\"東京 🌧\"}" },
          { id: "call_b", name: "search", arguments: "{\"q\":\"café\"}" }
        ]
        yield* server.reply(ProviderServer.sse(
          fixture.frames({ id: "resp_calls", text: ["Checking."], calls, usage: WireTurn.usage(40, 30) }),
          { chunkSize: 7 }
        ))
        const { deltas } = yield* ProviderHarness.turn(model)
        for (const call of calls) {
          const pieces = deltas.flatMap((d) =>
            d.type === "function_call_arguments_delta" && d.call_id === call.id ? [d.delta] : []
          )
          assert.equal(pieces.join(""), call.arguments)
          assert.ok(
            deltas.some((d) => d.type === "function_call_start" && d.call_id === call.id && d.name === call.name)
          )
          assert.ok(
            deltas.some((d) =>
              d.type === "function_call_done" && d.call_id === call.id && d.arguments === call.arguments
            )
          )
        }
        const result = ProviderHarness.completed(deltas)
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

const errorCases = (fixture: ProviderHarness.Fixture): ReadonlyArray<ProviderHarness.Case> => [
  {
    name: "maps every error status to its AiError with the provider's message",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        for (const [status, tag] of statuses) {
          yield* server.reply(ProviderServer.status(status, { error: { message: `failed with ${status}` } }))
          const error = ProviderHarness.failed(yield* ProviderHarness.turn(model))
          assert.equal(error._tag, tag, `status ${status}`)
          assert.equal(error.message.includes(`failed with ${status}`), true, error.message)
        }
      }))
  },
  {
    name: "waits for a 429's Retry-After before retrying",
    clock: "test",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.status(429, { error: { message: "slow down" } }, { "retry-after": "20" }),
          ProviderServer.sse(fixture.frames(WireTurn.text("ok")))
        )
        const fiber = yield* Effect.forkChild(ProviderHarness.turn(model))
        const { exit, seconds } = yield* ProviderHarness.driveClock(fiber, "1 minute")
        assert.ok(Exit.isSuccess(exit) && exit.value.error === undefined, "the retry succeeds")
        assert.ok(seconds >= 20, `waited ${seconds}s`)
        assert.equal((yield* server.requests).length, 2)
      }), { retryPolicy: Schedule.recurs(1) })
  },
  {
    name: "fails at once with RateLimited and its retryAfter when Retry-After exceeds the cap",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.status(429, { error: { message: "later" } }, { "retry-after": "3600" }))
        const error = ProviderHarness.failed(yield* ProviderHarness.turn(model))
        assert.equal(error._tag, "RateLimited")
        assert.ok(error._tag === "RateLimited" && error.retryAfter !== undefined)
        assert.equal(Duration.toSeconds(error.retryAfter), 3600)
        assert.equal((yield* server.requests).length, 1)
      }), { retryPolicy: Schedule.recurs(3) })
  },
  {
    name: "retries a server error sent in the stream before any delta",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(fixture.serverError("try again")),
          ProviderServer.sse(fixture.frames(WireTurn.text("ok")))
        )
        const { deltas } = yield* ProviderHarness.turn(model)
        assert.equal(Turn.text(ProviderHarness.completed(deltas)), "ok")
        assert.equal((yield* server.requests).length, 2)
      }), { retryPolicy: Schedule.recurs(1) })
  },
  {
    name: "fails with IncompleteTurn after the deltas when the stream ends early, and with Unavailable when it is cut",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const turn = WireTurn.text("cut ", "off")
        yield* server.reply(ProviderServer.sse(fixture.frames(turn, { complete: false })))
        const truncated = yield* ProviderHarness.turn(model)
        assert.equal(ProviderHarness.joined(truncated.deltas, "text_delta"), "cut off")
        assert.equal(ProviderHarness.failed(truncated)._tag, "IncompleteTurn")
        const frames = fixture.frames(turn)
        yield* server.reply(ProviderServer.sse(frames, { disconnectAfter: frames.join("").length - 3 }))
        assert.equal(ProviderHarness.failed(yield* ProviderHarness.turn(model))._tag, "Unavailable")
        // Deltas reached the consumer: neither failure was retried.
        assert.equal((yield* server.requests).length, 2)
      }), { retryPolicy: Schedule.recurs(3) })
  },
  {
    name: "fails with MalformedEvent when an event is not JSON",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse([...fixture.frames(WireTurn.text("a"), { complete: false }), "data: {\"broken\n\n"])
        )
        assert.equal(ProviderHarness.failed(yield* ProviderHarness.turn(model))._tag, "MalformedEvent")
      }))
  }
]

const timeCases = (fixture: ProviderHarness.Fixture): ReadonlyArray<ProviderHarness.Case> => [
  {
    name: "ends a stalled stream with Timeout after the default idle timeout, closing the connection",
    clock: "test",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const frames = fixture.frames(WireTurn.text("thinking", " more"))
        yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.slice(0, -1).join("").length }))
        const fiber = yield* Effect.forkChild(ProviderHarness.turn(model))
        // The clock moves once the request is in: on a busy machine, one still being sent counted steps as idle.
        yield* server.awaitRequests(1)
        const { exit, seconds } = yield* ProviderHarness.driveClock(fiber, "6 minutes", 5)
        assert.ok(Exit.isSuccess(exit) && exit.value.error?._tag === "Timeout", "Timeout")
        assert.ok(seconds >= 300 && seconds <= 310, `timed out after ${seconds}s`)
        yield* server.awaitClientAbort
      }))
  },
  {
    name: "ends with Timeout when no response comes within the default request timeout",
    clock: "test",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.hang)
        const fiber = yield* Effect.forkChild(ProviderHarness.turn(model))
        yield* server.awaitRequests(1)
        const { exit, seconds } = yield* ProviderHarness.driveClock(fiber, "2 minutes", 2)
        assert.ok(Exit.isSuccess(exit) && exit.value.error?._tag === "Timeout", "Timeout")
        assert.ok(seconds >= 60 && seconds <= 64, `timed out after ${seconds}s`)
        yield* server.awaitClientAbort
      }))
  },
  {
    name: "ends a turn kept busy by keepalive comments with Timeout at its deadline",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        // Comments every 10 ms keep the stream from ever being idle for 250 ms, so only the turn's deadline
        // can end it; the margins are wide, so a busy machine's pauses do not fire the idle timeout instead.
        yield* server.reply(
          ProviderServer.sse(fixture.frames(WireTurn.text("still"), { complete: false }), { keepalive: "10 millis" })
        )
        const result = yield* ProviderHarness.turn(model)
        assert.equal(ProviderHarness.joined(result.deltas, "text_delta"), "still")
        const error = ProviderHarness.failed(result)
        assert.equal(error._tag, "Timeout")
        assert.match(error.message, /turn/)
        yield* server.awaitClientAbort
      }), { idleTimeout: "250 millis", turnTimeout: "750 millis" })
  },
  {
    name: "closes the connection when the consumer stops early or is interrupted",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const frames = fixture.frames(WireTurn.text(...Array.from({ length: 100 }, (_, i) => `w${i} `)))
        yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.slice(0, -10).join("").length }))
        const first = yield* model.streamTurn(ProviderHarness.hello, {}).pipe(Stream.take(1), Stream.runCollect)
        assert.equal(first[0]?.type, "text_delta")
        yield* server.awaitClientAbort
      }).pipe(
        Effect.andThen(ProviderHarness.run(fixture, (server, model) =>
          Effect.gen(function*() {
            const frames = fixture.frames(WireTurn.text("waiting"), { complete: false })
            yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.join("").length }))
            const started = yield* Deferred.make<void>()
            const fiber = yield* model.streamTurn(ProviderHarness.hello, {}).pipe(
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

/**
 * Every case of the suite for the provider `fixture` describes.
 *
 * @example
 * ```ts
 * import { ChatCompletions } from "@agentloop/chat-completions"
 * import { type ProviderHarness, ProviderConformance } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * // A provider's fixture: its layer, and how its wire writes a turn and a server error.
 * const sse = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`
 * const chunk = (delta: object, finish: string | null = null) =>
 *   sse({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })
 * const fixture: ProviderHarness.Fixture = {
 *   provider: "chat-completions",
 *   credentialHeader: "authorization",
 *   layer: (settings) => ChatCompletions.layerWithoutHttpClient({ ...settings, baseUrl: settings.baseUrl ?? "", model: "m" }),
 *   frames: (turn, options) => {
 *     const calls = turn.calls ?? []
 *     const body = [
 *       ...(turn.reasoning ?? []).map((reasoning_content) => chunk({ reasoning_content })),
 *       ...(turn.text ?? []).map((content) => chunk({ content })),
 *       ...calls.map((call, index) =>
 *         chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] })
 *       )
 *     ]
 *     const usage = {
 *       prompt_tokens: turn.usage.input,
 *       completion_tokens: turn.usage.output,
 *       total_tokens: turn.usage.total,
 *       prompt_tokens_details: { cached_tokens: turn.usage.cachedInput },
 *       completion_tokens_details: { reasoning_tokens: turn.usage.reasoning }
 *     }
 *     return options?.complete === false ? body : [
 *       ...body,
 *       chunk({}, calls.length > 0 ? "tool_calls" : "stop"),
 *       sse({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [], usage }),
 *       "data: [DONE]\n\n"
 *     ]
 *   },
 *   serverError: (message) => [sse({ error: { message, type: "server_error" } })]
 * }
 *
 * // In a test file: `for (const c of ProviderConformance.cases(fixture)) (c.clock === "test" ? it.effect : it.live)(c.name, () => c.test)`.
 * const cases = ProviderConformance.cases(fixture)
 * const streams = cases.find((c) => c.clock === "live")!
 * Effect.runPromise(streams.test).then(() => console.log(`passed: ${streams.name}`))
 * // passed: streams text in order, split at every byte, and completes the turn with its usage
 * ```
 *
 * @since 0.1.0
 * @category cases
 */
export const cases = (fixture: ProviderHarness.Fixture): ReadonlyArray<ProviderHarness.Case> => [
  ...turnCases(fixture),
  ...errorCases(fixture),
  ...timeCases(fixture),
  ...HostileServer.cases(fixture)
]
