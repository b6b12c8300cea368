/**
 * One agent turn as a unit: a model request (the history compacted once when it
 * does not fit the context window), the accounted turn, and the tool calls the
 * model made, streamed as events.
 *
 * `AgentLoop` runs one per iteration, and a step program's `llm` step runs one.
 * The caller keeps the books: `account` is handed each completed turn and its
 * cost, and answers with the accounting that the turn's `TurnCompleted` event
 * carries; `afterAccount` may then end the turn (a budget the paid turn
 * reached) before any tool runs. What follows the tools
 * is the caller's `then`, as in `TurnStream.streamUntilComplete`.
 *
 * The turn runs in a `chat {model}` span (see `Telemetry`), on whatever
 * `LanguageModel` is in context, the mock included.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Pull from "effect/Pull"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Accounting } from "../Accounting.ts"
import * as AiError from "../AiError.ts"
import * as Compactor from "../Compactor.ts"
import type { Cost } from "../Cost.ts"
import * as ChunkStream from "../internal/chunkStream.ts"
import * as SpanStream from "../internal/spanStream.ts"
import type * as Item from "../Item.ts"
import { LanguageModel } from "../LanguageModel.ts"
import type { TurnOptions } from "../LanguageModel.ts"
import * as Loop from "../Loop.ts"
import * as Pricing from "../Pricing.ts"
import * as Telemetry from "../Telemetry.ts"
import * as Toolkit from "../Toolkit.ts"
import * as ToolRecord from "../ToolRecord.ts"
import * as Turn from "../Turn.ts"
import type { TurnDelta } from "../TurnDelta.ts"
import * as TurnStream from "../TurnStream.ts"
import type * as AgentEvent from "./AgentEvent.ts"

/**
 * What one turn asks, and of whom. `E` and `R` are those of `account` and of the toolkit's tools.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request<E, R> {
  /** The turn's number in its run, carried by every event (1 for the first). */
  readonly step: number
  readonly history: ReadonlyArray<Item.Item>
  readonly options: TurnOptions
  /** The tools that run the model's calls; a call without a toolkit is answered as an unknown tool. */
  readonly toolkit?: Toolkit.Toolkit<R> | undefined
  /** Concurrency and time limit of the tool calls. */
  readonly tools?: Omit<Toolkit.Options, "onProgress"> | undefined
  /** Accounts for the completed turn; its failure ends the turn before the tools run, and before its `TurnCompleted`. */
  readonly account: (completed: Completed) => Effect.Effect<Accounting, E, R>
  /**
   * Checked once the turn's `TurnCompleted` has gone out, before the tools
   * run: a limit the paid turn reached (a budget) ends the turn there, the
   * turn reported.
   */
  readonly afterAccount?: ((completed: Completed, accounting: Accounting) => Effect.Effect<void, E, R>) | undefined
  /** Called with each call's result (and its index in the turn) as soon as it ends, to record it; its failure ends the turn. */
  readonly onToolResult?: ((index: number, result: Toolkit.Result) => Effect.Effect<void, E, R>) | undefined
  /**
   * Called when a call of a tool that is not `idempotent` is about to run
   * (after its approval, if it needed one), with its index in the turn, to
   * record that it started; its failure ends the turn, and the call does not
   * run. Calls of idempotent tools are not announced.
   */
  readonly onToolStart?: ((index: number, call: Item.FunctionCall) => Effect.Effect<void, E, R>) | undefined
  /** The `Tool.IdempotencyKey` of the call at `index` in the turn (none: tools see `undefined`). */
  readonly idempotencyKey?: ((index: number) => Effect.Effect<string>) | undefined
}

/**
 * A turn the model completed, and its cost (`null` when its model has no price).
 *
 * @since 0.1.0
 * @category models
 */
export interface Completed {
  readonly turn: Turn.Turn
  readonly cost: Cost
  /** The history the model answered (compacted, if it had to be), then the turn's items. */
  readonly history: ReadonlyArray<Item.Item>
}

/**
 * A completed turn whose tool calls have run; `history` ends with their outputs, in call order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Outcome extends Completed {
  readonly results: ReadonlyArray<Toolkit.Result>
}

/**
 * Why a turn did not complete: the model request failed (a `ContextLengthExceeded`
 * here means the compacted history did not fit either), or compaction failed
 * (a `CompactionError` whose `overflow` is the request's `ContextLengthExceeded`).
 *
 * @since 0.1.0
 * @category models
 */
export type Failure = AiError.AiError | Compactor.CompactionError

