import { AiError, type Item, LanguageModel, ProviderRetry, Turn, type TurnDelta } from "@agentloop/core"
import { ProviderServer, SpanRecorder } from "@agentloop/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Fiber, Layer, Redacted, Schedule, Stream } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { Responses } from "../src/index.ts"
import { model, Script, usage } from "./fixtures.ts"

const canary = "sk-canary-5f1e9c2a-DO-NOT-LEAK"
const TestLayer = Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)
const hello: ReadonlyArray<Item.Item> = [{
  type: "message",
  id: "user",
  status: "completed",
  role: "user",
  content: [{ type: "input_text", text: "Hello" }]
}]

/** The provider pointed at the loopback server; no retries unless a test asks. */
const provider = (config?: Partial<Responses.Config>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    return yield* Responses.make({
      apiKey: Redacted.make(canary),
      baseUrl: server.url,
      retryPolicy: ProviderRetry.none,
      ...config
    })
  })

const run = (
  replies: ReadonlyArray<ProviderServer.Reply>,
  options: LanguageModel.TurnOptions = {},
  config?: Partial<Responses.Config>,
  history: ReadonlyArray<Item.Item> = hello
) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(...replies)
    const model = yield* provider(config)
    return yield* Stream.runCollect(model.streamTurn(history, options))
  })

/** Runs a turn that must fail; returns the error and the deltas that came before it. */
const runFailing = (replies: ReadonlyArray<ProviderServer.Reply>, config?: Partial<Responses.Config>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(...replies)
    const model = yield* provider(config)
    const deltas: Array<TurnDelta.TurnDelta> = []
    const error = yield* model.streamTurn(hello, {}).pipe(
      Stream.runForEach((delta) => Effect.sync(() => deltas.push(delta))),
      Effect.flip
    )
    return { error, deltas }
  })

const completeTurn = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const last = deltas.at(-1)
  if (last?.type !== "turn_complete") throw new Error(`the stream did not end with turn_complete: ${last?.type}`)
  expect(deltas.filter((d) => d.type === "turn_complete")).toHaveLength(1)
  return last.turn
}

