/**
 * Forks of durable runs: a run's steps up to a checkpoint (see
 * `DurableHistory`) copied into a new run id, with the calls it had started
 * and the decisions its approvals had received, and the fork's own `fork`
 * checkpoint; with an edit, the history there is edited first and the fork
 * goes on between two turns. Executing the fork replays what it copied (no
 * model is asked again for a turn, no call that ended runs again) and goes
 * on from there; the source is not changed. What the fork holds for the
 * checkpoint's turn:
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
import type * as AgentHistory from "@agentloop/core/agent/AgentHistory"
import * as RunHistory from "@agentloop/core/RunHistory"
import * as RunId from "@agentloop/core/RunId"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as ToolRecord from "@agentloop/core/ToolRecord"
import * as Turn from "@agentloop/core/Turn"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import * as DurableApproval from "./DurableApproval.ts"
import type * as DurableHistory from "./DurableHistory.ts"
import type * as RunCourse from "./internal/runCourse.ts"
import * as RunFold from "./internal/runFold.ts"
import type * as RunJournal from "./RunJournal.ts"
import * as RunSteps from "./RunSteps.ts"
import { RunStore } from "./RunStore.ts"
import type { ClaimRecord, Stamp, StepRecord } from "./RunStore.ts"
import * as StepName from "./StepName.ts"

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
  | DurableHistory.ReadError
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

/**
 * The fork's own records, written at the place of its checkpoint (`stamp`):
 * the outcome of each call that had started and not ended there (unknown:
 * the fork does not run it), with `edit` the decision for the turn forked
 * (the edited history), and its checkpoint. An edited history that does not
 * encode (an item its schema refuses) makes the checkpoint uneditable.
 */
const ownRecords = <O>(
  decisions: RunJournal.Codec<RunSteps.DecisionRecord<O>>,
  folded: RunFold.Folded<O>,
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
      const before = RunFold.historyAt(folded)
      const after = fork.edit(before)
      change = AgentCheckpoint.change(before, after)
      yield* Effect.mapError(write(StepName.edited(step), decisions, RunFold.editedDecision(folded, after)), uneditable)
    }
    const mark = { from: fork.from, index: fork.index, ...(change === undefined ? {} : { edit: change }) }
    yield* Effect.mapError(write(StepName.fork(fork.stamp.seq), RunFold.forkCodec, mark), uneditable)
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
  prefix: ReadonlyArray<RunCourse.CourseRecord>,
  input: RunCourse.CourseRecord,
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
const decidedApprovals = (course: RunCourse.Course, prefix: ReadonlyArray<RunCourse.CourseRecord>) => {
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
 * documentation for what the fork holds), in one transaction, unless the new
 * id has any record (`RunExists`: a run started under it, even one no runner
 * has begun, records its input first; see `RunSteps.recordInput`); returns the
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
  agent: DurableHistory.Agent<O, R, E, RU>,
  options: ForkOptions
): Effect.Effect<RunSteps.Input, ForkError, RunStore> =>
  Effect.gen(function*() {
    const to = yield* RunId.validate(options.runId)
    if (to === options.from) return yield* new RunHistory.RunExists({ id: to })
    const opened = yield* RunFold.open(agent.name, agent.options, options.from)
    let there: RunFold.Folded<O> | undefined
    const { at, end } = yield* RunFold.foldTo(opened, agent.decisions, options.at, (_, folded) => {
      there = folded
    })
    const folded = there!
    const step = folded.state.steps
    const { edit } = options
    if (edit !== undefined && RunFold.pendingAt(folded).length > 0) {
      return yield* new RunHistory.UneditableCheckpoint({
        id: options.from,
        index: at,
        reason: `calls of turn ${step} have not ended there`
      })
    }

    const prefix = opened.course.records.slice(0, end + 1)
    const mark = prefix.reduce((last, record) => Math.max(last, record.stamp?.seq ?? 0), 0) + 1
    const own = yield* ownRecords(agent.decisions, folded, {
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
