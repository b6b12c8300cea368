/**
 * What an `AgentLoop` run records in a `Checkpointer`, and how a run is
 * recovered from it.
 *
 * A run with a `runId` appends, per turn: `Answered` once the model's turn is
 * complete (the turn, its cost, and how the history changed), `ToolStarted`
 * as a call of a tool that is not idempotent starts, `ToolDone` as each tool
 * call ends, and `Decided` once the turn's decision is made (the counters and
 * what the decision added to the history); a run that ends well appends
 * `Finished` with its result. Entries carry what changed, never the whole
 * history again. Recovering folds the entries with the run's own
 * `AgentMachine`, so a resumed run is where the crashed one was: between two
 * turns, in the middle of a turn's tools, or finished. In the middle of a
 * turn's tools, a call that ended is not run again; one that started and did
 * not end is not run again either when its tool is not idempotent (its
 * result is `Toolkit.outcomeUnknown`), and is run again, with the same
 * `Tool.IdempotencyKey`, when it is.
 *
 * A run's log is opened with its fingerprint (its input, instructions, tool
 * names and output schema): executing the run again with another one fails
 * with `CheckpointMismatch` instead of mixing two runs' histories. The log's
 * lease is held for as long as the run executes.
 *
 * Each entry carries the version of the schema that wrote it ({@link version};
 * entries written before entries carried one are version 1, read as version
 * 2 is, which only added `ToolStarted`): a run recorded by
 * a version of agentloop whose entries this one cannot read fails with
 * `Termination.CheckpointFailed`, its cause a `CheckpointVersionMismatch`
 * naming both versions, before anything runs. A tool whose output schema
 * changed reads its recorded outputs through its own migrations (the
 * `outputVersioning` option of `Tool.make`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Checkpointer, CheckpointError } from "../Checkpointer.ts"
import type { OpenError } from "../CheckpointStore.ts"
import * as CheckpointVersion from "../CheckpointVersion.ts"
import { Cost } from "../Cost.ts"
import { idempotencyKey } from "../internal/sha256.ts"
import * as Item from "../Item.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import type * as Termination from "../Termination.ts"
import * as Toolkit from "../Toolkit.ts"
import * as ToolRecord from "../ToolRecord.ts"
import * as Turn from "../Turn.ts"
import * as AgentEvent from "./AgentEvent.ts"
import * as AgentMachine from "./AgentMachine.ts"
import type * as AgentTurn from "./AgentTurn.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A history that keeps the first `keep` items of the one before it and appends `append`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const HistoryChange = Schema.Struct({ keep: Count, append: Item.History })
export type HistoryChange = typeof HistoryChange.Type

/**
 * The change from `before` to `after`: their common prefix (the same items, by identity) and what follows it.
 *
 * @example
 * ```ts
 * import { AgentCheckpoint, Item } from "@agentloop/core"
 *
 * // A checkpoint entry stores how a history changed, not the whole history again.
 * const before = [Item.userMessage("Hi")]
 * const after = [...before, Item.assistantMessage("Hello!")]
 * const change = AgentCheckpoint.change(before, after)
 * console.log(change.keep, change.append.length) // 1 1
 * console.log(AgentCheckpoint.apply(before, change).length) // 2
 * ```
 *
 * @since 0.1.0
 * @category checkpoints
 */
export const change = (before: ReadonlyArray<Item.Item>, after: ReadonlyArray<Item.Item>): HistoryChange => {
  let keep = 0
  while (keep < before.length && keep < after.length && before[keep] === after[keep]) keep++
  return { keep, append: after.slice(keep) }
}

/**
 * Applies a change to the history it was taken from.
 *
 * @since 0.1.0
 * @category checkpoints
 */
export const apply = (
  history: ReadonlyArray<Item.Item>,
  change: HistoryChange
): ReadonlyArray<Item.Item> => [...history.slice(0, change.keep), ...change.append]

