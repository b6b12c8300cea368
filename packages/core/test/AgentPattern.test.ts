/**
 * The agent loop written by hand, in the shape of the loop seed's example:
 * stream a model turn, run the tools it called, loop until it calls none.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Item from "../src/Item.ts"
import { LanguageModel } from "../src/LanguageModel.ts"
import * as Loop from "../src/Loop.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Turn from "../src/Turn.ts"
import * as TurnStream from "../src/TurnStream.ts"
import { add } from "./fixtures.ts"

const toolkit = Toolkit.make(add)

interface State {
  readonly history: ReadonlyArray<Item.Item>
}

const agent = (initial: State) =>
  Loop.loop(initial, (state) =>
    Effect.gen(function*() {
      const model = yield* LanguageModel
      return model.streamTurn(state.history, { tools: Toolkit.definitions(toolkit) }).pipe(
        TurnStream.streamUntilComplete((turn) =>
          Effect.gen(function*() {
            const next = Turn.cursor(state, turn)
            const calls = Turn.functionCalls(turn)
            if (calls.length === 0) return Loop.stop
            const outputs = Toolkit.outputs(yield* Toolkit.executeAllSafe(toolkit, calls))
            return Loop.nextAfter(Stream.fromIterable(outputs), { ...next, history: [...next.history, ...outputs] })
          })
        )
      )
    }))

const script = [
  MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }, { name: "add", arguments: { a: "x" } }]),
  MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 5, b: 10 } }], { text: "Fixing that." }),
  MockLanguageModel.textTurn("2 + 3 + 10 = 15")
]

describe("a hand-written agent loop", () => {
  it.effect("runs model turns and tools until the model calls none", () =>
    Effect.gen(function*() {
      const events = yield* Stream.runCollect(agent({ history: [Item.userMessage("Add 2, 3 and 10")] }))
      const outputs = events.filter((event): event is Item.FunctionCallOutput =>
        "type" in event && event.type === "function_call_output"
      )
      expect(outputs.map((output) => output.output)).toStrictEqual([
        "5",
        expect.stringContaining("do not match its parameters"),
        "15"
      ])
      const text = events.flatMap((event) => "type" in event && event.type === "text_delta" ? [event.delta] : [])
      expect(text.join("")).toBe("Fixing that.2 + 3 + 10 = 15")

      const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
      expect(requests).toHaveLength(3)
      expect(requests[0]!.options.tools?.map((tool) => tool.name)).toStrictEqual(["add"])
      // Each request carries the previous turn's calls and their outputs, in order.
      expect(requests[2]!.history.map((item) => item.type)).toStrictEqual([
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "message",
        "function_call",
        "function_call_output"
      ])
    }).pipe(Effect.provide(MockLanguageModel.layer(script))))

  it.effect("stops calling the model when the consumer stops pulling", () =>
    Effect.gen(function*() {
      const firstTurn = yield* agent({ history: [Item.userMessage("Add")] }).pipe(
        Stream.takeUntil((event) => "type" in event && event.type === "turn_complete"),
        Stream.runCollect
      )
      expect(firstTurn.at(-1)).toMatchObject({ type: "turn_complete" })
      expect(yield* (yield* MockLanguageModel.MockLanguageModel).requests).toHaveLength(1)
    }).pipe(Effect.provide(MockLanguageModel.layer(script))))

  it.effect("interrupting the consumer mid-turn ends the run", () =>
    Effect.gen(function*() {
      const received: Array<unknown> = []
      const fiber = yield* agent({ history: [Item.userMessage("Add")] }).pipe(
        Stream.runForEach((event) => Effect.sync(() => received.push(event))),
        Effect.forkChild
      )
      yield* TestClock.adjust("25 millis")
      yield* Fiber.interrupt(fiber)
      const seen = received.length
      expect(seen).toBeGreaterThan(0)
      yield* TestClock.adjust("10 seconds")
      expect(received).toHaveLength(seen)
      expect(yield* (yield* MockLanguageModel.MockLanguageModel).requests).toHaveLength(1)
    }).pipe(Effect.provide(MockLanguageModel.layer(script, { delay: "10 millis" }))))
})
