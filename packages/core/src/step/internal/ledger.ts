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
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as AgentCheckpoint from "../../agent/AgentCheckpoint.ts"
import type { Checkpointer } from "../../Checkpointer.ts"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import { Cost } from "../../Cost.ts"
import { idempotencyKey } from "../../internal/sha256.ts"
import type * as Item from "../../Item.ts"
import type * as RunFingerprint from "../../RunFingerprint.ts"
import { StepMeta } from "../../StepMeta.ts"
import { TokenUsage } from "../../TokenUsage.ts"
import * as ToolRecord from "../../ToolRecord.ts"
import * as Turn from "../../Turn.ts"
import { RecordedError } from "../ExecutionContext.ts"
import { ExecutionCheckpointFailed } from "../StepError.ts"
import type { Execution } from "./execution.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** An execution's context, as the ledger writes it. */
const Context = Schema.Struct({
  log: AgentCheckpoint.HistoryChange,
  state: Schema.optionalKey(Schema.Json),
  tokens: TokenUsage,
  cost: Cost,
  stepCount: Count,
  turns: Count,
  spawns: Schema.Record(Schema.String, Count),
  lastStepMeta: Schema.NullOr(StepMeta),
  errors: Schema.Array(RecordedError)
})
type Context = typeof Context.Type

/** When an entry was written, in epoch milliseconds (absent from entries written before 0.2.0). */
const Time = Schema.optionalKey(Schema.Finite)

/** A step's output as the ledger writes it: its JSON, and the output version of its tool (a `tool` step's) when it declares one. */
const Output = { output: Schema.Json, outputVersion: Schema.optionalKey(CheckpointVersion.Version) }

/** A step's output, recorded. */
export interface Output {
  readonly output: Schema.Json
  readonly outputVersion?: number
}

/** A step's output to record: it is checked to be JSON when it is written. */
export interface Unwritten {
  readonly output: unknown
  readonly outputVersion?: number
}

const outputOf = (entry: Output): Output =>
  entry.outputVersion === undefined
    ? { output: entry.output }
    : { output: entry.output, outputVersion: entry.outputVersion }

const Entry = Schema.Union([
  Schema.TaggedStruct("Completed", {
    execution: Schema.String,
    key: Schema.String,
    ...Output,
    context: Context,
    time: Time
  }),
  Schema.TaggedStruct("Saved", { execution: Schema.String, key: Schema.String, context: Context, time: Time }),
  // An `llm` step's turn, once the model answered it, each call of a tool that is not idempotent as it
  // started, and each of its calls as it ended.
  Schema.TaggedStruct("Answered", {
    execution: Schema.String,
    key: Schema.String,
    turn: Turn.Turn,
    cost: Cost,
    time: Time
  }),
  Schema.TaggedStruct("ToolStarted", { execution: Schema.String, key: Schema.String, index: Count, time: Time }),
  Schema.TaggedStruct("ToolDone", {
    execution: Schema.String,
    key: Schema.String,
    index: Count,
    record: ToolRecord.ToolRecord,
    time: Time
  }),
  Schema.TaggedStruct("Finished", { ...Output, time: Time })
])

/** An entry of the ledger. */
export type Entry = typeof Entry.Type

const decodeEntry = Schema.decodeUnknownEffect(Entry)
const encodeEntry = Schema.encodeUnknownEffect(Entry)
const decodeJson = Schema.decodeUnknownEffect(Schema.Json)

/** An entry of the ledger as it was written: the entry, and the version of the program's state it was written at. */
export interface Versioned {
  readonly entry: Entry
  readonly version: number
}

/** Reads an entry of the ledger as it was written (its state not migrated). */
export const decode = (text: string): Effect.Effect<Versioned, Schema.SchemaError> =>
  Effect.flatMap(
    CheckpointVersion.parse(text),
    (recorded) => Effect.map(decodeEntry(recorded.json), (entry) => ({ entry, version: recorded.version }))
  )

/** Writes an entry of the ledger at `version`. */
export const encode = ({ entry, version }: Versioned): Effect.Effect<string, Schema.SchemaError> =>
  Effect.map(encodeEntry(entry), (json) => CheckpointVersion.format(version, json))

/** A context to write: its state is checked to be JSON when it is written. */
type Unchecked = Omit<Context, "state"> & { readonly state?: unknown }

