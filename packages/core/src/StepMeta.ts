/**
 * What one step of a run reports about itself: the tool calls its model turn
 * made, its usage and cost, and the items it produced.
 *
 * The agent loop fills one in after every iteration and hands it to the
 * `Until` predicates as `Snapshot.lastStepMeta`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Item from "./Item.ts"
import { TokenUsage } from "./TokenUsage.ts"
import * as Turn from "./Turn.ts"

/**
 * Metadata of one step. `toolCalls` is the list of calls the step's model turn
 * made: an empty array means "called no tools", a missing key means "not reported".
 *
 * @since 0.1.0
 * @category schemas
 */
export const StepMeta = Schema.Struct({
  toolCalls: Schema.optionalKey(Schema.Array(Item.FunctionCall)),
  usage: Schema.optionalKey(TokenUsage),
  cost: Schema.optionalKey(Schema.Finite),
  responseItems: Schema.optionalKey(Item.History)
})
export type StepMeta = typeof StepMeta.Type

/**
 * The metadata of a step that ran one model turn. Pass `cost` when it was priced;
 * a cost the provider reported on the turn is used otherwise, and none is set
 * when neither is known.
 *
 * @example
 * ```ts
 * import { StepMeta } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 *
 * const turn = MockLanguageModel.callsTurn([{ name: "search", arguments: { q: "effect" } }])
 * const meta = StepMeta.fromTurn(turn, 0.002)
 * console.log(StepMeta.toolCalls(meta)?.map((call) => call.name)) // [ 'search' ]
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromTurn = (turn: Turn.Turn, cost?: number | null): StepMeta => {
  const stepCost = cost ?? turn.cost
  return {
    toolCalls: Turn.functionCalls(turn),
    usage: turn.usage,
    ...(stepCost === undefined ? {} : { cost: stepCost }),
    responseItems: turn.items
  }
}

/**
 * The tool calls the step made: `toolCalls` when reported, else the function
 * calls among `responseItems`, else `undefined` (the step did not say).
 *
 * @since 0.1.0
 * @category getters
 */
export const toolCalls = (meta: StepMeta): ReadonlyArray<Item.FunctionCall> | undefined =>
  meta.toolCalls ??
    meta.responseItems?.filter((item): item is Item.FunctionCall => item.type === "function_call")
