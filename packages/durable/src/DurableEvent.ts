/**
 * What a durable run logs for its UIs: the events of an `AgentLoop` run (see
 * `AgentEvent`), and `ApprovalRequested` when a call waits for a person.
 *
 * The log holds each turn once it has completed: `TurnStarted`, any
 * `AttemptDiscarded`/`Compacted`, `TurnCompleted` (with the whole turn), the
 * `ApprovalRequested`s and `ToolResult`s of its calls, then the `Verdict`,
 * `Feedback` and, at the end, `Finished`. Text deltas and tool progress are
 * not logged: a UI shows a completed turn from its `TurnCompleted`.
 *
 * @since 0.1.0
 */
import * as AgentEvent from "@agentloop/core/agent/AgentEvent"
import * as Item from "@agentloop/core/Item"
import * as RunId from "@agentloop/core/RunId"
import type * as EventStream from "@agentloop/core/stream/EventStream"
import * as Termination from "@agentloop/core/Termination"
import * as Schema from "effect/Schema"
import { RunStoreError } from "./RunStore.ts"

/**
 * Call `call` of turn `step` waits for a decision: pass `token` to the durable
 * agent's `approve`, from any process that reaches the run's database, at
 * any time; the run goes on once the decision is recorded.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApprovalRequested = Schema.TaggedStruct("ApprovalRequested", {
  step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  call: Item.FunctionCall,
  token: Schema.String
})
export type ApprovalRequested = typeof ApprovalRequested.Type

/**
 * An event of a durable run whose output is `O` and whose finish tool submits `A`.
 *
 * @since 0.1.0
 * @category models
 */
export type DurableEvent<O = string, A = unknown> = AgentEvent.AgentEvent<O, A> | ApprovalRequested

/**
 * The schema of the events of a durable run (see `AgentEvent.schema` for `output` and `submitted`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const schema = <O extends Schema.Top, A extends Schema.Top>(output: O, submitted: A) =>
  Schema.Union([AgentEvent.schema(output, submitted), ApprovalRequested])

/** The events of a durable run whose output is text. */
export const DurableEvent = schema(Schema.String, Schema.Unknown)

/**
 * The `EventStream` codec of a durable run's events whose output is text:
 * serve `DurableAgent.events` as Server-Sent Events with it, and read them back
 * in a browser or in Node; the stream's failure is the run's termination, the
 * store's error, or a run id that is not one.
 *
 * @example
 * ```ts
 * import { DurableEvent } from "@agentloop/durable"
 * import { Schema } from "effect"
 *
 * // A durable run's events are an agent's events plus its approval requests, all JSON.
 * const event = Schema.decodeUnknownSync(DurableEvent.DurableEvent)({
 *   _tag: "ApprovalRequested",
 *   step: 1,
 *   call: { type: "function_call", id: "fc_1", status: "completed", call_id: "c1", name: "remove", arguments: "{}" },
 *   token: "opaque-token"
 * })
 * console.log(event._tag) // ApprovalRequested
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const codec: EventStream.Codec<DurableEvent, Termination.Error | RunStoreError | RunId.InvalidRunId> = {
  events: DurableEvent,
  failure: Schema.Union([Termination.Error, RunStoreError, RunId.InvalidRunId])
}
