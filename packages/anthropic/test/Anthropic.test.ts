import { Item, LanguageModel, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Schema, Stream } from "effect"
import { Anthropic } from "../src/index.ts"
import {
  blockStart,
  blockStop,
  delta,
  messageDelta,
  messageStart,
  messageStop,
  model,
  ping,
  textBlock,
  textStream,
  thinkingBlock,
  toolUseBlock
} from "./fixtures.ts"
import { canary, completed, requestBody, run, textOf, turn } from "./harness.ts"

const hello = [Item.userMessage("Say hello")]

const weatherTool: LanguageModel.ToolDefinition = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false
  }
}

const searchResult = {
  type: "web_search_tool_result",
  tool_use_id: "srvtoolu_1",
  content: [{
    type: "web_search_result",
    url: "https://example.com/w",
    title: "Weather",
    encrypted_content: "ZW5j",
    page_age: null
  }]
}

const weatherCitation = {
  type: "web_search_result_location",
  url: "https://example.com/w",
  title: "Weather",
  cited_text: "Sunny, 21°C.",
  encrypted_index: "ZQ=="
}
const weatherSource: Item.Citation = {
  type: "url_citation",
  url: "https://example.com/w",
  title: "Weather",
  cited_text: "Sunny, 21°C.",
  provider_data: { type: "x-anthropic.web_search_result_location", data: weatherCitation }
}

/** A stream with every kind of event and content block the provider reads. */
const everyEvent = [
  messageStart("msg_01all", {
    input_tokens: 20,
    cache_creation_input_tokens: 100,
    cache_read_input_tokens: 300,
    output_tokens: 1
  }),
  ping,
  ...thinkingBlock(0, "c2lnbmF0dXJl", "Let me think ", "about Zürich 🌧."),
  blockStart(1, { type: "redacted_thinking", data: "cmVkYWN0ZWQ=" }),
  blockStop(1),
  blockStart(2, { type: "text", text: "" }),
  delta(2, { type: "text_delta", text: "Checking " }),
  delta(2, { type: "citations_delta", citation: weatherCitation }),
  delta(2, { type: "text_delta", text: "東京 ✓." }),
  blockStop(2),
  blockStart(3, { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }),
  delta(3, { type: "input_json_delta", partial_json: "{\"query\":" }),
  delta(3, { type: "input_json_delta", partial_json: "\"weather\"}" }),
  blockStop(3),
  blockStart(4, searchResult),
  blockStop(4),
  ...toolUseBlock(5, "toolu_a", "get_weather", "", "{\"city\":", "\"Zürich\"}"),
  ...toolUseBlock(6, "toolu_b", "get_weather", "{\"city\":\"東京\"}"),
  ping,
  messageDelta("tool_use", { output_tokens: 90 }),
  messageStop
]

const everyEventDeltas: ReadonlyArray<TurnDelta.TurnDelta["type"]> = [
  "reasoning_delta",
  "reasoning_delta",
  "text_delta",
  "citation",
  "text_delta",
  "function_call_start",
  "function_call_arguments_delta",
  "function_call_arguments_delta",
  "function_call_done",
  "function_call_start",
  "function_call_arguments_delta",
  "function_call_done",
  "usage",
  "turn_complete"
]

