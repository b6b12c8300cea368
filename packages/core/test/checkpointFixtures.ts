/** What the retention and compaction tests share: runs to record, agents to run, and the stores to run them on. */
import { NodeSqliteClient } from "@agentloop/durable"
import { MockLanguageModel, Reachable } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe } from "@effect/vitest"
import { Deferred, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { model, pricing, usage } from "./agentFixtures.ts"

export const fingerprint = { input: "sha256:aa" }

/**
 * An `add` tool, and a `slow` one that never ends the first time it is called (so a run can be cut off in it), both
 * idempotent.
 */
export const tools = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  let slowCalls = 0
  const add = Tool.make({
    name: "add",
    description: "Adds two numbers",
    input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
    output: Schema.Finite,
    idempotent: true,
    execute: ({ a, b }) => Effect.succeed(a + b)
  })
  const slow = Tool.make({
    name: "slow",
    description: "Takes forever the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    // Run again when a run cut off in it resumes (a tool that is not idempotent would not be: see AgentLoopResume).
    idempotent: true,
    execute: () =>
      Effect.suspend(() =>
        ++slowCalls === 1 ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never) : Effect.succeed("done")
      )
  })
  return { started, toolkit: Toolkit.make(add, slow) }
})

export const slowCall = MockLanguageModel.callsTurn([{ name: "slow", arguments: {}, callId: "call_slow" }], {
  model,
  usage
})
export const fresh = (name: string) => `${name}-${Math.random().toString(36).slice(2)}`

/** Opens run `id`, appends `entries`, then `result` as the append that finishes it (when given), and closes it. */
export const record = (id: string, entries: ReadonlyArray<string>, result?: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* (yield* Checkpointer.Checkpointer).open(id, fingerprint)
    for (const entry of entries) yield* log.append([entry])
    if (result !== undefined) yield* log.append(result, { finished: true })
  }))

export const read = (id: string) => Effect.flatMap(Checkpointer.Checkpointer, (store) => store.read(id))

/** Runs `runId` on a mock answering `script`, against the checkpointer in context: its exit and how many turns it asked. */
export const runAgent = (
  script: ReadonlyArray<MockLanguageModel.Reply>,
  runId: string,
  options: Partial<AgentLoop.Options<string, never>> = {}
) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit((yield* AgentLoop.AgentLoop).run({ input: "Hi", model, runId, ...options }))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, asked: requests.length }
  }).pipe(
    Effect.provide(
      AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))
    )
  )

/** A temporary directory for a test file's stores, removed by `remove`. */
export const tempDirectory = (name: string) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), `agentloop-${name}-`))
  return { dir, remove: () => Fs.rmSync(dir, { recursive: true, force: true }) }
}

export const files = (dir: string) =>
  Checkpointer.layerFileSystem(dir).pipe(Layer.provide(NodeFileSystem.layer), Layer.provide(NodePath.layer))

export const sqlite = (filename: string) => NodeSqliteClient.layer({ filename })

export const postgresReachable = await Reachable.listening(5432)

export const postgresClient = PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })

/** Drops the checkpoint tables named after `table`. */
export const dropTables = (table: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql`DROP TABLE IF EXISTS ${sql(table)}`,
        sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`
      ])).pipe(Effect.provide(postgresClient))
  )

/**
 * Declares `suite` once per store: in memory, on the file system and on SQLite
 * (in a temporary directory of the file's), and on PostgreSQL when something
 * listens on its port (in tables of the file's own, dropped after).
 */
export const eachStore = (
  name: string,
  suite: (label: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) => void
): void => {
  const temp = tempDirectory(name)
  afterAll(temp.remove)
  suite("in memory", () => Checkpointer.layerMemory)
  suite("on the file system", () =>
    Checkpointer.layerFileSystem(temp.dir, { sync: false }).pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    ))
  suite("on SQLite", () => Checkpointer.layerSql().pipe(Layer.provide(sqlite(Path.join(temp.dir, "checkpoints.db")))))
  if (!postgresReachable) console.warn(`${name}: SKIPPING the PostgreSQL tests: nothing listens on 127.0.0.1:5432`)
  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_${name.replaceAll("-", "_")}_test_${process.pid}`
    afterAll(() => dropTables(table))
    suite("on PostgreSQL", () => Checkpointer.layerSql({ table }).pipe(Layer.provide(postgresClient)))
  })
}
