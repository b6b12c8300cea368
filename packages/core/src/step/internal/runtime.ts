/**
 * What every kind of step runs on: a step's types and runner, where it runs
 * (its execution, the toolkit, the event sink), the step wrapper (span,
 * events, step count, context service), and the normalisation of a step
 * function's answer (a value, a Promise or an Effect).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import * as Tracer from "effect/Tracer"
import type { InvalidOptions } from "../../InvalidOptions.ts"
import type { StepMeta } from "../../StepMeta.ts"
import { ExecutionContext } from "../ExecutionContext.ts"
import type * as Step from "../StepAst.ts"
import { StepFailed } from "../StepError.ts"
import type { InvalidStep } from "../StepError.ts"
import * as StepErrors from "../StepError.ts"
import * as StepEvent from "../StepEvent.ts"
import { View } from "./context.ts"
import * as Ledger from "./ledger.ts"
import * as Outputs from "./outputs.ts"
import type * as Recorded from "./recorded.ts"
import { Runner } from "./runner.ts"
import type { Runtime, Scope } from "./runner.ts"
import { validate } from "./validate.ts"
import type { Origin } from "./validate.ts"

export {
  /** What a context's `complete` ends. */
  type Completion,
  /** An execution context's own record. */
  type Execution,
  /** A loop's or an execution's frame. */
  Frame,
  /** Makes an execution. */
  makeExecution,
  /** Runs a body in a frame. */
  runFrame,
  /** A completed user message. */
  userMessage
} from "./execution.ts"

const withMeta = (kind: StepEvent.Kind) => kind === "llm" || kind === "tool"

/** Whether an `llm` step's `emit` lets `event` through; every other step's events always go. */
export const allows = (step: Step.Any, event: StepEvent.StepEvent): boolean => {
  if (step.kind !== "llm" || step.emit === undefined || step.emit === true) return true
  if (step.emit === false) return false
  return step.emit(StepEvent.eventType(event), event)
}

/**
 * Sends a step's event to the sink, when there is one and the step's `emit`
 * allows it; `key` is the place it tells about (by default the runtime's: the
 * key of the step whose runner sends it).
 */
export const emit = (
  runtime: Runtime<unknown, unknown>,
  step: Step.Any,
  event: StepEvent.StepEvent,
  key: string = runtime.path
): Effect.Effect<void> =>
  runtime.sink === undefined || !allows(step, event) ? Effect.void : runtime.sink.emit(event, key)

/**
 * Runs one step: in its span (`step.{kind} {id}`, a child of the enclosing
 * step's), with its context provided as the `ExecutionContext` service, its
 * `Started` and `Completed`/`Failed` events sent, and the context's step count
 * raised when it ends.
 */
