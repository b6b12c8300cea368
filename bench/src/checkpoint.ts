/**
 * What checkpointing costs an `AgentLoop` run: 40 turns, each calling one tool,
 * on the mock model (no network, so the checkpoint is the whole difference).
 * Each turn appends four entries (answered, tool started, tool done, decided:
 * the tool is not idempotent); every store below makes each append durable
 * before it returns, except where it says so (and the decision, which the next
 * turn's append takes to the disk). The same run with the tool declared
 * idempotent (three entries a turn: no start recorded) shows what recording a
 * call's start costs, on files and on SQLite.
 *
 * - baseline: the run with no `Checkpointer`;
 * - `Checkpointer.layerFileSystem` (the embedded default: an append-only log
 *   per run, one write and one sync per append), and the same without syncs;
 * - the 0.1 layout, `layerKeyValueStore` over `KeyValueStore.layerFileSystem`
 *   (a file per entry and a rewritten length file, no sync), for comparison;
 * - `Checkpointer.layerSql` on a SQLite file (`node:sqlite`, WAL,
 *   `synchronous = FULL`), and on the local PostgreSQL (skipped, saying so,
 *   when none listens on 127.0.0.1:5432).
 *
 * Then what the version each entry carries costs an append: a run's entries
 * encoded by `AgentCheckpoint.codec` against the same entries encoded as they
 * were before entries carried a version.
 */
import { AgentCheckpoint, AgentLoop, Checkpointer, Tool, Toolkit } from "@agentloop/core"
import { NodeSqliteClient } from "@agentloop/durable"
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
import { add, adder, script as scriptOf } from "./scriptedRun.ts"

const turns = 40
/** The same tool, declared idempotent: its calls record no start. */
const addIdempotent = Tool.make({ ...adder, idempotent: true })
const script = scriptOf(turns)

let runs = 0
const run = (checkpointer: Layer.Layer<never> | Layer.Layer<Checkpointer.Checkpointer>, tool = add) => () =>
  Effect.runPromise(
    Effect.flatMap(
      AgentLoop.AgentLoop,
      (agent) =>
        agent.run({
          input: "Count",
          toolkit: Toolkit.make(tool),
          runId: `bench-${runs++}`,
          limits: { maxTurns: turns }
        })
    )
      .pipe(
        Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script)))),
        Effect.provide(checkpointer)
      )
  ).then(() => undefined)

const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-checkpoints-"))
const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)
const files = Checkpointer.layerFileSystem(join(directory, "logs")).pipe(Layer.provide(platform))
const unsynced = Checkpointer.layerFileSystem(join(directory, "unsynced"), { sync: false }).pipe(
  Layer.provide(platform)
)
const keyValueFiles = Checkpointer.layerKeyValueStore().pipe(
  Layer.provide(KeyValueStore.layerFileSystem(join(directory, "kv"))),
  Layer.provide(platform)
)
const sqlite = Checkpointer.layerSql().pipe(
  Layer.provide(NodeSqliteClient.layer({ filename: join(directory, "checkpoints.db") }))
)

const postgresReachable = await Postgres.reachable()
const table = `agentloop_checkpoints_bench_${process.pid}`
const pgClient = PgClient.layer(Postgres.connection)
const postgres = Checkpointer.layerSql({ table }).pipe(Layer.provide(pgClient))

// Each store is built once and stays open across runs, as it would in an application.
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const built = (layer: Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
    Effect.map(Layer.build(layer), Layer.succeedContext)
  const pg = postgresReachable ? yield* built(postgres) : undefined
  const stores = {
    files: yield* built(files),
    unsynced: yield* built(unsynced),
    keyValueFiles: yield* built(keyValueFiles),
    sqlite: yield* built(sqlite)
  }
  if (pg === undefined) console.log("\n  (PostgreSQL case skipped: nothing listens on 127.0.0.1:5432)")
  yield* Effect.promise(() =>
    compare({
      title: `checkpoint overhead: ${turns} turns with a tool call each, on the mock model`,
      units: turns,
      unit: "turn",
      rounds: 5,
      baseline: { name: "AgentLoop.run without a Checkpointer", run: run(Layer.empty) },
      cases: [
        { name: "layerFileSystem (the embedded default)", run: run(stores.files) },
        { name: "layerFileSystem, the tool idempotent", run: run(stores.files, addIdempotent) },
        { name: "layerFileSystem, sync: false", run: run(stores.unsynced) },
        { name: "0.1 layout: key-value files, no sync", run: run(stores.keyValueFiles) },
        { name: "layerSql on SQLite (synchronous FULL)", run: run(stores.sqlite) },
        { name: "layerSql on SQLite, the tool idempotent", run: run(stores.sqlite, addIdempotent) },
        ...(pg === undefined ? [] : [{ name: "layerSql on PostgreSQL", run: run(pg) }])
      ]
    })
  )
  if (postgresReachable) {
    yield* Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => Effect.all([sql`DROP TABLE IF EXISTS ${sql(table)}`, sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`])
    ).pipe(
      Effect.provide(pgClient),
      Effect.orDie
    )
  }
})))
rmSync(directory, { recursive: true, force: true })

// A run's entries (four a turn), encoded again and again: with their version, and as before.
const versioned = AgentCheckpoint.codec(Schema.String, "bench-versions")
const entries = await Effect.runPromise(
  Effect.gen(function*() {
    yield* Effect.flatMap(
      AgentLoop.AgentLoop,
      (agent) =>
        agent.run({ input: "Count", toolkit: Toolkit.make(add), runId: "bench-versions", limits: { maxTurns: turns } })
    )
      .pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script)))))
    const texts = yield* Effect.flatMap(Checkpointer.Checkpointer, (store) => store.read("bench-versions"))
    return yield* Effect.forEach(texts, versioned.decode)
  }).pipe(Effect.provide(Checkpointer.layerMemory))
)
const unversioned = Schema.encodeEffect(Schema.fromJsonString(Schema.toCodecJson(AgentCheckpoint.Entry(Schema.String))))
const passes = 20
const encodeAll = (encode: (entry: (typeof entries)[number]) => Effect.Effect<string, unknown>) => () => {
  for (let pass = 0; pass < passes; pass++) {
    for (const entry of entries) Effect.runSync(encode(entry))
  }
  return Promise.resolve()
}
await compare({
  title: `the version an entry carries: ${entries.length} entries of a ${turns}-turn run, encoded ${passes} times`,
  units: entries.length * passes,
  unit: "entry",
  rounds: 15,
  baseline: { name: "encoded as before (no version)", run: encodeAll(unversioned) },
  cases: [{ name: "AgentCheckpoint.codec (with its version)", run: encodeAll(versioned.encode) }]
})
