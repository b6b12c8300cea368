/**
 * What recording a run costs per turn, against LangGraph.js's checkpoint
 * savers, every framework running the script of `agentScript.ts` (runs of ten
 * turns, nine calling `add`) on its mock model, each run a new run id (a new
 * thread for LangGraph), so the store is the whole difference:
 *
 * - LangGraph.js's prebuilt agent with `SqliteSaver` (better-sqlite3, WAL,
 *   which runs `synchronous=NORMAL`), `PostgresSaver` and `MemorySaver`, each
 *   run with `durability: "sync"` (a step's checkpoint is saved before the
 *   next step starts);
 * - `DurableAgent.run` (`@agentloop/durable`: every turn, call and decision an
 *   activity of `effect/workflow`) on the embedded runner (SQLite through
 *   `node:sqlite`, `synchronous` NORMAL and FULL) and on PostgreSQL;
 * - `AgentLoop.run` with a `runId` and a `Checkpointer`: files
 *   (`layerFileSystem`, the embedded default, synced and with `sync: false`),
 *   one SQLite file (`layerSql` on `node:sqlite`, NORMAL and FULL), PostgreSQL
 *   (`layerSql`), and memory.
 *
 * Issue 20's goal 2 holds a durable turn to at most LangGraph's saver on the
 * same database; goal 3 holds the embedded default `Checkpointer` to at most
 * LangGraph's SQLite saver. The PostgreSQL cases are skipped, saying so, when
 * nothing listens on 127.0.0.1:5432.
 */
import { AgentLoop, Checkpointer } from "@agentloop/core"
import { DurableAgent, DurableRunner, NodeSqliteClient } from "@agentloop/durable"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import * as PgClient from "@effect/sql-pg/PgClient"
import { MemorySaver } from "@langchain/langgraph"
import type { BaseCheckpointSaver } from "@langchain/langgraph"
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"
import { Effect, Layer, ManagedRuntime, References } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { checkResult, model, options, turns } from "./agentScript.ts"
import { ensureLoadable, keepStatements } from "./betterSqlite3.ts"
import * as LangGraph from "./langchainModel.ts"
import type { Case, Ratio } from "./measure.ts"
import { compare } from "./measure.ts"
import * as Postgres from "./postgres.ts"

const runs = 4

ensureLoadable()
const postgres = await Postgres.reachable()
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-bench-peers-"))
const prefix = `agentloop_bench_peers_${process.pid}`

// The cluster logs its runner's comings and goings; a benchmark's output is its table.
const quiet = Layer.succeed(References.MinimumLogLevel, "Error")

const agent = DurableAgent.make("bench", { toolkit: options.toolkit, limits: options.limits })
const durableRuntime = <E>(runner: Layer.Layer<DurableRunner.Services, E>) =>
  ManagedRuntime.make(agent.layer.pipe(Layer.provideMerge(runner), Layer.provide(model), Layer.provide(quiet)))

const checkpointRuntime = <E>(checkpointer: Layer.Layer<Checkpointer.Checkpointer, E>) =>
  ManagedRuntime.make(AgentLoop.layer.pipe(Layer.provide(model), Layer.provideMerge(checkpointer)))

const sqlite = (name: string, synchronous: "NORMAL" | "FULL") =>
  NodeSqliteClient.layer({ filename: Path.join(dir, `${name}.db`), synchronous })

const runtimes = {
  durableNormal: durableRuntime(
    DurableRunner.layerSqlite({ filename: Path.join(dir, "normal.db"), synchronous: "NORMAL" })
  ),
  durableFull: durableRuntime(DurableRunner.layerSqlite({ filename: Path.join(dir, "full.db"), synchronous: "FULL" })),
  durablePg: postgres
    ? durableRuntime(DurableRunner.layerPg({ name: "bench" }, Postgres.connection, { prefix }))
    : undefined,
  files: checkpointRuntime(
    Checkpointer.layerFileSystem(Path.join(dir, "files")).pipe(Layer.provide([NodeFileSystem.layer, NodePath.layer]))
  ),
  unsynced: checkpointRuntime(
    Checkpointer.layerFileSystem(Path.join(dir, "unsynced"), { sync: false }).pipe(
      Layer.provide([NodeFileSystem.layer, NodePath.layer])
    )
  ),
  sqlite: checkpointRuntime(Checkpointer.layerSql().pipe(Layer.provide(sqlite("checkpoints", "NORMAL")))),
  sqliteFull: checkpointRuntime(Checkpointer.layerSql().pipe(Layer.provide(sqlite("checkpoints-full", "FULL")))),
  pg: postgres
    ? checkpointRuntime(
      Checkpointer.layerSql({ table: `${prefix}_checkpoints` }).pipe(Layer.provide(PgClient.layer(Postgres.connection)))
    )
    : undefined,
  memory: checkpointRuntime(Checkpointer.layerMemory)
}

const sqliteSaver = SqliteSaver.fromConnString(Path.join(dir, "langgraph.db"))
keepStatements(sqliteSaver.db)
const schema = `${prefix}_langgraph`
const pgSaver = postgres ? PostgresSaver.fromConnString(Postgres.url, { schema }) : undefined
await pgSaver?.setup()

