/**
 * JSON Schemas for the API's own structured output (`output_config.format`),
 * which takes a subset of JSON Schema: every object closed
 * (`additionalProperties: false`, which this module sets on every object: the
 * application's `Schema` ignores extra keys anyway), no recursion, and few constraints.
 *
 * A constraint the API does not take (`minimum`, `maxLength`, `minItems` above
 * 1, a string format it does not know, …) is taken out of the schema and
 * written into its `description`, so the model still reads it; the
 * application's own `Schema` still checks it when it decodes the answer. A
 * schema the API cannot take at all (an object with a schema for its extra keys, such as a record, a
 * tuple, definitions, which `Tool.toParameters` keeps only for recursive
 * schemas) has no structured-output form: the request then asks for the
 * answer through a tool instead (see `AnthropicRequest`).
 *
 * @since 0.1.0
 */
import { StrictSchema } from "@agentloop/core"
import type * as JsonSchema from "effect/JsonSchema"

// What the API's structured output takes, besides the keywords that hold schemas (handled apart).
const kept = new Set(["type", "title", "description", "enum", "const", "required", "pattern"])

const formats = new Set(["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"])

// Keywords whose schema the API cannot take with another shape: the schema goes through a tool.
const refused = new Set([...StrictSchema.unsupported, "$ref", "$defs", "definitions", "prefixItems"])

/**
 * The form of `schema` the API's structured output takes, or `undefined` when
 * there is none (an open object, a tuple, definitions or references, conditionals).
 *
 * @example
 * ```ts
 * import { AnthropicSchema } from "@agentloop/anthropic"
 *
 * const capital = {
 *   type: "object",
 *   properties: { country: { type: "string" }, capital: { type: "string", minLength: 1 } },
 *   required: ["country", "capital"],
 *   additionalProperties: false
 * }
 * console.log(AnthropicSchema.structuredOutput(capital) !== undefined) // true
 * // A record (an object open to any key) has no structured output form: the output goes through a tool instead.
 * console.log(AnthropicSchema.structuredOutput({ type: "object", additionalProperties: { type: "number" } })) // undefined
 * ```
 *
 * @since 0.1.0
 * @category conversions
 */
export const structuredOutput = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema | undefined => {
  let takes = true
  const rewrite = (schema: unknown): unknown => {
    if (!StrictSchema.isJsonObject(schema)) return schema
    const out: Record<string, unknown> = {}
    const dropped: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(schema)) {
      // An object whose extra keys have a schema (a record) stays open, which the API does not take.
      if (refused.has(key) || (key === "additionalProperties" && StrictSchema.isJsonObject(value))) takes = false
      else if (kept.has(key)) out[key] = value
      else if (key === "properties" && StrictSchema.isJsonObject(value)) {
        out.properties = Object.fromEntries(Object.entries(value).map(([name, property]) => [name, rewrite(property)]))
      } else if (key === "items" && StrictSchema.isJsonObject(value)) out.items = rewrite(value)
      else if ((key === "anyOf" || key === "oneOf" || key === "allOf") && Array.isArray(value)) {
        // The API has no `oneOf`; `anyOf` takes the same values, and the application's Schema tells them apart.
        out[key === "oneOf" ? "anyOf" : key] = value.map(rewrite)
      } else if (key === "format" && typeof value === "string" && formats.has(value)) out.format = value
      else if (key === "minItems" && (value === 0 || value === 1)) out.minItems = value
      else if (key !== "$schema" && key !== "additionalProperties") dropped[key] = value
    }
    if (out.type === "object" || "properties" in out) out.additionalProperties = false
    if (Object.keys(dropped).length > 0) {
      const note = `(${JSON.stringify(dropped)})`
      out.description = typeof out.description === "string" ? `${out.description} ${note}` : note
    }
    return out
  }
  const result = rewrite(schema)
  return takes && StrictSchema.isJsonObject(result) ? result : undefined
}
