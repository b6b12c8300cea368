/**
 * `McpArguments.schema` on schemas a hostile server could write: what runs on
 * this side must not let a schema block the process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { McpArguments } from "../src/index.ts"

const accepts = (jsonSchema: object, input: unknown): boolean =>
  Schema.is(McpArguments.schema(jsonSchema as never))(input)

describe("McpArguments.schema", () => {
  it("runs no regular expression of the server's: a pattern is the server's to check", () => {
    // `^(a+)+$` backtracks exponentially: 40 a's and a "!" would block the event loop for hours.
    const redos = { type: "object", properties: { s: { type: "string", pattern: "^(a+)+$" } }, required: ["s"] }
    expect(accepts(redos, { s: `${"a".repeat(40)}!` })).toBe(true)
    expect(accepts({ type: "object", properties: { s: { type: "string", pattern: "^x$" } } }, { s: "y" })).toBe(true)
    expect(accepts({ type: "object", propertyNames: { pattern: "^(a+)+$" } }, { [`${"a".repeat(40)}!`]: 1 })).toBe(
      true
    )
    // The other keywords still apply, at every depth.
    expect(accepts(redos, { s: 1 })).toBe(false)
    expect(accepts(redos, {})).toBe(false)
  })

  it("a property named after a keyword is still a property", () => {
    const schema = {
      type: "object",
      properties: { pattern: { type: "string" }, patternProperties: { type: "integer" } },
      required: ["pattern"],
      additionalProperties: false
    }
    expect(accepts(schema, { pattern: "^x$", patternProperties: 1 })).toBe(true)
    expect(accepts(schema, { pattern: 1 })).toBe(false)
    expect(accepts(schema, { pattern: "x", other: 1 })).toBe(false)
  })

  it("a schema with patternProperties is checked as an object only", () => {
    const schema = {
      type: "object",
      patternProperties: { "^(a+)+$": { type: "integer" } },
      additionalProperties: false
    }
    expect(accepts(schema, { [`${"a".repeat(40)}!`]: "x" })).toBe(true)
    expect(accepts(schema, [])).toBe(false)
  })

  it("a pattern reached by a $ref into any part of the document is not run either", () => {
    const hidden = {
      type: "object",
      properties: { s: { $ref: "#/x-stash/slow" }, t: { $ref: "#/const/slow" } },
      "x-stash": { slow: { type: "string", pattern: "^(a+)+$" } }
    }
    expect(accepts(hidden, { s: `${"a".repeat(40)}!` })).toBe(true)
    expect(accepts(hidden, { s: 1 })).toBe(false)
    const inData = {
      type: "object",
      const: { slow: { pattern: "^(a+)+$" } },
      properties: { t: { $ref: "#/const/slow" } }
    }
    expect(accepts(inData, { t: `${"a".repeat(40)}!` })).toBe(true)
  })

  it("a __proto__ key of the server's schema stays a key", () => {
    const schema = JSON.parse(`{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["n"]}`)
    expect(accepts(schema, { n: 1 })).toBe(true)
    expect(accepts(schema, {})).toBe(false)
    expect(({} as Record<string, unknown>)["type"]).toBeUndefined()
  })
})
