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
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type { Accounting } from "../../Accounting.ts"
import * as AgentCheckpoint from "../../agent/AgentCheckpoint.ts"
import type { Checkpointer } from "../../Checkpointer.ts"
import type { Log } from "../../CheckpointStore.ts"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import type { Cost } from "../../Cost.ts"
import * as GroupCommit from "../../internal/groupCommit.ts"
import { idempotencyKey } from "../../internal/sha256.ts"
import type * as Item from "../../Item.ts"
import type * as RunFingerprint from "../../RunFingerprint.ts"
import type * as ToolRecord from "../../ToolRecord.ts"
import type * as Turn from "../../Turn.ts"
import { ExecutionCheckpointFailed } from "../StepError.ts"
import type * as StepEvent from "../StepEvent.ts"
import * as Entries from "./entries.ts"
import type { Execution } from "./execution.ts"
import * as Journal from "./journal.ts"
import type * as Marks from "./marks.ts"
import * as Replay from "./replay.ts"

export {
  /** A step's output, recorded. */
  type Output,
  /** A context as it was, item log whole, ready to be put back. */
  type Restorable,
  /** A step's output to record. */
  type Unwritten
} from "./entries.ts"

/** A context to write: its state is checked to be JSON when it is written. */
type Unchecked = Omit<Entries.Context, "state"> & { readonly state?: unknown }

/** The turn an `llm` step's model answered, the calls of it that ended, by index, and those that started (not idempotent). */
export interface Answered {
  readonly turn: Turn.Turn
  readonly cost: Cost
  readonly done: ReadonlyMap<number, ToolRecord.ToolRecord>
  readonly started: ReadonlySet<number>
}

/** A step that completed: its output, the context it left, and whether its `Completed` was streamed (and so replays). */
export interface Recorded {
  readonly output: Entries.Output
  readonly context: Entries.Restorable
  readonly streamed: boolean
}

/** What an `llm` step's answered turn tells besides the turn: its number and, when its `TurnCompleted` is streamed, what that says. */
export interface Told {
  readonly step: number
  readonly completed?: {
    readonly accounting: Accounting
    /** The item log the turn was asked with. */
    readonly logged: ReadonlyArray<Item.Item>
  } | undefined
}

