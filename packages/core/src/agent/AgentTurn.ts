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
import * as Effect from "effect/Effect"
import type * as Pull from "effect/Pull"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Accounting } from "../Accounting.ts"
import * as AiError from "../AiError.ts"
import * as Compactor from "../Compactor.ts"
import type { Cost } from "../Cost.ts"
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
import type * as AgentEvent from "./AgentEvent.ts"

/** What one turn asks, and of whom. `E` and `R` are those of `account` and of the toolkit's tools. */
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
}

/** A turn the model completed, and its cost (`null` when its model has no price). */
export interface Completed {
  readonly turn: Turn.Turn
  readonly cost: Cost
  /** The history the model answered (compacted, if it had to be), then the turn's items. */
  readonly history: ReadonlyArray<Item.Item>
}

/** A completed turn whose tool calls have run; `history` ends with their outputs, in call order. */
export interface Outcome extends Completed {
  readonly results: ReadonlyArray<Toolkit.Result>
}

/** The history did not fit the context window (`overflow`), and the `Compactor` could not shorten it. */
export class CompactionFailure extends Schema.TaggedError<CompactionFailure>()("CompactionFailure", {
  overflow: AiError.ContextLengthExceeded,
  error: Compactor.CompactionError
}) {
  override get message() {
    return `the history did not fit the context window and compacting it failed: ${this.error.message}`
  }
}

/**
 * Why a turn did not complete: the model request failed (a `ContextLengthExceeded`
 * here means the compacted history did not fit either), or compaction failed.
 */
export type Failure = AiError.AiError | CompactionFailure

/** What the model part of a turn needs: the turn's number, the history to send, and the request options. */
export type ModelRequest = Pick<Request<never, never>, "step" | "history" | "options">

/**
 * Streams the model part of one turn: the model's deltas, then the events of
 * `then(completed)` with the completed turn and its cost; no accounting and no
 * tools. When the request fails with `ContextLengthExceeded`, the `Compactor`
 * in context shortens the history once and the request is sent again, after an
 * `AttemptDiscarded` and a `Compacted` event (the deltas already streamed
 * belong to the lost attempt). {@link stream} is built on it; a durable engine
 * runs it alone, as one recorded step.
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
  let turn: Turn.Turn | undefined
  let asked = request.history

  const deltas = Stream.unwrap(
    Effect.flatMap(LanguageModel, (model) =>
      Effect.map(Telemetry.CaptureContent, (captureContent) => {
        turn = undefined
        asked = request.history
        const attempt = (history: ReadonlyArray<Item.Item>) =>
          modelTurn(model, captureContent, history, request.options, step, (completed) => {
            turn = completed
          })
        return attempt(request.history).pipe(
          Stream.catchTag("ContextLengthExceeded", (overflow) =>
            Stream.unwrap(Effect.gen(function*() {
              const compactor = yield* Compactor.Compactor
              const shorter = yield* compactor.compact(request.history).pipe(
                Effect.mapError((error) => new CompactionFailure({ overflow, error }))
              )
              asked = shorter
              const discarded: ReadonlyArray<AgentEvent.AttemptDiscarded | AgentEvent.Compacted> = [
                { _tag: "AttemptDiscarded", step, cause: overflow },
                { _tag: "Compacted", step, before: request.history.length, after: shorter.length }
              ]
              return Stream.concat(Stream.fromIterable(discarded), attempt(shorter))
            })))
        )
      }))
  )

  return Loop.decideAfter(deltas, (): Effect.Effect<
    Stream.Stream<Loop.Event<A, S>, E2, R2>,
    AiError.IncompleteTurn | E2,
    R2 | Scope.Scope
  > => {
    const completed = turn
    if (completed === undefined) {
      return Effect.fail(
        new AiError.IncompleteTurn({ message: "The model's stream ended before its turn_complete: the turn is lost" })
      )
    }
    return Effect.flatMap(Pricing.turnCost(completed), (cost) => {
      const next = then({ turn: completed, cost, history: [...asked, ...completed.items] })
      return Effect.isEffect(next) ? next : Effect.succeed(next)
    })
  })
}

/**
 * Streams one turn: the model's deltas (see {@link complete}), then
 * `TurnCompleted`, then the tools' progress and results, then the events of
 * `then(outcome)`.
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
      return Loop.decideAfter(
        Stream.make(event),
        () => afterAccount === undefined ? tools : Effect.as(afterAccount(completed, accounting), tools)
      )
    })
  return complete<AgentEvent.TurnCompleted | AgentEvent.ToolProgress | AgentEvent.ToolResult | A, S, E | E2, R | R2>(
    request,
    rest
  )
}

/** A turn the model answered before (in a run that is resuming), and the results of the calls that already ran, by index. */
export interface Answered {
  readonly completed: Completed
  readonly done: ReadonlyMap<number, Toolkit.Result>
}

/**
 * Finishes a turn that was answered before: runs the calls that have no result
 * yet (none is run twice), then streams the events of `then(outcome)`. The
 * model is not asked, and `request.account` is not called: the turn was
 * accounted when it was answered.
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
  // A turn without calls to run (an answer) starts no tool stream: no fiber, no queue.
  const events = pending.length === 0 ? Stream.empty : Toolkit.streamAll(
    request.toolkit ?? Toolkit.make(),
    pending.map(({ call }) => call),
    {
      ...request.tools,
      onResult: onResult === undefined ? undefined : (i, result) => onResult(pending[i]!.index, result)
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
 * up to its `turn_complete`, the span annotated with the `error.type` of a
 * failure. The span and the pull are one stream layer (see `internal/spanStream`).
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
  return SpanStream.make(Telemetry.chatSpanName(options.model), {
    kind: "client",
    attributes: Telemetry.chatAttributes({ provider: model.provider, request: options, history, captureContent })
  }, (span, scope) =>
    Effect.map(Channel.toPullScoped(deltas.channel, scope), (pull) =>
      untilComplete(
        // Every failure of the model's stream, its setup's included, comes through its pull.
        Effect.tapError(
          pull,
          (error) => Cause.isDone(error) ? Effect.void : Effect.sync(() => span.attribute("error.type", error._tag))
        ),
        step,
        (turn) => {
          Telemetry.annotateTurn(span, turn, captureContent)
          onTurn(turn)
        }
      )))
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
