import { AiError, ProviderStream } from "@agentloop/core"
import type { Provider } from "@agentloop/core"
import { ProviderHarness, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Schedule } from "effect"
import { GeminiError } from "../src/index.ts"
import { chunk, conformance, frames } from "./fixtures.ts"

const provider = "gemini"

const errorInfo = (reason: string, domain = "googleapis.com") => ({
  "@type": "type.googleapis.com/google.rpc.ErrorInfo",
  reason,
  domain,
  metadata: { service: "generativelanguage.googleapis.com" }
})

const localized = (message: string) => ({
  "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
  locale: "en-US",
  message
})

const retryInfo = (retryDelay: unknown) => ({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay })

const help = {
  "@type": "type.googleapis.com/google.rpc.Help",
  links: [{
    description: "Learn more about Gemini API quotas",
    url: "https://ai.google.dev/gemini-api/docs/rate-limits"
  }]
}

const quotaFailure = (...quotaIds: ReadonlyArray<string>) => ({
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: quotaIds.map((quotaId) => ({
    quotaMetric: quotaId.startsWith("GenerateContentInputTokens")
      ? "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count"
      : "generativelanguage.googleapis.com/generate_content_free_tier_requests",
    quotaId,
    quotaDimensions: { location: "global", model: "gemini-2.5-pro" }
  }))
})

const statuses: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  403: "PERMISSION_DENIED",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE"
}

/** Google's error object, `google.rpc.Status` as JSON. */
const status = (code: number, message: string, details?: unknown) => ({
  code,
  message,
  status: statuses[code] ?? "UNKNOWN",
  ...(details === undefined ? {} : { details })
})

/** An HTTP error answer with Google's body `{ error }`. */
const googleError = (code: number, message: string, details?: unknown, headers?: Record<string, string>) =>
  ProviderServer.status(code, { error: status(code, message, details) }, headers)

const invalidKey = "API key not valid. Please pass a valid API key."
const expiredKey = "API key expired. Please renew the API key."
const overQuota = "You exceeded your current quota, please check your plan and billing details. " +
  "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
const perDayQuota = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
const perMinuteQuotas = [
  "GenerateContentInputTokensPerModelPerMinute-FreeTier",
  "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
]

/** Answers each turn with the next of `replies`, and returns each turn's error and how many requests it took. */
const failures = (replies: ReadonlyArray<ProviderServer.Reply>, settings?: Partial<Provider.Settings>) =>
  ProviderHarness.run(conformance, (server, model) =>
    Effect.gen(function*() {
      yield* server.reply(...replies)
      const out: Array<{ readonly error: AiError.AiError; readonly requests: number }> = []
      for (const _ of replies) {
        const before = (yield* server.requests).length
        const error = ProviderHarness.failed(yield* ProviderHarness.turn(model))
        out.push({ error, requests: (yield* server.requests).length - before })
      }
      return out
    }), settings)

const errorsOf = (replies: ReadonlyArray<ProviderServer.Reply>) =>
  Effect.map(failures(replies), (results) => results.map(({ error }) => error))

const waitOf = (error: AiError.AiError): number | undefined =>
  (error._tag === "RateLimited" || error._tag === "Unavailable") && error.retryAfter !== undefined
    ? Duration.toMillis(error.retryAfter)
    : undefined

describe("GeminiError: a refused API key", () => {
  it.effect("is AuthFailed with Google's status, from an object or an array body, and never retried", () =>
    Effect.gen(function*() {
      const results = yield* failures([
        googleError(400, invalidKey, [errorInfo("API_KEY_INVALID"), localized(invalidKey)]),
        // Google's streaming methods answer with the error in an array; an expired key says API_KEY_INVALID too.
        ProviderServer.status(400, [{
          error: status(400, expiredKey, [errorInfo("API_KEY_INVALID"), localized(expiredKey)])
        }]),
        googleError(403, "Requests to this API generativelanguage.googleapis.com are blocked.", [
          errorInfo("API_KEY_SERVICE_BLOCKED")
        ])
      ], { retryPolicy: Schedule.recurs(2) })
      expect(results).toStrictEqual([
        { error: new AiError.AuthFailed({ provider, status: 400, message: invalidKey }), requests: 1 },
        { error: new AiError.AuthFailed({ provider, status: 400, message: expiredKey }), requests: 1 },
        {
          error: new AiError.AuthFailed({
            provider,
            status: 403,
            message: "Requests to this API generativelanguage.googleapis.com are blocked."
          }),
          requests: 1
        }
      ])
    }))

  it.effect("only an ErrorInfo of googleapis.com with an API_KEY_ reason says so; another 400 is InvalidRequest", () =>
    Effect.gen(function*() {
      const errors = yield* errorsOf([
        googleError(400, invalidKey),
        googleError(400, "Request contains an invalid argument.", [errorInfo("API_KEY_INVALID", "example.com")]),
        googleError(400, "User location is not supported for the API use.", [errorInfo("LOCATION_NOT_SUPPORTED")]),
        googleError(400, "Request contains an invalid argument.", [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo"
        }])
      ])
      expect(errors).toStrictEqual([
        new AiError.InvalidRequest({ provider, status: 400, message: invalidKey }),
        new AiError.InvalidRequest({ provider, status: 400, message: "Request contains an invalid argument." }),
        new AiError.InvalidRequest({
          provider,
          status: 400,
          message: "User location is not supported for the API use."
        }),
        new AiError.InvalidRequest({ provider, status: 400, message: "Request contains an invalid argument." })
      ])
    }))
})

