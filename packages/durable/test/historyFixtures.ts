/**
 * What the history and fork tests share: the stores they run on (an embedded
 * runner over a SQLite file of its own, and a runner over PostgreSQL with
 * tables of its own, skipped loudly when PostgreSQL is unreachable; each with
 * the mock model answering `respond` and the test's agents registered), and
 * what they read of runs and requests.
 */
import type { Item, LanguageModel } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import type { DurableAgent } from "../src/index.ts"
import { DurableRunner } from "../src/index.ts"
import { pricing, tempDir } from "./fixtures.ts"
import { connection, dropTables, reachable, uniquePrefix } from "./postgres.ts"

const postgresReachable = await reachable()

/** What a scenario gets: the runner's services, the mock model and the agents' services. */
export type Services = DurableRunner.Services | SqlClient | MockLanguageModel.MockLanguageModel

/** A scenario: its agents' layer, the model's answers, options of the runner, and what it does (given its tables' prefix). */
export interface Scenario {
  readonly agents: Layer.Layer<never, never, DurableRunner.Services | LanguageModel.LanguageModel>
  readonly respond: MockLanguageModel.Respond
  readonly retention?: DurableRunner.Options["retention"]
  readonly run: (prefix: string) => Effect.Effect<void, unknown, Services>
}

let prefixes = 0

/**
 * Declares `name` as a test on SQLite and one on PostgreSQL, each running a scenario of its own (`make` is called
 * for each: tools that count give each test their own counts) on a runner of its own, at once with the other tests.
 */
export const eachStore = (name: string, make: () => Scenario, timeout = 30_000) => {
  const provide = (scenario: Scenario, runner: Layer.Layer<DurableRunner.Services | SqlClient, unknown>) =>
    Effect.provide(
      scenario.agents.pipe(
        Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer(scenario.respond), pricing)),
        Layer.provideMerge(runner)
      )
    )
  const retention = (scenario: Scenario) => scenario.retention === undefined ? {} : { retention: scenario.retention }
  it.live(`${name} (SQLite)`, () => {
    const scenario = make()
    const temp = tempDir()
    const runner = DurableRunner.layerSqlite({
      filename: Path.join(temp.dir, "runs.db"),
      synchronous: "NORMAL",
      ...retention(scenario)
    })
    return scenario.run("agentloop").pipe(provide(scenario, runner), Effect.ensuring(Effect.sync(temp.remove)))
  }, timeout)
  it.live.skipIf(!postgresReachable)(`${name} (PostgreSQL)`, () => {
    const scenario = make()
    const prefix = uniquePrefix(`history${prefixes++}`)
    const runner = DurableRunner.layerPg({ name: "history" }, connection, {
      prefix,
      sharding: { shardsPerGroup: 16 },
      ...retention(scenario)
    })
    return scenario.run(prefix).pipe(provide(scenario, runner), Effect.ensuring(dropTables(prefix)))
  }, timeout)
}

/** A message's text or a call's output; nothing for anything else. */
export const textOf = (item: Item.Item | undefined): string => {
  if (item?.type === "function_call_output") return item.output
  if (item?.type === "message") return item.content.map((part) => "text" in part ? part.text : "").join("")
  return ""
}

/** The text of the last message or tool output a request ends with. */
export const lastWords = (request: MockLanguageModel.Request): string => textOf(request.history.at(-1))

/** The tags of the events `agent` logged for `runId`, from its first turn to its end. */
export const tagsOf = <O>(agent: DurableAgent.DurableAgent<O, never, never>, runId: string) =>
  Effect.map(Stream.runCollect(agent.events(runId, { fromStep: 1 })), (events) => events.map((event) => event._tag))

/** The requests the mock model answered so far. */
export const requests = Effect.flatMap(MockLanguageModel.MockLanguageModel, (model) => model.requests)

/** The output of a stopped run, or the tag of how it ended. */
export const outputOf = (result: { readonly _tag: string; readonly output?: unknown }) =>
  result._tag === "Stopped" ? result.output : result._tag
