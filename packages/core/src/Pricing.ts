/**
 * What tokens cost: a table of model prices in USD per million tokens, and the
 * cost of a usage or a turn.
 *
 * `Pricing` is a `Context.Reference` whose default is {@link builtIn}; an
 * application adds or corrects prices with {@link layer}, or replaces the whole
 * table with {@link layerTable}. A cost the provider reported on the turn
 * (`Turn.cost`) always wins over the table.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Cost } from "./Cost.ts"
import type { TokenUsage } from "./TokenUsage.ts"
import type { Turn } from "./Turn.ts"

/**
 * USD per million tokens. `cachedInput` is the rate for input tokens read
 * from the prompt cache, `cacheWrite` the rate for those written to it (the
 * input rate when absent: OpenAI and Gemini bill no writes).
 *
 * @since 0.1.0
 * @category models
 */
export interface Rates {
  readonly input: number
  readonly cachedInput: number
  readonly output: number
  readonly cacheWrite?: number | undefined
}

/**
 * A model's price. `longContext`, when present, replaces the rates for a
 * request whose input is longer than `threshold` tokens (Gemini Pro models,
 * Claude Sonnet 4 and 4.5, Claude Haiku 5.5).
 *
 * @since 0.1.0
 * @category models
 */
export interface Price extends Rates {
  readonly longContext?: (Rates & { readonly threshold: number }) | undefined
}

/**
 * Prices by model id.
 *
 * @since 0.1.0
 * @category models
 */
export type Table = { readonly [model: string]: Price }

const rates = (input: number, cachedInput: number, output: number): Rates => ({ input, cachedInput, output })

/**
 * What Anthropic bills for writing a 5-minute prompt-cache entry, as a multiple of the input rate.
 *
 * @since 0.2.0
 * @category prices
 */
export const anthropicCacheWriteFactor = 1.25

/** A Claude model's rates: writes to the (5-minute) prompt cache at 1.25 times the input rate. */
const claude = (input: number, cachedInput: number, output: number): Rates => ({
  input,
  cachedInput,
  output,
  cacheWrite: input * anthropicCacheWriteFactor
})

/**
 * The built-in prices: standard tier, text tokens, USD per million tokens.
 *
 * OpenAI figures are those of https://openai.com/api/pricing (gpt-5 family,
 * gpt-4.1 family, gpt-4o, o-series) as published in 2025, with the gpt-5.1,
 * gpt-5.2, gpt-5.4 and gpt-5.5 families as listed there in 2026. Gemini figures
 * are those of https://ai.google.dev/gemini-api/docs/pricing as published in
 * late 2025, with the over-200k-token tier of the Pro models. Collected
 * 2026-06 from those pages and secondary summaries of them. Claude figures are
 * those of https://platform.claude.com/docs/en/about-claude/pricing and the
 * models' overview pages, collected 2026-11, with the over-200k-token tier of
 * Sonnet 4 and 4.5 and the over-100k-token tier of Haiku 5.5; `cachedInput` is
 * the cache-read rate and `cacheWrite` the rate of a 5-minute cache write
 * (1.25 times the input rate; the 1-hour cache, at twice the input rate, is
 * not asked for by `@agentloop/anthropic`). Prices change, so check them before
 * billing anyone, and correct them with {@link layer}. Models without a cache
 * discount list their input rate as `cachedInput`.
 *
 * @since 0.1.0
 * @category constants
 */
