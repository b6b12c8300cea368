/**
 * What an `AgentLoop` run records in a `Checkpointer`, and how a run is
 * recovered from it.
 *
 * A run with a `runId` appends, per turn: `Answered` once the model's turn is
 * complete (the turn, its cost, and how the history changed), `ToolDone` as
 * each tool call ends, and `Decided` once the turn's decision is made (the
 * counters, what the decision added to the history, its verdict and
 * feedback); a run that ends well appends `Finished` with its result. A fork
 * (see `AgentHistory`) starts with its source's entries and `Forked`. Entries
 * carry what changed, never the whole history again, and the time they were
 * written. Recovering folds the entries with the run's own
 * `AgentMachine`, so a resumed run is where the crashed one was: between two
 * turns, in the middle of a turn's tools (calls that ended are not run again),
 * or finished.
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
import { Checkpointer, CheckpointError } from "../Checkpointer.ts"
import type { OpenError } from "../CheckpointStore.ts"
import { Cost } from "../Cost.ts"
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

/** A history that keeps the first `keep` items of the one before it and appends `append`. */
export const HistoryChange = Schema.Struct({ keep: Count, append: Item.History })
export type HistoryChange = typeof HistoryChange.Type

/** The change from `before` to `after`: their common prefix (the same items, by identity) and what follows it. */
export const change = (before: ReadonlyArray<Item.Item>, after: ReadonlyArray<Item.Item>): HistoryChange => {
  let keep = 0
  while (keep < before.length && keep < after.length && before[keep] === after[keep]) keep++
  return { keep, append: after.slice(keep) }
}

/** Applies a change to the history it was taken from. */
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

/** Turn `step` is complete: the model's turn, its cost, and the history it answered plus the turn's items. */
export const Answered = Schema.TaggedStruct("Answered", {
  step: Count,
  turn: Turn.Turn,
  cost: Cost,
  history: HistoryChange,
  time: Time
})

/** Call `index` of turn `step` ended with `record`. */
export const ToolDone = Schema.TaggedStruct("ToolDone", {
  step: Count,
  index: Count,
  record: ToolRecord.ToolRecord,
  time: Time
})

/** Turn `step` was decided, and the run goes on: the counters, and what the decision added to the history. */
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
 */
export const Forked = Schema.TaggedStruct("Forked", {
  from: Schema.String,
  index: Count,
  history: Schema.optionalKey(HistoryChange),
  time: Time
})

/** The schema of the entries of a run whose output `output` describes (`Schema.String` without a structured output). */
export const Entry = <O extends Schema.Top>(output: O) =>
  Schema.Union([
    Answered,
    ToolDone,
    Decided,
    Forked,
    Schema.TaggedStruct("Finished", {
      result: AgentEvent.RunResult(output, Schema.Unknown),
      events: Told,
      time: Time
    })
  ])

/** The JSON text of an entry of a run whose output `output` describes. */
export const codec = <O>(output: Schema.Codec<O, unknown>) => Schema.fromJsonString(Schema.toCodecJson(Entry(output)))

/** The schema of a run's output: its `output` option, or the text without one. */
export const output = <O>(
  options: { readonly output?: Schema.Codec<O, unknown> | undefined }
): Schema.Codec<O, unknown> =>
  // Without a structured output, O is the text (its default).
  options.output ?? (Schema.String as Schema.Codec<string, unknown> as Schema.Codec<O, unknown>)

/** An entry of a run whose output is `O`, decoded. */
export type Recorded<O> = ReturnType<typeof codec<O>>["Type"]

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

/** Where a recovered run stands. */
export type Position<O> =
  | { readonly _tag: "Between"; readonly state: AgentMachine.State }
  | { readonly _tag: "Answered"; readonly state: AgentMachine.State; readonly answered: AgentTurn.Answered }
  | { readonly _tag: "Finished"; readonly result: AgentEvent.RunResult<O> }

/**
 * A run as it was once an entry of its log was written: the entry, the state
 * (accounted for the turn it is in), the turn answered and the calls of it
 * that ended (until the turn is decided), and the result once it finished.
 */
export interface Folded<O> {
  readonly entry: Recorded<O>
  readonly state: AgentMachine.State
  readonly answered: AgentTurn.Answered | undefined
  readonly finished: AgentEvent.RunResult<O> | undefined
}

/** The outputs of the calls of a turn that ended, in call order. */
export const outputs = (answered: AgentTurn.Answered): ReadonlyArray<Item.Item> =>
  [...answered.done.entries()].sort(([a], [b]) => a - b).map(([, result]) => result.output)

/** The history of a run as it was at `folded`: what it had asked and been answered, and the calls that ended. */
export const history = <O>(folded: Omit<Folded<O>, "entry">): ReadonlyArray<Item.Item> =>
  folded.finished !== undefined
    ? folded.finished.history
    : folded.answered !== undefined
    ? [...folded.answered.completed.history, ...outputs(folded.answered)]
    : folded.state.history

/** A run folded from its log: where it was after its last entry, and what `each` made of every entry. */
export interface Fold<O, A> {
  readonly last: Folded<O> | undefined
  readonly each: ReadonlyArray<A>
}

/**
 * Folds a run's log from `initial`, the state before its first turn: where
 * the run was after each entry, handed to `each` as it is reached (only what
 * `each` returns is kept, so a long run's fold holds one state at a time).
 * `account` adds an answered turn to the books; `restore` makes a recorded
 * call's result whole again.
 */
