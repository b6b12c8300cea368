/**
 * The demo agent: a calculator and a unit converter, run by `AgentLoop`, with
 * its events printed as they stream.
 */
import { Effect, Stream } from "effect"
import { AgentLoop } from "@agentloop/core"
import * as Render from "./render.ts"
import { toolkit } from "./tools.ts"

const instructions = "You are a careful assistant. Use the tools for every calculation and unit conversion, " +
  "then answer briefly."

/** Runs the agent on `question`, writing its output with `write`. A termination is printed, not raised. */
export const run = (question: string, write: (text: string) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    yield* write(`> ${question}\n\n`)
    yield* agent.stream({ input: question, instructions, toolkit, limits: { maxTurns: 8, maxBudgetUsd: 0.25 } }).pipe(
      Stream.map(Render.event),
      Stream.filter((text) => text !== ""),
      Stream.runForEach(write),
      Effect.catch((termination) => write(Render.termination(termination)))
    )
  })
