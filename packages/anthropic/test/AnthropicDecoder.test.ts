import { AiError, ProviderStream, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { AnthropicDecoder } from "../src/index.ts"
import {
  blockStart,
  blockStop,
  delta,
  event,
  messageDelta,
  messageStart,
  messageStop,
  textBlock,
  toolUseBlock
} from "./fixtures.ts"

const encoder = new TextEncoder()

/** The deltas the decoder makes of `frames` sent as one body, and the error it failed with, if any. */
const decode = (frames: ReadonlyArray<string>, options: Partial<AnthropicDecoder.Options> = {}) =>
  Effect.gen(function*() {
    const deltas: Array<TurnDelta.TurnDelta> = []
    const decoder = AnthropicDecoder.make({ model: "claude-test", fallbackKey: "k", ...options })
    const error = yield* Stream.make(encoder.encode(frames.join(""))).pipe(
      ProviderStream.decode(decoder, { provider: "anthropic" }),
      Stream.runForEach((d) => Effect.sync(() => deltas.push(d))),
      Effect.flip,
      Effect.orElseSucceed(() => undefined)
    )
    const last = deltas[deltas.length - 1]
    return { deltas, error, turn: last?.type === "turn_complete" ? last.turn : undefined }
  })

const malformed = (frames: ReadonlyArray<string>) =>
  Effect.map(decode(frames), ({ error }) => {
    expect(error).toBeInstanceOf(AiError.MalformedEvent)
    return error?.message ?? ""
  })

describe("AnthropicDecoder", () => {
  it.effect("fails with MalformedEvent naming the field when an event does not match its schema", () =>
    Effect.gen(function*() {
      const start = messageStart("msg_bad")
      expect(yield* malformed(["data: {\"type\":\n\n"])).toMatch(/not JSON/)
      expect(yield* malformed(["data: {\"index\":0}\n\n"])).toMatch(/type/)
      expect(yield* malformed([start, blockStart(-1, { type: "text", text: "" })])).toMatch(
        /index: .*non-negative integer/
      )
      expect(yield* malformed([start, blockStart(0, { type: "text" })])).toMatch(/content_block.text/)
      expect(yield* malformed([start, blockStart(0, { type: "tool_use", name: "f" })])).toMatch(/content_block.id/)
      expect(yield* malformed([start, blockStart(0, { type: "text", text: "" }), delta(0, { type: "text_delta" })]))
        .toMatch(/delta.text/)
      expect(yield* malformed([start, messageDelta(null, { output_tokens: -1 })])).toMatch(/usage.output_tokens/)
      expect(yield* malformed([start, event("error", { message: "no error object" })])).toMatch(/error/)
    }))

  it.effect("fails with MalformedEvent when a delta or a stop names a block that is not open, or a block starts twice", () =>
    Effect.gen(function*() {
      const start = messageStart("msg_bad")
      expect(yield* malformed([start, delta(4294967295, { type: "text_delta", text: "x" })])).toMatch(
        /content block 4294967295 was never started/
      )
      expect(yield* malformed([start, ...textBlock(0, "a"), delta(0, { type: "text_delta", text: "b" })])).toMatch(
        /has stopped/
      )
      expect(yield* malformed([start, blockStop(2)])).toMatch(/was never started/)
      expect(
        yield* malformed([start, blockStart(0, { type: "text", text: "" }), blockStart(0, { type: "text", text: "" })])
      )
        .toMatch(/started twice/)
      expect(
        yield* malformed([
          start,
          ...toolUseBlock(0, "toolu_1", "f").slice(0, 1),
          delta(0, { type: "text_delta", text: "x" })
        ])
      )
        .toMatch(/a text_delta for a call block/)
      expect(
        yield* malformed([
          start,
          blockStart(0, { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }),
          delta(0, { type: "input_json_delta", partial_json: "{\"query\": " }),
          blockStop(0)
        ])
      ).toMatch(/not JSON/)
    }))

  it.effect("an input streamed as one empty piece is an empty object, for a server tool and a client tool", () =>
    Effect.gen(function*() {
      const { error, turn } = yield* decode([
        messageStart("msg_empty"),
        blockStart(0, { type: "server_tool_use", id: "srvtoolu_1", name: "web_fetch", input: {} }),
        delta(0, { type: "input_json_delta", partial_json: "" }),
        blockStop(0),
        blockStart(1, { type: "tool_use", id: "toolu_1", name: "now", input: {} }),
        delta(1, { type: "input_json_delta", partial_json: "" }),
        blockStop(1),
        messageDelta("tool_use"),
        messageStop
      ])
      expect(error).toBeUndefined()
      expect(turn?.items.map((item) => item.type === "function_call" ? item.arguments : item)).toMatchObject([
        { type: "x-anthropic.server_tool_use", data: { id: "srvtoolu_1", input: {} } },
        "{}"
      ])
    }))

  it.effect("a body that ends before message_stop fails with IncompleteTurn after the deltas it carried", () =>
    Effect.gen(function*() {
      const { deltas, error } = yield* decode([
        messageStart("msg_cut"),
        ...textBlock(0, "cut ", "off"),
        messageDelta("end_turn")
      ])
      expect(deltas).toStrictEqual([{ type: "text_delta", delta: "cut " }, { type: "text_delta", delta: "off" }])
      expect(error).toBeInstanceOf(AiError.IncompleteTurn)
    }))

  it.effect("skips events and deltas of unknown types, and streams the text a block starts with", () =>
    Effect.gen(function*() {
      const { deltas, turn } = yield* decode([
        messageStart("msg_skip"),
        event("a_new_event", { anything: [1, 2] }),
        blockStart(0, { type: "text", text: "Hi" }),
        delta(0, { type: "a_new_delta", value: 1 }),
        delta(0, { type: "text_delta", text: " there" }),
        blockStop(0),
        messageDelta("end_turn"),
        messageStop
      ])
      expect(deltas.slice(0, 2)).toStrictEqual([{ type: "text_delta", delta: "Hi" }, {
        type: "text_delta",
        delta: " there"
      }])
      expect(Turn.text(turn!)).toBe("Hi there")
    }))

  it.effect("takes each usage count from message_delta when it carries it, else from message_start", () =>
    Effect.gen(function*() {
      const { turn } = yield* decode([
        messageStart("msg_usage", {
          input_tokens: 10,
          cache_creation_input_tokens: 50,
          cache_read_input_tokens: 5,
          output_tokens: 1
        }),
        ...textBlock(0, "a"),
        messageDelta(null, { output_tokens: 3 }),
        messageDelta("end_turn", {
          input_tokens: 12,
          cache_read_input_tokens: null as unknown as number,
          output_tokens: 7
        }),
        messageStop
      ])
      expect(turn?.usage).toStrictEqual({ input: 12 + 50 + 5, output: 7, total: 74, cachedInput: 5, cacheWrite: 50 })
      const bare = yield* decode([
        event("message_start", { message: { id: "msg_bare" } }),
        ...textBlock(0, "a"),
        messageStop
      ])
      expect(bare.turn?.usage).toStrictEqual({ input: 0, output: 0, total: 0 })
      expect(bare.turn?.stopReason).toBe("stop")
      expect(bare.turn?.providerStopReason).toBeUndefined()
      expect(bare.turn?.model).toBe("claude-test")
      expect(bare.deltas.some((d) => d.type === "usage")).toBe(false)
    }))

  it.effect("takes the thinking tokens newer models count apart as the usage's reasoning, part of its output", () =>
    Effect.gen(function*() {
      const start = messageStart("msg_think", {
        input_tokens: 28,
        output_tokens: 5,
        output_tokens_details: { thinking_tokens: 0 }
      })
      const thought = [
        blockStart(0, { type: "thinking", thinking: "", signature: "" }),
        delta(0, { type: "thinking_delta", thinking: "Weighing it." }),
        delta(0, { type: "signature_delta", signature: "c2ln" }),
        blockStop(0),
        ...textBlock(1, "Done.")
      ]
      const { turn } = yield* decode([
        start,
        ...thought,
        messageDelta("end_turn", { output_tokens: 106, output_tokens_details: { thinking_tokens: 67 } }),
        messageStop
      ])
      expect(turn?.usage).toStrictEqual({ input: 28, output: 106, total: 134, reasoning: 67 })
      // A delta without the details keeps message_start's count; a null one is no count.
      const kept = yield* decode([start, ...thought, messageDelta("end_turn", { output_tokens: 9 }), messageStop])
      expect(kept.turn?.usage.reasoning).toBe(0)
      const none = yield* decode([
        messageStart("msg_null", { input_tokens: 3, output_tokens: 1, output_tokens_details: null as never }),
        ...textBlock(0, "a"),
        messageDelta("end_turn", { output_tokens: 2 }),
        messageStop
      ])
      expect(none.turn?.usage).toStrictEqual({ input: 3, output: 2, total: 5 })
    }))

  it.effect("names items after the fallback key when the stream carries no message id", () =>
    Effect.gen(function*() {
      const { turn } = yield* decode([event("message_start", { message: {} }), ...textBlock(0, "a"), messageStop], {
        fallbackKey: "fb"
      })
      expect(turn?.items.map((item) => item.id)).toStrictEqual(["anthropic_fb_0"])
      expect(turn?.responseId).toBeUndefined()
    }))

  it.effect("turns the structured output's tool call into the answer's text, and its tool_use stop into stop", () =>
    Effect.gen(function*() {
      const { deltas, turn } = yield* decode([
        messageStart("msg_out"),
        ...toolUseBlock(0, "toolu_out", "output", "{\"answer\":", " 42}"),
        messageDelta("tool_use"),
        messageStop
      ], { outputTool: "output" })
      expect(deltas.slice(0, 2)).toStrictEqual([{ type: "text_delta", delta: "{\"answer\":" }, {
        type: "text_delta",
        delta: " 42}"
      }])
      expect(turn?.stopReason).toBe("stop")
      expect(turn?.providerStopReason).toBe("tool_use")
      expect(Turn.functionCalls(turn!)).toStrictEqual([])
      expect(JSON.parse(Turn.text(turn!))).toStrictEqual({ answer: 42 })
    }))
})
