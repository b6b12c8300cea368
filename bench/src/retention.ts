/**
 * What retention saves: an `AgentLoop` run of 1,000 turns, each calling one
 * tool, on the mock model, then `Checkpointer.prune` with `keep: "result"`
 * (the run's log cut down to the entry that finished it). Prints, per store,
 * the log's size before and after (bytes of the file, or of the rows'
 * entries) and how long the prune took; the PostgreSQL case is skipped,
 * saying so, when nothing listens on 127.0.0.1:5432. Then the same run on
 * files with `compactAfter` (its log rewritten as one snapshot of its state
 * once it holds that many entries): the largest its log was seen (sampled
 * every millisecond), its size at the end, and the run's time against the
 * same run without compaction.
 *
 * The file log is written with `sync: false` here: the sizes are the point,
 * and a thousand syncs would only make the suite slow.
 */
import { AgentLoop, Checkpointer, Toolkit } from "@agentloop/core"
import { NodeSqliteClient } from "@agentloop/durable"
import { MockLanguageModel } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Fiber, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Postgres from "./postgres.ts"
import { add, script as scriptOf } from "./scriptedRun.ts"

const turns = 1000
const script = scriptOf(turns)

const runId = "bench-retention"
const executeAs = (id: string, compactAfter?: number) =>
  Effect.flatMap(
    AgentLoop.AgentLoop,
    (agent) =>
      agent.run({ input: "Count", toolkit: Toolkit.make(add), runId: id, limits: { maxTurns: turns }, compactAfter })
  ).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script)))))
const execute = executeAs(runId)

const Sizes = Schema.Array(Schema.Struct({
  entries: Schema.Union([Schema.Number, Schema.NumberFromString, Schema.BigInt]),
  bytes: Schema.NullOr(Schema.Union([Schema.Number, Schema.NumberFromString, Schema.BigInt]))
}))

/** The entries of the run and their bytes in table `table`. */
const sqlSize = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.flatMap(
      sql`SELECT COUNT(*) AS entries, SUM(LENGTH(entry)) AS bytes FROM ${sql(table)} WHERE execution_id = ${runId}`,
      Schema.decodeUnknownEffect(Sizes)
    )).pipe(Effect.map(([row]) => ({ entries: Number(row?.entries ?? 0), bytes: Number(row?.bytes ?? 0) })))

/** The size of the one log file under `dir` (0 while there is none, or while it is being replaced). */
const fileSize = (dir: string) =>
  Effect.sync(() => {
    try {
      const log = readdirSync(dir, { recursive: true, encoding: "utf8" }).find((name) => name.endsWith("log"))
      return { entries: Number.NaN, bytes: log === undefined ? 0 : statSync(join(dir, log)).size }
    } catch {
      return { entries: Number.NaN, bytes: 0 }
    }
  })

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

/** Runs the 1,000 turns on `store`, prunes, and prints the sizes `size` reads before and after. */
const measure = <E, R>(
  name: string,
  store: Layer.Layer<Checkpointer.Checkpointer, unknown>,
  size: Effect.Effect<{ readonly entries: number; readonly bytes: number }, E, R>
) =>
  Effect.gen(function*() {
    yield* execute
    // The run finished a moment ago: everything finished before now is cut down.
    yield* Effect.sleep("5 millis")
    const before = yield* size
    const started = performance.now()
    const pruned = yield* Checkpointer.prune({ finishedBefore: new Date(), keep: "result" })
    const took = performance.now() - started
    const after = yield* size
    const entries = (count: number) => Number.isNaN(count) ? "" : ` (${count} entries)`
    console.log(
      `  ${name.padEnd(34)} ${kb(before.bytes).padStart(11)}${entries(before.entries)} → ${kb(after.bytes)}${
        entries(after.entries)
      }: ${(before.bytes / after.bytes).toFixed(0)}x smaller, pruned ${pruned.runs.length} run in ${took.toFixed(1)} ms`
    )
  }).pipe(Effect.provide(store))

const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-retention-"))
const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)
const logs = join(directory, "logs")
const files = Checkpointer.layerFileSystem(logs, { sync: false }).pipe(Layer.provide(platform))
const sqliteClient = NodeSqliteClient.layer({ filename: join(directory, "checkpoints.db") })
const postgresReachable = await Postgres.reachable()
const table = `agentloop_checkpoints_retention_${process.pid}`
const pgClient = PgClient.layer(Postgres.connection)

/** The 1,000 turns on files with `compactAfter`, beside the same run without it. */
const compaction = (compactAfter: number) =>
  Effect.gen(function*() {
    const on = (name: string) =>
      Checkpointer.layerFileSystem(join(directory, name), { sync: false }).pipe(Layer.provide(platform))
    const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.map(Effect.timed(effect), ([duration]) => Duration.toMillis(duration))
    const plain = yield* timed(executeAs(runId).pipe(Effect.provide(on(`plain-${compactAfter}`))))
    const dir = join(directory, `compacted-${compactAfter}`)
    let largest = 0
    const watch = yield* Effect.forkChild(Effect.repeat(
      Effect.flatMap(fileSize(dir), ({ bytes }) => Effect.sync(() => largest = Math.max(largest, bytes))),
      Schedule.spaced("1 millis")
    ))
    const compacted = yield* timed(executeAs(runId, compactAfter).pipe(Effect.provide(on(`compacted-${compactAfter}`))))
    yield* Fiber.interrupt(watch)
    const final = yield* fileSize(dir)
    console.log(
      `  compactAfter: ${String(compactAfter).padEnd(21)} largest log seen ${kb(largest)}, ${
        kb(final.bytes)
      } at the end; the run took ${compacted.toFixed(0)} ms (${plain.toFixed(0)} ms uncompacted)`
    )
  })

console.log(`\nretention: the log of a ${turns}-turn run (a tool call each) before and after prune({ keep: "result" })`)
await Effect.runPromise(Effect.gen(function*() {
  yield* measure("layerFileSystem (sync: false)", files, fileSize(logs))
  yield* compaction(100)
  yield* compaction(1000)
  yield* measure(
    "layerSql on SQLite",
    Checkpointer.layerSql().pipe(Layer.provide(sqliteClient)),
    sqlSize("agentloop_checkpoints").pipe(Effect.provide(sqliteClient))
  )
  if (!postgresReachable) {
    console.log("  (PostgreSQL case skipped: nothing listens on 127.0.0.1:5432)")
    return
  }
  yield* measure(
    "layerSql on PostgreSQL",
    Checkpointer.layerSql({ table }).pipe(Layer.provide(pgClient)),
    sqlSize(table).pipe(Effect.provide(pgClient))
  )
  yield* Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => Effect.all([sql`DROP TABLE IF EXISTS ${sql(table)}`, sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`])
  ).pipe(Effect.provide(pgClient))
}))
rmSync(directory, { recursive: true, force: true })
