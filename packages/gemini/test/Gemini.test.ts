import { AiError, Item, LanguageModel, Loop, Tool, Toolkit, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer, SpanRecorder } from "@agentloop/core/testing"
import { describe, expect, it } from "@effect/vitest"
import {
  Cause,
  ConfigProvider,
  Deferred,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Redacted,
  Schedule,
  Schema,
  Stream
} from "effect"
import { HttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import { Gemini } from "../src/index.ts"

const canary = "AIzaCANARY-9f8e7d6c5b4a"
const model = "gemini-test"
const path = `/v1beta/models/${model}:streamGenerateContent?alt=sse`

type Overrides = Partial<Omit<Gemini.Config, "apiKey" | "baseUrl">>

const noCanary = (label: string, value: unknown): void => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value)
  if (text.includes(canary)) throw new Error(`the API key leaked into ${label}: ${text}`)
}

/**
 * Runs `body` against the Gemini layer pointed at a fresh loopback server, with a
 * tracer that records every span and with header capture on client spans turned
 * on; afterwards, whatever the outcome, no span attribute, span event or error
 * may contain the API key.
 */
const run = <A, E>(
  body: (server: ProviderServer.ProviderServer["Service"]) => Effect.Effect<A, E, LanguageModel.LanguageModel>,
  overrides: Overrides = {}
) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const { spans, tracer } = SpanRecorder.make()
    const exit = yield* body(server).pipe(
      Effect.provide(Gemini.layer({
        apiKey: Redacted.make(canary),
        baseUrl: `${server.url}/v1beta`,
        model,
        retryPolicy: Schedule.recurs(2),
        ...overrides
      })),
      Effect.withTracer(tracer),
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.exit
    )
    noCanary("a span", SpanRecorder.text(spans))
    if (Exit.isFailure(exit)) {
      noCanary("a failure", Cause.pretty(exit.cause))
      for (const error of Cause.prettyErrors(exit.cause)) noCanary("an error message", error.message)
    }
    const clientSpans = spans.filter((span) => span.attributes.has("http.request.header.x-goog-api-key"))
    // Every request made a client span with its headers captured, so the scan above saw the key's header.
    expect(clientSpans).toHaveLength((yield* server.requests).length)
    for (const span of clientSpans) expect(span.attributes.get("http.request.header.x-goog-api-key")).toBe("<redacted>")
    return yield* exit
  }).pipe(Effect.provide(ProviderServer.layer))

const turn = (history: ReadonlyArray<Item.Item>, options: LanguageModel.TurnOptions = {}) =>
  Effect.gen(function*() {
    const lm = yield* LanguageModel.LanguageModel
    return yield* Stream.runCollect(lm.streamTurn(history, options))
  })

const failure = (history: ReadonlyArray<Item.Item>, options: LanguageModel.TurnOptions = {}) =>
  Effect.flip(turn(history, options))

const completed = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const last = deltas[deltas.length - 1]
  if (last?.type !== "turn_complete") throw new Error(`the stream did not end with turn_complete: ${JSON.stringify(last)}`)
  expect(deltas.filter((delta) => delta.type === "turn_complete")).toHaveLength(1)
  return last.turn
}

const textOf = (deltas: ReadonlyArray<TurnDelta.TurnDelta>, type: "text_delta" | "reasoning_delta") =>
  deltas.flatMap((delta) => delta.type === type ? [delta.delta] : []).join("")

/** One `GenerateContentResponse` chunk in Gemini's documented shape. */
const chunk = (parts: ReadonlyArray<unknown>, extra: {
  readonly finishReason?: string
  readonly usageMetadata?: unknown
} = {}) => ({
  candidates: [{
    content: { parts, role: "model" },
    ...(extra.finishReason === undefined ? {} : { finishReason: extra.finishReason }),
    index: 0
  }],
  usageMetadata: extra.usageMetadata ?? { promptTokenCount: 11, totalTokenCount: 11 },
  modelVersion: "gemini-2.5-flash-001",
  responseId: "resp-abc"
})

