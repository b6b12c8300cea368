/**
 * The chunks of the AI SDK's UI message stream protocol (v1), as agentloop
 * writes them, and the `data-*` parts that carry agentloop's own data (cost,
 * verdicts, terminations, approvals, a step program's progress).
 *
 * The chunk types are the ones `useChat` (`@ai-sdk/react`, `@ai-sdk/vue`, …)
 * reads in versions 5 to 7 of the SDK; agentloop writes nothing that only
 * one of them knows. The data parts' payloads are `Schema`s, so a UI can
 * decode them (`useChat`'s `dataPartSchemas` takes `Schema.toStandardSchemaV1`
 * of them).
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"
import { Cost } from "../Cost.ts"
import { TokenUsage } from "../TokenUsage.ts"
import * as Verdicts from "../Verdict.ts"

/**
 * A finish reason every SDK version from 5 on accepts.
 *
 * @since 0.2.0
 * @category chunks
 */
export type FinishReason = "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other"

/**
 * One chunk of a UI message stream; its `type` says which. Text and reasoning
 * deltas follow a start with the same `id`; tool outputs name a `toolCallId`
 * the stream announced.
 *
 * @since 0.2.0
 * @category chunks
 */
export type Chunk =
  | { readonly type: "start"; readonly messageId?: string }
  | { readonly type: "start-step" }
  | { readonly type: "finish-step" }
  | { readonly type: "text-start"; readonly id: string }
  | { readonly type: "text-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "text-end"; readonly id: string }
  | { readonly type: "reasoning-start"; readonly id: string }
  | { readonly type: "reasoning-delta"; readonly id: string; readonly delta: string }
  | { readonly type: "reasoning-end"; readonly id: string }
  | { readonly type: "tool-input-start"; readonly toolCallId: string; readonly toolName: string }
  | { readonly type: "tool-input-delta"; readonly toolCallId: string; readonly inputTextDelta: string }
  | {
    readonly type: "tool-input-available"
    readonly toolCallId: string
    readonly toolName: string
    readonly input: unknown
  }
  | {
    readonly type: "tool-input-error"
    readonly toolCallId: string
    readonly toolName: string
    readonly input: unknown
    readonly errorText: string
  }
  | {
    readonly type: "tool-output-available"
    readonly toolCallId: string
    readonly output: unknown
    readonly preliminary?: boolean
  }
  | { readonly type: "tool-output-error"; readonly toolCallId: string; readonly errorText: string }
  | { readonly type: "source-url"; readonly sourceId: string; readonly url: string; readonly title?: string }
  | {
    readonly type: "source-document"
    readonly sourceId: string
    readonly mediaType: string
    readonly title: string
    readonly filename?: string
  }
  | DataChunk
  | { readonly type: "error"; readonly errorText: string }
  | { readonly type: "finish"; readonly finishReason: FinishReason }

/**
 * The chunk of a `data-*` part: `data-agentloop-<name>` with its payload. A
 * part with an `id` replaces the earlier part of the same type and id.
 *
 * @since 0.2.0
 * @category chunks
 */
export interface DataChunk {
  readonly type: `data-agentloop-${string}`
  readonly id?: string
  readonly data: unknown
}

const Step = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/**
 * `data-agentloop-turn`: turn `step` completed, with its usage and cost, and
 * the run's so far (children included). Cost is in USD, `null` when unknown.
 *
 * @since 0.2.0
 * @category data parts
 */
export const TurnData = Schema.Struct({
  step: Step,
  usage: TokenUsage,
  cost: Cost,
  total: Schema.Struct({ usage: TokenUsage, cost: Cost, elapsedMs: Schema.Finite, steps: Schema.Int })
})
export type TurnData = typeof TurnData.Type

/**
 * `data-agentloop-termination`: how the run ended, as `Termination` names it
 * (`Stop`, `Submitted`, `MaxTurns`, …), its category, a sentence for a
 * person, and the run's totals.
 *
 * @since 0.2.0
 * @category data parts
 */
export const TerminationData = Schema.Struct({
  tag: Schema.String,
  category: Schema.Literals(["success", "retryable", "capacity", "fatal"]),
  message: Schema.String,
  usage: TokenUsage,
  cost: Cost,
  elapsedMs: Schema.Finite,
  steps: Schema.Int
})
export type TerminationData = typeof TerminationData.Type

/**
 * `data-agentloop-verdict`: the stop predicate's verdict on turn `step`.
 *
 * @since 0.2.0
 * @category data parts
 */
export const VerdictData = Schema.Struct({ step: Step, verdict: Verdicts.Verdict })
export type VerdictData = typeof VerdictData.Type

/**
 * `data-agentloop-feedback`: a message sent to the model before the next turn.
 *
 * @since 0.2.0
 * @category data parts
 */
export const FeedbackData = Schema.Struct({ step: Step, text: Schema.String })
export type FeedbackData = typeof FeedbackData.Type

/**
 * `data-agentloop-notice`: something a UI may show about turn `step`: its
 * history was compacted, or an attempt was discarded (the text streamed for it
 * is void; another attempt follows).
 *
 * @since 0.2.0
 * @category data parts
 */
export const NoticeData = Schema.Struct({
  step: Step,
  kind: Schema.Literals(["compacted", "attempt-discarded"]),
  message: Schema.String
})
export type NoticeData = typeof NoticeData.Type

/**
 * `data-agentloop-approval`: call `toolCallId` of turn `step` waits for a
 * person's decision; `token` is what the server needs back with the decision
 * (for `ChatApprovals`, a signature of this very call: without it the call
 * does not run).
 *
 * @since 0.2.0
 * @category data parts
 */
export const ApprovalData = Schema.Struct({
  step: Step,
  toolCallId: Schema.String,
  toolName: Schema.String,
  input: Schema.Unknown,
  token: Schema.String
})
export type ApprovalData = typeof ApprovalData.Type

/**
 * `data-agentloop-step`: a step program's step started, completed, failed,
 * was judged by its loop's predicate, or recorded an error and went on.
 *
 * @since 0.2.0
 * @category data parts
 */
export const StepData = Schema.Struct({
  event: Schema.Literals(["Started", "Completed", "Failed", "Verdict", "Recorded"]),
  stepId: Schema.String,
  kind: Schema.String,
  contextId: Schema.String,
  message: Schema.optionalKey(Schema.String)
})
export type StepData = typeof StepData.Type

/**
 * The names of agentloop's data parts (after `data-agentloop-`) and their payloads' schemas.
 *
 * @since 0.2.0
 * @category data parts
 */
export const dataParts = {
  turn: TurnData,
  termination: TerminationData,
  verdict: VerdictData,
  feedback: FeedbackData,
  notice: NoticeData,
  approval: ApprovalData,
  step: StepData
} as const

/**
 * The `[DONE]` line that ends every UI message stream's body.
 *
 * @since 0.2.0
 * @category wire
 */
export const done = "data: [DONE]\n\n"

/**
 * The SSE frame of a chunk: `data: <json>` and a blank line.
 *
 * @example
 * ```ts
 * import { UIMessageChunk } from "@agentloop/core"
 *
 * // One Server-Sent Event of the AI SDK's UI message stream.
 * process.stdout.write(UIMessageChunk.frame({ type: "text-delta", id: "t1", delta: "Hi" }))
 * // data: {"type":"text-delta","id":"t1","delta":"Hi"}
 * process.stdout.write(UIMessageChunk.done) // data: [DONE]
 * ```
 *
 * @since 0.2.0
 * @category wire
 */
export const frame = (chunk: Chunk): string => `data: ${JSON.stringify(chunk)}\n\n`