/** The ledger of one execution id. */
export interface Ledger {
  /** The output recorded for the step `key` of `execution`, with the context it left, if it completed. */
  readonly completed: (execution: string, key: string) => Recorded | undefined
  /** The context the step `key` of `execution` last saved with `checkpoint()`, if it did and did not complete. */
  readonly saved: (execution: string, key: string) => Entries.Restorable | undefined
  /** Whether the `tool` step `key` of `execution` (of a tool that is not idempotent) started its tool and did not complete. */
  readonly toolStepStarted: (execution: string, key: string) => boolean
  /** The turn the `llm` step `key` of `execution` was answered, if it was and the step did not complete. */
  readonly answered: (execution: string, key: string) => Answered | undefined
  /** The program's output, when it ended. */
  readonly finished: Entries.Output | undefined
  /** The events the ledger replays, in order (none unless it was loaded to be streamed). */
  readonly replayed: ReadonlyArray<StepEvent.StepEvent>
  /**
   * The identities (see `Marks.identity`) of the replayed events that the
   * execution may make again as it goes on: each is neither streamed nor
   * recorded again, and is taken out once made.
   */
  readonly awaited: Set<string>
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
  /** Tells that an event {@link Ledger.placed} reached the stream. */
  readonly delivered: (event: StepEvent.StepEvent) => void
  /**
   * Tells that the step `key` of `execution` ended: the events its entries
   * stand for that did not reach the stream are recorded as not streamed.
   */
  readonly ended: (execution: string, key: string) => void
  readonly answer: (
    execution: string,
    key: string,
    turn: Turn.Turn,
    cost: Cost,
    told: Told
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
  /** The `Tool.IdempotencyKey` of call `index` of the `llm` step `key` of `execution`: the same in every execution. */
  readonly idempotencyKey: (execution: string, key: string, index: number) => Effect.Effect<string>
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
  readonly save: (execution: Execution<unknown>, key: string) => Effect.Effect<void, ExecutionCheckpointFailed>
  readonly finish: (output: Entries.Unwritten) => Effect.Effect<void, ExecutionCheckpointFailed>
}

/** A checkpoint of execution `id` that could not be written or read. */
export const failed = (id: string, message: string, cause?: unknown): ExecutionCheckpointFailed =>
  new ExecutionCheckpointFailed({ executionId: id, message, ...(cause === undefined ? {} : { cause }) })

const undecodable = (id: string, reason: string, cause?: unknown) =>
  failed(id, `the checkpoint of "${id}" does not decode: ${reason}`, cause)

/**
 * An entry of execution `id`'s ledger, its context's state as version
 * `versioning` of the program's state reads it.
 */
const read = (id: string, text: string, versioning: CheckpointVersion.Versioning | undefined) =>
  Effect.gen(function*() {
    const recorded = yield* CheckpointVersion.parse(text)
    const entry = yield* Entries.decodeEntry(recorded.json)
    if (
      recorded.version === (versioning?.version ?? CheckpointVersion.first) ||
      (entry._tag !== "Completed" && entry._tag !== "Saved") || entry.context.state === undefined
    ) return entry
    const state = yield* CheckpointVersion.migrate({
      subject: `the state of execution "${id}"`,
      versioning,
      recorded: recorded.version,
      value: entry.context.state
    }).pipe(Effect.flatMap(Entries.decodeState))
    return { ...entry, context: { ...entry.context, state } }
  }).pipe(
    Effect.mapError((error) =>
      error._tag === "CheckpointVersionMismatch"
        ? failed(id, error.message, error)
        : undecodable(id, error.message, error)
    )
  )

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

/** An entry to write, less its marks and time; its output and state are checked to be JSON as it is encoded. */
type Unstamped = { readonly _tag: Entries.Entry["_tag"] } & Record<string, unknown>

/**
 * Opens the ledger of execution `id` with its fingerprint, holding its lease
 * until the scope closes: what its earlier executions recorded, and how to
 * record more. `versioning` is the program's state's; `streamed` says whether
 * the execution is streamed (and so its ledger's events are replayed).
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
    const completed = new Map<string, Recorded>()
    const saved = new Map<string, Entries.Restorable>()
    const answered = new Map<string, Answered>()
    /** The `tool` steps that started their tool: a `ToolStarted` of no answered turn. */
    const startedSteps = new Set<string>()
    const logs = new Map<string, ReadonlyArray<Item.Item>>()
    /** Each execution's context as last read. */
    const contexts = new Map<string, Entries.Restorable>()
    let finished: Entries.Output | undefined
    const readContext = Entries.reader(logs)
    const restorable = (execution: string, context: Entries.Context) => {
      const restored = readContext(execution, context)
      contexts.set(execution, restored)
      return restored
    }
    const replay = Replay.make(id, streamed)
    for (const text of log.entries) {
      const entry = yield* read(id, text, versioning)
      switch (entry._tag) {
        case "Completed":
          completed.set(`${entry.execution}|${entry.key}`, {
            output: Entries.outputOf(entry),
            context: restorable(entry.execution, entry.context),
            streamed: entry.kind !== undefined
          })
          break
        case "Saved":
          saved.set(`${entry.execution}|${entry.key}`, restorable(entry.execution, entry.context))
          break
        case "Answered":
          answered.set(`${entry.execution}|${entry.key}`, {
            turn: entry.turn,
            cost: entry.cost,
            done: new Map(),
            started: new Set()
          })
          break
        case "ToolStarted": {
          const turn = answered.get(`${entry.execution}|${entry.key}`)
          if (turn !== undefined) {
            answered.set(`${entry.execution}|${entry.key}`, {
              ...turn,
              started: new Set(turn.started).add(entry.index)
            })
          } else {
            startedSteps.add(`${entry.execution}|${entry.key}`)
          }
          break
        }
        case "ToolDone": {
          const turn = answered.get(`${entry.execution}|${entry.key}`)
          if (turn !== undefined) {
            answered.set(`${entry.execution}|${entry.key}`, {
              ...turn,
              done: new Map(turn.done).set(entry.index, entry.record)
            })
          }
          break
        }
        case "Finished":
          finished = Entries.outputOf(entry)
          break
        case "Streamed":
          break
      }
      const unreadable = replay.add(entry, contexts)
      if (unreadable !== undefined) return yield* undecodable(id, unreadable)
    }

