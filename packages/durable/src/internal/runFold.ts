/**
 * A durable run folded from its records (see `DurableHistory`): the run as an
 * execution would rebuild it from its steps, up to any checkpoint, with the
 * agent's own definition: its state (history from the recorded input, usage,
 * cost), the turn whose calls run and those that ended, the calls that
 * started, the last decision, and the result once finished. A fork's
 * checkpoint applies the edit it records (see `ForkMark`).
 *
 * @internal
 */
import * as AgentCheckpoint from "@agentloop/core/agent/AgentCheckpoint"
import type * as AgentEvent from "@agentloop/core/agent/AgentEvent"
import type * as AgentHistory from "@agentloop/core/agent/AgentHistory"
import * as AgentMachine from "@agentloop/core/agent/AgentMachine"
import type * as AgentOptions from "@agentloop/core/agent/AgentOptions"
import type * as AgentTurn from "@agentloop/core/agent/AgentTurn"
import type * as InvalidOptions from "@agentloop/core/InvalidOptions"
import type * as Item from "@agentloop/core/Item"
import * as RunHistory from "@agentloop/core/RunHistory"
import * as RunId from "@agentloop/core/RunId"
import type * as Toolkit from "@agentloop/core/Toolkit"
import * as Turn from "@agentloop/core/Turn"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import * as RunJournal from "../RunJournal.ts"
import * as RunSteps from "../RunSteps.ts"
import { RunStoreError } from "../RunStore.ts"
import type { RunKey, RunStore } from "../RunStore.ts"
import * as RunCourse from "./runCourse.ts"

/**
 * What a fork's checkpoint records: the run it was copied from, the
 * checkpoint there, and how the history was edited (the items kept, and
 * those appended).
 */
export const ForkMark = Schema.Struct({
  from: Schema.String,
  index: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  edit: Schema.optionalKey(AgentCheckpoint.HistoryChange)
})

/** How a fork's checkpoint is recorded (step `StepName.fork`). */
export const forkCodec = RunJournal.codec(ForkMark)

/** The run as an execution rebuilds it from its steps, up to one of them. */
export interface Folded<O> {
  readonly state: AgentMachine.State
  /** The turn whose calls run, and those that ended, until it is decided. */
  readonly answered: AgentTurn.Answered | undefined
  /** The calls of that turn that started (of tools that are not idempotent). */
  readonly started: ReadonlySet<number>
  /** The outcome of the last turn decided. */
  readonly outcome: AgentTurn.Outcome | undefined
  /** The decision the run is between turns after, if it is. */
  readonly decision: RunSteps.DecisionRecord<O> | undefined
  readonly finished: AgentEvent.RunResult<O> | undefined
}

/** The answered turn with its calls cut off marked as ended, of unknown outcome. */
const answeredAt = <O>(folded: Folded<O>) => folded.answered && AgentCheckpoint.cutOff(folded.answered, folded.started)

/** The run's history there, its calls cut off read as ended, of unknown outcome. */
export const historyAt = <O>(folded: Folded<O>): ReadonlyArray<Item.Item> =>
  AgentCheckpoint.history({ state: folded.state, answered: answeredAt(folded), finished: folded.finished })

/** The calls of the run's turn that had not ended there (none once it finished). */
export const pendingAt = <O>(folded: Folded<O>): ReadonlyArray<Item.FunctionCall> => {
  const answered = answeredAt(folded)
  if (answered === undefined || folded.finished !== undefined) return []
  return Turn.functionCalls(answered.completed.turn).filter((_, index) => !answered.done.has(index))
}

/** The outcome of an answered turn whose calls all ended, as the execution hands it to the decision. */
const outcomeOf = (answered: AgentTurn.Answered): AgentTurn.Outcome => {
  const results = [...answered.done.entries()].sort(([a], [b]) => a - b).map(([, result]) => result)
  return {
    ...answered.completed,
    history: [...answered.completed.history, ...AgentCheckpoint.outputs(answered)],
    results
  }
}