export const fold = <O, A, E, R, E2, R2>(
  entries: ReadonlyArray<string>,
  initial: AgentMachine.State,
  options: {
    readonly output: Schema.Codec<O, unknown>
    readonly account: (
      state: AgentMachine.State,
      completed: AgentTurn.Completed
    ) => Effect.Effect<AgentMachine.State, E, R>
    readonly restore: (record: ToolRecord.ToolRecord) => Effect.Effect<Toolkit.Result, ToolRecord.RestoreFailed>
  },
  each: (folded: Folded<O>, index: number) => Effect.Effect<A, E2, R2>
): Effect.Effect<Fold<O, A>, RecoveryError | E | E2, R | R2> =>
  Effect.gen(function*() {
    const decode = Schema.decodeUnknownEffect(codec(options.output))
    const made: Array<A> = []
    let last: Folded<O> | undefined
    let state = initial
    let answered: AgentTurn.Answered | undefined
    let finished: AgentEvent.RunResult<O> | undefined
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
          break
        }
        case "ToolDone": {
          if (answered === undefined) break
          const done = new Map(answered.done).set(entry.index, yield* options.restore(entry.record))
          answered = { ...answered, done }
          break
        }
        case "Decided": {
          if (answered === undefined) break
          const history = apply([...answered.completed.history, ...outputs(answered)], entry.history)
          const { mistakes, progress, repairs } = entry
          state = { ...state, history, mistakes, progress, repairs }
          answered = undefined
          break
        }
        case "Forked": {
          if (entry.history === undefined) break
          state = { ...state, history: apply(history({ state, answered, finished }), entry.history) }
          answered = undefined
          finished = undefined
          break
        }
        case "Finished":
          finished = entry.result
          break
      }
      last = { entry, state, answered, finished }
      made.push(yield* each(last, made.length))
    }
    return { last, each: made }
  })

/** Where a run stands after `last`, its last entry folded (`initial` when its log is empty). */
export const position = <O>(last: Folded<O> | undefined, initial: AgentMachine.State): Position<O> =>
  last === undefined
    ? { _tag: "Between", state: initial }
    : last.finished !== undefined
    ? { _tag: "Finished", result: last.finished }
    : last.answered !== undefined
    ? { _tag: "Answered", state: last.state, answered: last.answered }
    : { _tag: "Between", state: last.state }

/** Why a run's checkpoint could not be used: it did not decode, or a recorded tool result could not be restored. */
export type RecoveryError = Schema.SchemaError | ToolRecord.RestoreFailed

/** A run recovered from its log: where it stands, and what `each` made of each entry. */
export interface Recovered<O, A> {
  readonly position: Position<O>
  readonly each: ReadonlyArray<A>
}

/** Writes a run's entries, and recovers a run from them. */
export interface Recorder<O> {
  /** Where the run stands according to its log (`initial` when it has none), and what `each` made of each entry. */
  readonly recover: <A>(
    initial: AgentMachine.State,
    each: (folded: Folded<O>) => Effect.Effect<A>
  ) => Effect.Effect<Recovered<O, A>, RecoveryError | Termination.MaxBudgetUsd | Termination.UnpricedModel>
  readonly answered: (state: AgentMachine.State, completed: AgentTurn.Completed) => Effect.Effect<void, CheckpointError>
  readonly toolDone: (step: number, index: number, result: Toolkit.Result) => Effect.Effect<void, CheckpointError>
  readonly decided: (
    outcome: AgentTurn.Outcome,
    transition: AgentMachine.Transition<O>
  ) => Effect.Effect<void, CheckpointError>
}

/**
 * Encodes `entry` for run `runId`, stamped with the time it is written; an
 * entry that cannot be encoded is a `CheckpointError`.
 */
export const encode = <O>(
  output: Schema.Codec<O, unknown>,
  runId: string
): (entry: Recorded<O>) => Effect.Effect<string, CheckpointError> => {
  const encoder = Schema.encodeEffect(codec(output))
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
      const { machine, output, runId } = options
      const encodeEntry = encode(output, runId)
      const write = (entry: Recorded<O>, durable = true) =>
        Effect.flatMap(encodeEntry(entry), (text) => log.append([text], { durable }))
      const toolkit = options.toolkit ?? Toolkit.make()

      return {
        recover: (initial, each) =>
          Effect.map(
            fold(log.entries, initial, {
              output,
              account: (state, completed) => Effect.map(machine.account(state, completed), (booked) => booked.state),
              restore: (record) => ToolRecord.toResult(toolkit, record)
            }, each),
            (folded) => ({ position: position(folded.last, initial), each: folded.each })
          ),
        answered: (state, completed) =>
          write({
            _tag: "Answered",
            step: state.steps + 1,
            turn: completed.turn,
            cost: completed.cost,
            history: change(state.history, completed.history)
          }),
        toolDone: (step, index, result) =>
          write({ _tag: "ToolDone", step, index, record: ToolRecord.fromResult(result) }),
        decided: (outcome, transition) =>
          transition._tag === "Finish"
            ? write({ _tag: "Finished", result: transition.result, events: told(transition) })
            // A decision lost in a power cut is made again on resume, with no effect outside the run; the next
            // turn's durable append takes it to the disk.
            : write({
              _tag: "Decided",
              step: transition.state.steps,
              history: change(outcome.history, transition.state.history),
              mistakes: transition.state.mistakes,
              progress: transition.state.progress,
              repairs: transition.state.repairs,
              events: told(transition)
            }, false)
      }
    }
  )
