/**
 * A process of the retention crash test: it opens a run's log and a thread's
 * log with a `Checkpointer` over files, SQLite or PostgreSQL, appends to each,
 * prints `{"opened":true}`, and holds both (renewing their leases) until it is
 * killed.
 */
import * as NodeSqliteClient from "@agentloop/durable/NodeSqliteClient"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as ThreadId from "../../src/agent/ThreadId.ts"
import * as Checkpointer from "../../src/Checkpointer.ts"

export const Config = Schema.Struct({
  store: Schema.Union([
    Schema.TaggedStruct("files", { directory: Schema.String }),
    Schema.TaggedStruct("sqlite", { filename: Schema.String }),
    Schema.TaggedStruct("pg", { table: Schema.String })
  ]),
  runId: Schema.String,
  thread: Schema.String,
  /** The lease's duration, in milliseconds. */
  lease: Schema.Number
})
export type Config = typeof Config.Type

const main = (config: Config) => {
  const options = { lease: config.lease, owner: "the child" }
  const store: Layer.Layer<Checkpointer.Checkpointer, unknown> = config.store._tag === "files"
    ? Checkpointer.layerFileSystem(config.store.directory, options).pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    )
    : config.store._tag === "sqlite"
    ? Checkpointer.layerSql(options).pipe(Layer.provide(NodeSqliteClient.layer({ filename: config.store.filename })))
    : Checkpointer.layerSql({ ...options, table: config.store.table }).pipe(
      Layer.provide(PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" }))
    )
  return Effect.scoped(Effect.gen(function*() {
    const checkpointer = yield* Checkpointer.Checkpointer
    const run = yield* checkpointer.open(config.runId, { input: "sha256:aa" })
    yield* run.append(["turn 1"])
    const thread = yield* checkpointer.open(ThreadId.logId(config.thread), { input: "sha256:aa" })
    yield* thread.append(["started"])
    yield* TestProcess.report({ opened: true })
    return yield* Effect.never
  })).pipe(
    Effect.provide(store),
    Effect.catchCause((cause) => TestProcess.report({ error: String(Cause.squash(cause)) }))
  )
}

Effect.runPromise(main(TestProcess.config(Config))).then(() => process.exit(0))