export const runStep = <I, O, E, R, S, RT>(
  step: Step.Step<I, O, E, R, S>,
  input: I,
  runtime: Runtime<S, RT>
): Effect.Effect<O, E, Exclude<R | RT, ExecutionContext>> => {
  const execution = runtime.execution
  const header = { stepId: step.id, kind: step.kind, contextId: execution.id }
  const key = keyOf(runtime, step.id)
  const ledger = runtime.ledger
  const recorded = ledger?.completed(execution.id, key)
  if (recorded !== undefined) return replay(step, runtime, key, recorded)
  return Effect.useSpan(
    `step.${step.kind} ${step.id}`,
    {
      attributes: {
        "agentloop.step.id": step.id,
        "agentloop.step.kind": step.kind,
        "agentloop.context.id": execution.id,
        "agentloop.context.depth": execution.depth
      }
    },
    (span) => {
      const saved = ledger?.saved(execution.id, key)
      if (saved !== undefined) Ledger.restore(execution, saved)
      const checkpoint = ledger === undefined ? Effect.void : ledger.save(execution, key)
      const context = new View(execution, runtime.frame, span, step.id, checkpoint)
      let meta: StepMeta | undefined
      const scope: Scope<S, RT> = {
        ...runtime,
        path: key,
        occurrences: new Map(),
        context,
        report: (reported) => {
          meta = reported
          execution.lastStepMeta = reported
        }
      }
      scopes.set(context, scope)
      /** The step's `Completed`, made once: a recorded one is the same object when recorded and streamed. */
      let completion: StepEvent.Completed | undefined
      const completed = (output: O): StepEvent.Completed =>
        completion ??= {
          _tag: "Completed",
          ...header,
          output,
          ...(meta !== undefined && withMeta(step.kind) ? { meta } : {})
        }
      const body = step[Runner](input, scope).pipe(
        Effect.ensuring(Effect.sync(() => {
          execution.stepCount++
        })),
        // A completed step is recorded before anything sees its output; a record that fails ends the
        // program (see `program`) rather than let it go on without being durable. The record says whether its
        // `Completed` is streamed: then it replays from the record.
        Effect.tap((output) => {
          if (ledger === undefined) return Effect.void
          const event = completed(output)
          return Effect.orDie(Effect.flatMap(
            Outputs.encodeOutput(execution.id, step, output),
            (encoded) => ledger.complete(execution, key, encoded, allows(step, event) ? event : undefined)
          ))
        }),
        Effect.exit,
        Effect.flatMap((exit) => {
          // A step that completed its loop or aborted its execution (or ran inside one that did)
          // waits here to be interrupted, so nothing after it runs before the frame's race notices.
          const then = runtime.frame.completed || execution.aborted ? Effect.never : exit
          if (runtime.sink === undefined) return then
          // Sent here, not in a finalizer: a consumer that stops pulling must be able to interrupt a
          // step waiting to send its event.
          const ended: StepEvent.StepEvent | undefined = Exit.isSuccess(exit)
            ? completed(exit.value)
            : Cause.hasInterruptsOnly(exit.cause)
            ? undefined
            : { _tag: "Failed", ...header, error: StepErrors.info(Cause.squash(exit.cause)) }
          return ended === undefined ? then : Effect.andThen(emit(runtime, step, ended, key), then)
        }),
        // The span is the parent of the spans inside the step: `withParentSpan`, less the stack trace
        // it captures, which says nothing about a step and costs more than the rest of the step.
        Effect.provideService(Tracer.ParentSpan, span),
        Effect.provideService(ExecutionContext, context)
      )
      const run = runtime.sink === undefined
        ? body
        : Effect.andThen(emit(runtime, step, { _tag: "Started", ...header }, key), body)
      // Whatever ended the step, the events its entries stand for that did not reach the stream do not replay.
      return ledger === undefined ? run : Effect.ensuring(run, Effect.sync(() => ledger.ended(execution.id, key)))
    }
  )
}

/** The scope each running step's context belongs to: where a step it runs with `runIn` runs. */
const scopes = new WeakMap<ExecutionContext<unknown>, Scope<unknown, unknown>>()

/**
 * Runs `step` on `input` inside the step whose context is `ctx`, as its child:
 * in the same execution (its books, item log, depth and parent), under its
 * span, with a key below its own (so a checkpointed execution records it and
 * a resumed one replays it), its events sent. The step is checked first, as
 * `route` and `paths` answers are. Fails with `InvalidStep` when `ctx` is not
 * the context of a step that is running.
 */
export const runIn = <T extends Step.Some>(
  step: T,
  input: unknown,
  ctx: ExecutionContext<never>
): Effect.Effect<
  Step.Output<T>,
  Step.Error<T> | InvalidStep | InvalidOptions,
  Exclude<Step.Services<T>, ExecutionContext>
> =>
  Effect.suspend(() => {
    const scope = scopes.get(ctx)
    if (scope === undefined) {
      return Effect.fail(
        new StepErrors.InvalidStep({
          stepId: typeof ctx?.stepId === "string" ? ctx.stepId : "",
          message: "executeStep: ctx is not the context of a running step (pass the ctx a step's function was given)"
        })
      )
    }
    // The toolkit's services are the program's: they are in context wherever one of its steps runs.
    return Effect.flatMap(
      answeredStep({ stepId: ctx.stepId, answered: "executeStep" }, step),
      (checked) => runChild(checked, input, scope)
    ) as Effect.Effect<
      Step.Output<T>,
      Step.Error<T> | InvalidStep | InvalidOptions,
      Exclude<Step.Services<T>, ExecutionContext>
    >
  })

/**
 * The key of the next step of id `stepId` to start below the step of
 * `runtime`: that step's key, the id, and how many steps of that id started
 * there before. An execution run again reaches its steps in the same order, so
 * a step's key is the same each time.
 */
const keyOf = (runtime: Runtime<unknown, unknown>, stepId: string): string => {
  const started = runtime.occurrences.get(stepId) ?? 0
  runtime.occurrences.set(stepId, started + 1)
  return `${runtime.path}/${stepId}#${started}`
}

/**
 * A step an earlier execution completed: its context put back, its output
 * read back, and its `Completed` event sent again when the ledger did not
 * replay it (a record written before 0.3.0).
 */
