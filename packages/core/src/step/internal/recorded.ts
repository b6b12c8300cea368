/**
 * What the earlier executions of a step program recorded in its ledger: its
 * entries read (each state brought to the program's version) and folded into
 * the steps that completed, the contexts saved, the `llm` steps' answered
 * turns and their calls, the `tool` steps that started their tool, the
 * program's output, and what the execution replays (see `replay.ts`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import type { Cost } from "../../Cost.ts"
import type * as Item from "../../Item.ts"
import type * as ToolRecord from "../../ToolRecord.ts"
import type * as Turn from "../../Turn.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import type * as StepEvent from "../StepEvent.ts"
import { failed, undecodable } from "./checkpointFailed.ts"
import * as Entries from "./entries.ts"
import * as Replay from "./replay.ts"

/** A step that completed: its output, the context it left, and whether its `Completed` was streamed (and so replays). */
export interface CompletedStep {
  readonly output: Entries.Output
  readonly context: Entries.Restorable
  readonly streamed: boolean
}

/**
 * The turn an `llm` step's model answered, which the step did not complete:
 * its cost, the calls of it that ended, by index, and those that started (of
 * tools that are not idempotent).
 */
export interface ResumableTurn {
  readonly turn: Turn.Turn
  readonly cost: Cost
  readonly done: ReadonlyMap<number, ToolRecord.ToolRecord>
  readonly started: ReadonlySet<number>
}

/** What a ledger recorded, by the step (its execution and key) it tells about. */
export interface Recorded {
  /** The output recorded for the step `key` of `execution`, with the context it left, if it completed. */
  readonly completed: (execution: string, key: string) => CompletedStep | undefined
  /** The context the step `key` of `execution` last saved with `checkpoint()`, if it did and did not complete. */
  readonly saved: (execution: string, key: string) => Entries.Restorable | undefined
  /** Whether the `tool` step `key` of `execution` (of a tool that is not idempotent) started its tool and did not complete. */
  readonly toolStepStarted: (execution: string, key: string) => boolean
  /** The turn the `llm` step `key` of `execution` was answered, if it was and the step did not complete. */
  readonly answered: (execution: string, key: string) => ResumableTurn | undefined
  /** The program's output, when it ended. */
  readonly finished: Entries.Output | undefined
  /** The events the ledger replays, in order (none unless it was folded to be streamed). */
  readonly replayed: ReadonlyArray<StepEvent.StepEvent>
  /**
   * The identities (see `Marks.identity`) of the replayed events that the
   * execution may make again as it goes on: each is neither streamed nor
   * recorded again, and is taken out once made.
   */
  readonly awaited: Set<string>
}

/** A ledger folded: what it recorded, and each execution's context as its last entry left it. */
export interface Folded {
  readonly recorded: Recorded
  readonly contexts: ReadonlyMap<string, Entries.Restorable>
}

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
 * Folds the ledger `entries` of execution `id` (written at the program's
 * state's `versioning`); `streamed` says whether the execution is streamed,
 * and so replays its events.
 */
export const fold = (
  id: string,
  entries: ReadonlyArray<string>,
  versioning: CheckpointVersion.Versioning | undefined,
  streamed: boolean
): Effect.Effect<Folded, ExecutionCheckpointFailed> =>
  Effect.gen(function*() {
    const completed = new Map<string, CompletedStep>()
    const saved = new Map<string, Entries.Restorable>()
    const answered = new Map<string, ResumableTurn>()
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
    for (const text of entries) {
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
    const recorded: Recorded = {
      completed: (execution, key) => completed.get(`${execution}|${key}`),
      saved: (execution, key) => saved.get(`${execution}|${key}`),
      toolStepStarted: (execution, key) =>
        startedSteps.has(`${execution}|${key}`) && !completed.has(`${execution}|${key}`),
      answered: (execution, key) =>
        completed.has(`${execution}|${key}`) ? undefined : answered.get(`${execution}|${key}`),
      finished,
      replayed: replay.events(),
      awaited: replay.awaited()
    }
    return { recorded, contexts }
  })
