/**
 * A store's failure as the `CheckpointError` of the operation and run it hit.
 *
 * @internal
 */
import { CheckpointError } from "../CheckpointStore.ts"

/** A checkpoint error for `operation` on run `id`, from whatever failed. */
export const failed = (operation: CheckpointError["operation"], id: string) => (cause: unknown): CheckpointError =>
  cause instanceof CheckpointError ? cause : new CheckpointError({
    operation,
    id,
    message: `could not ${operation} the checkpoint of "${id}": ${
      cause instanceof Error ? cause.message : String(cause)
    }`,
    cause
  })
