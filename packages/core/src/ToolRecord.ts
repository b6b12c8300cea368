/**
 * A tool call's result as data: what a checkpoint stores and an event carries.
 *
 * A `Toolkit.Result` holds the tool's output as a value, which may not be
 * JSON; its record keeps the output item the model reads (the value encoded by
 * the tool's output schema), from which the value decodes back, and the
 * version of that schema when the tool declares one (`outputVersioning`): a
 * tool whose output schema changed reads its older records through its
 * migrations.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as CheckpointVersion from "./CheckpointVersion.ts"
import * as Item from "./Item.ts"
import type * as Tool from "./Tool.ts"
import type * as Toolkit from "./Toolkit.ts"
import { Outcome } from "./ToolOutcome.ts"

/**
 * How a call ended, the call, the output item the model reads, what went
 * wrong when it did, and the version of the tool's output schema that wrote
 * a success's output (none: version 1).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolRecord = Schema.Struct({
  outcome: Outcome,
  call: Item.FunctionCall,
  output: Item.FunctionCallOutput,
  reason: Schema.optionalKey(Schema.String),
  version: Schema.optionalKey(CheckpointVersion.Version)
})
export type ToolRecord = typeof ToolRecord.Type

/**
 * The record of a result. A checkpoint passes the toolkit that ran the call,
 * so that a success records the version of its tool's output schema, when the
 * tool declares one; an event needs none.
 *
 * @example
 * ```ts
 * import { Item, Tool, Toolkit, ToolRecord } from "@agentloop/core"
 * import { Effect, Schema } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 * const toolkit = Toolkit.make(add)
 * const call: Item.FunctionCall = {
 *   type: "function_call",
 *   id: "fc_1",
 *   status: "completed",
 *   call_id: "c1",
 *   name: "add",
 *   arguments: "{\"a\":2,\"b\":3}"
 * }
 *
 * const program = Effect.gen(function*() {
 *   const [result] = yield* Toolkit.executeAllSafe(toolkit, [call])
 *   // A record is JSON: stored with a checkpoint, it becomes the same result again without running the tool.
 *   const json = Schema.encodeSync(Schema.fromJsonString(ToolRecord.ToolRecord))(ToolRecord.fromResult(result!))
 *   const restored = yield* ToolRecord.toResult(toolkit, Schema.decodeSync(Schema.fromJsonString(ToolRecord.ToolRecord))(json))
 *   console.log(restored.outcome, restored.output.output) // success 5
 * })
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromResult = <R>(result: Toolkit.Result, toolkit?: Toolkit.Toolkit<R>): ToolRecord => {
  if (result.outcome !== "success") {
    return { outcome: result.outcome, call: result.call, output: result.output, reason: result.reason }
  }
  const versioning = toolkit?.byName.get(result.call.name)?.outputVersioning
  return versioning === undefined
    ? { outcome: result.outcome, call: result.call, output: result.output }
    : { outcome: result.outcome, call: result.call, output: result.output, version: versioning.version }
}

/**
 * A record's result could not be restored: its tool is gone, or no longer reads the output it recorded.
 *
 * @since 0.1.0
 * @category errors
 */
export class RestoreFailed extends Schema.TaggedError<RestoreFailed>()("RestoreFailed", {
  tool: Schema.String,
  message: Schema.String
}) {}

/**
 * The result a record was made from. A success's value is decoded from its
 * output item with the tool's output schema, after the tool's migrations when
 * it was recorded at another version of it (the output item stays as the
 * model read it); one that no migration brings to the tool's version fails
 * with `CheckpointVersionMismatch`.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toResult = <R>(
  toolkit: Toolkit.Toolkit<R>,
  record: ToolRecord
): Effect.Effect<Toolkit.Result, RestoreFailed | CheckpointVersion.CheckpointVersionMismatch> => {
  if (record.outcome !== "success") {
    return Effect.succeed({
      outcome: record.outcome,
      call: record.call,
      output: record.output,
      reason: record.reason ?? ""
    })
  }
  const name = record.call.name
  const tool = toolkit.byName.get(name)
  if (tool === undefined) {
    return Effect.fail(new RestoreFailed({ tool: name, message: `the toolkit has no tool "${name}" any more` }))
  }
  const recorded = record.version ?? CheckpointVersion.first
  const text = record.output.output
  const value = recorded === (tool.outputVersioning?.version ?? CheckpointVersion.first)
    ? Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(tool.output)))(text).pipe(
      Effect.mapError((error) => noLongerDecodes(name, error))
    )
    : Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Unknown))(text).pipe(
      Effect.mapError((error) => noLongerDecodes(name, error)),
      Effect.flatMap((json) => migrateOutput(tool, recorded, json))
    )
  return Effect.map(
    value,
    (value): Toolkit.Result => ({ outcome: "success", call: record.call, output: record.output, value })
  )
}

const noLongerDecodes = (tool: string, error: Schema.SchemaError) =>
  new RestoreFailed({ tool, message: `the recorded output no longer decodes: ${error.message}` })

/**
 * An output of `tool` recorded at version `recorded` of its output schema
 * (as JSON), brought to the tool's version by its migrations and decoded.
 *
 * @since 0.2.0
 * @category decoding
 */
export const migrateOutput = (
  tool: Tool.Any<unknown>,
  recorded: number,
  json: unknown
): Effect.Effect<unknown, RestoreFailed | CheckpointVersion.CheckpointVersionMismatch> =>
  CheckpointVersion.migrate({
    subject: `the output of tool "${tool.name}"`,
    versioning: tool.outputVersioning,
    recorded,
    value: json
  }).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(Schema.toCodecJson(tool.output))),
    Effect.catchTag("SchemaError", (error) => Effect.fail(noLongerDecodes(tool.name, error)))
  )
