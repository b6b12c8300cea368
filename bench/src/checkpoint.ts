/**
 * What checkpointing costs an `AgentLoop` run: 40 turns, each calling one tool,
 * on the mock model (no network, so the checkpoint is the whole difference):
 *
 * - baseline: the run with no `Checkpointer`;
 * - with `Checkpointer.layerKeyValueStore` over `KeyValueStore.layerFileSystem`
 *   (the embedded default: a file per entry);
 * - with `Checkpointer.layerSql` on the local PostgreSQL (skipped, saying so,
 *   when none listens on 127.0.0.1:5432).
 *
 * Each turn appends three entries (answered, tool done, decided).
 */
import { AgentLoop, Checkpointer, Tool, Toolkit } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { compare } from "./measure.ts"
import * as Postgres from "./postgres.ts"

const turns = 40
const add = Tool.make({
  name: "add",
  description: "Adds",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})
const script = [
  ...Array.from(
    { length: turns - 1 },
    (_, i) =>
      MockLanguageModel.callsTurn([{ name: "add", arguments: { a: i, b: 1 }, callId: `call_${i}` }], {
        model: "gpt-5-mini"
      })
  ),
  MockLanguageModel.textTurn("done", { model: "gpt-5-mini" })
]

let runs = 0
const run = (checkpointer: Layer.Layer<never> | Layer.Layer<Checkpointer.Checkpointer>) => () =>
  Effect.runPromise(
    Effect.flatMap(AgentLoop.AgentLoop, (agent) =>
      agent.run({ input: "Count", toolkit: Toolkit.make(add), runId: `bench-${runs++}`, limits: { maxTurns: turns } }))
      .pipe(
        Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script)))),
        Effect.provide(checkpointer)
      )
  ).then(() =>
    undefined
  )

const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-checkpoints-"))
const files = Checkpointer.layerKeyValueStore().pipe(
  Layer.provide(KeyValueStore.layerFileSystem(directory)),
  Layer.provide(NodeFileSystem.layer),
  Layer.provide(NodePath.layer)
)

const postgresReachable = await Postgres.reachable()

const table = `agentloop_checkpoints_bench_${process.pid}`
const pgClient = PgClient.layer(Postgres.connection)
const postgres = Layer.build(Checkpointer.layerSql({ table }).pipe(Layer.provide(pgClient)))

// Each store is built once and stays open across runs, as it would in an application.
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const file = Layer.succeedContext(yield* Layer.build(files))
  const pg = postgresReachable ? Layer.succeedContext(yield* postgres) : undefined
  if (pg === undefined) console.log("\n  (PostgreSQL case skipped: nothing listens on 127.0.0.1:5432)")
  yield* Effect.promise(() =>
    compare({
      title: `checkpoint overhead: ${turns} turns with a tool call each, on the mock model`,
      units: turns,
      unit: "turn",
      rounds: 5,
      baseline: { name: "AgentLoop.run without a Checkpointer", run: run(Layer.empty) },
      cases: [
        { name: "with a file-system Checkpointer", run: run(file) },
        ...(pg === undefined ? [] : [{ name: "with a PostgreSQL Checkpointer", run: run(pg) }])
      ]
    })
  )
  if (postgresReachable) {
    yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP TABLE IF EXISTS ${sql(table)}`).pipe(
      Effect.provide(pgClient),
      Effect.orDie
    )
  }
})))
rmSync(directory, { recursive: true, force: true })
