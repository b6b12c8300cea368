/**
 * The run the checkpoint benchmarks record (`checkpoint`, `history`,
 * `retention`): `turns - 1` turns each calling `add` once (with new
 * arguments), then an answer, all on a priced model so every turn has a cost.
 */
import { Tool } from "@agentloop/core"
import type { Turn } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { Effect, Schema } from "effect"

/** The `add` tool's definition, not idempotent (each of its calls records its start). */
export const adder = {
  name: "add",
  description: "Adds",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }: { readonly a: number; readonly b: number }) => Effect.succeed(a + b)
}

/** The `add` tool. */
export const add = Tool.make(adder)

/** The model's turns of a run of `turns` turns. */
export const script = (turns: number): ReadonlyArray<Turn.Turn> => [
  ...Array.from(
    { length: turns - 1 },
    (_, i) =>
      MockLanguageModel.callsTurn([{ name: "add", arguments: { a: i, b: 1 }, callId: `call_${i}` }], {
        model: "gpt-5-mini"
      })
  ),
  MockLanguageModel.textTurn("done", { model: "gpt-5-mini" })
]
