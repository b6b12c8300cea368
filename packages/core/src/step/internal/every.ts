/**
 * The `every` step: a step on a schedule, woken early by a channel.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as Result from "effect/Result"
import * as Schedule from "effect/Schedule"
import type * as Channel from "../Channel.ts"
import type * as Step from "../StepAst.ts"
import * as StepErrors from "../StepError.ts"
import { Runner, TypeId, variance, within } from "./runner.ts"
import { emit, runStep } from "./runtime.ts"

/** The fields of an `every` step. */
export interface EveryOptions<I, O, E, R, S, W> {
  readonly id: string
  /** The step to run each time, always on the `every` step's input. */
  readonly step: Step.Step<I, O, E, R, S>
  /** Milliseconds to park after each run; at least 0. */
  readonly ms: number
  /** Up to this many more milliseconds per park, at random (default 0); at least 0. */
  readonly jitter?: number | undefined
  /** Any value sent here ends the current park at once (the value is taken: it is a wake-up, not a message). */
  readonly wakeOn?: Channel.Channel<W> | undefined
  /**
   * When a run fails: `continue` (the default) records the error, as a
   * `Recorded` event and in `ctx.errors`, and parks again; `fail` fails the step.
   */
  readonly onError?: "continue" | "fail" | undefined
}

/**
 * A step that runs `step`, parks `ms` plus up to `jitter` ms (an Effect
 * `Schedule`, raced against `wakeOn`), and runs it again, forever: it ends
 * only when interrupted (by a race it loses, a timeout, an abort, a consumer
 * that stops) or, with `onError: "fail"`, on a failure. A negative `ms` or
 * `jitter` fails the program with `InvalidOptions` before anything runs.
 */
export const make = <I, O, E, R, S, W = never>(
  options: EveryOptions<I, O, E, R, S, W>
): Step.StepEvery<I, void, E, R, S> => {
  const { id, step: child, ms, jitter = 0, wakeOn, onError = "continue" } = options
  const step: Step.StepEvery<I, void, E, R, S> = {
    [TypeId]: variance,
    kind: "every",
    id,
    step: child,
    ms,
    jitter,
    ...(wakeOn === undefined ? {} : { wakeOn }),
    onError,
    [Runner]: (input, scope) =>
      Effect.gen(function*() {
        const schedule = Schedule.spaced(ms).pipe(
          Schedule.modifyDelay(() =>
            jitter === 0 ? Effect.succeed(ms) : Effect.map(Random.next, (r) => ms + r * jitter)
          )
        )
        const sleep = yield* Schedule.toStepWithSleep(schedule)
        const timer = Effect.orDie(sleep(undefined))
        const park = wakeOn === undefined ? timer : Effect.raceFirst(timer, Queue.take(wakeOn.queue))
        const { execution } = scope
        for (let iteration = 0;; iteration++) {
          const result = yield* Effect.result(runStep(child, input, within(scope, iteration)))
          if (Result.isFailure(result)) {
            if (onError === "fail") return yield* Effect.fail(result.failure)
            const error = StepErrors.info(result.failure)
            execution.errors.push({ stepId: id, error, elapsed: execution.elapsed() })
            // Told of the run that failed: its key is its place, the same when the program runs again.
            yield* emit(
              scope,
              step,
              { _tag: "Recorded", stepId: id, kind: "every", contextId: execution.id, error },
              `${scope.path}[${iteration}]`
            )
          }
          yield* park
        }
      })
  }
  return step
}
