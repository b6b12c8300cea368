import { Item, ProviderStream, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { GeminiDecoder, GeminiRequest } from "../src/index.ts"
import type { GeminiEvent } from "../src/index.ts"

const encoder = new TextEncoder()

/** The deltas the decoder makes of `chunks`, sent as one SSE body. */
const decode = (chunks: ReadonlyArray<unknown>, fallbackKey = "k") =>
  Stream.runCollect(
    Stream.make(encoder.encode(chunks.map((chunk) => ProviderServer.sseEvent(chunk)).join(""))).pipe(
      ProviderStream.decode(GeminiDecoder.make({ model: "m", fallbackKey }), { provider: "gemini" })
    )
  )

const assemble = (chunks: ReadonlyArray<unknown>, fallbackKey = "k") =>
  Effect.gen(function*() {
    const deltas = yield* decode(chunks, fallbackKey)
    const last = deltas[deltas.length - 1]
    if (last?.type !== "turn_complete") throw new Error("no turn_complete")
    return { deltas, turn: last.turn }
  })

const modelChunk = (parts: ReadonlyArray<GeminiEvent.Part>, finishReason?: string) => ({
  candidates: [{ content: { role: "model", parts }, ...(finishReason === undefined ? {} : { finishReason }) }]
})

/** The model content the next request sends for a turn's items. */
const resent = (turn: Turn.Turn) =>
  Effect.map(GeminiRequest.make([Item.userMessage("hi"), ...turn.items], {}), (body) => body.contents.slice(1))

describe("GeminiDecoder", () => {
  it.effect("keeps the order of text, thoughts and calls as separate items", () =>
    Effect.gen(function*() {
      const { deltas, turn } = yield* assemble([
        modelChunk([{ text: "Let me think", thought: true }, { text: "I will look." }]),
        modelChunk([{ functionCall: { name: "look", args: {} } }, { text: "Done" }], "STOP")
      ])
      expect(turn.items.map((item) => item.type)).toStrictEqual(["reasoning", "message", "function_call", "message"])
      expect(turn.stopReason).toBe("tool_calls")
      expect(deltas.map((delta) => delta.type)).toStrictEqual([
        "reasoning_delta",
        "text_delta",
        "function_call_start",
        "function_call_arguments_delta",
        "function_call_done",
        "text_delta",
        "usage",
        "turn_complete"
      ])
      expect(new Set(turn.items.map((item) => item.id)).size).toBe(4)
    }))

  it.effect("names items and synthesised call ids after the fallback key when the wire has no responseId", () =>
    Effect.gen(function*() {
      const { turn } = yield* assemble([
        modelChunk([{ functionCall: { name: "a", args: {} } }, { functionCall: { name: "b" } }], "STOP")
      ], "fb")
      expect(Turn.functionCalls(turn).map((call) => [call.id, call.call_id, call.arguments])).toStrictEqual([
        ["gemini_fb_0", "gemini_call_fb_0", "{}"],
        ["gemini_fb_1", "gemini_call_fb_1", "{}"]
      ])
      expect(turn.model).toBe("m")
      expect(turn.responseId).toBeUndefined()
      expect(turn.usage).toStrictEqual({ input: 0, output: 0, total: 0 })
    }))

  it.effect("keeps the last usage snapshot, not a sum of the chunks'", () =>
    Effect.gen(function*() {
      const { deltas, turn } = yield* assemble([
        { ...modelChunk([{ text: "a" }]), usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 1 } },
        {
          ...modelChunk([{ text: "b" }], "STOP"),
          usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 2, toolUsePromptTokenCount: 3 }
        }
      ])
      expect(turn.usage).toStrictEqual({ input: 13, output: 2, total: 15 })
      expect(deltas.filter((delta) => delta.type === "usage")).toHaveLength(1)
    }))

  it.effect("ignores candidates other than the first and parts it does not know", () =>
    Effect.gen(function*() {
      const { turn } = yield* assemble([{
        candidates: [
          { content: { parts: [{ text: "one" }] }, finishReason: "STOP" },
          { content: { parts: [{ text: "two" }] }, finishReason: "STOP" }
        ]
      }])
      expect(Turn.text(turn)).toBe("one")
      const withUnknownPart = yield* decode([
        {
          candidates: [{
            content: { parts: [{ inlineData: { mimeType: "image/png", data: "" } }, { text: "x" }] },
            finishReason: "STOP"
          }]
        }
      ])
      expect(withUnknownPart.filter((delta): delta is TurnDelta.TextDelta => delta.type === "text_delta"))
        .toStrictEqual([
          { type: "text_delta", delta: "x" }
        ])
    }))

  it.effect("sends every thought signature back on the part it came with", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<ReadonlyArray<GeminiEvent.Part>> = [
        [{ text: "thinking", thought: true, thoughtSignature: "s1" }, { text: "answer" }],
        [{ text: "thinking", thought: true }, { functionCall: { name: "f", args: { a: 1 } }, thoughtSignature: "s2" }],
        [{ functionCall: { name: "f", args: {} }, thoughtSignature: "s3" }, { functionCall: { name: "g", args: {} } }],
        [{ text: "answer", thoughtSignature: "s4" }],
        [{ functionCall: { name: "f", args: {} } }, { text: "", thoughtSignature: "s5" }],
        [
          { text: "t1", thought: true, thoughtSignature: "s6" },
          { text: "t2", thought: true, thoughtSignature: "s7" },
          { text: "answer" }
        ]
      ]
      for (const parts of cases) {
        const { turn } = yield* assemble([modelChunk(parts, "STOP")])
        expect(yield* resent(turn)).toStrictEqual([{ role: "model", parts }])
      }
    }))

  it.effect("merges a text stream whose signature arrives on a final empty part", () =>
    Effect.gen(function*() {
      const { turn } = yield* assemble([
        modelChunk([{ text: "Hel" }]),
        modelChunk([{ text: "lo" }]),
        modelChunk([{ text: "", thoughtSignature: "sig" }], "STOP")
      ])
      expect(yield* resent(turn)).toStrictEqual([{
        role: "model",
        parts: [{ text: "Hello", thoughtSignature: "sig" }]
      }])
    }))

  it.effect("keeps both signatures of two signed text parts instead of merging them into one", () =>
    Effect.gen(function*() {
      const parts: ReadonlyArray<GeminiEvent.Part> = [
        { text: "first", thoughtSignature: "s1" },
        { text: " second", thoughtSignature: "s2" }
      ]
      const { turn } = yield* assemble([modelChunk(parts.slice(0, 1)), modelChunk(parts.slice(1), "STOP")])
      expect(Turn.text(turn)).toBe("first second")
      expect(yield* resent(turn)).toStrictEqual([{ role: "model", parts }])
    }))
})
