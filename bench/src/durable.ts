/**
 * What a durable run adds per turn: runs of 10 turns (9 that call one tool, then
 * an answer) on a model with no HTTP, each run a new run id,
 *
 * - baseline: `AgentLoop.run`, nothing recorded;
 * - `DurableAgent.run` on the embedded runner, SQLite in a temporary file,
 *   with `synchronous: "NORMAL"` (survives a crashed process) and `"FULL"`
 *   (survives a power cut: every commit synced to disk; the default);
 * - `DurableAgent.run` on a runner over PostgreSQL (127.0.0.1:5432), when one
 *   is reachable.
 *
 * Each turn is recorded in the run's journal: the turn, its events and the
 * decision before it in one write, the tool call in another.
 */
import { AgentLoop, LanguageModel, Tool, Toolkit } from "@agentloop/core"
import type { AgentEvent, Item, TurnDelta } from "@agentloop/core"
import { DurableAgent, DurableRunner } from "@agentloop/durable"
import { MockLanguageModel } from "@agentloop/testing"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Layer, ManagedRuntime, References, Schema, Stream } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { compare } from "./measure.ts"

const turns = 10

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  idempotent: true,
  execute: ({ a, b }) => Effect.succeed(a + b)
})
const toolkit = Toolkit.make(add)
// Different arguments each turn: the same call and result over and over would end the run with NoProgress.
const script = Array.from(
  { length: turns },
  (_, i) =>
    i < turns - 1
      ? MockLanguageModel.callsTurn([{ name: "add", arguments: { a: i, b: 1 } }])
      : MockLanguageModel.textTurn("done")
)

// The cluster logs its runner's comings and goings; a benchmark's output is its table.
const quiet = Layer.succeed(References.MinimumLogLevel, "Error")

/** A model that calls `add` until the history holds `turns - 1` results, then answers: any number of runs at once. */
const model = Layer.succeed(LanguageModel.LanguageModel, {
  provider: "bench",
  streamTurn: (history: ReadonlyArray<Item.Item>): Stream.Stream<TurnDelta.TurnDelta> => {
    const results = history.filter((item) => item.type === "function_call_output").length
    return Stream.fromIterable(MockLanguageModel.deltas(script[Math.min(results, turns - 1)]!))
  }
})

const options = { instructions: "Add.", toolkit, limits: { maxTurns: turns + 1 } }
const agent = DurableAgent.make("bench", options)

const plain = ManagedRuntime.make(AgentLoop.layer.pipe(Layer.provide(model)))

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-bench-"))
const sqlite = (synchronous: "NORMAL" | "FULL") =>
  ManagedRuntime.make(agent.layer.pipe(
    Layer.provideMerge(DurableRunner.layerSqlite({ filename: Path.join(dir, `${synchronous}.db`), synchronous })),
    Layer.provide(model),
    Layer.provide(quiet)
  ))

const pg = { host: "127.0.0.1", port: 5432, database: "test", username: "postgres" }
const prefix = `agentloop_bench_${process.pid}`
const reachable = await new Promise<boolean>((resolve) => {
  const socket = Net.connect({ host: pg.host, port: pg.port, timeout: 1000 })
  const done = (ok: boolean) => (socket.destroy(), resolve(ok))
  socket.once("connect", () => done(true)).once("error", () => done(false)).once("timeout", () => done(false))
})
const postgres = reachable
  ? ManagedRuntime.make(agent.layer.pipe(
    Layer.provideMerge(DurableRunner.layerPg({ name: "bench" }, pg, { prefix })),
    Layer.provide(model),
    Layer.provide(quiet)
  ))
  : undefined

const check = (result: AgentEvent.RunResult) => {
  if (result._tag !== "Stopped" || result.termination.accounting.steps !== turns) {
    throw new Error("the run did not take its turns")
  }
}

let next = 0
const durable = (runtime: ManagedRuntime.ManagedRuntime<DurableRunner.Services, unknown>) => () =>
  runtime.runPromise(Effect.map(agent.run({ runId: `run-${next++}`, input: "Add" }), check))

const runtimes = { normal: sqlite("NORMAL"), full: sqlite("FULL") }
try {
  await compare({
    title: `Durable runs per turn: runs of ${turns} turns (a tool call each but the last), mock model`,
    units: turns,
    unit: "turn",
    rounds: 5,
    baseline: {
      name: "AgentLoop.run (nothing recorded)",
      run: () =>
        plain.runPromise(Effect.map(AgentLoop.AgentLoop.use((loop) => loop.run({ ...options, input: "Add" })), check))
    },
    cases: [
      { name: "DurableAgent.run, SQLite synchronous=NORMAL", run: durable(runtimes.normal) },
      { name: "DurableAgent.run, SQLite synchronous=FULL", run: durable(runtimes.full) },
      ...(postgres === undefined ? [] : [{ name: "DurableAgent.run, PostgreSQL", run: durable(postgres) }])
    ]
  })
  if (postgres === undefined) console.log("  (PostgreSQL is unreachable at 127.0.0.1:5432: its case was skipped)")
} finally {
  await Promise.all([plain.dispose(), runtimes.normal.dispose(), runtimes.full.dispose(), postgres?.dispose()])
  Fs.rmSync(dir, { recursive: true, force: true })
  if (postgres !== undefined) {
    await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* PgClient.PgClient
        const tables = yield* sql<{ readonly tablename: string }>`
        SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, ${`${prefix}_`})`
        for (const { tablename } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(tablename)} CASCADE`
      }).pipe(Effect.scoped, Effect.provide(PgClient.layer(pg)))
    )
  }
}
