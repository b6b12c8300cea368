/**
 * How a step program's checkpoint fails: a ledger (or the program's thread)
 * that could not be opened, read or written is the program's
 * `ExecutionCheckpointFailed`.
 *
 * @internal
 */
import { ExecutionCheckpointFailed } from "../StepError.ts"

/** A checkpoint of execution `id` that could not be written or read. */
export const failed = (id: string, message: string, cause?: unknown): ExecutionCheckpointFailed =>
  new ExecutionCheckpointFailed({ executionId: id, message, ...(cause === undefined ? {} : { cause }) })

/** An entry of execution `id`'s ledger that does not decode, and why. */
export const undecodable = (id: string, reason: string, cause?: unknown): ExecutionCheckpointFailed =>
  failed(id, `the checkpoint of "${id}" does not decode: ${reason}`, cause)
