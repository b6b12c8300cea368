/**
 * The model behaviour every agent benchmark gives every framework: a run of
 * {@link turns} turns (or fewer: `length`), each but the last calling the
 * `add` tool once (with new arguments, so no framework sees the same call
 * twice), the last answering in text. Which turn a request gets is read from
 * its history (how many tool results it holds), so any number of runs can
 * share one model.
 *
 * The turns are agentloop `Turn`s streamed as `MockLanguageModel.deltas`
 * streams them (text and arguments in 8-character pieces); the peers' mock
 * models (`aiSdkModel.ts`, `langchainModel.ts`) translate the same deltas.
 */
import { LanguageModel, Tool, Toolkit } from "@agentloop/core"
import type { AgentEvent, Item, Turn, TurnDelta } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { Effect, Layer, Schema, Stream } from "effect"

/** Turns in a run: `turns - 1` tool calls, then the answer. */
export const turns = 10

/** The last turn's text. */
export const answer = "The running total is ten, after nine additions of one each."

/** The arguments of the call of turn `turn` (0 for the first). */
export const callArguments = (turn: number) => ({ a: turn, b: 1 })

/** Turn number `turn` (0 for the first) of a run. */
export const turnAt = (turn: number): Turn.Turn =>
  turn < turns - 1
    ? MockLanguageModel.callsTurn([{ name: "add", arguments: callArguments(turn), callId: `call_${turn}` }])
    : MockLanguageModel.textTurn(answer)

const script = Array.from({ length: turns }, (_, turn) => turnAt(turn))
const streamed = script.map((turn) => MockLanguageModel.deltas(turn))

const index = (results: number, length: number) => results < Math.min(length, turns) - 1 ? results : turns - 1

/** The turn that answers a request whose history holds `results` tool results, in a run of `length` turns. */
export const turnFor = (results: number, length = turns): Turn.Turn => script[index(results, length)]!

/** The deltas of {@link turnFor}. */
export const deltasFor = (results: number, length = turns): ReadonlyArray<TurnDelta.TurnDelta> =>
  streamed[index(results, length)]!

/** The tool: adds two numbers. */
export const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  idempotent: true,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

/** How many tool results `history` holds: which turn of the script it asks for. */
export const resultsIn = (history: ReadonlyArray<Item.Item>): number => {
  let results = 0
  for (const item of history) if (item.type === "function_call_output") results++
  return results
}

/** The agentloop model: any number of runs at once, each answered by its own history. */
export const model: Layer.Layer<LanguageModel.LanguageModel> = Layer.succeed(LanguageModel.LanguageModel, {
  provider: "bench",
  streamTurn: (history) => Stream.fromIterable(deltasFor(resultsIn(history)))
})

/** What an agentloop run of the script is given: the tool, and room for every turn. */
export const options = { input: "Add", toolkit: Toolkit.make(add), limits: { maxTurns: turns + 1 } }

/** Checks that an agentloop run took every turn of the script (`length` of them) and ended with its answer. */
export const checkResult = (result: AgentEvent.RunResult, length = turns): void => {
  if (result._tag !== "Stopped" || result.termination.accounting.steps !== length || result.output !== answer) {
    throw new Error(`the run ended with ${result._tag} after ${result.termination.accounting.steps} turns`)
  }
}

/** Checks that the last event of an agentloop run's stream is its `Finished`, as {@link checkResult} checks it. */
export const checkLast = (last: AgentEvent.AgentEvent | undefined): void => {
  if (last?._tag !== "Finished") throw new Error(`the run's stream ended with ${last?._tag}`)
  checkResult(last.result)
}
