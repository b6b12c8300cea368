import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as TokenUsage from "../src/TokenUsage.ts"

describe("TokenUsage", () => {
  it("adds cache writes apart from cache reads; a count is present when either side has it", () => {
    const written = TokenUsage.make(1_000, 50, { cacheWrite: 900 })
    const read = TokenUsage.make(1_200, 60, { cachedInput: 900, cacheWrite: 200 })
    expect(TokenUsage.add(written, read)).toStrictEqual({
      input: 2_200,
      output: 110,
      total: 2_310,
      cachedInput: 900,
      cacheWrite: 1_100
    })
    expect(TokenUsage.add(TokenUsage.empty, TokenUsage.make(1, 1))).toStrictEqual({ input: 1, output: 1, total: 2 })
  })

  it("round-trips through JSON with its cache counts, and reads a usage recorded before cache writes were counted", () => {
    const usage = TokenUsage.make(10, 2, { cachedInput: 4, cacheWrite: 3, reasoning: 1 })
    const json = JSON.stringify(Schema.encodeSync(TokenUsage.TokenUsage)(usage))
    expect(Schema.decodeUnknownSync(TokenUsage.TokenUsage)(JSON.parse(json))).toStrictEqual(usage)
    expect(
      Schema.decodeUnknownSync(TokenUsage.TokenUsage)(JSON.parse(`{"input":5,"output":1,"total":6,"cachedInput":2}`))
    )
      .toStrictEqual({ input: 5, output: 1, total: 6, cachedInput: 2 })
    expect(Schema.decodeUnknownResult(TokenUsage.TokenUsage)({ input: 5, output: 1, total: 6, cacheWrite: -1 })._tag)
      .toBe("Failure")
  })
})
