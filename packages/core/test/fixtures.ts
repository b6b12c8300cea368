/** Test doubles shared by the core tests. */
import { Effect, Schema } from "effect"
import * as Tool from "../src/Tool.ts"

/** A tool that adds two numbers. */
export const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

/** Node options for children started from this repository: import the packages from their sources. */
export const sources = { execArgv: ["--conditions=@agentloop/source"] }
