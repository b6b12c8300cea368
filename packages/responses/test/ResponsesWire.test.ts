import { AiError, Item, Turn, type TurnDelta } from "@agentloop/core"
import type * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Responses } from "../src/index.ts"
import { ResponsesWire } from "../src/testing/index.ts"
import { completeTurn, hello, provider as responses, run, runFailing, TestLayer } from "./fixtures.ts"

const { wire } = ResponsesWire
const provider = "openai"

const message = (id: string, text: string, rest: Partial<Item.Message> = {}): Item.Message => ({
  type: "message",
  id,
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text }],
  ...rest
})

const call = (id: string, name: string, args: string): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${id}`,
  status: "completed",
  call_id: `call_${id}`,
  name,
  arguments: args
})

const longText = "Crème brûlée, s'il vous plaît 🍮🎉 — naïve café, 東京は晴れ ✓ 👩‍👩‍👧 ".repeat(6)

interface Case {
  readonly name: string
  readonly turn: Turn.Turn
  /** The `providerStopReason` the decoded turn has: the reason of `response.incomplete`. */
  readonly providerStopReason?: string
}

const cases: ReadonlyArray<Case> = [
  {
    name: "a text answer",
    turn: {
      items: [message("msg_1", "Hello, world.")],
      usage: { input: 12, output: 5, total: 17 },
      stopReason: "stop",
      model: "gpt-5-2025-08-07",
      responseId: "resp_text"
    }
  },
  {
    name: "a long answer with multi-byte characters, emoji and an empty part",
    turn: {
      items: [message("msg_long", "", {
        content: [{ type: "output_text", text: longText }, { type: "output_text", text: "" }]
      })],
      usage: { input: 40, output: 300, total: 340, cachedInput: 0, reasoning: 0 },
      stopReason: "stop",
      model: "gpt-5-mini-2025-08-07",
      responseId: "resp_long"
    }
  },
  {
    name: "reasoning, a commentary, an answer and two function calls, with cached and reasoning tokens",
    turn: {
      items: [
        {
          type: "reasoning",
          id: "rs_1",
          status: "completed",
          content: [{ type: "output_text", text: "The user wants the weather in Zürich; call the tool." }],
          summary: [
            { type: "output_text", text: "**Planning** — look up the weather." },
            { type: "output_text", text: "Then search for cafés ☕." }
          ],
          encrypted_content: "gAAAAABo-encrypted=="
        },
        message("msg_c", "Let me check both.", { phase: "commentary" }),
        message("msg_f", "Checking now.", { phase: "final_answer" }),
        call("a", "weather", "{\"city\":\"Zürich\",\"note\":\"東京 🌧\"}"),
        call("b", "search", "{\"q\":\"café\"}")
      ],
      usage: { input: 1200, output: 480, total: 1680, cachedInput: 1024, reasoning: 384 },
      stopReason: "tool_calls",
      model: "o4-mini",
      responseId: "resp_calls"
    }
  },
  {
    name: "a refusal, alone and beside text",
    turn: {
      items: [
        message("msg_r", "", { content: [{ type: "refusal", refusal: "I can’t help with that request." }] }),
        message("msg_m", "", {
          content: [{ type: "output_text", text: "Here is what I can say: " }, {
            type: "refusal",
            refusal: "not the rest 🙅."
          }]
        })
      ],
      usage: { input: 30, output: 12, total: 42 },
      stopReason: "stop",
      responseId: "resp_refusal"
    }
  },
  {
    name: "an answer cut off at max tokens",
    turn: {
      items: [message("msg_cut", "The first three primes are 2, 3 a", { status: "incomplete" })],
      usage: { input: 9, output: 16, total: 25, cachedInput: 0, reasoning: 0 },
      stopReason: "max_tokens",
      providerStopReason: "max_output_tokens",
      model: "gpt-4.1",
      responseId: "resp_max"
    },
    providerStopReason: "max_output_tokens"
  },
  {
    name: "a max tokens stop without the provider's reason",
    turn: { items: [], usage: { input: 9, output: 16, total: 25 }, stopReason: "max_tokens" },
    providerStopReason: "max_output_tokens"
  },
  {
    name: "an answer stopped by the content filter",
    turn: {
      items: [message("msg_cf", "Sure, the", { status: "incomplete" })],
      usage: { input: 9, output: 3, total: 12 },
      stopReason: "content_filter",
      responseId: "resp_filter"
    },
    providerStopReason: "content_filter"
  },
  {
    name: "another stop, with the provider's own reason",
    turn: {
      items: [message("msg_o", "…")],
      usage: { input: 1, output: 1, total: 2 },
      stopReason: "other",
      providerStopReason: "turn_limit"
    },
    providerStopReason: "turn_limit"
  },
  {
    name: "another stop without a reason",
    turn: { items: [], usage: { input: 1, output: 0, total: 1 }, stopReason: "other" },
    providerStopReason: "other"
  },
  {
    name: "a turn with neither model nor response id, reasoning without summaries and a call without arguments",
    turn: {
      items: [{ type: "reasoning", id: "rs_bare", status: "completed", content: [] }, call("bare", "now", "")],
      usage: { input: 3, output: 2, total: 5 },
      stopReason: "tool_calls"
    }
  },
  {
    name: "an OpenAI output item kept as an extension, and two messages with the same id",
    turn: {
      items: [
        {
          type: "x-openai.web_search_call",
          id: "ws_1",
          status: "completed",
          data: {
            type: "web_search_call",
            id: "ws_1",
            status: "completed",
            action: { type: "search", query: "weather Zürich" }
          }
        },
        Item.assistantMessage("It is sunny. "),
        Item.assistantMessage("And warm.")
      ],
      usage: { input: 50, output: 10, total: 60 },
      stopReason: "stop",
      responseId: "resp_search"
    }
  },
  {
    name: "a turn with a cost and the provider's reason of a completed response, which the wire has no room for",
    turn: {
      items: [message("msg_1", "Done.")],
      usage: { input: 4, output: 2, total: 6 },
      stopReason: "stop",
      providerStopReason: "end_turn",
      cost: 0.0125,
      responseId: "resp_cost"
    }
  },
  {
    name: "an empty turn",
    turn: { items: [], usage: { input: 0, output: 0, total: 0 }, stopReason: "stop", responseId: "resp_empty" }
  },
  {
    name: "an answer that cites a page and a file",
    turn: {
      items: [message("msg_cited", "Paris is the capital.", {
        content: [{
          type: "output_text",
          text: "Paris is the capital.",
          annotations: [
            { type: "url_citation", url: "https://example.com/paris", title: "Paris", start_index: 0, end_index: 5 },
            {
              type: "file_citation",
              file_id: "file_1",
              filename: "atlas.pdf",
              start_index: 21,
              end_index: 21,
              provider_data: {
                type: "x-openai.file_citation",
                data: { type: "file_citation", file_id: "file_1", filename: "atlas.pdf", index: 21 }
              }
            }
          ]
        }]
      })],
      usage: { input: 12, output: 5, total: 17 },
      stopReason: "stop",
      model: "gpt-5-2025-08-07",
      responseId: "resp_cited"
    }
  }
]

/**
 * The turn the provider decodes from `wire.turn(turn)`: `turn` itself, but
 * for what the wire fills in (the model, the response id, the reason of an
 * incomplete response), what it has no room for (`cost`, the provider's
 * reason of a completed response), and the decoder's `summary: []` for
 * reasoning that had none.
 */
const decodedAs = ({ turn, providerStopReason }: Case): Turn.Turn => {
  const { cost: _cost, providerStopReason: _reason, ...rest } = turn
  return {
    ...rest,
    items: turn.items.map((item) =>
      item.type === "reasoning" && item.summary === undefined ? { ...item, summary: [] } : item
    ),
    model: turn.model ?? Responses.defaultModel,
    responseId: turn.responseId ?? ResponsesWire.defaultResponseId,
    ...(providerStopReason === undefined ? {} : { providerStopReason })
  }
}

/** `text` in pieces of `size` code points, as `chunkSize` promises. */
const split = (text: string, size: number): Array<string> => {
  const chars = Array.from(text)
  const out: Array<string> = []
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""))
  return out
}

/** The deltas the provider must emit for `turn` streamed in pieces of `size`, before `turn_complete`. */
const deltasOf = (turn: Turn.Turn, size: number): Array<TurnDelta.TurnDelta> => {
  const out: Array<TurnDelta.TurnDelta> = []
  for (const item of turn.items) {
    if (item.type === "message") {
      for (const part of item.content) {
        if (part.type === "refusal") {
          for (const delta of split(part.refusal, size)) out.push({ type: "refusal_delta", delta })
        } else {
          for (const delta of split(Item.partText(part), size)) {
            out.push(
              item.phase === undefined
                ? { type: "text_delta", delta }
                : { type: "text_delta", delta, phase: item.phase }
            )
          }
          if (part.type === "output_text") {
            for (const citation of part.annotations ?? []) out.push({ type: "citation", citation })
          }
        }
      }
    } else if (item.type === "reasoning") {
      for (const part of [...item.content, ...item.summary ?? []]) {
        for (const delta of split(Item.partText(part), size)) out.push({ type: "reasoning_delta", delta })
      }
    } else if (item.type === "function_call") {
      const { call_id, name } = item
      out.push({ type: "function_call_start", call_id, name })
      for (const delta of split(item.arguments, size)) {
        out.push({ type: "function_call_arguments_delta", call_id, delta })
      }
      out.push({ type: "function_call_done", call_id, name, arguments: item.arguments })
    }
  }
  out.push({ type: "usage", usage: turn.usage })
  return out
}

const frameShape = /^event: ([a-z_.]+)\ndata: (.*)\n\n$/s

/** The events of `frames`, checked to be named by their `type` and numbered from 0. */
const eventsOf = (frames: ReadonlyArray<string>): Array<{ readonly type: string; readonly [key: string]: unknown }> =>
  frames.map((frame, i) => {
    const [, name, data] = frameShape.exec(frame) ?? []
    expect(name, frame).toBeDefined()
    const event = JSON.parse(data ?? "") as { readonly type: string; readonly sequence_number: number }
    expect(event.type).toBe(name)
    expect(event.sequence_number).toBe(i)
    return event
  })

const sizes: ReadonlyArray<
  { readonly options: ProviderWire.TurnOptions; readonly size: number; readonly bytes?: number }
> = [
  { options: { chunkSize: 1 }, size: 1, bytes: 7 },
  { options: { chunkSize: 3 }, size: 3, bytes: 5 },
  { options: {}, size: 16 },
  { options: { chunkSize: 1000 }, size: 1000 }
]

/** Serves `answer` as the loopback server's reply. */
const reply = (answer: ProviderWire.HttpAnswer) =>
  ProviderServer.status(answer.status, answer.body, { ...answer.headers })

describe("ResponsesWire", () => {
  describe("turn", () => {
    for (const c of cases) {
      it.live(`round-trips ${c.name}`, () =>
        Effect.gen(function*() {
          for (const { bytes, options, size } of sizes) {
            const frames = wire.turn(c.turn, options)
            const events = eventsOf(frames)
            expect(events.at(-1)?.type).toBe(
              c.providerStopReason === undefined ? "response.completed" : "response.incomplete"
            )
            const deltas = yield* run([ProviderServer.sse(frames, { chunkSize: bytes })])
            const turn = completeTurn(deltas)
            expect(turn, `chunkSize ${size}`).toStrictEqual(decodedAs(c))
            expect(deltas.slice(0, -1), `chunkSize ${size}`).toStrictEqual(deltasOf(c.turn, size))
            const answer = deltas.flatMap((d) => d.type === "text_delta" && d.phase !== "commentary" ? [d.delta] : [])
              .join("")
            expect(answer).toBe(Turn.text(c.turn))
          }
        }).pipe(Effect.provide(TestLayer)))
    }

    it.live("splits text in pieces of chunkSize characters, never inside a character", () =>
      Effect.gen(function*() {
        const turn: Turn.Turn = {
          items: [message("msg_1", "héllo 🎉!")],
          usage: { input: 1, output: 1, total: 2 },
          stopReason: "stop"
        }
        const deltas = yield* run([ProviderServer.sse(wire.turn(turn, { chunkSize: 3 }), { chunkSize: 1 })])
        expect(deltas.flatMap((d) => d.type === "text_delta" ? [d.delta] : [])).toStrictEqual(["hél", "lo ", "🎉!"])
        // The default is 16 characters.
        const long = { ...turn, items: [message("msg_2", "x".repeat(40))] }
        const longDeltas = yield* run([ProviderServer.sse(wire.turn(long))])
        const pieces = longDeltas.flatMap((d) => d.type === "text_delta" ? [d.delta.length] : [])
        expect(pieces).toStrictEqual([16, 16, 8])
        expect(() => wire.turn(turn, { chunkSize: 0 })).toThrow(/chunkSize must be at least 1/)
      }).pipe(Effect.provide(TestLayer)))

    it.live("streams the API's events: items between added and done, usage and the end on the last event", () =>
      Effect.sync(() => {
        const turn = cases[2]!.turn
        const events = eventsOf(wire.turn(turn, { chunkSize: 1000 }))
        expect(events.map((e) => e.type)).toStrictEqual([
          "response.created",
          "response.in_progress",
          "response.output_item.added",
          "response.content_part.added",
          "response.reasoning_text.delta",
          "response.reasoning_text.done",
          "response.content_part.done",
          ...["added", "done", "added", "done"].flatMap((end) =>
            end === "added"
              ? ["response.reasoning_summary_part.added", "response.reasoning_summary_text.delta"]
              : ["response.reasoning_summary_text.done", "response.reasoning_summary_part.done"]
          ),
          "response.output_item.done",
          ...[0, 1].flatMap(() => [
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done"
          ]),
          ...[0, 1].flatMap(() => [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done"
          ]),
          "response.completed"
        ])
        expect(events.at(-1)).toMatchObject({
          response: {
            id: "resp_calls",
            status: "completed",
            model: "o4-mini",
            usage: {
              input_tokens: 1200,
              input_tokens_details: { cached_tokens: 1024 },
              output_tokens: 480,
              output_tokens_details: { reasoning_tokens: 384 },
              total_tokens: 1680
            }
          }
        })
        expect(events[1]).toMatchObject({ response: { id: "resp_calls", status: "in_progress", model: "o4-mini" } })
        const incomplete = eventsOf(wire.turn(cases[4]!.turn)).at(-1)
        expect(incomplete).toMatchObject({
          type: "response.incomplete",
          response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }
        })
      }))

    it.live("leaves the end out with complete: false, and the provider fails with IncompleteTurn after the deltas", () =>
      Effect.gen(function*() {
        for (const c of [cases[0]!, cases[2]!, cases[4]!]) {
          const frames = wire.turn(c.turn, { complete: false })
          expect(frames).toStrictEqual(wire.turn(c.turn).slice(0, -1))
          const { deltas, error } = yield* runFailing([ProviderServer.sse(frames)])
          expect(error._tag).toBe("IncompleteTurn")
          expect(deltas).toStrictEqual(deltasOf(c.turn, 16).slice(0, -1))
        }
      }).pipe(Effect.provide(TestLayer)))

    it("throws on what a response cannot hold, saying what", () => {
      const turn = (items: ReadonlyArray<Item.Item>, stopReason: Turn.StopReason = "stop"): Turn.Turn => ({
        items,
        usage: { input: 1, output: 1, total: 2 },
        stopReason
      })
      const throws = (t: Turn.Turn, message: RegExp) => expect(() => wire.turn(t)).toThrow(message)
      throws(turn([Item.userMessage("Hi", "msg_user")]), /message msg_user is a user message/)
      const citing = (citation: Item.Citation) =>
        turn([message("msg_c", "Hi", { content: [{ type: "output_text", text: "Hi", annotations: [citation] }] })])
      throws(citing({ type: "url_citation", url: "https://e.com", title: "E" }), /msg_c cites .*url_citation/)
      throws(citing({ type: "file_citation", title: "Atlas" }), /msg_c cites/)
      throws(turn([{ ...Item.userMessage("Be brief."), role: "developer" }]), /is a developer message/)
      throws(
        turn([{ type: "function_call_output", id: "out_1", status: "completed", call_id: "call_1", output: "{}" }]),
        /function_call_output out_1 is input/
      )
      throws(
        turn([{ type: "x-app.note", id: "note_1", status: "completed", data: {} }]),
        /x-app\.note.*not an OpenAI output item/
      )
      throws(
        turn([{
          type: "x-anthropic.server_tool_use",
          id: "st_1",
          status: "completed",
          data: { type: "server_tool_use" }
        }]),
        /not an OpenAI output item/
      )
      const search = (data: Item.Extension["data"]): Item.Extension => ({
        type: "x-openai.web_search_call",
        id: "ws_1",
        status: "completed",
        data
      })
      throws(turn([search({ type: "file_search_call", id: "ws_1" })]), /data of type "file_search_call"/)
      throws(turn([search({ type: "web_search_call", id: "ws_2" })]), /data with id "ws_2"/)
      throws(
        turn([search({ type: "web_search_call", id: "ws_1", status: "failed" })]),
        /is completed but its data says failed/
      )
      throws(
        turn([message("msg_1", "", { content: [{ type: "input_text", text: "?" }] })]),
        /msg_1 has an input_text part/
      )
      throws(
        turn([message("msg_2", "", { content: [{ type: "input_image", image_url: "https://example.com/a.png" }] })]),
        /msg_2 has an input_image part; the API streams only output_text and refusal parts/
      )
      throws(
        turn([{
          type: "reasoning",
          id: "rs_1",
          status: "completed",
          content: [],
          summary: [{ type: "refusal", refusal: "x" }]
        }]),
        /reasoning item rs_1 has a refusal part in its summary/
      )
      throws(turn([call("a", "f", "{}")], "stop"), /stopReason "stop" cannot be sent with them/)
      throws(turn([message("msg_1", "hi")], "tool_calls"), /"tool_calls" needs a function call/)
      throws(turn([], "malformed_tool_call"), /malformed tool call/)
      throws(turn([Item.userMessage("Hi", "msg_user")]), /^ResponsesWire: /)
    })
  })

  describe("error", () => {
    const seconds = Duration.seconds
    /** Each error the wire sends, and the error the provider reads back when it is not the same. */
    const errors: {
      readonly [Tag in AiError.AiError["_tag"]]: ReadonlyArray<readonly [AiError.AiError, AiError.AiError?]>
    } = {
      AuthFailed: [
        [new AiError.AuthFailed({ provider, status: 401, message: "Incorrect API key provided: sk-proj-****." })],
        [new AiError.AuthFailed({ provider, status: 403, message: "Country, region, or territory not supported" })],
        [
          new AiError.AuthFailed({ provider, status: 400, message: "odd status" }),
          new AiError.AuthFailed({ provider, status: 401, message: "odd status" })
        ]
      ],
      RateLimited: [
        [new AiError.RateLimited({ provider, message: "Rate limit reached for gpt-5 on tokens per min (TPM)." })],
        [new AiError.RateLimited({ provider, message: "slow down", retryAfter: seconds(20) })],
        [new AiError.RateLimited({ provider, message: "a moment", retryAfter: Duration.millis(1500) })]
      ],
      QuotaExceeded: [
        [
          new AiError.QuotaExceeded({
            provider,
            status: 429,
            message: "You exceeded your current quota. (insufficient_quota)"
          })
        ],
        [
          new AiError.QuotaExceeded({ provider, message: "no credit left" }),
          new AiError.QuotaExceeded({ provider, status: 429, message: "no credit left (insufficient_quota)" })
        ]
      ],
      Timeout: [[new AiError.Timeout({ provider, message: "the request took longer than 1m" })]],
      ContextLengthExceeded: [
        [
          new AiError.ContextLengthExceeded({
            provider,
            message: "Your input exceeds the context window of this model."
          }),
          new AiError.ContextLengthExceeded({
            provider,
            message: "Your input exceeds the context window of this model. (context_length_exceeded)"
          })
        ],
        [new AiError.ContextLengthExceeded({ provider, message: "too long (context_length_exceeded)" })]
      ],
      InvalidRequest: [
        [
          new AiError.InvalidRequest({
            provider,
            status: 400,
            message: "Invalid value: 'banana'. Supported values are: 'low'."
          })
        ],
        [new AiError.InvalidRequest({ provider, status: 404, message: "The model `gpt-9` does not exist." })],
        [
          new AiError.InvalidRequest({ provider, message: "no status" }),
          new AiError.InvalidRequest({ provider, status: 400, message: "no status" })
        ],
        [
          new AiError.InvalidRequest({ provider, status: 429, message: "a status that means another error" }),
          new AiError.InvalidRequest({ provider, status: 400, message: "a status that means another error" })
        ],
        [
          new AiError.InvalidRequest({
            provider,
            status: 400,
            message: "max_output_tokens exceeds the maximum context length"
          }),
          new AiError.InvalidRequest({
            provider,
            status: 422,
            message: "max_output_tokens exceeds the maximum context length"
          })
        ]
      ],
      Unavailable: [
        [
          new AiError.Unavailable({
            provider,
            status: 500,
            message: "The server had an error while processing your request."
          })
        ],
        [new AiError.Unavailable({ provider, status: 503, message: "overloaded", retryAfter: seconds(30) })],
        [
          new AiError.Unavailable({ provider, message: "fetch failed" }),
          new AiError.Unavailable({ provider, status: 503, message: "fetch failed" })
        ],
        [
          new AiError.Unavailable({ provider, status: 504, message: "a status that means a timeout" }),
          new AiError.Unavailable({ provider, status: 503, message: "a status that means a timeout" })
        ]
      ],
      MalformedEvent: [
        [
          new AiError.MalformedEvent({
            provider,
            event: "response.output_text.delta",
            message: "delta: Expected string"
          })
        ],
        [new AiError.MalformedEvent({ provider, event: "response.completed", message: "response: Expected object" })],
        [new AiError.MalformedEvent({ provider, event: "message", message: "data is not JSON" })],
        [
          new AiError.MalformedEvent({ provider, event: "(too large)", message: "an event is too long" }),
          new AiError.MalformedEvent({ provider, event: "message", message: "an event is too long" })
        ]
      ],
      IncompleteTurn: [[new AiError.IncompleteTurn({ message: "the stream ended" })]]
    }
    const encode = Schema.encodeSync(AiError.AiError)
    /** The layer writes the messages of broken streams itself. */
    const ownMessages: Partial<Record<AiError.AiError["_tag"], RegExp>> = {
      MalformedEvent: /^data is not JSON: /,
      IncompleteTurn: /^openai: the stream ended before response\.completed$/
    }

    for (const [tag, entries] of Object.entries(errors)) {
      it.live(`round-trips ${tag}`, () =>
        Effect.gen(function*() {
          for (const [sent, expected = sent] of entries) {
            const answer = wire.error(sent)
            if (tag === "MalformedEvent" || tag === "IncompleteTurn") {
              expect(answer.status).toBe(200)
              expect(answer.headers["content-type"]).toBe("text/event-stream")
            } else {
              expect(answer.status).toBeGreaterThanOrEqual(400)
              expect(answer.headers["content-type"]).toBe("application/json")
              expect(Object.keys(JSON.parse(answer.body).error)).toStrictEqual(["message", "type", "param", "code"])
            }
            const { deltas, error } = yield* runFailing([reply(answer)])
            expect(deltas).toStrictEqual([])
            const own = ownMessages[error._tag]
            if (own === undefined) {
              expect(encode(error)).toStrictEqual(encode(expected))
            } else {
              expect(error.message).toMatch(own)
              expect({ ...encode(error), message: "" }).toStrictEqual({ ...encode(expected), message: "" })
            }
          }
        }).pipe(Effect.provide(TestLayer)))
    }

    it.live("answers a loopback server made with the wire: a bare Turn, then an AiError", () =>
      Effect.gen(function*() {
        const server = yield* ProviderServer.ProviderServer
        const turn = cases[2]!.turn
        const limited = new AiError.RateLimited({ provider, message: "slow down", retryAfter: seconds(7) })
        yield* server.reply(turn, limited)
        const model = yield* responses()
        const deltas = yield* Stream.runCollect(model.streamTurn(hello, {}))
        expect(completeTurn(deltas)).toStrictEqual(decodedAs(cases[2]!))
        const error = yield* Effect.flip(Stream.runDrain(model.streamTurn(hello, {})))
        expect(encode(error)).toStrictEqual(encode(limited))
      }).pipe(Effect.provide(Layer.mergeAll(ProviderServer.layerWire(wire), FetchHttpClient.layer))))

    it("sends Retry-After in whole seconds, and OpenAI's retry-after-ms when the wait is not whole seconds", () => {
      const rateLimited = (retryAfter?: Duration.Duration) =>
        wire.error(
          new AiError.RateLimited({ provider, message: "m", ...(retryAfter === undefined ? {} : { retryAfter }) })
        )
      expect(rateLimited(Duration.seconds(20)).headers).toStrictEqual({
        "content-type": "application/json",
        "retry-after": "20"
      })
      expect(rateLimited(Duration.millis(1500)).headers)
        .toStrictEqual({ "content-type": "application/json", "retry-after": "2", "retry-after-ms": "1500" })
      expect(rateLimited().headers).toStrictEqual({ "content-type": "application/json" })
      expect(
        wire.error(new AiError.Unavailable({ provider, status: 503, message: "m", retryAfter: Duration.seconds(3) }))
      )
        .toMatchObject({ status: 503, headers: { "retry-after": "3" } })
    })

    it("writes OpenAI's error bodies", () => {
      const body = (error: AiError.AiError) => JSON.parse(wire.error(error).body)
      expect(body(new AiError.QuotaExceeded({ provider, status: 429, message: "Quota (insufficient_quota)" })))
        .toStrictEqual({
          error: { message: "Quota", type: "insufficient_quota", param: null, code: "insufficient_quota" }
        })
      expect(body(new AiError.ContextLengthExceeded({ provider, message: "Too long." }))).toStrictEqual({
        error: { message: "Too long.", type: "invalid_request_error", param: "input", code: "context_length_exceeded" }
      })
      expect(body(new AiError.AuthFailed({ provider, status: 401, message: "Bad key" }))).toStrictEqual({
        error: { message: "Bad key", type: "invalid_request_error", param: null, code: "invalid_api_key" }
      })
      expect(wire.error(new AiError.AuthFailed({ provider, status: 401, message: "Bad key" })).status).toBe(401)
      expect(wire.error(new AiError.QuotaExceeded({ provider, message: "Quota" })).status).toBe(429)
      expect(wire.error(new AiError.ContextLengthExceeded({ provider, message: "Too long." })).status).toBe(400)
      expect(wire.error(new AiError.RateLimited({ provider, message: "slow" })).status).toBe(429)
      expect(wire.error(new AiError.Timeout({ provider, message: "slow" })).status).toBe(408)
      const incomplete = wire.error(new AiError.IncompleteTurn({ message: "cut" }))
      expect(eventsOf(incomplete.body.split(/(?<=\n\n)/)).map((e) => e.type))
        .toStrictEqual(["response.created", "response.in_progress"])
    })
  })
})
