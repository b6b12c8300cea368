/**
 * How a step program's ledger records: an entry for each step that
 * completes, each context `checkpoint()` saves, each `llm` turn answered and
 * each of its calls as it starts (not idempotent) and ends, and the
 * program's output; each with the events the program streamed since the
 * entry before (its marks, see `journal.ts`).
 *
 * An entry is built, its marks taken and the entry queued in one synchronous
 * step, so the entries land in the order they were built, whatever runs at
 * once (paths of a fork, calls of a turn): each context's item log is a
 * change from the one built before it (see `written.ts`), and the marks are
 * the events noted since.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { Accounting } from "../../Accounting.ts"
import type { Log } from "../../CheckpointStore.ts"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import type { Cost } from "../../Cost.ts"
import * as GroupCommit from "../../internal/groupCommit.ts"
import type * as Item from "../../Item.ts"
import type * as ToolRecord from "../../ToolRecord.ts"
import type * as Turn from "../../Turn.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import type * as StepEvent from "../StepEvent.ts"
import { failed } from "./checkpointFailed.ts"
import * as Entries from "./entries.ts"
import type { Execution } from "./execution.ts"
import * as Journal from "./journal.ts"
import type * as Marks from "./marks.ts"
import * as Replay from "./replay.ts"
import type { Written } from "./written.ts"

/**
 * What an `llm` step's answered turn records besides the turn and its cost:
 * its number and, when its `TurnCompleted` is streamed, what that says.
 */
export interface TurnRecord {
  readonly step: number
  readonly completed?: {
    readonly accounting: Accounting
    /** The item log the turn was asked with. */
    readonly logged: ReadonlyArray<Item.Item>
  } | undefined
}

/** How a ledger records. */
export interface Writer {
  /**
   * Notes an event the program streams, to be recorded with the next entry
   * (see `Marks`); it writes the events noted in an entry of their own once
   * `Journal.pendingBound` wait.
   */
  readonly note: (noted: Marks.Noted) => Effect.Effect<void, ExecutionCheckpointFailed>
  /**
   * Tells that the event an entry stands for (a step's `Completed`, a
   * `TurnCompleted`, a `ToolResult`) is streamed now: when other events came
   * since its entry was written, a reference with the next entry says where.
   */
  readonly placed: (event: StepEvent.StepEvent) => void
  /** Tells that an event {@link Writer.placed} reached the stream. */
  readonly delivered: (event: StepEvent.StepEvent) => void
  /**
   * Tells that the step `key` of `execution` ended: the events its entries
   * stand for that did not reach the stream are recorded as not streamed.
   */
  readonly ended: (execution: string, key: string) => void
  /** Records the turn the model answered the `llm` step `key` of `execution` with. */
  readonly answer: (
    execution: string,
    key: string,
    turn: Turn.Turn,
    cost: Cost,
    record: TurnRecord
  ) => Effect.Effect<void, ExecutionCheckpointFailed>
  /**
   * Records that call `index` of the `llm` step `key` of `execution` (of a
   * tool that is not idempotent) is about to run; for a `tool` step, its one call, index 0.
   */
  readonly toolStarted: (
    execution: string,
    key: string,
    index: number
  ) => Effect.Effect<void, ExecutionCheckpointFailed>
  /** Records that call `index` ended with `record`; `streamed` says whether its `ToolResult` is streamed. */
  readonly toolDone: (
    execution: string,
    key: string,
    index: number,
    record: ToolRecord.ToolRecord,
    streamed: boolean
  ) => Effect.Effect<void, ExecutionCheckpointFailed>
  /**
   * Records the step `key` as completed with `output` (checked to be JSON as
   * it is written); `event` is its `Completed` event when it is streamed.
   */
  readonly complete: (
    execution: Execution<unknown>,
    key: string,
    output: Entries.Unwritten,
    event: StepEvent.Completed | undefined
  ) => Effect.Effect<void, ExecutionCheckpointFailed>
  /** Records the context of `execution` that the step `key` saves with `checkpoint()`. */
  readonly save: (execution: Execution<unknown>, key: string) => Effect.Effect<void, ExecutionCheckpointFailed>
  /** Records the program's output: the execution is finished. */
  readonly finish: (output: Entries.Unwritten) => Effect.Effect<void, ExecutionCheckpointFailed>
}

/** An entry to write, less its marks and time; its output and state are checked to be JSON as it is encoded. */
type Unstamped = { readonly _tag: Entries.Entry["_tag"] } & Record<string, unknown>

/**
 * Writes a group of a ledger's entries to its log, in one append; the
 * program's output, when it ends the group, in an append of its own that
 * finishes the execution (so that `prune` with `keep: "result"` keeps it
 * alone).
 */