/**
 * What the model part of a turn needs: the turn's number, the history to send, and the request options.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelRequest = Pick<Request<never, never>, "step" | "history" | "options">

/**
 * Streams the model part of one turn: the model's deltas, then the events of
 * `then(completed)` with the completed turn and its cost; no accounting and no
 * tools. When the request fails with `ContextLengthExceeded`, the `Compactor`
 * in context shortens the history once and the request is sent again, after an
 * `AttemptDiscarded` and a `Compacted` event (the deltas already streamed
 * belong to the lost attempt). {@link stream} is built on it; a durable engine
 * runs it alone, as one recorded step.
 *
 * @since 0.1.0
 * @category running
 */
export const complete = <A, S, E2, R2>(
  request: ModelRequest,
  then: (
    completed: Completed
  ) =>
    | Stream.Stream<Loop.Event<A, S>, E2, R2>
    | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E2, R2 | Scope.Scope>
): Stream.Stream<
  Loop.Event<AgentEvent.Delta | AgentEvent.AttemptDiscarded | AgentEvent.Compacted | A, S>,
  Failure | E2,
  R2 | LanguageModel
> => {
  const { step } = request
  const completion = TurnStream.completion()
  let asked = request.history
  // The model request is one stream layer: its services are read, and a `ContextLengthExceeded` is caught, in the
  // layer's pull (where `Stream.unwrap` and `Stream.catchTag` would make a layer each).
  const deltas = Stream.fromChannel(Channel.fromTransform((_, scope) => {
    let current: Pull.Pull<
      Arr.NonEmptyReadonlyArray<AgentEvent.Delta | AgentEvent.AttemptDiscarded | AgentEvent.Compacted>,
      Failure,
      void,
      LanguageModel
    > = Effect.withFiber((fiber) => {
      // The pull requires the model: it is in the fiber's context.
      const model = Context.getUnsafe(fiber.context as Context.Context<LanguageModel>, LanguageModel)
      const captureContent = fiber.getRef(Telemetry.CaptureContent)
      completion.reset()
      asked = request.history
      // Once the turn is complete, the stream ends at the next pull here: the request's layers are not pulled
      // again only to say so, and the first attempt's scope (its request) is released then, not with the
      // iteration (after the tools and the decision).
      const completed = (turn: Turn.Turn) => {
        completion.complete(turn)
        current = Effect.andThen(Scope.close(firstScope, Exit.void), Cause.done())
      }
      const attempt = (history: ReadonlyArray<Item.Item>, attemptScope: Scope.Scope) =>
        Channel.toPullScoped(
          modelTurn(model, captureContent, history, request.options, step, completed).channel,
          attemptScope
        )
      // The first attempt's own scope: it is closed (its request aborted, its span ended) before compaction.
      const firstScope = Scope.forkUnsafe(scope)
      const compacted = (overflow: AiError.ContextLengthExceeded) =>
        Effect.gen(function*() {
          yield* Scope.close(firstScope, Exit.fail(overflow))
          const compactor = yield* Compactor.Compactor
          const shorter = yield* compactor.compact(request.history).pipe(
            Effect.mapError((error) => new Compactor.CompactionError({ message: error.message, overflow }))
          )
          asked = shorter
          current = Effect.flatMap(attempt(shorter, scope), (pull) => (current = pull))
          const discarded: Arr.NonEmptyReadonlyArray<AgentEvent.AttemptDiscarded | AgentEvent.Compacted> = [
            { _tag: "AttemptDiscarded", step, cause: overflow },
            { _tag: "Compacted", step, before: request.history.length, after: shorter.length }
          ]
          return discarded
        })
      // A model stream that ends in the pull that completed its turn (its `turn_complete` alone in a chunk) releases
      // the first attempt's scope there, as `completed` does at the next pull.
      const retried = (
        error: Failure | Cause.Done
      ): Pull.Pull<Arr.NonEmptyReadonlyArray<AgentEvent.AttemptDiscarded | AgentEvent.Compacted>, Failure> =>
        Cause.isDone(error)
          ? Effect.andThen(Scope.close(firstScope, Exit.void), Effect.fail(error))
          : error._tag !== "ContextLengthExceeded"
          ? Effect.fail(error)
          : compacted(error)
      // The setup's failure and the pulls' are caught apart: the first pull does not run inside a second catch.
      return Effect.matchEffect(attempt(request.history, firstScope), {
        onFailure: retried,
        onSuccess: (pull) => (current = Effect.catch(pull, retried))
      })
    })
    return Effect.succeed(Effect.suspend(() => current))
  }))

  return Loop.decideAfter(
    deltas,
    () =>
      Effect.flatMap(completion.turn, (turn) =>
        Effect.flatMapEager(Pricing.turnCost(turn), (cost) => {
          const next = then({ turn, cost, history: [...asked, ...turn.items] })
          return Effect.isEffect(next) ? next : Effect.succeed(next)
        }))
  )
}

