/**
 * The `run` step: a function, retried as its policy says.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { ExecutionContext } from "../ExecutionContext.ts"
import * as RetryPolicy from "../RetryPolicy.ts"
import type { MaybeEffect, StepRun } from "../StepAst.ts"
import type { StepFailed } from "../StepError.ts"
import { Runner, TypeId, variance } from "./runner.ts"
import { attempt } from "./runtime.ts"

/** The fields of a `run` step. */
export interface RunOptions<I, O, E, R, S> {
  readonly id: string
  /** The step's work, on its input. A throw or a rejection fails the step with `StepFailed`. */
  readonly execute: (input: I, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
  /** Retries of a failed `execute` (any failure); none when absent. A policy that does not decode fails the program with `InvalidOptions`, before anything runs. */
  readonly retry?: RetryPolicy.RetryPolicy | undefined
}

/**
 * A step that runs `execute` on its input; its output is `execute`'s answer.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Step } from "@agentloop/core"
 *
 * const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
 * Effect.runPromise(Step.execute(double, 21)).then(console.log) // 42
 * ```
 */
export const make = <I, O, E = never, R = never, S = unknown>(
  options: RunOptions<I, O, E, R, S>
): StepRun<I, O, E | StepFailed, R, S> => {
  const { id, execute, retry } = options
  const once = (input: I, ctx: ExecutionContext<S>) => attempt(id, "execute", () => execute(input, ctx))
  return {
    [TypeId]: variance,
    kind: "run",
    id,
    execute,
    ...(retry === undefined ? {} : { retry }),
    // The policy was checked with the program, before anything ran.
    [Runner]: (input, scope) =>
      retry === undefined
        ? once(input, scope.context)
        : Effect.retry(once(input, scope.context), RetryPolicy.schedule(retry))
  }
}
