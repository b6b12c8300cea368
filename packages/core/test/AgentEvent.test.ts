import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import * as AgentEvent from "../src/agent/AgentEvent.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Termination from "../src/Termination.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import { addCall, answer, environment, failureOf, model, toolkit } from "./agentFixtures.ts"

const search = Tool.make({
  name: "search",
  description: "Searches, reporting progress",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Array(Schema.String),
  execute: ({ query }) =>
    Stream.make(Tool.progress({ scanned: 10 }), Tool.progress({ scanned: 20 }), Tool.done([query]))
})

/** Encodes each event to JSON text, as a server would, and decodes it back, as a client would. */
const overTheWire = <S extends Schema.Codec<unknown, unknown>>(schema: S, events: ReadonlyArray<S["Type"]>) => {
  const codec = Schema.toCodecJson(schema)
  return events.map((event) =>
    Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(Schema.encodeSync(codec)(event))))
  )
}

describe("AgentEvent", () => {
  it.effect("every kind of event of a run survives JSON exactly", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({
        input: "Find it",
        toolkit: Toolkit.make(search),
        model,
        until: Until.verified((output) =>
          output === "found" ? { pass: true } : { pass: false, feedback: "Look again." }
        )
      }))
      expect(new Set(events.map((event) => event._tag))).toStrictEqual(
        new Set([
          "TurnStarted",
          "Delta",
          "AttemptDiscarded",
          "Compacted",
          "TurnCompleted",
          "ToolProgress",
          "ToolResult",
          "Verdict",
          "Feedback",
          "Finished"
        ])
      )
      expect(overTheWire(AgentEvent.AgentEvent, events)).toStrictEqual(events)
    }).pipe(Effect.provide(environment([
      MockLanguageModel.callsTurn([{ name: "search", arguments: { query: "x" } }], { model }),
      answer("not yet"),
      MockLanguageModel.partial(
        answer("PARTIAL"),
        1,
        new AiError.ContextLengthExceeded({ provider: "mock", message: "full" })
      ),
      answer("found")
    ]))))

  it.effect("a structured output travels with its own schema, a submitted value as JSON", () =>
    Effect.gen(function*() {
      const Total = Schema.Struct({ total: Schema.Finite, at: Schema.DateTimeUtcFromString })
      const structured = AgentEvent.schema(Total, Schema.Unknown)
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({ input: "Total?", model, output: Total }))
      const finished = events.at(-1)
      if (finished?._tag !== "Finished" || finished.result._tag !== "Stopped") return expect.unreachable()
      expectTypeOf(finished.result.output).toEqualTypeOf<typeof Total.Type>()
      expect(overTheWire(structured, events)).toStrictEqual(events)

      const ended = yield* Stream.runCollect(agent.stream({ input: "Submit", toolkit, finish: "submit", model }))
      expect(ended.at(-1)).toMatchObject({ result: { _tag: "Submitted", termination: { value: { answer: 5 } } } })
      expect(overTheWire(AgentEvent.AgentEvent, ended)).toStrictEqual(ended)
    }).pipe(Effect.provide(environment([
      answer("{\"total\": 5, \"at\": \"2026-11-23T10:00:00.000Z\"}"),
      MockLanguageModel.callsTurn([{ name: "submit", arguments: { answer: 5 } }], { model })
    ]))))

  it.effect("a failed run's termination survives JSON exactly too", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([addCall(1, 1), addCall(1, 2)], {
        input: "Add",
        toolkit,
        model,
        limits: { maxTurns: 1 }
      })
      expect(overTheWire(Termination.Error, [error])).toStrictEqual([error])
    }))

  it("tells events apart by _tag alone, and rejects what is not one", () => {
    const decode = Schema.decodeUnknownExit(AgentEvent.AgentEvent)
    expect(decode({ _tag: "TurnStarted", step: 1 })._tag).toBe("Success")
    expect(decode({ _tag: "TurnStarted", step: 0 })._tag).toBe("Failure")
    expect(decode({ _tag: "Delta", step: 1, delta: { type: "turn_complete", turn: answer("x") } })._tag).toBe("Failure")
    expect(decode({ step: 1, delta: { type: "text_delta", delta: "x" } })._tag).toBe("Failure")
    expect(decode({ _tag: "TurnCompleted", step: 1, turn: answer("x"), cost: "free", accounting: {} })._tag).toBe(
      "Failure"
    )
  })
})
