/**
 * Token counts of a turn or of a whole run.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const Count = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/**
 * Tokens a model read (`input`, of which `cachedInput` were read from its
 * prompt cache and `cacheWrite` written to it, providers billing the three
 * kinds at three rates) and wrote (`output`, of which `reasoning` were hidden
 * reasoning). `cacheWrite` is new in 0.2.0: a usage recorded before has none.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TokenUsage = Schema.Struct({
  input: Count,
  output: Count,
  total: Count,
  cachedInput: Schema.optionalKey(Count),
  cacheWrite: Schema.optionalKey(Count),
  reasoning: Schema.optionalKey(Count)
})
export type TokenUsage = typeof TokenUsage.Type

/**
 * No tokens: the identity of {@link add}.
 *
 * @since 0.1.0
 * @category constants
 */
export const empty: TokenUsage = { input: 0, output: 0, total: 0 }

/**
 * The counts of a usage that only some providers report.
 *
 * @since 0.2.0
 * @category models
 */
export interface Details {
  readonly cachedInput?: number | undefined
  readonly cacheWrite?: number | undefined
  readonly reasoning?: number | undefined
}

/**
 * Builds a usage from input and output counts; `total` is their sum.
 *
 * @example
 * ```ts
 * import { TokenUsage } from "@agentloop/core"
 *
 * const first = TokenUsage.make(1200, 80)
 * const second = TokenUsage.make(1350, 40)
 * const total = TokenUsage.add(first, second)
 * console.log(total.input, total.output, total.total) // 2550 120 2670
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (input: number, output: number, details?: Details): TokenUsage =>
  withDetails({ input, output, total: input + output }, details ?? {})

/**
 * Adds two usages field by field; an optional count is present when either side has it.
 *
 * @since 0.1.0
 * @category math
 */
export const add = (self: TokenUsage, that: TokenUsage): TokenUsage =>
  withDetails(
    { input: self.input + that.input, output: self.output + that.output, total: self.total + that.total },
    {
      cachedInput: sumOptional(self.cachedInput, that.cachedInput),
      cacheWrite: sumOptional(self.cacheWrite, that.cacheWrite),
      reasoning: sumOptional(self.reasoning, that.reasoning)
    }
  )

const sumOptional = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : a + b

const withDetails = (
  base: { readonly input: number; readonly output: number; readonly total: number },
  details: Details
): TokenUsage => ({
  ...base,
  ...(details.cachedInput === undefined ? {} : { cachedInput: details.cachedInput }),
  ...(details.cacheWrite === undefined ? {} : { cacheWrite: details.cacheWrite }),
  ...(details.reasoning === undefined ? {} : { reasoning: details.reasoning })
})