/**
 * Streams one turn: the model's deltas (see {@link complete}), then
 * `TurnCompleted`, then the tools' progress and results, then the events of
 * `then(outcome)`.
 *
 * @example
 * ```ts
 * import { AgentTurn, Item, Loop, Tool, Toolkit } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Schema, Stream } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * // One turn (the model request, then its tool calls) as a loop iteration of your own.
 * const turn = Loop.loop(0, () =>
 *   AgentTurn.stream({
 *     step: 1,
 *     history: [Item.userMessage("What is 2 + 3?")],
 *     options: {},
 *     toolkit: Toolkit.make(add),
 *     account: (completed) =>
 *       Effect.succeed({ usage: completed.turn.usage, cost: completed.cost, elapsedMs: 0, steps: 1, lastItems: [] })
 *   }, (outcome) => Loop.stopAfter(Stream.make({ _tag: "Outcome" as const, outcome }))))
 *
 * const program = Stream.runForEach(turn, (event) =>
 *   Effect.sync(() => {
 *     if (event._tag === "ToolResult") console.log(`${event.call.name} -> ${event.output.output}`) // add -> 5
 *     if (event._tag === "Outcome") console.log(event.outcome.history.map((item) => item.type))
 *     // [ 'message', 'function_call', 'function_call_output' ]
 *   }))
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }])])
 * Effect.runPromise(program.pipe(Effect.provide(model)))
 * ```
 *
 * @since 0.1.0
 * @category running
 */
export const stream = <E, R, A, S, E2, R2>(
  request: Request<E, R>,
  then: (
    outcome: Outcome
  ) =>
    | Stream.Stream<Loop.Event<A, S>, E2, R2>
    | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E2, R2 | Scope.Scope>
): Stream.Stream<Loop.Event<AgentEvent.TurnEvent | A, S>, Failure | E | E2, R | R2 | LanguageModel> => {
  const { step } = request
  const rest = (completed: Completed) =>
    // The turn is complete: accounting for it (and recording it) is not cut off halfway.
    Effect.map(Effect.uninterruptible(request.account(completed)), (accounting) => {
      const event: AgentEvent.TurnCompleted = {
        _tag: "TurnCompleted",
        step,
        turn: completed.turn,
        cost: completed.cost,
        accounting
      }
      const afterAccount = request.afterAccount
      const tools = runTools(request, completed, new Map(), then)
      // A check with nothing to wait for (no budget) leaves the tools' stream to open as it is (see `Loop`).
      return Loop.decideAfter(
        ChunkStream.make([event]),
        () => afterAccount === undefined ? tools : Effect.mapEager(afterAccount(completed, accounting), () => tools)
      )
    })
  return complete<AgentEvent.TurnCompleted | AgentEvent.ToolProgress | AgentEvent.ToolResult | A, S, E | E2, R | R2>(
    request,
    rest
  )
}

/**
 * A turn the model answered before (in a run that is resuming), and the results of the calls that already ran, by index.
 *
 * @since 0.1.0
 * @category models
 */
export interface Answered {
  readonly completed: Completed
  readonly done: ReadonlyMap<number, Toolkit.Result>
}

/**
 * Finishes a turn that was answered before: runs the calls that have no result
 * in `done` yet (a call that ended is not run twice, and a recorder puts in
 * `done` the `Toolkit.outcomeUnknown` of a call of a non-idempotent tool that
 * was cut off), then streams the events of `then(outcome)`. The model is not
 * asked, and `request.account` is not called: the turn was accounted when it
 * was answered.
 *
 * @since 0.1.0
 * @category running
 */
export const resume = <E, R, A, S, E2, R2>(
  request: Request<E, R>,
  answered: Answered,
  then: (
    outcome: Outcome
  ) =>
    | Stream.Stream<Loop.Event<A, S>, E2, R2>
    | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E2, R2 | Scope.Scope>
): Stream.Stream<Loop.Event<AgentEvent.ToolProgress | AgentEvent.ToolResult | A, S>, E | E2, R | R2> =>
  runTools(request, answered.completed, answered.done, then)

