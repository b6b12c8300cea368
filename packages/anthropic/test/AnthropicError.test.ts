import { AiError, Item, ProviderRetry } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { AnthropicError } from "../src/index.ts"
import { event, messageStart, textBlock, textStream } from "./fixtures.ts"
import { completed, failing, run, turn } from "./harness.ts"

const hello = [Item.userMessage("Say hello")]

/** An error body as the API sends it. */
const errorBody = (type: string, message: string) => ({
  type: "error",
  error: { type, message },
  request_id: "req_011"
})

describe("AnthropicError", () => {
  it.effect("maps HTTP errors by their type where the status says too little, else by the status", () =>
    run((server) =>
      Effect.gen(function*() {
        const cases = [
          [ProviderServer.status(529, errorBody("overloaded_error", "Overloaded")), "Unavailable"],
          [ProviderServer.status(402, errorBody("billing_error", "Payment required")), "QuotaExceeded"],
          [
            ProviderServer.status(
              400,
              errorBody("invalid_request_error", "Your credit balance is too low to access the Anthropic API.")
            ),
            "QuotaExceeded"
          ],
          [
            ProviderServer.status(
              400,
              errorBody("invalid_request_error", "prompt is too long: 211000 tokens > 200000 maximum")
            ),
            "ContextLengthExceeded"
          ],
          [
            ProviderServer.status(
              400,
              errorBody(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000"
              )
            ),
            "ContextLengthExceeded"
          ],
          [
            ProviderServer.status(
              400,
              errorBody("invalid_request_error", "messages: text content blocks must be non-empty")
            ),
            "InvalidRequest"
          ],
          [ProviderServer.status(401, errorBody("authentication_error", "invalid x-api-key")), "AuthFailed"],
          [ProviderServer.status(403, errorBody("permission_error", "not allowed")), "AuthFailed"],
          [
            ProviderServer.status(413, errorBody("request_too_large", "Request exceeds the maximum size")),
            "ContextLengthExceeded"
          ],
          [ProviderServer.status(500, errorBody("api_error", "Internal server error")), "Unavailable"],
          [ProviderServer.status(529, "<html>overloaded</html>"), "Unavailable"]
        ] as const
        yield* server.reply(...cases.map(([reply]) => reply))
        for (const [reply, tag] of cases) {
          const { error } = yield* failing(hello)
          expect(error._tag, JSON.stringify(reply)).toBe(tag)
        }
      }), { retryPolicy: ProviderRetry.none }))

  it.effect("retries a 529 and a 429 after their Retry-After, keeping the 429's wait on the error when it is too long", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.status(529, errorBody("overloaded_error", "Overloaded"), { "retry-after": "0" }),
          ProviderServer.sse(textStream("msg_ok", "ok")),
          ProviderServer.status(
            429,
            errorBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            {
              "retry-after": "3600"
            }
          )
        )
        expect(completed(yield* turn(hello)).responseId).toBe("msg_ok")
        const { error } = yield* failing(hello)
        expect(error).toBeInstanceOf(AiError.RateLimited)
        expect(error._tag === "RateLimited" && error.retryAfter !== undefined && Duration.toSeconds(error.retryAfter))
          .toBe(3600)
        expect(error.message).toContain("per-minute rate limit")
        expect(yield* server.requests).toHaveLength(3)
      })
    ))

  it.effect("an overloaded_error in the stream before any delta is retried", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse([
            messageStart("msg_1"),
            event("error", { error: { type: "overloaded_error", message: "Overloaded" } })
          ]),
          ProviderServer.sse(textStream("msg_2", "second try"))
        )
        expect(completed(yield* turn(hello)).responseId).toBe("msg_2")
        expect(yield* server.requests).toHaveLength(2)
      })
    ))

  it.effect("an error in the stream after deltas fails the turn with the deltas kept, and no retry", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse([
            messageStart("msg_1"),
            ...textBlock(0, "Partial"),
            event("error", { error: { type: "overloaded_error", message: "Overloaded" } })
          ]),
          ProviderServer.sse(textStream("msg_2", "never sent"))
        )
        const { deltas, error } = yield* failing(hello)
        expect(deltas).toStrictEqual([{ type: "text_delta", delta: "Partial" }])
        expect(error).toStrictEqual(
          new AiError.Unavailable({ provider: "anthropic", status: 529, message: "Overloaded (overloaded_error)" })
        )
        expect(yield* server.requests).toHaveLength(1)
      })
    ))

  it("maps every in-stream error type", () => {
    const cases = [
      ["overloaded_error", "Overloaded", "Unavailable"],
      ["api_error", "Internal server error", "Unavailable"],
      ["rate_limit_error", "slow down", "RateLimited"],
      ["billing_error", "no credit", "QuotaExceeded"],
      ["authentication_error", "bad key", "AuthFailed"],
      ["permission_error", "forbidden", "AuthFailed"],
      ["timeout_error", "took too long", "Timeout"],
      ["request_too_large", "too large", "ContextLengthExceeded"],
      ["invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum", "ContextLengthExceeded"],
      ["invalid_request_error", "tool_use ids must be unique", "InvalidRequest"],
      ["not_found_error", "model: claude-nope", "InvalidRequest"],
      ["a_type_added_later", "something", "Unavailable"]
    ] as const
    for (const [type, message, tag] of cases) {
      const error = AnthropicError.fromObject({ type, message })
      expect([type, error._tag]).toStrictEqual([type, tag])
      expect(error.message).toBe(`${message} (${type})`)
    }
  })
})