let next = 0
const times = (once: () => Promise<void>) => async () => {
  for (let i = 0; i < runs; i++) await once()
}
const durable = <E>(runtime: ManagedRuntime.ManagedRuntime<DurableRunner.Services, E>) =>
  times(() => runtime.runPromise(Effect.map(agent.run({ runId: `run-${next++}`, input: options.input }), checkResult)))
const checkpointed = <E>(runtime: ManagedRuntime.ManagedRuntime<AgentLoop.AgentLoop | Checkpointer.Checkpointer, E>) =>
  times(() =>
    runtime.runPromise(
      Effect.map(AgentLoop.AgentLoop.use((loop) => loop.run({ ...options, runId: `run-${next++}` })), checkResult)
    )
  )
const langgraph = (saver: BaseCheckpointSaver) => {
  const graph = LangGraph.agent(saver)
  return times(() => LangGraph.invokeRun(graph))
}

const names = {
  sqliteSaver: "LangGraph.js SqliteSaver (WAL, NORMAL)",
  pgSaver: "LangGraph.js PostgresSaver",
  memorySaver: "LangGraph.js MemorySaver",
  durableNormal: "DurableAgent.run, SQLite NORMAL",
  durableFull: "DurableAgent.run, SQLite FULL",
  durablePg: "DurableAgent.run, PostgreSQL",
  files: "Checkpointer, files (embedded default)",
  unsynced: "Checkpointer, files, sync: false",
  sqlite: "Checkpointer, SQLite layerSql (NORMAL)",
  sqliteFull: "Checkpointer, SQLite layerSql (FULL)",
  pg: "Checkpointer, PostgreSQL layerSql",
  memory: "Checkpointer, memory"
}

const pgCases: ReadonlyArray<Case> =
  pgSaver === undefined || runtimes.durablePg === undefined || runtimes.pg === undefined
    ? []
    : [
      { name: names.pgSaver, run: langgraph(pgSaver) },
      { name: names.durablePg, run: durable(runtimes.durablePg) },
      { name: names.pg, run: checkpointed(runtimes.pg) }
    ]
const pgRatios: ReadonlyArray<Ratio> = pgCases.length === 0 ? [] : [
  { of: names.durablePg, to: names.pgSaver, goal: { atMost: 1, source: "issue 20 goal 2; 3.8x quoted" } },
  { of: names.pg, to: names.pgSaver, note: "for reference; 0.30–0.38x quoted" }
]

try {
  if (pgCases.length === 0) console.log("\n  (PostgreSQL is unreachable at 127.0.0.1:5432: its cases are skipped)")
  await compare({
    title: `durable turn: runs of ${turns} turns (a call of one tool each but the last), mock models, ${runs} runs`,
    label: "durable turn",
    units: runs * turns,
    unit: "turn",
    baseline: { name: names.sqliteSaver, run: langgraph(sqliteSaver) },
    cases: [
      { name: names.memorySaver, run: langgraph(new MemorySaver()) },
      { name: names.durableNormal, run: durable(runtimes.durableNormal) },
      { name: names.durableFull, run: durable(runtimes.durableFull) },
      { name: names.files, run: checkpointed(runtimes.files) },
      { name: names.unsynced, run: checkpointed(runtimes.unsynced) },
      { name: names.sqlite, run: checkpointed(runtimes.sqlite) },
      { name: names.sqliteFull, run: checkpointed(runtimes.sqliteFull) },
      { name: names.memory, run: checkpointed(runtimes.memory) },
      ...pgCases
    ],
    ratios: [
      { of: names.durableNormal, to: names.sqliteSaver, goal: { atMost: 1, source: "issue 20 goal 2; 3.8x quoted" } },
      {
        of: names.durableFull,
        to: names.sqliteSaver,
        note: "for reference: FULL syncs every commit, the saver does not"
      },
      ...pgRatios,
      {
        of: names.files,
        to: names.sqliteSaver,
        goal: { atMost: 1, source: "issue 20 goal 3; 1.87x quoted, of the 0.1 key-value layout" }
      },
      {
        of: names.unsynced,
        to: names.sqliteSaver,
        note: "for reference: the saver's durability (a crashed process loses nothing, a power cut may)"
      },
      {
        of: names.sqlite,
        to: names.sqliteSaver,
        note: "for reference: the durability of sync: false, on Node only; 0.30x quoted"
      },
      {
        of: names.sqliteFull,
        to: names.sqliteSaver,
        note: "for reference: every commit synced, the decision's too (the files' durability, and more)"
      },
      { of: names.memory, to: names.memorySaver, note: "for reference" }
    ]
  })
} finally {
  await Promise.all(Object.values(runtimes).map((runtime) => runtime?.dispose()))
  await pgSaver?.end()
  sqliteSaver.db.close()
  Fs.rmSync(dir, { recursive: true, force: true })
  if (postgres) {
    await Postgres.dropTables(prefix)
    await Postgres.dropSchema(schema)
  }
}
