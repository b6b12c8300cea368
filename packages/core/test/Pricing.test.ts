import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Pricing from "../src/Pricing.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import type { Turn } from "../src/Turn.ts"

const turn = (fields: Partial<Turn>): Turn => ({
  items: [],
  usage: TokenUsage.make(1_000_000, 100_000),
  stopReason: "stop",
  ...fields
})

describe("Pricing", () => {
  it.effect("prices input, cached input and output at their rates", () =>
    Effect.gen(function*() {
      // gpt-4.1: $2 input, $0.50 cached input, $8 output per million.
      const plain = yield* Pricing.cost("gpt-4.1", TokenUsage.make(1_000_000, 500_000))
      expect(plain).toBeCloseTo(2 + 4, 10)
      // 400k of the 1M input tokens came from the cache; 200k of the output were reasoning.
      const cached = yield* Pricing.cost(
        "gpt-4.1",
        TokenUsage.make(1_000_000, 500_000, { cachedInput: 400_000, reasoning: 200_000 })
      )
      expect(cached).toBeCloseTo(0.6 * 2 + 0.4 * 0.5 + 0.5 * 8, 10)
    }))

  it("clamps cached input to the input: a provider reporting more cached than input tokens is not paid back", () => {
    const price = { input: 2, cachedInput: 0.5, output: 8 }
    // 1M input, of which "3M" cached: billed as 1M cached, not as -2M fresh.
    expect(Pricing.costOf(price, TokenUsage.make(1_000_000, 0, { cachedInput: 3_000_000 }))).toBeCloseTo(0.5, 10)
    expect(Pricing.costOf(price, TokenUsage.make(1_000_000, 0, { cachedInput: 1_000_000 }))).toBeCloseTo(0.5, 10)
  })

  it("prices cache writes apart from cache reads: Claude's at 1.25 times input, others' at the input rate", () => {
    // claude-sonnet-4-5: $3 input, $0.30 cache reads, $3.75 cache writes, $15 output per million.
    const sonnet = Pricing.lookup(Pricing.builtIn, "claude-sonnet-4-5-20250929")!
    const usage = TokenUsage.make(100_000, 10_000, { cachedInput: 20_000, cacheWrite: 50_000 })
    // 30k fresh × 3 + 20k read × 0.30 + 50k written × 3.75 + 10k out × 15, per million.
    expect(Pricing.costOf(sonnet, usage)).toBeCloseTo(0.09 + 0.006 + 0.1875 + 0.15, 12)
    // OpenAI bills no writes: a write count is input like any other.
    const gpt = Pricing.lookup(Pricing.builtIn, "gpt-4.1")!
    expect(Pricing.costOf(gpt, usage)).toBeCloseTo((80_000 * 2 + 20_000 * 0.5 + 10_000 * 8) / 1e6, 12)
    // Reads and writes together are clamped to the input: nothing is paid back, reads first.
    expect(Pricing.costOf(sonnet, TokenUsage.make(1_000, 0, { cachedInput: 800, cacheWrite: 800 })))
      .toBeCloseTo((800 * 0.3 + 200 * 3.75) / 1e6, 12)
    for (const [model, price] of Object.entries(Pricing.builtIn)) {
      const tiers = price.longContext === undefined ? [price] : [price, price.longContext]
      for (const tier of tiers) {
        expect([model, tier.cacheWrite]).toStrictEqual([
          model,
          model.startsWith("claude-") ? tier.input * Pricing.anthropicCacheWriteFactor : undefined
        ])
      }
    }
  })

  it("switches to the long-context rates above the threshold", () => {
    const pro = Pricing.lookup(Pricing.builtIn, "gemini-2.5-pro")!
    expect(Pricing.costOf(pro, TokenUsage.make(200_000, 0))).toBeCloseTo(0.2 * 1.25, 10)
    expect(Pricing.costOf(pro, TokenUsage.make(300_000, 10_000, { cachedInput: 100_000 }))).toBeCloseTo(
      0.2 * 2.5 + 0.1 * 0.25 + 0.01 * 15,
      10
    )
  })

  it("matches dated snapshots to their model, and nothing else", () => {
    const table = Pricing.builtIn
    expect(Pricing.lookup(table, "gpt-4o-2024-08-06")).toBe(table["gpt-4o"])
    expect(Pricing.lookup(table, "gpt-4o-mini-2024-07-18")).toBe(table["gpt-4o-mini"])
    expect(Pricing.lookup(table, "gpt-5-mini-2025-08-07")).toBe(table["gpt-5-mini"])
    expect(Pricing.lookup(table, "o3-2025-04-16")).toBe(table["o3"])
    expect(Pricing.lookup(table, "gemini-2.0-flash-001")).toBe(table["gemini-2.0-flash"])
    expect(Pricing.lookup(table, "gemini-2.5-flash-preview-05-20")).toBe(table["gemini-2.5-flash"])
    expect(Pricing.lookup(table, "models/gemini-2.5-flash-lite")).toBe(table["gemini-2.5-flash-lite"])
    expect(Pricing.lookup(table, "gpt-4o-audio-preview")).toBeUndefined()
    expect(Pricing.lookup(table, "gpt-4o2024")).toBeUndefined()
    expect(Pricing.lookup(table, "claude-sonnet-4-20250514")).toBe(table["claude-sonnet-4"])
    expect(Pricing.lookup(table, "claude-opus-4-1-20250805")).toBe(table["claude-opus-4-1"])
    expect(Pricing.lookup(table, "claude-haiku-4-5-20251001")).toBe(table["claude-haiku-4-5"])
    expect(Pricing.lookup(table, "claude-sonnet-4-9")).toBeUndefined()
  })

  it("prices a Claude turn's cache reads at the cache rate, and Haiku 5.5's long prompts at its higher tier", () => {
    // 1M input of which 400k read from the cache, 100k output: Sonnet 4.6 at $3, $0.30 and $15.
    const sonnet = Pricing.lookup(Pricing.builtIn, "claude-sonnet-4-6")!
    expect(Pricing.costOf(sonnet, TokenUsage.make(1_000_000, 100_000, { cachedInput: 400_000 }))).toBeCloseTo(
      0.6 * 3 + 0.4 * 0.3 + 0.1 * 15,
      10
    )
    const haiku = Pricing.lookup(Pricing.builtIn, "claude-haiku-5-5")!
    expect(Pricing.costOf(haiku, TokenUsage.make(100_000, 10_000))).toBeCloseTo(0.1 * 0.1 + 0.01 * 0.5, 10)
    expect(Pricing.costOf(haiku, TokenUsage.make(100_001, 10_000))).toBeCloseTo(0.100001 * 0.5 + 0.01 * 2.5, 10)
  })

  it.effect("has no cost for an unknown model", () =>
    Effect.gen(function*() {
      expect(yield* Pricing.cost("my-local-llama", TokenUsage.make(10, 10))).toBeNull()
      expect(yield* Pricing.turnCost(turn({ model: "my-local-llama" }))).toBeNull()
      expect(yield* Pricing.turnCost(turn({}))).toBeNull()
      expect(yield* Pricing.isPriced("my-local-llama")).toBe(false)
      expect(yield* Pricing.isPriced("gpt-4o-2024-08-06")).toBe(true)
    }))

  it.effect("takes added and corrected prices from a layer, keeping the rest", () =>
    Effect.gen(function*() {
      const usage = TokenUsage.make(1_000_000, 1_000_000)
      const layer = Pricing.layer({
        "my-local-llama": { input: 0.01, cachedInput: 0.01, output: 0.02 },
        "gpt-4o": { input: 1, cachedInput: 0.5, output: 4 }
      })
      const [llama, gpt4o, mini] = yield* Effect.all([
        Pricing.cost("my-local-llama", usage),
        Pricing.cost("gpt-4o-2024-11-20", usage),
        Pricing.cost("gpt-4o-mini", usage)
      ]).pipe(Effect.provide(layer))
      expect(llama).toBeCloseTo(0.03, 10)
      expect(gpt4o).toBeCloseTo(5, 10)
      expect(mini).toBeCloseTo(0.15 + 0.6, 10)
      const replaced = yield* Pricing.cost("gpt-4o-mini", usage).pipe(
        Effect.provide(Pricing.layerTable({ "other": { input: 1, cachedInput: 1, output: 1 } }))
      )
      expect(replaced).toBeNull()
    }))

  it.effect("prefers the cost the provider reported", () =>
    Effect.gen(function*() {
      expect(yield* Pricing.turnCost(turn({ model: "gpt-4.1", cost: 0.42 }))).toBe(0.42)
      expect(yield* Pricing.turnCost(turn({ model: "gpt-4.1" }))).toBeCloseTo(2 + 0.8, 10)
    }))
})
