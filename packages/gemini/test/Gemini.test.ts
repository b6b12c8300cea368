import { AiError, Item, LanguageModel, Loop, Tool, Toolkit, Turn, TurnStream } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer, SpanRecorder } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Redacted, Schedule, Schema, Stream } from "effect"
import { HttpClient } from "effect/http"
import { Gemini } from "../src/index.ts"
import { chunk, frames } from "./fixtures.ts"

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
  if (last?.type !== "turn_complete") {
    throw new Error(`the stream did not end with turn_complete: ${JSON.stringify(last)}`)
  }
  expect(deltas.filter((delta) => delta.type === "turn_complete")).toHaveLength(1)
  return last.turn
}

const textOf = (deltas: ReadonlyArray<TurnDelta.TurnDelta>, type: "text_delta" | "reasoning_delta") =>
  deltas.flatMap((delta) => delta.type === type ? [delta.delta] : []).join("")

const usage = {
  promptTokenCount: 20,
  candidatesTokenCount: 7,
  cachedContentTokenCount: 12,
  thoughtsTokenCount: 5,
  totalTokenCount: 32
}

const textReply = (text: string) =>
  ProviderServer.sse(frames(chunk([{ text }], { finishReason: "STOP", usageMetadata: usage })))

const hello = [Item.userMessage("Say hello")]

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
          ProviderServer.sse(
            frames(chunk([{ functionCall: { id: "fc-1", name: "get_weather", args: { city: "Oslo" } } }], {
              finishReason: "STOP"
            }))
          ),
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
            chunk(
              [{ functionCall: { name: "get_weather", args: { city: "Rome" } }, thoughtSignature: "c2lnLWNhbGw=" }],
              {
                finishReason: "STOP",
                usageMetadata: usage
              }
            )
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
        expect((secondRequest?.body as { contents: ReadonlyArray<unknown> }).contents.slice(1, 2)).toStrictEqual([
          modelTurn
        ])
        expect((thirdRequest?.body as { contents: ReadonlyArray<unknown> }).contents.slice(1)).toStrictEqual([
          modelTurn,
          { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { tempC: 28 } } }] },
          { role: "model", parts: [{ text: "It is warm.", thoughtSignature: "c2lnLXRleHQ=" }] },
          { role: "user", parts: [{ text: "Thanks" }] }
        ])
      })
    ))

  it.effect("an empty text part, as Gemini 3 ends a call's chunks with, adds no message to the turn or the history", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(frames(
            chunk([{ functionCall: { name: "get_weather", args: { city: "Rome" } }, thoughtSignature: "c2ln" }]),
            chunk([{ text: "" }], { finishReason: "STOP", usageMetadata: usage })
          )),
          ProviderServer.sse(frames(
            chunk([{ text: "It is warm." }]),
            chunk([{ text: "" }], { finishReason: "STOP", usageMetadata: usage })
          )),
          textReply("Bye.")
        )
        const first = completed(yield* turn(hello, { tools: [weatherTool] }))
        expect(first.items.map((item) => item.type)).toStrictEqual(["reasoning", "function_call"])
        expect(first.stopReason).toBe("tool_calls")
        const [call] = Turn.functionCalls(first)
        const history = [...hello, ...first.items, output(call!.call_id, "{\"tempC\":28}")]
        const second = completed(yield* turn(history, { tools: [weatherTool] }))
        expect(second.items).toMatchObject([{
          type: "message",
          content: [{ type: "output_text", text: "It is warm." }]
        }])
        yield* turn([...history, ...second.items, Item.userMessage("Thanks")], { tools: [weatherTool] })
        const requests = yield* server.requests
        expect((requests[2]?.body as { contents: ReadonlyArray<unknown> }).contents.slice(1)).toStrictEqual([
          {
            role: "model",
            parts: [{ functionCall: { name: "get_weather", args: { city: "Rome" } }, thoughtSignature: "c2ln" }]
          },
          { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { tempC: 28 } } }] },
          { role: "model", parts: [{ text: "It is warm." }] },
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
        yield* server.reply(
          ProviderServer.sse(frames(chunk([{ text: "Once upon a" }], { finishReason: "MAX_TOKENS" })))
        )
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
        const error = yield* Effect.flip(
          Stream.runForEach(lm.streamTurn(hello, {}), (d) => Effect.sync(() => deltas.push(d)))
        )
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
          new AiError.InvalidRequest({
            provider: "gemini",
            status: 400,
            message: "Request contains an invalid argument."
          })
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

  it.effect("a context-length 400 fails with ContextLengthExceeded; another 400 with InvalidRequest", () =>
    run((server) =>
      Effect.gen(function*() {
        const tooLong = "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
        yield* server.reply(
          ProviderServer.status(400, googleError(400, tooLong, "INVALID_ARGUMENT")),
          ProviderServer.status(400, googleError(400, "Invalid JSON payload received.", "INVALID_ARGUMENT"))
        )
        expect(yield* failure(hello)).toStrictEqual(
          new AiError.ContextLengthExceeded({ provider: "gemini", message: tooLong })
        )
        expect(yield* failure(hello)).toStrictEqual(
          new AiError.InvalidRequest({ provider: "gemini", status: 400, message: "Invalid JSON payload received." })
        )
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
        expect(yield* failure(hello)).toStrictEqual(
          new AiError.MalformedEvent({
            provider: "gemini",
            event: "GenerateContentResponse #0",
            message: "candidates[0].content.parts[0].text: Expected string"
          })
        )
      })
    ))

  it.effect("a call whose args are not an object is a bad call for its tool to reject, and the history stays sendable", () =>
    run((server) =>
      Effect.gen(function*() {
        const listTool = Tool.make({
          name: "get_weather",
          description: "The weather in a city",
          input: Schema.Struct({ city: Schema.String }),
          output: Schema.String,
          execute: ({ city }) => Effect.succeed(city)
        })
        yield* server.reply(
          ProviderServer.sse(
            frames(
              chunk([{ functionCall: { id: "c1", name: "get_weather", args: ["Oslo"] } }], { finishReason: "STOP" })
            )
          ),
          textReply("Sorry, here is Oslo.")
        )
        const first = completed(yield* turn(hello))
        const [call] = Turn.functionCalls(first)
        expect(call?.arguments).toBe("[\"Oslo\"]")
        const results = yield* Toolkit.executeAllSafe(Toolkit.make(listTool), Turn.functionCalls(first))
        expect(results[0]?.output.output).toMatch(/do not match its parameters/)
        const second = completed(yield* turn([...hello, ...first.items, ...Toolkit.outputs(results)]))
        expect(Turn.text(second)).toBe("Sorry, here is Oslo.")
        const [, request] = yield* server.requests
        expect(request?.body).toMatchObject({
          contents: [
            { role: "user" },
            {
              role: "model",
              parts: [{ functionCall: { id: "c1", name: "get_weather", args: { arguments: ["Oslo"] } } }]
            },
            { role: "user", parts: [{ functionResponse: { id: "c1", name: "get_weather" } }] }
          ]
        })
      })
    ))

  const streamedCall = (name: string, pieces: ReadonlyArray<ReadonlyArray<unknown>>) => [
    { functionCall: { name, willContinue: true }, thoughtSignature: `sig-${name}` },
    ...pieces.map((partialArgs) => ({ functionCall: { partialArgs, willContinue: true } })),
    { functionCall: {} }
  ]

  it.effect("assembles arguments Vertex AI streams in pieces into one call, as argument deltas", () =>
    run((server) =>
      Effect.gen(function*() {
        const parts = [
          ...streamedCall("plan_trip", [
            [{ jsonPath: "$.city", stringValue: "Zür", willContinue: true }],
            [{ jsonPath: "$.city", stringValue: "ich \"Süd\"" }, { jsonPath: "$.days", numberValue: 3 }],
            [{ jsonPath: "$.stops[0].name", stringValue: "Lake" }, { jsonPath: "$.stops[0].open", boolValue: true }],
            [{ jsonPath: "$.stops[1].name", stringValue: "東京" }, {
              jsonPath: "$['odd key']",
              nullValue: "NULL_VALUE"
            }]
          ]),
          ...streamedCall("noop", [])
        ]
        yield* server.reply(ProviderServer.sse(
          frames(
            ...parts.map((part, i) =>
              chunk([part], i === parts.length - 1 ? { finishReason: "STOP", usageMetadata: usage } : {})
            )
          ),
          { chunkSize: 5 }
        ))
        const deltas = yield* turn(hello, {
          tools: [{ name: "plan_trip", description: "Plans a trip", parameters: { type: "object" } }]
        })
        const [request] = yield* server.requests
        expect(request?.body).toMatchObject({
          toolConfig: { functionCallingConfig: { streamFunctionCallArguments: true } }
        })
        const calls = deltas.filter((d) => d.type === "function_call_start")
        expect(calls.map((d) => d.name)).toStrictEqual(["plan_trip", "noop"])
        const [plan, noop] = calls.map((d) => d.call_id)
        const pieces = deltas.flatMap((d) =>
          d.type === "function_call_arguments_delta" && d.call_id === plan ? [d.delta] : []
        )
        expect(pieces.length).toBeGreaterThan(3)
        const expected = {
          city: "Zürich \"Süd\"",
          days: 3,
          stops: [{ name: "Lake", open: true }, { name: "東京" }],
          "odd key": null
        }
        expect(JSON.parse(pieces.join(""))).toStrictEqual(expected)
        const result = completed(deltas)
        expect(result.stopReason).toBe("tool_calls")
        expect(Turn.functionCalls(result).map((call) => [call.call_id, call.name, JSON.parse(call.arguments)]))
          .toStrictEqual([
            [plan, "plan_trip", expected],
            [noop, "noop", {}]
          ])
        expect(deltas.filter((d) => d.type === "function_call_done").map((d) => d.arguments)).toStrictEqual([
          pieces.join(""),
          "{}"
        ])
        // Each call keeps the thought signature of its first part, for the next request.
        expect(result.items.map((item) => item.type)).toStrictEqual([
          "reasoning",
          "function_call",
          "reasoning",
          "function_call"
        ])
      }), { streamFunctionCallArguments: true }))

  it.effect("fails with MalformedEvent when streamed pieces come out of order or continue no call", () =>
    run((server) =>
      Effect.gen(function*() {
        const outOfOrder = streamedCall("f", [[{ jsonPath: "$.list[1]", numberValue: 1 }]])
        yield* server.reply(
          ProviderServer.sse(frames(...outOfOrder.map((part) => chunk([part])))),
          ProviderServer.sse(frames(chunk([{ functionCall: { partialArgs: [{ jsonPath: "$.a", numberValue: 1 }] } }])))
        )
        expect(yield* failure(hello)).toStrictEqual(
          new AiError.MalformedEvent({
            provider: "gemini",
            event: "GenerateContentResponse #1",
            message: "functionCall.partialArgs: element 1 comes after 0 elements"
          })
        )
        expect(yield* failure(hello)).toMatchObject({
          _tag: "MalformedEvent",
          message: expect.stringMatching(/continues no streamed call/)
        })
      }), { retryPolicy: Schedule.recurs(0) }))
})

