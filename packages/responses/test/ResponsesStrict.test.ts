import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { ResponsesStrict } from "../src/index.ts"

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
