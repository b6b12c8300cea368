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
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Pull from "effect/Pull"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import { Checkpointer } from "../Checkpointer.ts"
import { CheckpointError } from "../CheckpointStore.ts"
import type { OpenError } from "../CheckpointStore.ts"
import type { CompactionError } from "../Compactor.ts"
import * as ChunkStream from "../internal/chunkStream.ts"
import * as SpanStream from "../internal/spanStream.ts"
import { LanguageModel } from "../LanguageModel.ts"
import * as Loop from "../Loop.ts"
import * as Telemetry from "../Telemetry.ts"
import * as Termination from "../Termination.ts"
import * as AgentCheckpoint from "./AgentCheckpoint.ts"
import type * as Events from "./AgentEvent.ts"
import * as AgentHistory from "./AgentHistory.ts"
import * as AgentMachine from "./AgentMachine.ts"
import type { Options, ThreadOptions } from "./AgentOptions.ts"
import * as AgentRules from "./AgentRules.ts"
import * as AgentTurn from "./AgentTurn.ts"
import * as Thread from "./Thread.ts"
import * as ThreadId from "./ThreadId.ts"

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

/**
 * The agent service; `layer` builds it on whatever `LanguageModel` is provided.
 *
 * @since 0.1.0
 * @category services
 */
export class AgentLoop extends Context.Service<AgentLoop, {
  /**
   * Streams a run's events; the stream fails with the run's termination when it is not a success. A run with a
   * `runId` and a `Checkpointer` that recorded it before first replays the events its log recorded (see
   * `AgentHistory.replay`), then goes on: a finished run replays to its `Finished`, asking nothing, and one a
   * person cancelled fails after its replay with `Halted` by `"person"`.
   */
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
): error is AgentCheckpoint.RecoveryError => error._tag !== "MaxBudgetUsd" && error._tag !== "UnpricedModel"

/** Records the termination an effect fails with on the current span (the run's). */
const annotated = <A, R>(effect: Effect.Effect<A, Termination.Error, R>): Effect.Effect<A, Termination.Error, R> =>
  Effect.tapError(effect, Termination.annotateCurrentSpan)

/**
 * The stream of one run; `stream` and `run` of the service are built on it.
 * The run's span and its stream are one layer (see `internal/spanStream`): the
 * run is built when its stream starts, in the stream's scope (a checkpoint
 * log stays open as long as the stream).
 *
 * @since 0.1.0
 * @category running
 */
export const stream = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Stream.Stream<AgentEvent<O>, Termination.Error, R | RU | LanguageModel> => streamIn(options)

/**
 * {@link stream}, with the services of `provided` (the service's model)
 * provided along with the run's span, in the same frame of each pull.
 */
const streamIn = <O, R, E, RU, P = never>(
  options: Options<O, R, E, RU>,
  provided?: Context.Context<P>
): Stream.Stream<AgentEvent<O>, Termination.Error, Exclude<R | RU | LanguageModel, Tracer.ParentSpan | P>> =>
  SpanStream.make(
    Telemetry.agentSpanName(options.name),
    { kind: "internal" },
    (_, scope) =>
      Effect.flatMap(Scope.provide(build(options), scope), (run) =>
        Effect.map(
          Channel.toPullScoped(run.events.channel, scope),
          // Every failure of the run passes this one catch, in the pull rather than a stream layer of its own.
          (pull) =>
            Effect.catch(
              pull,
              (failure): Pull.Pull<never, Termination.Error> =>
                Cause.isDone(failure) ? Effect.fail(failure) : run.failed(failure)
            )
        )),
    { provided }
  )

