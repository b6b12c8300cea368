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
import { AgentLoop } from "@agentloop/core"
import { DurableAgent, DurableRunner } from "@agentloop/durable"
import { Effect, Layer, ManagedRuntime, References } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { checkResult, model, options, turns } from "./agentScript.ts"
import { compare } from "./measure.ts"
import * as Postgres from "./postgres.ts"

// The cluster logs its runner's comings and goings; a benchmark's output is its table.
const quiet = Layer.succeed(References.MinimumLogLevel, "Error")

const agent = DurableAgent.make("bench", { toolkit: options.toolkit, limits: options.limits })

const plain = ManagedRuntime.make(AgentLoop.layer.pipe(Layer.provide(model)))

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-bench-"))
const sqlite = (synchronous: "NORMAL" | "FULL") =>
  ManagedRuntime.make(agent.layer.pipe(
    Layer.provideMerge(DurableRunner.layerSqlite({ filename: Path.join(dir, `${synchronous}.db`), synchronous })),
    Layer.provide(model),
    Layer.provide(quiet)
  ))

const prefix = `agentloop_bench_${process.pid}`
const reachable = await Postgres.reachable()
const postgres = reachable
  ? ManagedRuntime.make(agent.layer.pipe(
    Layer.provideMerge(DurableRunner.layerPg({ name: "bench" }, Postgres.connection, { prefix })),
    Layer.provide(model),
    Layer.provide(quiet)
  ))
  : undefined

let next = 0
const durable = (runtime: ManagedRuntime.ManagedRuntime<DurableRunner.Services, unknown>) => () =>
  runtime.runPromise(Effect.map(agent.run({ runId: `run-${next++}`, input: options.input }), checkResult))

const runtimes = { normal: sqlite("NORMAL"), full: sqlite("FULL") }
try {
  await compare({
    title: `Durable runs per turn: runs of ${turns} turns (a tool call each but the last), mock model`,
    units: turns,
    unit: "turn",
    rounds: 5,
    baseline: {
      name: "AgentLoop.run (nothing recorded)",
      run: () => plain.runPromise(Effect.map(AgentLoop.AgentLoop.use((loop) => loop.run(options)), checkResult))
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
  if (postgres !== undefined) await Postgres.dropTables(prefix)
}
