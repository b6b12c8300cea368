// @module-tag slow
/**
 * A durable run's history, on SQLite and PostgreSQL: its checkpoints (the
 * same as an `AgentLoop` run's on a `Checkpointer`) and the run at any of
 * them; bad input to them and to forks refused with typed errors (and, on
 * PostgreSQL, the second of two forks onto one id whose rows meet in the
 * database); records written before they were stamped read in the order of
 * the run's course.
 */
import { AgentHistory, AgentLoop, Checkpointer, Item } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { DurableAgent, DurableRunner, NodeSqliteClient, RunStore } from "../src/index.ts"
import { answer, call, model, pricing, tempDir, toolkit } from "./fixtures.ts"
import { eachStore, lastWords, outputOf } from "./historyFixtures.ts"
import { connection, dropTables, reachable, uniquePrefix } from "./postgres.ts"

const postgresReachable = await reachable()

const historian = DurableAgent.make("historian", { model, toolkit })

/** Notes, then adds, then answers. */
const noteAndAdd: MockLanguageModel.Respond = (request) => {
  const last = lastWords(request)
  if (last === "Note and add") return call("note", { text: "a" })
  if (last.includes("noted a")) return call("add", { a: 2, b: 3 })
  return answer(`${last} it is`)
}

/** The checkpoints without what differs between two stores: when they were written. */
const timeless = (checkpoints: ReadonlyArray<AgentHistory.Checkpoint>) =>
  checkpoints.map(({ time: _, ...checkpoint }) => checkpoint)

describe.concurrent("a durable run's checkpoints", () => {
  eachStore("are the Checkpointer's, in the order written, and the run is read at any of them", () => ({
    agents: historian.layer,
    respond: noteAndAdd,
    run: () =>
      Effect.gen(function*() {
        const result = yield* historian.run({ runId: "h1", input: "Note and add" })
        expect(result._tag === "Stopped" && result.output).toBe("5 it is")
        const checkpoints = yield* historian.checkpoints("h1")
        expect(checkpoints.map((c) => `${c.kind} ${c.step}`)).toStrictEqual([
          "turn 1",
          "started 1",
          "tool 1",
          "decision 1",
          "turn 2",
          "tool 2",
          "decision 2",
          "turn 3",
          "finished 3"
        ])
        expect(checkpoints.map((c) => c.index)).toStrictEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
        const times = checkpoints.map((c) => c.time ?? -1)
        expect(times.every((time, i) => time > 0 && time >= (times[i - 1] ?? 0))).toBe(true)
        expect(checkpoints.map((c) => c.usage.total)).toStrictEqual([30, 30, 30, 30, 60, 60, 60, 90, 90])
        expect(checkpoints[8]?.cost).toBeCloseTo(3 * (checkpoints[0]?.cost ?? 0))

        // The same run recorded by AgentLoop on a Checkpointer has the same checkpoints.
        const options = { input: "Note and add", model, toolkit, runId: "h1" }
        const recorded = yield* Effect.gen(function*() {
          yield* Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run(options)).pipe(
            Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(noteAndAdd))))
          )
          const listed = yield* AgentHistory.checkpoints(options)
          const states = yield* Effect.forEach(listed, (_, index) => AgentHistory.stateAt(options, index))
          return { listed, states }
        }).pipe(Effect.provide(Layer.merge(Checkpointer.layerMemory, pricing)))
        expect(timeless(checkpoints)).toStrictEqual(timeless(recorded.listed))
        for (const [index, expected] of recorded.states.entries()) {
          const state = yield* historian.stateAt("h1", index)
          expect({ ...state, checkpoint: undefined, result: state.result?.history }).toStrictEqual({
            ...expected,
            checkpoint: undefined,
            result: expected.result?.history
          })
        }

        // Between the turn and its call, the call is pending; once it started, it reads as cut off.
        const answered = yield* historian.stateAt("h1", 0)
        expect(answered.pending.map((c) => c.name)).toStrictEqual(["note"])
        const started = yield* historian.stateAt("h1", 1)
        expect(started.pending).toStrictEqual([])
        expect(JSON.stringify(started.history.at(-1))).toContain("cut short")
        const last = yield* historian.stateAt("h1", -1)
        expect(last.result?._tag === "Stopped" && last.result.output).toBe("5 it is")
        expect(last.turns).toBe(3)
      })
  }))
})

