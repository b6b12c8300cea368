/**
 * The ledger of a step program's execution in a `Checkpointer`: every step
 * that completed (its output and its context then), the context a step's
 * `checkpoint()` saved, and the program's output once it ended.
 *
 * An `llm` step also records its turn once the model answered it, each call
 * of a tool that is not idempotent as it starts, and each of its tool calls
 * as it ends, so one cut off in the middle of its tools runs only the calls
 * that had not ended, without asking the model again, and not a call of a
 * tool that is not idempotent that had started (its outcome is unknown).
 *
 * A step is known by its key: its position in the program (the keys of the
 * steps around it, a loop's iteration, a fork's path, and how many times a
 * step of its id ran there before), which is the same when the program is
 * executed again with the same id. The context is written as what changed:
 * the item log as a change from the one written before, the rest (state,
 * books, counters) as they are.
 *
 * Each entry is also written with what the program streamed since the entry
 * before (its marks, see `journal.ts`), so that streaming the program again
 * replays it (see `replay.ts`); the entries' schemas are in `entries.ts`.
 * What the ledger recorded is read in `recorded.ts`, and recorded by
 * `writer.ts`.
 *
 * Each entry carries the version of the program's state (its
 * `stateVersioning`, version 1 without one, as entries written before entries
 * carried a version): a state recorded at another version is brought to the
 * current one by the program's migrations as the ledger is read, or the
 * ledger fails with an `ExecutionCheckpointFailed` whose cause is a
 * `CheckpointVersionMismatch`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Checkpointer } from "../../Checkpointer.ts"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import type * as RunFingerprint from "../../RunFingerprint.ts"
import * as Tool from "../../Tool.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import { failed } from "./checkpointFailed.ts"
import type * as Entries from "./entries.ts"
import type { Execution } from "./execution.ts"
import * as Recorded from "./recorded.ts"
import * as Writer from "./writer.ts"
import * as Written from "./written.ts"

/** The ledger of one execution id: what its earlier executions recorded, and how to record more. */
export interface Ledger extends Recorded.Recorded, Writer.Writer {
  /** The `Tool.IdempotencyKey` of call `index` of the `llm` step `key` of `execution`: the same in every execution. */
  readonly idempotencyKey: (execution: string, key: string, index: number) => Effect.Effect<string>
}

/**
 * Opens the ledger of execution `id` with its fingerprint, holding its lease
 * until the scope closes. `versioning` is the program's state's; `streamed`
 * says whether the execution is streamed (and so its ledger's events are
 * replayed).
 */
export const load = (
  checkpointer: Checkpointer["Service"],
  id: string,
  fingerprint: RunFingerprint.Fingerprint,
  versioning: CheckpointVersion.Versioning | undefined,
  streamed: boolean
): Effect.Effect<Ledger, ExecutionCheckpointFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const log = yield* checkpointer.open(id, fingerprint).pipe(
      Effect.mapError((error) => failed(id, error.message, error))
    )
    const { contexts, recorded } = yield* Recorded.fold(id, log.entries, versioning, streamed)
    const writer = Writer.make({
      id,
      log,
      version: versioning?.version ?? CheckpointVersion.first,
      clock: yield* Clock.Clock,
      written: Written.make(contexts)
    })
    return {
      ...recorded,
      ...writer,
      idempotencyKey: (execution, key, index) => Tool.idempotencyKey(id, `${execution}|${key}/tool/${index}`)
    }
  })

/** Puts a recorded context back into `execution`. */
export const restore = (execution: Execution<unknown>, context: Entries.Restorable): void => {
  execution.itemLog.replace(context.items)
  execution.setState(context.state)
  execution.tokens = context.tokens
  execution.cost = context.cost
  execution.stepCount = context.stepCount
  execution.turns = context.turns
  execution.spawns.clear()
  for (const [id, runs] of Object.entries(context.spawns)) execution.spawns.set(id, runs)
  execution.lastStepMeta = context.lastStepMeta
  execution.errors.splice(0, execution.errors.length, ...context.errors)
}
