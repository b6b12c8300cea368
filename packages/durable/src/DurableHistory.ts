/**
 * A durable run's history: its checkpoints, the run as it was at any of
 * them, and forks from any of them into new runs.
 *
 * Each step a run recorded in its journal (see `RunJournal`) is a checkpoint:
 * `turn` once the model answered turn `step`, `started` as a call of a tool
 * that is not idempotent started, `tool` as each call ended, `decision` once
 * the turn was decided and the run went on, `finished` once it was decided
 * and the run ended, and `fork` where a fork starts. They are listed in the
 * order the run wrote them, with the time each was written, and read with
 * the agent's own definition: the run at a checkpoint is what an execution
 * of the run would rebuild from the steps up to it (its history from the
 * run's recorded input, its usage and cost, the calls still pending, the
 * result once finished). Reading is one query, and takes no lock: a run in
 * flight is not disturbed, and is seen as it was at one of its checkpoints.
 *
 * A fork copies a run's steps up to a checkpoint into a new run id, with the
 * calls it had started and the decisions its approvals had received, and
 * adds its own `fork` checkpoint; with an edit, the history there is edited
 * first and the fork goes on between two turns. Executing the fork replays
 * what it copied (no model is asked again for a turn, no call that ended
 * runs again) and goes on from there; the source is not changed. What the
 * fork holds for the checkpoint's turn:
 *
 * - a call that ended: its result;
 * - a call of a tool that is not idempotent that had started and not ended:
 *   not run (its outcome is unknown, as after a crash; see
 *   `Toolkit.outcomeUnknown`);
 * - a call that had not started, or of an idempotent tool: run by the fork,
 *   with the fork's own `Tool.IdempotencyKey`;
 * - an approval decided before the checkpoint: decided; one the run was
 *   waiting for at the checkpoint (its turn recorded, none of its calls
 *   started): issued anew by the fork, with a secret of its own, so no token
 *   of one run decides a call of the other.
 *
 * The fork's clock starts when it is first executed (its `maxDuration` and
 * `elapsedMs` count from there), and its event log is written by that first
 * execution, the copied turns first: `events(forkId, { fromStep: 1 })`
 * replays them.
 *
 * @since 0.3.0
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
import * as Toolkit from "@agentloop/core/Toolkit"
import * as ToolRecord from "@agentloop/core/ToolRecord"
import * as Turn from "@agentloop/core/Turn"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import * as DurableApproval from "./DurableApproval.ts"
import * as RunJournal from "./RunJournal.ts"
import * as RunSteps from "./RunSteps.ts"
import { RunStore, RunStoreError } from "./RunStore.ts"
import type { ClaimRecord, RunKey, Stamp, StepRecord } from "./RunStore.ts"
import * as StepName from "./StepName.ts"

/**
 * What reading a durable agent's runs needs of its definition: its name,
 * its options (without a run's `input` and `runId`), and the codec of its
 * decisions (`RunSteps.decisionRecord` of its output).
 *
 * @since 0.3.0
 * @category models
 */
export interface Agent<O, R, E, RU> {
  readonly name: string
  readonly options: Omit<AgentOptions.Options<O, R, E, RU>, "input" | "runId">
  readonly decisions: RunJournal.Codec<RunSteps.DecisionRecord<O>>
}

/**
 * Run `runId` was recorded by a version of `@agentloop/durable` that did not
 * record a run's input (before 0.3.0), so its history cannot be rebuilt. A
 * run that executes again on this version records it.
 *
 * @since 0.3.0
 * @category errors
 */
export class InputNotRecorded extends Schema.TaggedError<InputNotRecorded>()("InputNotRecorded", {
  runId: Schema.String
}) {
  override get message() {
    const run = JSON.stringify(this.runId)
    return `run ${run} did not record its input (it was recorded before 0.3.0): its history cannot be rebuilt`
  }
}

/**
 * Why a run's history could not be read: an invalid run id, a run with no
 * checkpoint, one recorded before runs recorded their input, agent options
 * that cannot work, or a store that failed (or holds a record that does not
 * decode).
 *
 * @since 0.3.0
 * @category errors
 */
export type ReadError =
  | RunId.InvalidRunId
  | RunHistory.UnknownRun
  | InputNotRecorded
  | InvalidOptions.InvalidOptions
  | RunStoreError

/**
 * Why a fork failed: the source's history could not be read, the index is
 * out of range, the new id has records already (or is the source's), or the
 * edit cannot be made (`UneditableCheckpoint`): it is at a checkpoint where
 * calls of the turn have not ended (the history there has calls without
 * outputs, which no model accepts; fork at the turn's last call, or later),
 * or the history it gives does not encode (an item its schema refuses).
 *
 * @since 0.3.0
 * @category errors
 */
