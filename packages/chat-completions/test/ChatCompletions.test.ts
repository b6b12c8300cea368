import { AiError, Item, LanguageModel, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Schema, Stream } from "effect"
import { ChatCompletions } from "../src/index.ts"
import { callArguments, callStart, delta, done, finish, model, textStream, usage } from "./fixtures.ts"
import { canary, completed, headerCanary, requestBody, run, textOf, turn } from "./harness.ts"

const hello = [Item.userMessage("Say hello")]

const weatherTool: LanguageModel.ToolDefinition = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: { city: { type: "string" }, units: { type: "string" } },
    required: ["city"],
    additionalProperties: false
  }
}

const message = (role: Item.Role, text: string, itemId: string): Item.Message => ({
  type: "message",
  id: itemId,
  status: "completed",
  role,
  content: [{ type: role === "assistant" ? "output_text" : "input_text", text }]
})

describe("ChatCompletions", () => {
  it.effect("posts to /chat/completions with the key, stream_options, the instructions and the params", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(textStream("Hello", ", wörld", "!")))
        const deltas = yield* turn(hello, {
          instructions: "Be brief.",
          params: { temperature: 0.2, topP: 0.9, maxOutputTokens: 64, stopSequences: ["END"], reasoningEffort: "low" }
        })
        expect(Turn.text(completed(deltas))).toBe("Hello, wörld!")
        const [request] = yield* server.requests
        expect(request?.url).toBe("/chat/completions")
        expect(request?.headers.authorization).toBe(`Bearer ${canary}`)
        expect(request?.headers.accept).toBe("text/event-stream")
        expect(request?.body).toStrictEqual({
          model,
          messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello" }],
          stream: true,
          stream_options: { include_usage: true },
          temperature: 0.2,
          top_p: 0.9,
          max_tokens: 64,
          stop: ["END"],
          reasoning_effort: "low"
        })
      })
    ))

  it.effect("sends the limit as max_completion_tokens, leaves stream_options out and asks for one call, when told", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(textStream("ok")))
        yield* turn(hello, { params: { maxOutputTokens: 100 } })
        const body = yield* requestBody(server)
        expect([body.max_completion_tokens, body.max_tokens, body.stream_options, body.parallel_tool_calls])
          .toStrictEqual([100, undefined, undefined, false])
      }), { maxTokensField: "max_completion_tokens", includeUsage: false, parallelToolCalls: false }))

  it.effect("talks to a server that needs no key and no model: no credential header, the model the server reports", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(textStream("local")))
        const result = completed(yield* turn(hello))
        expect(result.model).toBe(model)
        const [request] = yield* server.requests
        expect(request?.headers.authorization).toBeUndefined()
        expect(request?.body).not.toHaveProperty("model")
      }), { apiKey: undefined, model: undefined }))

  it.effect("sends extra headers, a credential header's value kept out of spans and errors like the key", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.status(401, { error: { message: `Access denied: key ${headerCanary} is not valid` } }),
          ProviderServer.sse(textStream("ok"))
        )
        const error = yield* Effect.flip(turn(hello))
        expect(error).toStrictEqual(
          new AiError.AuthFailed({
            provider: "chat-completions",
            status: 401,
            message: "Access denied: key <redacted> is not valid"
          })
        )
        expect(Turn.text(completed(yield* turn(hello)))).toBe("ok")
        const [, request] = yield* server.requests
        expect(request?.headers["api-key"]).toBe(headerCanary)
        expect(request?.headers["http-referer"]).toBe("https://example.com")
        expect(request?.headers.authorization).toBeUndefined()
      }), {
      apiKey: undefined,
      retryPolicy: undefined,
      headers: { "api-key": headerCanary, "HTTP-Referer": "https://example.com" }
    }))

  it.effect("sends the whole history: instructions, system and developer messages, one assistant message per answer, results first", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(textStream("Sunny.")))
        const history: ReadonlyArray<Item.Item> = [
          message("system", "You are terse.", "s"),
          message("developer", "Use metric units.", "d"),
          Item.userMessage("Weather in Zürich and Tokyo?", "u1"),
          {
            type: "reasoning",
            id: "chatcmpl_item_x_0",
            status: "completed",
            content: [{ type: "output_text", text: "Two cities." }]
          },
          message("assistant", "Checking both.", "a1"),
          {
            type: "function_call",
            id: "f1",
            status: "completed",
            call_id: "call_a",
            name: "get_weather",
            arguments: "{\"city\":\"Zürich\"}"
          },
          { type: "function_call", id: "f2", status: "completed", call_id: "call_b", name: "now", arguments: "" },
          Item.userMessage("Quickly, please.", "u2"),
          { type: "function_call_output", id: "o1", status: "completed", call_id: "call_a", output: "{\"c\":21}" },
          { type: "function_call_output", id: "o2", status: "completed", call_id: "call_b", output: "12:00" },
          { type: "x-app.note", id: "n", status: "completed", data: { private: true } },
          {
            type: "message",
            id: "u3",
            status: "completed",
            role: "user",
            content: [{ type: "input_text", text: "Part one. " }, { type: "input_text", text: "Part two." }]
          },
          {
            type: "message",
            id: "a2",
            status: "completed",
            role: "assistant",
            content: [{ type: "refusal", refusal: "I can't say." }]
          }
        ]
        yield* turn(history, { instructions: "Answer in English." })
        expect((yield* requestBody(server)).messages).toStrictEqual([
          { role: "system", content: "Answer in English." },
          { role: "system", content: "You are terse." },
          { role: "system", content: "Use metric units." },
          { role: "user", content: "Weather in Zürich and Tokyo?" },
          {
            role: "assistant",
            content: "Checking both.",
            tool_calls: [
              { id: "call_a", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Zürich\"}" } },
              { id: "call_b", type: "function", function: { name: "now", arguments: "{}" } }
            ]
          },
          { role: "tool", tool_call_id: "call_a", content: "{\"c\":21}" },
          { role: "tool", tool_call_id: "call_b", content: "12:00" },
          { role: "user", content: "Quickly, please." },
          { role: "user", content: [{ type: "text", text: "Part one. " }, { type: "text", text: "Part two." }] },
          { role: "assistant", content: "", refusal: "I can't say." }
        ])
      })
    ))

  it.effect("sends the turn's reasoning back in the field reasoningHistory names, and only the reasoning it made", () =>
    Effect.gen(function*() {
      const details = [{ type: "reasoning.text", text: "Two cities.", signature: "c2ln", index: 0 }]
      const frames = [
        delta({ reasoning: "Two cities.", reasoning_details: details }),
        callStart(0, "call_a", "get_weather"),
        callArguments(0, "{\"city\":\"Zürich\"}"),
        finish("tool_calls"),
        done
      ]
      const bodies: Array<unknown> = []
      for (const reasoningHistory of ["none", "reasoning_content", "reasoning"] as const) {
        yield* run((server) =>
          Effect.gen(function*() {
            yield* server.reply(ProviderServer.sse(frames), ProviderServer.sse(textStream("Sunny.")))
            const first = completed(yield* turn(hello, { tools: [weatherTool] }))
            const foreign: Item.Reasoning = {
              type: "reasoning",
              id: "anthropic_msg_0",
              status: "completed",
              content: [{ type: "output_text", text: "Another provider's thought." }],
              encrypted_content: "c2lnbmF0dXJl"
            }
            const history = Schema.decodeUnknownSync(Item.History)(JSON.parse(JSON.stringify([
              ...hello,
              foreign,
              Item.assistantMessage("Earlier.", "a0"),
              Item.userMessage("And now?", "u1"),
              ...first.items,
              { type: "function_call_output", id: "o", status: "completed", call_id: "call_a", output: "21" }
            ])))
            yield* turn(history, { tools: [weatherTool] })
            bodies.push((yield* requestBody(server, 1)).messages)
          }), { reasoningHistory })
      }
      const assistant = (fields: Record<string, unknown>) => [
        { role: "user", content: "Say hello" },
        { role: "assistant", content: "Earlier." },
        { role: "user", content: "And now?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_a",
            type: "function",
            function: { name: "get_weather", arguments: "{\"city\":\"Zürich\"}" }
          }],
          ...fields
        },
        { role: "tool", tool_call_id: "call_a", content: "21" }
      ]
      expect(bodies).toStrictEqual([
        assistant({}),
        assistant({ reasoning_content: "Two cities." }),
        assistant({ reasoning: "Two cities.", reasoning_details: details })
      ])
    }))

  it.effect("fails with InvalidRequest before sending when a result answers no call of the history", () =>
    run((server) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(turn([
          ...hello,
          { type: "function_call_output", id: "o9", status: "completed", call_id: "call_gone", output: "{}" }
        ]))
        expect(exit).toStrictEqual(Exit.fail(
          new AiError.InvalidRequest({
            provider: "chat-completions",
            message: "function_call_output o9 answers call call_gone, which is not in the history"
          })
        ))
        expect(yield* server.requests).toHaveLength(0)
      })
    ))

  it.effect("sends tools strict where the schema allows, holding a strict call's arguments back to take the nulls out", () =>
    run((server) =>
      Effect.gen(function*() {
        const loose: LanguageModel.ToolDefinition = {
          name: "pick",
          description: "One of two",
          parameters: { oneOf: [{ type: "string" }, { type: "number" }] }
        }
        yield* server.reply(ProviderServer.sse([
          callStart(0, "call_w", "get_weather"),
          callArguments(0, "{\"city\":\"Oslo\","),
          callArguments(0, "\"units\":null}"),
          finish("tool_calls"),
          done
        ]))
        const deltas = yield* turn(hello, { tools: [weatherTool, loose], toolChoice: { name: "get_weather" } })
        expect(deltas.slice(0, 3)).toStrictEqual([
          { type: "function_call_start", call_id: "call_w", name: "get_weather" },
          { type: "function_call_arguments_delta", call_id: "call_w", delta: "{\"city\":\"Oslo\"}" },
          { type: "function_call_done", call_id: "call_w", name: "get_weather", arguments: "{\"city\":\"Oslo\"}" }
        ])
        const body = yield* requestBody(server)
        expect(body.tool_choice).toStrictEqual({ type: "function", function: { name: "get_weather" } })
        expect(body.tools).toStrictEqual([
          {
            type: "function",
            function: {
              name: "get_weather",
              description: "The weather in a city",
              parameters: {
                type: "object",
                properties: { city: { type: "string" }, units: { anyOf: [{ type: "string" }, { type: "null" }] } },
                required: ["city", "units"],
                additionalProperties: false
              },
              strict: true
            }
          },
          { type: "function", function: { name: "pick", description: "One of two", parameters: loose.parameters } }
        ])
      })
    ))

  it.effect("sends every schema as it is with strict: false, and the arguments as the model wrote them", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([
          callStart(0, "call_w", "get_weather"),
          callArguments(0, "{\"city\":\"Oslo\",\"units\":null}"),
          finish("tool_calls"),
          done
        ]))
        const deltas = yield* turn(hello, { tools: [weatherTool], toolChoice: "required" })
        expect(deltas[1]).toStrictEqual({
          type: "function_call_arguments_delta",
          call_id: "call_w",
          delta: "{\"city\":\"Oslo\",\"units\":null}"
        })
        const body = yield* requestBody(server)
        const { $schema: _, ...parameters } = weatherTool.parameters
        expect([body.tool_choice, body.tools]).toStrictEqual([
          "required",
          [{ type: "function", function: { name: "get_weather", description: "The weather in a city", parameters } }]
        ])
      }), { strict: false }))

  it.effect("asks for structured output as response_format json_schema, and takes the nulls out of the answer", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([
          delta({ content: "{\"answer\":42," }),
          delta({ content: "\"note\":null}" }),
          finish("stop"),
          usage(),
          done
        ]))
        const schema = {
          type: "object",
          properties: { answer: { type: "number" }, note: { type: "string" } },
          required: ["answer"],
          additionalProperties: false
        }
        const deltas = yield* turn(hello, { output: { name: "Answer", schema } })
        expect(textOf(deltas, "text_delta")).toBe("{\"answer\":42,\"note\":null}")
        expect(JSON.parse(Turn.text(completed(deltas)))).toStrictEqual({ answer: 42 })
        expect((yield* requestBody(server)).response_format).toStrictEqual({
          type: "json_schema",
          json_schema: {
            name: "Answer",
            schema: {
              type: "object",
              properties: { answer: { type: "number" }, note: { anyOf: [{ type: "string" }, { type: "null" }] } },
              required: ["answer", "note"],
              additionalProperties: false
            },
            strict: true
          }
        })
      })
    ))

  it.live("layerConfig reads CHAT_COMPLETIONS_BASE_URL, CHAT_COMPLETIONS_API_KEY and CHAT_COMPLETIONS_MODEL", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse(textStream("from env")), ProviderServer.sse(textStream("keyless")))
      const withEnv = (env: Record<string, string>) =>
        LanguageModel.LanguageModel.pipe(
          Effect.provide(
            ChatCompletions.layerConfig().pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env }))))
          )
        )
      const lm = yield* withEnv({
        CHAT_COMPLETIONS_BASE_URL: server.url,
        CHAT_COMPLETIONS_API_KEY: "sk-env",
        CHAT_COMPLETIONS_MODEL: "llama3.2"
      })
      expect(lm.provider).toBe("chat-completions")
      expect(Turn.text(completed(yield* Stream.runCollect(lm.streamTurn(hello, {}))))).toBe("from env")
      const keyless = yield* withEnv({ CHAT_COMPLETIONS_BASE_URL: server.url })
      expect(Turn.text(completed(yield* Stream.runCollect(keyless.streamTurn(hello, {}))))).toBe("keyless")
      const [first, second] = yield* server.requests
      expect([first?.headers.authorization, (first?.body as { model: string }).model]).toStrictEqual([
        "Bearer sk-env",
        "llama3.2"
      ])
      expect([second?.headers.authorization, second?.body]).toStrictEqual([
        undefined,
        expect.not.objectContaining({ model: expect.anything() })
      ])
      const missing = yield* Effect.exit(withEnv({ CHAT_COMPLETIONS_API_KEY: "sk-env" }))
      expect(Exit.isFailure(missing)).toBe(true)
    }).pipe(Effect.provide(ProviderServer.layer)))
})
