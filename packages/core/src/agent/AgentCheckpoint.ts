/**
 * What an `AgentLoop` run records in a `Checkpointer`, and how a run is
 * recovered from it.
 *
 * A run with a `runId` appends, per turn: `Answered` once the model's turn is
 * complete (the turn, its cost, and how the history changed), `ToolStarted`
 * as a call of a tool that is not idempotent starts, `ToolDone` as each tool
 * call ends, and `Decided` once the turn's decision is made (the
 * counters, what the decision added to the history, its verdict and
 * feedback); a run that ends well appends `Finished` with its result, marked
 * as the append that finishes the run (so the store can expire the run, or
 * keep that entry alone: recovered from it, the run returns its result); a run
 * a person cancelled (see `AgentHistory.cancel`) ends with `Cancelled`, and
 * recovered from it, fails with `Halted` by `"person"` instead of going on. A
 * fork (see `AgentHistory`) starts with its source's entries and `Forked`.
 * Entries carry what changed and the time they were written, never the whole
 * history again, except a `Snapshot`: a run with `compactAfter` whose log
 * holds more entries than that writes its next decision to go on as its whole
 * state instead, which replaces the log (a compacting append), so its log
 * stays bounded, at the price of the turns before it. Recovering folds the
 * entries with the run's own `AgentMachine`, so a resumed run is where the
 * crashed one was: between two turns, in the middle of a turn's tools, or
 * finished. In the middle of a turn's tools, a call that ended is not run
 * again; one that started and did not end is not run again either when its
 * tool is not idempotent (its result is `Toolkit.outcomeUnknown`), and is run
 * again, with the same `Tool.IdempotencyKey`, when it is.
 *
 * Each entry carries the version of the schema that wrote it ({@link version};
 * entries written before entries carried one are version 1, read as version
 * 3 is, as are those of version 2: each version since only added an entry,
 * `ToolStarted` then `Cancelled`): a run recorded by
 * a version of agentloop whose entries this one cannot read fails with
 * `Termination.CheckpointFailed`, its cause a `CheckpointVersionMismatch`
 * naming both versions, before anything runs. A tool whose output schema
 * changed reads its recorded outputs through its own migrations (the
 * `outputVersioning` option of `Tool.make`).
 *
 * A run's log is opened with its fingerprint (its input, instructions, tool
 * names and output schema): executing the run again with another one fails
 * with `CheckpointMismatch` instead of mixing two runs' histories. The log's
 * lease is held for as long as the run executes.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Accounting } from "../Accounting.ts"
import { Checkpointer, CheckpointError } from "../Checkpointer.ts"
import type * as CheckpointStore from "../CheckpointStore.ts"
import type { OpenError } from "../CheckpointStore.ts"
import * as CheckpointVersion from "../CheckpointVersion.ts"
import { Cost } from "../Cost.ts"
import * as Item from "../Item.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import * as Termination from "../Termination.ts"
import * as Tool from "../Tool.ts"
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

/** When an entry was written, in epoch milliseconds (absent from entries written before 0.2.0). */
const Time = Schema.optionalKey(Schema.Finite)

/** What a decision told (its verdict, its feedback), replayed as it was (absent from entries written before 0.2.0). */
const Told = Schema.optionalKey(Schema.Array(Schema.Union([AgentEvent.Verdict, AgentEvent.Feedback])))

/** The events of a transition a decision's entry keeps: its verdict and its feedback. */
const told = <O>(transition: AgentMachine.Transition<O>) =>
  transition.events.filter((event) => event._tag === "Verdict" || event._tag === "Feedback")

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
  history: HistoryChange,
  time: Time
})

