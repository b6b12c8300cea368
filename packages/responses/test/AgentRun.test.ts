import { type Item, LanguageModel, Loop, Tool, Toolkit, Turn, type TurnDelta, TurnStream } from "@agentloop/core"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Responses } from "../src/index.ts"
import { Script, usage } from "./fixtures.ts"

const weatherCalls: Array<string> = []

const weather = Tool.make({
  name: "weather",
  description: "The weather in a city",
  input: Schema.Struct({ city: Schema.String }),
  output: Schema.Struct({ sky: Schema.String, celsius: Schema.Number }),
  execute: ({ city }) =>
    Effect.sync(() => {
      weatherCalls.push(city)
      return { sky: city === "Oslo" ? "rain" : "sun", celsius: city === "Oslo" ? 4 : 21 }
    })
})

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  output: Schema.Number,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

const toolkit = Toolkit.make(weather, add)

interface State {
  readonly history: ReadonlyArray<Item.Item>
}

/** The agent: plain loop code over whatever `LanguageModel` is provided. */
const agent = (question: string) =>
  Effect.gen(function*() {
    const model = yield* LanguageModel.LanguageModel
    const body = (state: State) =>
      model.streamTurn(state.history, { instructions: "Use the tools.", tools: Toolkit.definitions(toolkit) }).pipe(
        TurnStream.streamUntilComplete((turn) =>
          Effect.gen(function*() {
            const calls = Turn.functionCalls(turn)
            if (calls.length === 0) return Loop.stopAfter(Stream.empty)
            const outputs = Toolkit.outputs(yield* Toolkit.executeAllSafe(toolkit, calls))
            return Loop.nextAfter(Stream.fromIterable(outputs), {
              history: [...state.history, ...turn.items, ...outputs]
            })
          })
        )
      )
    const initial: State = {
      history: [{
        type: "message",
        id: "user",
        status: "completed",
        role: "user",
        content: [{ type: "input_text", text: question }]
      }]
    }
    return yield* Stream.runCollect(Loop.loop(initial, body))
  })

const turns = (values: ReadonlyArray<TurnDelta.TurnDelta | Item.FunctionCallOutput>): ReadonlyArray<Turn.Turn> =>
  values.flatMap((value) => value.type === "turn_complete" ? [value.turn] : [])

describe("a full agent run", () => {
  it.live("over the Responses provider: two tool calls in one turn, then the answer", () =>
    Effect.gen(function*() {
      weatherCalls.length = 0
      const server = yield* ProviderServer.ProviderServer
      const first = new Script("resp_1").created()
        .callStart("fc_1", 0, "call_w", "weather")
        .argumentsDelta("fc_1", 0, "{\"city\":")
        .callStart("fc_2", 1, "call_a", "add")
        .argumentsDelta("fc_2", 1, "{\"a\":2,")
        .argumentsDelta("fc_1", 0, "\"Oslo\"}")
        .argumentsDelta("fc_2", 1, "\"b\":40}")
        .callDone("fc_1", 0, "call_w", "weather", "{\"city\":\"Oslo\"}")
        .callDone("fc_2", 1, "call_a", "add", "{\"a\":2,\"b\":40}")
        .completed(usage(50, 20))
      const second = new Script("resp_2").created().message("msg_1", 0, ["Rainy, 4°C. ", "And 42."]).completed(
        usage(90, 8)
      )
      yield* server.reply(ProviderServer.sse(first.frames, { chunkSize: 3 }), ProviderServer.sse(second.frames))
      const values = yield* agent("Weather in Oslo, and 2+40?").pipe(
        Effect.provide(Responses.layer({ apiKey: Redacted.make("sk-test"), baseUrl: server.url }))
      )
      const [turn1, turn2] = turns(values)
      expect(turn1?.stopReason).toBe("tool_calls")
      expect(turn2 && Turn.text(turn2)).toBe("Rainy, 4°C. And 42.")
      expect(weatherCalls).toStrictEqual(["Oslo"])
      const outputs = values.filter((value): value is Item.FunctionCallOutput => value.type === "function_call_output")
      expect(outputs.map((o) => [o.call_id, JSON.parse(o.output)])).toStrictEqual([
        ["call_w", { sky: "rain", celsius: 4 }],
        ["call_a", 42]
      ])
      const requests = yield* server.requests
      expect(requests).toHaveLength(2)
      // The second request carries the whole history: the question, both calls, both outputs.
      expect(requests[1]?.body).toMatchObject({
        input: [
          { type: "message", role: "user" },
          { type: "function_call", call_id: "call_w", name: "weather", arguments: "{\"city\":\"Oslo\"}" },
          { type: "function_call", call_id: "call_a", name: "add", arguments: "{\"a\":2,\"b\":40}" },
          { type: "function_call_output", call_id: "call_w", output: outputs[0]?.output },
          { type: "function_call_output", call_id: "call_a", output: "42" }
        ],
        tools: [
          { type: "function", name: "weather", strict: true },
          { type: "function", name: "add", strict: true }
        ]
      })
    }).pipe(Effect.provide(Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer))))

  it.effect("the same agent code runs on the MockLanguageModel layer", () =>
    Effect.gen(function*() {
      weatherCalls.length = 0
      const values = yield* agent("Weather in Rome?").pipe(
        Effect.provide(MockLanguageModel.layer([
          MockLanguageModel.callsTurn([{ name: "weather", arguments: { city: "Rome" } }]),
          MockLanguageModel.textTurn("Sunny, 21°C.")
        ]))
      )
      expect(turns(values).map(Turn.text)).toStrictEqual(["", "Sunny, 21°C."])
      expect(weatherCalls).toStrictEqual(["Rome"])
    }))
})