/**
 * The decision a fork with an edit records for the turn it forked (see
 * `StepName.edited`): the run goes on between two turns, from the state
 * there with the history `after`. Between two turns already, the decision
 * that led there told what it told; anywhere else, nothing was decided.
 */
export const editedDecision = <O>(
  folded: Folded<O>,
  after: ReadonlyArray<Item.Item>
): RunSteps.DecisionRecord<O> => ({
  _tag: "Continue",
  state: Struct.omit(folded.state, ["history"]),
  appended: [],
  history: after,
  events: folded.answered === undefined && folded.finished === undefined ? folded.decision?.events ?? [] : []
})

/** A folding run, one record at a time. */
interface Folder<O> {
  readonly folded: () => Folded<O>
  /** Applies `record`; the items it added to the history. */
  readonly apply: (record: RunCourse.CourseRecord) => Effect.Effect<ReadonlyArray<Item.Item>, RunStoreError>
}

const folder = <O, R, RU>(
  opened: Opened<O, R, RU>,
  decisions: RunJournal.Codec<RunSteps.DecisionRecord<O>>
): Folder<O> => {
  const { machine, run, toolkit } = opened
  let folded: Folded<O> = {
    state: machine.initial,
    answered: undefined,
    started: new Set(),
    outcome: undefined,
    decision: undefined,
    finished: undefined
  }
  const corrupt = (record: RunCourse.CourseRecord, reason: string) =>
    new RunStoreError({
      operation: "read history",
      message: `record ${record.name} of run ${JSON.stringify(run.runId)}: ${reason}`
    })
  const decode = <A>(record: RunCourse.CourseRecord, codec: RunJournal.Codec<A>) =>
    Effect.mapError(codec.decode(record.body), (error) => corrupt(record, error.message))
  /** The turn a record of a turn's calls or decision belongs to, answered. */
  const answering = (record: RunCourse.CourseRecord) =>
    folded.answered !== undefined && record.step === folded.state.steps
      ? Effect.succeed(folded.answered)
      : Effect.fail(corrupt(record, `turn ${record.step} is not the turn the run was in`))
  /** A decision for turn `step` (that of `record`, or a fork's edited one). */
  const decided = (record: RunCourse.CourseRecord, step: number, decision: RunSteps.DecisionRecord<O>) =>
    Effect.gen(function*() {
      const answered = answeredAt(folded)
      const outcome = answered !== undefined ? outcomeOf(answered) : folded.outcome
      if (outcome === undefined || step !== folded.state.steps) {
        return yield* corrupt(record, `turn ${step} was not answered`)
      }
      const next = RunSteps.transition(decision, outcome)
      folded = {
        ...folded,
        answered: undefined,
        started: new Set(),
        outcome,
        ...(next._tag === "Finish"
          ? { decision: undefined, finished: next.result }
          : { decision, finished: undefined, state: next.state })
      }
      return decision._tag === "Continue" && decision.history === undefined ? decision.appended : []
    })

  const apply = (record: RunCourse.CourseRecord): Effect.Effect<ReadonlyArray<Item.Item>, RunStoreError> =>
    Effect.gen(function*() {
      switch (record.kind) {
        case "turn": {
          if (record.step !== folded.state.steps + 1 || folded.finished !== undefined) {
            return yield* corrupt(record, `the run was after turn ${folded.state.steps}`)
          }
          const completed = RunSteps.completed(yield* decode(record, RunSteps.turnCodec), folded.state.history)
          const { state } = yield* machine.books(folded.state, completed)
          folded = {
            state,
            answered: { completed, done: new Map() },
            started: new Set(),
            outcome: undefined,
            decision: undefined,
            finished: undefined
          }
          return completed.turn.items
        }
        case "started": {
          yield* answering(record)
          folded = { ...folded, started: new Set(folded.started).add(record.index) }
          return []
        }
        case "tool": {
          const answered = yield* answering(record)
          const result = yield* RunSteps.result(toolkit, yield* decode(record, RunSteps.toolCodec))
          folded = { ...folded, answered: { ...answered, done: new Map(answered.done).set(record.index, result) } }
          return [result.output]
        }
        case "decide":
          return yield* decided(record, record.step, yield* decode(record, decisions))
        case "fork": {
          // The fork's edit, as the decision it recorded for its execution (`edited`) holds it.
          const { edit } = yield* decode(record, forkCodec)
          if (edit === undefined) return []
          const step = folded.state.steps
          yield* decided(record, step, editedDecision(folded, AgentCheckpoint.apply(historyAt(folded), edit)))
          return edit.append
        }
        case "edited":
        case "start":
        case "input":
        case "other":
          return []
      }
    })
  return { folded: () => folded, apply }
}