const textOf = (deltas: ReadonlyArray<TurnDelta.TurnDelta>, type: "text_delta" | "refusal_delta" | "reasoning_delta") =>
  deltas.flatMap((d) => d.type === type ? [d.delta] : []).join("")

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
        { type: "message", id: "msg_0", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hi" }, { type: "refusal", refusal: "no" }] },
        { type: "reasoning", id: "rs_1", status: "completed", content: [], summary: [{ type: "output_text", text: "thought" }], encrypted_content: "enc" },
        { type: "reasoning", id: "gemini-thought-1", status: "completed", content: [{ type: "output_text", text: "x" }] },
        { type: "function_call", id: "fc_1", status: "completed", call_id: "call_1", name: "weather", arguments: "{\"city\":\"Oslo\"}" },
        { type: "function_call_output", id: "out_1", status: "completed", call_id: "call_1", output: "\"rain\"" },
        { type: "x-note", id: "n1", status: "completed", data: { secret: true } },
        { type: "message", id: "sys", status: "completed", role: "developer", content: [{ type: "input_text", text: "Use tools." }] }
      ]
      yield* run([ProviderServer.sse(script.frames)], {
        model: "gpt-5",
        tools: [
          { name: "weather", description: "Weather by city", parameters: { $schema: "https://json-schema.org/draft/2020-12/schema", ...strictSchema } },
          { name: "search", description: "Search", parameters: looseSchema }
        ],
        toolChoice: { name: "weather" },
        output: { name: "Answer", schema: strictSchema },
        params: { temperature: 0.2, topP: 0.9, maxOutputTokens: 256, reasoningEffort: "low", stopSequences: ["END"] }
      }, { store: false, reasoningSummary: "auto" }, history).pipe(
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
          { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "thought" }], encrypted_content: "enc" },
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

  for (const chunkSize of [1, 2, 3, 5, 7, 64]) {
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
          deltas.flatMap((d) => d.type === "function_call_arguments_delta" && d.call_id === callId ? [d.delta] : []).join("")
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
          { type: "function_call", id: "fc_a", status: "completed", call_id: "call_a", name: "weather", arguments: weather },
          { type: "function_call", id: "fc_b", status: "completed", call_id: "call_b", name: "search", arguments: search }
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
      const script = new Script().created().message("msg_1", 0, [json.slice(0, 10), json.slice(10)]).completed(usage(30, 12))
      const schema = {
        type: "object",
        properties: { city: { type: "string" }, degrees: { type: "number" } },
        required: ["city", "degrees"],
        additionalProperties: false
      }
      const deltas = yield* run([ProviderServer.sse(script.frames)], { output: { name: "Weather", schema } })
      expect(JSON.parse(Turn.text(completeTurn(deltas)))).toStrictEqual(answer)
      const [request] = yield* (yield* ProviderServer.ProviderServer).requests
      expect(request?.body).toMatchObject({ text: { format: { type: "json_schema", name: "Weather", schema, strict: true } } })
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
      expect(error).toStrictEqual(new AiError.Unavailable({
        provider: "openai",
        message: "The server had an error while processing your request. (server_error)"
      }))
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
      expect(error).toStrictEqual(new AiError.ContextLengthExceeded({
        provider: "openai",
        message: "Your input exceeds the context window. (context_length_exceeded)"
      }))
    }).pipe(Effect.provide(TestLayer)))

  it.live("maps 401 and 403 to AuthFailed without retrying, and keeps the echoed key out of the message", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const body = {
        error: { message: `Incorrect API key provided: ${canary}.`, type: "invalid_request_error", code: "invalid_api_key" }
      }
      const unauthorized = yield* runFailing([ProviderServer.status(401, body)], { retryPolicy: Schedule.recurs(3) })
      expect(unauthorized.error).toStrictEqual(new AiError.AuthFailed({
        provider: "openai",
        status: 401,
        message: "Incorrect API key provided: <redacted>."
      }))
      const forbidden = yield* runFailing([ProviderServer.status(403, { error: { message: "Project not allowed" } })])
      expect(forbidden.error).toMatchObject({ _tag: "AuthFailed", status: 403, message: "Project not allowed" })
      expect(yield* server.requests).toHaveLength(2)
    }).pipe(Effect.provide(TestLayer)))

  it.live("waits out a 429's Retry-After and then succeeds", () =>
    Effect.gen(function*() {
      const script = new Script().created().message("msg_1", 0, ["ok"]).completed(usage(1, 1))
      // The policy's own delay is zero: only the Retry-After the policy is fed with can make the retry wait.
      const seen: Array<unknown> = []
      const retryPolicy = Schedule.recurs(2).pipe(Schedule.tap(({ input }) => Effect.sync(() => seen.push(input))))
      const deltas = yield* run([
        ProviderServer.status(429, { error: { message: "Rate limit reached", code: "rate_limit_exceeded" } }, {
          "retry-after": "1"
        }),
        ProviderServer.sse(script.frames)
      ], {}, { retryPolicy })
      expect(Turn.text(completeTurn(deltas))).toBe("ok")
      expect(yield* (yield* ProviderServer.ProviderServer).requests).toHaveLength(2)
      expect(seen).toStrictEqual([
        new AiError.RateLimited({ provider: "openai", message: "Rate limit reached", retryAfter: Duration.seconds(1) })
      ])
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
        ProviderServer.sse(new Script().created().event("error", { error: { type, code, message, param: null } }).frames)
      const limited = yield* runFailing([nested("too_many_requests", "too_many_requests", "Too Many Requests")])
      expect(limited.error).toStrictEqual(
        new AiError.RateLimited({ provider: "openai", message: "Too Many Requests (too_many_requests)" })
      )
      const quota = yield* runFailing([nested("insufficient_quota", "insufficient_quota", "You exceeded your quota.")])
      expect(quota.error._tag).toBe("InvalidRequest")
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

  it.live("fails with IncompleteTurn when the stream ends before response.completed", () =>
    Effect.gen(function*() {
      const script = new Script().created().messageStart("msg_1", 0).textDeltas("msg_1", 0, ["cut ", "off"])
      const { deltas, error } = yield* runFailing([ProviderServer.sse(script.frames)], { retryPolicy: Schedule.recurs(3) })
      expect(textOf(deltas, "text_delta")).toBe("cut off")
      expect(error._tag).toBe("IncompleteTurn")
      expect(yield* (yield* ProviderServer.ProviderServer).requests).toHaveLength(1)
    }).pipe(Effect.provide(TestLayer)))

  it.live("fails with Unavailable when the connection drops mid-stream, without retrying", () =>
    Effect.gen(function*() {
      const script = new Script().created().message("msg_1", 0, ["never", " finished"]).completed(usage(1, 1))
      const body = script.frames.join("")
      const { deltas, error } = yield* runFailing([
        ProviderServer.sse(script.frames, { disconnectAfter: body.indexOf("response.output_text.done") })
      ], { retryPolicy: Schedule.recurs(3) })
      expect(textOf(deltas, "text_delta")).toBe("never finished")
      expect(error._tag).toBe("Unavailable")
      expect(yield* (yield* ProviderServer.ProviderServer).requests).toHaveLength(1)
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
      expect(error).toMatchObject({ _tag: "MalformedEvent", event: "response.output_text.delta" })
    }).pipe(Effect.provide(TestLayer)))

  it.live("skips events of unknown types", () =>
    Effect.gen(function*() {
      const script = new Script().created()
        .event("response.web_search_call.in_progress", { output_index: 0, item_id: "ws_1" })
        .event("response.output_item.added", { output_index: 0, item: { id: "ws_1", type: "web_search_call", status: "in_progress" } })
        .event("response.output_item.done", { output_index: 0, item: { id: "ws_1", type: "web_search_call", status: "completed" } })
        .messageStart("msg_1", 1).textDeltas("msg_1", 1, ["found it"])
        .event("response.output_text.annotation.added", { item_id: "msg_1", output_index: 1, content_index: 0, annotation_index: 0, annotation: { type: "url_citation" } })
        .event("response.some_future_event", { anything: [1, 2, 3] })
        .messageDone("msg_1", 1, "found it")
        .completed(usage(3, 2))
      const turn = completeTurn(yield* run([ProviderServer.sse(script.frames)]))
      expect(Turn.text(turn)).toBe("found it")
      expect(turn.items).toHaveLength(1)
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
      const { error } = yield* runFailing([ProviderServer.sse(broken.map((frame) => frame.replace(/^event: .*\n/, "")))])
      expect(error).toMatchObject({ _tag: "MalformedEvent", event: "response.output_text.delta" })
    }).pipe(Effect.provide(TestLayer)))

  it.live("aborts the HTTP request when the consumer stops reading", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const script = new Script().created().message("msg_1", 0, Array.from({ length: 200 }, (_, i) => `w${i} `))
        .completed(usage(1, 200))
      yield* server.reply(ProviderServer.sse(script.frames, { chunkSize: 64, delay: "2 millis" }))
      const model = yield* provider()
      const first = yield* Stream.runCollect(Stream.take(model.streamTurn(hello, {}), 3))
      expect(first.map((d) => d.type)).toStrictEqual(["text_delta", "text_delta", "text_delta"])
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("aborts the HTTP request when the consuming fiber is interrupted", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const script = new Script().created().messageStart("msg_1", 0).textDeltas("msg_1", 0, ["waiting..."])
      const frames = script.frames.join("")
      yield* server.reply(ProviderServer.sse(script.frames, { stallAfter: new TextEncoder().encode(frames).length }))
      const model = yield* provider()
      const started = yield* Deferred.make<void>()
      const fiber = yield* model.streamTurn(hello, {}).pipe(
        Stream.tap(() => Deferred.succeed(started, undefined)),
        Stream.runDrain,
        Effect.forkChild
      )
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with Timeout when the stream goes quiet for longer than idleTimeout", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const script = new Script().created().messageStart("msg_1", 0).textDeltas("msg_1", 0, ["thinking"])
      yield* server.reply(ProviderServer.sse(script.frames, {
        stallAfter: new TextEncoder().encode(script.frames.join("")).length
      }))
      const model = yield* provider({ idleTimeout: "20 seconds" })
      const started = yield* Deferred.make<void>()
      const fiber = yield* model.streamTurn(hello, {}).pipe(
        Stream.tap(() => Deferred.succeed(started, undefined)),
        Stream.runDrain,
        Effect.forkChild
      )
      yield* Deferred.await(started)
      yield* TestClock.adjust("20 seconds")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error._tag).toBe("Timeout")
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("never puts the API key in an error, a delta or a span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = SpanRecorder.make()
      const ok = new Script().created().message("msg_1", 0, ["fine"]).completed(usage(1, 1))
      const errors: Array<AiError.AiError> = []
      const results: Array<unknown> = []
      for (const reply of [
        ProviderServer.status(401, { error: { message: `Incorrect API key provided: ${canary}` } }),
        ProviderServer.status(500, `upstream said ${canary}`),
        ProviderServer.sse(new Script().created().failed("server_error", `key ${canary}`).frames)
      ]) {
        const { deltas, error } = yield* runFailing([reply]).pipe(Effect.withTracer(tracer))
        errors.push(error)
        results.push(deltas)
      }
      results.push(yield* run([ProviderServer.sse(ok.frames)]).pipe(Effect.withTracer(tracer)))
      for (const error of errors) {
        expect(error.message).not.toContain(canary)
        expect(JSON.stringify(error)).not.toContain(canary)
      }
      expect(JSON.stringify(results)).not.toContain(canary)
      expect(spans.some((span) => span.name === "Responses.streamTurn")).toBe(true)
      const seen = SpanRecorder.text(spans)
      expect(seen).toContain("http.request.header.authorization")
      expect(seen).not.toContain(canary)
    }).pipe(
      // Record every header on the spans, so a key that escaped redaction would show.
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.provide(TestLayer)
    ))

  it.live("reads OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL in layerConfig", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse(new Script().created().message("msg_1", 0, ["hi"]).completed(usage(1, 1)).frames))
      const config = ConfigProvider.layer(ConfigProvider.fromUnknown({
        OPENAI_API_KEY: canary,
        OPENAI_BASE_URL: `${server.url}/`,
        OPENAI_MODEL: "gpt-5-nano"
      }))
      const deltas = yield* Effect.gen(function*() {
        const model = yield* LanguageModel.LanguageModel
        return yield* Stream.runCollect(model.streamTurn(hello, {}))
      }).pipe(Effect.provide(Responses.layerConfig({ retryPolicy: ProviderRetry.none }).pipe(Layer.provide(config))))
      expect(Turn.text(completeTurn(deltas))).toBe("hi")
      const [request] = yield* server.requests
      expect(request?.headers.authorization).toBe(`Bearer ${canary}`)
      expect(request?.body).toMatchObject({ model: "gpt-5-nano" })
      const missing = yield* Effect.flip(Layer.build(Responses.layerConfig()).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))),
        Effect.scoped
      ))
      expect(String(missing)).toContain("OPENAI_API_KEY")
    }).pipe(Effect.provide(TestLayer)))
})
