/**
 * A process of the thread crash tests: it executes one run on a thread (an
 * `AgentLoop` run, or the agent loop as a step program), with a
 * `Checkpointer` over files or PostgreSQL, asking the test's loopback server
 * for its turns. Its `slow` tool never ends the first time it
 * starts in any process (a marker file says), so the test can kill the
 * process mid-run. It prints one JSON object per line: `toolStarted`,
 * `result`, `error`. A run whose lease (or whose thread's) a killed process
 * still holds is tried again until the lease lapses.
 */
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
  runner: Schema.String,
  provider: Schema.String,
  /** The file the slow tool marks when it starts. */
  marker: Schema.String,
  runId: Schema.String,
  thread: Schema.String,
  /** What runs on the thread: an `AgentLoop` run, or a step program (a loop of one `llm` step). */
  run: Schema.Literals(["agent", "steps"]),
  /** The lease's duration, in milliseconds. */
  lease: Schema.Number
})
export type Config = typeof Config.Type

const main = (config: Config) => {
  const slow = Tool.make({
    name: "slow",
    description: "Takes forever the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () =>
      Effect.sync(() => {
        const first = !Fs.existsSync(config.marker)
        Fs.appendFileSync(config.marker, `${config.runner}\n`)
        return first
      }).pipe(
        Effect.tap(() => TestProcess.report({ toolStarted: "slow" })),
        Effect.flatMap((first) => first ? Effect.never : Effect.succeed("slow done"))
      )
  })
  const options = { lease: config.lease, owner: config.runner }
  const store: Layer.Layer<Checkpointer.Checkpointer, unknown> = config.store._tag === "files"
    ? Checkpointer.layerFileSystem(config.store.directory, options).pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    )
    : Checkpointer.layerSql({ ...options, table: config.store.table }).pipe(
      Layer.provide(PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" }))
    )
  const held = (error: unknown) =>
    typeof error === "object" && error !== null && "cause" in error && typeof error.cause === "object" &&
    error.cause !== null && "_tag" in error.cause && error.cause._tag === "RunInProgress"

  const toolkit = Toolkit.make(slow)
  const output: Effect.Effect<string, unknown, AgentLoop.AgentLoop | LanguageModel> = config.run === "agent"
    ? Effect.flatMap(
      AgentLoop.AgentLoop,
      (agent) => agent.run({ input: "Use the tool", toolkit, runId: config.runId, thread: config.thread })
    ).pipe(Effect.map((result) => result._tag === "Stopped" ? result.output : result._tag))
    : Step.execute(
      Step.loop({ id: "agent", steps: [Step.llm({ id: "turn" })], until: Until.noToolCalls() }),
      "Use the tool",
      { toolkit, id: config.runId, thread: config.thread }
    )

  return output.pipe(
    Effect.retry({ while: held, schedule: Schedule.spaced("200 millis"), times: 150 }),
    Effect.flatMap((result) => TestProcess.report({ result })),
    Effect.provide(AgentLoop.layer.pipe(Layer.provideMerge(LoopbackModel.layer(config.provider, config.runner)))),
    Effect.provide(store),
    Effect.catchCause((cause) => TestProcess.report({ error: String(Cause.squash(cause)) }))
  )
}

const config = TestProcess.config(Config)
Effect.runPromise(main(config)).then(() => process.exit(0))
