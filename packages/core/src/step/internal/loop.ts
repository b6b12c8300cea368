/**
 * The `loop` step: steps in sequence, again, until a predicate says stop.
 *
 * @internal
 */
import { Effect, Option, Queue, Result } from "effect"
import type { PredicateFailed } from "../../PredicateFailed.ts"
import type { Snapshot } from "../../Snapshot.ts"
import * as Until from "../../Until.ts"
import type { Verdict } from "../../Verdict.ts"
import * as Channel from "../Channel.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import type * as Step from "../StepAst.ts"
import { InvalidStep, MaxIterations } from "../StepError.ts"
import type { StepFailed } from "../StepError.ts"
import { Runner, TypeId, variance, within } from "./runner.ts"
import { attempt, emit, Frame, nonNegative, runFrame, runSequence, userMessage } from "./runtime.ts"
import type { Last } from "./runtime.ts"

/**
 * Checks that each step of a loop takes what it is given: the first, what the
 * loop is given (and, without `prepareNext`, what an iteration outputs: it is
 * the next iteration's input); each next, the output of the one before.
 */
export type Chain<Steps extends ReadonlyArray<Step.Some>, Given> = Steps extends
  readonly [infer Head extends Step.Some, ...infer Tail extends ReadonlyArray<Step.Some>]
  ? readonly [Taking<Given>, ...Chain<Tail, Step.Output<Head>>]
  : ReadonlyArray<Taking<Given>>

/** A step that takes `Given`; any step when `Given` is `never` (nothing to check). */
type Taking<Given> = [Given] extends [never] ? Step.Some : Step.Takes<Given>

/** A loop's steps: at least one. */
export type Steps = readonly [Step.Some, ...ReadonlyArray<Step.Some>]

/** The input of a loop of `Steps`: its first step's. */
export type LoopInput<S extends Steps> = Step.Input<S[0]>

/** The output of a loop of `Steps`: its last step's. */
export type LoopOutput<S extends Steps> = Step.Output<Last<S>>

/** The fields of a `loop` step. */
export interface LoopOptions<S extends Steps, EU, RU, EO, RO, St> {
  readonly id: string
  /** The steps of an iteration, in sequence: each output is the next input, the last is the iteration's output. */
  readonly steps: S
  /** Asked after each iteration whether to stop; a verdict's `feedback` goes into the item log as a user message. */
  readonly until: Until.Until<EU, RU>
  /** Iterations at most (retried and skipped ones included); one more would fail with `MaxIterations`. */
  readonly maxIterations?: number | undefined
  /** Items the item log keeps, the newest, trimmed before each iteration (never between a call and its output). */
  readonly maxHistorySize?: number | undefined
  /** Messages that keep the loop going: when the predicate says stop, a message waiting here (or arriving within `parkTimeout`) is appended as a user message instead. */
  readonly inbox?: Channel.Channel<string> | undefined
  /** Milliseconds to wait on `inbox` before stopping (default 0: only a message already waiting). */
  readonly parkTimeout?: number | undefined
  /** What to do when an iteration fails: `retry` it, `skip` to the next (both with the same input), or `abort` (the default: the loop fails). */
  readonly onError?:
    | ((error: Step.Error<S[number]>, ctx: ExecutionContext<St>) => Step.MaybeEffect<Step.OnError, EO, RO>)
    | undefined
}

/** The fields of a `loop` step that maps each iteration's output to the next input. */
export interface LoopNextOptions<S extends Steps, EU, RU, EO, RO, EP, RP, St>
  extends LoopOptions<S, EU, RU, EO, RO, St>
{
  readonly prepareNext: (
    output: LoopOutput<S>,
    verdict: Verdict,
    ctx: ExecutionContext<St>
  ) => Step.MaybeEffect<LoopInput<S>, EP, RP>
}

type LoopError = PredicateFailed | MaxIterations | InvalidStep | StepFailed

const positiveInteger = (stepId: string, field: string, value: number | undefined) =>
  value === undefined || (Number.isInteger(value) && value >= 1)
    ? Effect.void
    : Effect.fail(new InvalidStep({ stepId, message: `${field} must be a positive integer, not ${value}` }))

const textOf = (output: unknown): string => {
  if (typeof output === "string") return output
  try {
    return JSON.stringify(output) ?? ""
  } catch {
    return String(output)
  }
}

/**
 * A step that runs its `steps` in sequence (each output the next input), then
 * asks `until` with a seed-000 `Snapshot` (`stepCount`: the iterations
 * completed; `lastOutput`: the iteration's output; tokens, cost and elapsed
 * time: the context's), and goes on with the output as the next input (or
 * `prepareNext` of it) until the predicate says stop. Its output is the last
 * iteration's. `ctx.complete(value)` inside it ends it at once with `value`.
 */
export function make<
  const S extends Steps,
  EU = never,
  RU = never,
  EO = never,
  RO = never,
  St = unknown
>(
  options: LoopOptions<S, EU, RU, EO, RO, St> & {
    readonly steps: NoInfer<Chain<S, LoopOutput<S>>>
    readonly prepareNext?: undefined
  }
): Step.StepLoop<
  LoopInput<S>,
  LoopOutput<S>,
  Step.Error<S[number]> | EU | EO | LoopError,
  Step.Services<S[number]> | RU | RO,
  St & Step.StateOf<S[number]>
