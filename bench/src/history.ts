/**
 * What reading a run's history costs: a recorded `AgentLoop` run of 1,000
 * turns (each calling one tool: 3,000 entries and a `Finished`), on the file
 * store and on the local PostgreSQL (skipped, saying so, when none listens on
 * 127.0.0.1:5432). Against reading the log's entries as they are
 * (`checkpointer.read`), per turn:
 *
 * - `AgentHistory.checkpoints`: every checkpoint with what it holds;
 * - `AgentHistory.stateAt(-1)`: the run at its last checkpoint;
 * - `AgentHistory.fork` at turn 500 with an edit: the source read under its
 *   lease, 1,500 entries written to a new run in one append;
 * - the replay: `AgentLoop.stream` of the finished run, asking no model;
 *
 * and a look at its log by a client that follows it (`ResumableStream`, while
 * another process executes it): `AgentHistory.follow`'s read that finds
 * nothing new, against `AgentHistory.events`, the whole log read and decoded,
 * which each look was before.
 */
import { AgentHistory, AgentLoop, Checkpointer, Toolkit } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { compare } from "./measure.ts"
import * as Postgres from "./postgres.ts"
import { add, script as scriptOf } from "./scriptedRun.ts"

const turns = 1000
const script = scriptOf(turns)
const options = {
  input: "Count",
  toolkit: Toolkit.make(add),
  runId: `history-${process.pid}`,
  limits: { maxTurns: turns }
}

const agent = (replies: ReadonlyArray<MockLanguageModel.Reply>) =>
  AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(replies)))

const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-history-"))
const files = Checkpointer.layerFileSystem(join(directory, "logs")).pipe(
  Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
)
const postgresReachable = await Postgres.reachable()
const table = `agentloop_history_bench_${process.pid}`
const pgClient = PgClient.layer(Postgres.connection)
const postgres = Checkpointer.layerSql({ table }).pipe(Layer.provide(pgClient))

let forks = 0
const suite = (name: string, store: Context.Context<Checkpointer.Checkpointer>) =>
  Effect.gen(function*() {
    const provided = <A, E>(effect: Effect.Effect<A, E, Checkpointer.Checkpointer>) => () =>
      Effect.runPromise(Effect.asVoid(Effect.provide(effect, store)))
    yield* Effect.flatMap(AgentLoop.AgentLoop, (loop) => loop.run(options)).pipe(
      Effect.provide(agent(script)),
      Effect.provide(store)
    )
    const entries = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read(options.runId)).pipe(
      Effect.provide(store)
    )
    const bytes = entries.reduce((sum, entry) => sum + entry.length, 0)
    console.log(`\n  ${name}: ${entries.length} entries, ${(bytes / 1024).toFixed(0)} KiB of JSON`)
    yield* Effect.promise(() =>
      compare({
        title: `run history on ${name}: a recorded run of ${turns} turns`,
        units: turns,
        unit: "turn",
        rounds: 5,
        baseline: {
          name: "checkpointer.read (the entries as stored)",
          run: provided(Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read(options.runId)))
        },
        cases: [
          { name: "AgentHistory.checkpoints", run: provided(AgentHistory.checkpoints(options)) },
          { name: "AgentHistory.stateAt(-1)", run: provided(AgentHistory.stateAt(options, -1)) },
          {
            name: "AgentHistory.fork at turn 500, edited",
            run: provided(Effect.suspend(() =>
              AgentHistory.fork({
                ...options,
                runId: `${options.runId}-fork-${forks++}`,
                from: options.runId,
                at: 1499,
                edit: AgentHistory.addMessage("Go on from 500")
              })
            ))
          },
          {
            name: "replay: AgentLoop.stream of the finished run",
            run: provided(
              Effect.flatMap(AgentLoop.AgentLoop, (loop) => Stream.runDrain(loop.stream(options))).pipe(
                Effect.provide(agent([]))
              )
            )
          }
        ]
      })
    )
    // A follower that has read the whole log: each look after reads its last entry again, to compare.
    const follower = yield* AgentHistory.follow(options)
    yield* Effect.provide(follower.read, store)
    const events = "AgentHistory.events (each look before)"
    const look = "AgentHistory.follow: a look, nothing new"
    yield* Effect.promise(() =>
      compare({
        title: `following on ${name}: a look at the log of a run of ${turns} turns`,
        units: 1,
        unit: "look",
        rounds: 5,
        baseline: { name: events, run: provided(AgentHistory.events(options)) },
        cases: [{ name: look, run: provided(follower.read) }],
        ratios: [{ of: look, to: events, note: "kept for reference" }]
      })
    )
  })

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const built = (layer: Layer.Layer<Checkpointer.Checkpointer, unknown>) => Effect.orDie(Layer.build(layer))
  yield* suite("files", yield* built(files))
  if (!postgresReachable) {
    console.log("\n  (PostgreSQL case skipped: nothing listens on 127.0.0.1:5432)")
    return
  }
  yield* suite("PostgreSQL", yield* built(postgres))
  yield* Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => Effect.all([sql`DROP TABLE IF EXISTS ${sql(table)}`, sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`])
  ).pipe(Effect.provide(pgClient), Effect.orDie)
})))
rmSync(directory, { recursive: true, force: true })
