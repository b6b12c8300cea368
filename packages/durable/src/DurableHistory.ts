/**
 * A durable run's history: its checkpoints, and the run as it was at any of
 * them. Forks from a checkpoint into new runs are `DurableFork`'s.
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
 * @since 0.3.0
 */
import type * as AgentHistory from "@agentloop/core/agent/AgentHistory"
import type * as AgentOptions from "@agentloop/core/agent/AgentOptions"
import type * as InvalidOptions from "@agentloop/core/InvalidOptions"
import type * as RunHistory from "@agentloop/core/RunHistory"
import type * as RunId from "@agentloop/core/RunId"
import * as Effect from "effect/Effect"
import * as RunFold from "./internal/runFold.ts"
import type * as RunJournal from "./RunJournal.ts"
import type * as RunSteps from "./RunSteps.ts"
import type { RunStore, RunStoreError } from "./RunStore.ts"

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
 * Why a run's history could not be read: an invalid run id, a run with no
 * checkpoint, one recorded before runs recorded their input
 * (`RunSteps.InputNotRecorded`), agent options that cannot work, or a store
 * that failed (or holds a record that does not decode).
 *
 * @since 0.3.0
 * @category errors
 */
export type ReadError =
  | RunId.InvalidRunId
  | RunHistory.UnknownRun
  | RunSteps.InputNotRecorded
  | InvalidOptions.InvalidOptions
  | RunStoreError

/**
 * The checkpoints of run `runId` of `agent`, in the order the run wrote
 * them. Reads the run's records at once, without a lock: a run in flight is
 * listed as it was then.
 *
 * @example
 * ```ts
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
 *   // A durable agent's `checkpoints` and `stateAt` read its runs with this module.
 *   console.log((yield* namer.checkpoints("colour")).map((c) => c.kind)) // [ 'turn', 'finished' ]
 *   const last = yield* namer.stateAt("colour", -1)
 *   console.log(last.history.length, last.result?._tag) // 2 Stopped
 * })
 *
 * const runner = namer.layer.pipe(
 *   Layer.provideMerge(DurableRunner.layerSqlite({ filename: join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db") })),
 *   Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Blue")]))
 * )
 * Effect.runPromise(program.pipe(Effect.provide(runner)))
 * ```
 *
 * @since 0.3.0
 * @category reading
 */
export const checkpoints = <O, R, E, RU>(
  agent: Agent<O, R, E, RU>,
  runId: string
): Effect.Effect<ReadonlyArray<AgentHistory.Checkpoint>, ReadError, RunStore> =>
  Effect.gen(function*() {
    const opened = yield* RunFold.open(agent.name, agent.options, runId)
    const listed: Array<AgentHistory.Checkpoint> = []
    yield* RunFold.foldTo(opened, agent.decisions, -1, (checkpoint) => listed.push(checkpoint)).pipe(
      Effect.catchTag("CheckpointNotFound", Effect.die)
    )
    return listed
  })

const stateOf = <O>(checkpoint: AgentHistory.Checkpoint, folded: RunFold.Folded<O>): AgentHistory.State<O> => ({
  checkpoint,
  history: RunFold.historyAt(folded),
  turns: folded.state.steps,
  usage: folded.state.usage,
  cost: folded.state.cost,
  pending: RunFold.pendingAt(folded),
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
    const opened = yield* RunFold.open(agent.name, agent.options, runId)
    // Each checkpoint's fold is a value of its own: keep the last, and read the state once.
    let last: readonly [AgentHistory.Checkpoint, RunFold.Folded<O>] | undefined
    yield* RunFold.foldTo(opened, agent.decisions, index, (checkpoint, folded) => {
      last = [checkpoint, folded]
    })
    return stateOf(...last!)
  })
