/**
 * The journal of a run over a real SQLite file: a step runs once and is
 * recorded with the next commit, a replay reads it back and writes nothing
 * again, and a step another executor recorded first is kept (the execution
 * learns it with `StepTaken`, and a durable run starts again from storage);
 * on PostgreSQL, a call's start whose connection drops is recorded by a retry.
 */
import { Tool, Toolkit, ToolRecord } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import * as PgClient from "@effect/sql-pg/PgClient"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { DurableAgent, DurableEvent, NodeSqliteClient, RunJournal, RunStore } from "../src/index.ts"
import { answer, embedded, model, tempDir } from "./fixtures.ts"
import { connection, dropTables, reachable, uniquePrefix } from "./postgres.ts"

const postgresReachable = await reachable()

const run = { agent: "journal", runId: "j1" }
const numbers = RunJournal.codec(Schema.Number)

const withStore = <A, E>(body: Effect.Effect<A, E, RunStore.RunStore | SqlClient>) => {
  const temp = tempDir()
  return body.pipe(
    Effect.provide(
      RunStore.layer().pipe(Layer.provideMerge(NodeSqliteClient.layer({ filename: Path.join(temp.dir, "j.db") })))
    ),
    Effect.ensuring(Effect.sync(temp.remove))
  )
}

const count = (table: string) =>
  Effect.flatMap(SqlClient, (sql) => sql<{ readonly n: number }>`SELECT COUNT(*) AS n FROM ${sql(table)}`).pipe(
    Effect.map((rows) => rows[0]?.n)
  )

describe("RunJournal", () => {
  it.live("records a step with the next commit, with the events logged since, and a replay reads it back", () =>
    withStore(Effect.gen(function*() {
      let ran = 0
      const compute = Effect.sync(() => ++ran * 10)
      const first = yield* RunJournal.open(run, DurableEvent.DurableEvent)
      expect(yield* first.step("a", numbers, compute)).toBe(10)
      first.log(1, [{ _tag: "TurnStarted", step: 1 }])
      expect([yield* count("agentloop_agent_steps"), yield* count("agentloop_agent_events")]).toStrictEqual([0, 0])
      yield* first.commit
      expect([yield* count("agentloop_agent_steps"), yield* count("agentloop_agent_events")]).toStrictEqual([1, 1])
      // A step run and not committed is lost with the execution: the replay runs it again.
      expect(yield* first.step("b", numbers, compute)).toBe(20)

      const replay = yield* RunJournal.open(run, DurableEvent.DurableEvent)
      expect(yield* replay.step("a", numbers, compute)).toBe(10)
      expect(yield* replay.step("b", numbers, compute)).toBe(30)
      replay.log(1, [{ _tag: "TurnStarted", step: 1 }])
      replay.log(2, [{ _tag: "TurnStarted", step: 2 }])
      yield* replay.commit
      expect(ran).toBe(3)
      expect([yield* count("agentloop_agent_steps"), yield* count("agentloop_agent_events")]).toStrictEqual([2, 2])
      const store = yield* RunStore.RunStore
      const entries = yield* store.read(run, { afterSeq: -1, fromStep: 0, limit: 10 })
      expect(entries.map((entry) => [entry.seq, entry.step])).toStrictEqual([[0, 1], [1, 2]])
    })))

  it.live("fails with StepTaken when another executor recorded the step first, and keeps the first record", () =>
    withStore(Effect.gen(function*() {
      const mine = yield* RunJournal.open(run, DurableEvent.DurableEvent)
      const theirs = yield* RunJournal.open(run, DurableEvent.DurableEvent)
      yield* theirs.step("a", numbers, Effect.succeed(1))
      yield* theirs.commit
      yield* mine.step("a", numbers, Effect.succeed(2))
      const taken = yield* Effect.flip(mine.commit)
      expect(taken).toStrictEqual(new RunJournal.StepTaken({ runId: "j1", steps: ["a"] }))
      const again = yield* RunJournal.open(run, DurableEvent.DurableEvent)
      expect(yield* again.step("a", numbers, Effect.succeed(3))).toBe(1)
    })))

  it.live("a record that does not decode any more is a defect, not a silent re-run", () =>
    withStore(Effect.gen(function*() {
      const store = yield* RunStore.RunStore
      yield* store.commit(run, { steps: [{ name: "a", body: "\"not a number\"" }], entries: [] })
      const journal = yield* RunJournal.open(run, DurableEvent.DurableEvent)
      const exit = yield* Effect.exit(journal.step("a", numbers, Effect.succeed(1)))
      expect(exit._tag === "Failure" && exit.cause.reasons[0]?._tag).toBe("Die")
    })))
})