export const builtIn: Table = {
  "gpt-5.5": rates(5, 0.5, 30),
  "gpt-5.4": rates(2.5, 0.25, 15),
  "gpt-5.4-mini": rates(0.75, 0.075, 4.5),
  "gpt-5.4-nano": rates(0.2, 0.02, 1.25),
  "gpt-5.2": rates(1.75, 0.175, 14),
  "gpt-5.1": rates(1.25, 0.125, 10),
  "gpt-5": rates(1.25, 0.125, 10),
  "gpt-5-chat-latest": rates(1.25, 0.125, 10),
  "gpt-5-mini": rates(0.25, 0.025, 2),
  "gpt-5-nano": rates(0.05, 0.005, 0.4),
  "gpt-5-pro": rates(15, 15, 120),
  "gpt-4.1": rates(2, 0.5, 8),
  "gpt-4.1-mini": rates(0.4, 0.1, 1.6),
  "gpt-4.1-nano": rates(0.1, 0.025, 0.4),
  "gpt-4o": rates(2.5, 1.25, 10),
  "gpt-4o-mini": rates(0.15, 0.075, 0.6),
  "o4-mini": rates(1.1, 0.275, 4.4),
  "o3": rates(2, 0.5, 8),
  "o3-pro": rates(20, 20, 80),
  "o3-mini": rates(1.1, 0.55, 4.4),
  "o1": rates(15, 7.5, 60),
  "gemini-3-pro-preview": {
    ...rates(2, 0.2, 12),
    longContext: { threshold: 200_000, ...rates(4, 0.4, 18) }
  },
  "gemini-2.5-pro": {
    ...rates(1.25, 0.125, 10),
    longContext: { threshold: 200_000, ...rates(2.5, 0.25, 15) }
  },
  "gemini-2.5-flash": rates(0.3, 0.03, 2.5),
  "gemini-2.5-flash-lite": rates(0.1, 0.01, 0.4),
  "gemini-2.0-flash": rates(0.1, 0.025, 0.4),
  "gemini-2.0-flash-lite": rates(0.075, 0.075, 0.3),
  "claude-fable-5-1": claude(10, 0.25, 50),
  "claude-fable-5": claude(10, 1, 50),
  "claude-opus-5-5": claude(4, 0.2, 20),
  "claude-opus-5": claude(5, 0.5, 25),
  "claude-opus-4-8": claude(5, 0.5, 25),
  "claude-opus-4-7": claude(5, 0.5, 25),
  "claude-opus-4-6": claude(5, 0.5, 25),
  "claude-opus-4-5": claude(5, 0.5, 25),
  "claude-opus-4-1": claude(15, 1.5, 75),
  "claude-opus-4": claude(15, 1.5, 75),
  "claude-opus-4-0": claude(15, 1.5, 75),
  "claude-sonnet-5-5": claude(2, 0.1, 10),
  "claude-sonnet-5": claude(2, 0.2, 10),
  "claude-sonnet-4-6": claude(3, 0.3, 15),
  "claude-sonnet-4-5": { ...claude(3, 0.3, 15), longContext: { threshold: 200_000, ...claude(6, 0.6, 22.5) } },
  "claude-sonnet-4": { ...claude(3, 0.3, 15), longContext: { threshold: 200_000, ...claude(6, 0.6, 22.5) } },
  "claude-sonnet-4-0": { ...claude(3, 0.3, 15), longContext: { threshold: 200_000, ...claude(6, 0.6, 22.5) } },
  "claude-haiku-5-5": { ...claude(0.1, 0.01, 0.5), longContext: { threshold: 100_000, ...claude(0.5, 0.05, 2.5) } },
  "claude-haiku-4-5": claude(1, 0.1, 5)
}

/**
 * The price table in use. Its default is {@link builtIn}.
 *
 * @since 0.1.0
 * @category services
 */
export const Pricing: Context.Reference<Table> = Context.Reference<Table>("@agentloop/core/Pricing", {
  defaultValue: () => builtIn
})

