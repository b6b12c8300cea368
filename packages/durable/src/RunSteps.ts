/**
 * The recorded steps of a durable run, in its journal (see `RunJournal`): the
 * start of the run, each model turn, each tool call, and the decision after
 * each turn. A step that was recorded is never run again: a run that resumes
 * reads its result from storage. One that a crash cut short runs again,
 * except the call of a tool that is not idempotent (see `tool`).
 *
 * Each step drives the run's `AgentMachine`, as `AgentLoop` does: a turn is
 * `AgentTurn.complete` (the request, with compaction), a call is
 * `Toolkit.executeAllSafe`, a decision is the machine's `decide` (the rules,
 * the `afterTurn` hook, the stop predicate, the structured output), recorded
 * because a predicate may ask a model or read the clock.
 *
 * @since 0.1.0
 */
import * as AgentEvent from "@agentloop/core/agent/AgentEvent"
import * as AgentMachine from "@agentloop/core/agent/AgentMachine"
import * as AgentTurn from "@agentloop/core/agent/AgentTurn"
import * as Approval from "@agentloop/core/Approval"
import * as Cost from "@agentloop/core/Cost"
import * as Item from "@agentloop/core/Item"
import * as Loop from "@agentloop/core/Loop"
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as ToolRecord from "@agentloop/core/ToolRecord"
import * as Turn from "@agentloop/core/Turn"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Struct from "effect/Struct"
import * as DurableApproval from "./DurableApproval.ts"
import * as RunJournal from "./RunJournal.ts"
import { RunStore } from "./RunStore.ts"
import type { RunKey, RunStoreError } from "./RunStore.ts"
import * as StepName from "./StepName.ts"

const startCodec = RunJournal.codec(Schema.Number)

/**
 * The time the run started, recorded once, so its deadline and elapsed time survive a resume.
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = <O>(journal: RunJournal.Journal<O>): Effect.Effect<number> =>
  journal.step(StepName.start, startCodec, Clock.currentTimeMillis)

/**
 * A run's task: a text, or a history of items.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Input = Schema.Union([Schema.String, Item.History])
export type Input = typeof Input.Type

/**
 * How the run's input is recorded (step `StepName.input`).
 *
 * @example
 * ```ts
 * import { RunSteps } from "@agentloop/durable"
 * import { Effect } from "effect"
 *
 * // A run's input as its journal holds it: JSON, checked when it is read back.
 * const program = Effect.gen(function*() {
 *   const json = yield* RunSteps.inputCodec.encode("What is 2 + 3?")
 *   console.log(json) // "What is 2 + 3?"
 *   console.log(yield* RunSteps.inputCodec.decode(json)) // What is 2 + 3?
 * })
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.3.0
 * @category codecs
 */
export const inputCodec: RunJournal.Codec<Input> = RunJournal.codec(Input)

/**
 * The run's input, `given` the first time, recorded once: the run's history
 * is rebuilt from it (see `DurableHistory`), and a fork (see `DurableFork`)
 * goes on with its source's.
 *
 * @since 0.3.0
 * @category constructors
 */
export const input = <O>(journal: RunJournal.Journal<O>, given: Input): Effect.Effect<Input> =>
  journal.step(StepName.input, inputCodec, Effect.succeed(given))

/**
 * Run `runId` was recorded by a version of `@agentloop/durable` that did not
 * record a run's input (before 0.3.0), so its history cannot be rebuilt (see
 * `DurableHistory`) nor forked. A run that executes again on this version
 * records it.
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
 * Records `given` as the input of run `run` before the engine is asked to
 * start it, unless anything of the run is recorded (a step, a log entry, an
 * execution that began): from then on the run's id is taken, so a fork onto
 * it fails with `RunExists` instead of becoming the run the start asked for.
 * `false` when the run had records: it was started, or forked, first, and
 * what it recorded holds (a start joins it).
 *
 * @since 0.3.0
 * @category constructors
 */
export const recordInput = (run: RunKey, given: Input): Effect.Effect<boolean, RunStoreError, RunStore> =>
  Effect.gen(function*() {
    const body = yield* Effect.orDie(inputCodec.encode(given))
    const stamp = { seq: 1, at: yield* Clock.currentTimeMillis }
    return yield* (yield* RunStore).create(run, {
      steps: [{ name: StepName.input, body, stamp }],
      claims: [],
      approvals: []
    })
  })

/** Compaction's events of a turn. */
const Note = Schema.Union([AgentEvent.AttemptDiscarded, AgentEvent.Compacted])

/**
 * A completed turn as the run records it; the history it answered is recorded only when compaction changed it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnRecord = Schema.Struct({
  turn: Turn.Turn,
  cost: Cost.Cost,
  compacted: Schema.optionalKey(Item.History),
  notes: Schema.Array(Note)
})
export type TurnRecord = typeof TurnRecord.Type

/**
 * How a completed turn is recorded (step `StepName.turn`).
 *
 * @since 0.3.0
 * @category codecs
 */