/**
 * Turn `step` is complete: the model's turn, its cost, and the history it answered plus the turn's items.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Answered = Schema.TaggedStruct("Answered", {
  step: Count,
  turn: Turn.Turn,
  cost: Cost,
  history: HistoryChange
})

/**
 * Call `index` of turn `step` ended with `record`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolDone = Schema.TaggedStruct("ToolDone", { step: Count, index: Count, record: ToolRecord.ToolRecord })

/**
 * Call `index` of turn `step`, of a tool that is not idempotent, is about to
 * run (its approval given, if it needed one). Without a `ToolDone` after it,
 * the call was cut off: a resumed run does not run it again.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ToolStarted = Schema.TaggedStruct("ToolStarted", { step: Count, index: Count })

/**
 * Turn `step` was decided, and the run goes on: the counters, and what the decision added to the history.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Decided = Schema.TaggedStruct("Decided", {
  step: Count,
  history: HistoryChange,
  mistakes: Schema.Array(Schema.String),
  progress: AgentMachine.State.fields.progress,
  repairs: Count
})

/**
 * The schema of the entries of a run whose output `output` describes (`Schema.String` without a structured output).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Entry = <O extends Schema.Top>(output: O) =>
  Schema.Union([
    Answered,
    ToolStarted,
    ToolDone,
    Decided,
    // A submitted value is its finish tool's output: `outputVersion` is the tool's, when it declares one.
    Schema.TaggedStruct("Finished", {
      result: AgentEvent.RunResult(output, Schema.Unknown),
      outputVersion: Schema.optionalKey(CheckpointVersion.Version)
    })
  ])

/**
 * An entry of a run whose output is an `O`.
 *
 * @since 0.2.0
 * @category models
 */
export type EntryOf<O> = ReturnType<typeof Entry<Schema.Codec<O, unknown>>>["Type"]

/**
 * The version of the schema of the entries this version of agentloop writes:
 * 2, which added `ToolStarted`. It reads version 1 too (an entry of version 1
 * is one of version 2), and no other.
 *
 * @since 0.2.0
 * @category versions
 */
export const version = 2

/** Version 2 only added an entry: a version 1 entry is read as it is. */
const versioning: CheckpointVersion.Versioning = {
  version,
  migrations: [CheckpointVersion.migration(CheckpointVersion.first, version, Schema.Unknown)]
}

/**
 * The entries of a run as a `Checkpointer` stores them (text, each with its
 * {@link version}), for a run whose output `output` describes: `decode`
 * reads an entry of any version that reaches this one, and fails with
 * `CheckpointVersionMismatch` for one that does not, before decoding it.
 *
 * @since 0.2.0
 * @category codecs
 */
export const codec = <O>(output: Schema.Codec<O, unknown>, runId: string): {
  readonly encode: (entry: EntryOf<O>) => Effect.Effect<string, Schema.SchemaError>
  readonly decode: (
    text: string
  ) => Effect.Effect<EntryOf<O>, Schema.SchemaError | CheckpointVersion.CheckpointVersionMismatch>
} => {
  const json = Schema.toCodecJson(Entry(output))
  const encode = Schema.encodeEffect(json)
  const decode = Schema.decodeUnknownEffect(json)
  const subject = `an entry of run "${runId}"`
  return {
    encode: (entry) => Effect.map(encode(entry), (encoded) => CheckpointVersion.format(version, encoded)),
    decode: (text) =>
      Effect.flatMap(CheckpointVersion.parse(text), (recorded) =>
        recorded.version === version
          ? decode(recorded.json)
          : Effect.flatMap(
            CheckpointVersion.migrate({ subject, versioning, recorded: recorded.version, value: recorded.json }),
            decode
          ))
  }
}

/**
 * The fingerprint of a run: what shapes its history. Limits are not in it, so
 * a run stopped by a limit may be executed again with a higher one.
 *
 * @since 0.2.0
 * @category fingerprints
 */
export const fingerprint = <R>(options: {
  readonly input: string | ReadonlyArray<Item.Item>
  readonly instructions?: string | undefined
  readonly toolkit?: Toolkit.Toolkit<R> | undefined
  readonly output?: Schema.Top | undefined
}): Effect.Effect<RunFingerprint.Fingerprint> =>
  Effect.gen(function*() {
    const output = options.output
    const schema = output === undefined ? undefined : Effect.try(() => Schema.toJsonSchemaDocument(output))
    return {
      input: yield* RunFingerprint.digest(RunFingerprint.stableJson(options.input)),
      instructions: options.instructions === undefined
        ? "none"
        : yield* RunFingerprint.digest(options.instructions),
      tools: [...(options.toolkit?.byName.keys() ?? [])].join(", "),
      output: schema === undefined ? "text" : yield* schema.pipe(
        Effect.flatMap((document) => RunFingerprint.digest(RunFingerprint.stableJson(document))),
        Effect.orElseSucceed(() => "a schema without a JSON Schema")
      )
    }
  })

