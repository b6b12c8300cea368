// @module-tag slow
/**
 * A runner with `retention` prunes the durable runs that finished: their
 * records and the engine's go, and a run executed again with its id starts
 * afresh; a run that ended with a defect is finished too; a run that waits
 * for a decision is not finished, so it stays.
 */
import { Approval } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Schedule, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { DurableAgent, DurableRunner, NodeSqliteClient, RunStore } from "../src/index.ts"
import { answer, call, model, pricing, tempDir, toolkit } from "./fixtures.ts"
import { connection, dropTables, reachable, uniquePrefix } from "./postgres.ts"

const postgresReachable = await reachable()

const agent = DurableAgent.make("pruned", { model, toolkit })

const Count = Schema.Array(Schema.Struct({ n: Schema.Union([Schema.Number, Schema.NumberFromString, Schema.BigInt]) }))

/**
 * What is stored for `runId` of `of` (by default the agent of {@link scenario}) under the tables' `prefix`: the
 * run's steps and log entries, and the engine's messages for its workflow.
 */
const stored = (runId: string, prefix: string, of: DurableAgent.DurableAgent<string, never, never> = agent) =>
  Effect.gen(function*() {
    const store = yield* RunStore.RunStore
    const sql = yield* SqlClient
    const recorded = yield* store.load({ agent: of.name, runId })
    const executionId = yield* of.workflow.executionId({ runId, input: "" })
    const [messages] = yield* Effect.flatMap(
      sql`SELECT COUNT(*) AS n FROM ${sql(`${prefix}_messages`)} WHERE entity_id = ${executionId}`,
      Schema.decodeUnknownEffect(Count)
    )
    return { steps: recorded.steps.size, log: recorded.logLength, messages: Number(messages?.n ?? 0) }
  })

/** Waits until nothing is stored for `runId` of `of`: the pruner forgot it. */
const forgotten = (runId: string, prefix: string, of: DurableAgent.DurableAgent<string, never, never> = agent) =>
  stored(runId, prefix, of).pipe(
    Effect.repeat({
      schedule: Schedule.spaced("20 millis"),
      until: (left) => left.steps === 0 && left.log === 0 && left.messages === 0
    }),
    Effect.timeout("10 seconds")
  )

const tokenOf = (runId: string) =>
  agent.events(runId, { fromStep: 1 }).pipe(
    Stream.filter((event) => event._tag === "ApprovalRequested"),
    Stream.runHead,
    Effect.flatMap((event) =>
      event._tag === "Some" && event.value._tag === "ApprovalRequested"
        ? Effect.succeed(event.value.token)
        : Effect.die("no approval requested")
    )
  )

/** The model's script of {@link scenario}. */
const script = [answer("first"), call("remove", { path: "/tmp/a" }), answer("second"), answer("removed")]

/** Runs finished 300 ms ago (long enough for the engine to store a run's reply first) are pruned, every 50 ms. */
const retention = { finishedBefore: "300 millis", every: "50 millis" } as const

/** On the runner in context: a run that finished is forgotten and runs afresh, one that waits stays. */
const scenario = (prefix: string) =>
  Effect.gen(function*() {
    const first = yield* agent.run({ runId: "done", input: "Hi" })
    expect(first).toMatchObject({ _tag: "Stopped", output: "first" })
    expect((yield* stored("done", prefix)).messages).toBeGreaterThan(0)
    // The run that waits for a decision is started, and reaches its wait.
    yield* agent.start({ runId: "waits", input: "Remove /tmp/a" })
    const token = yield* tokenOf("waits")
    yield* forgotten("done", prefix)
    // Executed again, the forgotten run asks the model again.
    const again = yield* agent.run({ runId: "done", input: "Hi" })
    expect(again).toMatchObject({ _tag: "Stopped", output: "second" })
    // The pruner forgot a run that finished after the other started waiting: the one that waits is whole.
    yield* forgotten("done", prefix)
    const waiting = yield* stored("waits", prefix)
    expect(waiting.steps).toBeGreaterThan(0)
    expect(waiting.messages).toBeGreaterThan(0)
    yield* agent.approve(token, Approval.approved)
    const removed = yield* agent.run({ runId: "waits", input: "Remove /tmp/a" })
    expect(removed).toMatchObject({ _tag: "Stopped", output: "removed" })
    yield* forgotten("waits", prefix)
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    expect(requests).toHaveLength(4)
  })