/** Builds a run: its machine, its checkpoint's recovery, and the loop of its turns. */
const build = <O, R, E, RU>(options: Options<O, R, E, RU>) =>
  annotated(Effect.gen(function*() {
    const model = yield* LanguageModel
    const machine = yield* AgentMachine.make(options)
    const thread = options.thread === undefined ? undefined : Thread.options(options.thread)
    yield* Effect.annotateCurrentSpan({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": Telemetry.providerName(model.provider),
      "agentloop.run.id": machine.runId,
      ...(thread === undefined ? {} : { "agentloop.thread.id": thread.id }),
      ...(options.model === undefined ? {} : { "gen_ai.request.model": options.model }),
      ...(options.name === undefined ? {} : { "gen_ai.agent.name": options.name })
    })
    const initial = yield* machine.start
    /** The run as last accounted: what a deadline or a failed turn reports. */
    let latest = initial
    /** The events of the run's finish, once it is decided (and recorded): the run is finished then. */
    let finishing: ReadonlyArray<AgentEvent<O>> | undefined
    const checkpointFailed = (error: OpenError | AgentCheckpoint.RecoveryError | Thread.ThreadSuperseded) =>
      Effect.flatMap(machine.accounting(latest), (accounting) =>
        Effect.fail(
          new Termination.CheckpointFailed({
            message: `the run's checkpoint failed: ${error.message}`,
            cause: error,
            accounting
          })
        ))

    const compactionFailed = (thread: ThreadOptions, error: CompactionError) =>
      Effect.flatMap(machine.accounting(initial), (accounting) =>
        Effect.fail(
          new Termination.CompactionFailed({
            message: `thread "${thread.id}" could not be compacted: ${error.message}`,
            accounting
          })
        ))
    /**
     * The run's failures as its termination: a turn's failure or a checkpoint's is turned into one, and every
     * termination is recorded on the run's span.
     */
    const failed = (failure: Termination.Error | CheckpointError | AgentTurn.Failure) =>
      annotated(
        failure._tag === "CheckpointError"
          ? checkpointFailed(failure)
          : AgentRules.isTurnFailure(failure)
          ? machine.turnFailed(failure, latest)
          : Effect.fail(failure)
      )
    // The thread stays open (its lease held) for as long as the run's stream: one run at a time on a thread.
    const openThread = (thread: ThreadOptions, resumed?: Thread.RunStart) =>
      Effect.gen(function*() {
        const checkpointer = yield* Effect.serviceOption(Checkpointer)
        if (Option.isNone(checkpointer)) {
          return yield* checkpointFailed(
            new CheckpointError({
              operation: "open",
              id: ThreadId.logId(thread.id),
              message: `thread "${thread.id}" needs a Checkpointer in context`
            })
          )
        }
        return yield* Thread.open(thread, machine.runId, resumed).pipe(
          Effect.provideService(Checkpointer, checkpointer.value),
          Effect.catch((error): Effect.Effect<never, Termination.Error> =>
            error._tag === "CompactionError" ? compactionFailed(thread, error) : checkpointFailed(error)
          )
        )
      })
    const checkpointer = options.runId === undefined ? Option.none() : yield* Effect.serviceOption(Checkpointer)
    // A run that started on its thread before is known by the history it started from: its log is read first, and
    // one that does not go on replays without the thread's lease (another run may hold it).
    const resumed = thread === undefined || Option.isNone(checkpointer)
      ? undefined
      : yield* Thread.started(thread.id, machine.runId).pipe(
        Effect.provideService(Checkpointer, checkpointer.value),
        Effect.catch(checkpointFailed)
      )
    const fresh = thread === undefined || resumed !== undefined ? undefined : yield* openThread(thread)
    const history = resumed?.history ?? fresh?.history
    const start = history === undefined ? initial : { ...initial, history: [...history, ...initial.history] }
    latest = start

    // The log stays open (its lease held) for as long as the run's stream.
    const recorder = Option.isNone(checkpointer) ? undefined : yield* AgentCheckpoint.recorder({
      runId: machine.runId,
      fingerprint: {
        ...(yield* AgentCheckpoint.fingerprint(options)),
        ...(history === undefined ? {} : yield* Thread.runFingerprint(history))
      },
      machine,
      output: AgentCheckpoint.output(options),
      toolkit: options.toolkit,
      compactAfter: options.compactAfter
    }).pipe(Effect.provideService(Checkpointer, checkpointer.value), Effect.catch(checkpointFailed))
    const recovered = recorder === undefined
      ? undefined
      // A recorded run first replays what it recorded, then goes on.
      : yield* recorder.recover(start, (folded) => AgentHistory.replay(folded, machine.accounting)).pipe(
        Effect.catchIf(isRecoveryFailure, checkpointFailed)
      )
    const position = recovered?.position ?? { _tag: "Between" as const, state: start }
    const replay = recovered?.each.flat() ?? []
    const replayed = Stream.fromIterable(replay)
    if (position._tag === "Finished") {
      // Its items reach its thread unless they did before it was recorded finished.
      if (thread !== undefined && resumed?.added !== true) {
        const session = fresh ?? (yield* openThread(thread, resumed))
        yield* session.finished(position.result.history).pipe(Effect.catch(checkpointFailed))
      }
      yield* Termination.annotateCurrentSpan(position.result.termination)
      return { events: replayed, failed }
    }
    if (position._tag === "Cancelled") {
      // A person cancelled the run: it does not go on, whoever executes it.
      const halted = AgentCheckpoint.cancellation(position.reason, yield* machine.accounting(position.state))
      return { events: Stream.concat(replayed, Stream.fail(halted)), failed }
    }

    const session = thread === undefined ? undefined : fresh ?? (yield* openThread(thread, resumed))

    const body = (at: Exclude<AgentCheckpoint.Position<O>, { readonly _tag: "Finished" | "Cancelled" }>) => {
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
        onToolResult: recorder === undefined ? undefined : (index, result) => recorder.toolDone(step, index, result),
        onToolStart: recorder === undefined ? undefined : (index) => recorder.toolStarted(step, index),
        idempotencyKey: recorder === undefined ? undefined : (index) => recorder.idempotencyKey(step, index)
      }
      // Combinators rather than a generator: this runs once per turn.
      const next = (transition: AgentMachine.Transition<O>) =>
        transition._tag === "Continue"
          ? Effect.succeed(Loop.nextAfter(ChunkStream.make(transition.events), {
            _tag: "Between" as const,
            state: transition.state
          }))
          : Effect.as(
            Termination.annotateCurrentSpan(transition.result.termination),
            Loop.stopAfter(ChunkStream.make(transition.events))
          )
      // A finish counts once it is recorded (in the same uninterruptible step): a cancel after it lets its events out.
      const finishes = (transition: AgentMachine.Transition<O>) => {
        if (transition._tag === "Finish") finishing = transition.events
      }
      // Without a recorder the decision counts as soon as it is made: in the step that made it.
      const then = (outcome: AgentTurn.Outcome) =>
        Effect.flatMap(machine.decide(accounted, outcome), (transition) => {
          if (recorder === undefined) {
            finishes(transition)
            return next(transition)
          }
          const recorded = Effect.andThen(
            recorder.decided(outcome, transition),
            Effect.sync(() => finishes(transition))
          )
          return Effect.andThen(Effect.uninterruptible(recorded), next(transition))
        })
      if (at._tag === "Answered") return AgentTurn.resume(request, at.answered, then)
      const started: Events.TurnStarted = { _tag: "TurnStarted", step }
      const turn = Loop.decideAfter(ChunkStream.make([started]), () => AgentTurn.stream(request, then))
      // A turn the limit allows has nothing to wait for: its stream is opened as it is (see `Loop`).
      return Effect.mapEager(machine.beforeTurn(state), () => turn)
    }

    const cancel = options.cancel
    // A run with nothing to replay (any run without a `Checkpointer`) is its loop alone: one stream layer less.
    const loop = replay.length > 0 ? Stream.concat(replayed, Loop.loop(position, body)) : Loop.loop(position, body)
    const cancelled = (reason: string) =>
      Effect.gen(function*() {
        if (recorder !== undefined) yield* Effect.uninterruptible(recorder.cancelled(reason))
        return yield* Effect.fail(AgentCheckpoint.cancellation(reason, yield* machine.accounting(latest)))
      })
    // A deadline passed while the run's result is being written leaves the run finished, as a cancellation does;
    // inside the cancellation, which records itself: the deadline cannot end a run whose log says it was cancelled.
    const deadline = machine.maxDurationMs
    const timed = deadline === undefined
      ? loop
      : stoppedOn(loop, Effect.sleep(deadline), () => finishing, () => machine.deadlinePassed(latest))
    const events = cancel === undefined ? timed : stoppedOn(timed, cancel, () => finishing, cancelled)
    const run = session === undefined ? events : events.pipe(
      // A finished run's items reach its thread before its `Finished` event reaches the consumer; the events go on
      // in the chunks they came in (a tap per event would make every delta a chunk of its own).
      Stream.mapArrayEffect((chunk) => {
        const finished = chunk.find((event) => event._tag === "Finished")
        return finished === undefined
          ? Effect.succeed(chunk)
          : Effect.as(session.finished(finished.result.history), chunk)
      })
    )
    return { events: run, failed }
  }))