const strict = DurableAgent.make("strict", { model, toolkit })

const noting: MockLanguageModel.Respond = (request) =>
  lastWords(request) === "Note" ? call("note", { text: "n" }) : answer("noted")

/** Forks that must fail, with what they fail with. */
const refusedFork = (options: Parameters<typeof strict.fork>[0]) => Effect.flip(strict.fork(options))

describe.concurrent("bad input to a durable run's history", () => {
  eachStore("is refused with typed errors, and a run's records written before they were stamped still read", () => ({
    agents: strict.layer,
    respond: noting,
    run: () =>
      Effect.gen(function*() {
        expect(outputOf(yield* strict.run({ runId: "b1", input: "Note" }))).toBe("noted")
        const listed = yield* strict.checkpoints("b1")
        expect(listed).toHaveLength(6)

        // Indices out of range, ids that are not ids, runs that do not exist, ids taken.
        for (const at of [6, -7, 1.5, Number.NaN]) {
          const missing = yield* refusedFork({ runId: "b-new", from: "b1", at })
          expect(missing).toMatchObject({ _tag: "CheckpointNotFound", id: "b1", count: 6 })
        }
        expect((yield* Effect.flip(strict.stateAt("b1", 6))).message).toBe(
          `run "b1" has no checkpoint 6: its checkpoints are 0 to 5`
        )
        expect(yield* refusedFork({ runId: "b-new", from: "nobody", at: 0 })).toMatchObject({
          _tag: "UnknownRun",
          id: "nobody"
        })
        expect((yield* Effect.flip(strict.checkpoints("nobody")))._tag).toBe("UnknownRun")
        expect((yield* Effect.flip(strict.stateAt("nobody", 0)))._tag).toBe("UnknownRun")
        for (const runId of ["", "a\u0000b", "x".repeat(513)]) {
          expect((yield* Effect.flip(strict.checkpoints(runId)))._tag).toBe("InvalidRunId")
          expect((yield* refusedFork({ runId, from: "b1", at: 0 }))._tag).toBe("InvalidRunId")
          expect((yield* refusedFork({ runId: "b-new", from: runId, at: 0 }))._tag).toBe("InvalidRunId")
        }
        expect(yield* refusedFork({ runId: "b1", from: "b1", at: 0 })).toMatchObject({ _tag: "RunExists", id: "b1" })
        // An edit whose history does not encode (a file with both its data and a URL): refused, nothing recorded.
        const file = { type: "input_file", file_data: "aGk=", file_url: "https://example.com/a" } as const
        const unencodable = yield* refusedFork({
          runId: "b-new",
          from: "b1",
          at: -1,
          edit: (history) => [...history, Item.userMessage([file])]
        })
        expect(unencodable).toMatchObject({ _tag: "UneditableCheckpoint", id: "b1", index: 5 })
        expect(unencodable.message).toContain("the edited history does not encode")
        expect(outputOf(yield* strict.run({ runId: "b2", input: "Note" }))).toBe("noted")
        expect(yield* refusedFork({ runId: "b2", from: "b1", at: 0 })).toMatchObject({ _tag: "RunExists", id: "b2" })
        // An id whose run began, though it recorded nothing yet, is taken too.
        const store = yield* RunStore.RunStore
        yield* store.begin({ agent: "strict", runId: "b3" })
        expect((yield* refusedFork({ runId: "b3", from: "b1", at: 0 }))._tag).toBe("RunExists")
        // Two forks onto one id at once: one is made, the other refused. (SQLite's one connection runs them one
        // after the other; a race where their rows meet is below, on PostgreSQL.)
        const raced = yield* Effect.all(
          [strict.fork({ runId: "b4", from: "b1", at: 2 }), strict.fork({ runId: "b4", from: "b1", at: -1 })],
          { concurrency: 2, mode: "result" }
        )
        expect(raced.map((result) => result._tag === "Success" ? "made" : result.failure._tag).sort()).toStrictEqual([
          "RunExists",
          "made"
        ])
        expect((yield* strict.checkpoints("b4")).filter((c) => c.kind === "fork")).toHaveLength(1)
        expect(yield* store.records({ agent: "strict", runId: "b-new" })).toStrictEqual({
          steps: [],
          claims: [],
          approvals: []
        })

        // A run recorded before steps were stamped lists them in the order of its course, without times.
        const recorded = yield* store.records({ agent: "strict", runId: "b1" })
        const unstamped = {
          steps: recorded.steps.map(({ body, name }) => ({ name, body })),
          claims: recorded.claims.map(({ call }) => ({ call })),
          approvals: []
        }
        yield* store.create({ agent: "strict", runId: "old" }, unstamped)
        expect(timeless(yield* strict.checkpoints("old"))).toStrictEqual(timeless(listed))
        expect((yield* strict.checkpoints("old")).map((c) => c.time)).toStrictEqual(listed.map(() => undefined))
        yield* strict.fork({ runId: "old-fork", from: "old", at: 2 })
        expect(outputOf(yield* strict.run({ runId: "old-fork", input: "Note" }))).toBe("noted")
        // ... unless it was recorded before runs recorded their input.
        yield* store.create({ agent: "strict", runId: "older" }, {
          ...unstamped,
          steps: unstamped.steps.filter((step) => step.name !== "input")
        })
        expect(yield* Effect.flip(strict.checkpoints("older"))).toMatchObject({
          _tag: "InputNotRecorded",
          runId: "older"
        })

        // Records that do not decode, or that no execution would read in that order, are the store's failure.
        const body = (name: string) => recorded.steps.find((step) => step.name === name)?.body ?? ""
        const broken = {
          "torn": [{ name: "input", body: body("input") }, { name: "turn/1", body: "{\"turn\":" }],
          "shuffled": [{ name: "input", body: body("input") }, { name: "turn/2", body: body("turn/2") }],
          "orphan": [{ name: "input", body: body("input") }, { name: "tool/1/0", body: body("tool/1/0") }]
        }
        for (const [runId, steps] of Object.entries(broken)) {
          yield* store.create({ agent: "strict", runId }, { steps, claims: [], approvals: [] })
          const failed = yield* Effect.flip(strict.checkpoints(runId))
          expect(failed).toMatchObject({ _tag: "RunStoreError", operation: "read history" })
          expect((yield* refusedFork({ runId: `${runId}-fork`, from: runId, at: 0 }))._tag).toBe("RunStoreError")
        }
        // A record of a name no version wrote is not a checkpoint.
        yield* store.commit({ agent: "strict", runId: "b2" }, {
          steps: [{ name: "future/1", body: "{}" }],
          entries: []
        })
        expect(yield* strict.checkpoints("b2")).toHaveLength(6)
      })
  }))
})