/**
 * The answered turn with a result for each call that `started` and did not
 * end: cut off, it is not run again, and its outcome is unknown.
 */
const cutOff = (answered: AgentTurn.Answered, started: ReadonlySet<number>): AgentTurn.Answered => {
  const calls = Turn.functionCalls(answered.completed.turn)
  const lost = [...started].filter((index) => !answered.done.has(index) && calls[index] !== undefined)
  if (lost.length === 0) return answered
  const done = new Map(answered.done)
  for (const index of lost) done.set(index, Toolkit.outcomeUnknown(calls[index]!))
  return { ...answered, done }
}

/**
 * Where a recovered run stands.
 *
 * @since 0.1.0
 * @category models
 */
export type Position<O> =
  | { readonly _tag: "Between"; readonly state: AgentMachine.State }
  | { readonly _tag: "Answered"; readonly state: AgentMachine.State; readonly answered: AgentTurn.Answered }
  | { readonly _tag: "Finished"; readonly result: AgentEvent.RunResult<O> }

/**
 * Why a run's checkpoint could not be used: it did not decode, a recorded tool
 * result could not be restored, or a record's version is not one this app
 * reads.
 *
 * @since 0.1.0
 * @category models
 */
export type RecoveryError =
  | Schema.SchemaError
  | ToolRecord.RestoreFailed
  | CheckpointVersion.CheckpointVersionMismatch

/**
 * Writes a run's entries, and recovers a run from them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Recorder<O> {
  /** Where the run stands according to its log: `initial` when it has none. */
  readonly recover: (
    initial: AgentMachine.State
  ) => Effect.Effect<Position<O>, RecoveryError | Termination.MaxBudgetUsd | Termination.UnpricedModel>
  readonly answered: (state: AgentMachine.State, completed: AgentTurn.Completed) => Effect.Effect<void, CheckpointError>
  /** Records that call `index` of turn `step` (of a tool that is not idempotent) is about to run. */
  readonly toolStarted: (step: number, index: number) => Effect.Effect<void, CheckpointError>
  readonly toolDone: (step: number, index: number, result: Toolkit.Result) => Effect.Effect<void, CheckpointError>
  /** The `Tool.IdempotencyKey` of call `index` of turn `step`: the same in every execution of the run. */
  readonly idempotencyKey: (step: number, index: number) => Effect.Effect<string>
  readonly decided: (
    outcome: AgentTurn.Outcome,
    transition: AgentMachine.Transition<O>
  ) => Effect.Effect<void, CheckpointError>
}

/**
 * The recorder of run `runId` in the `Checkpointer` in context: opens the
 * run's log with `fingerprint`, holding its lease until the scope closes.
 * `output` is the schema of the run's output; `toolkit` restores recorded
 * tool results.
 *
 * @since 0.1.0
 * @category checkpoints
 */
