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
import { Context, Effect, Layer, Option, Schema, Stream } from "effect"
import type { Duration } from "effect"
import * as AgentCheckpoint from "./AgentCheckpoint.ts"
import type * as Events from "./AgentEvent.ts"
import * as AgentMachine from "./AgentMachine.ts"
import * as AgentRules from "./AgentRules.ts"
import * as AgentTurn from "./AgentTurn.ts"
import { Checkpointer } from "./Checkpointer.ts"
import type { CheckpointError } from "./Checkpointer.ts"
import type { Halt } from "./Halt.ts"
import type * as Item from "./Item.ts"
import { LanguageModel } from "./LanguageModel.ts"
import type { ModelParams, ToolChoice } from "./LanguageModel.ts"
import * as Loop from "./Loop.ts"
import type { Snapshot } from "./Snapshot.ts"
import * as Telemetry from "./Telemetry.ts"
import * as Termination from "./Termination.ts"
import type * as Toolkit from "./Toolkit.ts"
import type * as Turn from "./Turn.ts"
import type * as Until from "./Until.ts"

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

/** The limits of a run, and the termination each one ends it with. */
export interface Limits {
  /** Model turns at most (default 50); one more would end the run with `MaxTurns`. */
  readonly maxTurns?: number | undefined
  /**
   * Cost in USD at most, this turn's included (default none); reaching it ends
   * the run with `MaxBudgetUsd`. A model without a price ends it with
   * `UnpricedModel`: before the first request when `model` is given, else at
   * the first turn the provider answers with an unpriced model.
   */
  readonly maxBudgetUsd?: number | undefined
  /** Wall-clock time at most (default none): reaching it ends the run with `MaxDuration`, even mid-turn or mid-tool. */
  readonly maxDuration?: Duration.Input | undefined
  /** Turns in a row whose tool calls all failed (default 3) before `ConsecutiveMistakes`. */
  readonly maxConsecutiveMistakes?: number | undefined
  /** Turns in a row that repeat the previous turn's calls and results with no text (default 3) before `NoProgress`. */
  readonly maxNoProgress?: number | undefined
  /** Repair turns for a structured output that does not decode (default 2) before `MaxStructuredOutputRetries`. */
  readonly maxStructuredOutputRetries?: number | undefined
  /** Tool calls running at once (default 4). */
  readonly toolConcurrency?: number | undefined
  /** Time limit of each tool call (default `Toolkit.defaultTimeout`, five minutes; a tool's own `timeout` wins). */
  readonly toolTimeout?: Toolkit.Options["timeout"]
}

/** What to run. `O` is the structured output's type (the last turn's text without `output`). */
export interface Options<O = string, R = never, E = never, RU = never> {
  /** The task: a user message, or a whole history to continue. */
  readonly input: string | ReadonlyArray<Item.Item>
  readonly instructions?: string | undefined
  readonly toolkit?: Toolkit.Toolkit<R> | undefined
  /** When to stop; the `StopPolicy` in context when absent (by default: when the model calls no tool). */
  readonly until?: Until.Until<E, RU> | undefined
  /** A structured output: the final answer must decode with this Schema (from its JSON form). */
  readonly output?: Schema.Codec<O, unknown> | undefined
  /** The name of a tool in `toolkit` whose successful call ends the run with `Submitted` and the tool's output. */
  readonly finish?: string | undefined
  /**
   * Runs after each turn and its tools, before the stop predicate: to log,
   * audit or gate a run. Failing with `Halt` ends the run with `Halted`.
   */
  readonly afterTurn?: ((turn: Turn.Turn, snapshot: Snapshot) => Effect.Effect<void, Halt, R>) | undefined
  readonly model?: string | undefined
  readonly params?: ModelParams | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly limits?: Limits | undefined
  /** Names the agent in traces (`gen_ai.agent.name`). */
  readonly name?: string | undefined
  /** Names the run (in the predicates' snapshots and caches); a random id when absent. */
  readonly runId?: string | undefined
  /** Nesting depth, for runs started by other runs (default 0). */
  readonly depth?: number | undefined
}

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
}>()("@agentloop/core/AgentLoop") {}

