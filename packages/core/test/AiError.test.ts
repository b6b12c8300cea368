import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Duration, Schema } from "effect"
import * as AiError from "../src/AiError.ts"

const provider = "test"

// One of each error, with what a retry and a fallback make of it.
const samples: ReadonlyArray<readonly [AiError.AiError, { readonly retryable: boolean; readonly provider: boolean }]> =
  [
    [new AiError.AuthFailed({ provider, status: 401, message: "bad key" }), { retryable: false, provider: true }],
    [new AiError.RateLimited({ provider, message: "slow down", retryAfter: Duration.seconds(2) }), {
      retryable: true,
      provider: true
    }],
    [new AiError.Timeout({ provider, message: "too slow" }), { retryable: true, provider: true }],
    [new AiError.ContextLengthExceeded({ provider, message: "too long" }), { retryable: false, provider: false }],
    [new AiError.InvalidRequest({ provider, status: 400, message: "bad field" }), {
      retryable: false,
      provider: false
    }],
    [new AiError.Unavailable({ provider, status: 503, message: "down" }), { retryable: true, provider: true }],
    [new AiError.MalformedEvent({ provider, event: "delta", message: "not JSON" }), {
      retryable: false,
      provider: false
    }],
    [new AiError.QuotaExceeded({ provider, status: 429, message: "no credit" }), { retryable: false, provider: true }],
    [new AiError.IncompleteTurn({ message: "cut off" }), { retryable: false, provider: false }]
  ]

describe("AiError", () => {
  it("has one sample per error of the union", () => {
    expect(new Set(samples.map(([error]) => error._tag)).size).toBe(AiError.AiError.members.length)
  })

  it("each error says whether a retry may cure it and whether it is the provider's", () => {
    for (const [error, expected] of samples) {
      expect([error._tag, error.isRetryable, error.isProviderFailure]).toStrictEqual([
        error._tag,
        expected.retryable,
        expected.provider
      ])
      expect(AiError.isRetryable(error)).toBe(expected.retryable)
      expect(AiError.isProviderFailure(error)).toBe(expected.provider)
    }
  })

  it("a retryable error is a provider failure", () => {
    for (const [error] of samples) if (error.isRetryable) expect(error.isProviderFailure).toBe(true)
  })

  it("an error decoded from JSON answers the same", () => {
    const json = Schema.toCodecJson(AiError.AiError)
    for (const [error, expected] of samples) {
      const decoded = Schema.decodeUnknownSync(json)(JSON.parse(JSON.stringify(Schema.encodeSync(json)(error))))
      expect([decoded.isRetryable, decoded.isProviderFailure]).toStrictEqual([expected.retryable, expected.provider])
    }
  })

  it("the guards narrow to the classes that say yes", () => {
    expectTypeOf<AiError.Retryable>().toEqualTypeOf<AiError.RateLimited | AiError.Timeout | AiError.Unavailable>()
    expectTypeOf<AiError.ProviderFailure>().toEqualTypeOf<
      AiError.AuthFailed | AiError.RateLimited | AiError.Timeout | AiError.Unavailable | AiError.QuotaExceeded
    >()
  })
})
