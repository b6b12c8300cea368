/**
 * Errors as Chat Completions servers report them, inside a stream and as HTTP
 * error bodies, over loopback HTTP.
 */
import { AiError, Item, type LanguageModel, ProviderRetry, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule, Schema } from "effect"
import type { ChatCompletions } from "../src/index.ts"
import { ChatCompletionsError } from "../src/index.ts"
import { chunk, delta, done, finish, textStream } from "./fixtures.ts"
import { completed, failing, run, textOf, turn } from "./harness.ts"

const hello = [Item.userMessage("Say hello")]
const encode = Schema.encodeSync(AiError.AiError)
const provider = "chat-completions"

const onLayer = <A, E>(
  body: Effect.Effect<A, E, ProviderServer.ProviderServer | LanguageModel.LanguageModel>,
  overrides?: Partial<Omit<ChatCompletions.Config, "baseUrl">>
) =>
  run((server) => Effect.provideService(body, ProviderServer.ProviderServer, server), {
    retryPolicy: ProviderRetry.none,
    ...overrides
  })

/** The error a turn fails with when the server answers `reply`, and the deltas before it. */
const failure = (reply: ProviderServer.Reply) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(reply)
    return yield* failing(hello)
  })

const data = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`

describe("ChatCompletionsError: errors inside the stream", () => {
  it.effect("reads OpenAI's error chunk by its code", () =>
    onLayer(Effect.gen(function*() {
      const { deltas, error } = yield* failure(ProviderServer.sse([
        data({
          error: {
            message: "You exceeded your current quota",
            type: "insufficient_quota",
            param: null,
            code: "insufficient_quota"
          }
        })
      ]))
      expect(deltas).toStrictEqual([])
      expect(encode(error)).toStrictEqual({
        _tag: "QuotaExceeded",
        provider,
        message: "You exceeded your current quota (insufficient_quota)"
      })
    })))

  it.effect("fails at OpenRouter's error next to choices, even after a finish_reason, and at a bare finish_reason error", () =>
    onLayer(Effect.gen(function*() {
      const after = yield* failure(ProviderServer.sse([
        delta({ role: "assistant", content: "Partial" }),
        finish("stop"),
        chunk({
          provider: "Anthropic",
          error: { code: 502, message: "Provider disconnected unexpectedly" },
          choices: [{ index: 0, delta: { content: "" }, finish_reason: "error", native_finish_reason: "error" }]
        }),
        done
      ]))
      expect(textOf(after.deltas, "text_delta")).toBe("Partial")
      expect(encode(after.error)).toStrictEqual({
        _tag: "Unavailable",
        provider,
        status: 502,
        message: "Provider disconnected unexpectedly"
      })
      const named = yield* failure(ProviderServer.sse([
        chunk({ error: { code: "server_error", message: "Upstream failed" }, choices: [] })
      ]))
      expect(encode(named.error)).toStrictEqual({
        _tag: "Unavailable",
        provider,
        message: "Upstream failed (server_error)"
      })
      const bare = yield* failure(ProviderServer.sse([delta({ content: "a" }), finish("error"), done]))
      expect(bare.error).toStrictEqual(
        new AiError.Unavailable({ provider, message: "the server ended the answer with finish_reason \"error\"" })
      )
    })))

  it.effect("reads Groq's event: error frames, and retries one that came before any delta", () =>
    onLayer(
      Effect.gen(function*() {
        const groq = yield* failure(ProviderServer.sse([
          `event: error\ndata: ${
            JSON.stringify({
              error: {
                message: "Failed to call a function. Please adjust your prompt.",
                type: "invalid_request_error",
                code: "tool_use_failed",
                failed_generation: "<function=weather>{\"city\": }"
              }
            })
          }\n\n`
        ]))
        expect(encode(groq.error)).toStrictEqual({
          _tag: "InvalidRequest",
          provider,
          message: "Failed to call a function. Please adjust your prompt. (tool_use_failed)"
        })
        const server = yield* ProviderServer.ProviderServer
        yield* server.reply(
          ProviderServer.sse([
            `event: error\ndata: ${JSON.stringify({ error: { message: "over capacity", type: "server_error" } })}\n\n`
          ]),
          ProviderServer.sse(textStream("recovered"))
        )
        expect(Turn.text(completed(yield* turn(hello)))).toBe("recovered")
        expect(yield* server.requests).toHaveLength(3)
      }),
      { retryPolicy: Schedule.recurs(1) }
    ))

  it.effect("reads llama.cpp's error: line, vLLM's error object, a bare error message, and numeric or upper-case codes", () =>
    onLayer(Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, Record<string, unknown>]> = [
        [
          [
            "error: {\"code\":400,\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}\n\n",
            "data: [DONE]\n"
          ],
          {
            _tag: "ContextLengthExceeded",
            provider,
            message: "the request exceeds the available context size, try increasing it (exceed_context_size_error)"
          }
        ],
        [
          [
            "error: {\"code\":400,\"message\":\"the request exceeds the available context size. try increasing the context size or enable context shift\",\"type\":\"invalid_request_error\"}\n\n",
            "data: [DONE]\n\n"
          ],
          {
            _tag: "ContextLengthExceeded",
            provider,
            message:
              "the request exceeds the available context size. try increasing the context size or enable context shift (invalid_request_error)"
          }
        ],
        [
          ["error: {\"code\":500,\"message\":\"failed to decode the batch\",\"type\":\"server_error\"}\n\n"],
          { _tag: "Unavailable", provider, status: 500, message: "failed to decode the batch (server_error)" }
        ],
        [
          [data({
            object: "error",
            message: "max_tokens must be at least 1",
            type: "BadRequestError",
            param: null,
            code: 400
          })],
          { _tag: "InvalidRequest", provider, status: 400, message: "max_tokens must be at least 1 (BadRequestError)" }
        ],
        [
          [data({ error: "Request failed during generation: CUDA out of memory", error_type: "generation" })],
          { _tag: "Unavailable", provider, message: "Request failed during generation: CUDA out of memory" }
        ],
        [
          [data({ error: { code: "RATE_LIMIT_EXCEEDED", message: "Too many tokens per minute" } })],
          { _tag: "RateLimited", provider, message: "Too many tokens per minute (RATE_LIMIT_EXCEEDED)" }
        ],
        [
          [data({ error: { code: 429, message: "Resource has been exhausted", status: "RESOURCE_EXHAUSTED" } })],
          { _tag: "RateLimited", provider, message: "Resource has been exhausted (RESOURCE_EXHAUSTED)" }
        ],
        [
          [data({ error: { code: "503", message: "The service is temporarily unavailable" } })],
          { _tag: "Unavailable", provider, status: 503, message: "The service is temporarily unavailable" }
        ],
        [
          [data({ error: { code: 401, message: "User not found." } })],
          { _tag: "AuthFailed", provider, status: 401, message: "User not found." }
        ],
        [
          ["event: error\ndata: upstream went away\n\n"],
          { _tag: "Unavailable", provider, message: "upstream went away" }
        ]
      ]
      for (const [frames, expected] of cases) {
        const { error } = yield* failure(ProviderServer.sse([delta({ role: "assistant" }), ...frames]))
        expect(encode(error), frames[0]).toStrictEqual(expected)
      }
    })))
})

describe("ChatCompletionsError: HTTP error bodies", () => {
  it.effect("reads a quota or credit error as QuotaExceeded, whatever its status", () =>
    onLayer(Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ProviderServer.Reply, Record<string, unknown>]> = [
        [
          ProviderServer.status(402, {
            error: { code: 402, message: "Insufficient credits. Add more using https://openrouter.ai/credits" }
          }),
          {
            _tag: "QuotaExceeded",
            provider,
            status: 402,
            message: "Insufficient credits. Add more using https://openrouter.ai/credits"
          }
        ],
        [
          ProviderServer.status(402, {
            error: {
              message: "Insufficient Balance",
              type: "unknown_error",
              param: null,
              code: "invalid_request_error"
            }
          }),
          { _tag: "QuotaExceeded", provider, status: 402, message: "Insufficient Balance (invalid_request_error)" }
        ],
        [
          ProviderServer.status(429, {
            error: {
              message: "You exceeded your current quota",
              type: "insufficient_quota",
              code: "insufficient_quota"
            }
          }),
          {
            _tag: "QuotaExceeded",
            provider,
            status: 429,
            message: "You exceeded your current quota (insufficient_quota)"
          }
        ]
      ]
      for (const [reply, expected] of cases) {
        expect(encode((yield* failure(reply)).error)).toStrictEqual(expected)
      }
    })))

  it.effect("reads a prompt that does not fit as ContextLengthExceeded, from OpenAI, llama.cpp and vLLM", () =>
    onLayer(Effect.gen(function*() {
      const bodies = [
        {
          error: {
            message: "This model's maximum context length is 128000 tokens.",
            type: "invalid_request_error",
            param: "messages",
            code: "context_length_exceeded"
          }
        },
        {
          error: {
            code: 400,
            message: "the request exceeds the available context size, try increasing it",
            type: "exceed_context_size_error"
          }
        },
        {
          object: "error",
          message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
          type: "BadRequestError",
          param: null,
          code: 400
        }
      ]
      for (const body of bodies) {
        expect((yield* failure(ProviderServer.status(400, body))).error._tag).toBe("ContextLengthExceeded")
      }
    })))

  it.effect("reads other errors by their status, with the message of the body's shape", () =>
    onLayer(Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ProviderServer.Reply, Record<string, unknown>]> = [
        [
          ProviderServer.status(400, [{
            error: { code: 400, message: "Invalid JSON payload", status: "INVALID_ARGUMENT" }
          }]),
          { _tag: "InvalidRequest", provider, status: 400, message: "Invalid JSON payload" }
        ],
        [
          ProviderServer.status(422, {
            object: "error",
            message: { detail: [{ msg: "Extra inputs are not permitted" }] }
          }),
          {
            _tag: "InvalidRequest",
            provider,
            status: 422,
            message: "{\"object\":\"error\",\"message\":{\"detail\":[{\"msg\":\"Extra inputs are not permitted\"}]}}"
          }
        ],
        [
          ProviderServer.status(429, {
            error: { code: "429", message: "Requests to the deployment exceeded the rate limit" }
          }, {
            "retry-after": "7"
          }),
          {
            _tag: "RateLimited",
            provider,
            message: "Requests to the deployment exceeded the rate limit",
            retryAfter: 7000
          }
        ],
        [
          ProviderServer.status(404, { error: "model 'llama9' not found, try pulling it first" }),
          {
            _tag: "InvalidRequest",
            provider,
            status: 404,
            message: "{\"error\":\"model 'llama9' not found, try pulling it first\"}"
          }
        ]
      ]
      for (const [reply, expected] of cases) {
        expect(encode((yield* failure(reply)).error)).toStrictEqual(expected)
      }
    })))
})

describe("ChatCompletionsError.fromObject", () => {
  it("reads the first name it knows among code, type and status, and a numeric code as an HTTP status", () => {
    expect(ChatCompletionsError.fromObject({ code: null, type: "overloaded_error", message: "busy" })).toStrictEqual(
      new AiError.Unavailable({ provider, message: "busy (overloaded_error)" })
    )
    expect(ChatCompletionsError.fromObject({ code: "invalid_api_key", message: "bad key" }, 401)).toStrictEqual(
      new AiError.AuthFailed({ provider, status: 401, message: "bad key (invalid_api_key)" })
    )
    expect(ChatCompletionsError.fromObject({ code: 408, message: "slow" })).toStrictEqual(
      new AiError.Timeout({ provider, message: "slow" })
    )
    expect(ChatCompletionsError.fromObject({ code: "something_new", message: "?" })).toStrictEqual(
      new AiError.Unavailable({ provider, message: "?" })
    )
    expect(ChatCompletionsError.fromObject({})).toStrictEqual(
      new AiError.Unavailable({ provider, message: "the server reported an error" })
    )
    expect(ChatCompletionsError.fromObject({ code: 404, message: "no such model" }).message).toBe("no such model")
  })
})