>
export function make<
  const S extends Steps,
  EU = never,
  RU = never,
  EO = never,
  RO = never,
  EP = never,
  RP = never,
  St = unknown
>(
  options: LoopNextOptions<S, EU, RU, EO, RO, EP, RP, St> & { readonly steps: NoInfer<Chain<S, never>> }
): Step.StepLoop<
  LoopInput<S>,
  LoopOutput<S>,
  Step.Error<S[number]> | EU | EO | EP | LoopError,
  Step.Services<S[number]> | RU | RO | RP,
  St & Step.StateOf<S[number]>
>
export function make<const S extends Steps, EU, RU, EO, RO, EP, RP, St>(
  options: LoopOptions<S, EU, RU, EO, RO, St> & {
    readonly prepareNext?: LoopNextOptions<S, EU, RU, EO, RO, EP, RP, St>["prepareNext"] | undefined
  }
): Step.StepLoop<
  LoopInput<S>,
  LoopOutput<S>,
  Step.Error<S[number]> | EU | EO | EP | LoopError,
  Step.Services<S[number]> | RU | RO | RP,
  St & Step.StateOf<S[number]>
> {
  const { id, steps, until, maxIterations, maxHistorySize, inbox, parkTimeout, prepareNext, onError } = options
  const step: Step.StepLoop<
    LoopInput<S>,
    LoopOutput<S>,
    Step.Error<S[number]> | EU | EO | EP | LoopError,
    Step.Services<S[number]> | RU | RO | RP,
    St & Step.StateOf<S[number]>
  > = {
    [TypeId]: variance,
    kind: "loop",
    id,
    steps,
    until,
    maxIterations,
    maxHistorySize,
    inbox,
    parkTimeout,
    prepareNext,
    onError,
    [Runner]: (input, scope) =>
      Effect.gen(function*() {
        yield* positiveInteger(id, "maxIterations", maxIterations)
        yield* nonNegative(id, "maxHistorySize", maxHistorySize)
        yield* nonNegative(id, "parkTimeout", parkTimeout)
        if (steps.length === 0) return yield* new InvalidStep({ stepId: id, message: "a loop needs at least one step" })
        const { execution, context } = scope
        const frame = new Frame()
        const inner = { ...scope, frame }
        const header = { stepId: id, kind: "loop" as const, contextId: execution.id }
        const runId = `${execution.id}/${id}`

        // An iteration's steps are keyed by the iterations completed before it, so a retried one reuses its keys.
        const iterate = (given: unknown, completed: number) => runSequence(steps, given, within(inner, completed))
        const nextInput = (output: LoopOutput<S>, verdict: Verdict) =>
          prepareNext === undefined
            ? Effect.succeed<unknown>(output)
            : attempt(id, "prepareNext", () => prepareNext(output, verdict, context))

        const body = Effect.gen(function*() {
          let given: unknown = input
          let started = 0
          let completed = 0
          let outputs: ReadonlyArray<LoopOutput<S>> = []
          while (true) {
            if (maxIterations !== undefined && started >= maxIterations) {
              return yield* new MaxIterations({ stepId: id, maxIterations })
            }
            started++
            if (maxHistorySize !== undefined) execution.itemLog.keepNewest(maxHistorySize)
            const result = yield* Effect.result(iterate(given, completed))
            if (Result.isFailure(result)) {
              const error = result.failure
              const decision = onError === undefined
                ? "abort"
                : yield* attempt(id, "onError", () => onError(error, context))
              if (decision === "retry" || decision === "skip") continue
              if (decision === "abort") return yield* Effect.fail(error)
              return yield* new InvalidStep({
                stepId: id,
                message: `onError answered ${JSON.stringify(decision)}, not "retry", "skip" or "abort"`
              })
            }
            const output = result.success
            completed++
            outputs = [...outputs, output]
            const snapshot: Snapshot = {
              runId,
              stepCount: completed,
              tokens: execution.tokens,
              elapsed: execution.elapsed(),
              cost: execution.cost,
              lastOutput: output,
              lastText: textOf(output),
              history: outputs,
              depth: execution.depth,
              lastStepMeta: execution.lastStepMeta
            }
            const verdict = yield* Until.evaluate(until, snapshot)
            yield* emit(scope, step, { _tag: "Verdict", ...header, iteration: completed, verdict })
            if (verdict.feedback !== undefined) {
              execution.itemLog.append(userMessage(verdict.feedback, `feedback_${completed}`))
            }
            if (verdict.stop) {
              const message = inbox === undefined
                ? null
                : parkTimeout === undefined || parkTimeout === 0
                ? Channel.tryRecv(inbox)
                : Option.getOrNull(yield* Effect.timeoutOption(Queue.take(inbox.queue), parkTimeout))
              if (message === null) return output
              execution.itemLog.append(userMessage(message, `inbox_${completed}`))
            }
            given = yield* nextInput(output, verdict)
          }
        })
        return yield* runFrame(frame, body)
      })
  }
  return step
}