/**
 * `run`, stopped once `stop` succeeds (a person's cancellation, the run's
 * deadline): the run is interrupted (its model request aborted, its tools told
 * to stop), then `ended` ends it with what `stop` gave, unless the run had
 * finished: once its finish is decided (`finishing`, its events), the events
 * of it not sent yet are sent instead.
 */
const stoppedOn = <O, E, R, A, E2>(
  run: Stream.Stream<AgentEvent<O>, E, R>,
  stop: Effect.Effect<A>,
  finishing: () => ReadonlyArray<AgentEvent<O>> | undefined,
  ended: (reason: A) => Effect.Effect<never, E2>
): Stream.Stream<AgentEvent<O>, E | E2, R> => {
  let reason: { readonly given: A } | undefined
  /** The last event sent: an event interrupted on its way out is not sent. */
  let sent: AgentEvent<O> | undefined
  return run.pipe(
    Stream.interruptWhen(Effect.map(stop, (given) => (reason = { given }))),
    Stream.mapArray((chunk) => {
      sent = chunk[chunk.length - 1]
      return chunk
    }),
    // The run's stream is closed before this runs: no turn or decision of it is recorded after the cancellation.
    Stream.concat(Stream.suspend(() => {
      if (reason === undefined) return Stream.empty
      const finish = finishing()
      return finish === undefined
        ? Stream.fromEffect(ended(reason.given))
        : Stream.fromIterable(finish.slice(sent === undefined ? 0 : finish.indexOf(sent) + 1))
    }))
  )
}