describe.skipIf(!postgresReachable)("two forks onto one id at once, on PostgreSQL", () => {
  it.live("the fork whose rows come second waits for the first one's, then is refused with nothing written", () => {
    const prefix = uniquePrefix("forkrace")
    const application = `agentloop-fork-race-${process.pid}`
    const runner = strict.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer(noting), pricing)),
      Layer.provideMerge(DurableRunner.layerPg({ name: "race" }, { ...connection, applicationName: application }, {
        prefix,
        sharding: { shardsPerGroup: 16 }
      }))
    )
    const Waiting = Schema.Array(Schema.Struct({ waiting: Schema.Union([Schema.Number, Schema.BigInt]) }))
    return Effect.gen(function*() {
      expect(outputOf(yield* strict.run({ runId: "r1", input: "Note" }))).toBe("noted")
      const steps = `${prefix}_agent_steps`
      // The first fork onto "r2", standing still in the middle of its transaction: its first row is written.
      const admin = yield* Layer.build(PgClient.layer(connection))
      const sql = Context.get(admin, PgClient.PgClient)
      const wrote = yield* Deferred.make<void>()
      const commit = yield* Deferred.make<void>()
      const first = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO ${sql(steps)} (agent, run_id, name, body) VALUES ('strict', 'r2', 'input', '"first"')`
        yield* Deferred.succeed(wrote, undefined)
        yield* Deferred.await(commit)
      })))
      yield* Deferred.await(wrote)
      // The second found no record of "r2", and its rows wait for the first fork's.
      const second = yield* Effect.forkChild(Effect.result(strict.fork({ runId: "r2", from: "r1", at: -1 })))
      yield* Effect.flatMap(
        sql`SELECT count(*) AS waiting FROM pg_stat_activity
          WHERE application_name = ${application} AND wait_event_type = 'Lock'`,
        Schema.decodeUnknownEffect(Waiting)
      ).pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: ([row]) => Number(row?.waiting) > 0 }),
        Effect.timeout("20 seconds")
      )
      yield* Deferred.succeed(commit, undefined)
      yield* Fiber.join(first)
      expect(yield* Fiber.join(second)).toMatchObject({ _tag: "Failure", failure: { _tag: "RunExists", id: "r2" } })
      const store = yield* RunStore.RunStore
      expect(yield* store.records({ agent: "strict", runId: "r2" })).toStrictEqual({
        steps: [{ name: "input", body: "\"first\"", stamp: undefined }],
        claims: [],
        approvals: []
      })
    }).pipe(Effect.scoped, Effect.provide(runner), Effect.ensuring(dropTables(prefix)))
  })
})

describe.concurrent("a run store made before steps were stamped", () => {
  it.live("gains the columns; its rows are kept, unstamped, and the next ones are stamped after them", () => {
    const temp = tempDir()
    return Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE old_agent_steps (
        agent TEXT NOT NULL, run_id TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (agent, run_id, name))`
      yield* sql`CREATE TABLE old_agent_calls (
        agent TEXT NOT NULL, run_id TEXT NOT NULL, call TEXT NOT NULL, PRIMARY KEY (agent, run_id, call))`
      yield* sql`INSERT INTO old_agent_steps (agent, run_id, name, body) VALUES ('a', 'r', 'turn/1', '{}')`
      yield* sql`INSERT INTO old_agent_calls (agent, run_id, call) VALUES ('a', 'r', 'tool/1/0')`
      const store = yield* RunStore.make("old")
      const run = { agent: "a", runId: "r" }
      expect(yield* store.records(run)).toStrictEqual({
        steps: [{ name: "turn/1", body: "{}", stamp: undefined }],
        claims: [{ call: "tool/1/0", stamp: undefined }],
        approvals: []
      })
      expect((yield* store.load(run)).lastSeq).toBe(0)
      yield* store.commit(run, { steps: [{ name: "tool/1/0", body: "{}", stamp: { seq: 1, at: 5 } }], entries: [] })
      expect(yield* store.claim(run, "tool/1/1", { seq: 2, at: 6 })).toBe(true)
      expect((yield* store.load(run)).lastSeq).toBe(2)
      expect((yield* store.records(run)).claims).toContainEqual({ call: "tool/1/1", stamp: { seq: 2, at: 6 } })
    }).pipe(
      Effect.provide(NodeSqliteClient.layer({ filename: Path.join(temp.dir, "old.db") })),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
