import { AiError, Turn } from "@agentloop/core"
import type { Item, TurnDelta } from "@agentloop/core"
import type * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import { ProviderHarness, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { Gemini, GeminiDecoder } from "../src/index.ts"
import { GeminiWire } from "../src/testing/index.ts"
import { conformance } from "./fixtures.ts"

const { wire } = GeminiWire
const provider = "gemini"

const message = (text: string): Item.Message => ({
  type: "message",
  id: "msg",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text }]
})

const reasoning = (text: string, signature?: string): Item.Reasoning => ({
  type: "reasoning",
  id: "rs",
  status: "completed",
  content: [{ type: "output_text", text }],
  ...(signature === undefined ? {} : { encrypted_content: signature })
})

/** A reasoning item that is only a thought signature, as the decoder makes of a signature on a text or call part. */
const signature = (value: string): Item.Reasoning => ({
  type: "reasoning",
  id: "sig",
  status: "completed",
  content: [],
  encrypted_content: value
})

const call = (callId: string, name: string, args: unknown): Item.FunctionCall => ({
  type: "function_call",
  id: "fc",
  status: "completed",
  call_id: callId,
  name,
  arguments: JSON.stringify(args)
})

const usage = (input: number, output: number, details: { cachedInput?: number; reasoning?: number } = {}) => ({
  input,
  output,
  total: input + output,
  ...details
})

/** Gemini's finish reason for each stop reason, when the turn keeps no raw one. */
const finishReasons: Readonly<Record<Turn.StopReason, string>> = {
  stop: "STOP",
  tool_calls: "STOP",
  max_tokens: "MAX_TOKENS",
  content_filter: "SAFETY",
  malformed_tool_call: "MALFORMED_FUNCTION_CALL",
  other: "OTHER"
}

/**
 * What the decoder must give back for `turn`: the turn itself, with the fields
 * the wire leaves to Gemini filled in as Gemini fills them, and with every item's
 * `id` and `status` (the decoder's own) left out. Nothing else is normalised.
 */
const expected = (turn: Turn.Turn) =>
  normalise({
    ...turn,
    model: turn.model ?? Gemini.defaultModel,
    responseId: turn.responseId ?? GeminiWire.defaultResponseId,
    providerStopReason: turn.providerStopReason ?? finishReasons[turn.stopReason]
  })

const normalise = (turn: Turn.Turn) => ({
  ...turn,
  items: turn.items.map(({ id: _id, status: _status, ...rest }) => rest)
})

const textOf = (deltas: ReadonlyArray<TurnDelta.TurnDelta>, type: "text_delta" | "reasoning_delta") =>
  deltas.flatMap((delta) => delta.type === type ? [delta.delta] : [])

const reasoningText = (turn: Turn.Turn): string =>
  turn.items.flatMap((item) =>
    item.type === "reasoning" ? item.content.map((part) => "text" in part ? part.text : "") : []
  )
    .join("")

/** `text` in pieces of `size` code points, as the wire must cut it. */
const piecesOf = (text: string, size: number): Array<string> => {
  const points = [...text]
  const out: Array<string> = []
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(""))
  return out
}

/** Serves `frames` (split into writes of `bytes` bytes, when given) and runs one turn of the Gemini layer on them. */
const decode = (frames: ReadonlyArray<string>, bytes?: number) =>
  ProviderHarness.run(conformance, (server, model) =>
    Effect.gen(function*() {
      yield* server.reply(ProviderServer.sse(frames, { chunkSize: bytes }))
      return yield* ProviderHarness.turn(model)
    }))

/**
 * Writes `turn` with `options`, decodes it over HTTP, and checks that the
 * provider gives back the same turn, its text and reasoning in the deltas, one
 * argument delta per call, and the usage delta before `turn_complete`.
 */
