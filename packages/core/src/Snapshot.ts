/**
 * What an `Until` predicate sees at the end of an iteration.
 *
 * @since 0.1.0
 */
import type { Cost } from "./Cost.ts"
import type { StepMeta } from "./StepMeta.ts"
import * as TokenUsage from "./TokenUsage.ts"

/**
 * The state of a run after an iteration. `runId` identifies the run; predicates
 * that keep state between iterations (`Until.converged`) key it by `runId`, so
 * it must be unique per run, including child runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface Snapshot {
  /** Unique id of the run. */
  readonly runId: string
  /** Iterations completed so far. */
  readonly stepCount: number
  /** Tokens used by the run so far. */
  readonly tokens: TokenUsage.TokenUsage
  /** Milliseconds since the run started. */
  readonly elapsed: number
  /** Cost of the run so far, in USD; `null` when a turn's model had no price (an unknown cost is not zero). */
  readonly cost: Cost
  /**
   * Output of the last iteration: in an `AgentLoop` run, the turn's text (the
   * whole turn is in `lastStepMeta.responseItems`); in a step `loop`, the output
   * of its last step.
   */
  readonly lastOutput: unknown
  /** Text of the last iteration's output. */
  readonly lastText: string
  /** Outputs of all iterations so far, oldest first. */
  readonly history: ReadonlyArray<unknown>
  /** Nesting depth: 0 for a top-level run. */
  readonly depth: number
  /** What the last step reported about itself. */
  readonly lastStepMeta?: StepMeta | null | undefined
}

/**
 * A snapshot of run `runId` with the given fields; the others are those of a
 * run that has not started (no steps, tokens, cost, time, output or history).
 *
 * @example
 * ```ts
 * import { Snapshot, Until } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // What a stop predicate sees; `make` fills in what a test leaves out.
 * const snapshot = Snapshot.make({ runId: "run-1", stepCount: 3, lastText: "All tests pass. DONE" })
 * Effect.runPromise(Until.evaluate(Until.outputContains("DONE"), snapshot)).then((verdict) =>
 *   console.log(verdict.stop) // true
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (fields: Partial<Snapshot> & { readonly runId: string }): Snapshot => ({
  stepCount: 0,
  tokens: TokenUsage.empty,
  elapsed: 0,
  cost: 0,
  lastOutput: undefined,
  lastText: "",
  history: [],
  depth: 0,
  ...fields
})
