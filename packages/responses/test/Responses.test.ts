import { AiError, type Item, LanguageModel, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect, Layer, Schedule, Stream } from "effect"
import { Responses } from "../src/index.ts"
import { canary, completeTurn, hello, model, run, runFailing, Script, TestLayer, textOf, usage } from "./fixtures.ts"

describe("Responses", () => {
  it.live("streams a text turn and assembles it", () =>
    Effect.gen(function*() {
      const script = new Script().created().message("msg_1", 0, ["Hel", "lo, ", "wörld"]).completed(usage(12, 5, 8, 0))
      const deltas = yield* run([ProviderServer.sse(script.frames)], { instructions: "Be brief." })
      expect(deltas.slice(0, 3)).toStrictEqual([
        { type: "text_delta", delta: "Hel" },
        { type: "text_delta", delta: "lo, " },
        { type: "text_delta", delta: "wörld" }
      ])
      expect(deltas[3]).toStrictEqual({
        type: "usage",
        usage: { input: 12, output: 5, total: 17, cachedInput: 8, reasoning: 0 }
      })
      const turn = completeTurn(deltas)
      expect(turn).toStrictEqual({
        items: [{
          type: "message",
          id: "msg_1",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello, wörld" }]
        }],
        usage: { input: 12, output: 5, total: 17, cachedInput: 8, reasoning: 0 },
        stopReason: "stop",
        model,
        responseId: "resp_68af0001"
      })
      expect(turn.cost).toBeUndefined()
      const [request] = yield* (yield* ProviderServer.ProviderServer).requests
      expect(request?.method).toBe("POST")
      expect(request?.url).toBe("/responses")
      expect(request?.headers.authorization).toBe(`Bearer ${canary}`)
      expect(request?.headers.accept).toBe("text/event-stream")
      expect(request?.body).toStrictEqual({
        model: Responses.defaultModel,
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Hello" }] }],
        stream: true,
        instructions: "Be brief."
      })
    }).pipe(Effect.provide(TestLayer)))

  it.live("sends tools, tool choice, sampling, structured output, reasoning and storage options", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const strictSchema = {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
        additionalProperties: false
      }
      const looseSchema = { type: "object", properties: { q: { type: "string" } }, required: [] }
      const script = new Script().created().message("msg_1", 0, ["{}"]).completed(usage(1, 1))
      const history: ReadonlyArray<Item.Item> = [
        ...hello,
        {
          type: "message",
          id: "msg_0",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Hi" }, { type: "refusal", refusal: "no" }]
        },
        {
          type: "reasoning",
          id: "rs_1",
          status: "completed",
          content: [],
          summary: [{ type: "output_text", text: "thought" }],
          encrypted_content: "enc"
        },
        {
          type: "reasoning",
          id: "gemini-thought-1",
          status: "completed",
          content: [{ type: "output_text", text: "x" }]
        },
        {
          type: "function_call",
          id: "fc_1",
          status: "completed",
          call_id: "call_1",
          name: "weather",
          arguments: "{\"city\":\"Oslo\"}"
        },
        { type: "function_call_output", id: "out_1", status: "completed", call_id: "call_1", output: "\"rain\"" },
        { type: "x-note", id: "n1", status: "completed", data: { secret: true } },
        {
          type: "message",
          id: "sys",
          status: "completed",
          role: "developer",
          content: [{ type: "input_text", text: "Use tools." }]
        }
      ]
      yield* run(
        [ProviderServer.sse(script.frames)],
        {
          model: "gpt-5",
          tools: [
            {
              name: "weather",
              description: "Weather by city",
              parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", ...strictSchema }
            },
            { name: "search", description: "Search", parameters: looseSchema }
          ],
          toolChoice: { name: "weather" },
          output: { name: "Answer", schema: strictSchema },
          params: { temperature: 0.2, topP: 0.9, maxOutputTokens: 256, reasoningEffort: "low", stopSequences: ["END"] }
        },
        { store: false, reasoningSummary: "auto" },
        history
      ).pipe(
        Effect.provideService(Responses.RequestOptions, { previousResponseId: "resp_prev" })
      )
      const [request] = yield* server.requests
      expect(request?.body).toStrictEqual({
        model: "gpt-5",
        input: [
          { type: "message", role: "user", content: [{ type: "input_text", text: "Hello" }] },
          {
            type: "message",
            role: "assistant",
            content: [{ type: "output_text", text: "Hi", annotations: [] }, { type: "refusal", refusal: "no" }]
          },
          {
            type: "reasoning",
            id: "rs_1",
            summary: [{ type: "summary_text", text: "thought" }],
            encrypted_content: "enc"
          },
          { type: "function_call", call_id: "call_1", name: "weather", arguments: "{\"city\":\"Oslo\"}" },
          { type: "function_call_output", call_id: "call_1", output: "\"rain\"" },
          { type: "message", role: "developer", content: [{ type: "input_text", text: "Use tools." }] }
        ],
        stream: true,
        tools: [
          { type: "function", name: "weather", description: "Weather by city", parameters: strictSchema, strict: true },
          { type: "function", name: "search", description: "Search", parameters: looseSchema, strict: false }
        ],
        tool_choice: { type: "function", name: "weather" },
        temperature: 0.2,
        top_p: 0.9,
        max_output_tokens: 256,
        text: { format: { type: "json_schema", name: "Answer", schema: strictSchema, strict: true } },
        reasoning: { effort: "low", summary: "auto" },
        store: false,
        include: ["reasoning.encrypted_content"],
        previous_response_id: "resp_prev"
      })
    }).pipe(Effect.provide(TestLayer)))

  for (const chunkSize of [1, 5, 64]) {
    it.live(`assembles parallel function calls whose argument deltas are split every ${chunkSize} bytes`, () =>
      Effect.gen(function*() {
        const weather = "{\"city\":\"Zürich\",\"note\":\"東京 🌧\"}"
        const search = "{\"q\":\"café — naïve\"}"
        const script = new Script().created()
          .callStart("fc_a", 0, "call_a", "weather")
          .callStart("fc_b", 1, "call_b", "search")
        // Interleave the two calls' argument deltas, as a model writing them in parallel would.
        const pieces = (text: string) => text.match(/.{1,4}/gu) ?? []
        const [wa, sb] = [pieces(weather), pieces(search)]
        for (let i = 0; i < Math.max(wa.length, sb.length); i++) {
          const a = wa[i]
          const b = sb[i]
          if (a !== undefined) script.argumentsDelta("fc_a", 0, a)
          if (b !== undefined) script.argumentsDelta("fc_b", 1, b)
        }
        script.callDone("fc_a", 0, "call_a", "weather", weather)
          .callDone("fc_b", 1, "call_b", "search", search)
          .completed(usage(40, 30))
        const deltas = yield* run([ProviderServer.sse(script.frames, { chunkSize })])
        const argumentsOf = (callId: string) =>
          deltas.flatMap((d) => d.type === "function_call_arguments_delta" && d.call_id === callId ? [d.delta] : [])
            .join("")
        expect(argumentsOf("call_a")).toBe(weather)
        expect(argumentsOf("call_b")).toBe(search)
        expect(deltas.filter((d) => d.type === "function_call_start")).toStrictEqual([
          { type: "function_call_start", call_id: "call_a", name: "weather" },
          { type: "function_call_start", call_id: "call_b", name: "search" }
        ])
        expect(deltas.filter((d) => d.type === "function_call_done")).toStrictEqual([
          { type: "function_call_done", call_id: "call_a", name: "weather", arguments: weather },
          { type: "function_call_done", call_id: "call_b", name: "search", arguments: search }
        ])
        const turn = completeTurn(deltas)
        expect(turn.stopReason).toBe("tool_calls")
        expect(Turn.functionCalls(turn)).toStrictEqual([
          {
            type: "function_call",
            id: "fc_a",
            status: "completed",
            call_id: "call_a",
            name: "weather",
            arguments: weather
          },
          {
            type: "function_call",
            id: "fc_b",
            status: "completed",
            call_id: "call_b",
            name: "search",
            arguments: search
          }
        ])
      }).pipe(Effect.provide(TestLayer)))
  }

  it.live("streams reasoning summaries and keeps the encrypted reasoning for the next turn", () =>
    Effect.gen(function*() {
      const script = new Script().created()
        .reasoning("rs_1", 0, [["First, ", "the sky."], ["Then ", "blue."]], "gAAAA-encrypted")
        .message("msg_1", 1, ["Blue."])
        .completed(usage(20, 300, 0, 256))
      const deltas = yield* run([ProviderServer.sse(script.frames)], { params: { reasoningEffort: "high" } })
      expect(textOf(deltas, "reasoning_delta")).toBe("First, the sky.Then blue.")
      const turn = completeTurn(deltas)
      expect(turn.items[0]).toStrictEqual({
        type: "reasoning",
        id: "rs_1",
        status: "completed",
        content: [],
        summary: [{ type: "output_text", text: "First, the sky." }, { type: "output_text", text: "Then blue." }],
        encrypted_content: "gAAAA-encrypted"
      })
      expect(Turn.text(turn)).toBe("Blue.")
      expect(turn.usage).toStrictEqual({ input: 20, output: 300, total: 320, cachedInput: 0, reasoning: 256 })
    }).pipe(Effect.provide(TestLayer)))

  it.live("streams a refusal", () =>
    Effect.gen(function*() {
      const script = new Script().created().refusal("msg_1", 0, ["I can't ", "help with that."]).completed(usage(9, 6))
      const deltas = yield* run([ProviderServer.sse(script.frames)])
      expect(textOf(deltas, "refusal_delta")).toBe("I can't help with that.")
      expect(textOf(deltas, "text_delta")).toBe("")
      const turn = completeTurn(deltas)
      expect(turn.items).toStrictEqual([{
        type: "message",
        id: "msg_1",
        status: "completed",
        role: "assistant",
        content: [{ type: "refusal", refusal: "I can't help with that." }]
      }])
      expect(Turn.text(turn)).toBe("")
    }).pipe(Effect.provide(TestLayer)))

  it.live("returns structured output as the message text", () =>
    Effect.gen(function*() {
      const answer = { city: "Oslo", degrees: -3 }
      const json = JSON.stringify(answer)
      const script = new Script().created().message("msg_1", 0, [json.slice(0, 10), json.slice(10)]).completed(
        usage(30, 12)
      )
      const schema = {
        type: "object",
        properties: { city: { type: "string" }, degrees: { type: "number" } },
        required: ["city", "degrees"],
        additionalProperties: false
      }
      const deltas = yield* run([ProviderServer.sse(script.frames)], { output: { name: "Weather", schema } })
      expect(JSON.parse(Turn.text(completeTurn(deltas)))).toStrictEqual(answer)
      const [request] = yield* (yield* ProviderServer.ProviderServer).requests
      expect(request?.body).toMatchObject({
        text: { format: { type: "json_schema", name: "Weather", schema, strict: true } }
      })
    }).pipe(Effect.provide(TestLayer)))

  it.live("ends an incomplete response with its stop reason and the partial items", () =>
    Effect.gen(function*() {
      const script = new Script().created()
        .messageStart("msg_1", 0).textDeltas("msg_1", 0, ["Once upon", " a time"])
        .incomplete("max_output_tokens", usage(10, 16))
      const deltas = yield* run([ProviderServer.sse(script.frames)], { params: { maxOutputTokens: 16 } })
      const turn = completeTurn(deltas)
      expect(turn.stopReason).toBe("max_tokens")
      expect(turn.providerStopReason).toBe("max_output_tokens")
      expect(turn.items).toStrictEqual([{
        type: "message",
        id: "msg_1",
        status: "incomplete",
        role: "assistant",
        content: [{ type: "output_text", text: "Once upon a time" }]
      }])
      const filtered = new Script().created().incomplete("content_filter", usage(10, 0))
      const filteredTurn = completeTurn(yield* run([ProviderServer.sse(filtered.frames)]))
      expect(filteredTurn.stopReason).toBe("content_filter")
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails on response.failed with the error its code names, after the deltas before it", () =>
    Effect.gen(function*() {
      const script = new Script().created().messageStart("msg_1", 0).textDeltas("msg_1", 0, ["partial"])
        .failed("server_error", "The server had an error while processing your request.")
      const { deltas, error } = yield* runFailing([ProviderServer.sse(script.frames)], {
        retryPolicy: Schedule.recurs(3)
      })
      expect(deltas).toStrictEqual([{ type: "text_delta", delta: "partial" }])
      expect(error).toStrictEqual(
        new AiError.Unavailable({
          provider: "openai",
          message: "The server had an error while processing your request. (server_error)"
        })
      )
      // A delta reached the consumer, so the failure was not retried.
      expect(yield* (yield* ProviderServer.ProviderServer).requests).toHaveLength(1)
      const invalid = new Script().created().failed("invalid_prompt", "Invalid prompt.")
      expect((yield* runFailing([ProviderServer.sse(invalid.frames)])).error._tag).toBe("InvalidRequest")
      const limited = new Script().created().failed("rate_limit_exceeded", "Slow down.")
      expect((yield* runFailing([ProviderServer.sse(limited.frames)])).error._tag).toBe("RateLimited")
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails on an error event", () =>
    Effect.gen(function*() {
      const script = new Script().created().error("context_length_exceeded", "Your input exceeds the context window.")
      const { error } = yield* runFailing([ProviderServer.sse(script.frames)])
      expect(error).toStrictEqual(
        new AiError.ContextLengthExceeded({
          provider: "openai",
          message: "Your input exceeds the context window. (context_length_exceeded)"
        })
      )
    }).pipe(Effect.provide(TestLayer)))

  it.live("retries a 500 and then succeeds; without retries the 500 is Unavailable", () =>
    Effect.gen(function*() {
      const script = new Script().created().message("msg_1", 0, ["ok"]).completed(usage(1, 1))
      const deltas = yield* run(
        [ProviderServer.status(500, { error: { message: "internal" } }), ProviderServer.sse(script.frames)],
        {},
        { retryPolicy: Schedule.recurs(2) }
      )
      expect(Turn.text(completeTurn(deltas))).toBe("ok")
      const { error } = yield* runFailing([ProviderServer.status(500, { error: { message: "internal" } })])
      expect(error).toMatchObject({ _tag: "Unavailable", status: 500, message: "internal" })
    }).pipe(Effect.provide(TestLayer)))

  it.live("maps a context-length 400 to ContextLengthExceeded and another 400 to InvalidRequest", () =>
    Effect.gen(function*() {
      const tooLong = {
        error: {
          message: "Your input exceeds the context window of this model. Please adjust your input and try again.",
          type: "invalid_request_error",
          param: "input",
          code: "context_length_exceeded"
        }
      }
      expect((yield* runFailing([ProviderServer.status(400, tooLong)])).error._tag).toBe("ContextLengthExceeded")
      const bad = { error: { message: "Unsupported parameter: 'top_k'.", type: "invalid_request_error", code: null } }
      expect((yield* runFailing([ProviderServer.status(400, bad)])).error).toStrictEqual(
        new AiError.InvalidRequest({ provider: "openai", status: 400, message: "Unsupported parameter: 'top_k'." })
      )
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails on an error event nested the way the live API sends it, and retries a transient one", () =>
    Effect.gen(function*() {
      const nested = (type: string, code: string | null, message: string) =>
        ProviderServer.sse(
          new Script().created().event("error", { error: { type, code, message, param: null } }).frames
        )
      const limited = yield* runFailing([nested("too_many_requests", "too_many_requests", "Too Many Requests")])
      expect(limited.error).toStrictEqual(
        new AiError.RateLimited({ provider: "openai", message: "Too Many Requests (too_many_requests)" })
      )
      const quota = yield* runFailing([nested("insufficient_quota", "insufficient_quota", "You exceeded your quota.")])
      expect(quota.error).toStrictEqual(
        new AiError.QuotaExceeded({ provider: "openai", message: "You exceeded your quota. (insufficient_quota)" })
      )
      const unavailable = yield* runFailing([nested("service_unavailable_error", null, "Please retry.")])
      expect(unavailable.error).toStrictEqual(
        new AiError.Unavailable({ provider: "openai", message: "Please retry. (service_unavailable_error)" })
      )
      const bare = yield* runFailing([ProviderServer.sse(new Script().created().event("error", {}).frames)])
      expect(bare.error).toStrictEqual(
        new AiError.Unavailable({ provider: "openai", message: "the stream failed without a message" })
      )
      // Nothing reached the consumer before the transient error, so the request is sent again.
      const ok = new Script().created().message("msg_1", 0, ["ok"]).completed(usage(1, 1))
      const deltas = yield* run(
        [nested("service_unavailable_error", null, "Please retry."), ProviderServer.sse(ok.frames)],
        {},
        { retryPolicy: Schedule.recurs(1) }
      )
      expect(Turn.text(completeTurn(deltas))).toBe("ok")
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails with a MalformedEvent naming the event when a data line is not JSON", () =>
    Effect.gen(function*() {
      const script = new Script().created().textDeltas("msg_1", 0, [])
      const frames = [
        ...script.frames,
        "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\n\n"
      ]
      const { error } = yield* runFailing([ProviderServer.sse(frames)])
      expect(error).toMatchObject({ _tag: "MalformedEvent", provider: "openai", event: "response.output_text.delta" })
      expect(error.message).toMatch(/not JSON/)
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails with a MalformedEvent when a known event has the wrong shape", () =>
    Effect.gen(function*() {
      const script = new Script().created().messageStart("msg_1", 0)
        .event("response.output_text.delta", { item_id: "msg_1", output_index: 0, content_index: 0, delta: 42 })
      const { error } = yield* runFailing([ProviderServer.sse(script.frames)])
      expect(error).toStrictEqual(
        new AiError.MalformedEvent({
          provider: "openai",
          event: "response.output_text.delta",
          message: "delta: Expected string"
        })
      )
      const item = new Script().created().event("response.output_item.added", {
        output_index: 0,
        item: { id: "msg_1", type: "message", status: "in_progress", content: [{ type: "output_text", text: 7 }] }
      })
      expect((yield* runFailing([ProviderServer.sse(item.frames)])).error).toStrictEqual(
        new AiError.MalformedEvent({
          provider: "openai",
          event: "response.output_item.added",
          message: "item.content[0].text: Expected string"
        })
      )
    }).pipe(Effect.provide(TestLayer)))

  it.live("skips events of unknown types", () =>
    Effect.gen(function*() {
      const script = new Script().created()
        .event("response.web_search_call.in_progress", { output_index: 0, item_id: "ws_1" })
        .event("response.output_item.added", {
          output_index: 0,
          item: { id: "ws_1", type: "web_search_call", status: "in_progress" }
        })
        .event("response.output_item.done", {
          output_index: 0,
          item: { id: "ws_1", type: "web_search_call", status: "completed" }
        })
        .messageStart("msg_1", 1).textDeltas("msg_1", 1, ["found it"])
        .event("response.output_text.annotation.added", {
          item_id: "msg_1",
          output_index: 1,
          content_index: 0,
          annotation_index: 0,
          annotation: { type: "url_citation" }
        })
        .event("response.some_future_event", { anything: [1, 2, 3] })
        .messageDone("msg_1", 1, "found it")
        .completed(usage(3, 2))
      const turn = completeTurn(yield* run([ProviderServer.sse(script.frames)]))
      expect(Turn.text(turn)).toBe("found it")
      expect(turn.items.map((item) => item.type)).toStrictEqual(["x-openai.web_search_call", "message"])
    }).pipe(Effect.provide(TestLayer)))

  it.live("decodes events sent without an event: line by their JSON type", () =>
    Effect.gen(function*() {
      const script = new Script().created().message("msg_1", 0, ["no ", "names"])
        .event("response.some_future_event", {})
        .completed(usage(2, 2))
      // Drop every `event:` line, as some Responses-compatible servers do.
      const frames = script.frames.map((frame) => frame.replace(/^event: .*\n/, ""))
      expect(frames.every((frame) => frame.startsWith("data: "))).toBe(true)
      expect(Turn.text(completeTurn(yield* run([ProviderServer.sse(frames)])))).toBe("no names")
      const broken = [...new Script().created().frames, ProviderServer.sseEvent({ type: "response.output_text.delta" })]
      const { error } = yield* runFailing([
        ProviderServer.sse(broken.map((frame) => frame.replace(/^event: .*\n/, "")))
      ])
      expect(error).toMatchObject({ _tag: "MalformedEvent", event: "response.output_text.delta" })
    }).pipe(Effect.provide(TestLayer)))

  it.live("layerConfig takes Config values, and reads OPENAI_API_KEY and OPENAI_BASE_URL by default", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const answer = ProviderServer.sse(
        new Script().created().message("msg_1", 0, ["hi"]).completed(usage(1, 1)).frames
      )
      yield* server.reply(answer, answer)
      const turn = (layer: Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError>, env: Record<string, string>) =>
        Effect.gen(function*() {
          const model = yield* LanguageModel.LanguageModel
          return yield* Stream.runCollect(model.streamTurn(hello, {}))
        }).pipe(Effect.provide(layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))))))
      const standard = yield* turn(Responses.layerConfig(), {
        OPENAI_API_KEY: canary,
        OPENAI_BASE_URL: `${server.url}/`
      })
      expect(Turn.text(completeTurn(standard))).toBe("hi")
      const own = yield* turn(
        Responses.layerConfig({
          apiKey: Config.Redacted("MY_KEY"),
          baseUrl: Config.String("MY_URL"),
          model: Config.succeed("gpt-5-nano"),
          store: Config.Boolean("MY_STORE")
        }),
        { MY_KEY: "sk-mine", MY_URL: server.url, MY_STORE: "false" }
      )
      expect(Turn.text(completeTurn(own))).toBe("hi")
      const [first, second] = yield* server.requests
      expect(first?.headers.authorization).toBe(`Bearer ${canary}`)
      expect(first?.body).toMatchObject({ model: Responses.defaultModel })
      expect(second?.headers.authorization).toBe("Bearer sk-mine")
      expect(second?.body).toMatchObject({ model: "gpt-5-nano", store: false })
      const missing = yield* Effect.flip(turn(Responses.layerConfig(), {}))
      expect(String(missing)).toContain("OPENAI_API_KEY")
    }).pipe(Effect.provide(TestLayer)))
})