const roundTrip = (turn: Turn.Turn, options?: ProviderWire.TurnOptions, bytes?: number) =>
  Effect.gen(function*() {
    const { deltas, error } = yield* decode(wire.turn(turn, options), bytes)
    expect(error).toBeUndefined()
    const decoded = ProviderHarness.completed(deltas)
    expect(normalise(decoded)).toStrictEqual(expected(turn))
    expect(textOf(deltas, "text_delta").join("")).toBe(Turn.text(turn))
    expect(textOf(deltas, "reasoning_delta").join("")).toBe(reasoningText(turn))
    for (const fc of Turn.functionCalls(decoded)) {
      expect(deltas.filter((d) => "call_id" in d && d.call_id === fc.call_id)).toStrictEqual([
        { type: "function_call_start", call_id: fc.call_id, name: fc.name },
        { type: "function_call_arguments_delta", call_id: fc.call_id, delta: fc.arguments },
        { type: "function_call_done", call_id: fc.call_id, name: fc.name, arguments: fc.arguments }
      ])
    }
    expect(deltas[deltas.length - 2]).toStrictEqual({ type: "usage", usage: turn.usage })
    // The decoder's ids: its prefix, the response's id, one per item.
    const responseId = turn.responseId ?? GeminiWire.defaultResponseId
    expect(decoded.items.map((item) => item.id)).toStrictEqual(
      decoded.items.map((_, i) => `${GeminiDecoder.itemIdPrefix}${responseId}_${i}`)
    )
    return { deltas, decoded }
  })

const chunks = (frames: ReadonlyArray<string>): Array<any> =>
  frames.map((frame) => {
    expect(frame).toMatch(/^data: [^\n]+\n\n$/)
    return JSON.parse(frame.slice("data: ".length))
  })

const toolTurn: Turn.Turn = {
  items: [
    reasoning("The user wants the weather in Zürich and the time in 東京.", "c2lnLXRob3VnaHQ="),
    message("Checking both. ✓"),
    signature("c2lnLWNhbGw="),
    call("fc-1", "get_weather", { city: "Zürich", unit: "°C" }),
    call("fc-2", "get_time", { zone: "Asia/Tokyo", label: "東京 🌸" })
  ],
  usage: usage(120, 80, { cachedInput: 64, reasoning: 50 }),
  stopReason: "tool_calls",
  model: "gemini-3-pro-preview",
  responseId: "resp-tools"
}

