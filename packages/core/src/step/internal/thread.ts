/**
 * A step program on a thread (see `Thread`): its execution is a run of the
 * thread, whose root item log starts from the thread's history and whose
 * items go to the thread once the program ends well. The thread's lease is
 * held for as long as the program runs; its failures are the program's
 * `ExecutionCheckpointFailed` (a `CompactionError` when the thread's history
 * could not be compacted ahead).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { ThreadOptions } from "../../agent/AgentOptions.ts"
import * as Thread from "../../agent/Thread.ts"
import * as ThreadId from "../../agent/ThreadId.ts"
import { Checkpointer, CheckpointError } from "../../Checkpointer.ts"
import type { CompactionError } from "../../Compactor.ts"
import type * as Item from "../../Item.ts"
import * as RunFingerprint from "../../RunFingerprint.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import { failed } from "./ledger.ts"

/** A program's `thread` option: a thread id, or the thread's options. */
export type ThreadOption = string | ThreadOptions

/** What a program on a thread may fail with besides its steps' errors: its thread's history could not be compacted. */
export type Failure<T> = [T] extends [undefined] ? never : CompactionError

/** An execution's hold on its thread. */
export interface Session {
  /** The history the execution starts from, before its own input. */
  readonly history: ReadonlyArray<Item.Item>
  /** What the execution's record adds to its fingerprint: it is the same run only from the same history. */
  readonly fingerprint: Effect.Effect<RunFingerprint.Fingerprint>
  /** Records the execution's final item log on the thread, once (again, it does nothing). */
  readonly finished: (items: ReadonlyArray<Item.Item>) => Effect.Effect<void, ExecutionCheckpointFailed>
}

/**
 * Opens thread `option` for execution `id`, holding the thread's lease until
 * the scope closes: a new execution starts from the thread's history (compacted
 * first past its `maxItems`), one executed again from the history it started
 * from the first time.
 */
export const open = (
  option: ThreadOption,
  id: string
): Effect.Effect<Session, ExecutionCheckpointFailed | CompactionError, Scope.Scope> =>
  Effect.gen(function*() {
    const thread = Thread.options(option)
    const checkpointer = yield* Effect.serviceOption(Checkpointer)
    if (Option.isNone(checkpointer)) {
      const message = `thread "${thread.id}" needs a Checkpointer in context`
      return yield* failed(
        id,
        message,
        new CheckpointError({ operation: "open", id: ThreadId.logId(thread.id), message })
      )
    }
    const session = yield* Thread.open(thread, id).pipe(
      Effect.provideService(Checkpointer, checkpointer.value),
      Effect.catch((error) =>
        Effect.fail(
          error._tag === "CompactionError" ? error : failed(id, `thread "${thread.id}": ${error.message}`, error)
        )
      )
    )
    return {
      history: session.history,
      fingerprint: Effect.map(
        RunFingerprint.digest(RunFingerprint.stableJson(session.history)),
        (digest): RunFingerprint.Fingerprint => ({ thread: digest })
      ),
      finished: (items) =>
        session.finished(items).pipe(
          Effect.mapError((error) => failed(id, `thread "${thread.id}": ${error.message}`, error))
        )
    }
  })
