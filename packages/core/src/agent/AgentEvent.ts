/**
 * What an agent run streams, as `Schema`s: a server encodes every event to JSON
 * and a client decodes it back exactly, telling events apart by `_tag` alone.
 *
 * A run streams, per turn: `TurnStarted`, the model's `Delta`s (every delta but
 * the terminal `turn_complete`, whose turn arrives once, in `TurnCompleted`), an
 * `AttemptDiscarded` and a `Compacted` when the history had to be compacted
 * mid-turn, `TurnCompleted` with the turn's cost and the run's accounting, the
 * tools' `ToolProgress` and `ToolResult`s, the `Verdict` of the stop predicate
 * and any `Feedback` sent to the model; and at the end one `Finished` with the
 * result. A run that fails ends its stream with a `Termination.Error` instead.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Accounting } from "../Accounting.ts"
import * as AiError from "../AiError.ts"
import { Cost } from "../Cost.ts"
import * as Item from "../Item.ts"
import * as Termination from "../Termination.ts"
import { ToolRecord } from "../ToolRecord.ts"
import { Turn } from "../Turn.ts"
import * as TurnDelta from "../TurnDelta.ts"
import * as Verdicts from "../Verdict.ts"

const Step = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Turn `step` (1 for the first) starts: its request is about to be sent.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnStarted = Schema.TaggedStruct("TurnStarted", { step: Step })
export type TurnStarted = typeof TurnStarted.Type

/**
 * A piece of the turn as the model streams it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Delta = Schema.TaggedStruct("Delta", { step: Step, delta: TurnDelta.Incremental })
export type Delta = typeof Delta.Type

/**
 * The turn's request failed with `cause` after some of its deltas may have been
 * streamed: forget them (a UI clears the step's text). Another attempt follows.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AttemptDiscarded = Schema.TaggedStruct("AttemptDiscarded", { step: Step, cause: AiError.AiError })
export type AttemptDiscarded = typeof AttemptDiscarded.Type

/**
 * The history did not fit the context window and was compacted from `before` to `after` items.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Compacted = Schema.TaggedStruct("Compacted", { step: Step, before: Count, after: Count })
export type Compacted = typeof Compacted.Type

/**
 * The model finished the turn: the assembled turn, its cost (`null` when unknown) and the run's accounting so far.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnCompleted = Schema.TaggedStruct("TurnCompleted", {
  step: Step,
  turn: Turn,
  cost: Cost,
  accounting: Accounting
})
export type TurnCompleted = typeof TurnCompleted.Type

/**
 * A streaming tool reported progress. The value travels as the tool emitted it: make it JSON to send it to a UI.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolProgress = Schema.TaggedStruct("ToolProgress", {
  step: Step,
  call: Item.FunctionCall,
  value: Schema.Unknown
})
export type ToolProgress = typeof ToolProgress.Type

/**
 * A tool call ended: its `outcome`, and the output item the model will read
 * (the tool's encoded output, or `{"error": …}`); `reason` says what went wrong.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolResult = Schema.TaggedStruct("ToolResult", { step: Step, ...ToolRecord.fields })
export type ToolResult = typeof ToolResult.Type

/**
 * The stop predicate's verdict on the turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Verdict = Schema.TaggedStruct("Verdict", { step: Step, verdict: Verdicts.Verdict })
export type Verdict = typeof Verdict.Type

/**
 * A message sent to the model before the next turn: a verdict's feedback, or a repair request for a structured output.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Feedback = Schema.TaggedStruct("Feedback", { step: Step, text: Schema.String })
export type Feedback = typeof Feedback.Type

/**
 * A run that ended because its stop predicate said so, with its output (`O`: the text, or the structured output).
 *
 * @since 0.1.0
 * @category models
 */
export interface Stopped<O> {
  readonly _tag: "Stopped"
  readonly termination: Termination.Stop
  readonly output: O
  readonly history: Item.History
}

/** The schema of a {@link Stopped} result whose output `output` describes. */
export const Stopped = <S extends Schema.Top>(output: S) =>
  Schema.TaggedStruct("Stopped", { termination: Termination.Stop, output, history: Item.History })

/**
 * A run that ended through its finish tool; the tool's output is `termination.value`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Submitted<A> {
  readonly _tag: "Submitted"
  readonly termination: Termination.Submitted<A>
  readonly history: Item.History
}

/** The schema of a {@link Submitted} result whose submitted value `value` describes. */
export const Submitted = <S extends Schema.Top>(value: S) =>
  Schema.TaggedStruct("Submitted", { termination: Termination.Submitted(value), history: Item.History })

/**
 * How a successful run ended; narrow on `_tag`.
 *
 * @since 0.1.0
 * @category models
 */
export type RunResult<O = string, A = unknown> = Stopped<O> | Submitted<A>

/** The schema of a {@link RunResult}. */
export const RunResult = <O extends Schema.Top, A extends Schema.Top>(output: O, value: A) =>
  Schema.Union([Stopped(output), Submitted(value)])

/**
 * The last event of a successful run, with its result.
 *
 * @since 0.1.0
 * @category models
 */
export interface Finished<O, A> {
  readonly _tag: "Finished"
  readonly result: RunResult<O, A>
}

/** The schema of a {@link Finished} event. */
export const Finished = <O extends Schema.Top, A extends Schema.Top>(output: O, value: A) =>
  Schema.TaggedStruct("Finished", { result: RunResult(output, value) })

/**
 * The events of one turn, whoever runs it: `AgentLoop`, or a step program's `llm` step.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnEvent = Delta | AttemptDiscarded | Compacted | TurnCompleted | ToolProgress | ToolResult

/**
 * Any event of a run whose output is `O` (the text unless the run has an `output` schema) and whose finish tool submits `A`.
 *
 * @since 0.1.0
 * @category models
 */
export type AgentEvent<O = string, A = unknown> =
  | TurnStarted
  | TurnEvent
  | Verdict
  | Feedback
  | Finished<O, A>

/**
 * The schema of the events of a run whose output `output` describes (the
 * `output` option of the run, or `Schema.String`) and whose finish tool's
 * output `submitted` describes (`Schema.Unknown` for any JSON value).
 *
 * @example
 * ```ts
 * import { AgentEvent, AgentLoop } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema, Stream } from "effect"
 *
 * // The events of a run whose output is a string and which has no finish tool, as JSON for a UI.
 * const Json = Schema.fromJsonString(AgentEvent.schema(Schema.String, Schema.Unknown))
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const lines = yield* agent.stream({ input: "Hi" }).pipe(Stream.map((event) => Schema.encodeSync(Json)(event)), Stream.runCollect)
 *   console.log(Schema.decodeSync(Json)(lines.at(-1)!)._tag) // Finished
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const schema = <O extends Schema.Top, A extends Schema.Top>(output: O, submitted: A) =>
  Schema.Union([
    TurnStarted,
    Delta,
    AttemptDiscarded,
    Compacted,
    TurnCompleted,
    ToolProgress,
    ToolResult,
    Verdict,
    Feedback,
    Finished(output, submitted)
  ])

/** The events of a run whose output is text. */
export const AgentEvent = schema(Schema.String, Schema.Unknown)
