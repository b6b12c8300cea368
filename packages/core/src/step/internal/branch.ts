/**
 * The `branch` step: a route picks the step to run.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { InvalidOptions } from "../../InvalidOptions.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import type * as Step from "../StepAst.ts"
import type { InvalidStep, StepFailed } from "../StepError.ts"
import { Runner, TypeId, variance } from "./runner.ts"
import { answeredStep, attempt, runChild } from "./runtime.ts"

/** The fields of a `branch` step. */
export interface BranchOptions<I, Routed, E, R, S> {
  readonly id: string
  /** Picks the step to run on the input, or `null` to skip: then the output is the input. */
  readonly route: (input: I, ctx: ExecutionContext<S>) => Step.MaybeEffect<Routed | null, E, R>
}

/**
 * A step that runs the step `route` picks, on the same input; when `route`
 * answers `null`, nothing runs and the output is the input. A `route` that
 * throws fails the step with `StepFailed`; one that answers with something
 * else than a step or `null` with `InvalidStep`, and with a step that cannot
 * work (see `Step.execute`) with `InvalidOptions`, before it runs.
 */
export const make = <
  I,
  Routed extends Step.Takes<I>,
  E = never,
  R = never,
  S = unknown
>(
  options: BranchOptions<I, Routed, E, R, S>
): Step.StepBranch<
  I,
  Step.Output<Routed> | I,
  E | StepFailed | InvalidStep | InvalidOptions | Step.Error<Routed>,
  R | Step.Services<Routed>,
  S & Step.StateOf<Routed>
> => {
  const { id, route } = options
  return {
    [TypeId]: variance,
    kind: "branch",
    id,
    route,
    [Runner]: (input, scope) =>
      Effect.gen(function*() {
        const routed = yield* attempt(id, "route", () => route(input, scope.context))
        if (routed === null) return input
        return yield* runChild(yield* answeredStep({ stepId: id, answered: "route" }, routed), input, scope)
      })
  }
}
