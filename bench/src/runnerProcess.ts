/**
 * A runner process of the fleet benchmark (`runners.ts` starts it with a JSON
 * config): a `DurableRunner.layerPg` runner named `name` over the tables of
 * `prefix`, running the `fleet` agent on the script of `agentScript.ts`, until
 * it is killed. It reports, one JSON line each (see `TestProcess`): `ready`;
 * every model request (`turn`: the run's id, `asked`: the turn's number from
 * 1, `at`: the time in ms); every start of its tool (`tool`: the call's
 * idempotency key). The tool, `add`, is not idempotent: the runner records
 * each call's start before running it, and never runs one twice.
 */
import { LanguageModel, Tool, Toolkit } from "@agentloop/core"
import { DurableAgent, DurableRunner } from "@agentloop/durable"
import { TestProcess } from "@agentloop/testing"
import { Effect, Layer, References, Schema, Stream } from "effect"
import { deltasFor, resultsIn, turns } from "./agentScript.ts"
import * as Postgres from "./postgres.ts"
import { agentName, Config } from "./runnerConfig.ts"

const config = TestProcess.config(Config)

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) =>
    Effect.gen(function*() {
      const key = yield* Tool.IdempotencyKey
      yield* TestProcess.report({ tool: key ?? "", runner: config.name })
      return a + b
    })
})

const model = Layer.succeed(LanguageModel.LanguageModel, {
  provider: "bench",
  streamTurn: (history) => {
    const first = history[0]
    const runId = first?.type === "message" && first.content[0]?.type === "input_text" ? first.content[0].text : ""
    const results = resultsIn(history)
    return Stream.unwrap(
      Effect.as(
        TestProcess.report({ turn: runId, asked: results + 1, at: Date.now(), runner: config.name }),
        Stream.fromIterable(deltasFor(results))
      )
    )
  }
})

const agent = DurableAgent.make(agentName, { toolkit: Toolkit.make(add), limits: { maxTurns: turns + 1 } })

const runner = agent.layer.pipe(
  Layer.provideMerge(DurableRunner.layerPg({ name: config.name }, Postgres.connection, { prefix: config.prefix })),
  Layer.provide(model),
  Layer.provide(Layer.succeed(References.MinimumLogLevel, "Error"))
)

Effect.runPromise(
  Effect.andThen(TestProcess.report({ ready: config.name }), Effect.never).pipe(Effect.provide(runner))
).catch((error) => {
  console.error(error)
  process.exit(1)
})
