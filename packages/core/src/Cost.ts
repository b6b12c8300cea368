/**
 * A cost in USD that may be unknown.
 *
 * A turn of a model without a price has no cost anyone can state: it is
 * `null`, never `0`, and any sum it takes part in is unknown too. Budgets treat
 * an unknown cost as a reason to stop, not as a free turn.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A cost in USD, or `null` when it is unknown.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Cost = Schema.NullOr(Schema.Finite)
export type Cost = typeof Cost.Type

/**
 * Free: the identity of {@link add}.
 *
 * @since 0.1.0
 * @category constants
 */
export const zero: Cost = 0

/**
 * How many ticks make one USD: xAI reports what a request cost as a whole
 * number of ticks (`usage.cost_in_usd_ticks`).
 *
 * @since 0.3.0
 * @category constants
 */
export const ticksPerUsd = 10_000_000_000

/**
 * A cost given in ticks (see {@link ticksPerUsd}), in USD.
 *
 * @example
 * ```ts
 * import { Cost } from "@agentloop/core"
 *
 * // xAI's usage of a grok-3-mini turn: "cost_in_usd_ticks": 1721250
 * console.log(Cost.format(Cost.fromTicks(1_721_250))) // $0.000172125
 * ```
 *
 * @since 0.3.0
 * @category constructors
 */
export const fromTicks = (ticks: number): number => ticks / ticksPerUsd

/**
 * The sum of two costs; unknown when either is.
 *
 * @example
 * ```ts
 * import { Cost } from "@agentloop/core"
 *
 * const spent = Cost.add(Cost.add(Cost.zero, 0.012), 0.0305)
 * console.log(Cost.format(spent)) // $0.0425
 * console.log(Cost.reaches(spent, 0.04)) // true
 * // A turn of a model with no known price costs `null`, and so does any sum with it.
 * console.log(Cost.add(spent, null)) // null
 * ```
 *
 * @since 0.1.0
 * @category math
 */
export const add = (self: Cost, that: Cost): Cost => self === null || that === null ? null : self + that

/**
 * Whether a known cost has reached `budget` (the budget itself included). An unknown cost has not.
 *
 * @since 0.1.0
 * @category predicates
 */
export const reaches = (cost: Cost, budget: number): boolean => cost !== null && cost >= budget

/**
 * A cost for a person to read: `$0.0123`, or `unknown`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const format = (cost: Cost): string => cost === null ? "unknown" : `$${Number(cost.toPrecision(6))}`
