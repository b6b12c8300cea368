/**
 * The incremental events of a streaming model turn.
 *
 * Every provider layer turns its wire format into this one vocabulary, which ends
 * with exactly one `turn_complete` carrying the assembled {@link Turn.Turn}.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Item from "./Item.ts"
import { TokenUsage } from "./TokenUsage.ts"
import { Turn } from "./Turn.ts"

/**
 * A piece of assistant text; `phase` is its message's (see `Item.Phase`), when the provider says.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextDelta = Schema.Struct({
  type: Schema.Literal("text_delta"),
  delta: Schema.String,
  phase: Schema.optionalKey(Item.Phase)
})
export type TextDelta = typeof TextDelta.Type

/**
 * A source the text streamed so far cites, as it comes: the provider's
 * decoder also puts it in the `annotations` of the turn's `output_text` part
 * it belongs to (see `Item.Citation`).
 *
 * @since 0.2.0
 * @category schemas
 */
export const CitationDelta = Schema.Struct({ type: Schema.Literal("citation"), citation: Item.Citation })
export type CitationDelta = typeof CitationDelta.Type

/**
 * A piece of reasoning the provider shows (a summary or a thought).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningDelta = Schema.Struct({ type: Schema.Literal("reasoning_delta"), delta: Schema.String })
export type ReasoningDelta = typeof ReasoningDelta.Type

/**
 * A piece of a refusal.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RefusalDelta = Schema.Struct({ type: Schema.Literal("refusal_delta"), delta: Schema.String })
export type RefusalDelta = typeof RefusalDelta.Type

/**
 * The model started a call of tool `name`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionCallStart = Schema.Struct({
  type: Schema.Literal("function_call_start"),
  call_id: Schema.String,
  name: Schema.String
})
export type FunctionCallStart = typeof FunctionCallStart.Type

/**
 * A piece of a call's JSON arguments; the pieces concatenate to `FunctionCallDone.arguments`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionCallArgumentsDelta = Schema.Struct({
  type: Schema.Literal("function_call_arguments_delta"),
  call_id: Schema.String,
  delta: Schema.String
})
export type FunctionCallArgumentsDelta = typeof FunctionCallArgumentsDelta.Type

/**
 * A call is complete, with all its arguments.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionCallDone = Schema.Struct({
  type: Schema.Literal("function_call_done"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type FunctionCallDone = typeof FunctionCallDone.Type

/**
 * The turn's token usage as the provider reported it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Usage = Schema.Struct({ type: Schema.Literal("usage"), usage: TokenUsage })
export type Usage = typeof Usage.Type

/**
 * The last delta of a turn: the assembled turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnComplete = Schema.Struct({ type: Schema.Literal("turn_complete"), turn: Turn })
export type TurnComplete = typeof TurnComplete.Type

/**
 * Every delta but the terminal `turn_complete`: what arrives while a turn is still streaming.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Incremental = Schema.Union([
  TextDelta,
  CitationDelta,
  ReasoningDelta,
  RefusalDelta,
  FunctionCallStart,
  FunctionCallArgumentsDelta,
  FunctionCallDone,
  Usage
])
export type Incremental = typeof Incremental.Type

/**
 * Any delta of a streaming turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnDelta = Schema.Union([...Incremental.members, TurnComplete])
export type TurnDelta = typeof TurnDelta.Type

/**
 * Whether a delta is the terminal `turn_complete`.
 *
 * @example
 * ```ts
 * import { Item, LanguageModel, TurnDelta } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Stream } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const model = yield* LanguageModel.LanguageModel
 *   yield* model.streamTurn([Item.userMessage("Hi")], {}).pipe(
 *     Stream.runForEach((delta) =>
 *       Effect.sync(() => {
 *         if (delta.type === "text_delta") process.stdout.write(delta.delta)
 *         if (TurnDelta.isTurnComplete(delta)) console.log(`\n${delta.turn.stopReason}`) // stop
 *       })
 *     )
 *   )
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")]))))
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isTurnComplete = (delta: TurnDelta): delta is TurnComplete => delta.type === "turn_complete"