const usage = {
  promptTokenCount: 20,
  candidatesTokenCount: 7,
  cachedContentTokenCount: 12,
  thoughtsTokenCount: 5,
  totalTokenCount: 32
}

const frames = (...chunks: ReadonlyArray<unknown>) => chunks.map((c) => ProviderServer.sseEvent(c))

const textReply = (text: string) =>
  ProviderServer.sse(frames(chunk([{ text }], { finishReason: "STOP", usageMetadata: usage })))

const hello = [Item.userMessage("Say hello")]

/** Advances the test clock a second at a time, letting real I/O run in between, until `fiber` ends. */
const driveClock = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function*() {
    while (fiber.pollUnsafe() === undefined) {
      yield* TestClock.adjust("1 second")
      yield* realPause
    }
    return yield* Fiber.join(fiber)
  })

const realPause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

describe("Gemini", () => {
  it.effect("streams a text turn and assembles it", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames(
          chunk([{ text: "Hello" }]),
          chunk([{ text: ", wörld" }]),
          chunk([{ text: "!" }], { finishReason: "STOP", usageMetadata: usage })
        )))
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
        expect(result.items).toStrictEqual([{
          type: "message",
          id: "gemini_resp-abc_0",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello, wörld!" }]
        }])
        expect(result.stopReason).toBe("stop")
        expect(result.providerStopReason).toBe("STOP")
        expect(result.model).toBe("gemini-2.5-flash-001")
        expect(result.responseId).toBe("resp-abc")
        expect(result.cost).toBeUndefined()
        expect(result.usage).toStrictEqual({ input: 20, output: 12, total: 32, cachedInput: 12, reasoning: 5 })
        expect(deltas[deltas.length - 2]).toStrictEqual({ type: "usage", usage: result.usage })

        const [request] = yield* server.requests
        expect(request?.method).toBe("POST")
        expect(request?.url).toBe(path)
        expect(request?.headers["x-goog-api-key"]).toBe(canary)
        expect(request?.body).toStrictEqual({
          contents: [{ role: "user", parts: [{ text: "Say hello" }] }],
          systemInstruction: { parts: [{ text: "Be brief." }] },
          generationConfig: { temperature: 0.2, topP: 0.9, maxOutputTokens: 64, stopSequences: ["END"] }
        })
      })
    ))

  it.effect("uses the turn's model in the URL over the layer's", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(textReply("ok"))
        const result = completed(yield* turn(hello, { model: "gemini-2.5-pro" }))
        expect(result.stopReason).toBe("stop")
        const [request] = yield* server.requests
        expect(request?.url).toBe("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
      })
    ))

  const parallelCalls = frames(
    chunk([{ text: "Checking both." }]),
    chunk([{ functionCall: { name: "get_weather", args: { city: "Zürich", unit: "°C" } } }]),
    chunk([{ functionCall: { name: "get_weather", args: { city: "東京 🌸" } } }], {
      finishReason: "STOP",
      usageMetadata: usage
    })
  )

  it.effect("streams parallel function calls split at every byte boundary, inside multi-byte characters too", () =>
    run((server) =>
      Effect.gen(function*() {
        const sizes = [undefined, 1, 2, 3, 5, 7, 13]
        yield* server.reply(...sizes.map((chunkSize) => ProviderServer.sse(parallelCalls, { chunkSize })))
        const runs: Array<ReadonlyArray<TurnDelta.TurnDelta>> = []
        for (const _ of sizes) runs.push(yield* turn(hello, { tools: [weatherTool] }))
        for (const deltas of runs) expect(deltas).toStrictEqual(runs[0])

        const deltas = runs[0]!
        const result = completed(deltas)
        expect(result.stopReason).toBe("tool_calls")
        expect(result.providerStopReason).toBe("STOP")
        const calls = Turn.functionCalls(result)
        expect(calls.map((call) => [call.name, JSON.parse(call.arguments)])).toStrictEqual([
          ["get_weather", { city: "Zürich", unit: "°C" }],
          ["get_weather", { city: "東京 🌸" }]
        ])
        const [first, second] = calls
        expect(first!.call_id).not.toBe(second!.call_id)
        for (const call of calls) {
          expect(deltas.filter((d) => "call_id" in d && d.call_id === call.call_id).map((d) => d.type)).toStrictEqual([
            "function_call_start",
            "function_call_arguments_delta",
            "function_call_done"
          ])
          const argumentDeltas = deltas.flatMap((d) =>
            d.type === "function_call_arguments_delta" && d.call_id === call.call_id ? [d.delta] : []
          )
          expect(argumentDeltas.join("")).toBe(call.arguments)
        }
        expect(Turn.text(result)).toBe("Checking both.")
      })
    ))

  it.effect("sends the results back as functionResponse parts matched to their calls", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(parallelCalls), textReply("Sunny in both."))
        const first = completed(yield* turn(hello, { tools: [weatherTool] }))
        const [zurich, tokyo] = Turn.functionCalls(first)
        const history: ReadonlyArray<Item.Item> = [
          ...hello,
          ...first.items,
          output(zurich!.call_id, JSON.stringify({ tempC: 21 })),
          output(tokyo!.call_id, JSON.stringify("sunny")),
          Item.userMessage("Thanks")
        ]
        const second = completed(yield* turn(history, { tools: [weatherTool] }))
        expect(Turn.text(second)).toBe("Sunny in both.")

        const [, request] = yield* server.requests
        expect(request?.body).toStrictEqual({
          contents: [
            { role: "user", parts: [{ text: "Say hello" }] },
            {
              role: "model",
              parts: [
                { text: "Checking both." },
                { functionCall: { name: "get_weather", args: { city: "Zürich", unit: "°C" } } },
                { functionCall: { name: "get_weather", args: { city: "東京 🌸" } } }
              ]
            },
            {
              role: "user",
              parts: [
                { functionResponse: { name: "get_weather", response: { tempC: 21 } } },
                { functionResponse: { name: "get_weather", response: { output: "sunny" } } },
                { text: "Thanks" }
              ]
            }
          ],
          tools: [{
            functionDeclarations: [{
              name: "get_weather",
              description: "The weather in a city",
              parametersJsonSchema: weatherTool.parameters
            }]
          }]
        })
      })
    ))

  it.effect("keeps the call ids Gemini sends and echoes them on calls and responses", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(frames(chunk([{ functionCall: { id: "fc-1", name: "get_weather", args: { city: "Oslo" } } }], {
            finishReason: "STOP"
          }))),
          textReply("Cold.")
        )
        const first = completed(yield* turn(hello))
        expect(Turn.functionCalls(first).map((call) => call.call_id)).toStrictEqual(["fc-1"])
        yield* turn([...hello, ...first.items, output("fc-1", "{\"tempC\":-3}")])
        const [, request] = yield* server.requests
        const body = request?.body as { contents: ReadonlyArray<unknown> }
        expect(body.contents.slice(1)).toStrictEqual([
          { role: "model", parts: [{ functionCall: { id: "fc-1", name: "get_weather", args: { city: "Oslo" } } }] },
          { role: "user", parts: [{ functionResponse: { id: "fc-1", name: "get_weather", response: { tempC: -3 } } }] }
        ])
      })
    ))

  it.effect("streams thoughts as reasoning and sends thought signatures back on their parts", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(frames(
            chunk([{ text: "The user wants ", thought: true }]),
            chunk([{ text: "the weather.", thought: true }]),
            chunk([{ functionCall: { name: "get_weather", args: { city: "Rome" } }, thoughtSignature: "c2lnLWNhbGw=" }], {
              finishReason: "STOP",
              usageMetadata: usage
            })
          )),
          ProviderServer.sse(frames(
            chunk([{ text: "It is warm." }]),
            chunk([{ text: "", thoughtSignature: "c2lnLXRleHQ=" }], { finishReason: "STOP" })
          )),
          textReply("Bye.")
        )
        const options: LanguageModel.TurnOptions = { tools: [weatherTool], params: { reasoningEffort: "low" } }
        const deltas = yield* turn(hello, options)
        expect(textOf(deltas, "reasoning_delta")).toBe("The user wants the weather.")
        expect(textOf(deltas, "text_delta")).toBe("")
        const first = completed(deltas)
        expect(first.usage.reasoning).toBe(5)
        expect(first.items.map((item) => item.type)).toStrictEqual(["reasoning", "reasoning", "function_call"])

        // The history goes through JSON, as a checkpoint would, before it is sent back.
        const roundTrip = (items: ReadonlyArray<Item.Item>) =>
          Schema.decodeUnknownSync(Item.History)(JSON.parse(JSON.stringify(Schema.encodeSync(Item.History)(items))))
        const [call] = Turn.functionCalls(first)
        const history = roundTrip([...hello, ...first.items, output(call!.call_id, "{\"tempC\":28}")])
        const second = completed(yield* turn(history, options))
        expect(Turn.text(second)).toBe("It is warm.")
        yield* turn(roundTrip([...history, ...second.items, Item.userMessage("Thanks")]), options)

        const [firstRequest, secondRequest, thirdRequest] = yield* server.requests
        expect((firstRequest?.body as { generationConfig: unknown }).generationConfig).toStrictEqual({
          thinkingConfig: { includeThoughts: true, thinkingLevel: "low" }
        })
        const modelTurn = {
          role: "model",
          parts: [
            { text: "The user wants the weather.", thought: true },
            { functionCall: { name: "get_weather", args: { city: "Rome" } }, thoughtSignature: "c2lnLWNhbGw=" }
          ]
        }
        expect((secondRequest?.body as { contents: ReadonlyArray<unknown> }).contents.slice(1, 2)).toStrictEqual([modelTurn])
        expect((thirdRequest?.body as { contents: ReadonlyArray<unknown> }).contents.slice(1)).toStrictEqual([
          modelTurn,
          { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { tempC: 28 } } }] },
          { role: "model", parts: [{ text: "It is warm.", thoughtSignature: "c2lnLXRleHQ=" }] },
          { role: "user", parts: [{ text: "Thanks" }] }
        ])
      })
    ))

  it.effect("a SAFETY finish is Gemini's refusal: content_filter, the partial message incomplete", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames(
          chunk([{ text: "Here is how to" }]),
          { candidates: [{ finishReason: "SAFETY", index: 0 }], usageMetadata: usage, responseId: "resp-abc" }
        )))
        const result = completed(yield* turn(hello))
        expect(result.stopReason).toBe("content_filter")
        expect(result.providerStopReason).toBe("SAFETY")
        expect(result.items).toMatchObject([{ type: "message", status: "incomplete" }])
        expect(Turn.text(result)).toBe("Here is how to")
      })
    ))

  it.effect("a blocked prompt ends the turn with content_filter and keeps its usage", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames({
          promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
          usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
          modelVersion: "gemini-2.5-flash-001"
        })))
        const result = completed(yield* turn(hello))
        expect(result.stopReason).toBe("content_filter")
        expect(result.providerStopReason).toBe("blockReason:PROHIBITED_CONTENT")
        expect(result.items).toStrictEqual([])
        expect(result.usage).toStrictEqual({ input: 9, output: 0, total: 9 })
      })
    ))

  it.effect("asks for structured output with responseMimeType and responseJsonSchema", () =>
    run((server) =>
      Effect.gen(function*() {
        const schema = { type: "object", properties: { answer: { type: "number" } }, required: ["answer"] }
        yield* server.reply(ProviderServer.sse(frames(
          chunk([{ text: "{\"answer\":" }]),
          chunk([{ text: " 42}" }], { finishReason: "STOP" })
        )))
        const result = completed(yield* turn(hello, { output: { name: "Answer", schema } }))
        expect(JSON.parse(Turn.text(result))).toStrictEqual({ answer: 42 })
        const [request] = yield* server.requests
        expect((request?.body as { generationConfig: unknown }).generationConfig).toStrictEqual({
          responseMimeType: "application/json",
          responseJsonSchema: schema
        })
      })
    ))

  it.effect("MAX_TOKENS ends the turn with max_tokens and an incomplete message", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames(chunk([{ text: "Once upon a" }], { finishReason: "MAX_TOKENS" }))))
        const result = completed(yield* turn(hello, { params: { maxOutputTokens: 3 } }))
        expect(result.stopReason).toBe("max_tokens")
        expect(result.providerStopReason).toBe("MAX_TOKENS")
        expect(result.items).toMatchObject([{ type: "message", status: "incomplete" }])
      })
    ))

  it.effect("maps every other finish reason, keeping the raw one", () =>
    run((server) =>
      Effect.gen(function*() {
        const cases = [
          ["MALFORMED_FUNCTION_CALL", "malformed_tool_call"],
          ["UNEXPECTED_TOOL_CALL", "malformed_tool_call"],
          ["RECITATION", "content_filter"],
          ["BLOCKLIST", "content_filter"],
          ["PROHIBITED_CONTENT", "content_filter"],
          ["SPII", "content_filter"],
          ["LANGUAGE", "other"],
          ["OTHER", "other"],
          ["SOMETHING_NEW", "other"]
        ] as const
        yield* server.reply(
          ...cases.map(([reason]) => ProviderServer.sse(frames({ candidates: [{ finishReason: reason, index: 0 }] })))
        )
        for (const [reason, stopReason] of cases) {
          const result = completed(yield* turn(hello))
          expect([result.providerStopReason, result.stopReason]).toStrictEqual([reason, stopReason])
        }
      })
    ))

  it.effect("an error event after deltas fails the turn without a retry", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(frames(
            chunk([{ text: "Partial" }]),
            { error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } }
          )),
          textReply("never sent")
        )
        const deltas: Array<TurnDelta.TurnDelta> = []
        const lm = yield* LanguageModel.LanguageModel
        const error = yield* Effect.flip(Stream.runForEach(lm.streamTurn(hello, {}), (d) => Effect.sync(() => deltas.push(d))))
        expect(deltas).toStrictEqual([{ type: "text_delta", delta: "Partial" }])
        expect(error).toBeInstanceOf(AiError.Unavailable)
        expect(error.message).toBe("The model is overloaded.")
        expect(yield* server.requests).toHaveLength(1)
      })
    ))

  it.effect("an error event before any delta is retried", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(frames({ error: { code: 500, message: "Internal error", status: "INTERNAL" } })),
          textReply("Recovered")
        )
        const result = completed(yield* turn(hello))
        expect(Turn.text(result)).toBe("Recovered")
        expect(yield* server.requests).toHaveLength(2)
      })
    ))

  it.effect("an error event with a client status is final", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames({
          error: { code: 400, message: "Request contains an invalid argument.", status: "INVALID_ARGUMENT" }
        })))
        const error = yield* failure(hello)
        expect(error).toStrictEqual(
          new AiError.InvalidRequest({ provider: "gemini", status: 400, message: "Request contains an invalid argument." })
        )
        expect(yield* server.requests).toHaveLength(1)
      })
    ))

  it.effect("cuts the key out of an error event that quotes it", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames({
          error: { code: 400, message: `API key not valid: ${canary}`, status: "INVALID_ARGUMENT" }
        })))
        const error = yield* failure(hello)
        expect(error.message).toBe("API key not valid: <redacted>")
      })
    ))

  const googleError = (code: number, message: string, status: string) => ({ error: { code, message, status } })

  it.effect("401 and 403 fail with AuthFailed, without retrying", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.status(401, googleError(401, "API key not valid. Please pass a valid API key.", "UNAUTHENTICATED")),
          ProviderServer.status(403, googleError(403, "Permission denied.", "PERMISSION_DENIED"))
        )
        const unauthorized = yield* failure(hello)
        expect(unauthorized).toStrictEqual(
          new AiError.AuthFailed({ provider: "gemini", status: 401, message: "API key not valid. Please pass a valid API key." })
        )
        const forbidden = yield* failure(hello)
        expect(forbidden).toStrictEqual(new AiError.AuthFailed({ provider: "gemini", status: 403, message: "Permission denied." }))
        expect(yield* server.requests).toHaveLength(2)
      })
    ))

  it.effect("429 waits for Retry-After (seconds) before retrying, then succeeds", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.status(429, googleError(429, "Resource has been exhausted.", "RESOURCE_EXHAUSTED"), {
            "retry-after": "30"
          }),
          textReply("Finally")
        )
        const fiber = yield* Effect.forkChild(turn(hello))
        yield* server.awaitRequests(1)
        for (let i = 0; i < 10; i++) yield* realPause
        yield* TestClock.adjust("29 seconds")
        for (let i = 0; i < 10; i++) yield* realPause
        expect(yield* server.requests).toHaveLength(1)
        const result = completed(yield* driveClock(fiber))
        expect(Turn.text(result)).toBe("Finally")
        expect(yield* server.requests).toHaveLength(2)
      }), { retryPolicy: undefined }))

  it.effect("429 reads Retry-After given as an HTTP date", () =>
    run((server) =>
      Effect.gen(function*() {
        // The test clock starts at the epoch, so this date is 90 seconds from now.
        yield* server.reply(ProviderServer.status(429, googleError(429, "Quota exceeded.", "RESOURCE_EXHAUSTED"), {
          "retry-after": new Date(90_000).toUTCString()
        }))
        const error = yield* failure(hello)
        expect(error._tag).toBe("RateLimited")
        expect(error._tag === "RateLimited" && error.retryAfter !== undefined && Duration.toMillis(error.retryAfter)).toBe(90_000)
      }), { retryPolicy: Schedule.recurs(0) }))

  it.effect("500 is retried with the default policy, then succeeds", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.status(500, googleError(500, "Internal error.", "INTERNAL")), textReply("Up again"))
        const result = completed(yield* driveClock(yield* Effect.forkChild(turn(hello))))
        expect(Turn.text(result)).toBe("Up again")
        expect(yield* server.requests).toHaveLength(2)
      }), { retryPolicy: undefined }))

  it.effect("a 500 on every attempt fails with Unavailable once the policy gives up", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(...[1, 2, 3].map(() => ProviderServer.status(503, googleError(503, "Overloaded.", "UNAVAILABLE"))))
        const error = yield* failure(hello)
        expect(error).toStrictEqual(new AiError.Unavailable({ provider: "gemini", status: 503, message: "Overloaded." }))
        expect(yield* server.requests).toHaveLength(3)
      })
    ))

  it.effect("a context-length 400 fails with ContextLengthExceeded; another 400 with InvalidRequest", () =>
    run((server) =>
      Effect.gen(function*() {
        const tooLong = "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
        yield* server.reply(
          ProviderServer.status(400, googleError(400, tooLong, "INVALID_ARGUMENT")),
          ProviderServer.status(400, googleError(400, "Invalid JSON payload received.", "INVALID_ARGUMENT"))
        )
        expect(yield* failure(hello)).toStrictEqual(new AiError.ContextLengthExceeded({ provider: "gemini", message: tooLong }))
        expect(yield* failure(hello)).toStrictEqual(
          new AiError.InvalidRequest({ provider: "gemini", status: 400, message: "Invalid JSON payload received." })
        )
      })
    ))

  it.effect("a stream that ends before a finishReason fails with IncompleteTurn", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames(chunk([{ text: "Half a" }]))))
        const error = yield* failure(hello)
        expect(error._tag).toBe("IncompleteTurn")
      })
    ))

  it.effect("a connection cut mid-stream after deltas fails with Unavailable, not retried", () =>
    run((server) =>
      Effect.gen(function*() {
        const body = frames(chunk([{ text: "Half" }]), chunk([{ text: " more" }], { finishReason: "STOP" }))
        yield* server.reply(ProviderServer.sse(body, { disconnectAfter: body[0]!.length + 10 }))
        const error = yield* failure(hello)
        expect(error._tag).toBe("Unavailable")
        expect(yield* server.requests).toHaveLength(1)
      })
    ))

  it.effect("a malformed JSON line fails with MalformedEvent naming the chunk", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([
          ProviderServer.sseEvent(chunk([{ text: "fine" }])),
          "data: {\"candidates\": [{\"content\": \n\n"
        ]))
        const error = yield* failure(hello)
        expect(error._tag).toBe("MalformedEvent")
        expect(error._tag === "MalformedEvent" && [error.provider, error.event]).toStrictEqual([
          "gemini",
          "GenerateContentResponse #1"
        ])
      })
    ))

  it.effect("a chunk of the wrong shape fails with MalformedEvent", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(frames({ candidates: [{ content: { parts: [{ text: 42 }] } }] })))
        const error = yield* failure(hello)
        expect(error._tag === "MalformedEvent" && error.event).toBe("GenerateContentResponse #0")
      })
    ))

  it.effect("a call whose arguments are not a JSON object fails before anything is sent", () =>
    run((server) =>
      Effect.gen(function*() {
        const call: Item.FunctionCall = {
          type: "function_call",
          id: "fc",
          status: "completed",
          call_id: "c1",
          name: "get_weather",
          arguments: "[1,2]"
        }
        const error = yield* failure([...hello, call])
        expect(error._tag).toBe("InvalidRequest")
        expect(yield* server.requests).toHaveLength(0)
      })
    ))

  it.effect("interrupting the consumer aborts the HTTP request", () =>
    run((server) =>
      Effect.gen(function*() {
        const body = frames(chunk([{ text: "First" }]), chunk([{ text: "Second" }], { finishReason: "STOP" }))
        yield* server.reply(ProviderServer.sse(body, { stallAfter: body[0]!.length }))
        const lm = yield* LanguageModel.LanguageModel
        const first = yield* lm.streamTurn(hello, {}).pipe(Stream.take(1), Stream.runCollect)
        expect(first).toStrictEqual([{ type: "text_delta", delta: "First" }])
        yield* server.awaitClientAbort
      })
    ))

  it.effect("the idle timeout fails a stalled stream with Timeout", () =>
    run((server) =>
      Effect.gen(function*() {
        const body = frames(chunk([{ text: "First" }]), chunk([{ text: "Second" }], { finishReason: "STOP" }))
        yield* server.reply(ProviderServer.sse(body, { stallAfter: body[0]!.length }))
        const lm = yield* LanguageModel.LanguageModel
        const firstDelta = yield* Deferred.make<void>()
        const fiber = yield* Effect.forkChild(Effect.flip(Stream.runDrain(
          lm.streamTurn(hello, {}).pipe(Stream.tap(() => Deferred.succeed(firstDelta, undefined)))
        )))
        yield* Deferred.await(firstDelta)
        const error = yield* driveClock(fiber)
        expect(error._tag).toBe("Timeout")
        yield* server.awaitClientAbort
      }), { idleTimeout: "10 seconds" }))
})

