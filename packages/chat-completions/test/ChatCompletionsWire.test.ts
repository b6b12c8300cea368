import { AiError, Item, ProviderRetry, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import { ChatCompletionsWire } from "../src/testing/index.ts"
import { completed, failing, run, textOf, turn } from "./harness.ts"

const { wire } = ChatCompletionsWire

const hello = [Item.userMessage("Say hello")]

/** Items as a caller writes them: ids and statuses the wire does not carry, so that their normalisation is seen. */
const message = (...parts: ReadonlyArray<Item.ContentPart>): Item.Message => ({
  type: "message",
  id: "msg_item",
  status: "in_progress",
  role: "assistant",
  content: parts
})

const text = (value: string): Item.ContentPart => ({ type: "output_text", text: value })

const reasoning = (value: string, encrypted?: string): Item.Reasoning => ({
  type: "reasoning",
  id: "rs_item",
  status: "completed",
  content: value === "" ? [] : [{ type: "output_text", text: value }],
  ...(encrypted === undefined ? {} : { encrypted_content: encrypted })
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

const details = JSON.stringify([
  {
    type: "reasoning.text",
    text: "Weighing both.",
    signature: "c2lnLTEyMw==",
    format: "anthropic-claude-v1",
    index: 0
  },
  { type: "reasoning.encrypted", data: "ZW5jcnlwdGVk", format: "openai-responses-v1", index: 1 }
])

/** A turn to write, and the `finish_reason` the wire must write for it. */
interface Case {
  readonly name: string
  readonly turn: Turn.Turn
  readonly finishReason: string
}

const cases: ReadonlyArray<Case> = [
  {
    name: "text only",
    turn: {
      items: [message(text("Hello, world! This answer is longer than one piece."))],
      usage: { input: 12, output: 9, total: 21 },
      stopReason: "stop",
      model: "llama3.2:3b",
      responseId: "chatcmpl-text"
    },
    finishReason: "stop"
  },
  {
    name: "multi-byte text, reasoning, and usage with cached and reasoning tokens",
    turn: {
      items: [reasoning(`Thinking about ${multiByte}`), message(text(multiByte))],
      usage: { input: 300, output: 60, total: 360, cachedInput: 256, reasoning: 40 },
      stopReason: "stop",
      model: "deepseek-reasoner",
      responseId: "chatcmpl-bytes"
    },
    finishReason: "stop"
  },
  {
    name: "text, then two tool calls",
    turn: {
      items: [
        message(text("Checking both cities.")),
        call("call_01a", "get_weather", "{\"city\":\"Zürich\",\"units\":\"metric\"}"),
        call("call_01b", "get_weather", "{\"city\":\"東京\"}")
      ],
      usage: { input: 420, output: 95, total: 515 },
      stopReason: "tool_calls",
      model: "gpt-4o-mini-2024-07-18",
      responseId: "chatcmpl-calls"
    },
    finishReason: "tool_calls"
  },
  {
    name: "a call without arguments, and no message",
    turn: {
      items: [call("call_now", "now", "")],
      usage: { input: 5, output: 2, total: 7 },
      stopReason: "tool_calls"
    },
    finishReason: "tool_calls"
  },
  {
    name: "OpenRouter's reasoning_details, kept, and its cost",
    turn: {
      items: [reasoning("Weighing both.", details), message(text("Both are wet."))],
      usage: { input: 40, output: 30, total: 70, reasoning: 12 },
      stopReason: "stop",
      model: "anthropic/claude-sonnet-4.5",
      responseId: "gen-123",
      cost: 0.00042
    },
    finishReason: "stop"
  },
  {
    name: "OpenRouter's cache reads and writes",
    turn: {
      items: [message(text("Cached."))],
      usage: { input: 3410, output: 100, total: 3510, cachedInput: 3000, cacheWrite: 400 },
      stopReason: "stop",
      model: "anthropic/claude-sonnet-4.5"
    },
    finishReason: "stop"
  },
  {
    name: "encrypted reasoning only",
    turn: {
      items: [
        reasoning("", JSON.stringify([{ type: "reasoning.encrypted", data: "ZW5j", index: 0 }])),
        message(text("Done."))
      ],
      usage: { input: 8, output: 3, total: 11 },
      stopReason: "stop"
    },
    finishReason: "stop"
  },
  {
    name: "cut by the token limit",
    turn: {
      items: [reasoning("Short thought."), message(text("The answer goes on and on until it is cu"))],
      usage: { input: 8, output: 64, total: 72 },
      stopReason: "max_tokens",
      responseId: "chatcmpl-max"
    },
    finishReason: "length"
  },
  {
    name: "a refusal after text",
    turn: {
      items: [message(text("Well, "), { type: "refusal", refusal: "I can't help with that." })],
      usage: { input: 3, output: 7, total: 10 },
      stopReason: "stop"
    },
    finishReason: "stop"
  },
  {
    name: "filtered, no items",
    turn: { items: [], usage: { input: 3, output: 0, total: 3 }, stopReason: "content_filter" },
    finishReason: "content_filter"
  },
  {
    name: "the server's own reason kept when it maps to the stop reason, and a total that is not the sum",
    turn: {
      items: [message(text("Up to the end"))],
      usage: { input: 3, output: 3, total: 10, reasoning: 3 },
      stopReason: "stop",
      providerStopReason: "eos"
    },
    finishReason: "eos"
  },
  {
    name: "another stop reason",
    turn: {
      items: [message(text("Paused."))],
      usage: { input: 3, output: 2, total: 5 },
      stopReason: "other",
      providerStopReason: "insufficient_system_resource"
    },
    finishReason: "insufficient_system_resource"
  },
  {
    name: "text that cites web pages",
    turn: {
      items: [message({
        type: "output_text",
        text: "Spain won Euro 2024.",
        annotations: [
          { type: "url_citation", url: "https://espn.com/euro", title: "Euro 2024", start_index: 0, end_index: 20 },
          { type: "url_citation", url: "https://uefa.com" }
        ]
      })],
      usage: { input: 12, output: 9, total: 21 },
      stopReason: "stop",
      model: "gpt-4o-search-preview",
      responseId: "chatcmpl-cited"
    },
    finishReason: "stop"
  }
]

/**
 * What the decoder must make of `turn`: its items named after the answer's id
 * (`chatcmpl_item_<id>_<n>`), `completed` but for the last of a turn cut by
 * the token limit, the model and id defaulted, the reason the one written.
 */
const decodedAs = ({ finishReason, turn }: Case): Turn.Turn => {
  const responseId = turn.responseId ?? ChatCompletionsWire.defaultResponseId
  const last = turn.items.length - 1
  return {
    ...turn,
    items: turn.items.map((item, i): Item.Item => ({
      ...item,
      id: `chatcmpl_item_${responseId}_${i}`,
      status: turn.stopReason === "max_tokens" && i === last ? "incomplete" : "completed"
    })),
    model: turn.model ?? ChatCompletionsWire.defaultModel,
    responseId,
    providerStopReason: finishReason
  }
}

const codePoints = (value: string): number => Array.from(value).length

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

const reasoningText = (items: ReadonlyArray<Item.Item>): string =>
  items.flatMap((item) => item.type === "reasoning" ? item.content.map(Item.partText) : []).join("")

/** Checks the deltas of `c` written in pieces of `size`: text, reasoning, refusal and arguments, in pieces no longer than `size`. */
const checkDeltas = (c: Case, deltas: ReadonlyArray<TurnDelta.TurnDelta>, size: number) => {
  expect(textOf(deltas, "text_delta")).toBe(Turn.text(c.turn))
  expect(textOf(deltas, "reasoning_delta")).toBe(reasoningText(c.turn.items))
  for (const call of Turn.functionCalls(c.turn)) {
    const args = deltas.flatMap((d) =>
      d.type === "function_call_arguments_delta" && d.call_id === call.call_id ? [d.delta] : []
    )
    expect(args.join("")).toBe(call.arguments)
    expect(args).toHaveLength(Math.ceil(codePoints(call.arguments) / size))
    expect(deltas).toContainEqual({ type: "function_call_start", call_id: call.call_id, name: call.name })
    expect(deltas).toContainEqual({
      type: "function_call_done",
      call_id: call.call_id,
      name: call.name,
      arguments: call.arguments
    })
  }
  for (const d of deltas) {
    if (
      d.type === "text_delta" || d.type === "reasoning_delta" || d.type === "refusal_delta" ||
      d.type === "function_call_arguments_delta"
    ) {
      expect(codePoints(d.delta)).toBeLessThanOrEqual(size)
      expect(d.delta).not.toMatch(loneSurrogate)
    }
  }
}

/** The chunk sizes each case is written with; `undefined` is the default, 16. */
const chunkSizes = [1, 3, undefined, 1000] as const

describe("ChatCompletionsWire", () => {
  it("is the Chat Completions wire's", () => {
    expect(wire.provider).toBe("chat-completions")
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
              expect(deltas[deltas.length - 2]).toStrictEqual({ type: "usage", usage: c.turn.usage })
              checkDeltas(c, deltas, chunkSize ?? 16)
            }
          })
        ))
    }

    it.effect("split at every byte, multi-byte characters cut in two on the way", () =>
      run((server) =>
        Effect.gen(function*() {
          const c = cases[1]!
          yield* server.reply(ProviderServer.sse(wire.turn(c.turn, { chunkSize: 5 }), { chunkSize: 1 }))
          const deltas = yield* turn(hello)
          expect(completed(deltas)).toStrictEqual(decodedAs(c))
          checkDeltas(c, deltas, 5)
        })
      ))
  })

  it("writes OpenAI's chunks: a role delta, the deltas, the finish_reason, the usage with empty choices, [DONE]", () => {
    const frames = wire.turn(cases[2]!.turn, { chunkSize: 1000 })
    expect(frames[frames.length - 1]).toBe("data: [DONE]\n\n")
    const chunks = frames.slice(0, -1).map((frame) => {
      expect(frame).toMatch(/^data: .*\n\n$/s)
      return JSON.parse(frame.slice("data: ".length))
    })
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({
        id: "chatcmpl-calls",
        object: "chat.completion.chunk",
        model: "gpt-4o-mini-2024-07-18"
      })
    }
    expect(chunks.map((chunk) => chunk.choices[0]?.delta ?? null)).toStrictEqual([
      { role: "assistant", content: "" },
      { content: "Checking both cities." },
      {
        tool_calls: [{ index: 0, id: "call_01a", type: "function", function: { name: "get_weather", arguments: "" } }]
      },
      { tool_calls: [{ index: 0, function: { arguments: "{\"city\":\"Zürich\",\"units\":\"metric\"}" } }] },
      {
        tool_calls: [{ index: 1, id: "call_01b", type: "function", function: { name: "get_weather", arguments: "" } }]
      },
      { tool_calls: [{ index: 1, function: { arguments: "{\"city\":\"東京\"}" } }] },
      {},
      null
    ])
    expect(chunks[chunks.length - 2].choices[0].finish_reason).toBe("tool_calls")
    expect(chunks[chunks.length - 1]).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 420, completion_tokens: 95, total_tokens: 515 }
    })
  })

  it.effect("complete: false leaves out the end, and the layer fails with IncompleteTurn after the deltas", () =>
    run((server) =>
      Effect.gen(function*() {
        const c = cases[1]!
        const whole = wire.turn(c.turn)
        const cut = wire.turn(c.turn, { complete: false })
        expect(cut).toStrictEqual(whole.slice(0, -3))
        yield* server.reply(ProviderServer.sse(cut))
        const { deltas, error } = yield* failing(hello)
        expect(error._tag).toBe("IncompleteTurn")
        expect(deltas.some((d) => d.type === "turn_complete")).toBe(false)
        expect(textOf(deltas, "text_delta")).toBe(Turn.text(c.turn))
        expect(textOf(deltas, "reasoning_delta")).toBe(reasoningText(c.turn.items))
      })
    ))

  describe("dies on what the wire does not stream", () => {
    const base: Turn.Turn = { items: [], usage: { input: 1, output: 1, total: 2 }, stopReason: "stop" }
    const withItems = (...items: ReadonlyArray<Item.Item>): Turn.Turn => ({ ...base, items })
    const throwing: ReadonlyArray<readonly [string, Turn.Turn, RegExp]> = [
      ["a user message", withItems(Item.userMessage("hi", "u1")), /item 0 \(message "u1"\).*user message/],
      [
        "a call's output",
        withItems({ type: "function_call_output", id: "o1", status: "completed", call_id: "c", output: "{}" }),
        /item 0 \(function_call_output "o1"\).*not in an answer/
      ],
      ["an input_text part", withItems(message({ type: "input_text", text: "x" })), /one non-empty output_text/],
      ["two text parts", withItems(message(text("a"), text("b"))), /one non-empty output_text/],
      ["a refusal before text", withItems(message({ type: "refusal", refusal: "no" }, text("b"))), /then one/],
      ["a phase", withItems({ ...message(text("x")), phase: "commentary" }), /phase \("commentary"\)/],
      ["an empty message", withItems(message()), /has no part/],
      ["two messages", withItems(message(text("a")), message(text("b"))), /item 1 .*one message/],
      ["a message after calls", withItems(call("c", "f", "{}"), message(text("b"))), /item 1 .*before the calls/],
      ["reasoning after the message", withItems(message(text("a")), reasoning("t")), /item 1 .*reasoning, first/],
      ["a reasoning summary", withItems({ ...reasoning("t"), summary: [] }), /summary/],
      ["empty reasoning", withItems(reasoning("")), /neither text nor reasoning_details/],
      ["reasoning another provider encrypted", withItems(reasoning("t", "c2ln")), /not OpenRouter's reasoning_details/],
      [
        "details that merge",
        withItems(
          reasoning(
            "t",
            JSON.stringify([{ type: "reasoning.text", text: "a", index: 0 }, {
              type: "reasoning.text",
              text: "b",
              index: 0
            }])
          )
        ),
        /would not come back/
      ],
      [
        "details whose text would become the item's",
        withItems(reasoning("", JSON.stringify([{ type: "reasoning.text", text: "a", index: 0 }]))),
        /would come back as its text/
      ],
      ["a call without a name", withItems(call("c", "", "{}")), /empty call_id or name/],
      [
        "an application's item",
        withItems({ type: "x-app.note", id: "n", status: "completed", data: {} }),
        /not in an answer/
      ],
      [
        "a document citation",
        withItems(
          message({ type: "output_text", text: "x", annotations: [{ type: "file_citation", title: "Atlas" }] })
        ),
        /cites .*file_citation.*url_citations/
      ],
      ["a malformed_tool_call stop", { ...base, stopReason: "malformed_tool_call" }, /malformed_tool_call/],
      ["tool_calls without a call", { ...base, stopReason: "tool_calls" }, /needs a function call/],
      ["stop with a call", { ...withItems(call("c", "f", "{}")), stopReason: "stop" }, /stops for tool_calls/]
    ]
    for (const [name, t, expected] of throwing) {
      it(name, () => {
        expect(() => wire.turn(t)).toThrow(expected)
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
    /** An error, the status it is answered with, and the error the layer must make of it (encoded). */
    const errors: ReadonlyArray<readonly [AiError.AiError, number, Record<string, unknown>]> = [
      [
        new AiError.AuthFailed({ provider, status: 401, message: "Incorrect API key provided" }),
        401,
        { _tag: "AuthFailed", provider: "chat-completions", status: 401, message: "Incorrect API key provided" }
      ],
      [
        new AiError.AuthFailed({ provider, status: 403, message: "not allowed" }),
        403,
        { _tag: "AuthFailed", provider: "chat-completions", status: 403, message: "not allowed" }
      ],
      [
        new AiError.RateLimited({ provider, message: "slow down", retryAfter: Duration.seconds(30) }),
        429,
        { _tag: "RateLimited", provider: "chat-completions", message: "slow down", retryAfter: 30_000 }
      ],
      [
        new AiError.RateLimited({ provider, message: "slow down a bit", retryAfter: Duration.millis(1500) }),
        429,
        { _tag: "RateLimited", provider: "chat-completions", message: "slow down a bit", retryAfter: 1500 }
      ],
      [
        new AiError.RateLimited({ provider, message: "no wait said" }),
        429,
        { _tag: "RateLimited", provider: "chat-completions", message: "no wait said" }
      ],
      [
        new AiError.Timeout({ provider, message: "took too long" }),
        408,
        { _tag: "Timeout", provider: "chat-completions", message: "took too long" }
      ],
      [
        new AiError.ContextLengthExceeded({ provider, message: "the conversation is 130k tokens" }),
        400,
        {
          _tag: "ContextLengthExceeded",
          provider: "chat-completions",
          message: "the conversation is 130k tokens (context_length_exceeded)"
        }
      ],
      [
        new AiError.InvalidRequest({ provider, status: 400, message: "messages: must not be empty" }),
        400,
        { _tag: "InvalidRequest", provider: "chat-completions", status: 400, message: "messages: must not be empty" }
      ],
      [
        new AiError.InvalidRequest({ provider, status: 400, message: "this model's maximum context length is fine" }),
        422,
        {
          _tag: "InvalidRequest",
          provider: "chat-completions",
          status: 422,
          message: "this model's maximum context length is fine"
        }
      ],
      [
        new AiError.InvalidRequest({ provider, status: 404, message: "model 'x' not found" }),
        404,
        { _tag: "InvalidRequest", provider: "chat-completions", status: 404, message: "model 'x' not found" }
      ],
      [
        new AiError.InvalidRequest({ provider, message: "no status" }),
        400,
        { _tag: "InvalidRequest", provider: "chat-completions", status: 400, message: "no status" }
      ],
      [
        new AiError.Unavailable({ provider, status: 503, message: "down for a bit", retryAfter: Duration.seconds(2) }),
        503,
        { _tag: "Unavailable", provider: "chat-completions", status: 503, message: "down for a bit", retryAfter: 2000 }
      ],
      [
        new AiError.Unavailable({ provider, status: 504, message: "a 504 would be a Timeout" }),
        503,
        { _tag: "Unavailable", provider: "chat-completions", status: 503, message: "a 504 would be a Timeout" }
      ],
      [
        new AiError.QuotaExceeded({ provider, message: "You exceeded your current quota" }),
        429,
        {
          _tag: "QuotaExceeded",
          provider: "chat-completions",
          status: 429,
          message: "You exceeded your current quota (insufficient_quota)"
        }
      ],
      [
        new AiError.QuotaExceeded({ provider, status: 402, message: "Insufficient credits" }),
        402,
        {
          _tag: "QuotaExceeded",
          provider: "chat-completions",
          status: 402,
          message: "Insufficient credits (insufficient_quota)"
        }
      ],
      [
        new AiError.MalformedEvent({ provider, event: "message", message: "choices: Expected an array" }),
        200,
        {
          _tag: "MalformedEvent",
          provider: "chat-completions",
          event: "message",
          message: expect.stringMatching(/^data is not JSON: /)
        }
      ],
      [
        new AiError.IncompleteTurn({ message: "cut off" }),
        200,
        { _tag: "IncompleteTurn", message: "chat-completions: the stream ended before a finish_reason" }
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

    for (const [error, status, expected] of errors) {
      it.effect(`${error._tag}: ${error.message}`, () =>
        run((server) =>
          Effect.gen(function*() {
            const answer = wire.error(error)
            expect(answer.status).toBe(status)
            expect(answer.headers["content-type"]).toBe(status === 200 ? "text/event-stream" : "application/json")
            yield* server.reply(ProviderServer.status(answer.status, answer.body, { ...answer.headers }))
            const result = yield* failing(hello)
            expect(result.deltas).toStrictEqual([])
            expect(encode(result.error)).toStrictEqual(expected)
          }), { retryPolicy: ProviderRetry.none }))
    }
  })
})