describe.skipIf(!postgresReachable)("RunJournal on PostgreSQL", () => {
  const prefix = uniquePrefix("journal")
  const application = `agentloop-journal-test-${process.pid}`
  const store = RunStore.layer(prefix).pipe(
    Layer.provideMerge(PgClient.layer({ ...connection, applicationName: application }))
  )
  const admin = PgClient.layer(connection)
  afterAll(() => Effect.runPromise(dropTables(prefix)))

  const Waiting = Schema.Array(Schema.Struct({ waiting: Schema.Union([Schema.Number, Schema.BigInt]) }))
  /**
   * Runs `writes` at once while `table` is locked in `mode`: their statements wait in the server until all of them
   * wait there; then `meanwhile` runs, the table is unlocked, and their results are returned.
   */
  const atLock = <A, E>(
    table: string,
    mode: "EXCLUSIVE" | "ACCESS EXCLUSIVE",
    writes: ReadonlyArray<Effect.Effect<A, E>>,
    meanwhile: Effect.Effect<unknown, unknown, SqlClient> = Effect.void
  ) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const locked = yield* Deferred.make<void>()
      const unlock = yield* Deferred.make<void>()
      const lock = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE ${sql(`${prefix}_${table}`)} IN ${sql.literal(mode)} MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(unlock)
      })))
      yield* Deferred.await(locked)
      const writing = yield* Effect.forkChild(Effect.all(writes, { concurrency: "unbounded" }))
      yield* Effect.flatMap(
        sql`SELECT count(*) AS waiting FROM pg_stat_activity
          WHERE application_name = ${application} AND wait_event_type = 'Lock'`,
        Schema.decodeUnknownEffect(Waiting)
      ).pipe(
        Effect.repeat({
          schedule: Schedule.spaced("20 millis"),
          until: ([row]) => Number(row?.waiting) >= writes.length
        }),
        Effect.timeout("20 seconds")
      )
      yield* meanwhile
      yield* Deferred.succeed(unlock, undefined)
      yield* Fiber.join(lock)
      return yield* Fiber.join(writing)
    }).pipe(Effect.provide(admin))

  /**
   * Runs `write` (a write to the started calls) while its connection is dropped: the table is locked, so the
   * write's statement waits in the server, whose backend is then terminated; the table is unlocked after.
   */
  const throughDrop = <A, E>(write: Effect.Effect<A, E>) =>
    Effect.map(
      atLock(
        "agent_calls",
        "ACCESS EXCLUSIVE",
        [write],
        Effect.flatMap(SqlClient, (sql) =>
          sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${application}`)
      ),
      ([written]) =>
        written
    )

  it.live(
    "two unparks of a parked run at once: one releases it, the other finds it released",
    () =>
      Effect.gen(function*() {
        const runStore = yield* RunStore.RunStore
        const run = { agent: "journal", runId: "parked" }
        yield* runStore.begin(run)
        expect(yield* runStore.park(run, "{\"crashes\":1}")).toBe(true)
        const released = yield* atLock("agent_runs", "EXCLUSIVE", [runStore.unpark(run), runStore.unpark(run)])
        expect(released.filter((reason) => reason !== undefined)).toStrictEqual(["{\"crashes\":1}"])
        expect(yield* runStore.parkedReason(run)).toBeUndefined()
      }).pipe(Effect.provide(store)),
    30_000
  )

  it.live("a call's start whose connection dropped is recorded by a retry, once", () =>
    Effect.gen(function*() {
      const dropped = { agent: "journal", runId: "dropped" }
      const journal = yield* RunJournal.open(dropped, DurableEvent.DurableEvent)
      expect(yield* throughDrop(journal.claim("tool/1/0"))).toBe(true)
      expect(yield* journal.claim("tool/1/0")).toBe(false)
      const { claims } = yield* (yield* RunStore.RunStore).records(dropped)
      expect(claims.map((claim) => claim.call)).toStrictEqual(["tool/1/0"])
    }).pipe(Effect.provide(store)), 30_000)

  it.live(
    "the same drop fails a claim that is not retried (the test does drop the connection)",
    () =>
      Effect.gen(function*() {
        const runStore = yield* RunStore.RunStore
        const error = yield* Effect.flip(throughDrop(runStore.claim({ agent: "journal", runId: "once" }, "tool/1/0")))
        expect(error).toMatchObject({ _tag: "RunStoreError", operation: "claim" })
      }).pipe(Effect.provide(store)),
    30_000
  )
})

describe("a durable run whose step another executor recorded first", () => {
  it.live("starts again from storage and goes on with the first record: the call is not run again", () => {
    const temp = tempDir()
    let runs = 0
    const record = RunJournal.codec(ToolRecord.ToolRecord)
    // Stands for a second executor of the same run: while the call runs, "another runner" records its result.
    const racer = Tool.make({
      name: "racer",
      description: "Races another executor",
      input: Schema.Struct({}),
      output: Schema.String,
      idempotent: true,
      execute: () =>
        Effect.gen(function*() {
          runs++
          const body = yield* Effect.orDie(record.encode({
            outcome: "success",
            call: {
              type: "function_call",
              id: "fc_1",
              status: "completed",
              call_id: "call_racer",
              name: "racer",
              arguments: "{}"
            },
            output: {
              type: "function_call_output",
              id: "fco_call_racer",
              status: "completed",
              call_id: "call_racer",
              output: "\"theirs\""
            }
          }))
          const store = yield* RunStore.RunStore
          yield* Effect.orDie(
            store.commit({ agent: "racing", runId: "race1" }, { steps: [{ name: "tool/1/0", body }], entries: [] })
          )
          return "mine"
        })
    })
    const racing = DurableAgent.make("racing", { model, toolkit: Toolkit.make(racer) })
    return Effect.gen(function*() {
      const result = yield* racing.run({ runId: "race1", input: "Race" })
      expect(result._tag === "Stopped" && result.output).toBe("done")
      expect(runs).toBe(1)
      const recorder = yield* MockLanguageModel.MockLanguageModel
      const requests = yield* recorder.requests
      expect(requests).toHaveLength(2)
      expect(JSON.stringify(requests[1])).toContain("theirs")
      expect(JSON.stringify(requests[1])).not.toContain("mine")
    }).pipe(
      Effect.provide(racing.layer.pipe(
        Layer.provideMerge(embedded(Path.join(temp.dir, "runs.db"), [
          MockLanguageModel.callsTurn([{ name: "racer", arguments: {}, callId: "call_racer" }], { model }),
          answer("done")
        ]))
      )),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