/**
 * Call `index` of turn `step` ended with `record`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolDone = Schema.TaggedStruct("ToolDone", {
  step: Count,
  index: Count,
  record: ToolRecord.ToolRecord,
  time: Time
})

/**
 * Call `index` of turn `step`, of a tool that is not idempotent, is about to
 * run (its approval given, if it needed one). Without a `ToolDone` after it,
 * the call was cut off: a resumed run does not run it again.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ToolStarted = Schema.TaggedStruct("ToolStarted", { step: Count, index: Count, time: Time })

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
  repairs: Count,
  events: Told,
  time: Time
})

/**
 * The entries before this one were copied from checkpoint `index` of run
 * `from` (see `AgentHistory.fork`). With `history`, the history there was
 * edited by that change: the run is between turns, and goes on with it.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Forked = Schema.TaggedStruct("Forked", {
  from: Schema.String,
  index: Count,
  history: Schema.optionalKey(HistoryChange),
  time: Time
})

/**
 * Turn `step` was decided, and the run goes on from `state`: the whole of it, which sums up every entry before
 * it. Written instead of `Decided` by a run whose log grew past its `compactAfter`, as the log's only entry.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Snapshot = Schema.TaggedStruct("Snapshot", { state: AgentMachine.State, time: Time })

/**
 * A person cancelled the run, saying `reason`: executing it again does not go
 * on, and fails with `Halted` whose `source` is `"person"` (see
 * `AgentHistory.cancel`). Written by an executor that holds the run's lease,
 * once nothing of the run is executing, as the append that finishes the run.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Cancelled = Schema.TaggedStruct("Cancelled", { reason: Schema.String, time: Time })

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
    Forked,
    Snapshot,
    Cancelled,
    // A submitted value is its finish tool's output: `outputVersion` is the tool's, when it declares one.
    Schema.TaggedStruct("Finished", {
      result: AgentEvent.RunResult(output, Schema.Unknown),
      outputVersion: Schema.optionalKey(CheckpointVersion.Version),
      events: Told,
      time: Time
    })
  ])

/**
 * The version of the schema of the entries this version of agentloop writes:
 * 3, which added `Cancelled` (2 added `ToolStarted`). It reads versions 1 and
 * 2 too (an entry of either is one of version 3), and no other.
 *
 * @since 0.2.0
 * @category versions
 */
export const version = 3

/** Versions 2 and 3 only added an entry each: an entry of version 1 or 2 is read as it is. */
const versioning: CheckpointVersion.Versioning = {
  version,
  migrations: [
    CheckpointVersion.migration(CheckpointVersion.first, version, Schema.Unknown),
    CheckpointVersion.migration(2, version, Schema.Unknown)
  ]
}

/** The JSON encoder and decoder of the entries of a run whose output is `O`. */
interface EntryCodec<O> {
  readonly encode: (entry: Recorded<O>) => Effect.Effect<unknown, Schema.SchemaError>
  readonly decode: (json: unknown) => Effect.Effect<Recorded<O>, Schema.SchemaError>
}

/** The entry codecs made so far, by output schema: a run's codec is compiled once per output schema, not per run. */
const entryCodecs = new WeakMap<Schema.Top, unknown>()