export type ForkError =
  | ReadError
  | RunHistory.CheckpointNotFound
  | RunHistory.RunExists
  | RunHistory.UneditableCheckpoint

/**
 * Where a fork starts: the new run's id, the run it forks, the checkpoint
 * (`-1` for the last, as `Array.at` counts), and an edit of the history
 * there, if any.
 *
 * @since 0.3.0
 * @category models
 */
export interface ForkOptions {
  readonly runId: string
  readonly from: string
  readonly at: number
  readonly edit?: AgentHistory.Edit | undefined
}

/** What a record of the run is, from its name. */
type Kind = "start" | "input" | "turn" | "started" | "tool" | "decide" | "edited" | "fork" | "other"

/** A record of the run, with its place in the run's course. */
interface Placed {
  readonly kind: Kind
  readonly name: string
  readonly step: number
  readonly index: number
  readonly body: string
  readonly stamp: StepRecord["stamp"]
}

const place = (name: string, body: string, stamp: StepRecord["stamp"], claim: boolean): Placed => {
  const parsed = StepName.parse(name)
  if (parsed === undefined) return { kind: "other", name, step: 0, index: 0, body, stamp }
  // A fork's checkpoint comes after its own records, which share its place.
  if (parsed.kind === "fork") return { kind: "fork", name, step: Number.MAX_SAFE_INTEGER, index: 0, body, stamp }
  return { kind: claim ? "started" : parsed.kind, name, step: parsed.step, index: parsed.index, body, stamp }
}

/** Within a place of the run's course: a turn, then its calls' starts and ends, then its decision, then a fork. */
const phase: Record<Kind, number> = {
  start: 0,
  input: 0,
  other: 0,
  turn: 1,
  started: 2,
  tool: 3,
  decide: 4,
  edited: 5,
  fork: 6
}

/**
 * The run's course: records written before they were stamped first (by turn,
 * then phase), then by their place; a fork's own records share its place,
 * and come before its checkpoint.
 */
const byCourse = (a: Placed, b: Placed): number =>
  (a.stamp === undefined ? 0 : 1) - (b.stamp === undefined ? 0 : 1) ||
  (a.stamp?.seq ?? 0) - (b.stamp?.seq ?? 0) ||
  a.step - b.step ||
  phase[a.kind] - phase[b.kind] ||
  a.index - b.index

/** A run's records in the order of its course, which of them are checkpoints, and its input. */
interface Course {
  readonly records: ReadonlyArray<Placed>
  /** The position in `records` of each checkpoint. */
  readonly checkpoints: ReadonlyArray<number>
  readonly approvals: ReadonlyArray<{ readonly wait: string; readonly decision: string | null }>
}

const course = (run: RunKey): Effect.Effect<Course, RunStoreError | RunHistory.UnknownRun, RunStore> =>
  Effect.gen(function*() {
    const recorded = yield* (yield* RunStore).records(run)
    const records = [
      ...recorded.steps.map((step) => place(step.name, step.body, step.stamp, false)),
      ...recorded.claims.map((claim) => place(claim.call, "", claim.stamp, true))
    ].sort(byCourse)
    // A fork's own records (its edited decision, its calls cut off) are folded into its checkpoint.
    const marks = new Set(
      records.flatMap((record) => record.kind === "fork" && record.stamp !== undefined ? [record.stamp.seq] : [])
    )
    const ownOfFork = (record: Placed) => record.stamp !== undefined && marks.has(record.stamp.seq)
    const checkpoints = records.flatMap((record, position) =>
      record.kind === "fork" ||
        ((record.kind === "turn" || record.kind === "started" || record.kind === "tool" || record.kind === "decide") &&
          !ownOfFork(record))
        ? [position]
        : []
    )
    if (checkpoints.length === 0) return yield* new RunHistory.UnknownRun({ id: run.runId })
    return { records, checkpoints, approvals: recorded.approvals }
  })

/**
 * A fork's checkpoint: the run it was copied from, the checkpoint there, and
 * how the history was edited (the items kept, and those appended).
 */
const ForkMark = Schema.Struct({
  from: Schema.String,
  index: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  edit: Schema.optionalKey(AgentCheckpoint.HistoryChange)
})
const forkCodec = RunJournal.codec(ForkMark)

