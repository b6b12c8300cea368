/**
 * A program's execution: its context, its frame, its first step, and, with a
 * `Checkpointer` and an execution id, its ledger.
 *
 * @internal
 */
import { Cause, Clock, Effect, Option, Random } from "effect"
import { Checkpointer } from "../Checkpointer.ts"
import type * as Step from "../Step.ts"
import { CheckpointFailed } from "../StepError.ts"
import * as Ledger from "./ledger.ts"
import { makeExecution, runChild, runFrame } from "./runtime.ts"
import type { Sink } from "./runtime.ts"

/**
 * Runs `step` on `input` as a new execution, sending its events to `sink`
 * (`Step.execute` and `Step.stream` give it their types). With a
 * `Checkpointer` in context and an `id`, every completed step is recorded, an
 * execution run again skips the steps it recorded, and one that ended returns
 * its recorded output without running anything.
 */
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
    const checkpointer = options?.id === undefined ? Option.none() : yield* Effect.serviceOption(Checkpointer)
    const ledger = Option.isNone(checkpointer) ? undefined : yield* Ledger.load(checkpointer.value, id)
    if (ledger?.finished !== undefined) return yield* Ledger.decodeOutput(id, step, ledger.finished)
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
    const output = yield* runFrame(
      execution.frame,
      runChild(step, input, { execution, toolkit: options?.toolkit, sink, frame: execution.frame, path: "", ledger })
    )
    if (ledger !== undefined) yield* ledger.finish(yield* Ledger.encodeOutput(id, step, output))
    return output
  }).pipe(
    // A step that could not be recorded dies with the reason (so no step's error handling retries
    // it); the program fails with it, typed.
    Effect.catchCause((cause) => {
      const defect = Cause.findDefect(cause)
      return defect._tag === "Success" && defect.success instanceof CheckpointFailed
        ? Effect.fail(defect.success)
        : Effect.failCause(cause)
    })
  )
