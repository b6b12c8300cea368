/**
 * What a run has used so far: tokens, cost, time, turns, and where it ended.
 *
 * Every termination and every `TurnCompleted` event carries one, so happy and
 * sad paths are accounted for alike.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Cost from "./Cost.ts"
import * as Item from "./Item.ts"
import * as TokenUsage from "./TokenUsage.ts"

const Count = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/**
 * Tokens, cost in USD (children included; `null` when a turn had no price),
 * wall-clock milliseconds, model turns, and the last items of the history (how
 * many is the agent's choice: enough to show where it ended).
 *
 * @example
 * ```ts
 * import { Accounting, TokenUsage } from "@agentloop/core"
 * import { Schema } from "effect"
 *
 * const accounting: Accounting.Accounting = {
 *   usage: TokenUsage.make(1200, 80),
 *   cost: 0.0031,
 *   elapsedMs: 1850,
 *   steps: 2,
 *   lastItems: []
 * }
 * // Plain data: it encodes to JSON for a checkpoint or a UI and decodes back.
 * const json = Schema.encodeSync(Schema.fromJsonString(Accounting.Accounting))(accounting)
 * console.log(Schema.decodeSync(Schema.fromJsonString(Accounting.Accounting))(json).steps) // 2
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const Accounting = Schema.Struct({
  usage: TokenUsage.TokenUsage,
  cost: Cost.Cost,
  elapsedMs: Schema.Finite,
  steps: Count,
  lastItems: Item.History
})
export type Accounting = typeof Accounting.Type

/**
 * The accounting of what never ran (a termination found before the run, or
 * a run whose log holds no turn): no tokens, no cost, no time, no turns.
 *
 * @since 0.3.0
 * @category constructors
 */
export const empty: Accounting = { usage: TokenUsage.empty, cost: Cost.zero, elapsedMs: 0, steps: 0, lastItems: [] }