describe("GeminiError: quotas", () => {
  it.effect("a daily quota, or a plan with no quota for the model (limit: 0), is QuotaExceeded and never retried", () =>
    Effect.gen(function*() {
      const noQuota = "You exceeded your current quota, please check your plan and billing details. " +
        "To monitor your current usage, head to: https://ai.dev/rate-limit. \n" +
        "* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, " +
        "limit: 0, model: gemini-2.5-pro\n" +
        "* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, " +
        "limit: 0, model: gemini-2.5-pro\nPlease retry in 20.04466179s."
      const results = yield* failures([
        // As Google sends it: per-minute and per-day violations at once, a Help link, and a RetryInfo that cannot help.
        googleError(429, overQuota, [quotaFailure(...perMinuteQuotas, perDayQuota), help, retryInfo("22s")]),
        googleError(429, noQuota, [help, quotaFailure(...perMinuteQuotas), retryInfo("20s")]),
        // No details at all: the message alone says it.
        googleError(429, noQuota)
      ], { retryPolicy: Schedule.recurs(2) })
      expect(results).toStrictEqual([
        { error: new AiError.QuotaExceeded({ provider, status: 429, message: overQuota }), requests: 1 },
        { error: new AiError.QuotaExceeded({ provider, status: 429, message: noQuota }), requests: 1 },
        { error: new AiError.QuotaExceeded({ provider, status: 429, message: noQuota }), requests: 1 }
      ])
    }))

  it.effect("a per-minute quota, a limit above 0 or a bare 429 is RateLimited, with the RetryInfo delay", () =>
    Effect.gen(function*() {
      const perMinute = `${overQuota}\n* Quota exceeded for metric: ` +
        "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\n" +
        "Please retry in 38.2s."
      const errors = yield* errorsOf([
        googleError(429, perMinute, [quotaFailure(...perMinuteQuotas), help, retryInfo("38s")]),
        googleError(429, "Resource has been exhausted (e.g. check quota)."),
        googleError(429, "limit: 100 per minute", [{
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: "PerDay"
        }]),
        googleError(429, "over", [{
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [{ quotaId: 5 }]
        }]),
        // A daily metric without a daily quota id: the id decides.
        googleError(429, "over", [{
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_requests_per_model_per_day" }]
        }])
      ])
      expect(errors).toStrictEqual([
        new AiError.RateLimited({ provider, message: perMinute, retryAfter: Duration.seconds(38) }),
        new AiError.RateLimited({ provider, message: "Resource has been exhausted (e.g. check quota)." }),
        new AiError.RateLimited({ provider, message: "limit: 100 per minute" }),
        new AiError.RateLimited({ provider, message: "over" }),
        new AiError.RateLimited({ provider, message: "over" })
      ])
    }))

  it.effect("a quota error inside the stream reads the same", () =>
    Effect.gen(function*() {
      const errors = yield* errorsOf([
        ProviderServer.sse(frames({ error: status(429, overQuota, [quotaFailure(perDayQuota)]) })),
        ProviderServer.sse(frames({ error: status(400, invalidKey, [errorInfo("API_KEY_INVALID")]) })),
        ProviderServer.sse(frames({ error: status(503, "The model is overloaded.", [retryInfo("12.5s")]) })),
        ProviderServer.sse(frames({ error: status(503, "The model is overloaded.", "not an array") }))
      ])
      expect(errors).toStrictEqual([
        new AiError.QuotaExceeded({ provider, status: 429, message: overQuota }),
        new AiError.AuthFailed({ provider, status: 400, message: invalidKey }),
        new AiError.Unavailable({
          provider,
          status: 503,
          message: "The model is overloaded.",
          retryAfter: Duration.millis(12500)
        }),
        new AiError.Unavailable({ provider, status: 503, message: "The model is overloaded." })
      ])
    }))
})