/** The run as an execution rebuilds it from its steps, up to one of them. */
interface Folded<O> {
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

const historyAt = <O>(folded: Folded<O>): ReadonlyArray<Item.Item> =>
  AgentCheckpoint.history({ state: folded.state, answered: answeredAt(folded), finished: folded.finished })

const pendingAt = <O>(folded: Folded<O>): ReadonlyArray<Item.FunctionCall> => {
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
const editedDecision = <O>(folded: Folded<O>, after: ReadonlyArray<Item.Item>): RunSteps.DecisionRecord<O> => ({
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
  readonly apply: (record: Placed) => Effect.Effect<ReadonlyArray<Item.Item>, RunStoreError>
}

const folder = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  run: RunKey,
  machine: AgentMachine.Machine<O, R, RU>
): Folder<O> => {
  const toolkit = agent.options.toolkit
  let folded: Folded<O> = {
    state: machine.initial,
    answered: undefined,
    started: new Set(),
    outcome: undefined,
    decision: undefined,
    finished: undefined
  }
  const corrupt = (record: Placed, reason: string) =>
    new RunStoreError({
      operation: "read history",
      message: `record ${record.name} of run ${JSON.stringify(run.runId)}: ${reason}`
    })
  const decode = <A>(record: Placed, codec: RunJournal.Codec<A>) =>
    Effect.mapError(codec.decode(record.body), (error) => corrupt(record, error.message))
  /** The turn a record of a turn's calls or decision belongs to, answered. */
  const answering = (record: Placed) =>
    folded.answered !== undefined && record.step === folded.state.steps
      ? Effect.succeed(folded.answered)
      : Effect.fail(corrupt(record, `turn ${record.step} is not the turn the run was in`))
  /** A decision for turn `step` (that of `record`, or a fork's edited one). */
  const decided = (record: Placed, step: number, decision: RunSteps.DecisionRecord<O>) =>
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

  const apply = (record: Placed): Effect.Effect<ReadonlyArray<Item.Item>, RunStoreError> =>
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
          return yield* decided(record, record.step, yield* decode(record, agent.decisions))
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

const kindOf = <O>(record: Placed, folded: Folded<O>): AgentHistory.Kind => {
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

/** The run `run` of `agent`: its course, its input, and the machine its executions drive. */
const open = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  runId: string
): Effect.Effect<Opened<O, R, RU>, ReadError, RunStore> =>
  Effect.gen(function*() {
    const run: RunKey = { agent: agent.name, runId: yield* RunId.validate(runId) }
    const found = yield* course(run)
    const recordedInput = found.records.find((record) => record.kind === "input")
    if (recordedInput === undefined) return yield* new InputNotRecorded({ runId })
    const input = yield* Effect.mapError(
      RunSteps.inputCodec.decode(recordedInput.body),
      (error) =>
        new RunStoreError({ operation: "read history", message: `the input of run ${runId}: ${error.message}` })
    )
    const machine = yield* AgentMachine.make<O, R, E, RU>({ ...agent.options, input, runId })
    return { run, course: found, input, machine, recordedInput }
  })

/** A run opened for reading. */
interface Opened<O, R, RU> {
  readonly run: RunKey
  readonly course: Course
  readonly input: RunSteps.Input
  readonly recordedInput: Placed
  readonly machine: AgentMachine.Machine<O, R, RU>
}

/** Folds the run up to checkpoint `index` (checked), handing each checkpoint to `each`. */
const foldTo = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  opened: Opened<O, R, RU>,
  index: number,
  each: (checkpoint: AgentHistory.Checkpoint, folded: Folded<O>) => void
) =>
  Effect.gen(function*() {
    const { course, machine, run } = opened
    const at = yield* RunHistory.checkIndex(run.runId, course.checkpoints.length, index)
    const { apply, folded } = folder(agent, run, machine)
    const end = course.checkpoints[at]!
    let checkpoint = 0
    for (let position = 0; position <= end; position++) {
      const record = course.records[position]!
      const items = yield* apply(record)
      if (course.checkpoints[checkpoint] !== position) continue
      const state = folded().state
      each({
        index: checkpoint++,
        kind: kindOf(record, folded()),
        step: record.kind === "fork" ? state.steps : record.step,
        time: record.stamp?.at,
        usage: state.usage,
        cost: state.cost,
        items
      }, folded())
    }
    return { at, end }
  })

/**
 * The checkpoints of run `runId` of `agent`, in the order the run wrote
 * them. Reads the run's records at once, without a lock: a run in flight is
 * listed as it was then.
 *
 * @since 0.3.0
 * @category reading
 */
export const checkpoints = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  runId: string
): Effect.Effect<ReadonlyArray<AgentHistory.Checkpoint>, ReadError, RunStore> =>
  Effect.gen(function*() {
    const opened = yield* open(agent, runId)
    const listed: Array<AgentHistory.Checkpoint> = []
    yield* foldTo(agent, opened, -1, (checkpoint) => listed.push(checkpoint)).pipe(
      Effect.catchTag("CheckpointNotFound", Effect.die)
    )
    return listed
  })

const stateOf = <O>(checkpoint: AgentHistory.Checkpoint, folded: Folded<O>): AgentHistory.State<O> => ({
  checkpoint,
  history: historyAt(folded),
  turns: folded.state.steps,
  usage: folded.state.usage,
  cost: folded.state.cost,
  pending: pendingAt(folded),
  result: folded.finished
})

/**
 * Run `runId` of `agent` as it was at checkpoint `index` (`-1` for the last):
 * its history, turns, usage, cost, the calls of its turn that had not ended
 * (a call of a tool that is not idempotent that had started is read as cut
 * off, as a fork from there would read it), and its result once finished.
 *
 * @since 0.3.0
 * @category reading
 */
export const stateAt = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  runId: string,
  index: number
): Effect.Effect<AgentHistory.State<O>, ReadError | RunHistory.CheckpointNotFound, RunStore> =>
  Effect.gen(function*() {
    const opened = yield* open(agent, runId)
    // Each checkpoint's fold is a value of its own: keep the last, and read the state once.
    let last: readonly [AgentHistory.Checkpoint, Folded<O>] | undefined
    yield* foldTo(agent, opened, index, (checkpoint, folded) => {
      last = [checkpoint, folded]
    })
    return stateOf(...last!)
  })