const replay = <I, O, E, R, S, RT>(
  step: Step.Step<I, O, E, R, S>,
  runtime: Runtime<S, RT>,
  key: string,
  recorded: Recorded.CompletedStep
): Effect.Effect<O, E, never> => {
  const execution = runtime.execution
  return Effect.suspend(() => {
    Ledger.restore(execution, recorded.context)
    return Outputs.decodeOutput(execution.id, step, recorded.output).pipe(
      Effect.orDie,
      // The output was `O` when it was recorded; the step's schema (or JSON) read it back.
      Effect.map((output) => output as O),
      Effect.tap((output) =>
        recorded.streamed ? Effect.void : emit(
          runtime,
          step,
          { _tag: "Completed", stepId: step.id, kind: step.kind, contextId: execution.id, output },
          key
        )
      )
    )
  })
}

/** Any step, with its types forgotten. */
type Erased = Step.Step<unknown, unknown, unknown, unknown, unknown>

/**
 * Runs a child of a composite step. A composite's children have many types at
 * once (the steps of a loop, the paths of a fork), and its constructor computes
 * its own types from theirs and checks that each child takes what it is given;
 * the composite then runs each child with the types the child's own type
 * records. This and {@link runSequence} are the only places a step's types
 * are set aside and taken back.
 */
export const runChild = <T extends Step.Some, RT>(
  step: T,
  input: unknown,
  runtime: Runtime<unknown, RT>
): Effect.Effect<Step.Output<T>, Step.Error<T>, Exclude<Step.Services<T> | RT, ExecutionContext>> =>
  runStep(step as unknown as Erased, input, runtime) as Effect.Effect<
    Step.Output<T>,
    Step.Error<T>,
    Exclude<Step.Services<T> | RT, ExecutionContext>
  >

/** The last of a non-empty tuple of steps. */
export type Last<S extends ReadonlyArray<Step.Some>> = S extends readonly [...ReadonlyArray<Step.Some>, infer L] ? L :
  S[number]

/**
 * Runs `steps` in sequence, each output the next input (see {@link runChild}:
 * the composite's constructor checked that each step takes what the one
 * before gives); the output is the last step's.
 */
export const runSequence = <S extends readonly [Step.Some, ...ReadonlyArray<Step.Some>], RT>(
  steps: S,
  input: unknown,
  runtime: Runtime<unknown, RT>
): Effect.Effect<
  Step.Output<Last<S>>,
  Step.Error<S[number]>,
  Exclude<Step.Services<S[number]> | RT, ExecutionContext>
> =>
  Effect.gen(function*() {
    let value = input
    for (const step of steps) value = yield* runChild(step, value, runtime)
    return value
  }) as Effect.Effect<
    Step.Output<Last<S>>,
    Step.Error<S[number]>,
    Exclude<Step.Services<S[number]> | RT, ExecutionContext>
  >

/**
 * Runs a step function, which may answer with a value, a Promise or an
 * Effect. A throw or a rejection fails with `StepFailed`; an Effect keeps its
 * own error (and its defects stay defects).
 */
export function attempt<A, E, R>(
  stepId: string,
  what: string,
  evaluate: () => A | PromiseLike<A> | Effect.Effect<A, E, R>
): Effect.Effect<A, E | StepFailed, R>
export function attempt(
  stepId: string,
  what: string,
  evaluate: () => unknown
): Effect.Effect<unknown, unknown, unknown> {
  return Effect.suspend(() => {
    let out: unknown
    try {
      out = evaluate()
    } catch (cause) {
      return Effect.fail(failed(stepId, `${what} threw`, cause))
    }
    if (Effect.isEffect(out)) return out
    if (Predicate.isPromiseLike(out)) {
      const promise = out
      return Effect.tryPromise({
        try: () => Promise.resolve(promise),
        catch: (cause) => failed(stepId, `${what} rejected`, cause)
      })
    }
    return Effect.succeed(out)
  })
}

const failed = (stepId: string, what: string, cause: unknown): StepFailed =>
  new StepFailed({ stepId, message: `step ${stepId}: ${what}: ${StepErrors.info(cause).message}`, cause })

/**
 * The step a step's function answered with (`route`, `paths`), checked
 * before it runs: `InvalidStep` when it is not a step, `InvalidOptions` when
 * it, or a step below it, cannot work.
 */
export const answeredStep = <T>(origin: Origin, value: T): Effect.Effect<T, InvalidStep | InvalidOptions> => {
  const refused = validate(value, origin)
  return refused === undefined ? Effect.succeed(value) : Effect.fail(refused)
}