describe("GeminiWire.turn", () => {
  it.effect("a text turn round-trips, one chunk per piece, the last with the finish reason and the usage", () =>
    Effect.gen(function*() {
      const turn: Turn.Turn = {
        items: [message("Hello, world. This answer is longer than one piece.")],
        usage: usage(12, 9),
        stopReason: "stop",
        model: "gemini-2.5-flash-001",
        responseId: "resp-text",
        providerStopReason: "STOP"
      }
      const { deltas } = yield* roundTrip(turn)
      expect(textOf(deltas, "text_delta")).toStrictEqual(piecesOf(Turn.text(turn), GeminiWire.defaultChunkSize))

      const written = chunks(wire.turn(turn))
      expect(written).toHaveLength(4)
      for (const chunk of written) {
        expect(chunk).toMatchObject({ modelVersion: "gemini-2.5-flash-001", responseId: "resp-text" })
        expect(chunk.candidates[0].content).toMatchObject({ role: "model" })
      }
      // The chunks before the last report the prompt's tokens only: the last usage is the one that counts.
      expect(written[0].usageMetadata).toStrictEqual({ promptTokenCount: 12, totalTokenCount: 12 })
      for (const chunk of written.slice(0, -1)) expect(chunk.candidates[0].finishReason).toBeUndefined()
      expect(written[3].candidates[0]).toStrictEqual({
        content: { role: "model", parts: [{ text: "ce." }] },
        finishReason: "STOP",
        index: 0
      })
      expect(written[3].usageMetadata).toStrictEqual({
        promptTokenCount: 12,
        candidatesTokenCount: 9,
        totalTokenCount: 21
      })
    }))

  it.effect("a turn without model, responseId or raw stop reason comes back with Gemini's", () =>
    Effect.gen(function*() {
      const { decoded } = yield* roundTrip({ items: [message("ok")], usage: usage(3, 1), stopReason: "stop" })
      expect([decoded.model, decoded.responseId, decoded.providerStopReason]).toStrictEqual([
        Gemini.defaultModel,
        GeminiWire.defaultResponseId,
        "STOP"
      ])
    }))

  it.effect("text with multi-byte characters splits into whole characters at every chunk size, and at every byte", () =>
    Effect.gen(function*() {
      const text = "Grüße aus Zürich, café ☕ — 🎉👩‍👩‍👧 日本語のテキスト ✓ and é at the end: é"
      const turn: Turn.Turn = {
        items: [message(text)],
        usage: usage(7, 30),
        stopReason: "stop",
        responseId: "resp-utf8"
      }
      for (const chunkSize of [1, 2, 3, 5, 16, 1000]) {
        const { deltas } = yield* roundTrip(turn, { chunkSize })
        expect(textOf(deltas, "text_delta")).toStrictEqual(piecesOf(text, chunkSize))
      }
      expect(textOf((yield* roundTrip(turn, { chunkSize: 1 }, 1)).deltas, "text_delta")).toStrictEqual(
        piecesOf(text, 1)
      )
      expect(textOf((yield* roundTrip(turn, { chunkSize: 4 }, 3)).deltas, "text_delta")).toStrictEqual(
        piecesOf(text, 4)
      )
      // Emoji are never cut into halves of a surrogate pair.
      expect(textOf((yield* roundTrip(turn, { chunkSize: 1 })).deltas, "text_delta")).toContain("🎉")
    }))

  it.effect("reasoning with its signature, text, a signature and two function calls round-trip at every chunk size", () =>
    Effect.gen(function*() {
      for (const chunkSize of [1, 3, 7, 16, 1000]) {
        const { decoded } = yield* roundTrip(toolTurn, { chunkSize })
        expect(decoded.stopReason).toBe("tool_calls")
      }
      yield* roundTrip(toolTurn, { chunkSize: 5 }, 2)
      // As Gemini sends them: the signature on the last thought piece and on the first call, each call whole.
      const parts = chunks(wire.turn(toolTurn, { chunkSize: 1000 })).map((chunk) =>
        chunk.candidates[0].content.parts[0]
      )
      expect(parts).toStrictEqual([
        {
          text: "The user wants the weather in Zürich and the time in 東京.",
          thought: true,
          thoughtSignature: "c2lnLXRob3VnaHQ="
        },
        { text: "Checking both. ✓" },
        {
          functionCall: { id: "fc-1", name: "get_weather", args: { city: "Zürich", unit: "°C" } },
          thoughtSignature: "c2lnLWNhbGw="
        },
        { functionCall: { id: "fc-2", name: "get_time", args: { zone: "Asia/Tokyo", label: "東京 🌸" } } }
      ])
    }))

  it.effect("call ids the decoder made up are left out, and made up again the same", () =>
    Effect.gen(function*() {
      const turn: Turn.Turn = {
        items: [
          call("gemini_call_resp-7_0", "get_weather", { city: "Oslo" }),
          call("fc-given", "get_weather", { city: "Rome" }),
          call("gemini_call_resp-7_1", "get_weather", { city: "Lima" })
        ],
        usage: usage(10, 10),
        stopReason: "tool_calls",
        responseId: "resp-7"
      }
      yield* roundTrip(turn)
      const ids = chunks(wire.turn(turn)).map((chunk) => chunk.candidates[0].content.parts[0].functionCall.id)
      expect(ids).toStrictEqual([undefined, "fc-given", undefined])
    }))

  it.effect("signatures and item boundaries: signed thoughts, and messages apart around a signature", () =>
    Effect.gen(function*() {
      const turn: Turn.Turn = {
        items: [
          reasoning("first thought", "c2lnLTE="),
          reasoning("second thought"),
          message("Part one."),
          signature("c2lnLTI="),
          message("Part two."),
          signature("c2lnLTM="),
          reasoning("", "c2lnLTQ=")
        ],
        usage: usage(4, 4),
        stopReason: "stop",
        responseId: "resp-sig"
      }
      for (const chunkSize of [1, 4, 100]) yield* roundTrip(turn, { chunkSize })
    }))

  it.effect("grounding: the last message's citations, spans in multi-byte text, come back with their deltas", () =>
    Effect.gen(function*() {
      const text = "Zürich liegt am See 🌊. Es ist groß."
      const cited: Item.Message = {
        ...message(text),
        content: [{
          type: "output_text",
          text,
          annotations: [
            {
              type: "url_citation",
              url: "https://example.com/zurich",
              title: "example.com",
              start_index: 0,
              end_index: 22
            },
            { type: "file_citation", title: "Atlas", cited_text: "Zürich, a city", start_index: 23, end_index: 36 },
            { type: "url_citation", url: "https://example.com/lake" }
          ]
        }]
      }
      const turn: Turn.Turn = {
        items: [message("First, "), signature("c2ln"), cited],
        usage: usage(4, 4),
        stopReason: "stop",
        responseId: "resp-grounded"
      }
      for (const chunkSize of [1, 5, 100]) {
        const { deltas } = yield* roundTrip(turn, { chunkSize })
        expect(deltas.filter((d) => d.type === "citation").map((d) => d.type === "citation" && d.citation))
          .toStrictEqual(
            cited.content[0]?.type === "output_text" ? cited.content[0].annotations : []
          )
      }
    }))

  it.effect("MAX_TOKENS ends the turn with max_tokens, the cut message incomplete", () =>
    Effect.gen(function*() {
      const { decoded } = yield* roundTrip({
        items: [reasoning("Planning a long story."), message("Once upon a time, in a land far")],
        usage: usage(10, 64, { reasoning: 20 }),
        stopReason: "max_tokens",
        responseId: "resp-max"
      })
      expect(decoded.providerStopReason).toBe("MAX_TOKENS")
      expect(decoded.items.map((item) => item.status)).toStrictEqual(["completed", "incomplete"])
    }))

  it.effect("usage with cached and reasoning tokens, zero counts, and without the optional counts", () =>
    Effect.gen(function*() {
      for (
        const u of [
          usage(1200, 350, { cachedInput: 1000, reasoning: 200 }),
          usage(5, 0, { cachedInput: 0, reasoning: 0 }),
          usage(5, 3),
          usage(0, 0),
          usage(9, 40, { reasoning: 40 })
        ]
      ) {
        yield* roundTrip({ items: [reasoning("hm"), message("Done.")], usage: u, stopReason: "stop" })
      }
      expect(GeminiWire.usageMetadata(usage(1200, 350, { cachedInput: 1000, reasoning: 200 }))).toStrictEqual({
        promptTokenCount: 1200,
        cachedContentTokenCount: 1000,
        candidatesTokenCount: 150,
        thoughtsTokenCount: 200,
        totalTokenCount: 1550
      })
    }))

  it.effect("other stop reasons, raw or not, a blocked prompt and an empty turn", () =>
    Effect.gen(function*() {
      const turns: ReadonlyArray<Turn.Turn> = [
        { items: [message("Here is how to")], usage: usage(5, 4), stopReason: "content_filter" },
        {
          items: [message("As the song")],
          usage: usage(5, 3),
          stopReason: "content_filter",
          providerStopReason: "RECITATION"
        },
        { items: [], usage: usage(5, 0), stopReason: "malformed_tool_call" },
        {
          items: [call("fc-x", "f", {})],
          usage: usage(5, 2),
          stopReason: "malformed_tool_call",
          providerStopReason: "UNEXPECTED_TOOL_CALL"
        },
        { items: [message("Je")], usage: usage(5, 1), stopReason: "other", providerStopReason: "LANGUAGE" },
        { items: [message("?")], usage: usage(5, 1), stopReason: "other" },
        { items: [call("fc-y", "f", { n: 1 })], usage: usage(5, 2), stopReason: "max_tokens" },
        {
          items: [],
          usage: usage(9, 0),
          stopReason: "content_filter",
          providerStopReason: "blockReason:PROHIBITED_CONTENT"
        },
        { items: [], usage: usage(0, 0), stopReason: "stop" }
      ]
      for (const turn of turns) yield* roundTrip(turn)
      const blocked = chunks(wire.turn(turns[7]!))
      expect(blocked).toStrictEqual([{
        promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
        usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 0, totalTokenCount: 9 },
        modelVersion: Gemini.defaultModel,
        responseId: GeminiWire.defaultResponseId
      }])
    }))

  it.effect("complete: false leaves out the finish reason, and the layer fails with IncompleteTurn", () =>
    Effect.gen(function*() {
      const turns: ReadonlyArray<Turn.Turn> = [
        { items: [message("cut off here")], usage: usage(3, 3), stopReason: "stop" },
        toolTurn,
        { items: [], usage: usage(9, 0), stopReason: "content_filter", providerStopReason: "blockReason:SAFETY" },
        { items: [], usage: usage(0, 0), stopReason: "stop" }
      ]
      for (const turn of turns) {
        const frames = wire.turn(turn, { complete: false, chunkSize: 4 })
        for (const chunk of chunks(frames)) {
          expect(chunk.candidates?.[0]?.finishReason).toBeUndefined()
          expect(chunk.promptFeedback).toBeUndefined()
        }
        const { deltas, error } = yield* decode(frames)
        expect(error?._tag).toBe("IncompleteTurn")
        // Everything before the end still streamed.
        expect(textOf(deltas, "text_delta").join("")).toBe(Turn.text(turn))
        expect(deltas.some((delta) => delta.type === "turn_complete")).toBe(false)
      }
    }))
})

