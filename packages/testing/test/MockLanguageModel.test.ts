import * as AiError from "@agentloop/core/AiError"
import * as Item from "@agentloop/core/Item"
import { LanguageModel } from "@agentloop/core/LanguageModel"
import * as Turn from "@agentloop/core/Turn"
import type { TurnDelta } from "@agentloop/core/TurnDelta"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { MockLanguageModel } from "../src/index.ts"

const streamTurn = Effect.fnUntraced(function*(history: ReadonlyArray<Item.Item>) {
  const model = yield* LanguageModel
  return yield* Stream.runCollect(model.streamTurn(history, { model: "m" }))
})

describe("MockLanguageModel", () => {
  it.effect("answers each request from what it asks when given a function instead of a script", () =>
    Effect.gen(function*() {
      const echo = MockLanguageModel.layer(({ history }, index) => {
        const last = history.at(-1)
        const asked = last?.type === "message" ? Item.partText(last.content[0]!) : "?"
        return MockLanguageModel.textTurn(`#${index}: ${asked}`)
      })
      const [first, second, remaining] = yield* Effect.all([
        streamTurn([Item.userMessage("ping")]),
        streamTurn([Item.userMessage("pong")]),
        Effect.flatMap(MockLanguageModel.MockLanguageModel, (recorder) => recorder.remaining)
      ]).pipe(Effect.provide(echo))
      const text = (deltas: ReadonlyArray<TurnDelta>) =>
        deltas.flatMap((delta) => delta.type === "text_delta" ? [delta.delta] : []).join("")
      expect([text(first), text(second), remaining]).toStrictEqual(["#0: ping", "#1: pong", Number.POSITIVE_INFINITY])
    }))

  it.effect("replays a text turn as small text deltas, then usage and turn_complete", () =>
    Effect.gen(function*() {
      const turn = MockLanguageModel.textTurn("Hello, wörld! 👋🏽 bye")
      const deltas = yield* streamTurn([Item.userMessage("hi")]).pipe(
        Effect.provide(MockLanguageModel.layer([turn], { chunkSize: 4 }))
      )
      const texts = deltas.flatMap((delta) => delta.type === "text_delta" ? [delta.delta] : [])
      expect(texts.length).toBeGreaterThan(3)
      expect(texts.every((text) => Array.from(text).length <= 4)).toBe(true)
      expect(texts.join("")).toBe(Turn.text(turn))
      expect(deltas.slice(-2)).toStrictEqual([{ type: "usage", usage: turn.usage }, { type: "turn_complete", turn }])
    }))

  it.effect("replays each function call as a start, argument pieces and a done", () =>
    Effect.gen(function*() {
      const turn = MockLanguageModel.callsTurn([
        { name: "add", arguments: { a: 1, b: 2 } },
        { name: "convert", arguments: { value: 3, from: "km", to: "mi" } }
      ], { text: "Let me compute." })
      const deltas = yield* streamTurn([]).pipe(Effect.provide(MockLanguageModel.layer([turn], { chunkSize: 5 })))
      const byCall = (callId: string) =>
        deltas.filter((delta): delta is Extract<TurnDelta, { call_id: string }> =>
          "call_id" in delta && delta.call_id === callId
        )
      for (const call of Turn.functionCalls(turn)) {
        const events = byCall(call.call_id)
        expect(events[0]).toStrictEqual({ type: "function_call_start", call_id: call.call_id, name: call.name })
        expect(events.at(-1)).toStrictEqual({
          type: "function_call_done",
          call_id: call.call_id,
          name: call.name,
          arguments: call.arguments
        })
        const pieces = events.flatMap((event) => event.type === "function_call_arguments_delta" ? [event.delta] : [])
        expect(pieces.length).toBeGreaterThan(1)
        expect(pieces.join("")).toBe(call.arguments)
      }
    }))

  it.effect("answers one scripted reply per request and records every request", () =>
    Effect.gen(function*() {
      const first = yield* streamTurn([Item.userMessage("one")])
      const second = yield* streamTurn([Item.userMessage("two")])
      expect(first.at(-1)).toMatchObject({ type: "turn_complete", turn: { items: [{ content: [{ text: "first" }] }] } })
      expect(second.at(-1)).toMatchObject({
        type: "turn_complete",
        turn: { items: [{ content: [{ text: "second" }] }] }
      })
      const recorder = yield* MockLanguageModel.MockLanguageModel
      const requests = yield* recorder.requests
      expect(requests.map((request) => request.history)).toStrictEqual([
        [Item.userMessage("one")],
        [Item.userMessage("two")]
      ])
      expect(requests[0]!.options).toStrictEqual({ model: "m" })
      expect(yield* recorder.remaining).toBe(0)
    }).pipe(
      Effect.provide(
        MockLanguageModel.layer([MockLanguageModel.textTurn("first"), MockLanguageModel.textTurn("second")])
      )
    ))

  it.effect("sends nothing and records nothing until the stream is pulled", () =>
    Effect.gen(function*() {
      const model = yield* LanguageModel
      const recorder = yield* MockLanguageModel.MockLanguageModel
      model.streamTurn([], {})
      expect(yield* recorder.requests).toHaveLength(0)
      expect(yield* recorder.remaining).toBe(1)
    }).pipe(Effect.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("unused")]))))

  it.effect("fails a request with a scripted AiError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(streamTurn([]))
      expect(error).toBeInstanceOf(AiError.AuthFailed)
    }).pipe(
      Effect.provide(
        MockLanguageModel.layer([new AiError.AuthFailed({ provider: "mock", status: 401, message: "no" })])
      )
    ))

  it.effect("fails with a clear error when the script runs out", () =>
    Effect.gen(function*() {
      yield* streamTurn([])
      const error = yield* Effect.flip(streamTurn([]))
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).toContain("the script has 1 reply and request 2 asked for another")
    }).pipe(Effect.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("only")]))))

  it.effect("paces its deltas on the clock, so TestClock drives them", () =>
    Effect.gen(function*() {
      const turn = MockLanguageModel.textTurn("abcdef")
      const received: Array<TurnDelta> = []
      const model = yield* LanguageModel
      const fiber = yield* model.streamTurn([], {}).pipe(
        Stream.runForEach((delta) => Effect.sync(() => received.push(delta))),
        Effect.forkChild
      )
      yield* TestClock.adjust("99 millis")
      expect(received).toHaveLength(0)
      yield* TestClock.adjust("1 millis")
      expect(received).toStrictEqual([{ type: "text_delta", delta: "ab" }])
      yield* TestClock.adjust("300 millis")
      expect(received).toHaveLength(4)
      yield* TestClock.adjust("100 millis")
      expect(received.at(-1)).toStrictEqual({ type: "turn_complete", turn })
      yield* Fiber.join(fiber)
    }).pipe(
      Effect.provide(
        MockLanguageModel.layer([MockLanguageModel.textTurn("abcdef")], { chunkSize: 2, delay: "100 millis" })
      )
    ))
})

describe("MockLanguageModel.deltas", () => {
  it("streams a message's text parts and gives its images and files whole, with the turn", () => {
    const image = Item.imageUrl("https://example.com/chart.png")
    const turn: Turn.Turn = {
      items: [{
        type: "message",
        id: "m",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "Here:" }, image, { type: "output_text", text: " done" }]
      }],
      usage: { input: 1, output: 2, total: 3 },
      stopReason: "stop"
    }
    const deltas = MockLanguageModel.deltas(turn, 100)
    expect(deltas.map((delta) => delta.type === "text_delta" ? delta.delta : delta.type)).toStrictEqual([
      "Here:",
      " done",
      "usage",
      "turn_complete"
    ])
    expect(deltas.at(-1)).toStrictEqual({ type: "turn_complete", turn })
  })
})