/**
 * Adds prices to the built-in table, or corrects some of them.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (prices: Table): Layer.Layer<never> => Layer.succeed(Pricing, { ...builtIn, ...prices })

/**
 * Replaces the whole table: models not in `table` have no price.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerTable = (table: Table): Layer.Layer<never> => Layer.succeed(Pricing, table)

// What may follow a model id in the id of one of its snapshots: a date
// (2024-08-06, or 20250514 as Anthropic writes it), a version (001, 0125),
// "latest", or a preview/experimental tag.
const snapshotSuffix = /^(\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4}|latest|(preview|exp)(-\d{2}-\d{2}|-\d{2}-\d{4}|-\d{4})?)$/

/**
 * The price of a model: by exact id, else by the longest id in the table of
 * which `model` is a dated snapshot ("gpt-4o-2024-08-06" is priced as
 * "gpt-4o", "gemini-2.0-flash-001" as "gemini-2.0-flash",
 * "claude-sonnet-4-20250514" as "claude-sonnet-4"). A Gemini
 * `models/` prefix is ignored. Another variant ("gpt-4o-audio-preview") is not
 * a snapshot and has no price unless listed.
 *
 * @since 0.1.0
 * @category getters
 */
export const lookup = (table: Table, model: string): Price | undefined => {
  const id = model.startsWith("models/") ? model.slice("models/".length) : model
  const exact = table[id]
  if (exact !== undefined) return exact
  let best: string | undefined
  for (const key of Object.keys(table)) {
    if (
      id.startsWith(`${key}-`) && snapshotSuffix.test(id.slice(key.length + 1)) &&
      (best === undefined || key.length > best.length)
    ) best = key
  }
  return best === undefined ? undefined : table[best]
}

/**
 * The cost in USD of a usage at a price. Input tokens read from the prompt
 * cache (`cachedInput`) and written to it (`cacheWrite`) are part of
 * `usage.input` and billed at their own rates, the rest at the input rate;
 * reasoning tokens are part of `usage.output`. Price each turn on its own: the
 * long-context tier depends on the input of one request, not of a run.
 *
 * @since 0.1.0
 * @category prices
 */
export const costOf = (price: Price, usage: TokenUsage): number => {
  const tier = price.longContext !== undefined && usage.input > price.longContext.threshold ? price.longContext : price
  const cached = Math.min(usage.cachedInput ?? 0, usage.input)
  const written = Math.min(usage.cacheWrite ?? 0, usage.input - cached)
  const fresh = usage.input - cached - written
  return (fresh * tier.input + cached * tier.cachedInput + written * (tier.cacheWrite ?? tier.input) +
    usage.output * tier.output) / 1_000_000
}

/**
 * The cost in USD of a usage of `model`, from the `Pricing` table in context.
 * `null` when the model has no price: an unknown cost is not zero, and a
 * budget must not treat it as free.
 *
 * @example
 * ```ts
 * import { Pricing, TokenUsage } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   // A model of your own, priced per million tokens; built-in prices stay.
 *   const cost = yield* Pricing.cost("my-finetune", TokenUsage.make(1_000_000, 100_000))
 *   console.log(cost) // 3
 *   console.log(yield* Pricing.isPriced("unknown-model")) // false
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Pricing.layer({ "my-finetune": { input: 2, output: 10, cachedInput: 0.5 } }))))
 * ```
 *
 * @since 0.1.0
 * @category prices
 */
export const cost = (model: string, usage: TokenUsage): Effect.Effect<Cost> =>
  Effect.map(Pricing, (table) => {
    const price = lookup(table, model)
    return price === undefined ? null : costOf(price, usage)
  })

/**
 * Whether the `Pricing` table in context has a price for `model`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPriced = (model: string): Effect.Effect<boolean> =>
  Effect.map(Pricing, (table) => lookup(table, model) !== undefined)

/**
 * The cost in USD of a turn: the provider's own `turn.cost` when it reported
 * one, else the turn's usage priced by its model. `null` when neither is
 * known (no reported cost and no model, or a model without a price).
 *
 * @since 0.1.0
 * @category prices
 */
export const turnCost = (turn: Turn): Effect.Effect<Cost> => {
  if (turn.cost !== undefined) return Effect.succeed(turn.cost)
  if (turn.model === undefined) return Effect.succeed(null)
  return cost(turn.model, turn.usage)
}
