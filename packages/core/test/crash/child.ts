/**
 * A process of the checkpoint crash tests: it executes an `AgentLoop` run, or
 * a step program that forks paths, with a `Checkpointer` over files, SQLite or
 * PostgreSQL, asking the test's loopback server for its turns. It prints one
 * JSON object per line: `toolStarted`, `appended` (the tags of entries whose
 * append succeeded), `result`, `error` (with `tag`, the `_tag` of the cause of
 * a checkpoint failure).
 *
 * Every tool (and every fork path) appends the runner's name to
 * `<markers>/<name>.log` when it starts; `slow` also appends the
 * `Tool.IdempotencyKey` it runs with to `<markers>/slow.keys`, and is
 * idempotent or not as `slowIdempotent` says. `quick` tools end at once, so the
 * calls of one turn end in the same tick; `slow` never ends the first time, so
 * the test can kill the process in the middle of the turn. With `waitForLease`,
 * a run whose lease another executor still holds (one that was just killed) is
 * tried again until the lease lapses. With `compactAfter`, the run's log is
 * compacted into a snapshot of its state as it grows.
 */
import * as NodeSqliteClient from "@agentloop/durable/NodeSqliteClient"
import * as LoopbackModel from "@agentloop/testing/LoopbackModel"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as AgentLoop from "../../src/agent/AgentLoop.ts"
import * as Checkpointer from "../../src/Checkpointer.ts"
import type * as CheckpointStore from "../../src/CheckpointStore.ts"
import type { LanguageModel } from "../../src/LanguageModel.ts"
import * as Step from "../../src/step/Step.ts"
import * as Tool from "../../src/Tool.ts"
import * as Toolkit from "../../src/Toolkit.ts"

export const Config = Schema.Struct({
  store: Schema.Union([
    Schema.TaggedStruct("files", { directory: Schema.String }),
    Schema.TaggedStruct("sqlite", { filename: Schema.String }),
    Schema.TaggedStruct("pg", { table: Schema.String })
  ]),
  program: Schema.Literals(["agent", "fork"]),
  runner: Schema.String,
  provider: Schema.String,
  markers: Schema.String,
  runId: Schema.String,
  /** The lease's duration, in milliseconds. */
  lease: Schema.Number,
  waitForLease: Schema.Boolean,
  /** The names of the quick tools (and fork paths): they end at once. */
  quick: Schema.Array(Schema.String),
  /** The `AgentLoop` run's `compactAfter`, if any. */
  compactAfter: Schema.optionalKey(Schema.Number),
  /** Whether the `slow` tool is declared idempotent. */
  slowIdempotent: Schema.Boolean
})
export type Config = typeof Config.Type

const main = (config: Config) => {
  /** Appends the runner to `name`'s marker file; true on its first start, in any process. */
  const started = (name: string) =>
    Effect.tap(
      Effect.sync(() => {
        const file = Path.join(config.markers, `${name}.log`)
        const first = !Fs.existsSync(file)
        Fs.appendFileSync(file, `${config.runner}\n`)
        return first
      }),
      () => TestProcess.report({ toolStarted: name })
    )
  const quickTool = (name: string) =>
    Tool.make({
      name,
      description: `Answers ${name} at once`,
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () => Effect.as(started(name), `${name} done`)
    })
  const slow = Tool.make({
    name: "slow",
    description: "Takes forever the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    idempotent: config.slowIdempotent,
    execute: () =>
      Effect.flatMap(
        Tool.IdempotencyKey,
        (key) =>
          Effect.sync(() => Fs.appendFileSync(Path.join(config.markers, "slow.keys"), `${key}\n`)).pipe(
            Effect.andThen(started("slow")),
            Effect.flatMap((first) => first ? Effect.never : Effect.succeed("slow done"))
          )
      )
  })
  const toolkit = Toolkit.make(...config.quick.map(quickTool), slow)

  const path = (name: string, hangs: boolean) =>
    Step.run({
      id: name,
      execute: () =>
        Effect.flatMap(started(name), (first) => hangs && first ? Effect.never : Effect.succeed(`${name} done`))
    })
  const program = Step.fork({
    id: "paths",
    mode: "all",
    paths: () => [...config.quick.map((name) => path(name, false)), path("slow", true)],
    merge: (results: ReadonlyArray<string>) => results.join(", ")
  })

  const run: Effect.Effect<string, unknown, AgentLoop.AgentLoop | LanguageModel> = config.program === "agent"
    ? Effect.flatMap(
      AgentLoop.AgentLoop,
      (agent) =>
        agent.run({ input: "Call every tool", toolkit, runId: config.runId, compactAfter: config.compactAfter })
    ).pipe(Effect.map((result) => result._tag === "Stopped" ? result.output : result._tag))
    : Step.execute(program, "Take every path", { id: config.runId })

  const options = { lease: config.lease, owner: config.runner }
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

  /** The store, reporting each append that succeeded: the test kills the process once what it waits for is recorded. */
  const reporting = Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (inner) => ({
    ...inner,
    open: (id: string, fingerprint: Record<string, string>) =>
      Effect.map(inner.open(id, fingerprint), (log) => ({
        ...log,
        append: (entries: ReadonlyArray<string>, options?: CheckpointStore.AppendOptions) =>
          Effect.tap(
            log.append(entries, options),
            () => TestProcess.report({ appended: entries.map((entry) => JSON.parse(entry)._tag as string) })
          )
      }))
  }))).pipe(Layer.provide(store))

  /** The `_tag` of what a checkpoint failure says caused it. */
  const causeTag = (error: unknown): string | undefined =>
    typeof error === "object" && error !== null && "cause" in error && typeof error.cause === "object" &&
      error.cause !== null && "_tag" in error.cause && typeof error.cause._tag === "string"
      ? error.cause._tag
      : undefined

  return run.pipe(
    Effect.retry({
      while: (error) => config.waitForLease && causeTag(error) === "RunInProgress",
      schedule: Schedule.spaced("200 millis"),
      times: 150
    }),
    Effect.flatMap((result) => TestProcess.report({ result })),
    Effect.provide(AgentLoop.layer.pipe(Layer.provideMerge(LoopbackModel.layer(config.provider, config.runner)))),
    Effect.provide(reporting),
    Effect.catchCause((cause) => {
      const error = Cause.squash(cause)
      return TestProcess.report({ error: String(error), tag: causeTag(error) ?? null })
    })
  )
}

const config = TestProcess.config(Config)
Effect.runPromise(main(config)).then(() => process.exit(0))