describe("GeminiError: RetryInfo", () => {
  it.effect("is the retryAfter of a 429 and a 5xx, fractional seconds rounded up to the millisecond", () =>
    Effect.gen(function*() {
      const errors = yield* errorsOf([
        googleError(429, "slow down", [retryInfo("38s")]),
        googleError(429, "slow down", [retryInfo("1.5s")]),
        googleError(429, "slow down", [help, retryInfo("45.837906927s")]),
        googleError(429, "slow down", [retryInfo("0s")]),
        googleError(503, "The model is overloaded. Please try again later.", [retryInfo("30s")]),
        googleError(500, "An internal error has occurred.", [retryInfo("2s")]),
        // A 400 has nothing to wait for.
        googleError(400, "Invalid JSON payload received.", [retryInfo("5s")])
      ])
      expect(errors.map((error) => [error._tag, waitOf(error)])).toStrictEqual([
        ["RateLimited", 38_000],
        ["RateLimited", 1_500],
        ["RateLimited", 45_838],
        ["RateLimited", 0],
        ["Unavailable", 30_000],
        ["Unavailable", 2_000],
        ["InvalidRequest", undefined]
      ])
      expect(errors[4]).toStrictEqual(
        new AiError.Unavailable({
          provider,
          status: 503,
          message: "The model is overloaded. Please try again later.",
          retryAfter: Duration.seconds(30)
        })
      )
    }))

  it.effect("with a Retry-After header too, the longer wait wins", () =>
    Effect.gen(function*() {
      const errors = yield* errorsOf([
        googleError(429, "slow down", [retryInfo("38s")], { "retry-after": "60" }),
        googleError(429, "slow down", [retryInfo("38s")], { "retry-after": "5" }),
        googleError(503, "overloaded", [retryInfo("1.5s")], { "retry-after": "1" }),
        googleError(429, "slow down", [retryInfo("abc")], { "retry-after": "7" }),
        googleError(429, "slow down", undefined, { "retry-after": "7" })
      ])
      expect(errors.map(waitOf)).toStrictEqual([60_000, 38_000, 1_500, 7_000, 7_000])
    }))

  it.effect("a delay that is not a protobuf Duration, negative, or longer than a day is no delay; the details are read one by one", () =>
    Effect.gen(function*() {
      const hostile: ReadonlyArray<unknown> = [
        "99999999999s",
        "-3s",
        "abc",
        "38",
        "38S",
        " 38s",
        "38s ",
        "1e3s",
        "0x10s",
        "Infinitys",
        "NaNs",
        ".5s",
        "1.s",
        "1.0000000001s",
        "86400.001s",
        "9".repeat(20_000) + "s",
        38,
        null,
        { seconds: 38 }
      ]
      const errors = yield* errorsOf(hostile.map((delay) => googleError(429, "slow down", [retryInfo(delay)])))
      expect(errors.map(waitOf)).toStrictEqual(hostile.map(() => undefined))
      for (const error of errors) {
        expect(error).toStrictEqual(new AiError.RateLimited({ provider, message: "slow down" }))
      }

      const shapes = yield* errorsOf([
        googleError(429, "slow down", "not an array"),
        googleError(429, "slow down", { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "9s" }),
        googleError(429, "slow down", null),
        // Broken entries are skipped, and the good one after them is read.
        googleError(429, "slow down", [
          null,
          5,
          "x",
          [],
          {},
          retryInfo(5),
          retryInfo("-1s"),
          retryInfo("9s"),
          retryInfo("3s")
        ]),
        googleError(429, "slow down", [retryInfo("86400s")]),
        // A body that is not Google's error is read by its status.
        ProviderServer.status(429, { error: { code: "429", message: "slow down", details: [retryInfo("9s")] } }),
        ProviderServer.status(429, "slow down")
      ])
      expect(shapes.map((error) => [error._tag, waitOf(error)])).toStrictEqual([
        ["RateLimited", undefined],
        ["RateLimited", undefined],
        ["RateLimited", undefined],
        ["RateLimited", 9_000],
        ["RateLimited", 86_400_000],
        ["RateLimited", undefined],
        ["RateLimited", undefined]
      ])
    }))

  it.effect("a retry waits the RetryInfo delay", () =>
    ProviderHarness.run(conformance, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(
          googleError(429, "slow down", [retryInfo("20s")]),
          ProviderServer.sse(frames(chunk([{ text: "ok" }], { finishReason: "STOP" })))
        )
        const fiber = yield* Effect.forkChild(ProviderHarness.turn(model))
        const { exit, seconds } = yield* ProviderHarness.driveClock(fiber, "1 minute")
        expect(Exit.isSuccess(exit) && exit.value.error === undefined).toBe(true)
        expect(seconds).toBeGreaterThanOrEqual(20)
        expect(seconds).toBeLessThan(25)
        expect(yield* server.requests).toHaveLength(2)
      }), { retryPolicy: Schedule.recurs(1) }))

  it.live("a delay past maxRetryAfter fails at once with it; one refused as hostile does not hold the retry", () =>
    Effect.gen(function*() {
      const results = yield* failures([
        googleError(503, "overloaded", [retryInfo("3600s")]),
        googleError(429, "slow down", [retryInfo("99999999999s")]),
        googleError(429, "still slow", [retryInfo("0.001s")])
      ], { retryPolicy: Schedule.recurs(1) })
      expect(results[0]).toStrictEqual({
        error: new AiError.Unavailable({ provider, status: 503, message: "overloaded", retryAfter: Duration.hours(1) }),
        requests: 1
      })
      // The hostile delay is dropped: the policy retries at once, and the retry gets the next answer.
      expect(results[1]).toStrictEqual({
        error: new AiError.RateLimited({ provider, message: "still slow", retryAfter: Duration.millis(1) }),
        requests: 2
      })
    }))
})