export const turnCodec: RunJournal.Codec<TurnRecord> = RunJournal.codec(TurnRecord)

/**
 * The completed turn of a record, for the turn that started from `history`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const completed = (record: TurnRecord, history: ReadonlyArray<Item.Item>): AgentTurn.Completed => ({
  turn: record.turn,
  cost: record.cost,
  history: [...(record.compacted ?? history), ...record.turn.items]
})

/**
 * Turn `state.steps + 1`: the model request (compacted once on a context
 * overflow), bounded by what is left of the run's deadline. Fails with the
 * run's termination when the request fails or the deadline passes. Its
 * record is written with the journal's next commit.
 *
 * @since 0.1.0
 * @category constructors
 */
export const turn = <O, R, RU>(
  journal: RunJournal.Journal<O>,
  machine: AgentMachine.Machine<O, R, RU>,
  state: AgentMachine.State
) => {
  const step = state.steps + 1
  return journal.step(
    StepName.turn(step),
    turnCodec,
    Effect.gen(function*() {
      const notes: Array<typeof Note.Type> = []
      let done: AgentTurn.Completed | undefined
      const request = Stream.runForEach(
        Loop.loop(
          undefined,
          () =>
            AgentTurn.complete({ step, history: state.history, options: machine.turnOptions }, (completed) => {
              done = completed
              return Loop.stop
            })
        ),
        (event) => event._tag === "Delta" ? Effect.void : Effect.sync(() => notes.push(event))
      ).pipe(Effect.catch((failure) => machine.turnFailed(failure, state)))
      const deadline = machine.maxDurationMs
      if (deadline !== undefined) {
        const left = machine.startedAt + deadline - (yield* Clock.currentTimeMillis)
        const finished = left > 0 && Option.isSome(yield* Effect.timeoutOption(request, left))
        if (!finished) return yield* machine.deadlinePassed(state)
      } else {
        yield* request
      }
      if (done === undefined) return yield* Effect.die(new Error(`turn ${step} ended without its completed turn`))
      const asked = done.history.slice(0, done.history.length - done.turn.items.length)
      const record: TurnRecord = { turn: done.turn, cost: done.cost, notes }
      return notes.some((note) => note._tag === "Compacted") ? { ...record, compacted: asked } : record
    })
  )
}

/**
 * What a call needs to run as a recorded step.
 *
 * @since 0.1.0
 * @category models
 */
export interface Call<R> {
  /** The run's execution id, which keys its calls' `Tool.IdempotencyKey`. */
  readonly executionId: string
  readonly step: number
  /** The call's position in its turn. */
  readonly index: number
  readonly call: Item.FunctionCall
  readonly toolkit: Toolkit.Toolkit<R> | undefined
  readonly tools: Omit<Toolkit.Options, "onProgress">
  /** The recorded decision, for a call that needed one. */
  readonly decision: DurableApproval.Decision | undefined
}

/**
 * How a call's result is recorded (step `StepName.tool`).
 *
 * @since 0.3.0
 * @category codecs
 */
export const toolCodec: RunJournal.Codec<ToolRecord.ToolRecord> = RunJournal.codec(ToolRecord.ToolRecord)

/**
 * A tool call, run by `Toolkit.executeAllSafe` with the call's
 * `Tool.IdempotencyKey` (`Tool.idempotencyKey` of the run's execution id and
 * the call's step name: the same each time the call runs), and committed
 * as it ends. A call of a tool that is not `idempotent` is recorded as
 * started first: when a crash cut it short, it is not run again, and the
 * model reads that its outcome is unknown.
 *
 * @since 0.1.0
 * @category constructors
 */
export const tool = <O, R>(journal: RunJournal.Journal<O>, options: Call<R>) => {
  const { call, toolkit } = options
  const name = StepName.tool(options.step, options.index)
  const execute = Effect.gen(function*() {
    const spec = toolkit?.byName.get(call.name)
    if (spec !== undefined && !spec.idempotent) {
      const first = yield* Effect.result(journal.claim(name))
      if (first._tag === "Failure") {
        return ToolRecord.fromResult(
          Toolkit.mistake(
            call,
            "failure",
            `Tool "${call.name}" was not run: its start could not be recorded (${first.failure.message}).`
          )
        )
      }
      if (!first.success) return ToolRecord.fromResult(Toolkit.outcomeUnknown(call))
    }
    const decision = options.decision
    const key = yield* Tool.idempotencyKey(options.executionId, name)
    const results = yield* Toolkit.executeAllSafe(toolkit ?? Toolkit.make(), [call], options.tools).pipe(
      Effect.provideService(Tool.IdempotencyKey, key),
      (run) =>
        decision === undefined
          ? run
          : Effect.provideService(run, Approval.Approval, DurableApproval.recorded(decision))
    )
    const result = results[0]
    return result === undefined
      ? yield* Effect.die(new Error(`${name} has no result`))
      : ToolRecord.fromResult(result, toolkit)
  })
  return Effect.tap(journal.step(name, toolCodec, execute), () => journal.commit)
}

