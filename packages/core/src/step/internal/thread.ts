/**
 * A step program on a thread (see `Thread`): its execution is a run of the
 * thread, whose root item log starts from the thread's history and whose
 * items go to the thread once the program ends well. The thread's lease is
 * held for as long as the program runs (a finished program replays without
 * it); its failures are the program's `ExecutionCheckpointFailed` (a
 * `CompactionError` when the thread's history could not be compacted ahead).
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
import type * as RunFingerprint from "../../RunFingerprint.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import { failed } from "./checkpointFailed.ts"

/** A program's `thread` option: a thread id, or the thread's options. */
export type ThreadOption = string | ThreadOptions

/** What a program on a thread may fail with besides its steps' errors: its thread's history could not be compacted. */
export type Failure<T> = [T] extends [undefined] ? never : CompactionError

/** An execution's hold on its thread. */
export interface Session {
  /** The history the execution starts from, before its own input. */
  readonly history: ReadonlyArray<Item.Item>
  /** What the execution's record adds to its fingerprint: it is the same run only from the same history. */
  readonly fingerprint: RunFingerprint.Fingerprint
  /** Records the execution's final item log on the thread, once (again, it does nothing). */
  readonly finished: (items: ReadonlyArray<Item.Item>) => Effect.Effect<void, ExecutionCheckpointFailed>
}

/** An execution as a run of its thread, before the thread's lease is taken. */
export interface Run {
  /**
   * What the execution's record adds to its fingerprint when it started on
   * the thread before (see {@link Session.fingerprint}), read without the
   * lease; a new run's is its session's.
   */
  readonly fingerprint: RunFingerprint.Fingerprint | undefined
  /**
   * Takes the thread's lease until the scope closes: a new execution starts
   * from the thread's history (compacted first past its `maxItems`), one
   * executed again from the history it started from the first time.
   */
  readonly open: Effect.Effect<Session, ExecutionCheckpointFailed | CompactionError, Scope.Scope>
}

/** Thread `option`'s checkpointer, or the failure of execution `id` that needs one. */
const checkpointerOf = (option: ThreadOption, id: string) =>
  Effect.flatMap(Effect.serviceOption(Checkpointer), (checkpointer) => {
    if (Option.isSome(checkpointer)) return Effect.succeed(checkpointer.value)
    const thread = Thread.options(option).id
    const message = `thread "${thread}" needs a Checkpointer in context`
    return Effect.fail(
      failed(id, message, new CheckpointError({ operation: "open", id: ThreadId.logId(thread), message }))
    )
  })

/**
 * Execution `id` on thread `option`, read without the thread's lease: how it
 * started there before, if it did (so that a finished one replays while
 * another run holds the thread), and how to take the lease.
 */
export const run = (option: ThreadOption, id: string): Effect.Effect<Run, ExecutionCheckpointFailed> =>
  Effect.gen(function*() {
    const thread = Thread.options(option)
    const checkpointer = yield* checkpointerOf(option, id)
    const threadFailed = (error: { readonly message: string }) =>
      failed(id, `thread "${thread.id}": ${error.message}`, error)
    const started = yield* Thread.started(thread.id, id).pipe(
      Effect.provideService(Checkpointer, checkpointer),
      Effect.mapError(threadFailed)
    )
    return {
      fingerprint: started === undefined ? undefined : yield* Thread.runFingerprint(started.history),
      open: Thread.open(thread, id, started).pipe(
        Effect.provideService(Checkpointer, checkpointer),
        Effect.catch((error) => Effect.fail(error._tag === "CompactionError" ? error : threadFailed(error))),
        Effect.flatMap((session) =>
          Effect.map(Thread.runFingerprint(session.history), (fingerprint): Session => ({
            history: session.history,
            fingerprint,
            finished: (items) => Effect.mapError(session.finished(items), threadFailed)
          }))
        )
      )
    }
  })
