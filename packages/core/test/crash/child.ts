/**
 * A process of the checkpoint crash tests: it executes an `AgentLoop` run, or
 * a step program, with a `Checkpointer` over files or PostgreSQL, asking the
 * test's loopback server for its turns. It prints one JSON object per line:
 * `toolStarted`, `result`, `error`. Each tool appends the runner's name to
 * `<markers>/<tool>.log` when it starts; the first run of `slow` never ends,
 * so the test can kill the process in the middle of it.
 */
import * as LoopbackModel from "@agentloop/testing/LoopbackModel"
import * as TestProcess from "@agentloop/testing/TestProcess"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Layer, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as AgentLoop from "../../src/agent/AgentLoop.ts"
import * as Checkpointer from "../../src/Checkpointer.ts"
import type { LanguageModel } from "../../src/LanguageModel.ts"
import * as Step from "../../src/step/Step.ts"
import * as Tool from "../../src/Tool.ts"
import * as Toolkit from "../../src/Toolkit.ts"
import * as Until from "../../src/Until.ts"

export const Config = Schema.Struct({
  store: Schema.Union([
    Schema.TaggedStruct("files", { directory: Schema.String }),
    Schema.TaggedStruct("pg", { table: Schema.String })
  ]),
  program: Schema.Literals(["agent", "steps"]),
  runner: Schema.String,
  provider: Schema.String,
  markers: Schema.String,
  runId: Schema.String
})
export type Config = typeof Config.Type

const main = (config: Config) => {
  /** Appends the runner to the tool's marker file; true on the tool's first start, in any process. */
  const started = (tool: string) =>
    Effect.tap(
      Effect.sync(() => {
        const file = Path.join(config.markers, `${tool}.log`)
        const first = !Fs.existsSync(file)
        Fs.appendFileSync(file, `${config.runner}\n`)
        return first
      }),
      () => TestProcess.report({ toolStarted: tool })
    )
  const add = Tool.make({
    name: "add",
    description: "Adds two numbers",
    input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
    output: Schema.Finite,
    execute: ({ a, b }) => Effect.as(started("add"), a + b)
  })
  const slow = Tool.make({
    name: "slow",
    description: "Takes forever the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () => Effect.flatMap(started("slow"), (first) => first ? Effect.never : Effect.succeed("finally"))
  })
  const toolkit = Toolkit.make(add, slow)

  const run: Effect.Effect<string, unknown, AgentLoop.AgentLoop | LanguageModel> = config.program === "agent"
    ? Effect.flatMap(
      AgentLoop.AgentLoop,
      (agent) => agent.run({ input: "Add, then be slow", toolkit, runId: config.runId })
    ).pipe(
      Effect.map((result) => result._tag === "Stopped" ? result.output : result._tag)
    )
    : Step.execute(
      Step.loop({ id: "agent", steps: [Step.llm({ id: "turn" })], until: Until.noToolCalls() }),
      "Add, then be slow",
      { id: config.runId, toolkit }
    )

  const store: Layer.Layer<Checkpointer.Checkpointer, unknown> = config.store._tag === "files"
    ? Checkpointer.layerKeyValueStore().pipe(
      Layer.provide(KeyValueStore.layerFileSystem(config.store.directory)),
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    )
    : Checkpointer.layerSql({ table: config.store.table }).pipe(
      Layer.provide(PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" }))
    )

  return run.pipe(
    Effect.flatMap((result) => TestProcess.report({ result })),
    Effect.provide(AgentLoop.layer.pipe(Layer.provideMerge(LoopbackModel.layer(config.provider, config.runner)))),
    Effect.provide(store),
    Effect.catchCause((cause) => TestProcess.report({ error: String(Cause.squash(cause)) }))
  )
}

const config = TestProcess.config(Config)
Effect.runPromise(main(config)).then(() => process.exit(0))