describe("GeminiWire.turn refuses what Gemini's wire cannot carry", () => {
  const base: Turn.Turn = { items: [], usage: usage(1, 1), stopReason: "stop" }
  const refused: Array<readonly [string, Turn.Turn, RegExp]> = [
    [
      "a user message",
      {
        ...base,
        items: [message("hi"), { ...message("hello"), role: "user", content: [{ type: "input_text", text: "hello" }] }]
      },
      /^GeminiWire: items\[1\] \(message\) is a user message/
    ],
    [
      "a tool's output",
      { ...base, items: [{ type: "function_call_output", id: "o", status: "completed", call_id: "c", output: "1" }] },
      /items\[0\] \(function_call_output\) is a tool's output/
    ],
    [
      "an extension item",
      { ...base, items: [{ type: "x-note", id: "n", status: "completed", data: {} }] },
      /items\[0\] \(x-note\) is an application's own item/
    ],
    [
      "a refusal",
      { ...base, items: [{ ...message(""), content: [{ type: "refusal", refusal: "No." }] }] },
      /items\[0\] \(message\) has a refusal part: Gemini has no refusals/
    ],
    [
      "input_text in an assistant message",
      { ...base, items: [{ ...message(""), content: [{ type: "input_text", text: "x" }] }] },
      /has an input_text part/
    ],
    [
      "a file in an assistant message",
      {
        ...base,
        items: [{ ...message(""), content: [{ type: "input_file", file_url: "https://example.com/a.pdf" }] }]
      },
      /has an input_file part: Gemini streams only the model's output_text/
    ],
    [
      "a phase",
      { ...base, items: [{ ...message("x"), phase: "commentary" }] },
      /items\[0\] \(message\) has phase "commentary"/
    ],
    [
      "two messages in a row",
      { ...base, items: [message("a"), message("b")] },
      /items\[1\] \(message\) is an assistant message right after another/
    ],
    [
      "two unsigned reasoning items in a row",
      { ...base, items: [reasoning("a"), reasoning("b")] },
      /items\[1\] \(reasoning\) is reasoning right after reasoning without a thought signature/
    ],
    [
      "a reasoning summary",
      { ...base, items: [{ ...reasoning(""), summary: [{ type: "output_text", text: "s" }] }] },
      /items\[0\] \(reasoning\) has a summary/
    ],
    [
      "arguments that are not JSON",
      { ...base, stopReason: "tool_calls", items: [{ ...call("c", "f", {}), arguments: "{\"city\": " }] },
      /items\[0\] \(function_call\) has arguments that are not JSON/
    ],
    ["a cost", { ...base, cost: 0.01 }, /the turn has a cost, which Gemini never reports/],
    [
      "stop with function calls",
      { ...base, items: [call("c", "f", {})] },
      /a turn with function calls cannot stop with stop/
    ],
    [
      "tool_calls without function calls",
      { ...base, stopReason: "tool_calls" },
      /a turn without function calls cannot stop with tool_calls/
    ],
    [
      "a raw stop reason that decodes otherwise",
      { ...base, stopReason: "stop", providerStopReason: "end_turn" },
      /providerStopReason "end_turn" decodes as other, not the turn's stopReason stop/
    ],
    [
      "a blocked prompt that is not content_filter",
      { ...base, providerStopReason: "blockReason:SAFETY" },
      /is a blocked prompt, which decodes as content_filter, not stop/
    ],
    [
      "a total that is not input + output",
      { ...base, usage: { input: 1, output: 1, total: 3 } },
      /usage.total \(3\) is not input \+ output \(2\)/
    ],
    [
      "more reasoning than output",
      { ...base, usage: usage(1, 1, { reasoning: 2 }) },
      /usage.reasoning \(2\) exceeds usage.output \(1\)/
    ]
  ]
  const citing = (...annotations: ReadonlyArray<Item.Citation>): Turn.Turn => ({
    ...base,
    items: [{ ...message("Hi"), content: [{ type: "output_text", text: "Hi", annotations }] }]
  })
  refused.push(
    [
      "a citation kept for another provider",
      citing({ type: "url_citation", url: "https://e.com", cited_text: "x" }),
      /cannot ground/
    ],
    [
      "a spanned citation after one without a span",
      citing({ type: "url_citation", url: "https://e.com" }, {
        type: "url_citation",
        url: "https://e.com",
        start_index: 0,
        end_index: 1
      }),
      /spans first/
    ],
    [
      "citations on a message before the last",
      {
        ...citing({ type: "url_citation", url: "https://e.com" }),
        items: [...citing({ type: "url_citation", url: "https://e.com" }).items, signature("c2ln"), message("more")]
      },
      /only the last message/
    ]
  )
  for (const [name, turn, pattern] of refused) {
    it(name, () => {
      expect(() => wire.turn(turn)).toThrow(pattern)
      expect(() => wire.turn(turn, { complete: false })).toThrow(pattern)
    })
  }

  it("a chunk size that is not a positive integer", () => {
    for (const chunkSize of [0, -1, 1.5, Number.NaN]) {
      expect(() => wire.turn(base, { chunkSize })).toThrow(/chunkSize must be a positive integer/)
    }
  })
})

