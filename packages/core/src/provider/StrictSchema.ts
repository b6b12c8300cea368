/**
 * The subsets of JSON Schema vendors take in strict mode, for tool parameters
 * and structured output: the keywords none of them takes, and OpenAI's strict
 * mode, which the Responses and Chat Completions wires both speak.
 *
 * OpenAI's strict mode guarantees the model's JSON matches the schema, but takes a
 * subset of JSON Schema: every object closes its properties
 * (`additionalProperties: false`) and requires all of them. A schema with
 * optional keys is made strict the way OpenAI documents: each optional key
 * becomes required and nullable, and the model's `null` for such a key is
 * removed again from what it wrote (see {@link Strict.normalize}), so the
 * application's own `Schema` decodes it as the absent key it means. A schema
 * that uses a keyword strict mode rejects is sent as it is, non-strict.
 *
 * @since 0.2.0
 */
import type * as JsonSchema from "effect/JsonSchema"
import * as Predicate from "effect/Predicate"

/**
 * A schema as sent to OpenAI, and how to read the model's JSON back.
 *
 * @since 0.2.0
 * @category models
 */
export interface Strict {
  readonly schema: JsonSchema.JsonSchema
  readonly strict: boolean
  /**
   * Removes the `null`s the model wrote for keys that were optional, returning
   * the JSON text unchanged when there are none (and when it is not JSON).
   * `undefined` when no key was made nullable: the model's text is used as it is.
   */
  readonly normalize: ((text: string) => string) | undefined
}

/**
 * The keywords no vendor's strict subset takes (neither OpenAI's strict mode
 * nor Anthropic's structured output): negation, conditionals, `contains`, and
 * the schemas of property names, patterned properties, dependencies and unevaluated keys or items.
 *
 * @since 0.2.0
 * @category constants
 */
export const unsupported: ReadonlySet<string> = new Set([
  "not",
  "if",
  "then",
  "else",
  "dependentSchemas",
  "patternProperties",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains"
])

// What OpenAI's strict mode rejects besides (it answers e.g. "'oneOf' is not permitted"); `Schema.Union(..., { mode: "oneOf" })` emits one.
const openAiUnsupported = [...unsupported, "oneOf", "allOf", "dependentRequired"]

type Json = Readonly<Record<string, unknown>>

/**
 * Whether a JSON value is an object (not `null`, not an array): in a schema, a
 * schema object rather than a boolean schema or a list of schemas.
 *
 * @since 0.2.0
 * @category guards
 */
export const isJsonObject = (value: unknown): value is Json =>
  Predicate.isReadonlyObject(value) && !Array.isArray(value)

const acceptsNull = (schema: Json): boolean =>
  schema.type === "null" ||
  (Array.isArray(schema.type) && schema.type.includes("null")) ||
  (Array.isArray(schema.enum) && schema.enum.includes(null)) ||
  schema.const === null ||
  (Array.isArray(schema.anyOf) && schema.anyOf.some((branch) => isJsonObject(branch) && acceptsNull(branch)))

const mapValues = (value: unknown, f: (schema: unknown) => unknown): unknown =>
  Array.isArray(value)
    ? value.map(f)
    : isJsonObject(value)
    ? Object.fromEntries(Object.entries(value).map(([key, schema]) => [key, f(schema)]))
    : value

/** The rewrite of one schema: the strict form, whether strict mode takes it, whether a key was made nullable. */
interface Rewrite {
  readonly schema: unknown
  readonly strict: boolean
  readonly nullable: boolean
}

const rewrite = (schema: unknown): Rewrite => {
  if (!isJsonObject(schema)) return { schema, strict: true, nullable: false }
  let strict = !openAiUnsupported.some((keyword) => keyword in schema)
  let nullable = false
  const sub = (value: unknown): unknown => {
    const result = rewrite(value)
    strict &&= result.strict
    nullable ||= result.nullable
    return result.schema
  }
  const out: Record<string, unknown> = { ...schema }
  for (const keyword of ["$defs", "definitions", "anyOf", "prefixItems"]) {
    if (keyword in schema) out[keyword] = mapValues(schema[keyword], sub)
  }
  if ("items" in schema) out.items = isJsonObject(schema.items) ? sub(schema.items) : mapValues(schema.items, sub)
  const properties = schema.properties
  if (schema.type === "object" || isJsonObject(properties)) {
    if (schema.additionalProperties !== false) strict = false
    const required = Array.isArray(schema.required) ? schema.required : []
    const rewritten: Record<string, unknown> = {}
    for (const [key, property] of Object.entries(isJsonObject(properties) ? properties : {})) {
      const value = sub(property)
      if (required.includes(key) || (isJsonObject(value) && acceptsNull(value))) {
        rewritten[key] = value
      } else {
        rewritten[key] = { anyOf: [value, { type: "null" }] }
        nullable = true
      }
    }
    if (isJsonObject(properties)) {
      out.properties = rewritten
      out.required = Object.keys(rewritten)
    }
  }
  return { schema: out, strict, nullable }
}

