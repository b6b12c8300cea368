/**
 * The arguments of an MCP tool, checked against the JSON Schema its server
 * wrote before any call: arguments that break it are a mistake the model
 * reads, with every violation and where it is.
 *
 * The check is `@cfworker/json-schema`'s: every keyword of drafts 4, 7,
 * 2019-09 and 2020-12 (the dialect the schema's `$schema` names, 2020-12 when
 * it names none, as MCP says), interpreted rather than compiled, so a schema
 * from a server is never turned into code.
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
  try {
    const compiled = new Validator(jsonSchema as JsonSchemaDocument, draft(jsonSchema.$schema), false)
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
