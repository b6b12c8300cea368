/**
 * A model turn: what one request to a model produced, assembled from its deltas.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Item from "./Item.ts"
import { TokenUsage } from "./TokenUsage.ts"

/**
 * Why the model stopped writing. Providers map their own reasons to these;
 * the provider's raw reason, when it differs, is kept in `Turn.providerStopReason`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StopReason = Schema.Literals([
  "stop",
  "tool_calls",
  "max_tokens",
  "content_filter",
  "malformed_tool_call",
  "other"
])
export type StopReason = typeof StopReason.Type

/**
 * One assembled model turn. `cost` is set only when the provider reports one
 * (it wins over `Pricing`). `provider` names the provider that answered when
 * more than one could have (see `LanguageModel.fallback`); `model` is the
 * model that answered, as the provider reports it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Turn = Schema.Struct({
  items: Schema.Array(Item.Item),
  usage: TokenUsage,
  stopReason: StopReason,
  model: Schema.optionalKey(Schema.String),
  provider: Schema.optionalKey(Schema.String),
  responseId: Schema.optionalKey(Schema.String),
  providerStopReason: Schema.optionalKey(Schema.String),
  cost: Schema.optionalKey(Schema.Number)
})
export type Turn = typeof Turn.Type

/**
 * The function calls of a turn, in the order the model made them.
 *
 * @since 0.1.0
 * @category getters
 */
export const functionCalls = (turn: Turn): ReadonlyArray<Item.FunctionCall> =>
  turn.items.filter((item): item is Item.FunctionCall => item.type === "function_call")

/**
 * The text of the turn's assistant messages, joined in order: the answer.
 * Refusals are not text, and neither is `commentary` (see `Item.Phase`).
 *
 * @example
 * ```ts
 * import { Turn } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 *
 * const answer = MockLanguageModel.textTurn("Paris")
 * const calls = MockLanguageModel.callsTurn([{ name: "weather", arguments: { city: "Paris" } }])
 * console.log(Turn.text(answer)) // Paris
 * console.log(Turn.functionCalls(calls).map((call) => call.name)) // [ 'weather' ]
 * ```
 *
 * @since 0.1.0
 * @category getters
 */
export const text = (turn: Turn): string => {
  let out = ""
  for (const item of turn.items) {
    if (item.type === "message" && item.role === "assistant" && item.phase !== "commentary") {
      for (const part of item.content) out += Item.partText(part)
    }
  }
  return out
}

/**
 * Appends the turn's items to the history of a loop state, leaving the rest of the state as it is.
 *
 * @since 0.1.0
 * @category combinators
 */
export const cursor = <S extends { readonly history: ReadonlyArray<Item.Item> }>(state: S, turn: Turn): S => ({
  ...state,
  history: [...state.history, ...turn.items]
})
