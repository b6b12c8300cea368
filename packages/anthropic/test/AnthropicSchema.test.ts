import { Tool } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { AnthropicSchema } from "../src/index.ts"

describe("AnthropicSchema", () => {
  it("closes every object, keeps what the API takes, and writes the constraints it does not take into descriptions", () => {
    expect(AnthropicSchema.structuredOutput({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      description: "A trip",
      properties: {
        when: { type: "string", format: "date" },
        site: { type: "string", format: "iri", pattern: "^h" },
        legs: {
          type: "array",
          minItems: 1,
          maxItems: 9,
          items: { type: "object", properties: { to: { type: "string", minLength: 2 } } }
        },
        mode: { oneOf: [{ const: "car" }, { enum: ["bus", "rail"] }] },
        both: { allOf: [{ type: "object", properties: { a: { type: "number" } }, additionalProperties: true }] },
        many: { type: "array", minItems: 2, items: { type: "integer", multipleOf: 5 } }
      },
      required: ["when"]
    })).toStrictEqual({
      type: "object",
      description: "A trip",
      properties: {
        when: { type: "string", format: "date" },
        site: { type: "string", pattern: "^h", description: "({\"format\":\"iri\"})" },
        legs: {
          type: "array",
          minItems: 1,
          items: {
            type: "object",
            properties: { to: { type: "string", description: "({\"minLength\":2})" } },
            additionalProperties: false
          },
          description: "({\"maxItems\":9})"
        },
        mode: { anyOf: [{ const: "car" }, { enum: ["bus", "rail"] }] },
        both: { allOf: [{ type: "object", properties: { a: { type: "number" } }, additionalProperties: false }] },
        many: {
          type: "array",
          items: { type: "integer", description: "({\"multipleOf\":5})" },
          description: "({\"minItems\":2})"
        }
      },
      required: ["when"],
      additionalProperties: false
    })
  })

  it("has no form for a record, a tuple, definitions or references, and conditionals", () => {
    const Tree: Schema.Codec<{ readonly children: ReadonlyArray<unknown> }> = Schema.Struct({
      children: Schema.Array(Schema.suspend((): Schema.Codec<unknown> => Tree))
    }).annotate({ identifier: "Tree" })
    const refused = [
      Tool.toParameters(Schema.Struct({ scores: Schema.Record(Schema.String, Schema.Number) })),
      Tool.toParameters(Schema.Struct({ pair: Schema.Tuple([Schema.String, Schema.Number]) })),
      Tool.toParameters(Tree),
      { type: "object", properties: { next: { $ref: "#" } } },
      { type: "object", if: { properties: { a: { const: 1 } } }, then: { required: ["b"] } }
    ]
    for (const schema of refused) {
      expect(AnthropicSchema.structuredOutput(schema), JSON.stringify(schema)).toBeUndefined()
    }
  })
})
