/**
 * A tool call's result as data: what a checkpoint stores and an event carries.
 *
 * A `Toolkit.Result` holds the tool's output as a value, which may not be
 * JSON; its record keeps the output item the model reads (the value encoded by
 * the tool's output schema), from which the value decodes back.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Item from "./Item.ts"
import type * as Toolkit from "./Toolkit.ts"
import { Outcome } from "./ToolOutcome.ts"

/**
 * How a call ended, the call, the output item the model reads, and what went wrong when it did.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolRecord = Schema.Struct({
  outcome: Outcome,
  call: Item.FunctionCall,
  output: Item.FunctionCallOutput,
  reason: Schema.optionalKey(Schema.String)
})
export type ToolRecord = typeof ToolRecord.Type

/**
 * The record of a result.
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
export const fromResult = (result: Toolkit.Result): ToolRecord => ({
  outcome: result.outcome,
  call: result.call,
  output: result.output,
  ...(result.outcome === "success" ? {} : { reason: result.reason })
})

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
 * output item with the tool's output schema.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toResult = <R>(
  toolkit: Toolkit.Toolkit<R>,
  record: ToolRecord
): Effect.Effect<Toolkit.Result, RestoreFailed> => {
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
  return Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(tool.output)))(record.output.output).pipe(
    Effect.mapError((error) =>
      new RestoreFailed({ tool: name, message: `the recorded output no longer decodes: ${error.message}` })
    ),
    Effect.map((value): Toolkit.Result => ({ outcome: "success", call: record.call, output: record.output, value }))
  )
}
