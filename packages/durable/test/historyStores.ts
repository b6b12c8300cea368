/**
 * The stores the history tests run on: an embedded runner over a SQLite file
 * of its own, and a runner over PostgreSQL with tables of its own (skipped,
 * loudly, when PostgreSQL is unreachable); each with the mock model answering
 * `respond` and the test's agents registered.
 */
import type { LanguageModel } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { DurableRunner } from "../src/index.ts"
import { pricing, tempDir } from "./fixtures.ts"
import { connection, dropTables, reachable, uniquePrefix } from "./postgres.ts"

const postgresReachable = await reachable()

/** What a scenario gets: the runner's services, the mock model and the agents' services. */
export type Services = DurableRunner.Services | SqlClient | MockLanguageModel.MockLanguageModel

/** A scenario's runner: its agents' layer, the model's answers, and options of the runner. */
export interface Setup {
  readonly agents: Layer.Layer<never, never, DurableRunner.Services | LanguageModel.LanguageModel>
  readonly respond: MockLanguageModel.Respond
  readonly retention?: DurableRunner.Options["retention"]
}

/** Declares `name` as a test on SQLite and one on PostgreSQL, each running `scenario` on a runner of its own. */
export const eachStore = (
  name: string,
  setup: Setup,
  scenario: Effect.Effect<void, unknown, Services>,
  timeout = 30_000
) => {
  const model = Layer.mergeAll(MockLanguageModel.layer(setup.respond), pricing)
  const retention = setup.retention === undefined ? {} : { retention: setup.retention }
  it.live(`${name} (SQLite)`, () => {
    const temp = tempDir()
    const runner = DurableRunner.layerSqlite({
      filename: Path.join(temp.dir, "runs.db"),
      synchronous: "NORMAL",
      ...retention
    })
    return scenario.pipe(
      Effect.provide(setup.agents.pipe(Layer.provideMerge(model), Layer.provideMerge(runner))),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  }, timeout)
  it.live.skipIf(!postgresReachable)(`${name} (PostgreSQL)`, () => {
    const prefix = uniquePrefix("history")
    const runner = DurableRunner.layerPg({ name: "history" }, connection, { prefix, ...retention })
    return scenario.pipe(
      Effect.provide(setup.agents.pipe(Layer.provideMerge(model), Layer.provideMerge(runner))),
      Effect.ensuring(dropTables(prefix))
    )
  }, timeout)
}