/** The kind of the checkpoint `record` is, once folded. */
const checkpointKind = <O>(record: RunCourse.CourseRecord, folded: Folded<O>): AgentHistory.Kind => {
  switch (record.kind) {
    case "turn":
    case "started":
    case "tool":
    case "fork":
      return record.kind
    default:
      return folded.finished === undefined ? "decision" : "finished"
  }
}

/** A run opened for reading: its course, its input (and where it is recorded), and the machine it drives. */
export interface Opened<O, R, RU> {
  readonly run: RunKey
  readonly course: RunCourse.Course
  readonly input: RunSteps.Input
  readonly recordedInput: RunCourse.CourseRecord
  readonly machine: AgentMachine.Machine<O, R, RU>
  readonly toolkit: Toolkit.Toolkit<R> | undefined
}

/**
 * Opens run `runId` of the durable agent `agent` (whose definition is
 * `options`): its course, its input, and the machine its executions drive.
 */
export const open = <O, R, E, RU>(
  agent: string,
  options: Omit<AgentOptions.Options<O, R, E, RU>, "input" | "runId">,
  runId: string
): Effect.Effect<
  Opened<O, R, RU>,
  | RunId.InvalidRunId
  | RunHistory.UnknownRun
  | RunSteps.InputNotRecorded
  | InvalidOptions.InvalidOptions
  | RunStoreError,
  RunStore
> =>
  Effect.gen(function*() {
    const run: RunKey = { agent, runId: yield* RunId.validate(runId) }
    const course = yield* RunCourse.read(run)
    const recordedInput = course.records.find((record) => record.kind === "input")
    if (recordedInput === undefined) return yield* new RunSteps.InputNotRecorded({ runId })
    const input = yield* Effect.mapError(
      RunSteps.inputCodec.decode(recordedInput.body),
      (error) =>
        new RunStoreError({ operation: "read history", message: `the input of run ${runId}: ${error.message}` })
    )
    const machine = yield* AgentMachine.make<O, R, E, RU>({ ...options, input, runId })
    return { run, course, input, recordedInput, machine, toolkit: options.toolkit }
  })

/**
 * Folds the opened run up to checkpoint `index` (checked; `-1` for the last),
 * its decisions read with `decisions`, handing each checkpoint to `each`;
 * returns the checkpoint's index and its position in the course.
 */
export const foldTo = <O, R, RU>(
  opened: Opened<O, R, RU>,
  decisions: RunJournal.Codec<RunSteps.DecisionRecord<O>>,
  index: number,
  each: (checkpoint: AgentHistory.Checkpoint, folded: Folded<O>) => void
): Effect.Effect<{ readonly at: number; readonly end: number }, RunHistory.CheckpointNotFound | RunStoreError> =>
  Effect.gen(function*() {
    const { course, run } = opened
    const at = yield* RunHistory.checkIndex(run.runId, course.checkpoints.length, index)
    const { apply, folded } = folder(opened, decisions)
    const end = course.checkpoints[at]!
    let checkpoint = 0
    for (let position = 0; position <= end; position++) {
      const record = course.records[position]!
      const items = yield* apply(record)
      if (course.checkpoints[checkpoint] !== position) continue
      const state = folded().state
      each({
        index: checkpoint++,
        kind: checkpointKind(record, folded()),
        step: record.kind === "fork" ? state.steps : record.step,
        time: record.stamp?.at,
        usage: state.usage,
        cost: state.cost,
        items
      }, folded())
    }
    return { at, end }
  })
