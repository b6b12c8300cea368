/**
 * The demo agent: a calculator and a unit converter, run by `AgentLoop`, with
 * its progress printed by `Reporter.pretty` as the events stream.
 */
import { AgentLoop, Reporter } from "@agentloop/core"
import type { Termination, Toolkit } from "@agentloop/core"
import { Effect, Stream } from "effect"
import * as Tools from "./tools.ts"

/** What the demo agent is told to do. */
export const instructions = "You are a careful assistant. Use the tools for every calculation and unit conversion, " +
  "then answer briefly."

/**
 * Runs the agent on `question` with `toolkit` (the calculator and the unit
 * converter by default), writing its progress with `write` (with a spinner
 * and colours when `isTerminal`), and returns how the run ended: a
 * termination is printed and returned, not raised.
 */
export const run = (
  question: string,
  write: (text: string) => Effect.Effect<void>,
  options: { readonly isTerminal?: boolean | undefined; readonly toolkit?: Toolkit.Toolkit | undefined } = {}
): Effect.Effect<Termination.Termination, never, AgentLoop.AgentLoop> =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    yield* write(`> ${question}\n\n`)
    return yield* agent.stream({
      input: question,
      instructions,
      toolkit: options.toolkit ?? Tools.toolkit,
      limits: { maxTurns: 8, maxBudgetUsd: 0.25 }
    }).pipe(
      Reporter.pretty,
      Stream.runFold(
        (): Termination.Termination | undefined => undefined,
        (ended, event) => event._tag === "Finished" ? event.result.termination : ended
      ),
      Effect.flatMap((ended) =>
        ended === undefined ? Effect.die(new Error("the run ended without a Finished event")) : Effect.succeed(ended)
      ),
      Effect.catch((termination) => Effect.succeed(termination))
    )
  }).pipe(Effect.provide(Reporter.layer(write, options)))