type Cases = {
  readonly [Tag in AiError.AiError["_tag"]]: ReadonlyArray<Extract<AiError.AiError, { readonly _tag: Tag }>>
}

// One entry per tag, checked by the compiler: a new AiError tag must get a case here.
const errorCases: Cases = {
  AuthFailed: [
    new AiError.AuthFailed({ provider, status: 400, message: "API key expired. Please renew the API key." }),
    new AiError.AuthFailed({ provider, status: 401, message: "Request had invalid authentication credentials." }),
    new AiError.AuthFailed({
      provider,
      status: 403,
      message: "Permission denied: the caller does not have permission."
    })
  ],
  RateLimited: [
    new AiError.RateLimited({
      provider,
      message: "Resource has been exhausted (e.g. check quota).",
      retryAfter: Duration.seconds(7)
    }),
    new AiError.RateLimited({ provider, message: "Too many requests per minute.", retryAfter: Duration.millis(1500) }),
    new AiError.RateLimited({ provider, message: "Too many requests, no hint." })
  ],
  QuotaExceeded: [
    new AiError.QuotaExceeded({
      provider,
      status: 429,
      message: "You exceeded your current quota, please check your plan and billing details."
    }),
    new AiError.QuotaExceeded({ provider, status: 429, message: "Quota exceeded for the day." })
  ],
  Timeout: [new AiError.Timeout({ provider, message: "Deadline expired before operation could complete." })],
  ContextLengthExceeded: [
    new AiError.ContextLengthExceeded({
      provider,
      message: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
    }),
    new AiError.ContextLengthExceeded({ provider, message: "Request payload is too big for this model." })
  ],
  InvalidRequest: [
    new AiError.InvalidRequest({
      provider,
      status: 400,
      message: "Invalid JSON payload received. Unknown name \"foo\"."
    }),
    new AiError.InvalidRequest({
      provider,
      status: 404,
      message: "models/gemini-9 is not found for API version v1beta."
    }),
    new AiError.InvalidRequest({ provider, status: 404, message: "The context window was not found." })
  ],
  Unavailable: [
    new AiError.Unavailable({
      provider,
      status: 503,
      message: "The model is overloaded. Please try again later.",
      retryAfter: Duration.seconds(30)
    }),
    new AiError.Unavailable({ provider, status: 500, message: "An internal error has occurred." })
  ],
  MalformedEvent: [
    new AiError.MalformedEvent({ provider, event: "GenerateContentResponse #0", message: "not a chunk" })
  ],
  IncompleteTurn: [new AiError.IncompleteTurn({ message: "the stream ended early" })]
}

