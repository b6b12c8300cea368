/**
 * The `loop` step: steps in sequence, again, until a predicate says stop.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
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
import { attempt, emit, Frame, runFrame, runSequence, userMessage } from "./runtime.ts"
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
  /**
   * Iterations at most, retried and skipped ones included (default
   * {@link defaultMaxIterations}, 50; `Infinity` for none): a safety limit. A
   * loop that reaches it ends with its last iteration's output, and says so
   * (a `LoopEnded` event of reason `maxIterations`, `agentloop.loop.ended` on
   * its span); one that has no output yet fails with `MaxIterations`.
   */
  readonly maxIterations?: number | undefined
  /** Items the item log keeps, the newest, trimmed before each iteration (never between a call and its output). */
  readonly maxHistorySize?: number | undefined
  /** Messages that keep the loop going: when the predicate says stop, a message waiting here (or arriving within `parkTimeout`) is appended as a user message instead. */
  readonly inbox?: Channel.Channel<string> | undefined
  /** Milliseconds to wait on `inbox` before stopping (default 0: only a message already waiting). */
  readonly parkTimeout?: number | undefined
  /**
   * What to do when an iteration fails: `retry` it (the same input again,
   * the iteration not counted as done), `skip` it (it counts as done, without
   * an output, and the next iteration runs on the same input: the predicate
   * is asked after the next one), or `abort` (the default: the loop fails).
   */
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

/**
 * The iterations a loop runs at most when it does not say (as `AgentLoop`
 * runs 50 turns): a loop runs for ever only when asked to, with
 * `maxIterations: Infinity`.
 */
export const defaultMaxIterations = 50

/** How many of the last outputs a loop's predicate sees in its snapshot's `history`. */
export const historyKept = 100

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
 * asks `until` with a seed-000 `Snapshot` (`stepCount`: the iterations done;
 * `lastOutput`: the iteration's output; `history`: the last
 * {@link historyKept} outputs; tokens, cost and elapsed time: the context's),
 * and goes on with the output as the next input (or `prepareNext` of it) until
 * the predicate says stop, or `maxIterations` (50 by default) is reached. Its
 * output is the last iteration's. `ctx.complete(value)` inside it ends it at
 * once with `value`. Time and memory per iteration do not grow with the
 * iterations done.
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
        const { execution, context } = scope
        const limit = maxIterations ?? defaultMaxIterations
        const frame = new Frame(scope.frame)
        const inner = { ...scope, frame }
        const header = { stepId: id, kind: "loop" as const, contextId: execution.id }
        const runId = `${execution.id}/${id}`
        const ended = (reason: "until" | "maxIterations", iterations: number) =>
          Effect.andThen(
            Effect.sync(() => context.span.attribute("agentloop.loop.ended", reason)),
            emit(scope, step, { _tag: "LoopEnded", ...header, reason, iterations })
          )

        // Every attempt (a retry too) runs with keys of its own: a retried iteration's steps run again, never replayed.
        const iterate = (given: unknown, attempt: number) => runSequence(steps, given, within(inner, attempt))
        const nextInput = (output: LoopOutput<S>, verdict: Verdict) =>
          prepareNext === undefined
            ? Effect.succeed<unknown>(output)
            : attempt(id, "prepareNext", () => prepareNext(output, verdict, context))

        const body = Effect.gen(function*() {
          let given: unknown = input
          // Iterations started (retries included), and ended (completed or skipped).
          let started = 0
          let iterations = 0
          let last: Option.Option<LoopOutput<S>> = Option.none()
          // The outputs the predicate's snapshot lists: the last `historyKept`, so a long loop keeps no more.
          const recent: Array<LoopOutput<S>> = []
          while (true) {
            if (started >= limit) {
              if (Option.isNone(last)) return yield* new MaxIterations({ stepId: id, maxIterations: limit })
              yield* ended("maxIterations", iterations)
              return last.value
            }
            if (maxHistorySize !== undefined) execution.itemLog.keepNewest(maxHistorySize)
            const result = yield* Effect.result(iterate(given, started++))
            if (Result.isFailure(result)) {
              const error = result.failure
              const decision = onError === undefined
                ? "abort"
                : yield* attempt(id, "onError", () => onError(error, context))
              if (decision === "retry") continue
              // A skipped iteration ends without an output: the next one runs on the same input.
              if (decision === "skip") {
                iterations++
                continue
              }
              if (decision === "abort") return yield* Effect.fail(error)
              return yield* new InvalidStep({
                stepId: id,
                message: `onError answered ${JSON.stringify(decision)}, not "retry", "skip" or "abort"`
              })
            }
            const output = result.success
            iterations++
            last = Option.some(output)
            recent.push(output)
            if (recent.length > historyKept) recent.shift()
            const snapshot: Snapshot = {
              runId,
              stepCount: iterations,
              tokens: execution.tokens,
              elapsed: execution.elapsed(),
              cost: execution.cost,
              lastOutput: output,
              lastText: textOf(output),
              history: recent.slice(),
              depth: execution.depth,
              lastStepMeta: execution.lastStepMeta
            }
            const verdict = yield* Until.evaluate(until, snapshot)
            yield* emit(scope, step, { _tag: "Verdict", ...header, iteration: iterations, verdict })
            if (verdict.feedback !== undefined) {
              execution.itemLog.append(userMessage(verdict.feedback, `feedback_${iterations}`))
            }
            if (verdict.stop) {
              const message = inbox === undefined
                ? null
                : parkTimeout === undefined || parkTimeout === 0
                ? Channel.tryRecv(inbox)
                : Option.getOrNull(yield* Effect.timeoutOption(Queue.take(inbox.queue), parkTimeout))
              if (message === null) {
                yield* ended("until", iterations)
                return output
              }
              execution.itemLog.append(userMessage(message, `inbox_${iterations}`))
            }
            given = yield* nextInput(output, verdict)
          }
        })
        return yield* runFrame(frame, body)
      })
  }
  return step
}
