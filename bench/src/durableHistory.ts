/**
 * What reading and forking a durable run's history costs, against the same on
 * a `Checkpointer`, both on SQLite (`node:sqlite`, a file each): the same run
 * of 1,000 turns (each calling one tool that is not idempotent), recorded once
 * by `AgentLoop.run` on `Checkpointer.layerSql` and once by `DurableAgent.run`
 * on the embedded runner; then, per turn of the run:
 *
 * - `checkpoints`: every checkpoint with what it holds (4,000 of them);
 * - `stateAt(-1)`: the run at its last checkpoint;
 * - `fork` at turn 500's decision, edited: the source read, 2,000 records
 *   written to a new run (`DurableAgent.fork` also starts it: here, on a
 *   client that runs nothing, so the fork's execution is not measured).
 *
 * The durable run is read by a client over the runner's file once the runner
 * is gone (the embedded runner holds its file alone).
 */
import { AgentHistory, AgentLoop, Checkpointer, Toolkit } from "@agentloop/core"
import { DurableAgent, DurableRunner, NodeSqliteClient } from "@agentloop/durable"
import { MockLanguageModel } from "@agentloop/testing"
import { Effect, Layer, ManagedRuntime, References } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { compare } from "./measure.ts"
import { add, script as scriptOf } from "./scriptedRun.ts"

const turns = 1000
const runId = "history"
const input = "Count"
const options = { input, toolkit: Toolkit.make(add), runId, limits: { maxTurns: turns } }
const model = MockLanguageModel.layer(scriptOf(turns))
// The cluster logs its runner's comings and goings; a benchmark's output is its table.
const quiet = Layer.succeed(References.MinimumLogLevel, "Error")

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-bench-durable-history-"))
const sqlite = (name: string) => NodeSqliteClient.layer({ filename: Path.join(dir, name), synchronous: "NORMAL" })
const checkpointer = ManagedRuntime.make(Checkpointer.layerSql().pipe(Layer.provide(sqlite("checkpoints.db"))))
const agent = DurableAgent.make("history", { toolkit: options.toolkit, limits: options.limits })

try {
  // Recorded once each.
  await checkpointer.runPromise(
    Effect.flatMap(AgentLoop.AgentLoop, (loop) => loop.run(options)).pipe(
      Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))
    )
  )
  const runner = ManagedRuntime.make(agent.layer.pipe(
    Layer.provideMerge(DurableRunner.layerSqlite({ filename: Path.join(dir, "runs.db"), synchronous: "NORMAL" })),
    Layer.provide(model),
    Layer.provide(quiet)
  ))
  await runner.runPromise(agent.run({ runId, input }))
  await runner.dispose()
  const client = ManagedRuntime.make(
    DurableRunner.layer("client").pipe(Layer.provideMerge(sqlite("runs.db")), Layer.provide(quiet))
  )

  try {
    const listed = await client.runPromise(agent.checkpoints(runId))
    const at = listed.findIndex((c) => c.kind === "decision" && c.step === turns / 2)
    console.log(
      `\n  a run of ${turns} turns: ${listed.length} checkpoints; forks at ${at} (turn ${turns / 2}'s decision)`
    )
    const edit = AgentHistory.addMessage(`Go on from ${turns / 2}`)
    let forks = 0
    const onCheckpointer = <A, E>(effect: Effect.Effect<A, E, Checkpointer.Checkpointer>) => () =>
      checkpointer.runPromise(Effect.asVoid(effect))
    const onClient = <A, E>(effect: Effect.Effect<A, E, DurableRunner.Services>) => () =>
      client.runPromise(Effect.asVoid(effect))
    await compare({
      title: `Run history on SQLite: a recorded run of ${turns} turns, durable against the Checkpointer`,
      units: turns,
      unit: "turn",
      rounds: 5,
      baseline: { name: "AgentHistory.checkpoints", run: onCheckpointer(AgentHistory.checkpoints(options)) },
      cases: [
        { name: "AgentHistory.stateAt(-1)", run: onCheckpointer(AgentHistory.stateAt(options, -1)) },
        {
          name: "AgentHistory.fork at turn 500, edited",
          run: onCheckpointer(
            Effect.suspend(() => AgentHistory.fork({ ...options, runId: `fork-${forks++}`, from: runId, at, edit }))
          )
        },
        { name: "DurableAgent.checkpoints", run: onClient(agent.checkpoints(runId)) },
        { name: "DurableAgent.stateAt(-1)", run: onClient(agent.stateAt(runId, -1)) },
        {
          name: "DurableAgent.fork at turn 500, edited",
          run: onClient(Effect.suspend(() => agent.fork({ runId: `fork-${forks++}`, from: runId, at, edit })))
        }
      ],
      ratios: [
        { of: "DurableAgent.checkpoints", to: "AgentHistory.checkpoints", note: "the same run on a Checkpointer" },
        { of: "DurableAgent.stateAt(-1)", to: "AgentHistory.stateAt(-1)", note: "the same run on a Checkpointer" },
        {
          of: "DurableAgent.fork at turn 500, edited",
          to: "AgentHistory.fork at turn 500, edited",
          note: "the same run on a Checkpointer"
        }
      ]
    })
  } finally {
    await client.dispose()
  }
} finally {
  await checkpointer.dispose()
  Fs.rmSync(dir, { recursive: true, force: true })
}
