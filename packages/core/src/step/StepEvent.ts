/**
 * What `Step.stream` streams, as `Schema`s: a server encodes every event to
 * JSON and a client decodes it back exactly, telling events apart by `_tag`.
 *
 * Every event but the last names its step (`stepId`, `kind`) and the execution
 * context it ran in (`contextId`: a spawned sub-agent has its own). A step
 * streams `Started`, then whatever it has to tell (an `llm` step its turn as
 * `Turn` events: deltas, the completed turn, tool results; a `loop` each
 * `Verdict`, then `LoopEnded` saying why it ended; an `every` each error it `Recorded` and went on), then `Completed`
 * with its output, or `Failed`. The stream ends with one `Output` carrying the
 * program's output, or fails with its error.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as AgentEvent from "../agent/AgentEvent.ts"
import { StepMeta } from "../StepMeta.ts"
import * as Verdicts from "../Verdict.ts"
import { Info } from "./StepError.ts"

/**
 * The kinds of step.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Kind = Schema.Literals(["run", "llm", "tool", "branch", "fork", "spawn", "provide", "loop", "every"])
export type Kind = typeof Kind.Type

const header = { stepId: Schema.String, kind: Kind, contextId: Schema.String }

/**
 * The step starts.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Started = Schema.TaggedStruct("Started", header)
export type Started = typeof Started.Type

/**
 * The step ended with `output` (as the step returned it: make outputs JSON to
 * send them to a UI). `meta` is what an `llm` or `tool` step reported about itself.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Completed = Schema.TaggedStruct("Completed", {
  ...header,
  output: Schema.Unknown,
  meta: Schema.optionalKey(StepMeta)
})
export type Completed = typeof Completed.Type

/**
 * The step failed with `error`; the failure goes on up to whatever handles it. Interrupted steps send nothing.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Failed = Schema.TaggedStruct("Failed", { ...header, error: Info })
export type Failed = typeof Failed.Type

/**
 * The events of one model turn, whoever runs it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnEvent = Schema.Union([
  AgentEvent.Delta,
  AgentEvent.AttemptDiscarded,
  AgentEvent.Compacted,
  AgentEvent.TurnCompleted,
  AgentEvent.ToolProgress,
  AgentEvent.ToolResult
])

/**
 * Part of an `llm` step's model turn: a delta as the model streams it, a
 * discarded attempt, a compaction, the completed turn with the context's
 * accounting, a tool's progress or result. An `llm` step's `emit` chooses which it sends.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Turn = Schema.TaggedStruct("Turn", { ...header, event: TurnEvent })
export type Turn = typeof Turn.Type

/**
 * A `loop`'s predicate answered after iteration `iteration` (1 for the first).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Verdict = Schema.TaggedStruct("Verdict", {
  ...header,
  iteration: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  verdict: Verdicts.Verdict
})
export type Verdict = typeof Verdict.Type

/**
 * A `loop` ended after `iterations` iterations, with the output of its last:
 * its predicate said stop (`until`), or it reached its safety limit
 * (`maxIterations`).
 *
 * @since 0.2.0
 * @category events
 */
export const LoopEnded = Schema.TaggedStruct("LoopEnded", {
  ...header,
  reason: Schema.Literals(["until", "maxIterations"]),
  iterations: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
})
export type LoopEnded = typeof LoopEnded.Type

/**
 * An `every` step's body failed with `error`, which `every` recorded (in the context too) before parking again.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Recorded = Schema.TaggedStruct("Recorded", { ...header, error: Info })
export type Recorded = typeof Recorded.Type

/**
 * Any event of a step.
 *
 * @since 0.1.0
 * @category models
 */
export type StepEvent = Started | Completed | Failed | Turn | Verdict | LoopEnded | Recorded

/** The schema of {@link StepEvent}. */
export const StepEvent = Schema.Union([Started, Completed, Failed, Turn, Verdict, LoopEnded, Recorded])

/**
 * The last event of a program that succeeded: its output.
 *
 * @since 0.1.0
 * @category models
 */
export interface Output<O> {
  readonly _tag: "Output"
  readonly value: O
}

/** The schema of an {@link Output} whose value `value` describes. */
export const Output = <S extends Schema.Top>(value: S) => Schema.TaggedStruct("Output", { value })

/**
 * What `Step.stream` streams for a program whose output is `O`.
 *
 * @since 0.1.0
 * @category models
 */
export type Event<O> = StepEvent | Output<O>

/**
 * The schema of the events of a program whose output `output` describes (`Schema.Unknown` for any JSON).
 *
 * @since 0.1.0
 * @category schemas
 */
export const schema = <S extends Schema.Top>(output: S) =>
  Schema.Union([Started, Completed, Failed, Turn, Verdict, LoopEnded, Recorded, Output(output)])

/**
 * The types of event, as an `llm` step's `emit` filter is asked about them: a step event's `_tag`, or a turn event's.
 *
 * @since 0.1.0
 * @category models
 */
export type EventType = Exclude<StepEvent["_tag"], "Turn"> | Turn["event"]["_tag"]

/**
 * The type of an event, as an `emit` filter sees it: a `Turn`'s inner event's tag, else the event's own.
 *
 * @example
 * ```ts
 * import { Step, StepEvent } from "@agentloop/core"
 * import { Effect, Schema, Stream } from "effect"
 *
 * const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
 * const program = Step.stream(double, 21).pipe(
 *   Stream.runForEach((event) =>
 *     Effect.sync(() => {
 *       if (event._tag === "Output") console.log("output", event.value) // output 42
 *       // Every event but the output is a `StepEvent`: a Schema, so it encodes to JSON for a UI.
 *       else console.log(StepEvent.eventType(event), Schema.encodeSync(StepEvent.StepEvent)(event).stepId) // Started double, then Completed double
 *     })
 *   )
 * )
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category getters
 */
export const eventType = (event: StepEvent): EventType => event._tag === "Turn" ? event.event._tag : event._tag
