import { Tool, Toolkit, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ResponsesStrict } from "../src/index.ts"
import { completeTurn, run, Script, TestLayer, usage } from "./fixtures.ts"

const parameters = (schema: Schema.Top) => Schema.toJsonSchemaDocument(schema).schema

describe("ResponsesStrict.isStrictCompatible", () => {
  it("rejects a oneOf union, which strict mode does not permit", () => {
    const schema = {
      type: "object",
      properties: { kind: { oneOf: [{ type: "string" }, { type: "boolean" }] } },
      required: ["kind"],
      additionalProperties: false
    }
    expect(ResponsesStrict.isStrictCompatible(schema)).toBe(false)
    const generated = parameters(Schema.Union([Schema.String, Schema.Boolean], { mode: "oneOf" }))
    expect(ResponsesStrict.isStrictCompatible({ ...schema, properties: { kind: generated } })).toBe(false)
    expect(ResponsesStrict.isStrictCompatible({ ...schema, properties: { kind: { anyOf: [{ type: "string" }] } } }))
      .toBe(true)
  })

  it("reads property names, enum values and defaults as data, not as keywords", () => {
    expect(ResponsesStrict.isStrictCompatible({
      type: "object",
      properties: {
        not: { type: "boolean" },
        contains: { type: "string", enum: ["if", "then"] },
        properties: { type: "string", default: "patternProperties" }
      },
      required: ["not", "contains", "properties"],
      additionalProperties: false
    })).toBe(true)
  })

  it("requires every nested object, in properties, items, anyOf and $defs, to be closed and fully required", () => {
    const open = { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
    const closed = { ...open, additionalProperties: false }
    const wrap = (inner: unknown) => ({
      type: "object",
      properties: { inner },
      required: ["inner"],
      additionalProperties: false
    })
    expect(ResponsesStrict.isStrictCompatible(wrap(closed))).toBe(true)
    expect(ResponsesStrict.isStrictCompatible(wrap(open))).toBe(false)
    expect(ResponsesStrict.isStrictCompatible(wrap({ type: "array", items: open }))).toBe(false)
    expect(ResponsesStrict.isStrictCompatible(wrap({ anyOf: [{ type: "null" }, open] }))).toBe(false)
    expect(ResponsesStrict.isStrictCompatible(wrap({ ...closed, required: [] }))).toBe(false)
    expect(ResponsesStrict.isStrictCompatible({ ...wrap({ $ref: "#/$defs/Q" }), $defs: { Q: open } })).toBe(false)
    expect(ResponsesStrict.isStrictCompatible({ ...wrap({ $ref: "#/$defs/Q" }), $defs: { Q: closed } })).toBe(true)
  })
})

describe("ResponsesStrict.make", () => {
  const weather = {
    type: "object",
    properties: {
      city: { type: "string" },
      unit: { type: "string", enum: ["c", "f"] },
      note: { anyOf: [{ type: "string" }, { type: "null" }] },
      stops: {
        type: "array",
        items: {
          type: "object",
          properties: { name: { type: "string" }, minutes: { type: "number" } },
          required: ["name"],
          additionalProperties: false
        }
      }
    },
    required: ["city", "stops"],
    additionalProperties: false
  }

  it("makes optional keys required and nullable, as OpenAI documents, keeping keys that take null as they are", () => {
    const strict = ResponsesStrict.make({ $schema: "https://json-schema.org/draft/2020-12/schema", ...weather })
    expect(strict.strict).toBe(true)
    expect(strict.schema).toStrictEqual({
      type: "object",
      properties: {
        city: { type: "string" },
        unit: { anyOf: [{ type: "string", enum: ["c", "f"] }, { type: "null" }] },
        note: { anyOf: [{ type: "string" }, { type: "null" }] },
        stops: {
          type: "array",
          items: {
            type: "object",
            properties: { name: { type: "string" }, minutes: { anyOf: [{ type: "number" }, { type: "null" }] } },
            required: ["name", "minutes"],
            additionalProperties: false
          }
        }
      },
      required: ["city", "unit", "note", "stops"],
      additionalProperties: false
    })
    expect(ResponsesStrict.isStrictCompatible(weather)).toBe(false)
    expect(ResponsesStrict.isStrictCompatible(strict.schema)).toBe(true)
  })

  it("takes the model's nulls for optional keys out again, and nothing else", () => {
    const normalize = ResponsesStrict.make(weather).normalize
    expect(normalize).toBeDefined()
    const text =
      "{\"city\":\"Oslo\",\"unit\":null,\"note\":null,\"stops\":[{\"name\":\"a\",\"minutes\":null},{\"name\":\"b\",\"minutes\":3}]}"
    expect(JSON.parse(normalize!(text))).toStrictEqual({
      city: "Oslo",
      note: null,
      stops: [{ name: "a" }, { name: "b", minutes: 3 }]
    })
    const clean = "{\"city\": \"Oslo\", \"stops\": []}"
    expect(normalize!(clean)).toBe(clean)
    expect(normalize!("not json")).toBe("not json")
    const closed = {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false
    }
    expect(ResponsesStrict.make(closed)).toStrictEqual({ schema: closed, strict: true, normalize: undefined })
  })

  it("follows $refs of recursive definitions, and sends a schema strict mode rejects as it is, non-strict", () => {
    const tree = {
      type: "object",
      properties: { root: { $ref: "#/$defs/Node" } },
      required: ["root"],
      additionalProperties: false,
      $defs: {
        Node: {
          type: "object",
          properties: { label: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/Node" } } },
          required: ["children"],
          additionalProperties: false
        }
      }
    }
    const strict = ResponsesStrict.make(tree)
    expect(strict.strict).toBe(true)
    expect(JSON.parse(strict.normalize!("{\"root\":{\"label\":null,\"children\":[{\"label\":null,\"children\":[]}]}}")))
      .toStrictEqual({ root: { children: [{ children: [] }] } })
    const open = { type: "object", properties: { q: { type: "string" } } }
    expect(ResponsesStrict.make(open)).toStrictEqual({ schema: open, strict: false, normalize: undefined })
  })
})

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