const refPrefix = "#/$defs/"

/** Removes `null` values of keys that were optional in `schema` from `value`; `changed` says whether any went. */
const normalizer = (root: Json) => {
  const definitions = isJsonObject(root.$defs) ? root.$defs : {}
  let changed = false
  const walk = (value: unknown, schema: unknown, depth: number): unknown => {
    if (!isJsonObject(schema) || depth > 64) return value
    const ref = schema.$ref
    if (typeof ref === "string" && ref.startsWith(refPrefix)) {
      return walk(value, definitions[ref.slice(refPrefix.length)], depth + 1)
    }
    if (Array.isArray(value)) {
      return isJsonObject(schema.items) ? value.map((item) => walk(item, schema.items, depth + 1)) : value
    }
    if (!isJsonObject(value)) return value
    if (Array.isArray(schema.anyOf)) {
      const branch = schema.anyOf.find((branch) =>
        isJsonObject(branch) && (branch.type === "object" || "properties" in branch || "$ref" in branch)
      )
      return walk(value, branch, depth + 1)
    }
    const properties = isJsonObject(schema.properties) ? schema.properties : {}
    const required = Array.isArray(schema.required) ? schema.required : []
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      const property = properties[key]
      if (item === null && !required.includes(key) && !(isJsonObject(property) && acceptsNull(property))) {
        changed = true
        continue
      }
      out[key] = walk(item, property, depth + 1)
    }
    return out
  }
  return (text: string): string => {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return text
    }
    changed = false
    const normalized = walk(json, root, 0)
    return changed ? JSON.stringify(normalized) : text
  }
}

/**
 * Whether OpenAI's strict mode accepts `schema` as it is.
 *
 * @example
 * ```ts
 * import { StrictSchema } from "@agentloop/core"
 *
 * const city = {
 *   type: "object",
 *   properties: { city: { type: "string" } },
 *   required: ["city"],
 *   additionalProperties: false
 * }
 * console.log(StrictSchema.isStrictCompatible(city)) // true
 * // An open record cannot be strict: the API requires every object to list its properties.
 * const open = { type: "object", additionalProperties: { type: "string" } }
 * console.log(StrictSchema.isStrictCompatible(open)) // false
 * ```
 *
 * @since 0.2.0
 * @category guards
 */
export const isStrictCompatible = (schema: JsonSchema.JsonSchema): boolean => {
  const result = rewrite(schema)
  return result.strict && !result.nullable
}

/**
 * The form of `schema` OpenAI's strict mode takes (without its `$schema`
 * dialect, which OpenAI rejects), or the schema itself, non-strict.
 *
 * @example
 * ```ts
 * import { StrictSchema } from "@agentloop/core"
 *
 * // An optional key becomes required and nullable; the model's `null` for it is taken out again.
 * const strict = StrictSchema.make({
 *   type: "object",
 *   properties: { city: { type: "string" }, unit: { type: "string" } },
 *   required: ["city"],
 *   additionalProperties: false
 * })
 * console.log(strict.strict, strict.schema.required) // true [ 'city', 'unit' ]
 * console.log(strict.normalize?.("{\"city\":\"Oslo\",\"unit\":null}")) // {"city":"Oslo"}
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (schema: JsonSchema.JsonSchema): Strict => {
  const { $schema: _, ...rest } = schema
  const result = rewrite(rest)
  if (!result.strict || !isJsonObject(result.schema)) return { schema: rest, strict: false, normalize: undefined }
  return { schema: result.schema, strict: true, normalize: result.nullable ? normalizer(rest) : undefined }
}
