/**
 * A step's output as a checkpoint records it: encoded with the step's schema
 * when it has one (an `llm` step's `output`, a tool step's tool), else as it
 * is, and read back the same way. A tool step's output records its tool's
 * output version, when the tool declares one, and is read back through the
 * tool's migrations.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import type * as Step from "../StepAst.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import { failed } from "./checkpointFailed.ts"
import type * as Entries from "./entries.ts"

/** How a step's output is written: with its schema when it has one (an `llm` step's `output`, a tool step's tool), else as it is. */
const codecOf = (step: Step.Any): Schema.Codec<unknown, unknown> | undefined => {
  const schema = step.kind === "llm" ? step.output : step.kind === "tool" ? step.tool.output : undefined
  // An llm step's output schema is a `Codec<O, unknown>` and a tool's needs no services (see `Tool.make`):
  // the step's type keeps it as `Schema.Top` only because the step is data.
  return schema === undefined ? undefined : Schema.toCodecJson(schema as Schema.Codec<unknown, unknown>)
}

/** The output versioning of a step's schema: its tool's, for a tool step. */
const versioningOf = (step: Step.Any): CheckpointVersion.Versioning | undefined =>
  step.kind === "tool" ? step.tool.outputVersioning : undefined

/** A step's output as the ledger writes it (the entry then checks that it is JSON). */
export const encodeOutput = (
  executionId: string,
  step: Step.Any,
  output: unknown
): Effect.Effect<Entries.Unwritten, ExecutionCheckpointFailed> => {
  const codec = codecOf(step)
  const version = versioningOf(step)?.version
  const encoded = codec === undefined ? Effect.succeed(output) : Schema.encodeUnknownEffect(codec)(output).pipe(
    Effect.mapError((error) =>
      failed(executionId, `the output of step ${step.id} does not encode: ${error.message}`, error)
    )
  )
  return Effect.map(encoded, (output) => version === undefined ? { output } : { output, outputVersion: version })
}

/**
 * A recorded output, read back with the step's schema, after its tool's
 * migrations when it was recorded at another version of the tool's output.
 */
export const decodeOutput = (
  executionId: string,
  step: Step.Any,
  recorded: Entries.Output
): Effect.Effect<unknown, ExecutionCheckpointFailed> => {
  const codec = codecOf(step)
  if (codec === undefined) return Effect.succeed(recorded.output)
  const versioning = versioningOf(step)
  const version = recorded.outputVersion ?? CheckpointVersion.first
  if (version === (versioning?.version ?? CheckpointVersion.first)) {
    const decoded = Schema.decodeUnknownExit(codec)(recorded.output)
    return Exit.isSuccess(decoded)
      ? Effect.succeed(decoded.value)
      : Effect.fail(failed(executionId, `the recorded output of step ${step.id} no longer decodes`))
  }
  return CheckpointVersion.migrate({
    subject: `the output of step ${step.id}`,
    versioning,
    recorded: version,
    value: recorded.output
  }).pipe(
    Effect.flatMap(Schema.decodeUnknownEffect(codec)),
    Effect.mapError((error) =>
      error._tag === "CheckpointVersionMismatch"
        ? failed(executionId, error.message, error)
        : failed(executionId, `the recorded output of step ${step.id} no longer decodes: ${error.message}`, error)
    )
  )
}