/** The entry codec of runs whose output `output` describes. */
const entryCodec = <O>(output: Schema.Codec<O, unknown>): EntryCodec<O> => {
  const found = entryCodecs.get(output)
  // Made below from this very output schema.
  if (found !== undefined) return found as EntryCodec<O>
  const json = Schema.toCodecJson(Entry(output))
  const made: EntryCodec<O> = { encode: Schema.encodeEffect(json), decode: Schema.decodeUnknownEffect(json) }
  entryCodecs.set(output, made)
  return made
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
  readonly encode: (entry: Recorded<O>) => Effect.Effect<string, Schema.SchemaError>
  readonly decode: (
    text: string
  ) => Effect.Effect<Recorded<O>, Schema.SchemaError | CheckpointVersion.CheckpointVersionMismatch>
} => {
  const { decode, encode } = entryCodec(output)
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
 * The schema of a run's output: its `output` option, or the text without one.
 *
 * @since 0.2.0
 * @category getters
 */
export const output = <O>(
  options: { readonly output?: Schema.Codec<O, unknown> | undefined }
): Schema.Codec<O, unknown> =>
  // Without a structured output, O is the text (its default).
  options.output ?? (Schema.String as Schema.Codec<string, unknown> as Schema.Codec<O, unknown>)

/**
 * An entry of a run whose output is `O`, decoded.
 *
 * @since 0.2.0
 * @category models
 */
export type Recorded<O> = ReturnType<typeof Entry<Schema.Codec<O, unknown>>>["Type"]

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
 * The answered turn with a result for each call that `started` (of a tool
 * that is not idempotent: their indices) and did not end: cut off, it is not
 * run again, and its outcome is unknown (`Toolkit.outcomeUnknown`).
 *
 * @since 0.3.0
 * @category recovery
 */
export const cutOff = (answered: AgentTurn.Answered, started: ReadonlySet<number>): AgentTurn.Answered => {
  // Most turns start no call of a tool that is not idempotent: nothing to look up.
  if (started.size === 0) return answered
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
  | { readonly _tag: "Cancelled"; readonly state: AgentMachine.State; readonly reason: string }

/**
 * A run as it was once an entry of its log was written: the entry, the state
 * (accounted for the turn it is in), the turn answered and the calls of it
 * that ended (until the turn is decided), the result once it finished, and
 * why a person cancelled it once one did.
 *
 * @since 0.2.0
 * @category models
 */
export interface Folded<O> {
  readonly entry: Recorded<O>
  readonly state: AgentMachine.State
  readonly answered: AgentTurn.Answered | undefined
  readonly finished: AgentEvent.RunResult<O> | undefined
  /** The reason a person gave when cancelling the run (see {@link Cancelled}). @since 0.3.0 */
  readonly cancelled?: string | undefined
}

/**
 * The outputs of the calls of a turn that ended, in call order.
 *
 * @since 0.2.0
 * @category getters
 */
export const outputs = (answered: AgentTurn.Answered): ReadonlyArray<Item.Item> =>
  [...answered.done.entries()].sort(([a], [b]) => a - b).map(([, result]) => result.output)

/**
 * The history of a run as it was at `folded`: what it had asked and been answered, and the calls that ended.
 *
 * @since 0.2.0
 * @category getters
 */
export const history = <O>(folded: Omit<Folded<O>, "entry">): ReadonlyArray<Item.Item> =>
  folded.finished !== undefined
    ? folded.finished.history
    : folded.answered !== undefined
    ? [...folded.answered.completed.history, ...outputs(folded.answered)]
    : folded.state.history

/**
 * Where a fold of a run's log stands after the entries it read: how many it
 * read (`count`), the run as it was after the last of them (`last`), and
 * what folding the next ones goes on from: the run's state, the turn
 * answered with the calls of it that ended (`answered`, until the turn is
 * decided) and the calls of it that started (`started`: indices, of tools
 * that are not idempotent), its result once it finished, and the reason a
 * person gave once one cancelled it. {@link foldFrom} goes on from it with
 * the entries appended since.
 *
 * @since 0.3.0
 * @category models
 */
export interface Progress<O> {
  readonly count: number
  readonly last: Folded<O> | undefined
  readonly state: AgentMachine.State
  readonly answered: AgentTurn.Answered | undefined
  readonly started: ReadonlySet<number>
  readonly finished: AgentEvent.RunResult<O> | undefined
  readonly cancelled: string | undefined
}

/**
 * The progress of a fold that has read nothing: the run at `initial`, the state before its first turn.
 *
 * @since 0.3.0
 * @category recovery
 */
export const begin = (initial: AgentMachine.State): Progress<never> => ({
  count: 0,
  last: undefined,
  state: initial,
  answered: undefined,
  started: new Set(),
  finished: undefined,
  cancelled: undefined
})

/**
 * A run folded from its log: where it was after its last entry, and what `each` made of every entry.
 *
 * @since 0.2.0
 * @category models
 */
export interface Fold<O, A> {
  readonly last: Folded<O> | undefined
  readonly each: ReadonlyArray<A>
  /** Where the fold stands: {@link foldFrom} goes on from it with the entries appended after. @since 0.3.0 */
  readonly progress: Progress<O>
}

/** A submitted value recorded at version `recorded` of its finish tool's output, brought to the tool's version. */
const submitted = <O, TR>(
  toolkit: Toolkit.Toolkit<TR>,
  result: AgentEvent.RunResult<O>,
  recorded = CheckpointVersion.first
): Effect.Effect<AgentEvent.RunResult<O>, RecoveryError> => {
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

/** How a fold reads entries: the run's output schema, its books, its tools, its id (see {@link fold}). */
interface FoldOptions<O, TR, E, R> {
  readonly output: Schema.Codec<O, unknown>
  readonly account: (
    state: AgentMachine.State,
    completed: AgentTurn.Completed
  ) => Effect.Effect<AgentMachine.State, E, R>
  readonly toolkit: Toolkit.Toolkit<TR>
  readonly runId: string
}

/**
 * Folds a run's log from `initial`, the state before its first turn: where
 * the run was after each entry, handed to `each` as it is reached (only what
 * `each` returns is kept, so a long run's fold holds one state at a time).
 * `account` adds an answered turn to the books; `toolkit`'s tools make
 * recorded calls' results (and a submitted value) whole again, through their
 * output migrations.
 *
 * @since 0.2.0
 * @category recovery
 */
export const fold = <O, TR, A, E, R, E2, R2>(
  entries: ReadonlyArray<string>,
  initial: AgentMachine.State,
  options: FoldOptions<O, TR, E, R>,
  each: (folded: Folded<O>, index: number) => Effect.Effect<A, E2, R2>
): Effect.Effect<Fold<O, A>, RecoveryError | E | E2, R | R2> => foldFrom(entries, begin(initial), options, each)

/**
 * Goes on with a fold of a run's log from `from`, the progress of a fold of
 * its first entries (see {@link fold}): `entries` are those that follow
 * them, and `each` is handed their index in the log (`from.count` for the
 * first). `from` is left as it is.
 *
 * @since 0.3.0
 * @category recovery
 */
export const foldFrom = <O, TR, A, E, R, E2, R2>(
  entries: ReadonlyArray<string>,
  from: Progress<O>,
  options: FoldOptions<O, TR, E, R>,
  each: (folded: Folded<O>, index: number) => Effect.Effect<A, E2, R2>
): Effect.Effect<Fold<O, A>, RecoveryError | E | E2, R | R2> =>
  Effect.gen(function*() {
    const { decode } = codec(options.output, options.runId)
    const made: Array<A> = []
    let { answered, cancelled, count, finished, last, state } = from
    // The calls of the answered turn that started (of tools that are not idempotent): cut off unless they ended.
    let started = new Set(from.started)
    for (const text of entries) {
      const entry = yield* decode(text)
      switch (entry._tag) {
        case "Answered": {
          const completed: AgentTurn.Completed = {
            turn: entry.turn,
            cost: entry.cost,
            history: apply(state.history, entry.history)
          }
          state = yield* options.account(state, completed)
          answered = { completed, done: new Map() }
          started = new Set()
          break
        }
        case "ToolStarted":
          started.add(entry.index)
          break
        case "ToolDone": {
          if (answered === undefined) break
          const done = new Map(answered.done).set(
            entry.index,
            yield* ToolRecord.toResult(options.toolkit, entry.record)
          )
          answered = { ...answered, done }
          break
        }
        case "Decided": {
          if (answered === undefined) break
          const history = apply([...answered.completed.history, ...outputs(cutOff(answered, started))], entry.history)
          const { mistakes, progress, repairs } = entry
          state = { ...state, history, mistakes, progress, repairs }
          answered = undefined
          break
        }
        case "Forked": {
          if (entry.history === undefined) break
          const before = history({ state, answered: answered && cutOff(answered, started), finished })
          state = { ...state, history: apply(before, entry.history) }
          answered = undefined
          finished = undefined
          cancelled = undefined
          break
        }
        case "Snapshot":
          state = entry.state
          answered = undefined
          break
        case "Finished":
          finished = yield* submitted(options.toolkit, entry.result, entry.outputVersion)
          break
        case "Cancelled":
          cancelled = entry.reason
          break
      }
      last = { entry, state, answered: answered && cutOff(answered, started), finished, cancelled }
      made.push(yield* each(last, count++))
    }
    return { last, each: made, progress: { count, last, state, answered, started, finished, cancelled } }
  })

/**
 * Where a run stands after `last`, its last entry folded (`initial` when its log is empty).
 *
 * @since 0.2.0
 * @category recovery
 */
export const position = <O>(last: Folded<O> | undefined, initial: AgentMachine.State): Position<O> =>
  last === undefined
    ? { _tag: "Between", state: initial }
    : last.finished !== undefined
    ? { _tag: "Finished", result: last.finished }
    : last.cancelled !== undefined
    ? { _tag: "Cancelled", state: last.state, reason: last.cancelled }
    : last.answered !== undefined
    ? { _tag: "Answered", state: last.state, answered: last.answered }
    : { _tag: "Between", state: last.state }

/**
 * The termination of a run a person cancelled (its log ends with
 * {@link Cancelled}): `Halted` whose `source` is `"person"`, with `reason`
 * and the run's `accounting`.
 *
 * @since 0.3.0
 * @category recovery
 */
export const cancellation = (reason: string, accounting: Accounting): Termination.Halted =>
  new Termination.Halted({ reason, source: "person", accounting })

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
 * A run recovered from its log: where it stands, and what `each` made of each entry.
 *
 * @since 0.2.0
 * @category models
 */
export interface Recovered<O, A> {
  readonly position: Position<O>
  readonly each: ReadonlyArray<A>
}

/**
 * Writes a run's entries, and recovers a run from them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Recorder<O> {
  /** Where the run stands according to its log (`initial` when it has none), and what `each` made of each entry. */
  readonly recover: <A>(
    initial: AgentMachine.State,
    each: (folded: Folded<O>) => Effect.Effect<A>
  ) => Effect.Effect<Recovered<O, A>, RecoveryError | Termination.MaxBudgetUsd | Termination.UnpricedModel>
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
  /**
   * Records that a person cancelled the run, saying `reason`: the append that ends it. Nothing once its log has
   * ended (with its result, or a cancellation, recovered or recorded): the run stays as it ended. @since 0.3.0
   */
  readonly cancelled: (reason: string) => Effect.Effect<void, CheckpointError>
}

/**
 * Encodes `entry` for run `runId`, stamped with the time it is written; an
 * entry that cannot be encoded is a `CheckpointError`.
 *
 * @since 0.2.0
 * @category encoding
 */
export const encode = <O>(
  output: Schema.Codec<O, unknown>,
  runId: string
): (entry: Recorded<O>) => Effect.Effect<string, CheckpointError> => {
  const { encode: encoder } = codec(output, runId)
  return (entry) =>
    Clock.currentTimeMillis.pipe(
      Effect.flatMap((time) => encoder({ ...entry, time })),
      Effect.mapError((error) =>
        new CheckpointError({
          operation: "append",
          id: runId,
          message: `an entry of run "${runId}" could not be encoded: ${error.message}`,
          cause: error
        })
      )
    )
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
  readonly compactAfter?: number | undefined
}): Effect.Effect<Recorder<O>, OpenError, Checkpointer | Scope.Scope> =>
  Effect.map(
    Effect.flatMap(Checkpointer, (checkpointer) => checkpointer.open(options.runId, options.fingerprint)),
    (log): Recorder<O> => {
      const { machine, output, runId } = options
      const encodeEntry = encode(output, runId)
      const write = (entry: Recorded<O>, appendOptions?: CheckpointStore.AppendOptions) =>
        Effect.flatMap(encodeEntry(entry), (text) => log.append([text], appendOptions))
      // The entries the log holds: past `compactAfter`, a decision to go on is written as a snapshot instead.
      let length = log.entries.length
      const counted = (effect: Effect.Effect<void, CheckpointError>) =>
        Effect.tap(effect, () => Effect.sync(() => length++))
      // The log ended (with the run's result or a cancellation): nothing may contradict it after.
      let ended = false
      const ending = (effect: Effect.Effect<void, CheckpointError>) =>
        Effect.tap(effect, () => Effect.sync(() => ended = true))
      const toolkit = options.toolkit ?? Toolkit.make()
      // A submitted value is its finish tool's output: written with the tool's version, read through its migrations.
      const finishedEntry = (transition: AgentMachine.Transition<O> & { readonly _tag: "Finish" }): Recorded<O> => {
        const { result } = transition
        const version = result._tag === "Submitted"
          ? toolkit.byName.get(result.termination.tool)?.outputVersioning?.version
          : undefined
        return {
          _tag: "Finished",
          result,
          events: told(transition),
          ...(version === undefined ? {} : { outputVersion: version })
        }
      }

      return {
        recover: (initial, each) =>
          Effect.map(
            fold(log.entries, initial, {
              output,
              toolkit,
              runId,
              account: (state, completed) => Effect.map(machine.account(state, completed), (booked) => booked.state)
            }, each),
            (folded) => {
              const at = position(folded.last, initial)
              ended = at._tag === "Finished" || at._tag === "Cancelled"
              return { position: at, each: folded.each }
            }
          ),
        answered: (state, completed) =>
          counted(write({
            _tag: "Answered",
            step: state.steps + 1,
            turn: completed.turn,
            cost: completed.cost,
            history: change(state.history, completed.history)
          })),
        // The call runs only once its start is on the disk.
        toolStarted: (step, index) => counted(write({ _tag: "ToolStarted", step, index })),
        idempotencyKey: (step, index) => Tool.idempotencyKey(runId, `tool/${step}/${index}`),
        toolDone: (step, index, result) =>
          counted(write({ _tag: "ToolDone", step, index, record: ToolRecord.fromResult(result, toolkit) })),
        decided: (outcome, transition) => {
          // The run's result: the store marks the run finished, and `prune` with `keep: "result"` keeps this alone.
          if (transition._tag === "Finish") return ending(write(finishedEntry(transition), { finished: true }))
          // The log grew past its bound: the state it leads to replaces it, in one compacting append.
          if (options.compactAfter !== undefined && length + 1 > options.compactAfter) {
            return Effect.tap(
              write({ _tag: "Snapshot", state: transition.state }, { compact: true }),
              () => Effect.sync(() => length = 1)
            )
          }
          // A decision lost in a power cut is made again on resume, with no effect outside the run; the next
          // turn's durable append takes it to the disk.
          return counted(write({
            _tag: "Decided",
            step: transition.state.steps,
            history: change(outcome.history, transition.state.history),
            mistakes: transition.state.mistakes,
            progress: transition.state.progress,
            repairs: transition.state.repairs,
            events: told(transition)
          }, { durable: false }))
        },
        // Like a result, it ends the run: `prune` expires it, or keeps it alone.
        cancelled: (reason) =>
          Effect.suspend(() => ended ? Effect.void : ending(write({ _tag: "Cancelled", reason }, { finished: true })))
      }
    }
  )