describe("Gemini.layerConfig", () => {
  it.effect("takes Config values, reads GOOGLE_API_KEY or else GEMINI_API_KEY, and fails with a ConfigError without either", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(textReply("one"), textReply("two"))
      const layer = (env: Record<string, string>) =>
        Gemini.layerConfig({ baseUrl: Config.succeed(`${server.url}/v1beta`), model: Config.String("MODEL") }).pipe(
          Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { MODEL: model, ...env } })))
        )
      expect(Turn.text(completed(yield* turn(hello).pipe(Effect.provide(layer({ GEMINI_API_KEY: canary })))))).toBe(
        "one"
      )
      const both = layer({ GEMINI_API_KEY: "gemini-key", GOOGLE_API_KEY: "google-key" })
      expect(Turn.text(completed(yield* turn(hello).pipe(Effect.provide(both)))))
        .toBe("two")
      const [first, second] = yield* server.requests
      expect(first?.headers["x-goog-api-key"]).toBe(canary)
      expect(first?.url).toBe(path)
      expect(second?.headers["x-goog-api-key"]).toBe("google-key")
      const error = yield* Effect.flip(turn(hello).pipe(Effect.provide(layer({}))))
      expect(error._tag).toBe("ConfigError")
      expect(String(error)).toMatch(/GEMINI_API_KEY/)
      expect(yield* server.requests).toHaveLength(2)
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
          TurnStream.streamUntilComplete((turn) => {
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