/**
 * The `Toolkit.Result` of a record (`ToolRecord.toResult`); a success whose
 * tool is gone, or whose output no longer decodes or reaches the tool's
 * output version, becomes a failure the model reads.
 *
 * @since 0.1.0
 * @category constructors
 */
export const result = <R>(
  toolkit: Toolkit.Toolkit<R> | undefined,
  record: ToolRecord.ToolRecord
): Effect.Effect<Toolkit.Result> =>
  ToolRecord.toResult(toolkit ?? Toolkit.make(), record).pipe(
    Effect.catch((error) =>
      Effect.succeed(Toolkit.mistake(record.call, "failure", `Tool "${record.call.name}": ${error.message}.`))
    )
  )

/** The next state of a run without its history: what a `Continue` decision records. */
const StateWithoutHistory = Schema.Struct(Struct.omit(AgentMachine.State.fields, ["history"]))

/**
 * A decision as the run records it. `Continue` keeps the next state without
 * its history, which is the outcome's plus `appended` (a feedback message), so
 * the record grows with the turn, not with the run; a history that is not the
 * outcome's plus items is recorded whole, as `history`.
 *
 * @since 0.1.0
 * @category models
 */
export type DecisionRecord<O> =
  | {
    readonly _tag: "Continue"
    readonly state: typeof StateWithoutHistory.Type
    readonly appended: Item.History
    readonly history?: Item.History
    readonly events: ReadonlyArray<AgentEvent.AgentEvent<O>>
  }
  | {
    readonly _tag: "Finish"
    readonly result: AgentEvent.RunResult<O>
    readonly events: ReadonlyArray<AgentEvent.AgentEvent<O>>
  }

/**
 * The schema of the decisions of a run whose output `output` describes, and whose finish tool submits `submitted`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const decisionRecord = <O>(
  output: Schema.Codec<O, unknown>,
  submitted: Schema.Codec<unknown, unknown>
): Schema.Codec<DecisionRecord<O>, unknown> => {
  const events = Schema.Array(AgentEvent.schema(output, submitted))
  return Schema.Union([
    Schema.TaggedStruct("Continue", {
      state: StateWithoutHistory,
      appended: Item.History,
      history: Schema.optionalKey(Item.History),
      events
    }),
    Schema.TaggedStruct("Finish", { result: AgentEvent.RunResult(output, submitted), events })
  ])
}

const recordDecision = <O>(transition: AgentMachine.Transition<O>, outcome: AgentTurn.Outcome): DecisionRecord<O> => {
  if (transition._tag === "Finish") return transition
  const { history, ...state } = transition.state
  const before = outcome.history
  return history.length >= before.length && before.every((item, i) => history[i] === item)
    ? { _tag: "Continue", state, appended: history.slice(before.length), events: transition.events }
    : { _tag: "Continue", state, appended: [], history, events: transition.events }
}

/**
 * The transition of a record, for the turn whose outcome is `outcome`.
 *
 * @since 0.1.0
 * @category transitions
 */
export const transition = <O>(decision: DecisionRecord<O>, outcome: AgentTurn.Outcome): AgentMachine.Transition<O> =>
  decision._tag === "Finish"
    ? decision
    : {
      _tag: "Continue",
      state: { ...decision.state, history: decision.history ?? [...outcome.history, ...decision.appended] },
      events: decision.events
    }

/**
 * The decision after turn `accounted.steps` and its tools, from
 * `machine.decide`, recorded with `codec` (see {@link decisionRecord}) with
 * the journal's next commit. A fork that edited the history after this turn
 * recorded its decision instead (`StepName.edited`): that one holds,
 * and nothing decides.
 *
 * @since 0.1.0
 * @category transitions
 */
export const decide = <O, R, RU>(
  journal: RunJournal.Journal<O>,
  machine: AgentMachine.Machine<O, R, RU>,
  codec: RunJournal.Codec<DecisionRecord<O>>,
  accounted: AgentMachine.State,
  outcome: AgentTurn.Outcome
) =>
  Effect.flatMap(
    journal.recorded(StepName.edited(accounted.steps), codec),
    (edited) =>
      edited !== undefined ? Effect.succeed(edited) : journal.step(
        StepName.decide(accounted.steps),
        codec,
        Effect.map(machine.decide(accounted, outcome), (transition) => recordDecision(transition, outcome))
      )
  )