/**
 * The fork's own records, written at the place of its checkpoint (`stamp`):
 * the outcome of each call that had started and not ended there (unknown:
 * the fork does not run it), with `edit` the decision for the turn forked
 * (the edited history), and its checkpoint. An edited history that does not
 * encode (an item its schema refuses) makes the checkpoint uneditable.
 */
const ownRecords = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  folded: Folded<O>,
  fork: {
    readonly from: string
    readonly index: number
    readonly edit: AgentHistory.Edit | undefined
    readonly stamp: Stamp
  }
): Effect.Effect<ReadonlyArray<StepRecord>, RunHistory.UneditableCheckpoint> =>
  Effect.gen(function*() {
    const own: Array<StepRecord> = []
    const write = <A>(name: string, codec: RunJournal.Codec<A>, value: A) =>
      Effect.map(codec.encode(value), (body) => own.push({ name, body, stamp: fork.stamp }))
    const uneditable = (error: Schema.SchemaError) =>
      new RunHistory.UneditableCheckpoint({
        id: fork.from,
        index: fork.index,
        reason: `the edited history does not encode: ${error.message}`
      })
    const step = folded.state.steps
    const answered = folded.finished === undefined ? folded.answered : undefined
    if (answered !== undefined) {
      const calls = Turn.functionCalls(answered.completed.turn)
      for (const index of folded.started) {
        const call = calls[index]
        if (call === undefined || answered.done.has(index)) continue
        const cutOff = ToolRecord.fromResult(Toolkit.outcomeUnknown(call))
        yield* Effect.orDie(write(StepName.tool(step, index), RunSteps.toolCodec, cutOff))
      }
    }
    let change: AgentCheckpoint.HistoryChange | undefined
    if (fork.edit !== undefined) {
      const before = historyAt(folded)
      const after = fork.edit(before)
      change = AgentCheckpoint.change(before, after)
      yield* Effect.mapError(write(StepName.edited(step), agent.decisions, editedDecision(folded, after)), uneditable)
    }
    const mark = { from: fork.from, index: fork.index, ...(change === undefined ? {} : { edit: change }) }
    yield* Effect.mapError(write(StepName.fork(fork.stamp.seq), forkCodec, mark), uneditable)
    return own
  })

/**
 * The source's steps and started calls the fork copies: those of `prefix`,
 * with the input (recorded later by a run that began before runs recorded
 * it), but neither the source's start (the fork's clock starts when it
 * first executes) nor the records the fork writes its own of (`replaced`).
 * Records of names this version does not know are copied as they are.
 */
const copied = (
  prefix: ReadonlyArray<Placed>,
  input: Placed,
  replaced: ReadonlySet<string>
): { readonly steps: ReadonlyArray<StepRecord>; readonly claims: ReadonlyArray<ClaimRecord> } => {
  const records = prefix.includes(input) ? prefix : [...prefix, input]
  return {
    steps: records.flatMap((record) =>
      record.kind === "started" || record.kind === "start" || replaced.has(record.name)
        ? []
        : [{ name: record.name, body: record.body, stamp: record.stamp }]
    ),
    claims: prefix.flatMap((record) => record.kind === "started" ? [{ call: record.name, stamp: record.stamp }] : [])
  }
}

