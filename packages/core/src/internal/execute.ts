/**
 * A program's execution: its context, its frame, its first step.
 *
 * @internal
 */
import { Clock, Effect, Random } from "effect"
import type * as Step from "../Step.ts"
import { makeExecution, runChild, runFrame } from "./runtime.ts"
import type { Sink } from "./runtime.ts"

/** Runs `step` on `input` as a new execution, sending its events to `sink` (`Step.execute` and `Step.stream` give it their types). */
export const program = (
  step: Step.Any,
  input: unknown,
  options: (Step.Options<unknown> & { readonly state?: unknown }) | undefined,
  sink: Sink | undefined
): Effect.Effect<unknown, unknown, unknown> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const id = options?.id ??
      `exec_${Math.abs(yield* Random.nextInt).toString(36)}_${clock.currentTimeMillisUnsafe().toString(36)}`
    const execution = makeExecution({
      id,
      threadId: options?.threadId ?? id,
      resourceId: options?.resourceId,
      parent: undefined,
      parentContext: null,
      clock,
      input,
      state: options?.state
    })
    return yield* runFrame(
      execution.frame,
      runChild(step, input, { execution, toolkit: options?.toolkit, sink, frame: execution.frame })
    )
  })
