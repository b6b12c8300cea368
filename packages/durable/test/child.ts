/**
 * A process of the crash tests: a runner (or client) of the test agent over
 * SQLite or PostgreSQL, asking the test's loopback server for turns. It prints
 * one JSON object per line: `ready`, `toolStarted`, `approval`, `result`,
 * `error`. Tools append a line to `<markers>/<tool>.log` each time they start,
 * and the first run of `add` and `charge` never ends (so the test can kill it).
 */
import * as Approval from "@agentloop/core/Approval"
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as LoopbackModel from "@agentloop/testing/LoopbackModel"
import * as TestProcess from "@agentloop/testing/TestProcess"
import { Cause, Effect, Layer, Schema, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DurableAgent, DurableRunner } from "../src/index.ts"

const Store = Schema.Union([
  Schema.TaggedStruct("sqlite", { filename: Schema.String }),
  Schema.TaggedStruct("pg", { prefix: Schema.String, client: Schema.Boolean })
])

export const Config = Schema.Struct({
  store: Store,
  runner: Schema.String,
  provider: Schema.String,
  markers: Schema.String,
  action: Schema.Literals(["run", "serve", "approve"]),
  runId: Schema.String,
  input: Schema.String
})
export type Config = typeof Config.Type

const main = (config: Config) => {
  /** Counts a start of `tool`; true when it is the first. */
  const started = (tool: string) =>
    Effect.tap(
      Effect.sync(() => {
        const file = Path.join(config.markers, `${tool}.log`)
        const before = Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0
        Fs.appendFileSync(file, `${config.runner}\n`)
        return before === 0
      }),
      () => TestProcess.report({ toolStarted: tool, runner: config.runner })
    )
  const hangFirst = <A>(tool: string, value: A) =>
    Effect.flatMap(started(tool), (first) => first ? Effect.never : Effect.succeed(value))

  const add = Tool.make({
    name: "add",
    description: "Adds two numbers",
    input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
    output: Schema.Finite,
    idempotent: true,
    execute: ({ a, b }) => hangFirst("add", a + b)
  })
  const charge = Tool.make({
    name: "charge",
    description: "Charges a card",
    input: Schema.Struct({ cents: Schema.Int }),
    output: Schema.String,
    execute: ({ cents }) => hangFirst("charge", `charged ${cents}`)
  })
  const remove = Tool.make({
    name: "remove",
    description: "Removes a file",
    input: Schema.Struct({ path: Schema.String }),
    output: Schema.String,
    needsApproval: true,
    execute: ({ path }) => Effect.as(started("remove"), `removed ${path}`)
  })
  const agent = DurableAgent.make("crash-test", {
    instructions: "Use the tools.",
    toolkit: Toolkit.make(add, charge, remove)
  })
  const start = { runId: config.runId, input: config.input }

  const engine = config.store._tag === "sqlite"
    ? DurableRunner.layerSqlite({ filename: config.store.filename })
    : DurableRunner.layerPg(
      config.store.client ? "client" : { name: config.runner },
      { host: "127.0.0.1", port: 5432, database: "test", username: "postgres" },
      { prefix: config.store.prefix, sharding: { shardsPerGroup: 16 } }
    )

  const announceApprovals = agent.events(config.runId, { fromStep: 1 }).pipe(
    Stream.runForEach((event) =>
      event._tag === "ApprovalRequested" ? TestProcess.report({ approval: event.token }) : Effect.void
    ),
    Effect.ignore,
    Effect.forkScoped
  )

  const program = Effect.gen(function*() {
    yield* TestProcess.report({ ready: config.runner })
    switch (config.action) {
      case "serve":
        return yield* Effect.never
      case "approve": {
        const token = yield* agent.events(config.runId, { fromStep: 1 }).pipe(
          Stream.filter((event) => event._tag === "ApprovalRequested"),
          Stream.runHead
        )
        if (token._tag === "None" || token.value._tag !== "ApprovalRequested") return yield* Effect.die("no approval")
        yield* agent.approve(token.value.token, Approval.approved)
        break
      }
      case "run":
        yield* announceApprovals
    }
    const result = yield* agent.run(start)
    yield* TestProcess.report({ result: result._tag === "Stopped" ? result.output : result._tag })
  })

  return program.pipe(
    Effect.scoped,
    Effect.provide(
      agent.layer.pipe(Layer.provideMerge(engine), Layer.provide(LoopbackModel.layer(config.provider, config.runner)))
    ),
    Effect.catchCause((cause) =>
      Effect.andThen(TestProcess.report({ error: tagOf(Cause.squash(cause)) }), Effect.sync(() => process.exit(1)))
    )
  )
}

const tagOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : String(error)

const config = TestProcess.config(Config)
Effect.runPromise(main(config)).then(() => process.exit(0))
