import { Tool, Toolkit, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { completeTurn, run, Script, TestLayer, usage } from "./fixtures.ts"

describe("strict tools and structured output over HTTP", () => {
  const forecast = Tool.make({
    name: "forecast",
    description: "The forecast for a city",
    input: Schema.Struct({ city: Schema.String, unit: Schema.optionalKey(Schema.Literals(["c", "f"])) }),
    output: Schema.String,
    execute: ({ city, unit }) => Effect.succeed(`${city} ${unit ?? "default"}`)
  })

  it.live("sends a tool with optional keys strict, and reports its call without the nulls the model wrote", () =>
    Effect.gen(function*() {
      const args = "{\"city\":\"Oslo\",\"unit\":null}"
      const script = new Script().created().callStart("fc_1", 0, "call_1", "forecast")
        .argumentsDelta("fc_1", 0, args.slice(0, 9)).argumentsDelta("fc_1", 0, args.slice(9))
        .callDone("fc_1", 0, "call_1", "forecast", args)
        .completed(usage(5, 5))
      const deltas = yield* run([ProviderServer.sse(script.frames)], { tools: [Tool.definition(forecast)] })
      const [request] = yield* (yield* ProviderServer.ProviderServer).requests
      expect(request?.body).toMatchObject({
        tools: [{ name: "forecast", strict: true, parameters: { required: ["city", "unit"] } }]
      })
      expect(deltas.filter((d) => d.type.startsWith("function_call"))).toStrictEqual([
        { type: "function_call_start", call_id: "call_1", name: "forecast" },
        { type: "function_call_arguments_delta", call_id: "call_1", delta: "{\"city\":\"Oslo\"}" },
        { type: "function_call_done", call_id: "call_1", name: "forecast", arguments: "{\"city\":\"Oslo\"}" }
      ])
      const calls = Turn.functionCalls(completeTurn(deltas))
      const [result] = yield* Toolkit.executeAllSafe(Toolkit.make(forecast), calls)
      expect(result?.output.output).toBe("\"Oslo default\"")
    }).pipe(Effect.provide(TestLayer)))

  it.live("asks for structured output with optional keys strictly, and hands back the answer without the nulls", () =>
    Effect.gen(function*() {
      const schema = {
        type: "object",
        properties: { city: { type: "string" }, note: { type: "string" } },
        required: ["city"],
        additionalProperties: false
      }
      const answer = "{\"city\":\"Oslo\",\"note\":null}"
      const script = new Script().created().message("msg_1", 0, [answer.slice(0, 7), answer.slice(7)]).completed(
        usage(5, 5)
      )
      const deltas = yield* run([ProviderServer.sse(script.frames)], { output: { name: "Answer", schema } })
      const [request] = yield* (yield* ProviderServer.ProviderServer).requests
      expect(request?.body).toMatchObject({
        text: { format: { type: "json_schema", name: "Answer", strict: true, schema: { required: ["city", "note"] } } }
      })
      expect(Turn.text(completeTurn(deltas))).toBe("{\"city\":\"Oslo\"}")
    }).pipe(Effect.provide(TestLayer)))
})