/**
 * The source's decided approvals of the turns `prefix` goes past the
 * decisions of, each with a new secret. A turn's decisions are all recorded
 * before any of its calls starts: past them once a call of the turn started
 * or ended, or the turn was decided. The others are issued anew by the fork.
 */
const decidedApprovals = (course: Course, prefix: ReadonlyArray<Placed>) => {
  const decidedTurns = new Set(
    prefix.flatMap((record) =>
      record.kind === "started" || record.kind === "tool" || record.kind === "decide" || record.kind === "edited"
        ? [record.step]
        : []
    )
  )
  return Effect.forEach(
    course.approvals.filter((approval) => {
      const call = DurableApproval.parseWait(approval.wait)
      return approval.decision !== null && call !== undefined && decidedTurns.has(call.step)
    }),
    (approval) => Effect.map(DurableApproval.newSecret, (secret) => ({ ...approval, secret }))
  )
}

/**
 * Copies run `options.from` of `agent` up to checkpoint `options.at` into the
 * new run `options.runId`, with its own `fork` checkpoint (see the module's
 * documentation for what the fork holds), in one transaction; returns the
 * input the fork runs with (its source's). With `edit`, the history there is
 * edited and the fork goes on between two turns, its next turn asked with
 * the edited history (the turn's decision is not made again). Nothing runs:
 * a durable agent's `fork` calls it with the agent's definition, then starts
 * the new run.
 *
 * @example
 * ```ts
 * import { AgentHistory } from "@agentloop/core"
 * import { DurableAgent, DurableRunner } from "@agentloop/durable"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const namer = DurableAgent.make("namer", { instructions: "Name a colour." })
 *
 * const program = Effect.gen(function*() {
 *   yield* namer.run({ runId: "colour", input: "A colour?" })
 *   console.log((yield* namer.checkpoints("colour")).map((c) => c.kind)) // [ 'turn', 'finished' ]
 *   // Another answer to the same question: the fork drops the last one, and the model is asked again.
 *   yield* namer.fork({ runId: "colour-2", from: "colour", at: -1, edit: AgentHistory.dropLastAnswer })
 *   const again = yield* namer.run({ runId: "colour-2", input: "A colour?" })
 *   if (again._tag === "Stopped") console.log(again.output) // Green
 *   console.log((yield* namer.stateAt("colour", -1)).result?._tag) // Stopped
 * })
 *
 * const runner = namer.layer.pipe(
 *   Layer.provideMerge(DurableRunner.layerSqlite({ filename: join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db") })),
 *   Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Blue"), MockLanguageModel.textTurn("Green")]))
 * )
 * Effect.runPromise(program.pipe(Effect.provide(runner)))
 * ```
 *
 * @since 0.3.0
 * @category forking
 */
export const fork = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  options: ForkOptions
): Effect.Effect<RunSteps.Input, ForkError, RunStore> =>
  Effect.gen(function*() {
    const to = yield* RunId.validate(options.runId)
    if (to === options.from) return yield* new RunHistory.RunExists({ id: to })
    const opened = yield* open(agent, options.from)
    let there: Folded<O> | undefined
    const { at, end } = yield* foldTo(agent, opened, options.at, (_, folded) => {
      there = folded
    })
    const folded = there!
    const step = folded.state.steps
    const { edit } = options
    if (edit !== undefined && pendingAt(folded).length > 0) {
      return yield* new RunHistory.UneditableCheckpoint({
        id: options.from,
        index: at,
        reason: `calls of turn ${step} have not ended there`
      })
    }

    const prefix = opened.course.records.slice(0, end + 1)
    const mark = prefix.reduce((last, record) => Math.max(last, record.stamp?.seq ?? 0), 0) + 1
    const own = yield* ownRecords(agent, folded, {
      from: options.from,
      index: at,
      edit,
      stamp: { seq: mark, at: yield* Clock.currentTimeMillis }
    })
    const records = {
      ...copied(prefix, opened.recordedInput, new Set(own.map((record) => record.name))),
      approvals: yield* decidedApprovals(opened.course, prefix)
    }
    const created = yield* (yield* RunStore).create({ agent: agent.name, runId: to }, {
      ...records,
      steps: [...records.steps, ...own]
    })
    if (!created) return yield* new RunHistory.RunExists({ id: to })
    return opened.input
  })