/**
 * Runs to the end; the result is the `Finished` event's.
 *
 * @example
 * ```ts
 * import { AgentLoop } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const Capital = Schema.Struct({ country: Schema.String, capital: Schema.String })
 *
 * // A structured output: the run ends with a decoded value; an answer that does not decode is sent back to repair.
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const result = yield* agent.run({ input: "The capital of France, as JSON", output: Capital })
 *   if (result._tag === "Stopped") console.log(result.output.capital) // Paris
 * })
 *
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.textTurn("Paris"),
 *   MockLanguageModel.textTurn("{\"country\": \"France\", \"capital\": \"Paris\"}")
 * ])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category running
 */
export const run = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Effect.Effect<RunResult<O>, Termination.Error, R | RU | LanguageModel> => runIn(options)

/** {@link run} on {@link streamIn}. */
const runIn = <O, R, E, RU, P = never>(
  options: Options<O, R, E, RU>,
  provided?: Context.Context<P>
): Effect.Effect<RunResult<O>, Termination.Error, Exclude<R | RU | LanguageModel, Tracer.ParentSpan | P>> =>
  streamIn(options, provided).pipe(
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

/**
 * Builds the service on the `LanguageModel` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<AgentLoop["Service"], never, LanguageModel> = Effect.gen(function*() {
  const model = Context.make(LanguageModel, yield* LanguageModel)
  return AgentLoop.of({
    stream: (options) => streamIn(options, model),
    run: (options) => runIn(options, model)
  })
})

/**
 * The agent service on whatever `LanguageModel` layer is provided: Responses, Gemini or the mock.
 *
 * @example
 * ```ts
 * import { AgentLoop, Tool, Toolkit, Until } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema, Stream } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   yield* agent.stream({ input: "What is 2 + 3?", toolkit: Toolkit.make(add), until: Until.noToolCalls() }).pipe(
 *     Stream.runForEach((event) =>
 *       Effect.sync(() => {
 *         if (event._tag === "ToolResult") console.log(`${event.call.name} -> ${event.output.output}`) // add -> 5
 *         if (event._tag === "Finished") console.log(event.result.termination._tag) // Stop
 *       })
 *     )
 *   )
 * })
 *
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }]),
 *   MockLanguageModel.textTurn("2 + 3 = 5")
 * ])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<AgentLoop, never, LanguageModel> = Layer.effect(AgentLoop)(make)