    // What the item log and books of each execution were when last written: the base of the next change, and what
    // a turn's record is told against.
    const written = new Map<string, Replay.Before>(contexts)
    const context = (execution: Execution<unknown>): Unchecked => {
      const items = execution.itemLog.items
      const state = execution.getState()
      const context: Unchecked = {
        log: AgentCheckpoint.change(written.get(execution.id)?.items ?? [], items),
        ...(state === undefined ? {} : { state }),
        tokens: execution.tokens,
        cost: execution.cost,
        stepCount: execution.stepCount,
        turns: execution.turns,
        spawns: Object.fromEntries(execution.spawns),
        lastStepMeta: execution.lastStepMeta,
        errors: execution.errors
      }
      written.set(execution.id, { items, tokens: execution.tokens, cost: execution.cost })
      return context
    }
    const journal = Journal.make()
    const version = versioning?.version ?? CheckpointVersion.first
    const clock = yield* Clock.Clock
    const appends = GroupCommit.queue((texts: ReadonlyArray<string>, group) =>
      appendGroup(log, texts, group).pipe(Effect.mapError((error) => failed(id, error.message, error)))
    )
    /**
     * Writes the entry `make` builds, with the events noted before it: its
     * context and its marks are taken, and the entry queued, in one
     * synchronous step, so the entries land in the order they were built (each
     * context's item log is a change from the one built before it, and the
     * marks are the events noted since). `stands` is the event the entry
     * stands for, when it is to be streamed.
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
      completed: (execution, key) => completed.get(`${execution}|${key}`),
      saved: (execution, key) => saved.get(`${execution}|${key}`),
      toolStepStarted: (execution, key) =>
        startedSteps.has(`${execution}|${key}`) && !completed.has(`${execution}|${key}`),
      answered: (execution, key) =>
        completed.has(`${execution}|${key}`) ? undefined : answered.get(`${execution}|${key}`),
      finished,
      replayed: replay.events(),
      awaited: replay.awaited(),
      note: (noted) => {
        journal.note(noted)
        return journal.pending < Journal.pendingBound
          ? Effect.void
          : write({ execution: id }, () => ({ _tag: "Streamed" }))
      },
      placed: journal.placed,
      delivered: journal.delivered,
      ended: journal.ended,
      answer: (execution, key, turn, cost, told) =>
        write({ execution, key }, () => ({
          _tag: "Answered",
          execution,
          key,
          turn,
          cost,
          step: told.step,
          ...(told.completed === undefined ? {} : {
            turnCompleted: Replay.told(
              written.get(execution) ?? Replay.nothingBefore,
              { turn, cost, step: told.step },
              told.completed.accounting,
              told.completed.logged
            )
          })
        }), {
          stands: told.completed === undefined
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
      idempotencyKey: (execution, key, index) => idempotencyKey(id, `${execution}|${key}/tool/${index}`),
      complete: (execution, key, output, event) =>
        write({ execution: execution.id, key }, () => ({
          _tag: "Completed",
          execution: execution.id,
          key,
          ...output,
          context: context(execution),
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
          () => ({ _tag: "Saved", execution: execution.id, key, context: context(execution) })
        ),
      // The program's output: the store marks the execution finished, and `prune` with `keep: "result"` keeps
      // this entry alone (an execution whose ledger holds only it returns its output without running).
      finish: (output) => write({ execution: id }, () => ({ _tag: "Finished", ...output }), { finished: true })
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