/** Runs the turn's calls that have no result in `done`, then `then` with every result in call order. */
const runTools = <E, R, A, S, E2, R2>(
  request: Request<E, R>,
  completed: Completed,
  done: ReadonlyMap<number, Toolkit.Result>,
  then: (
    outcome: Outcome
  ) =>
    | Stream.Stream<Loop.Event<A, S>, E2, R2>
    | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E2, R2 | Scope.Scope>
): Stream.Stream<Loop.Event<AgentEvent.ToolProgress | AgentEvent.ToolResult | A, S>, E | E2, R | R2> => {
  const { step } = request
  const calls = Turn.functionCalls(completed.turn)
  const results: Array<Toolkit.Result> = []
  for (const [index, result] of done) results[index] = result
  const pending = calls.flatMap((call, index) => done.has(index) ? [] : [{ call, index }])
  const onResult = request.onToolResult
  const onStart = request.onToolStart
  const idempotencyKey = request.idempotencyKey
  // A turn without calls to run (an answer) starts no tool stream: no fiber, no queue.
  const events = pending.length === 0 ? Stream.empty : Toolkit.streamAll(
    request.toolkit ?? Toolkit.make(),
    pending.map(({ call }) => call),
    {
      ...request.tools,
      onResult: onResult === undefined ? undefined : (i, result) => onResult(pending[i]!.index, result),
      onStart: onStart === undefined
        ? undefined
        : (i, tool) => tool.idempotent ? Effect.void : onStart(pending[i]!.index, pending[i]!.call),
      idempotencyKey: idempotencyKey === undefined ? undefined : (i) => idempotencyKey(pending[i]!.index)
    }
  )
  const tools = events.pipe(
    Stream.map((event): AgentEvent.ToolProgress | AgentEvent.ToolResult => {
      if (event._tag === "Progress") return { _tag: "ToolProgress", step, call: event.call, value: event.value }
      results[pending[event.index]!.index] = event.result
      return toolResult(step, event.result)
    })
  )
  return Loop.decideAfter(
    tools,
    () => then({ ...completed, history: [...completed.history, ...Toolkit.outputs(results)], results })
  )
}

const toolResult = (step: number, result: Toolkit.Result): AgentEvent.ToolResult => ({
  _tag: "ToolResult",
  step,
  ...ToolRecord.fromResult(result)
})

/**
 * One request to the model, in its `chat` span: its deltas as `Delta` events,
 * up to its `turn_complete`, which ends the span (`onTurn` is given the turn
 * then), the span annotated with the `error.type` of a failure (its setup's
 * included). The span and the pull are one stream layer (see
 * `internal/spanStream`).
 */
const modelTurn = (
  model: LanguageModel["Service"],
  captureContent: boolean,
  history: ReadonlyArray<Item.Item>,
  options: TurnOptions,
  step: number,
  onTurn: (turn: Turn.Turn) => void
): Stream.Stream<AgentEvent.Delta, AiError.AiError> => {
  const deltas = model.streamTurn(history, options)
  return SpanStream.make(
    Telemetry.chatSpanName(options.model),
    {
      kind: "client",
      attributes: Telemetry.chatAttributes({ provider: model.provider, request: options, history, captureContent })
    },
    (span, scope, ended) =>
      Effect.map(Channel.toPullScoped(deltas.channel, scope), (pull) =>
        untilComplete(pull, step, (turn) => {
          Telemetry.annotateTurn(span, turn, captureContent)
          // The request is over: its span ends with its turn, not when the stream is pulled again.
          ended()
          onTurn(turn)
        })),
    { onError: (span, error) => span.attribute("error.type", error._tag) }
  )
}

/**
 * Wraps each delta in a `Delta` event, hands the `turn_complete`'s turn to
 * `onTurn` instead of forwarding it, and pulls nothing after it.
 */
const untilComplete = (
  pull: Pull.Pull<Arr.NonEmptyReadonlyArray<TurnDelta>, AiError.AiError, void>,
  step: number,
  onTurn: (turn: Turn.Turn) => void
): Pull.Pull<Arr.NonEmptyReadonlyArray<AgentEvent.Delta>, AiError.AiError, void> => {
  let complete = false
  const next: Pull.Pull<Arr.NonEmptyReadonlyArray<AgentEvent.Delta>, AiError.AiError, void> = Effect.suspend(() =>
    complete ? Cause.done() : Effect.flatMap(pull, (chunk) => {
      const events: Array<AgentEvent.Delta> = []
      for (const delta of chunk) {
        if (delta.type === "turn_complete") {
          complete = true
          onTurn(delta.turn)
          break
        }
        events.push({ _tag: "Delta", step, delta })
      }
      if (Arr.isArrayNonEmpty(events)) return Effect.succeed(events)
      return complete ? Cause.done() : next
    })
  )
  return next
}
