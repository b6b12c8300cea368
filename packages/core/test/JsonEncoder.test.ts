import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema, Stream } from "effect"
import * as AgentEvent from "../src/agent/AgentEvent.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as JsonEncoder from "../src/internal/jsonEncoder.ts"
import * as Item from "../src/Item.ts"
import { addCall, answer, environment, model, toolkit } from "./agentFixtures.ts"

/** The encoder's answer and Schema's own for the same value: equal text, or both a failure. */
const agree = <A>(schema: Schema.Codec<A, unknown>, values: ReadonlyArray<unknown>) => {
  const json = Schema.toCodecJson(schema)
  const fast = JsonEncoder.make(json)
  const slow = Schema.encodeExit(Schema.fromJsonString(json))
  for (const value of values) {
    const mine = fast(value as A)
    const theirs = slow(value as A)
    expect(mine._tag, JSON.stringify(String(value))).toBe(theirs._tag)
    if (Exit.isSuccess(mine) && Exit.isSuccess(theirs)) expect(mine.value).toBe(theirs.value)
    if (Exit.isFailure(mine) && Exit.isFailure(theirs)) expect(String(mine.cause)).toBe(String(theirs.cause))
  }
}

const Step = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

describe("JsonEncoder", () => {
  it.effect("writes every event of agent runs exactly as Schema encodes it", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const stopped = yield* Stream.runCollect(agent.stream({ input: "Add", toolkit, model }))
      const submitted = yield* Stream.runCollect(agent.stream({ input: "Add", toolkit, model, finish: "submit" }))
      const events = [...stopped, ...submitted]
      expect(new Set(events.map((event) => event._tag))).toStrictEqual(
        new Set(["TurnStarted", "Delta", "TurnCompleted", "ToolResult", "Verdict", "Finished"])
      )
      expect(submitted.at(-1)).toMatchObject({ _tag: "Finished", result: { _tag: "Submitted" } })
      agree(AgentEvent.AgentEvent, events)
    }).pipe(Effect.provide(environment([
      addCall(1, 2),
      answer("3"),
      MockLanguageModel.callsTurn([{ name: "submit", arguments: { answer: 5 }, callId: "call_submit" }], { model })
    ]))))

  it("writes citations, their deltas and a turn's annotated text exactly as Schema does", () => {
    const url = { type: "url_citation", url: "https://e.com/a", title: "A", start_index: 0, end_index: 5 } as const
    const file = {
      type: "file_citation",
      title: "Atlas",
      provider_data: { type: "x-anthropic.char_location", data: { document_index: 0, nested: [{ a: null }] } }
    } as const
    const turn = { ...MockLanguageModel.textTurn("Paris"), items: [] }
    const message = {
      ...Item.assistantMessage("Paris"),
      content: [{ type: "output_text", text: "Paris", annotations: [url, file] }]
    }
    agree(AgentEvent.AgentEvent, [
      { _tag: "Delta", step: 1, delta: { type: "citation", citation: url } },
      { _tag: "Delta", step: 1, delta: { type: "citation", citation: file } },
      { _tag: "Delta", step: 1, delta: { type: "citation", citation: { ...url, start_index: -1 } } },
      { _tag: "Delta", step: 1, delta: { type: "citation", citation: { type: "page_citation", url: "x" } } },
      {
        _tag: "Delta",
        step: 1,
        delta: { type: "citation", citation: { ...file, provider_data: { type: "y", data: {} } } }
      },
      { _tag: "Delta", step: 1, delta: { type: "turn_complete", turn: { ...turn, items: [message] } } }
    ])
  })

  it("drops undeclared keys and writes the schema's key order, as Schema does", () => {
    const delta = { delta: { delta: "hi", extra: true, type: "text_delta" }, step: 1, _tag: "Delta", more: [1] }
    const text = JsonEncoder.make(Schema.toCodecJson(AgentEvent.AgentEvent))(delta as AgentEvent.AgentEvent)
    expect(text).toStrictEqual(
      Exit.succeed("{\"_tag\":\"Delta\",\"step\":1,\"delta\":{\"type\":\"text_delta\",\"delta\":\"hi\"}}")
    )
    agree(AgentEvent.AgentEvent, [delta])
  })

  it("fails as Schema fails: a wrong tag, a broken check, a missing key, a value of the wrong type", () => {
    agree(AgentEvent.AgentEvent, [
      { _tag: "Nope", step: 1 },
      { _tag: "Delta", step: 0, delta: { type: "text_delta", delta: "x" } },
      { _tag: "Delta", step: 1.5, delta: { type: "text_delta", delta: "x" } },
      { _tag: "Delta", delta: { type: "text_delta", delta: "x" } },
      { _tag: "Delta", step: 1, delta: { type: "text_delta", delta: 3 } },
      { _tag: "Delta", step: 1, delta: { type: "text_delta", delta: "x", phase: undefined } },
      null,
      [1],
      "Delta"
    ])
  })

  it("picks a union's first member that accepts the value, though a later one declares more of it", () => {
    const Union = Schema.Union([
      Schema.Struct({ a: Schema.String }),
      Schema.Struct({ a: Schema.String, b: Schema.Number })
    ])
    agree(Union, [{ a: "x", b: 1 }, { b: 1 }, { a: 1, b: 1 }])
  })

  it("leaves to Schema what it cannot judge: transformations, declarations, records, unknown values", () => {
    const Mixed = Schema.Struct({
      step: Step,
      at: Schema.Date,
      cost: Schema.Number,
      error: Schema.optionalKey(AiError.AiError),
      data: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
      value: Schema.optionalKey(Schema.Unknown),
      maybe: Schema.optional(Schema.String),
      list: Schema.Array(Schema.Struct({ n: Schema.Finite })).check(Schema.isMaxLength(2)),
      pair: Schema.optionalKey(Schema.Tuple([Schema.String, Schema.Number]))
    })
    const at = new Date(Date.UTC(2026, 10, 25))
    agree(Mixed, [
      { step: 1, at, cost: 0.5, list: [] },
      { step: 1, at, cost: Number.NaN, list: [{ n: 1 }, { n: 2 }], maybe: undefined, pair: ["a", 1] },
      { step: 1, at, cost: 1, list: [], error: new AiError.IncompleteTurn({ message: "cut" }) },
      { step: 1, at, cost: 1, list: [], data: { a: [1, { b: null }] }, value: { nested: "yes" } },
      { step: 1, at, cost: 1, list: [], value: undefined },
      { step: 1, at, cost: 1, list: [], value: () => 1 },
      { step: 1, at, cost: 1, list: [], value: 1n },
      { step: 1, at, cost: 1, list: [{ n: 1 }, { n: 2 }, { n: 3 }] },
      { step: 1, at: new Date(Number.NaN), cost: 1, list: [] },
      { step: 1, at, cost: 1, list: [{ n: Number.POSITIVE_INFINITY }] }
    ])
  })
})