describe("Gemini.layerConfig", () => {
  it.effect("reads the key from GEMINI_API_KEY and fails with a ConfigError without it", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(textReply("configured"))
      const configured = Gemini.layerConfig({ baseUrl: `${server.url}/v1beta`, model }).pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { GEMINI_API_KEY: canary } })))
      )
      const result = completed(yield* turn(hello).pipe(Effect.provide(configured)))
      expect(Turn.text(result)).toBe("configured")
      const [request] = yield* server.requests
      expect(request?.headers["x-goog-api-key"]).toBe(canary)

      const missing = Gemini.layerConfig({ baseUrl: `${server.url}/v1beta` }).pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
      )
      const error = yield* Effect.flip(turn(hello).pipe(Effect.provide(missing)))
      expect(error._tag).toBe("ConfigError")
      expect(yield* server.requests).toHaveLength(1)
    }).pipe(Effect.provide(ProviderServer.layer)))
})

describe("an agent run over Gemini", () => {
  const cities: Array<string> = []
  const getWeather = Tool.make({
    name: "get_weather",
    description: "The weather in a city",
    input: Schema.Struct({ city: Schema.String }),
    output: Schema.Struct({ tempC: Schema.Number }),
    execute: ({ city }) =>
      Effect.sync(() => {
        cities.push(city)
        return { tempC: city.length }
      })
  })
  const toolkit = Toolkit.make(getWeather)

  interface State {
    readonly history: ReadonlyArray<Item.Item>
  }

  const agent = (lm: LanguageModel.LanguageModel["Service"]) =>
    Loop.loop<State, TurnDelta.TurnDelta, AiError.AiError, never>(
      { history: [Item.userMessage("Weather in Zürich and Tokyo, then Oslo?")] },
      (state) =>
        lm.streamTurn(state.history, { tools: Toolkit.definitions(toolkit) }).pipe(
          Loop.streamUntilComplete((turn) => {
            const calls = Turn.functionCalls(turn)
            if (calls.length === 0) return Loop.stop
            return Effect.map(Toolkit.executeAllSafe(toolkit, calls), (results) =>
              Loop.nextAfter(Stream.empty, {
                history: [...Turn.cursor(state, turn).history, ...Toolkit.outputs(results)]
              }))
          })
        )
    )

  it.effect("runs tools across three turns until the model answers", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(parallelCallFrames(), { chunkSize: 3 }),
          ProviderServer.sse(frames(chunk([{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }], {
            finishReason: "STOP"
          }))),
          ProviderServer.sse(frames(
            chunk([{ text: "Zürich 6°C, " }]),
            chunk([{ text: "東京 2°C, Oslo 4°C." }], { finishReason: "STOP", usageMetadata: usage })
          ))
        )
        const lm = yield* LanguageModel.LanguageModel
        const deltas = yield* Stream.runCollect(agent(lm))

        expect(cities).toStrictEqual(["Zürich", "東京", "Oslo"])
        const turns = deltas.flatMap((delta) => delta.type === "turn_complete" ? [delta.turn] : [])
        expect(turns.map((turn) => turn.stopReason)).toStrictEqual(["tool_calls", "tool_calls", "stop"])
        expect(textOf(deltas, "text_delta")).toBe("Zürich 6°C, 東京 2°C, Oslo 4°C.")

        const requests = yield* server.requests
        expect(requests).toHaveLength(3)
        const last = requests[2]?.body as { contents: ReadonlyArray<{ role: string; parts: ReadonlyArray<unknown> }> }
        expect(last.contents.map((content) => content.role)).toStrictEqual(["user", "model", "user", "model", "user"])
        expect(last.contents[2]?.parts).toStrictEqual([
          { functionResponse: { name: "get_weather", response: { tempC: 6 } } },
          { functionResponse: { name: "get_weather", response: { tempC: 2 } } }
        ])
        expect(last.contents[4]?.parts).toStrictEqual([
          { functionResponse: { name: "get_weather", response: { tempC: 4 } } }
        ])
      })
    ))
})

const parallelCallFrames = () =>
  frames(
    chunk([{ functionCall: { name: "get_weather", args: { city: "Zürich" } } }]),
    chunk([{ functionCall: { name: "get_weather", args: { city: "東京" } } }], { finishReason: "STOP" })
  )

const weatherTool: LanguageModel.ToolDefinition = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

const output = (callId: string, text: string): Item.FunctionCallOutput => ({
  type: "function_call_output",
  id: `out-${callId}`,
  status: "completed",
  call_id: callId,
  output: text
})
