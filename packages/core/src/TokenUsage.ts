/**
 * Token counts of a turn or of a whole run.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const Count = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/**
 * Tokens a model read (`input`, of which `cachedInput` came from its prompt cache)
 * and wrote (`output`, of which `reasoning` were hidden reasoning).
 */
export const TokenUsage = Schema.Struct({
  input: Count,
  output: Count,
  total: Count,
  cachedInput: Schema.optionalKey(Count),
  reasoning: Schema.optionalKey(Count)
})
export type TokenUsage = typeof TokenUsage.Type

/** No tokens: the identity of {@link add}. */
export const empty: TokenUsage = { input: 0, output: 0, total: 0 }

/** Builds a usage from input and output counts; `total` is their sum. */
export const make = (input: number, output: number, details?: {
  readonly cachedInput?: number | undefined
  readonly reasoning?: number | undefined
}): TokenUsage => withDetails({ input, output, total: input + output }, details?.cachedInput, details?.reasoning)

/** Adds two usages field by field; an optional count is present when either side has it. */
export const add = (self: TokenUsage, that: TokenUsage): TokenUsage =>
  withDetails(
    { input: self.input + that.input, output: self.output + that.output, total: self.total + that.total },
    sumOptional(self.cachedInput, that.cachedInput),
    sumOptional(self.reasoning, that.reasoning)
  )

const sumOptional = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : a + b

const withDetails = (
  base: { readonly input: number; readonly output: number; readonly total: number },
  cachedInput: number | undefined,
  reasoning: number | undefined
): TokenUsage => ({
  ...base,
  ...(cachedInput === undefined ? {} : { cachedInput }),
  ...(reasoning === undefined ? {} : { reasoning })
})
