/**
 * A step's output as a checkpoint records it: encoded with the step's schema
 * when it has one (an `llm` step's `output`, a tool step's tool), else as it
 * is, and read back the same way.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as Step from "../StepAst.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import { failed } from "./ledger.ts"

/** How a step's output is written: with its schema when it has one (an `llm` step's `output`, a tool step's tool), else as it is. */
const codecOf = (step: Step.Any): Schema.Codec<unknown, unknown> | undefined => {
  const schema = step.kind === "llm" ? step.output : step.kind === "tool" ? step.tool.output : undefined
  // An llm step's output schema is a `Codec<O, unknown>` and a tool's needs no services (see `Tool.make`):
  // the step's type keeps it as `Schema.Top` only because the step is data.
  return schema === undefined ? undefined : Schema.toCodecJson(schema as Schema.Codec<unknown, unknown>)
}

/** A step's output as the ledger writes it (the entry then checks that it is JSON). */
export const encodeOutput = (
  executionId: string,
  step: Step.Any,
  output: unknown
): Effect.Effect<unknown, ExecutionCheckpointFailed> => {
  const codec = codecOf(step)
  return codec === undefined ? Effect.succeed(output) : Schema.encodeUnknownEffect(codec)(output).pipe(
    Effect.mapError((error) =>
      failed(executionId, `the output of step ${step.id} does not encode: ${error.message}`, error)
    )
  )
}

/** A recorded output, read back with the step's schema. */
export const decodeOutput = (
  executionId: string,
  step: Step.Any,
  output: Schema.Json
): Effect.Effect<unknown, ExecutionCheckpointFailed> => {
  const codec = codecOf(step)
  if (codec === undefined) return Effect.succeed(output)
  const decoded = Schema.decodeUnknownExit(codec)(output)
  return Exit.isSuccess(decoded)
    ? Effect.succeed(decoded.value)
    : Effect.fail(failed(executionId, `the recorded output of step ${step.id} no longer decodes`))
}
