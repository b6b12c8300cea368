/**
 * A model turn described independently of any wire format, for the provider
 * conformance suite: a provider's fixture renders it in the provider's
 * documented stream format, and the suite checks the deltas and the `Turn` the
 * provider decodes from it.
 *
 * @since 0.1.0
 */
import type * as TokenUsage from "@agentloop/core/TokenUsage"

/**
 * A function call of a turn; `id` is the call id the wire carries.
 *
 * @since 0.1.0
 * @category models
 */
export interface Call {
  readonly id: string
  readonly name: string
  /** The JSON text of the arguments, a JSON object. */
  readonly arguments: string
}

/**
 * A usage with every count the conformance suite checks: all of
 * `TokenUsage`'s but cache writes, which only some providers report.
 *
 * @since 0.2.0
 * @category models
 */
export type Usage = Required<Omit<TokenUsage.TokenUsage, "cacheWrite">>

/**
 * What a turn holds, in the order the model writes it: reasoning, then text, then calls.
 *
 * @since 0.1.0
 * @category models
 */
export interface WireTurn {
  /** The response id on the wire. */
  readonly id: string
  /** The pieces of the reasoning the provider shows (summaries or thoughts). */
  readonly reasoning?: ReadonlyArray<string> | undefined
  /** The pieces of the answer. */
  readonly text?: ReadonlyArray<string> | undefined
  readonly calls?: ReadonlyArray<Call> | undefined
  /** The usage the provider must report (a fixture writes it in its wire's terms). */
  readonly usage: Usage
}

/**
 * Builds a usage whose `total` is `input + output`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const usage = (
  input: number,
  output: number,
  cachedInput = 0,
  reasoning = 0
): Usage => ({
  input,
  output,
  total: input + output,
  cachedInput,
  reasoning
})

/**
 * A text-only turn.
 *
 * @example
 * ```ts
 * import { WireTurn } from "@agentloop/testing"
 *
 * // A turn as a provider's wire streams it, for a conformance fixture to write in its own format.
 * const turn = WireTurn.text("Hel", "lo")
 * console.log(turn.text, turn.usage.total) // [ 'Hel', 'lo' ] 17
 * console.log(WireTurn.usage(10, 2).total) // 12
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (...pieces: ReadonlyArray<string>): WireTurn => ({
  id: "resp_conformance",
  text: pieces,
  usage: usage(12, 5)
})
