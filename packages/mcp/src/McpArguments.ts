/**
 * The arguments of an MCP tool, checked against the JSON Schema its server
 * wrote before any call: arguments that break it are a mistake the model
 * reads, with every violation and where it is.
 *
 * The check is `@cfworker/json-schema`'s: every keyword of drafts 4, 7,
 * 2019-09 and 2020-12 (the dialect the schema's `$schema` names, 2020-12 when
 * it names none, as MCP says), interpreted rather than compiled, so a schema
 * from a server is never turned into code. Its regular expressions are not
 * run either (`pattern` is left out, and a schema with `patternProperties`
 * checks only that the arguments are an object): a pattern that backtracks
 * exponentially would block the process for hours on a short string, and no
 * time limit can stop a regular expression. The server checks them.
 *
 * @since 0.2.0
 */
import { type OutputUnit, type Schema as JsonSchemaDocument, type SchemaDraft, Validator } from "@cfworker/json-schema"
import * as JsonPointer from "effect/JsonPointer"
import type * as JsonSchema from "effect/JsonSchema"
import * as Schema from "effect/Schema"

/**
 * Tool arguments: a JSON object.
 *
 * @since 0.2.0
 * @category models
 */
export type Arguments = { readonly [key: string]: Schema.Json }

/**
 * The Schema of a tool's arguments: a JSON object that `jsonSchema` accepts.
 * A schema the validator cannot read (a `$ref` to another document) checks
 * only that the arguments are an object, and leaves the rest to the server.
 *
 * @example
 * ```ts
 * import { McpArguments } from "@agentloop/mcp"
 * import { Schema } from "effect"
 *
 * const schema = McpArguments.schema({ type: "object", properties: { a: { type: "number" } }, required: ["a"] })
 * console.log(Schema.is(schema)({ a: 1 }), Schema.is(schema)({ a: "one" })) // true false
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const schema = (jsonSchema: JsonSchema.JsonSchema): Schema.Codec<Arguments> => {
  const validate = validator(jsonSchema)
  return JsonObject.check(Schema.makeFilter((input) => validate === undefined ? undefined : issues(validate(input))))
}

const JsonObject: Schema.Codec<Arguments> = Schema.Record(Schema.String, Schema.Json)

const validator = (jsonSchema: JsonSchema.JsonSchema): ((input: unknown) => ReadonlyArray<OutputUnit>) | undefined => {
  const safe = withoutPatterns(jsonSchema)
  if (safe === undefined) return undefined
  try {
    const compiled = new Validator(safe as JsonSchemaDocument, draft(jsonSchema.$schema), false)
    return (input) => {
      try {
        return compiled.validate(input).errors
      } catch {
        // An unresolvable `$ref` throws on first use: the server checks what this cannot.
        return []
      }
    }
  } catch {
    return undefined
  }
}

// Keywords whose value names schemas: its keys are names, not keywords.
const schemaMaps = new Set(["$defs", "definitions", "dependencies", "dependentSchemas", "properties"])
// Keywords whose value is data, not a schema.
const dataKeywords = new Set(["const", "default", "enum", "examples"])

const regexKeywords = (key: string) => key === "pattern" || key === "patternProperties"

class Refused {}

/**
 * `schema` without `pattern`; `undefined` when it has `patternProperties`
 * (leaving its expressions out would refuse the properties they allow), or
 * when data in it looks like a schema with either (a `$ref` may point into
 * any part of the document). A property named `pattern` stays.
 */
const withoutPatterns = (schema: unknown): unknown => {
  const data = (value: unknown): unknown => {
    if (Array.isArray(value)) value.forEach(data)
    else if (typeof value === "object" && value !== null) {
      for (const [key, member] of Object.entries(value)) {
        if (regexKeywords(key)) throw new Refused()
        data(member)
      }
    }
    return value
  }
  const names = (value: unknown): unknown =>
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([name, member]) => [name, walk(member)]))
      : walk(value)
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk)
    if (typeof value !== "object" || value === null) return value
    if ("patternProperties" in value) throw new Refused()
    // `Object.fromEntries` defines every key as its own: a `__proto__` key stays a key.
    return Object.fromEntries(
      Object.entries(value).flatMap(([key, member]) =>
        key === "pattern"
          ? []
          : [[key, dataKeywords.has(key) ? data(member) : schemaMaps.has(key) ? names(member) : walk(member)]]
      )
    )
  }
  try {
    return walk(schema)
  } catch {
    // `Refused`, or a schema nested deeper than the stack: the server checks it.
    return undefined
  }
}

const draft = (uri: unknown): SchemaDraft => {
  if (typeof uri !== "string") return "2020-12"
  if (uri.includes("draft-04")) return "4"
  if (uri.includes("draft-06") || uri.includes("draft-07")) return "7"
  if (uri.includes("2019-09")) return "2019-09"
  return "2020-12"
}

// Keywords whose error only says that something below failed: the error below says what.
const wrappers = new Set([
  "properties",
  "patternProperties",
  "additionalProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "allOf",
  "$ref",
  "$recursiveRef",
  "$dynamicRef",
  "dependentSchemas",
  "unevaluatedProperties",
  "unevaluatedItems"
])

const issues = (errors: ReadonlyArray<OutputUnit>): ReadonlyArray<Schema.FilterIssue> => {
  const leaves = errors.filter((error) => !wrappers.has(error.keyword))
  return (leaves.length === 0 ? errors : leaves).map((error) => ({
    path: path(error.instanceLocation),
    issue: error.error
  }))
}

// "#/a/0" → ["a", "0"]: the instance location is a JSON pointer in a URI fragment.
const path = (location: string): ReadonlyArray<string> =>
  location === "#" || location === ""
    ? []
    : location.replace(/^#\//, "").split("/").map((token) => JsonPointer.unescapeToken(decodeURIComponent(token)))
