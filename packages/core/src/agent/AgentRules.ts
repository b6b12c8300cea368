/**
 * The rules an agent run decides by after each turn, as plain functions.
 *
 * Each answers one question about what a turn did: did a tool halt the run, did
 * the finish tool succeed, how many mistakes in a row, is the run stuck, what
 * does the budget say, which termination ends a run whose turn failed.
 * `AgentLoop` composes them; each can be tested, and reused, alone.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type { Accounting } from "../Accounting.ts"
import * as AiError from "../AiError.ts"
import * as Compactor from "../Compactor.ts"
import * as Cost from "../Cost.ts"
import * as Item from "../Item.ts"
import * as Termination from "../Termination.ts"
import * as Toolkit from "../Toolkit.ts"
import * as Turn from "../Turn.ts"
import * as AgentTurn from "./AgentTurn.ts"

/** The call of a tool that failed with `Halt`, asking to end the run; the first one when several did. */
export const halting = (results: ReadonlyArray<Toolkit.Result>): Toolkit.Mistake | undefined =>
  results.find((result): result is Toolkit.Mistake => result.outcome === "halted")

/** The successful call of the finish tool named `finish`, when the turn made one. */
export const submission = (
  results: ReadonlyArray<Toolkit.Result>,
  finish: string | undefined
): Toolkit.Success | undefined =>
  finish === undefined
    ? undefined
    : results.find((result): result is Toolkit.Success => result.outcome === "success" && result.call.name === finish)

/**
 * The mistakes in a row after a turn, one entry per turn (what went wrong in
 * it). A turn whose calls all failed adds one; a turn with a successful call
 * clears them; a turn without calls leaves them as they were.
 */
export const mistakes = (
  previous: ReadonlyArray<string>,
  results: ReadonlyArray<Toolkit.Result>
): ReadonlyArray<string> => {
  if (results.length === 0) return previous
  if (!results.every(Toolkit.isMistake)) return []
  return [...previous, results.map((result) => result.reason).join("; ")]
}

/**
 * Where a run stands on progress: the signature of the previous turn's calls
 * and results (`null` after a turn without calls), and the calls and outputs
 * of each turn in a row that repeated its predecessor's.
 */
export const Progress = Schema.Struct({
  signature: Schema.NullOr(Schema.String),
  stuck: Schema.Array(Item.History)
})
export type Progress = typeof Progress.Type

/** A run that has not repeated itself. */
export const progressing: Progress = { signature: null, stuck: [] }

/**
 * Progress after a turn. A turn that makes the same calls as the previous one,
 * gets the same results and writes no text is stuck, and joins `stuck`; any
 * other turn (new calls, new results, or some text) starts afresh.
 */
export const progress = (
  previous: Progress,
  turn: Turn.Turn,
  results: ReadonlyArray<Toolkit.Result>
): Progress => {
  const calls = Turn.functionCalls(turn)
  if (calls.length === 0) return progressing
  const signature = JSON.stringify([
    calls.map((call) => [call.name, call.arguments]),
    results.map((result) => result.output.output)
  ])
  const repeated = signature === previous.signature && Turn.text(turn).trim() === ""
  return { signature, stuck: repeated ? [...previous.stuck, [...calls, ...Toolkit.outputs(results)]] : [] }
}

/**
 * What a budget says about a run's cost: `within` it (or no budget), `reached`
 * (the cost is at least the budget: the budget itself counts as spent), or
 * `unpriced` (the cost is unknown, so the budget cannot be kept).
 */
export const budget = (cost: Cost.Cost, maxBudgetUsd: number | undefined): "within" | "reached" | "unpriced" => {
  if (maxBudgetUsd === undefined) return "within"
  if (cost === null) return "unpriced"
  return Cost.reaches(cost, maxBudgetUsd) ? "reached" : "within"
}

/** The message that asks the model to write its structured output again, saying what was wrong with it. */
export const repairRequest = (diagnostic: Termination.Diagnostic): string =>
  `Your answer is not valid JSON for the required schema: ${diagnostic.message}\n` +
  "Answer again with only the JSON value, nothing else."

/** Whether a run's failure is its turn's (a model or compaction failure), not yet a termination. */
export const isTurnFailure: (u: unknown) => u is AgentTurn.Failure = Schema.is(
  Schema.Union([AiError.AiError, Compactor.CompactionError])
)

/**
 * The termination of a run whose turn could not complete: rejected credentials
 * are `ProviderAuth`, no quota left `ProviderQuota`, a history still too long
 * after compaction `PromptTooLong`,
 * a compactor that failed `CompactionFailed`, anything else `DuringExecution`.
 */
export const turnFailure = (failure: AgentTurn.Failure, accounting: Accounting): Termination.Error => {
  switch (failure._tag) {
    case "AuthFailed":
      return new Termination.ProviderAuth({ cause: failure, accounting })
    case "QuotaExceeded":
      return new Termination.ProviderQuota({ cause: failure, accounting })
    case "ContextLengthExceeded":
      return new Termination.PromptTooLong({ cause: failure, accounting })
    case "CompactionError":
      return new Termination.CompactionFailed({
        message: `the history did not fit the context window and compacting it failed: ${failure.message}`,
        ...(failure.overflow === undefined ? {} : { cause: failure.overflow }),
        accounting
      })
    default:
      return new Termination.DuringExecution({
        message: `the model request failed: ${failure.message}`,
        cause: failure,
        accounting
      })
  }
}
