/**
 * The agent service: a model, tools, a stop predicate and limits, run as one
 * pull-based stream that ends with exactly one typed termination.
 *
 * A run is a small state machine (`AgentMachine`) driven on `Loop.loop`: each
 * iteration is one `AgentTurn` (the request with reactive compaction, the
 * accounted turn, the tool calls), and the machine's `decide` (the
 * `AgentRules`, the `afterTurn` hook, the stop predicate, the structured
 * output) says whether to go on. Nothing runs ahead of the consumer: a
 * consumer that stops pulling stops the run, and its HTTP request.
 *
 * @since 0.1.0
 */
import * as Channel from "effect/Channel"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Checkpointer } from "../Checkpointer.ts"
import type { CheckpointError, OpenError } from "../CheckpointStore.ts"
import * as SpanStream from "../internal/spanStream.ts"
import { LanguageModel } from "../LanguageModel.ts"
import * as Loop from "../Loop.ts"
import * as Telemetry from "../Telemetry.ts"
import * as Termination from "../Termination.ts"
import * as AgentCheckpoint from "./AgentCheckpoint.ts"
import type * as Events from "./AgentEvent.ts"
import * as AgentMachine from "./AgentMachine.ts"
import type { Options } from "./AgentOptions.ts"
import * as AgentRules from "./AgentRules.ts"
import * as AgentTurn from "./AgentTurn.ts"

export {
  /** What a run streams, as a `Schema` union a client decodes by `_tag` (see the `AgentEvent` module). */
  AgentEvent,
  /** How a successful run ended: `Stopped` with its output, or `Submitted` through its finish tool. */
  RunResult,
  /** A run stopped by its predicate. */
  Stopped,
  /** A run ended by its finish tool. */
  Submitted
} from "./AgentEvent.ts"

export type {
  /** The limits of a run, and the termination each one ends it with. */
  Limits,
  /** What to run. */
  Options
} from "./AgentOptions.ts"

type RunResult<O> = Events.RunResult<O>
type AgentEvent<O> = Events.AgentEvent<O>

/** The agent service; `layer` builds it on whatever `LanguageModel` is provided. */
export class AgentLoop extends Context.Service<AgentLoop, {
  /** Streams a run's events; the stream fails with the run's termination when it is not a success. */
  stream<O = string, R = never, E = never, RU = never>(
    options: Options<O, R, E, RU>
  ): Stream.Stream<AgentEvent<O>, Termination.Error, R | RU>
  /** Runs to the end and returns the result; fails with the run's termination when it is not a success. */
  run<O = string, R = never, E = never, RU = never>(
    options: Options<O, R, E, RU>
  ): Effect.Effect<RunResult<O>, Termination.Error, R | RU>
}>()("@agentloop/core/agent/AgentLoop") {}

/** Whether a run's recovery failed for its checkpoint's sake (rather than ending on a recovered budget). */
const isRecoveryFailure = (
  error: AgentCheckpoint.RecoveryError | Termination.MaxBudgetUsd | Termination.UnpricedModel
): error is AgentCheckpoint.RecoveryError => error._tag === "RestoreFailed" || error._tag === "SchemaError"

/** Records the termination an effect fails with on the current span (the run's). */
const annotated = <A, R>(effect: Effect.Effect<A, Termination.Error, R>): Effect.Effect<A, Termination.Error, R> =>
  Effect.tapError(effect, Termination.annotateCurrentSpan)

/**
 * The stream of one run; `stream` and `run` of the service are built on it.
 * The run's span and its stream are one layer (see `internal/spanStream`): the
 * run is built when its stream starts, in the stream's scope (a checkpoint
 * log stays open as long as the stream).
 */
export const stream = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Stream.Stream<AgentEvent<O>, Termination.Error, R | RU | LanguageModel> =>
  SpanStream.make(
    Telemetry.agentSpanName(options.name),
    { kind: "internal" },
    (_, scope) =>
      Effect.flatMap(Scope.provide(build(options), scope), (run) => Channel.toPullScoped(run.channel, scope))
  )