/** Serves `answer` as the loopback server's reply and runs one turn on it. */
const answered = (answer: ProviderWire.HttpAnswer) =>
  ProviderHarness.run(conformance, (server, model) =>
    Effect.gen(function*() {
      yield* server.reply(ProviderServer.status(answer.status, answer.body, { ...answer.headers }))
      const { deltas, error } = yield* ProviderHarness.turn(model)
      expect(deltas.some((delta) => delta.type === "turn_complete")).toBe(false)
      return ProviderHarness.failed({ error })
    }))

const json = { "content-type": "application/json; charset=UTF-8" }

const wait = (error: AiError.AiError) =>
  "retryAfter" in error && error.retryAfter !== undefined ? Duration.toMillis(error.retryAfter) : undefined

describe("GeminiWire.error", () => {
  it.effect("each HTTP error comes back from Google's error body as the same error, message, status and wait", () =>
    Effect.gen(function*() {
      const httpErrors = [
        ...errorCases.AuthFailed,
        ...errorCases.RateLimited,
        ...errorCases.QuotaExceeded,
        ...errorCases.Timeout,
        ...errorCases.ContextLengthExceeded,
        ...errorCases.InvalidRequest,
        ...errorCases.Unavailable
      ]
      for (const error of httpErrors) {
        const answer = wire.error(error)
        expect(answer.headers["content-type"]).toBe(json["content-type"])
        const body = JSON.parse(answer.body)
        expect(body.error).toMatchObject({ code: answer.status, message: error.message })
        const decoded = yield* answered(answer)
        expect(decoded).toStrictEqual(error)
        expect([decoded._tag, decoded.message]).toStrictEqual([error._tag, error.message])
        expect(wait(decoded)).toBe(wait(error))
      }
    }))

  it("writes Google's statuses, codes and waits", () => {
    const retryDelay = (details: ReadonlyArray<any> | undefined) =>
      details?.find((d) => d["@type"] === "type.googleapis.com/google.rpc.RetryInfo")?.retryDelay
    const summary = (error: AiError.AiError) => {
      const answer = wire.error(error)
      // As from Google: the wait is in the body only.
      expect(answer.headers["retry-after"]).toBeUndefined()
      const body = JSON.parse(answer.body)
      return [
        answer.status,
        body.error.status,
        retryDelay(body.error.details),
        body.error.details?.map((d: any) => d["@type"])
      ]
    }
    const [auth400, auth401, auth403] = errorCases.AuthFailed
    const [limited7s, limited1500ms, limited] = errorCases.RateLimited
    const [overloaded, internal] = errorCases.Unavailable
    const [tooMany, tooBig] = errorCases.ContextLengthExceeded
    expect(summary(auth400!)).toStrictEqual([400, "INVALID_ARGUMENT", undefined, [
      "type.googleapis.com/google.rpc.ErrorInfo"
    ]])
    expect(JSON.parse(wire.error(auth400!).body).error.details[0]).toMatchObject({
      reason: "API_KEY_INVALID",
      domain: "googleapis.com"
    })
    expect(summary(auth401!)).toStrictEqual([401, "UNAUTHENTICATED", undefined, undefined])
    expect(summary(auth403!)).toStrictEqual([403, "PERMISSION_DENIED", undefined, undefined])
    expect(summary(limited7s!)).toStrictEqual([429, "RESOURCE_EXHAUSTED", "7s", [
      "type.googleapis.com/google.rpc.RetryInfo"
    ]])
    expect(JSON.parse(wire.error(limited1500ms!).body).error.details).toStrictEqual([
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "1.5s" }
    ])
    expect(summary(limited!)).toStrictEqual([429, "RESOURCE_EXHAUSTED", undefined, undefined])
    expect(summary(errorCases.Timeout[0]!)).toStrictEqual([504, "DEADLINE_EXCEEDED", undefined, undefined])
    expect(summary(tooMany!)).toStrictEqual([400, "INVALID_ARGUMENT", undefined, undefined])
    expect(summary(tooBig!)).toStrictEqual([400, "INVALID_ARGUMENT", undefined, [
      "type.googleapis.com/google.rpc.BadRequest"
    ]])
    expect(summary(errorCases.InvalidRequest[1]!)).toStrictEqual([404, "NOT_FOUND", undefined, undefined])
    expect(summary(overloaded!)).toStrictEqual([503, "UNAVAILABLE", "30s", [
      "type.googleapis.com/google.rpc.RetryInfo"
    ]])
    expect(summary(internal!)).toStrictEqual([500, "INTERNAL", undefined, undefined])
    expect(summary(errorCases.QuotaExceeded[0]!)).toStrictEqual([
      429,
      "RESOURCE_EXHAUSTED",
      undefined,
      ["type.googleapis.com/google.rpc.QuotaFailure"]
    ])
    expect(JSON.parse(wire.error(errorCases.QuotaExceeded[0]!).body).error.details[0].violations[0].quotaId).toContain(
      "PerDay"
    )
    // Statuses the layer would read as another error fall back to the tag's own.
    expect(wire.error(new AiError.InvalidRequest({ provider, status: 429, message: "x" })).status).toBe(400)
    expect(wire.error(new AiError.InvalidRequest({ provider, message: "x" })).status).toBe(400)
    expect(wire.error(new AiError.Unavailable({ provider, status: 504, message: "x" })).status).toBe(503)
    expect(wire.error(new AiError.Unavailable({ provider, message: "x" })).status).toBe(503)
  })

  it.effect("QuotaExceeded comes back from Google's daily QuotaFailure as QuotaExceeded, with status 429 whatever its own", () =>
    Effect.gen(function*() {
      for (const status of [undefined, 402]) {
        const error = new AiError.QuotaExceeded({
          provider,
          message: "Out of quota.",
          ...(status === undefined ? {} : { status })
        })
        expect(yield* answered(wire.error(error))).toStrictEqual(
          new AiError.QuotaExceeded({ provider, status: 429, message: "Out of quota." })
        )
      }
    }))

  it("a wait the layer would not read back is refused", () => {
    for (const retryAfter of [Duration.days(2), Duration.infinity]) {
      expect(() => wire.error(new AiError.RateLimited({ provider, message: "x", retryAfter }))).toThrow(
        /retryAfter .* is not between 0 and GeminiError.maxRetryDelay/
      )
      expect(() => wire.error(new AiError.Unavailable({ provider, message: "x", retryAfter }))).toThrow(/maxRetryDelay/)
    }
    expect(
      JSON.parse(wire.error(new AiError.RateLimited({ provider, message: "x", retryAfter: Duration.days(1) })).body)
    )
      .toMatchObject({ error: { details: [{ retryDelay: "86400s" }] } })
  })

  it("an InvalidRequest that a 400 cannot carry is refused", () => {
    expect(() => wire.error(new AiError.InvalidRequest({ provider, status: 400, message: "The prompt is too long." })))
      .toThrow(/comes back from a 400 as ContextLengthExceeded/)
  })

  it.effect("MalformedEvent is a 200 event stream with a chunk that does not decode", () =>
    Effect.gen(function*() {
      const [error] = errorCases.MalformedEvent
      const answer = wire.error(error!)
      expect([answer.status, answer.headers["content-type"]]).toStrictEqual([200, "text/event-stream"])
      const decoded = yield* answered(answer)
      expect(decoded._tag).toBe("MalformedEvent")
      // The decoder names the chunk and what failed; the message written is not carried.
      expect(decoded).toStrictEqual(
        new AiError.MalformedEvent({
          provider,
          event: "GenerateContentResponse #0",
          message: "candidates: Expected array"
        })
      )
    }))

  it.effect("IncompleteTurn is a 200 event stream that ends before a finish reason", () =>
    Effect.gen(function*() {
      const [error] = errorCases.IncompleteTurn
      const answer = wire.error(error!)
      expect([answer.status, answer.headers["content-type"]]).toStrictEqual([200, "text/event-stream"])
      expect(answer.body).toMatch(/^data: [^\n]+\n\n$/)
      const decoded = yield* answered(answer)
      expect(decoded._tag).toBe("IncompleteTurn")
    }))
})