export const recorder = <O, R, RU, TR>(options: {
  readonly runId: string
  readonly fingerprint: RunFingerprint.Fingerprint
  readonly machine: AgentMachine.Machine<O, R, RU>
  readonly output: Schema.Codec<O, unknown>
  readonly toolkit: Toolkit.Toolkit<TR> | undefined
}): Effect.Effect<Recorder<O>, OpenError, Checkpointer | Scope.Scope> =>
  Effect.map(
    Effect.flatMap(Checkpointer, (checkpointer) => checkpointer.open(options.runId, options.fingerprint)),
    (log): Recorder<O> => {
      const { machine, runId } = options
      const { decode, encode } = codec(options.output, runId)
      const write = (value: EntryOf<O>, durable = true) =>
        encode(value).pipe(
          Effect.mapError((error) =>
            new CheckpointError({
              operation: "append",
              id: runId,
              message: `an entry of run "${runId}" could not be encoded: ${error.message}`,
              cause: error
            })
          ),
          Effect.flatMap((text) => log.append([text], { durable }))
        )
      const toolkit = options.toolkit ?? Toolkit.make()
      const restore = (record: ToolRecord.ToolRecord) => ToolRecord.toResult(toolkit, record)
      // A submitted value is its finish tool's output: written with the tool's version, read through its migrations.
      const finishedEntry = (result: AgentEvent.RunResult<O>): EntryOf<O> => {
        const version = result._tag === "Submitted"
          ? toolkit.byName.get(result.termination.tool)?.outputVersioning?.version
          : undefined
        return version === undefined
          ? { _tag: "Finished", result }
          : { _tag: "Finished", result, outputVersion: version }
      }
      const submitted = (result: AgentEvent.RunResult<O>, recorded = CheckpointVersion.first) => {
        const tool = result._tag === "Submitted" ? toolkit.byName.get(result.termination.tool) : undefined
        if (
          result._tag === "Stopped" || tool === undefined ||
          recorded === (tool.outputVersioning?.version ?? CheckpointVersion.first)
        ) return Effect.succeed(result)
        return Effect.map(
          ToolRecord.migrateOutput(tool, recorded, result.termination.value),
          (value): AgentEvent.RunResult<O> => ({ ...result, termination: { ...result.termination, value } })
        )
      }

      const recover = (initial: AgentMachine.State) =>
        Effect.gen(function*() {
          let state = initial
          let answered: AgentTurn.Answered | undefined
          /** The calls of the answered turn that started (of tools that are not idempotent). */
          let started = new Set<number>()
          let finished: AgentEvent.RunResult<O> | undefined
          for (const text of log.entries) {
            const recorded = yield* decode(text)
            switch (recorded._tag) {
              case "Answered": {
                const completed: AgentTurn.Completed = {
                  turn: recorded.turn,
                  cost: recorded.cost,
                  history: apply(state.history, recorded.history)
                }
                state = (yield* machine.account(state, completed)).state
                answered = { completed, done: new Map() }
                started = new Set()
                break
              }
              case "ToolStarted":
                started.add(recorded.index)
                break
              case "ToolDone": {
                if (answered === undefined) break
                const done = new Map(answered.done).set(recorded.index, yield* restore(recorded.record))
                answered = { ...answered, done }
                break
              }
              case "Decided": {
                if (answered === undefined) break
                answered = cutOff(answered, started)
                const outputs = [...answered.done.entries()].sort(([a], [b]) => a - b).map(([, result]) =>
                  result.output
                )
                const history = apply([...answered.completed.history, ...outputs], recorded.history)
                const { mistakes, progress, repairs } = recorded
                state = { ...state, history, mistakes, progress, repairs }
                answered = undefined
                break
              }
              case "Finished":
                finished = yield* submitted(recorded.result, recorded.outputVersion)
                break
            }
          }
          const position: Position<O> = finished !== undefined
            ? { _tag: "Finished", result: finished }
            : answered !== undefined
            ? { _tag: "Answered", state, answered: cutOff(answered, started) }
            : { _tag: "Between", state }
          return position
        })

      return {
        recover,
        answered: (state, completed) =>
          write({
            _tag: "Answered",
            step: state.steps + 1,
            turn: completed.turn,
            cost: completed.cost,
            history: change(state.history, completed.history)
          }),
        // The call runs only once its start is on the disk.
        toolStarted: (step, index) => write({ _tag: "ToolStarted", step, index }),
        toolDone: (step, index, result) =>
          write({ _tag: "ToolDone", step, index, record: ToolRecord.fromResult(result, toolkit) }),
        idempotencyKey: (step, index) => idempotencyKey(runId, `tool/${step}/${index}`),
        decided: (outcome, transition) =>
          transition._tag === "Finish"
            ? write(finishedEntry(transition.result))
            // A decision lost in a power cut is made again on resume, with no effect outside the run; the next
            // turn's durable append takes it to the disk.
            : write({
              _tag: "Decided",
              step: transition.state.steps,
              history: change(outcome.history, transition.state.history),
              mistakes: transition.state.mistakes,
              progress: transition.state.progress,
              repairs: transition.state.repairs
            }, false)
      }
    }
  )
