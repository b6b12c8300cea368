import { AiError, Item, ProviderRetry, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import { AnthropicWire } from "../src/testing/index.ts"
import { completed, failing, run, textOf, turn } from "./harness.ts"

const { wire } = AnthropicWire

const hello = [Item.userMessage("Say hello")]

/** A turn to write, and the `stop_reason` the wire must write for it. */
interface Case {
  readonly name: string
  readonly turn: Turn.Turn
  readonly stopReason: string
}

/** Items as a caller writes them: ids and statuses the wire does not carry, so that their normalisation is seen. */
const message = (...texts: ReadonlyArray<string>): Item.Message => ({
  type: "message",
  id: "msg_item",
  status: "in_progress",
  role: "assistant",
  content: texts.map((text) => ({ type: "output_text", text }))
})

const thinking = (text: string, signature?: string): Item.Reasoning => ({
  type: "reasoning",
  id: "rs_item",
  status: "completed",
  content: [{ type: "output_text", text }],
  ...(signature === undefined ? {} : { encrypted_content: signature })
})

const call = (callId: string, name: string, args: string): Item.FunctionCall => ({
  type: "function_call",
  id: "fc_item",
  status: "completed",
  call_id: callId,
  name,
  arguments: args
})

const multiByte = "Zürich é, 東京 ✓, 🌧️ and 👩‍👩‍👧 (a family: one grapheme, five code points) — done."

const cases: ReadonlyArray<Case> = [
  {
    name: "text only",
    turn: {
      items: [message("Hello, world! This answer is longer than one piece.")],
      usage: { input: 12, output: 9, total: 21 },
      stopReason: "stop",
      model: "claude-sonnet-4-5-20250929",
      responseId: "msg_01text"
    },
    stopReason: "end_turn"
  },
  {
    name: "multi-byte text in many pieces, two parts",
    turn: {
      items: [message(multiByte, `${multiByte} 🎉`)],
      usage: { input: 30, output: 60, total: 90 },
      stopReason: "stop",
      model: "claude-opus-4-1",
      responseId: "msg_01bytes"
    },
    stopReason: "end_turn"
  },
  {
    name: "thinking with a signature, text and two tool calls, with cached input",
    turn: {
      items: [
        thinking("The user wants the weather in two cities: é 🌧️, so two calls.", "RXFzZ25hdHVyZS0xMjM0NTY3ODkw"),
        message("Checking both cities."),
        call("toolu_01a", "get_weather", "{\"city\":\"Zürich\",\"units\":\"metric\"}"),
        call("toolu_01b", "get_weather", "{\"city\":\"東京\"}")
      ],
      // Thinking tokens are part of the output, and counted apart as well.
      usage: { input: 420, output: 95, total: 515, cachedInput: 300, reasoning: 40 },
      stopReason: "tool_calls",
      model: "claude-sonnet-4-5-20250929",
      responseId: "msg_01calls"
    },
    stopReason: "tool_use"
  },
  {
    name: "cut by max_tokens",
    turn: {
      items: [thinking("Short thought.", "c2ln"), message("The answer goes on and on until it is cu")],
      usage: { input: 8, output: 64, total: 72 },
      stopReason: "max_tokens",
      responseId: "msg_01max"
    },
    stopReason: "max_tokens"
  },
  {
    name: "redacted thinking, thinking without a signature, and no id or model",
    turn: {
      items: [
        { type: "reasoning", id: "r", status: "completed", content: [], encrypted_content: "cmVkYWN0ZWQtZGF0YQ==" },
        thinking("Unsigned thought."),
        message("Done.")
      ],
      usage: { input: 5, output: 7, total: 12, cachedInput: 0 },
      stopReason: "stop"
    },
    stopReason: "end_turn"
  },
  {
    name: "server tool blocks kept as extension items",
    turn: {
      items: [
        message("Let me search."),
        {
          type: "x-anthropic.server_tool_use",
          id: "x",
          status: "completed",
          data: {
            type: "server_tool_use",
            id: "srvtoolu_01",
            name: "web_search",
            input: { query: "weather in Zürich" }
          }
        },
        {
          type: "x-anthropic.web_search_tool_result",
          id: "y",
          status: "completed",
          data: {
            type: "web_search_tool_result",
            tool_use_id: "srvtoolu_01",
            content: [{
              type: "web_search_result",
              url: "https://example.com/w",
              title: "Weather",
              encrypted_content: "ZW5j",
              page_age: null
            }]
          }
        },
        message("It rains.")
      ],
      usage: { input: 2000, output: 40, total: 2040, cachedInput: 1500 },
      stopReason: "stop",
      responseId: "msg_01search"
    },
    stopReason: "end_turn"
  },
  {
    name: "a refusal, no items",
    turn: {
      items: [],
      usage: { input: 3, output: 0, total: 3 },
      stopReason: "content_filter",
      responseId: "msg_01refusal"
    },
    stopReason: "refusal"
  },
  {
    name: "the provider's own reason kept when it maps to the stop reason",
    turn: {
      items: [message("Up to END")],
      usage: { input: 3, output: 3, total: 6 },
      stopReason: "stop",
      providerStopReason: "stop_sequence",
      responseId: "msg_01seq"
    },
    stopReason: "stop_sequence"
  },
  {
    name: "another stop reason",
    turn: {
      items: [message("Paused.")],
      usage: { input: 3, output: 2, total: 5 },
      stopReason: "other",
      responseId: "msg_01pause"
    },
    stopReason: "pause_turn"
  },
  {
    name: "text that cites a document and a web page",
    turn: {
      items: [{
        ...message(),
        content: [{ type: "output_text", text: "Plain, " }, {
          type: "output_text",
          text: "the grass is green.",
          annotations: [
            {
              type: "file_citation",
              title: "Facts",
              cited_text: "The grass is green.",
              provider_data: {
                type: "x-anthropic.char_location",
                data: {
                  type: "char_location",
                  cited_text: "The grass is green.",
                  document_index: 0,
                  document_title: "Facts",
                  start_char_index: 0,
                  end_char_index: 19
                }
              }
            },
            {
              type: "url_citation",
              url: "https://example.com/grass",
              title: "Grass",
              cited_text: "green",
              provider_data: {
                type: "x-anthropic.web_search_result_location",
                data: {
                  type: "web_search_result_location",
                  url: "https://example.com/grass",
                  title: "Grass",
                  cited_text: "green",
                  encrypted_index: "ZW5j"
                }
              }
            }
          ]
        }]
      }],
      usage: { input: 3, output: 2, total: 5 },
      stopReason: "stop",
      responseId: "msg_01cite"
    },
    stopReason: "end_turn"
  }
]

/**
 * What the decoder must make of `turn`: its items, usage and stop reason, with
 * what the wire does not carry set as the decoder sets it. Items get the ids
 * `anthropic_<responseId>_<n>` and are `completed`, but for the last of a turn
 * cut by `max_tokens`; the id and model default; the usage is the API's
 * (`total` the sum); the reason is the one written.
 */
const decodedAs = ({ stopReason, turn }: Case): Turn.Turn => {
  const responseId = turn.responseId ?? AnthropicWire.defaultResponseId
  const last = turn.items.length - 1
  return {
    items: turn.items.map((item, i): Item.Item => ({
      ...item,
      id: `anthropic_${responseId}_${i}`,
      status: turn.stopReason === "max_tokens" && i === last ? "incomplete" : "completed"
    })),
    usage: {
      input: turn.usage.input,
      output: turn.usage.output,
      total: turn.usage.input + turn.usage.output,
      ...(turn.usage.cachedInput === undefined ? {} : { cachedInput: turn.usage.cachedInput }),
      ...(turn.usage.reasoning === undefined ? {} : { reasoning: turn.usage.reasoning })
    },
    stopReason: turn.stopReason,
    model: turn.model ?? AnthropicWire.defaultModel,
    responseId,
    providerStopReason: stopReason
  }
}

const codePoints = (text: string): number => Array.from(text).length

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** How many pieces of `size` code points each text of `texts` streams in. */
const pieceCount = (texts: ReadonlyArray<string>, size: number): number =>
  texts.reduce((count, text) => count + Math.ceil(codePoints(text) / size), 0)

const reasoningText = (items: ReadonlyArray<Item.Item>): ReadonlyArray<string> =>
  items.flatMap((item) => item.type === "reasoning" ? item.content.map(Item.partText) : [])

const messageTexts = (items: ReadonlyArray<Item.Item>): ReadonlyArray<string> =>
  items.flatMap((item) => item.type === "message" ? item.content.map(Item.partText) : [])

/** Checks the deltas of `c` written in pieces of `size`: the text, thinking and arguments, in pieces no longer than `size`. */
const checkDeltas = (c: Case, deltas: ReadonlyArray<TurnDelta.TurnDelta>, size: number) => {
  const { items } = c.turn
  expect(textOf(deltas, "text_delta")).toBe(Turn.text(c.turn))
  expect(textOf(deltas, "reasoning_delta")).toBe(reasoningText(items).join(""))
  const text = deltas.flatMap((d) => d.type === "text_delta" ? [d.delta] : [])
  const reasoning = deltas.flatMap((d) => d.type === "reasoning_delta" ? [d.delta] : [])
  expect(text).toHaveLength(pieceCount(messageTexts(items), size))
  expect(reasoning).toHaveLength(pieceCount(reasoningText(items), size))
  for (const call of Turn.functionCalls(c.turn)) {
    const args = deltas.flatMap((d) =>
      d.type === "function_call_arguments_delta" && d.call_id === call.call_id ? [d.delta] : []
    )
    expect(args.join("")).toBe(call.arguments)
    expect(args).toHaveLength(pieceCount([call.arguments], size))
    expect(deltas).toContainEqual({ type: "function_call_start", call_id: call.call_id, name: call.name })
    expect(deltas).toContainEqual({
      type: "function_call_done",
      call_id: call.call_id,
      name: call.name,
      arguments: call.arguments
    })
  }
  for (const d of deltas) {
    if (d.type === "text_delta" || d.type === "reasoning_delta" || d.type === "function_call_arguments_delta") {
      expect(codePoints(d.delta)).toBeLessThanOrEqual(size)
      expect(d.delta).not.toMatch(loneSurrogate)
    }
  }
}

/** The chunk sizes each case is written with; `undefined` is the default, 16. */
const chunkSizes = [1, 3, undefined, 1000] as const

describe("AnthropicWire", () => {
  it("is Anthropic's", () => {
    expect(wire.provider).toBe("anthropic")
  })

  describe("a turn decodes back to the same turn", () => {
    for (const c of cases) {
      it.effect(c.name, () =>
        run((server) =>
          Effect.gen(function*() {
            yield* server.reply(...chunkSizes.map((chunkSize) => ProviderServer.sse(wire.turn(c.turn, { chunkSize }))))
            for (const chunkSize of chunkSizes) {
              const deltas = yield* turn(hello)
              expect(completed(deltas), `chunkSize ${chunkSize}`).toStrictEqual(decodedAs(c))
              expect(deltas[deltas.length - 2]).toStrictEqual({ type: "usage", usage: decodedAs(c).usage })
              checkDeltas(c, deltas, chunkSize ?? 16)
            }
          })
        ))
    }

    it.effect("split at every byte, multi-byte characters cut in two on the way", () =>
      run((server) =>
        Effect.gen(function*() {
          const c = cases[2]!
          yield* server.reply(ProviderServer.sse(wire.turn(c.turn, { chunkSize: 5 }), { chunkSize: 1 }))
          const deltas = yield* turn(hello)
          expect(completed(deltas)).toStrictEqual(decodedAs(c))
          checkDeltas(c, deltas, 5)
        })
      ))
  })

  it("writes the documented frames, each event's type also its event: line", () => {
    const frames = wire.turn(cases[2]!.turn, { chunkSize: 1000 })
    const events = frames.map((frame) => {
      const [name, data, ...rest] = frame.split("\n")
      expect(rest).toStrictEqual(["", ""])
      const json: { readonly type: string; readonly delta?: { readonly type?: string } } = JSON.parse(
        data!.slice("data: ".length)
      )
      expect(name).toBe(`event: ${json.type}`)
      return json
    })
    expect(events.map((e) => e.type === "content_block_delta" ? `${e.type} ${e.delta?.type}` : e.type)).toStrictEqual([
      "message_start",
      "ping",
      "content_block_start",
      "content_block_delta thinking_delta",
      "content_block_delta signature_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta text_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta input_json_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta input_json_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    expect(events[events.length - 2]).toStrictEqual({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: {
        input_tokens: 120,
        cache_read_input_tokens: 300,
        output_tokens: 95,
        output_tokens_details: { thinking_tokens: 40 }
      }
    })
  })

  it.effect("complete: false leaves out the end, and the layer fails with IncompleteTurn after the deltas", () =>
    run((server) =>
      Effect.gen(function*() {
        const c = cases[2]!
        const whole = wire.turn(c.turn)
        const cut = wire.turn(c.turn, { complete: false })
        expect(cut).toStrictEqual(whole.slice(0, -2))
        yield* server.reply(ProviderServer.sse(cut))
        const { deltas, error } = yield* failing(hello)
        expect(error._tag).toBe("IncompleteTurn")
        expect(deltas.some((d) => d.type === "turn_complete")).toBe(false)
        expect(textOf(deltas, "text_delta")).toBe(Turn.text(c.turn))
        expect(textOf(deltas, "reasoning_delta")).toBe(reasoningText(c.turn.items).join(""))
      })
    ))

  describe("dies on what the API does not stream", () => {
    const base: Turn.Turn = { items: [], usage: { input: 1, output: 1, total: 2 }, stopReason: "stop" }
    const withItems = (...items: ReadonlyArray<Item.Item>): Turn.Turn => ({ ...base, items })
    const refused: Item.Message = {
      type: "message",
      id: "m",
      status: "completed",
      role: "assistant",
      content: [{ type: "refusal", refusal: "I can't help with that." }]
    }
    const throwing: ReadonlyArray<readonly [string, Turn.Turn, RegExp]> = [
      ["a user message", withItems(Item.userMessage("hi", "u1")), /item 0 \(message "u1"\).*not a user message/],
      [
        "a call's output",
        withItems({ type: "function_call_output", id: "o1", status: "completed", call_id: "c", output: "{}" }),
        /item 0 \(function_call_output "o1"\).*never streamed/
      ],
      ["a refusal part", withItems(refused), /refusal part.*stop_reason "refusal"/],
      [
        "an input_text part",
        withItems({ ...message("x"), content: [{ type: "input_text", text: "x" }] }),
        /input_text part/
      ],
      [
        "an image: the model writes no images",
        withItems({ ...message("x"), content: [{ type: "input_image", image_url: "https://example.com/a.png" }] }),
        /an input_image part: the model writes output_text/
      ],
      ["a phase", withItems({ ...message("x"), phase: "commentary" }), /no phase \("commentary"\)/],
      ["an empty message", withItems(message()), /has no part/],
      ["two messages in a row", withItems(message("a"), message("b")), /item 1 .*follows another message/],
      ["a reasoning summary", withItems({ ...thinking("t"), summary: [] }), /summary/],
      ["reasoning without content or data", withItems({ ...thinking("t"), content: [] }), /redacted_thinking/],
      [
        "reasoning in two parts",
        withItems({
          ...thinking("t"),
          content: [{ type: "output_text", text: "a" }, { type: "output_text", text: "b" }]
        }),
        /one output_text part/
      ],
      ["a call without arguments", withItems(call("c", "f", "")), /empty arguments/],
      [
        "an application's item",
        withItems({ type: "x-app.note", id: "n", status: "completed", data: {} }),
        /x-anthropic\./
      ],
      [
        "an extension whose data is another block",
        withItems({ type: "x-anthropic.server_tool_use", id: "n", status: "completed", data: { type: "tool_use" } }),
        /must be a server_tool_use block/
      ],
      [
        "an extension of a block the decoder models",
        withItems({ type: "x-anthropic.text", id: "n", status: "completed", data: { type: "text", text: "hi" } }),
        /another item/
      ],
      [
        "a citation the API did not send",
        withItems({
          ...message(),
          content: [{ type: "output_text", text: "x", annotations: [{ type: "url_citation", url: "https://e.com" }] }]
        }),
        /a citation the API did not send \(url_citation/
      ],
      ["a malformed_tool_call stop", { ...base, stopReason: "malformed_tool_call" }, /malformed_tool_call/],
      ["tool_calls without a call", { ...base, stopReason: "tool_calls" }, /no function_call item/],
      [
        "more cached input than input",
        { ...base, usage: { input: 1, output: 1, total: 2, cachedInput: 2 } },
        /more cache reads and writes/
      ],
      [
        "more cache reads and writes than input",
        { ...base, usage: { input: 3, output: 1, total: 4, cachedInput: 2, cacheWrite: 2 } },
        /more cache reads and writes \(4\) than input \(3\)/
      ]
    ]
    for (const [name, t, message] of throwing) {
      it(name, () => {
        expect(() => wire.turn(t)).toThrow(message)
      })
    }
    it("a chunk size that is not a positive integer", () => {
      expect(() => wire.turn(base, { chunkSize: 0 })).toThrow(/chunkSize/)
      expect(() => wire.turn(base, { chunkSize: 1.5 })).toThrow(/chunkSize/)
    })
  })

  describe("every error comes back with its tag and message", () => {
    const provider = "openai"
    const encode = Schema.encodeSync(AiError.AiError)
    /** An error, the status and content type it is answered with, and the error the layer must make of it (encoded). */
    const errors: ReadonlyArray<readonly [AiError.AiError, number, string | undefined, Record<string, unknown>]> = [
      [
        new AiError.AuthFailed({ provider, status: 401, message: "invalid x-api-key" }),
        401,
        "authentication_error",
        { _tag: "AuthFailed", provider: "anthropic", status: 401, message: "invalid x-api-key" }
      ],
      [
        new AiError.AuthFailed({ provider, status: 403, message: "not allowed" }),
        403,
        "permission_error",
        { _tag: "AuthFailed", provider: "anthropic", status: 403, message: "not allowed" }
      ],
      [
        new AiError.RateLimited({ provider, message: "slow down", retryAfter: Duration.seconds(30) }),
        429,
        "rate_limit_error",
        { _tag: "RateLimited", provider: "anthropic", message: "slow down", retryAfter: 30_000 }
      ],
      [
        new AiError.RateLimited({ provider, message: "slow down a bit", retryAfter: Duration.millis(1500) }),
        429,
        "rate_limit_error",
        // Whole seconds on the wire, rounded up.
        { _tag: "RateLimited", provider: "anthropic", message: "slow down a bit", retryAfter: 2000 }
      ],
      [
        new AiError.RateLimited({ provider, message: "no wait said" }),
        429,
        "rate_limit_error",
        { _tag: "RateLimited", provider: "anthropic", message: "no wait said" }
      ],
      [
        new AiError.Timeout({ provider, message: "took too long" }),
        504,
        "timeout_error",
        { _tag: "Timeout", provider: "anthropic", message: "took too long" }
      ],
      [
        new AiError.ContextLengthExceeded({ provider, message: "the conversation is 210k tokens" }),
        400,
        "invalid_request_error",
        {
          _tag: "ContextLengthExceeded",
          provider: "anthropic",
          message: "prompt is too long: the conversation is 210k tokens (invalid_request_error)"
        }
      ],
      [
        new AiError.ContextLengthExceeded({ provider, message: "prompt is too long: 211000 tokens > 200000 maximum" }),
        400,
        "invalid_request_error",
        {
          _tag: "ContextLengthExceeded",
          provider: "anthropic",
          message: "prompt is too long: 211000 tokens > 200000 maximum (invalid_request_error)"
        }
      ],
      [
        new AiError.InvalidRequest({
          provider,
          status: 400,
          message: "messages: text content blocks must be non-empty"
        }),
        400,
        "invalid_request_error",
        {
          _tag: "InvalidRequest",
          provider: "anthropic",
          status: 400,
          message: "messages: text content blocks must be non-empty"
        }
      ],
      [
        new AiError.InvalidRequest({ provider, status: 404, message: "model: claude-x not found" }),
        404,
        "not_found_error",
        { _tag: "InvalidRequest", provider: "anthropic", status: 404, message: "model: claude-x not found" }
      ],
      [
        new AiError.InvalidRequest({ provider, status: 422, message: "unprocessable" }),
        422,
        "invalid_request_error",
        { _tag: "InvalidRequest", provider: "anthropic", status: 422, message: "unprocessable" }
      ],
      [
        new AiError.InvalidRequest({ provider, message: "no status" }),
        400,
        "invalid_request_error",
        { _tag: "InvalidRequest", provider: "anthropic", status: 400, message: "no status" }
      ],
      [
        new AiError.Unavailable({ provider, status: 529, message: "Overloaded", retryAfter: Duration.seconds(5) }),
        529,
        "overloaded_error",
        {
          _tag: "Unavailable",
          provider: "anthropic",
          status: 529,
          message: "Overloaded (overloaded_error)",
          retryAfter: 5000
        }
      ],
      [
        new AiError.Unavailable({ provider, status: 503, message: "down for a bit", retryAfter: Duration.seconds(2) }),
        503,
        "api_error",
        { _tag: "Unavailable", provider: "anthropic", status: 503, message: "down for a bit", retryAfter: 2000 }
      ],
      [
        new AiError.Unavailable({ provider, status: 504, message: "a 504 would be a Timeout" }),
        500,
        "api_error",
        { _tag: "Unavailable", provider: "anthropic", status: 500, message: "a 504 would be a Timeout" }
      ],
      [
        new AiError.Unavailable({ provider, message: "connection reset" }),
        500,
        "api_error",
        { _tag: "Unavailable", provider: "anthropic", status: 500, message: "connection reset" }
      ],
      [
        new AiError.QuotaExceeded({ provider, message: "Your credit balance is too low" }),
        402,
        "billing_error",
        {
          _tag: "QuotaExceeded",
          provider: "anthropic",
          status: 402,
          message: "Your credit balance is too low (billing_error)"
        }
      ],
      [
        new AiError.QuotaExceeded({ provider, status: 429, message: "insufficient_quota" }),
        429,
        "billing_error",
        { _tag: "QuotaExceeded", provider: "anthropic", status: 429, message: "insufficient_quota (billing_error)" }
      ],
      [
        new AiError.MalformedEvent({ provider, event: "content_block_delta", message: "index: Expected number" }),
        200,
        undefined,
        // The message is the decoder's: nothing in the stream carries the error's own.
        {
          _tag: "MalformedEvent",
          provider: "anthropic",
          event: "content_block_delta",
          message: expect.stringMatching(/^data is not JSON: /)
        }
      ],
      [
        new AiError.IncompleteTurn({ message: "cut off" }),
        200,
        undefined,
        // The message is the decoder's: nothing in the stream carries the error's own.
        { _tag: "IncompleteTurn", message: "anthropic: the stream ended before message_stop" }
      ]
    ]

    it("covers every tag", () => {
      const tags: ReadonlyArray<AiError.AiError["_tag"]> = [
        "AuthFailed",
        "RateLimited",
        "Timeout",
        "ContextLengthExceeded",
        "InvalidRequest",
        "Unavailable",
        "MalformedEvent",
        "QuotaExceeded",
        "IncompleteTurn"
      ]
      expect(new Set(errors.map(([error]) => error._tag))).toStrictEqual(new Set(tags))
    })

    for (const [error, status, type, expected] of errors) {
      it.effect(`${error._tag}: ${error.message}`, () =>
        run((server) =>
          Effect.gen(function*() {
            const answer = wire.error(error)
            expect(answer.status).toBe(status)
            if (type === undefined) {
              expect(answer.headers["content-type"]).toBe("text/event-stream")
            } else {
              expect(answer.headers["content-type"]).toBe("application/json")
              expect(JSON.parse(answer.body)).toMatchObject({ type: "error", error: { type } })
            }
            yield* server.reply(ProviderServer.status(answer.status, answer.body, { ...answer.headers }))
            const result = yield* failing(hello)
            expect(result.deltas).toStrictEqual([])
            expect(encode(result.error)).toStrictEqual(expected)
          }), { retryPolicy: ProviderRetry.none }))
    }
  })
})
