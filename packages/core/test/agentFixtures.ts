/** The agent tests' tools, model, prices and runners: a scripted run of `AgentLoop` on the mock model. */
import { MockLanguageModel } from "@agentloop/testing"
import { expect } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import { Halt } from "../src/Halt.ts"
import * as Pricing from "../src/Pricing.ts"
import * as Termination from "../src/Termination.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { add } from "./fixtures.ts"

export const submit = Tool.make({
  name: "submit",
  description: "Submits the final answer",
  input: Schema.Struct({ answer: Schema.Finite }),
  output: Schema.Struct({ answer: Schema.Finite }),
  execute: (input) => Effect.succeed(input)
})
export const halt = Tool.make({
  name: "halt",
  description: "Ends everything",
  input: Schema.Struct({ why: Schema.String }),
  output: Schema.String,
  execute: ({ why }) => Effect.fail(new Halt({ reason: why }))
})
export const toolkit = Toolkit.make(add, submit, halt)

export const model = "test-model"
/** A model whose turns of a million input tokens cost exactly $1. */
export const dollarModel = "dollar-model"
// test-model: $1 per million input tokens, $2 per million output tokens: a 20 in / 10 out turn costs $0.00004.
export const pricing = Pricing.layer({
  [model]: { input: 1, cachedInput: 0.5, output: 2 },
  [dollarModel]: { input: 1, cachedInput: 1, output: 0 }
})
export const usage = TokenUsage.make(20, 10)
export const addCall = (a: number, b: number, callId = `call_${a}_${b}`) =>
  MockLanguageModel.callsTurn([{ name: "add", arguments: { a, b }, callId }], { model, usage })
export const answer = (text: string) => MockLanguageModel.textTurn(text, { model, usage })

export const environment = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
  AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))

export const runWith = <O = string, E = never>(
  script: ReadonlyArray<MockLanguageModel.Reply>,
  options: AgentLoop.Options<O, never, E>
) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    return yield* agent.run(options)
  }).pipe(Effect.provide(environment(script)))

export const failureOf = <O, E = never>(
  script: ReadonlyArray<MockLanguageModel.Reply>,
  options: AgentLoop.Options<O, never, E>
) => Effect.flip(runWith(script, options))

export const requestsOf = <E>(
  script: ReadonlyArray<MockLanguageModel.Reply>,
  options: AgentLoop.Options<string, never, E>
) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    const exit = yield* Effect.exit(agent.run(options))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests }
  }).pipe(Effect.provide(environment(script)))

export const expectTermination = (error: Termination.Error, tag: Termination.Tag, steps: number) => {
  expect(error._tag).toBe(tag)
  expect(error.accounting.steps).toBe(steps)
  expect(error.accounting.usage).toStrictEqual({
    input: usage.input * steps,
    output: usage.output * steps,
    total: usage.total * steps
  })
  expect(error.accounting.cost).toBeCloseTo(0.00004 * steps, 12)
  expect(Schema.decodeUnknownSync(Termination.Error)(Schema.encodeSync(Termination.Error)(error))).toStrictEqual(error)
}