/** Whether a run's recovery failed for its checkpoint's sake (rather than ending on a recovered budget). */
const isRecoveryFailure = (
  error: CheckpointError | AgentCheckpoint.RecoveryError | Termination.MaxBudgetUsd | Termination.UnpricedModel
): error is CheckpointError | AgentCheckpoint.RecoveryError =>
  error._tag === "CheckpointError" || error._tag === "RestoreFailed" || error._tag === "SchemaError"

/** The stream of one run; `stream` and `run` of the service are built on it. */
export const stream = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Stream.Stream<AgentEvent<O>, Termination.Error, R | RU | LanguageModel> =>
  Stream.unwrap(Effect.gen(function*() {
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
    const checkpointFailed = (error: CheckpointError | AgentCheckpoint.RecoveryError) =>
      Effect.flatMap(machine.accounting(latest), (accounting) =>
        Effect.fail(
          new Termination.CheckpointFailed({
            message: `the run's checkpoint failed: ${error.message}`,
            cause: error,
            accounting
          })
        ))

    const checkpointer = options.runId === undefined ? Option.none() : yield* Effect.serviceOption(Checkpointer)
    const recorder = Option.isNone(checkpointer) ? undefined : yield* AgentCheckpoint.recorder({
      runId: machine.runId,
      machine,
      // Without a structured output, O is the text (its default).
      output: options.output ?? (Schema.String as Schema.Codec<string, unknown> as Schema.Codec<O, unknown>),
      toolkit: options.toolkit
    }).pipe(Effect.provideService(Checkpointer, checkpointer.value))
    const position = recorder === undefined
      ? { _tag: "Between" as const, state: start }
      : yield* recorder.recover(start).pipe(Effect.catchIf(isRecoveryFailure, checkpointFailed))
    if (position._tag === "Finished") {
      yield* Telemetry.annotateTermination(position.result.termination)
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
        account: (completed) =>
          Effect.gen(function*() {
            if (recorder !== undefined) {
              yield* recorder.answered(state, completed)
            }
            const books = yield* machine.account(state, completed)
            latest = accounted = books.state
            return books.accounting
          }),
        onToolResult: recorder === undefined ? undefined : (index, result) => recorder.toolDone(step, index, result)
      }
      const then = (outcome: AgentTurn.Outcome) =>
        Effect.gen(function*() {
          const transition = yield* machine.decide(accounted, outcome)
          if (recorder !== undefined) yield* Effect.uninterruptible(recorder.decided(outcome, transition))
          if (transition._tag === "Continue") {
            return Loop.nextAfter(Stream.fromIterable(transition.events), {
              _tag: "Between" as const,
              state: transition.state
            })
          }
          yield* Telemetry.annotateTermination(transition.result.termination)
          return Loop.stopAfter(Stream.fromIterable(transition.events))
        })
      if (at._tag === "Answered") return AgentTurn.resume(request, at.answered, then)
      const started: Events.TurnStarted = { _tag: "TurnStarted", step }
      return Effect.as(
        machine.beforeTurn(state),
        Loop.decideAfter(Stream.make(started), () => AgentTurn.stream(request, then))
      )
    }

    const run = Loop.loop(position, body).pipe(
      Stream.catchIf(AgentRules.isTurnFailure, (failure) => Stream.fromEffect(machine.turnFailed(failure, latest))),
      Stream.catchTag("CheckpointError", (failure) => Stream.fromEffect(checkpointFailed(failure)))
    )
    const deadline = machine.maxDurationMs
    if (deadline === undefined) return run
    return run.pipe(Stream.interruptWhen(
      Effect.sleep(deadline).pipe(
        Effect.andThen(Effect.suspend(() => machine.deadlinePassed(latest)))
      )
    ))
  })).pipe(
    Stream.tapError((termination: Termination.Error) => Telemetry.annotateTermination(termination)),
    Stream.withSpan(Telemetry.agentSpanName(options.name), { kind: "internal" })
  )

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