describe("Anthropic", () => {
  it.effect("streams a text turn, sending the key, the API version, the system prompt and the params", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(textStream("msg_01hello", "Hello", ", wörld", "!")))
        const deltas = yield* turn(hello, {
          instructions: "Be brief.",
          params: { temperature: 0.2, topP: 0.9, maxOutputTokens: 64, stopSequences: ["END"] }
        })
        expect(deltas.filter((d) => d.type === "text_delta").map((d) => d.delta)).toStrictEqual([
          "Hello",
          ", wörld",
          "!"
        ])
        const result = completed(deltas)
        expect(result).toStrictEqual({
          items: [{
            type: "message",
            id: "anthropic_msg_01hello_0",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Hello, wörld!" }]
          }],
          usage: { input: 12, output: 5, total: 17 },
          stopReason: "stop",
          model,
          responseId: "msg_01hello",
          providerStopReason: "end_turn"
        })
        expect(deltas[deltas.length - 2]).toStrictEqual({ type: "usage", usage: result.usage })
        const [request] = yield* server.requests
        expect(request?.url).toBe("/v1/messages")
        expect(request?.headers["x-api-key"]).toBe(canary)
        expect(request?.headers["anthropic-version"]).toBe("2023-06-01")
        expect(request?.headers.authorization).toBeUndefined()
        // The prompt cache's breakpoints are on by default: the system prompt and the end of the history.
        expect(request?.body).toStrictEqual({
          model,
          max_tokens: 64,
          messages: [{
            role: "user",
            content: [{ type: "text", text: "Say hello", cache_control: { type: "ephemeral" } }]
          }],
          system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
          temperature: 0.2,
          top_p: 0.9,
          stop_sequences: ["END"],
          stream: true
        })
      })
    ))

  it.effect("streams every event split at every byte boundary, inside multi-byte characters too", () =>
    run((server) =>
      Effect.gen(function*() {
        const sizes = [undefined, 1, 3, 7]
        yield* server.reply(...sizes.map((chunkSize) => ProviderServer.sse(everyEvent, { chunkSize })))
        const runs: Array<ReadonlyArray<TurnDelta.TurnDelta>> = []
        for (const _ of sizes) runs.push(yield* turn(hello, { tools: [weatherTool] }))
        for (const deltas of runs) expect(deltas).toStrictEqual(runs[0])

        const deltas = runs[0]!
        expect(deltas.map((d) => d.type)).toStrictEqual(everyEventDeltas)
        expect(textOf(deltas, "reasoning_delta")).toBe("Let me think about Zürich 🌧.")
        expect(textOf(deltas, "text_delta")).toBe("Checking 東京 ✓.")
        const result = completed(deltas)
        expect(result.stopReason).toBe("tool_calls")
        expect(result.providerStopReason).toBe("tool_use")
        expect(result.responseId).toBe("msg_01all")
        // Input counts the uncached, the cache-written and the cache-read tokens; message_delta had only the output.
        expect(result.usage).toStrictEqual({ input: 420, output: 90, total: 510, cachedInput: 300, cacheWrite: 100 })
        const id = (n: number) => `anthropic_msg_01all_${n}`
        expect(result.items).toStrictEqual([
          {
            type: "reasoning",
            id: id(0),
            status: "completed",
            content: [{ type: "output_text", text: "Let me think about Zürich 🌧." }],
            encrypted_content: "c2lnbmF0dXJl"
          },
          { type: "reasoning", id: id(1), status: "completed", content: [], encrypted_content: "cmVkYWN0ZWQ=" },
          {
            type: "message",
            id: id(2),
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Checking 東京 ✓.", annotations: [weatherSource] }]
          },
          {
            type: "x-anthropic.server_tool_use",
            id: id(3),
            status: "completed",
            data: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "weather" } }
          },
          { type: "x-anthropic.web_search_tool_result", id: id(4), status: "completed", data: searchResult },
          {
            type: "function_call",
            id: id(5),
            status: "completed",
            call_id: "toolu_a",
            name: "get_weather",
            arguments: "{\"city\":\"Zürich\"}"
          },
          {
            type: "function_call",
            id: id(6),
            status: "completed",
            call_id: "toolu_b",
            name: "get_weather",
            arguments: "{\"city\":\"東京\"}"
          }
        ])
        for (const call of Turn.functionCalls(result)) {
          const pieces = deltas.flatMap((d) =>
            d.type === "function_call_arguments_delta" && d.call_id === call.call_id ? [d.delta] : []
          )
          expect(pieces.join("")).toBe(call.arguments)
        }
      })
    ))

  it.effect("reads each event's kind from its JSON type, whatever its SSE event line says or whether it has one", () =>
    run((server) =>
      Effect.gen(function*() {
        const body = everyEvent.join("")
        yield* server.reply(
          ProviderServer.sse([body.replace(/^event: .*\n/gm, "")], { chunkSize: 9 }),
          ProviderServer.sse([body.replace(/^event: .*$/gm, "event: message")])
        )
        const expected = (yield* turn(hello)).map((d) => d.type)
        expect(expected).toStrictEqual(everyEventDeltas)
        expect((yield* turn(hello)).map((d) => d.type)).toStrictEqual(everyEventDeltas)
      })
    ))

  it.effect("sends the turn back: thinking with its signature, redacted thinking, server blocks, calls, then results first", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(everyEvent), ProviderServer.sse(textStream("msg_02", "Sunny.")))
        const first = completed(yield* turn(hello, { tools: [weatherTool] }))
        const [zurich, tokyo] = Turn.functionCalls(first)
        // The history goes through JSON, as a checkpoint would, before it is sent back.
        const history = Schema.decodeUnknownSync(Item.History)(JSON.parse(JSON.stringify([
          ...hello,
          ...first.items,
          Item.userMessage("Both, please."),
          {
            type: "function_call_output",
            id: "o1",
            status: "completed",
            call_id: zurich!.call_id,
            output: "{\"tempC\":21}"
          },
          { type: "function_call_output", id: "o2", status: "completed", call_id: tokyo!.call_id, output: "" }
        ])))
        const second = completed(yield* turn(history, { tools: [weatherTool] }))
        expect(Turn.text(second)).toBe("Sunny.")
        const body = yield* requestBody(server, 1)
        // Prompt-cache breakpoints: where the previous request ended (read back now) and where this one ends.
        const cached = { cache_control: { type: "ephemeral" } }
        expect(body.messages).toStrictEqual([
          { role: "user", content: [{ type: "text", text: "Say hello", ...cached }] },
          {
            role: "assistant",
            content: [
              { type: "thinking", thinking: "Let me think about Zürich 🌧.", signature: "c2lnbmF0dXJl" },
              { type: "redacted_thinking", data: "cmVkYWN0ZWQ=" },
              { type: "text", text: "Checking 東京 ✓.", citations: [weatherCitation] },
              { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "weather" } },
              searchResult,
              { type: "tool_use", id: "toolu_a", name: "get_weather", input: { city: "Zürich" } },
              { type: "tool_use", id: "toolu_b", name: "get_weather", input: { city: "東京" } }
            ]
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "toolu_a", content: "{\"tempC\":21}" },
              { type: "tool_result", tool_use_id: "toolu_b" },
              { type: "text", text: "Both, please.", ...cached }
            ]
          }
        ])
        expect(body.tools).toStrictEqual([{
          name: "get_weather",
          description: "The weather in a city",
          input_schema: weatherTool.parameters,
          ...cached
        }])
      })
    ))

  it.effect("maps every stop reason, keeping the raw one, and marks the item a max_tokens stop cut as incomplete", () =>
    run((server) =>
      Effect.gen(function*() {
        const cases = [
          ["end_turn", "stop"],
          ["stop_sequence", "stop"],
          ["max_tokens", "max_tokens"],
          ["refusal", "content_filter"],
          ["pause_turn", "other"],
          ["model_context_window_exceeded", "max_tokens"]
        ] as const
        yield* server.reply(...cases.map(([reason]) =>
          ProviderServer.sse([
            messageStart("msg_stop"),
            ...textBlock(0, "Once upon a"),
            messageDelta(reason),
            messageStop
          ])
        ))
        for (const [reason, stopReason] of cases) {
          const result = completed(yield* turn(hello))
          expect([result.providerStopReason, result.stopReason]).toStrictEqual([reason, stopReason])
          expect(result.items[0]?.status).toBe(stopReason === "max_tokens" ? "incomplete" : "completed")
        }
      })
    ))

  it.effect("a block the stream never stopped is incomplete, and a call without input deltas has its input as arguments", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([
          messageStart("msg_open"),
          blockStart(0, { type: "tool_use", id: "toolu_x", name: "now", input: { zone: "UTC" } }),
          blockStop(0),
          blockStart(1, { type: "text", text: "Half" }),
          messageDelta("tool_use"),
          messageStop
        ]))
        const deltas = yield* turn(hello)
        expect(deltas.slice(0, 4)).toStrictEqual([
          { type: "function_call_start", call_id: "toolu_x", name: "now" },
          { type: "function_call_arguments_delta", call_id: "toolu_x", delta: "{\"zone\":\"UTC\"}" },
          { type: "function_call_done", call_id: "toolu_x", name: "now", arguments: "{\"zone\":\"UTC\"}" },
          { type: "text_delta", delta: "Half" }
        ])
        expect(completed(deltas).items.map((item) => item.status)).toStrictEqual(["completed", "incomplete"])
      })
    ))

  it.effect("stops reading at message_stop, without waiting for the server to close the stream", () =>
    run((server) =>
      Effect.gen(function*() {
        const frames = textStream("msg_done", "done")
        yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.join("").length }))
        expect(Turn.text(completed(yield* turn(hello)))).toBe("done")
        yield* server.awaitClientAbort
      })
    ))

  it.effect("answers a structured output through a tool on a model without the API's own, as the answer's text", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([
          messageStart("msg_json"),
          ...toolUseBlock(0, "toolu_out", "Answer", "{\"answer\":", " 42}"),
          messageDelta("tool_use"),
          messageStop
        ], { chunkSize: 5 }))
        const schema = {
          type: "object",
          properties: { answer: { type: "number" } },
          required: ["answer"],
          additionalProperties: false
        }
        const result = completed(yield* turn(hello, { output: { name: "Answer", schema } }))
        expect(JSON.parse(Turn.text(result))).toStrictEqual({ answer: 42 })
        expect([result.stopReason, Turn.functionCalls(result)]).toStrictEqual(["stop", []])
        const body = yield* requestBody(server)
        expect([body.tool_choice, body.output_config]).toStrictEqual([{ type: "tool", name: "Answer" }, undefined])
      }), { model: "claude-sonnet-4-20250514" }))

  it.live("layerConfig reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse(textStream("msg_env", "from env")))
      const env = ConfigProvider.fromEnv({ env: { ANTHROPIC_API_KEY: "sk-ant-env", ANTHROPIC_BASE_URL: server.url } })
      const lm = yield* LanguageModel.LanguageModel.pipe(
        Effect.provide(Anthropic.layerConfig().pipe(Layer.provide(ConfigProvider.layer(env))))
      )
      expect(lm.provider).toBe("anthropic")
      const deltas = yield* Stream.runCollect(lm.streamTurn(hello, {}))
      expect(Turn.text(completed(deltas))).toBe("from env")
      const [request] = yield* server.requests
      expect(request?.headers["x-api-key"]).toBe("sk-ant-env")
      expect((request?.body as { model: string }).model).toBe(Anthropic.defaultModel)
    }).pipe(Effect.provide(ProviderServer.layer)))
})