/** Builds a run: its machine, its checkpoint's recovery, and the loop of its turns. */
const build = <O, R, E, RU>(options: Options<O, R, E, RU>) =>
  annotated(Effect.gen(function*() {
    const model = yield* LanguageModel
    const machine = yield* AgentMachine.make(options)
    yield* Effect.annotateCurrentSpan({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": Telemetry.providerName(model.provider),
      "agentloop.run.id": machine.runId,
      ...(options.model === undefined ? {} : { "gen_ai.request.model": options.model }),
      ...(options.name === undefined ? {} : { "gen_ai.agent.name": options.name })
    })
    const start = yield* machine.start
    /** The run as last accounted: what a deadline or a failed turn reports. */
    let latest = start
    const checkpointFailed = (error: OpenError | AgentCheckpoint.RecoveryError) =>
      Effect.flatMap(machine.accounting(latest), (accounting) =>
        Effect.fail(
          new Termination.CheckpointFailed({
            message: `the run's checkpoint failed: ${error.message}`,
            cause: error,
            accounting
          })
        ))

    const checkpointer = options.runId === undefined ? Option.none() : yield* Effect.serviceOption(Checkpointer)
    // The log stays open (its lease held) for as long as the run's stream.
    const recorder = Option.isNone(checkpointer) ? undefined : yield* AgentCheckpoint.recorder({
      runId: machine.runId,
      fingerprint: yield* AgentCheckpoint.fingerprint(options),
      machine,
      // Without a structured output, O is the text (its default).
      output: options.output ?? (Schema.String as Schema.Codec<string, unknown> as Schema.Codec<O, unknown>),
      toolkit: options.toolkit
    }).pipe(Effect.provideService(Checkpointer, checkpointer.value), Effect.catch(checkpointFailed))
    const position = recorder === undefined
      ? { _tag: "Between" as const, state: start }
      : yield* recorder.recover(start).pipe(Effect.catchIf(isRecoveryFailure, checkpointFailed))
    if (position._tag === "Finished") {
      yield* Termination.annotateCurrentSpan(position.result.termination)
      return Stream.succeed<AgentEvent<O>>({ _tag: "Finished", result: position.result })
    }

    const body = (at: Exclude<AgentCheckpoint.Position<O>, { readonly _tag: "Finished" }>) => {
      const state = at.state
      latest = state
      let accounted = state
      const step = at._tag === "Answered" ? state.steps : state.steps + 1
      const request: AgentTurn.Request<Termination.Error | CheckpointError, R> = {
        step,
        history: state.history,
        options: machine.turnOptions,
        toolkit: options.toolkit,
        tools: machine.tools,
        account: (completed) => {
          const booked = Effect.map(machine.books(state, completed), (books) => {
            latest = accounted = books.state
            return books.accounting
          })
          return recorder === undefined ? booked : Effect.andThen(recorder.answered(state, completed), booked)
        },
        // Every paid turn is reported: a budget it reached ends the run after its `TurnCompleted`.
        afterAccount: (completed, accounting) => machine.budget(accounted, completed, accounting),
        onToolResult: recorder === undefined ? undefined : (index, result) => recorder.toolDone(step, index, result)
      }
      // Combinators rather than a generator: this runs once per turn.
      const next = (transition: AgentMachine.Transition<O>) =>
        transition._tag === "Continue"
          ? Effect.succeed(Loop.nextAfter(Stream.fromIterable(transition.events), {
            _tag: "Between" as const,
            state: transition.state
          }))
          : Effect.as(
            Termination.annotateCurrentSpan(transition.result.termination),
            Loop.stopAfter(Stream.fromIterable(transition.events))
          )
      const then = (outcome: AgentTurn.Outcome) =>
        Effect.flatMap(machine.decide(accounted, outcome), (transition) =>
          recorder === undefined
            ? next(transition)
            : Effect.andThen(Effect.uninterruptible(recorder.decided(outcome, transition)), next(transition)))
      if (at._tag === "Answered") return AgentTurn.resume(request, at.answered, then)
      const started: Events.TurnStarted = { _tag: "TurnStarted", step }
      return Effect.as(
        machine.beforeTurn(state),
        Loop.decideAfter(Stream.make(started), () => AgentTurn.stream(request, then))
      )
    }

    // Every failure of the run passes this one catch, which turns turn and checkpoint failures into
    // terminations and records the termination on the run's span (no stream layer of its own for either).
    const run = Loop.loop(position, body).pipe(
      Stream.catch((failure) =>
        Stream.fromEffect(annotated(
          failure._tag === "CheckpointError"
            ? checkpointFailed(failure)
            : AgentRules.isTurnFailure(failure)
            ? machine.turnFailed(failure, latest)
            : Effect.fail(failure)
        ))
      )
    )
    const deadline = machine.maxDurationMs
    if (deadline === undefined) return run
    return run.pipe(Stream.interruptWhen(
      Effect.sleep(deadline).pipe(
        Effect.andThen(Effect.suspend(() => annotated(machine.deadlinePassed(latest))))
      )
    ))
  }))

/** Runs to the end; the result is the `Finished` event's. */
export const run = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Effect.Effect<RunResult<O>, Termination.Error, R | RU | LanguageModel> =>
  stream(options).pipe(
    Stream.runFold(
      (): RunResult<O> | undefined => undefined,
      (result, event) => event._tag === "Finished" ? event.result : result
    ),
    Effect.flatMap((result) =>
      result === undefined
        ? Effect.die(new Error("AgentLoop: the run ended without a Finished event"))
        : Effect.succeed(result)
    )
  )

/** Builds the service on the `LanguageModel` in context. */
export const make: Effect.Effect<AgentLoop["Service"], never, LanguageModel> = Effect.gen(function*() {
  const model = yield* LanguageModel
  return AgentLoop.of({
    stream: (options) => Stream.provideService(stream(options), LanguageModel, model),
    run: (options) => Effect.provideService(run(options), LanguageModel, model)
  })
})

/** The agent service on whatever `LanguageModel` layer is provided: Responses, Gemini or the mock. */
export const layer: Layer.Layer<AgentLoop, never, LanguageModel> = Layer.effect(AgentLoop)(make)
