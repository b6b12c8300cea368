import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as StrictSchema from "../src/provider/StrictSchema.ts"

const parameters = (schema: Schema.Top) => Schema.toJsonSchemaDocument(schema).schema

describe("StrictSchema.isStrictCompatible", () => {
  it("rejects a oneOf union, which strict mode does not permit", () => {
    const schema = {
      type: "object",
      properties: { kind: { oneOf: [{ type: "string" }, { type: "boolean" }] } },
      required: ["kind"],
      additionalProperties: false
    }
    expect(StrictSchema.isStrictCompatible(schema)).toBe(false)
    const generated = parameters(Schema.Union([Schema.String, Schema.Boolean], { mode: "oneOf" }))
    expect(StrictSchema.isStrictCompatible({ ...schema, properties: { kind: generated } })).toBe(false)
    expect(StrictSchema.isStrictCompatible({ ...schema, properties: { kind: { anyOf: [{ type: "string" }] } } }))
      .toBe(true)
  })

  it("reads property names, enum values and defaults as data, not as keywords", () => {
    expect(StrictSchema.isStrictCompatible({
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
    expect(StrictSchema.isStrictCompatible(wrap(closed))).toBe(true)
    expect(StrictSchema.isStrictCompatible(wrap(open))).toBe(false)
    expect(StrictSchema.isStrictCompatible(wrap({ type: "array", items: open }))).toBe(false)
    expect(StrictSchema.isStrictCompatible(wrap({ anyOf: [{ type: "null" }, open] }))).toBe(false)
    expect(StrictSchema.isStrictCompatible(wrap({ ...closed, required: [] }))).toBe(false)
    expect(StrictSchema.isStrictCompatible({ ...wrap({ $ref: "#/$defs/Q" }), $defs: { Q: open } })).toBe(false)
    expect(StrictSchema.isStrictCompatible({ ...wrap({ $ref: "#/$defs/Q" }), $defs: { Q: closed } })).toBe(true)
  })
})

describe("StrictSchema.make", () => {
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
    const strict = StrictSchema.make({ $schema: "https://json-schema.org/draft/2020-12/schema", ...weather })
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
    expect(StrictSchema.isStrictCompatible(weather)).toBe(false)
    expect(StrictSchema.isStrictCompatible(strict.schema)).toBe(true)
  })

  it("takes the model's nulls for optional keys out again, and nothing else", () => {
    const normalize = StrictSchema.make(weather).normalize
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
    expect(StrictSchema.make(closed)).toStrictEqual({ schema: closed, strict: true, normalize: undefined })
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
    const strict = StrictSchema.make(tree)
    expect(strict.strict).toBe(true)
    expect(JSON.parse(strict.normalize!("{\"root\":{\"label\":null,\"children\":[{\"label\":null,\"children\":[]}]}}")))
      .toStrictEqual({ root: { children: [{ children: [] }] } })
    const open = { type: "object", properties: { q: { type: "string" } } }
    expect(StrictSchema.make(open)).toStrictEqual({ schema: open, strict: false, normalize: undefined })
  })
})
