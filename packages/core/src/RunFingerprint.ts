/**
 * What shapes a recorded run's history, kept with its log: a run executed
 * again with the same id must be the same run.
 *
 * A fingerprint is a record of named fields (an `AgentLoop` run's input,
 * instructions, tool names and output schema; a step program's input, program
 * and tools), each a short text: a digest for a value that may be large, the
 * value itself where it reads better (tool names). A store records a run's
 * fingerprint when the run is first executed, and refuses another one with
 * `CheckpointMismatch`, naming the fields that differ.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { sha256Hex } from "./internal/sha256.ts"

/**
 * A run's fingerprint: field name → text.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Fingerprint = Schema.Record(Schema.String, Schema.String)

/**
 * @since 0.2.0
 * @category models
 */
export type Fingerprint = typeof Fingerprint.Type

/**
 * A field whose recorded text differs from the given one (`null`: the field
 * is missing on that side).
 *
 * @since 0.2.0
 * @category schemas
 */
export const Difference = Schema.Struct({
  field: Schema.String,
  recorded: Schema.NullOr(Schema.String),
  given: Schema.NullOr(Schema.String)
})

/**
 * @since 0.2.0
 * @category models
 */
export type Difference = typeof Difference.Type

/**
 * The fields of `given` that differ from `recorded`, in field order; none when
 * they are the same run.
 *
 * @example
 * ```ts
 * import { RunFingerprint } from "@agentloop/core"
 *
 * const recorded = { model: "gpt-5-mini", tools: "add,search" }
 * const given = { model: "gpt-5", tools: "add,search" }
 * console.log(RunFingerprint.differences(recorded, given).map((difference) => difference.field)) // [ 'model' ]
 * ```
 *
 * @since 0.2.0
 * @category comparisons
 */
export const differences = (recorded: Fingerprint, given: Fingerprint): ReadonlyArray<Difference> => {
  const fields = [...new Set([...Object.keys(recorded), ...Object.keys(given)])].sort()
  return fields.flatMap((field) => {
    const before = recorded[field] ?? null
    const after = given[field] ?? null
    return before === after ? [] : [{ field, recorded: before, given: after }]
  })
}

/**
 * The SHA-256 digest of `text` (UTF-8), as `sha256:` and 32 hex digits (the
 * first 128 bits): what a fingerprint keeps of a value that may be large.
 * Runs wherever the core does: a short text is hashed at once, in plain
 * JavaScript, a long one by Web Crypto.
 *
 * @since 0.2.0
 * @category constructors
 */
export const digest = (text: string): Effect.Effect<string> => Effect.map(sha256Hex(text), (hex) => `sha256:${hex}`)

/**
 * The JSON text of `value` with object keys sorted, so equal values give equal
 * text whatever order their keys were written in; a value JSON cannot hold
 * (a function, a cycle) is described by its type.
 *
 * @since 0.2.0
 * @category constructors
 */
export const stableJson = (value: unknown): string => {
  const seen = new WeakSet<object>()
  const walk = (item: unknown): unknown => {
    if (item === null || typeof item !== "object") return typeof item === "function" ? "<function>" : item
    if (item instanceof Date) return item.toISOString()
    if (seen.has(item)) return "<cycle>"
    seen.add(item)
    const record: Record<string, unknown> = { ...item }
    const walked = Array.isArray(item)
      ? item.map(walk)
      : Object.fromEntries(Object.keys(record).sort().map((key) => [key, walk(record[key])]))
    seen.delete(item)
    return walked
  }
  return JSON.stringify(walk(value)) ?? "undefined"
}