const appendGroup = (log: Log, texts: ReadonlyArray<string>, group: GroupCommit.Group) => {
  const result = group.finished ?? 0
  const before = texts.slice(0, texts.length - result)
  const appended = before.length === 0 ? Effect.void : log.append(before)
  return result === 0 ? appended : Effect.andThen(appended, log.append(texts.slice(before.length), { finished: true }))
}

/**
 * The writer of execution `id`'s ledger, open as `log`: its entries carry
 * version `version` of the program's state and the time by `clock`, and its
 * contexts are written as changes from `written`.
 */
export const make = (options: {
  readonly id: string
  readonly log: Log
  readonly version: number
  readonly clock: Clock.Clock
  readonly written: Written
}): Writer => {
  const { clock, id, log, version, written } = options
  const journal = Journal.make()
  const appends = GroupCommit.queue((texts: ReadonlyArray<string>, group) =>
    appendGroup(log, texts, group).pipe(Effect.mapError((error) => failed(id, error.message, error)))
  )
  /**
   * Writes the entry `make` builds at `place`, with the events noted before
   * it, built and queued at once; `stands` is the event the entry stands for,
   * when it is to be streamed.
   */
  const write = (
    place: Marks.Place,
    make: () => Unstamped,
    options?: {
      readonly finished?: boolean | undefined
      readonly stands?: { readonly by: object; readonly reference: Marks.Reference } | undefined
    }
  ) =>
    Effect.uninterruptible(Effect.suspend(() => {
      const entry = make()
      const events = journal.take(place, options?.stands)
      // Entries are checked as they are encoded: an output or a state that is not JSON fails here.
      const encoded = Entries.encodeEntry({
        ...entry,
        ...(events.length === 0 ? {} : { events }),
        time: clock.currentTimeMillisUnsafe()
      })
      if (Result.isFailure(encoded)) {
        return Effect.fail(failed(
          id,
          `the checkpoint of "${id}" could not be encoded (step outputs and the state must be JSON): ${encoded.failure.message}`,
          encoded.failure
        ))
      }
      return appends.push([CheckpointVersion.format(version, encoded.success)], {
        finished: options?.finished ?? false
      })
    }))

  return {
    note: (noted) => {
      journal.note(noted)
      return journal.pending < Journal.pendingBound
        ? Effect.void
        : write({ execution: id }, () => ({ _tag: "Streamed" }))
    },
    placed: journal.placed,
    delivered: journal.delivered,
    ended: journal.ended,
    answer: (execution, key, turn, cost, record) =>
      write({ execution, key }, () => ({
        _tag: "Answered",
        execution,
        key,
        turn,
        cost,
        step: record.step,
        ...(record.completed === undefined ? {} : {
          turnCompleted: Replay.recordedAccounting(
            written.before(execution),
            { turn, cost, step: record.step },
            record.completed.accounting,
            record.completed.logged
          )
        })
      }), {
        stands: record.completed === undefined
          ? undefined
          : { by: turn, reference: { ref: "TurnCompleted", execution, key } }
      }),
    toolStarted: (execution, key, index) =>
      write({ execution, key }, () => ({ _tag: "ToolStarted", execution, key, index })),
    toolDone: (execution, key, index, record, streamed) =>
      write(
        { execution, key },
        () => ({ _tag: "ToolDone", execution, key, index, record, ...(streamed ? {} : { hidden: true }) }),
        {
          stands: streamed ? { by: record.call, reference: { ref: "ToolResult", execution, key, index } } : undefined
        }
      ),
    complete: (execution, key, output, event) =>
      write({ execution: execution.id, key }, () => ({
        _tag: "Completed",
        execution: execution.id,
        key,
        ...output,
        context: written.context(execution),
        // The context holds the meta of the step that reported last: the step's own, unless a step beside it
        // reported since.
        ...(event === undefined ? {} : {
          kind: event.kind,
          ...(event.meta === undefined || event.meta === execution.lastStepMeta ? {} : { meta: event.meta })
        })
      }), {
        stands: event === undefined
          ? undefined
          : { by: event, reference: { ref: "Completed", execution: execution.id, key } }
      }),
    save: (execution, key) =>
      write(
        { execution: execution.id, key },
        () => ({ _tag: "Saved", execution: execution.id, key, context: written.context(execution) })
      ),
    // The program's output: the store marks the execution finished, and `prune` with `keep: "result"` keeps
    // this entry alone (an execution whose ledger holds only it returns its output without running).
    finish: (output) => write({ execution: id }, () => ({ _tag: "Finished", ...output }), { finished: true })
  }
}