/** A context as it was, item log whole, ready to be put back. */
export interface Restorable extends Omit<Context, "log"> {
  readonly items: ReadonlyArray<Item.Item>
}

/**
 * Reads the contexts of a ledger's entries in order: each one whole, its item
 * log rebuilt from the one its execution wrote before. `logs` is each
 * execution's item log as last read.
 */
export const reader =
  (logs: Map<string, ReadonlyArray<Item.Item>> = new Map()) => (execution: string, context: Context): Restorable => {
    const items = AgentCheckpoint.apply(logs.get(execution) ?? [], context.log)
    logs.set(execution, items)
    const { log: _, ...rest } = context
    return { ...rest, items }
  }

/** The turn an `llm` step's model answered, the calls of it that ended, by index, and those that started (not idempotent). */
export interface Answered {
  readonly turn: Turn.Turn
  readonly cost: Cost
  readonly done: ReadonlyMap<number, ToolRecord.ToolRecord>
  readonly started: ReadonlySet<number>
}

/** The ledger of one execution id. */
export interface Ledger {
  /** The output recorded for the step `key` of `execution`, with the context it left, if it completed. */
  readonly completed: (
    execution: string,
    key: string
  ) => { readonly output: Output; readonly context: Restorable } | undefined
  /** The context the step `key` of `execution` last saved with `checkpoint()`, if it did and did not complete. */
  readonly saved: (execution: string, key: string) => Restorable | undefined
  /** Whether the `tool` step `key` of `execution` (of a tool that is not idempotent) started its tool and did not complete. */
  readonly toolStepStarted: (execution: string, key: string) => boolean
  /** The turn the `llm` step `key` of `execution` was answered, if it was and the step did not complete. */
  readonly answered: (execution: string, key: string) => Answered | undefined
  /** The program's output, when it ended. */
  readonly finished: Output | undefined
  readonly answer: (
    execution: string,
    key: string,
    turn: Turn.Turn,
    cost: Cost
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
  readonly toolDone: (
    execution: string,
    key: string,
    index: number,
    record: ToolRecord.ToolRecord
  ) => Effect.Effect<void, ExecutionCheckpointFailed>
  /** The `Tool.IdempotencyKey` of call `index` of the `llm` step `key` of `execution`: the same in every execution. */
  readonly idempotencyKey: (execution: string, key: string, index: number) => Effect.Effect<string>
  /** Records the step `key` as completed with `output` (checked to be JSON as it is written). */
  readonly complete: (
    execution: Execution<unknown>,
    key: string,
    output: Unwritten
  ) => Effect.Effect<void, ExecutionCheckpointFailed>
  readonly save: (execution: Execution<unknown>, key: string) => Effect.Effect<void, ExecutionCheckpointFailed>
  readonly finish: (output: Unwritten) => Effect.Effect<void, ExecutionCheckpointFailed>
}

/** A checkpoint of execution `id` that could not be written or read. */
export const failed = (id: string, message: string, cause?: unknown): ExecutionCheckpointFailed =>
  new ExecutionCheckpointFailed({ executionId: id, message, ...(cause === undefined ? {} : { cause }) })

/**
 * An entry of execution `id`'s ledger, its context's state as version
 * `versioning` of the program's state reads it.
 */
const read = (id: string, text: string, versioning: CheckpointVersion.Versioning | undefined) =>
  Effect.gen(function*() {
    const recorded = yield* CheckpointVersion.parse(text)
    const entry = yield* decodeEntry(recorded.json)
    if (
      recorded.version === (versioning?.version ?? CheckpointVersion.first) ||
      (entry._tag !== "Completed" && entry._tag !== "Saved") || entry.context.state === undefined
    ) return entry
    const state = yield* CheckpointVersion.migrate({
      subject: `the state of execution "${id}"`,
      versioning,
      recorded: recorded.version,
      value: entry.context.state
    }).pipe(Effect.flatMap(decodeJson))
    return { ...entry, context: { ...entry.context, state } }
  }).pipe(
    Effect.mapError((error) =>
      error._tag === "CheckpointVersionMismatch"
        ? failed(id, error.message, error)
        : failed(id, `the checkpoint of "${id}" does not decode: ${error.message}`, error)
    )
  )

/**
 * Opens the ledger of execution `id` with its fingerprint, holding its lease
 * until the scope closes: what its earlier executions recorded, and how to
 * record more. `versioning` is the program's state's.
 */
export const load = (
  checkpointer: Checkpointer["Service"],
  id: string,
  fingerprint: RunFingerprint.Fingerprint,
  versioning: CheckpointVersion.Versioning | undefined
): Effect.Effect<Ledger, ExecutionCheckpointFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const log = yield* checkpointer.open(id, fingerprint).pipe(
      Effect.mapError((error) => failed(id, error.message, error))
    )
    const texts = log.entries
    const completed = new Map<string, { readonly output: Output; readonly context: Restorable }>()
    const saved = new Map<string, Restorable>()
    const answered = new Map<string, Answered>()
    /** The `tool` steps that started their tool: a `ToolStarted` of no answered turn. */
    const startedSteps = new Set<string>()
    const logs = new Map<string, ReadonlyArray<Item.Item>>()
    let finished: Output | undefined
    const restorable = reader(logs)
    for (const text of texts) {
      const entry = yield* read(id, text, versioning)
      switch (entry._tag) {
        case "Completed":
          completed.set(`${entry.execution}|${entry.key}`, {
            output: outputOf(entry),
            context: restorable(entry.execution, entry.context)
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
          finished = outputOf(entry)
          break
      }
    }

    // What the item log of each execution was when last written: the base of the next change.
    const written = new Map(logs)
    const context = (execution: Execution<unknown>): Unchecked => {
      const items = execution.itemLog.items
      const state = execution.getState()
      const context: Unchecked = {
        log: AgentCheckpoint.change(written.get(execution.id) ?? [], items),
        ...(state === undefined ? {} : { state }),
        tokens: execution.tokens,
        cost: execution.cost,
        stepCount: execution.stepCount,
        turns: execution.turns,
        spawns: Object.fromEntries(execution.spawns),
        lastStepMeta: execution.lastStepMeta,
        errors: execution.errors
      }
      written.set(execution.id, items)
      return context
    }
    const version = versioning?.version ?? CheckpointVersion.first
    // Entries are checked as they are encoded: an output or a state that is not JSON fails here.
    const write = (entry: { readonly _tag: Entry["_tag"] } & Record<string, unknown>, finished = false) =>
      Clock.currentTimeMillis.pipe(
        Effect.flatMap((time) => encodeEntry({ ...entry, time })),
        Effect.map((json) => CheckpointVersion.format(version, json)),
        Effect.mapError((error) =>
          failed(
            id,
            `the checkpoint of "${id}" could not be encoded (step outputs and the state must be JSON): ${error.message}`,
            error
          )
        ),
        Effect.flatMap((text) =>
          log.append([text], { finished }).pipe(Effect.mapError((error) => failed(id, error.message, error)))
        ),
        Effect.uninterruptible
      )

    return {
      completed: (execution, key) => completed.get(`${execution}|${key}`),
      saved: (execution, key) => saved.get(`${execution}|${key}`),
      toolStepStarted: (execution, key) =>
        startedSteps.has(`${execution}|${key}`) && !completed.has(`${execution}|${key}`),
      answered: (execution, key) =>
        completed.has(`${execution}|${key}`) ? undefined : answered.get(`${execution}|${key}`),
      finished,
      answer: (execution, key, turn, cost) => write({ _tag: "Answered", execution, key, turn, cost }),
      toolStarted: (execution, key, index) => write({ _tag: "ToolStarted", execution, key, index }),
      toolDone: (execution, key, index, record) => write({ _tag: "ToolDone", execution, key, index, record }),
      idempotencyKey: (execution, key, index) => idempotencyKey(id, `${execution}|${key}/tool/${index}`),
      complete: (execution, key, output) =>
        Effect.suspend(() =>
          write({ _tag: "Completed", execution: execution.id, key, ...output, context: context(execution) })
        ),
      save: (execution, key) =>
        Effect.suspend(() => write({ _tag: "Saved", execution: execution.id, key, context: context(execution) })),
      // The program's output: the store marks the execution finished, and `prune` with `keep: "result"` keeps
      // this entry alone (an execution whose ledger holds only it returns its output without running).
      finish: (output) => write({ _tag: "Finished", ...output }, true)
    }
  })

/** Puts a recorded context back into `execution`. */
export const restore = (execution: Execution<unknown>, context: Restorable): void => {
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
