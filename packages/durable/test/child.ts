/**
 * A process of the crash tests: a runner (or client) of the test agent over
 * SQLite or PostgreSQL, asking the test's loopback server for turns. It prints
 * one JSON object per line: `ready`, `toolStarted`, `approval`, `decided`,
 * `result`, `finished`, `parked`, `error`. Tools append a line to
 * `<markers>/<tool>.log` each time they start; the first run of `add` and
 * `charge` never ends (so the test can kill it), and `explode` kills its own
 * process while the file `<markers>/fuse` exists.
 *
 * Actions: `run` runs the run and reports its approvals and result; `serve`
 * only starts a runner (and, given a run id, reports from the run's log its
 * approvals and when it finishes, and when it is parked); `approve` records
 * `decisions` for the run's calls, from their tokens in the log, then reports
 * as `serve` does.
 */
import * as Approval from "@agentloop/core/Approval"
import * as LoopbackModel from "@agentloop/testing/LoopbackModel"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as DurableRunner from "../src/DurableRunner.ts"
import * as CrashAgent from "./CrashAgent.ts"

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
  input: Schema.String,
  /** For `approve`: the decision for each call, by call id (approved, or denied with this reason). */
  decisions: Schema.optionalKey(Schema.Record(Schema.String, Schema.NullOr(Schema.String))),
  maxCrashes: Schema.optionalKey(Schema.Int)
})
export type Config = typeof Config.Type

const main = (config: Config) => {
  const agent = CrashAgent.make(config)
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
      event._tag === "ApprovalRequested"
        ? TestProcess.report({ approval: event.token, callId: event.call.call_id })
        : Effect.void
    ),
    Effect.ignore,
    Effect.forkScoped
  )

  /** Reports from the run's log when it finishes, and when the run is parked: nothing asks the engine for it. */
  const watch = Effect.gen(function*() {
    yield* agent.events(config.runId, { fromStep: 1 }).pipe(
      Stream.runForEach((event) =>
        event._tag === "Finished"
          ? TestProcess.report({ finished: event.result._tag === "Stopped" ? event.result.output : event.result._tag })
          : Effect.void
      ),
      Effect.ignore,
      Effect.forkScoped
    )
    yield* agent.parked.pipe(
      Effect.flatMap((parked) => {
        const mine = parked.find((run) => run.runId === config.runId)
        return mine === undefined ? Effect.void : TestProcess.report({ parked: mine.runId, crashes: mine.crashes })
      }),
      Effect.ignore,
      Effect.repeat({ schedule: Schedule.spaced("100 millis") }),
      Effect.forkScoped
    )
  })

  const decide = (decisions: Readonly<Record<string, string | null>>) =>
    agent.events(config.runId, { fromStep: 1 }).pipe(
      Stream.filter((event) => event._tag === "ApprovalRequested" && event.call.call_id in decisions),
      Stream.take(Object.keys(decisions).length),
      Stream.runForEach((event) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        const reason = decisions[event.call.call_id] ?? null
        return Effect.andThen(
          agent.approve(event.token, reason === null ? Approval.approved : Approval.denied(reason)),
          TestProcess.report({ decided: event.call.call_id })
        )
      })
    )

  const program = Effect.gen(function*() {
    yield* TestProcess.report({ ready: config.runner })
    switch (config.action) {
      case "serve":
        if (config.runId !== "") yield* Effect.andThen(announceApprovals, watch)
        return yield* Effect.never
      case "approve":
        yield* decide(config.decisions ?? {})
        yield* watch
        return yield* Effect.never
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