describe("RunRetention", () => {
  it.live("finished runs are forgotten, engine's records too, and start afresh; a run that waits is kept", () => {
    const temp = tempDir()
    const runner = agent.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer(script), pricing)),
      Layer.provideMerge(DurableRunner.layerSqlite({
        filename: Path.join(temp.dir, "runs.db"),
        synchronous: "NORMAL",
        retention
      }))
    )
    return scenario("agentloop").pipe(Effect.provide(runner), Effect.ensuring(Effect.sync(temp.remove)))
  }, 30_000)

  it.live.skipIf(!postgresReachable)("the same on PostgreSQL", () => {
    const prefix = uniquePrefix("retention")
    const runner = agent.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer(script), pricing)),
      Layer.provideMerge(DurableRunner.layerPg({ name: "pruner" }, connection, { prefix, retention }))
    )
    return scenario(prefix).pipe(Effect.provide(runner), Effect.ensuring(dropTables(prefix)))
  }, 30_000)

  it.live("a run that ended with a defect (the engine's result for it) is finished too, and forgotten", () => {
    const temp = tempDir()
    const broken = DurableAgent.make("pruned-broken", { model, afterTurn: () => Effect.die("the hook broke") })
    const runner = broken.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer([answer("first")]), pricing)),
      Layer.provideMerge(DurableRunner.layerSqlite({
        filename: Path.join(temp.dir, "runs.db"),
        synchronous: "NORMAL",
        retention
      }))
    )
    return Effect.gen(function*() {
      const exit = yield* Effect.exit(broken.run({ runId: "broken", input: "Hi" }))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      yield* forgotten("broken", "agentloop", broken)
    }).pipe(Effect.provide(runner), Effect.ensuring(Effect.sync(temp.remove)))
  }, 30_000)

  it.live("a table of runs made before retention gains its columns and index; its rows are kept", () => {
    const temp = tempDir()
    const client = NodeSqliteClient.layer({ filename: Path.join(temp.dir, "old.db") })
    return Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE old_agent_runs (
        agent TEXT NOT NULL, run_id TEXT NOT NULL, attempts INTEGER NOT NULL, progress INTEGER NOT NULL,
        parked TEXT, PRIMARY KEY (agent, run_id))`
      yield* sql`INSERT INTO old_agent_runs (agent, run_id, attempts, progress) VALUES ('a', 'r', 1, 0)`
      const store = yield* RunStore.make("old")
      yield* store.finished({ agent: "a", runId: "r" }, "execution", 5)
      expect(yield* store.expired(6, 10)).toStrictEqual([{ agent: "a", run_id: "r", execution_id: "execution" }])
      expect(yield* store.expired(5, 10)).toStrictEqual([])
      const indexes = yield* sql<{ readonly name: string }>`
        SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'old_agent_runs'`
      expect(indexes.map((index) => index.name)).toContain("old_agent_runs_finished_at")
      // An execution that begins again makes the run unfinished.
      yield* store.begin({ agent: "a", runId: "r" })
      expect(yield* store.expired(6, 10)).toStrictEqual([])
    }).pipe(Effect.provide(client), Effect.ensuring(Effect.sync(temp.remove)))
  })

  it.live("retention options that cannot work fail the runner with InvalidOptions", () => {
    const temp = tempDir()
    return Effect.gen(function*() {
      for (
        const [retention, field] of [
          [{ finishedBefore: "soon" }, "retention.finishedBefore"],
          [{ finishedBefore: "1 day", every: 0 }, "retention.every"]
        ] as const
      ) {
        const error = yield* Effect.flip(Effect.scoped(Layer.build(DurableRunner.layerSqlite({
          filename: Path.join(temp.dir, "bad.db"),
          retention: retention as DurableRunner.Options["retention"] & {}
        }))))
        expect(error).toMatchObject({ _tag: "InvalidOptions", field })
      }
    }).pipe(Effect.ensuring(Effect.sync(temp.remove)))
  })
})