describe("GeminiError: a huge message", () => {
  it.effect("that fits the error body is read, and cut short in the error", () =>
    Effect.gen(function*() {
      const long = "API key not valid. " + "x".repeat(50_000)
      const [error] = yield* errorsOf([googleError(400, long, [errorInfo("API_KEY_INVALID")])])
      expect(error!._tag).toBe("AuthFailed")
      expect(error!.message.startsWith("API key not valid. xxx")).toBe(true)
      expect(error!.message.length).toBeLessThan(ProviderStream.maxMessageLength + 100)
    }))

  it.effect("past the error body's bound leaves the details unread: the status decides, the message is cut short", () =>
    Effect.gen(function*() {
      const huge = "x".repeat(1_000_000)
      const errors = yield* errorsOf([
        googleError(400, huge, [errorInfo("API_KEY_INVALID")]),
        googleError(429, huge, [quotaFailure(perDayQuota), retryInfo("3600s")])
      ])
      expect(errors.map((error) => [error._tag, waitOf(error)])).toStrictEqual([
        ["InvalidRequest", undefined],
        ["RateLimited", undefined]
      ])
      for (const error of errors) expect(error.message.length).toBeLessThan(ProviderStream.maxMessageLength + 100)
    }))
})

describe("GeminiError.parseRetryDelay", () => {
  it("reads protobuf Durations up to a day, and nothing else", () => {
    const read = (text: string) => {
      const delay = GeminiError.parseRetryDelay(text)
      return delay === undefined ? undefined : Duration.toMillis(delay)
    }
    expect([read("38s"), read("1.5s"), read("0.000000001s"), read("45.837906927s"), read("86400s"), read("0s")])
      .toStrictEqual([38_000, 1_500, 1, 45_838, 86_400_000, 0])
    for (
      const text of ["86400.000000001s", "99999999999s", "-3s", "-0s", "abc", "38", "", "s", "1e3s", "1.5 s", "1,5s"]
    ) {
      expect([text, read(text)]).toStrictEqual([text, undefined])
    }
    expect(Duration.toMillis(GeminiError.maxRetryDelay)).toBe(86_400_000)
  })

  it("fromObject reads an error event with no code as a server error", () => {
    expect(GeminiError.fromObject({ message: "boom" })).toStrictEqual(
      new AiError.Unavailable({ provider, status: 500, message: "boom" })
    )
    expect(GeminiError.fromObject({ status: "INTERNAL", details: [retryInfo("2s")] })).toStrictEqual(
      new AiError.Unavailable({ provider, status: 500, message: "INTERNAL", retryAfter: Duration.seconds(2) })
    )
  })
})
