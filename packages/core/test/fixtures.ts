/** Test doubles shared by the core tests. */
import { Effect, Schema } from "effect"
import type * as Item from "../src/Item.ts"
import * as Tool from "../src/Tool.ts"

/** A tool that adds two numbers. */
export const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  // Pure: a checkpointed run need not record its calls' starts.
  idempotent: true,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

/** How children of this repository are bundled: with the packages' sources (see `TestProcess.bundled`). */
export const sources = { conditions: ["@agentloop/source"] }

/** A call of a `lookup` tool, with call id `id`, as it stands in a history. */
export const lookupCall = (id: string): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${id}`,
  status: "completed",
  call_id: id,
  name: "lookup",
  arguments: "{}"
})

/** The output `output` (JSON) of the call with id `id`, as it stands in a history. */
export const lookupOutput = (id: string, output = "{}"): Item.FunctionCallOutput => ({
  type: "function_call_output",
  id: `fco_${id}`,
  status: "completed",
  call_id: id,
  output
})
