// @module-tag slow
import { MockLanguageModel } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber, FileSystem, Layer, Schedule, Schema, Scope } from "effect"
import { KeyValueStore } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Thread from "../src/agent/Thread.ts"
import * as ThreadId from "../src/agent/ThreadId.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import type * as CheckpointStore from "../src/CheckpointStore.ts"
import * as RunFingerprint from "../src/RunFingerprint.ts"
import * as Step from "../src/step/Step.ts"
import * as Until from "../src/Until.ts"
import { answer, model, usage } from "./agentFixtures.ts"
import {
  after,
  ahead,
  dropTables,
  files,
  fingerprint,
  fresh,
  postgresClient,
  postgresReachable,
  read,
  record,
  runAgent,
  sqlite,
  tempDirectory,
  tools,
  watchedFiles
} from "./checkpointFixtures.ts"

/** What every store's retention must do; the clock is the test clock, at 0 unless moved. */
const conformance = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("prunes finished runs only, never one in progress: forgotten, or cut down to their result", () =>
      Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        const done = fresh("done")
        const unfinished = fresh("unfinished")
        const goneOn = fresh("gone-on")
        const running = fresh("running")
        yield* record(done, ["turn 1", "turn 2"], ["result"])
        yield* record(unfinished, ["turn 1"])
        // Finished, then appended to again: no longer finished.
        yield* record(goneOn, ["turn 1"], ["result"])
        yield* record(goneOn, ["turn 2"])
        yield* Effect.scoped(Effect.gen(function*() {
          // Finished, with its lease still held: in progress.
          const log = yield* store.open(running, fingerprint)
          yield* log.append(["turn 1"])
          yield* log.append(["result"], { finished: true })
          yield* TestClock.adjust("1 second")
          // Finished one second ago: not before an hour ago.
          expect(yield* Checkpointer.prune({ finishedBefore: "1 hour" })).toStrictEqual({ runs: [] })
          expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })).toStrictEqual({ runs: [done] })
          expect(yield* read(done)).toStrictEqual(["result"])
          expect(yield* read(running)).toStrictEqual(["turn 1", "result"])
          // A run already cut down is not counted again.
          expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })).toStrictEqual({ runs: [] })
          expect(yield* Checkpointer.prune({ finishedBefore: new Date(1000) })).toStrictEqual({ runs: [done] })
          expect(yield* read(running)).toStrictEqual(["turn 1", "result"])
        }))
        expect(yield* read(done)).toStrictEqual([])
        expect(yield* read(unfinished)).toStrictEqual(["turn 1"])
        expect(yield* read(goneOn)).toStrictEqual(["turn 1", "result", "turn 2"])
        // Its lease released, the finished run is pruned.
        expect(yield* Checkpointer.prune({ finishedBefore: 0 })).toStrictEqual({ runs: [running] })
        // A forgotten run starts afresh, with any fingerprint.
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* store.open(done, { input: "sha256:bb" })
          expect(log.entries).toStrictEqual([])
        }))
        yield* Effect.forEach([done, unfinished, goneOn], store.clear, { discard: true })
      }).pipe(Effect.provide(layer())))

    it.effect("a run cut down to its result keeps its fingerprint, and goes on from its result", () =>
      Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        const id = fresh("kept")
        yield* record(id, ["turn 1", "turn 2"], ["answer", "result"])
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })).toStrictEqual({ runs: [id] })
        expect(yield* read(id)).toStrictEqual(["answer", "result"])
        const mismatch = yield* Effect.flip(Effect.scoped(store.open(id, { input: "sha256:bb" })))
        expect(mismatch).toMatchObject({ _tag: "CheckpointMismatch", id })
        yield* record(id, ["more"])
        expect(yield* read(id)).toStrictEqual(["answer", "result", "more"])
        // Going on unmarked it: it is not pruned any more.
        expect(yield* Checkpointer.prune({ finishedBefore: 0 })).toStrictEqual({ runs: [] })
        yield* store.clear(id)
      }).pipe(Effect.provide(layer())))

    it.effect("an AgentLoop run cut down to its result returns it without asking; a forgotten one runs afresh", () =>
      Effect.gen(function*() {
        const kept = fresh("agent-kept")
        const forgotten = fresh("agent-forgotten")
        const first = yield* runAgent([answer("hello")], kept)
        yield* runAgent([answer("hello")], forgotten)
        expect(first.asked).toBe(1)
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })).toMatchObject({
          runs: expect.arrayContaining([kept, forgotten])
        })
        expect(yield* read(kept)).toHaveLength(1)
        const again = yield* runAgent([], kept)
        expect(again.asked).toBe(0)
        expect(again.exit).toStrictEqual(first.exit)
        expect(yield* Checkpointer.prune({ finishedBefore: new Date(1000) })).toMatchObject({
          runs: expect.arrayContaining([forgotten])
        })
        const afresh = yield* runAgent([answer("hello again")], forgotten)
        expect(afresh.asked).toBe(1)
        expect(afresh.exit).toMatchObject({ _tag: "Success", value: { output: "hello again" } })
        yield* Effect.flatMap(Checkpointer.Checkpointer, (store) => store.clear(forgotten))
      }).pipe(Effect.provide(layer())))

    it.effect("a step program cut down to its result returns its output without running", () =>
      Effect.gen(function*() {
        const id = fresh("exec")
        let runs = 0
        const program = Step.run({ id: "once", execute: (n: number) => (runs++, n * 2 + 1) })
        expect(yield* Step.execute(program, 20, { id })).toBe(41)
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })).toStrictEqual({ runs: [id] })
        expect(yield* read(id)).toHaveLength(1)
        expect(yield* Step.execute(program, 20, { id })).toBe(41)
        expect(runs).toBe(1)
        yield* Effect.flatMap(Checkpointer.Checkpointer, (store) => store.clear(id))
      }).pipe(Effect.provide(layer())))

    it.effect("options that cannot work fail with InvalidOptions, and nothing is pruned", () =>
      Effect.gen(function*() {
        const id = fresh("invalid")
        const unfinished = fresh("invalid-unfinished")
        yield* TestClock.adjust("1 day")
        yield* record(id, [], ["result"])
        yield* record(unfinished, ["turn 1"])
        yield* TestClock.adjust("1 second")
        const refused = [
          [{ finishedBefore: "soon" }, "finishedBefore"],
          [{ finishedBefore: -1 }, "finishedBefore"],
          [{ finishedBefore: new Date(Number.NaN) }, "finishedBefore"],
          [{}, "finishedBefore"],
          [{ keep: "result" }, "finishedBefore"],
          [{ finishedBefore: 0, keep: "everything" }, "keep"],
          [{ unfinishedBefore: "soon" }, "unfinishedBefore"],
          [{ unfinishedBefore: -1 }, "unfinishedBefore"],
          [{ unfinishedBefore: new Date(Number.NaN) }, "unfinishedBefore"],
          [{ unfinishedBefore: null }, "unfinishedBefore"],
          [{ finishedBefore: 0, unfinishedBefore: "soon" }, "unfinishedBefore"],
          // What is kept of the finished, without taking any finished run.
          [{ unfinishedBefore: 0, keep: "result" }, "keep"]
        ] as const
        for (const [options, field] of refused) {
          const error = yield* Effect.flip(Checkpointer.prune(options as unknown as CheckpointStore.PruneOptions))
          expect(error).toMatchObject({ _tag: "InvalidOptions", field })
        }
        expect(yield* read(id)).toStrictEqual(["result"])
        expect(yield* read(unfinished)).toStrictEqual(["turn 1"])
        expect(yield* Checkpointer.prune({ finishedBefore: 0 })).toStrictEqual({ runs: [id] })
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 })).toStrictEqual({ runs: [unfinished] })
      }).pipe(Effect.provide(layer())))

    it.effect("forgets the runs that did not finish by when their last execution ended; never one held, a finished one, or a thread's log", () =>
      Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        // A day in: leases released at 0 would read as released by an earlier version.
        yield* TestClock.adjust("1 day")
        const old = fresh("old")
        const goneOn = fresh("gone-on")
        const done = fresh("done")
        const recent = fresh("recent")
        const running = fresh("running")
        const thread = fresh("thread")
        const onThread = fresh("on-thread")
        yield* record(old, ["turn 1"])
        // Finished, then appended to again: no longer finished.
        yield* record(goneOn, ["turn 1"], ["result"])
        yield* record(goneOn, ["turn 2"])
        yield* record(done, ["turn 1"], ["result"])
        // A run on a thread: its own log (finished), the thread's log and the index of threads (never finished).
        expect((yield* runAgent([answer("Hello")], onThread, { thread })).exit._tag).toBe("Success")
        yield* TestClock.adjust("1 hour")
        yield* record(recent, ["turn 1"])
        yield* TestClock.adjust("1 hour")
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* store.open(running, fingerprint)
          yield* log.append(["turn 1"])
          // Ended 2 hours ago (old, goneOn) and 1 hour ago (recent): only the first before 90 minutes ago.
          const first = yield* Checkpointer.prune({ unfinishedBefore: "90 minutes" })
          expect([...first.runs].sort()).toStrictEqual([goneOn, old].sort())
          expect(yield* read(old)).toStrictEqual([])
          expect(yield* read(goneOn)).toStrictEqual([])
          // Held: never taken, whatever the time given.
          expect(yield* Checkpointer.prune({ unfinishedBefore: new Date(Date.UTC(3000, 0)) })).toStrictEqual({
            runs: [recent]
          })
          expect(yield* read(running)).toStrictEqual(["turn 1"])
          // A finished run is the other option's: never this one's.
          expect(yield* read(done)).toStrictEqual(["turn 1", "result"])
          expect(yield* read(onThread)).not.toStrictEqual([])
          expect(yield* Thread.read(thread)).toHaveLength(2)
          expect(yield* Thread.list).toContain(thread)
        }))
        // Released now: its last execution ended now, which is not before now.
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 })).toStrictEqual({ runs: [] })
        yield* TestClock.adjust("1 millis")
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 })).toStrictEqual({ runs: [running] })
        expect(yield* read(running)).toStrictEqual([])
        // The thread's logs are left, as long ago as they were last written.
        yield* TestClock.adjust("2 days")
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 })).toStrictEqual({ runs: [] })
        expect(yield* read(ThreadId.logId(thread))).not.toStrictEqual([])
        expect(yield* Thread.read(thread)).toHaveLength(2)
        expect(yield* Thread.list).toContain(thread)
        // A forgotten run starts afresh, with any fingerprint.
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* store.open(old, { input: "sha256:bb" })
          expect(log.entries).toStrictEqual([])
        }))
        yield* Effect.forEach([old, done, onThread], store.clear, { discard: true })
        yield* Thread.clear(thread)
      }).pipe(Effect.provide(layer())))

    it.effect("an AgentLoop run that ended with an error termination and a failed step program are forgotten: executed again, they start afresh", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 day")
        const { toolkit } = yield* tools
        const agent = fresh("max-turns")
        const program = fresh("failed")
        const thread = fresh("thread")
        const call = MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 1, b: 2 } }], { model, usage })
        const options = { toolkit, thread, limits: { maxTurns: 1 } }
        const first = yield* runAgent([call], agent, options)
        expect(first.exit).toMatchObject({ _tag: "Failure" })
        expect(yield* read(agent)).not.toStrictEqual([])
        let steps = 0
        const failing = Step.loop({
          id: "job",
          steps: [
            Step.run({ id: "count", execute: (n: number) => (steps++, n) }),
            Step.run({ id: "fail", execute: () => Effect.fail("broken") })
          ],
          until: Until.maxSteps(1)
        })
        expect((yield* Effect.exit(Step.execute(failing, 1, { id: program })))._tag).toBe("Failure")
        expect(steps).toBe(1)
        yield* TestClock.adjust("1 second")
        // Neither finished.
        expect(yield* Checkpointer.prune({ finishedBefore: 0 })).toStrictEqual({ runs: [] })
        const pruned = yield* Checkpointer.prune({ unfinishedBefore: 0 })
        expect([...pruned.runs].sort()).toStrictEqual([agent, program].sort())
        expect(yield* read(agent)).toStrictEqual([])
        expect(yield* read(program)).toStrictEqual([])
        // The thread the run was on keeps its log; the run had added nothing to it.
        expect(yield* Thread.list).toContain(thread)
        // Executed again: the model is asked the first turn again, the step runs again.
        const again = yield* runAgent([call], agent, options)
        expect(again.asked).toBe(1)
        expect((yield* Effect.exit(Step.execute(failing, 1, { id: program })))._tag).toBe("Failure")
        expect(steps).toBe(2)
        const store = yield* Checkpointer.Checkpointer
        yield* Effect.forEach([agent, program], store.clear, { discard: true })
        yield* Thread.clear(thread)
      }).pipe(Effect.provide(layer())))

    it.effect("finished and unfinished runs in one prune: the finished cut down to their result, the others forgotten", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 day")
        const done = fresh("done")
        const stopped = fresh("stopped")
        yield* record(done, ["turn 1"], ["result"])
        yield* record(stopped, ["turn 1"])
        yield* TestClock.adjust("1 second")
        const pruned = yield* Checkpointer.prune({ finishedBefore: 0, keep: "result", unfinishedBefore: 0 })
        expect([...pruned.runs].sort()).toStrictEqual([done, stopped].sort())
        expect(yield* read(done)).toStrictEqual(["result"])
        expect(yield* read(stopped)).toStrictEqual([])
        yield* Effect.flatMap(Checkpointer.Checkpointer, (store) => store.clear(done))
      }).pipe(Effect.provide(layer())))

    it.effect("a time given to a fraction of a millisecond works on every store", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 day")
        const done = fresh("done")
        const stopped = fresh("stopped")
        yield* record(done, ["turn 1"], ["result"])
        yield* record(stopped, ["turn 1"])
        yield* TestClock.adjust("2 millis")
        // Half a millisecond before they ended, then half a millisecond after.
        expect(yield* Checkpointer.prune({ finishedBefore: "2.5 millis", unfinishedBefore: "2.5 millis" }))
          .toStrictEqual({ runs: [] })
        const pruned = yield* Checkpointer.prune({ finishedBefore: "1.5 millis", unfinishedBefore: "1.5 millis" })
        expect([...pruned.runs].sort()).toStrictEqual([done, stopped].sort())
      }).pipe(Effect.provide(layer())))

    it.effect("a run that starts executing while a prune looks at it is never forgotten under its executor", () =>
      Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        yield* TestClock.adjust("1 day")
        const ids = Array.from({ length: 12 }, (_, i) => fresh(`race-${i}`))
        const history = ["turn 1", "turn 2"]
        yield* Effect.forEach(ids, (id) => record(id, history), { discard: true })
        yield* TestClock.adjust("1 second")
        // Each run is executed again while the prune runs: refused while the prune holds it, tried again.
        const execute = (id: string) =>
          Effect.scoped(Effect.gen(function*() {
            const log = yield* store.open(id, fingerprint)
            yield* log.append(["again"])
            // Still held: whatever it found is there, and what it appended after it.
            expect(yield* read(id)).toStrictEqual([...log.entries, "again"])
            return log.entries
          })).pipe(
            Effect.retry({ while: (error) => error._tag === "RunInProgress", schedule: Schedule.recurs(10_000) })
          )
        const [pruned, found] = yield* Effect.all([
          Checkpointer.prune({ unfinishedBefore: 0 }),
          Effect.forEach(ids, execute, { concurrency: "unbounded" })
        ], { concurrency: "unbounded" })
        for (const [i, id] of ids.entries()) {
          // Forgotten before its execution opened it (which then started afresh), or not at all.
          if (pruned.runs.includes(id)) {
            expect(found[i]).toStrictEqual([])
            expect(yield* read(id)).toStrictEqual(["again"])
          } else {
            expect(found[i]).toStrictEqual(history)
            expect(yield* read(id)).toStrictEqual([...history, "again"])
          }
        }
        expect(pruned.runs.every((id) => ids.includes(id))).toBe(true)
        yield* Effect.forEach(ids, store.clear, { discard: true })
      }).pipe(Effect.provide(layer())))
  })

/**
 * A writer that stalls past its lease (its renewals never come; `lapse` sets its lease's expiry as they would have
 * left it) while a prune forgets its run: its next append fails, and writes nothing into the run.
 */
const stalledWriter = (
  layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>,
  lapse: (id: string, expiresAt: number) => Effect.Effect<void, unknown>
) =>
  it.effect("a writer that stalled past its lease while its run was forgotten fails its next append", () =>
    Effect.gen(function*() {
      const store = yield* Checkpointer.Checkpointer
      yield* TestClock.adjust("1 day")
      const id = fresh("stalled")
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* store.open(id, fingerprint)
        yield* log.append(["turn 1"])
        // It stalls: its lease lapsed an hour ago, at its last renewal plus the lease's duration.
        yield* lapse(id, (yield* Clock.currentTimeMillis) - 3_600_000)
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" })).toStrictEqual({ runs: [id] })
        // It wakes up: by its own clock too, its lease has long lapsed.
        yield* TestClock.adjust("2 hours")
        const refused = yield* Effect.flip(log.append(["turn 2"]))
        expect(refused).toMatchObject({ _tag: "CheckpointError", operation: "append", id })
      }))
      expect(yield* read(id)).toStrictEqual([])
      // Executed again, it starts afresh.
      yield* record(id, ["afresh"])
      expect(yield* read(id)).toStrictEqual(["afresh"])
      yield* store.clear(id)
    }).pipe(Effect.provide(layer())))

/**
 * More finished runs than one transaction of a SQL prune takes, in their own table `table` (made by the store), are
 * all cut down to their result, each counted once.
 */
const cutsInBatches = (client: Layer.Layer<SqlClient.SqlClient, unknown>, table: string) =>
  it.effect("more finished runs than one transaction takes are all cut down to their result, each counted once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = Checkpointer.layerSql({ table }).pipe(Layer.provide(client))
      yield* TestClock.adjust("1 day")
      // Made by the store.
      expect(yield* Checkpointer.prune({ finishedBefore: 0 }).pipe(Effect.provide(store))).toStrictEqual({ runs: [] })
      const ids = Array.from({ length: 1_001 }, (_, i) => `batch-${i}`)
      const recorded = JSON.stringify(fingerprint)
      // The rows of a statement's insert (a chunk of `ids`, never empty).
      const rows = <A>(all: ReadonlyArray<A>): readonly [A, ...Array<A>] => [all[0]!, ...all.slice(1)]
      for (let start = 0; start < ids.length; start += 250) {
        const chunk = ids.slice(start, start + 250)
        // Finished at 1 with their last entry as their result, and released.
        const runs = chunk.map((id) => ({
          execution_id: id,
          fingerprint: recorded,
          owner: "gone",
          expires_at: -1,
          finished_at: 1,
          result_from: 2
        }))
        const entries = chunk.flatMap((id) => [0, 1, 2].map((seq) => ({ execution_id: id, seq, entry: `${seq}` })))
        yield* sql`INSERT INTO ${sql(`${table}_runs`)} ${sql.insert(rows(runs))}`
        yield* sql`INSERT INTO ${sql(table)} ${sql.insert(rows(entries))}`
      }
      const pruned = yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" }).pipe(Effect.provide(store))
      expect([...pruned.runs].sort()).toStrictEqual([...ids].sort())
      const left = yield* sql<{ readonly entry: string }>`SELECT DISTINCT entry FROM ${sql(table)}`
      expect(left.map((row) => row.entry)).toStrictEqual(["2"])
      expect(yield* read("batch-1000").pipe(Effect.provide(store))).toStrictEqual(["2"])
      expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" }).pipe(Effect.provide(store)))
        .toStrictEqual({ runs: [] })
    }).pipe(Effect.provide(client)))

/** The folder of run `id` in the file store in `dir`. */
const folderOf = (dir: string, id: string) =>
  Effect.map(RunFingerprint.digest(id), (digest) => Path.join(dir, digest.slice("sha256:".length)))

/** The newest lease file in folder `folder`. */
const newestLease = (folder: string) =>
  Path.join(
    folder,
    Fs.readdirSync(folder).filter((name) => name.startsWith("lease.")).sort((a, b) =>
      Number(a.slice(6)) - Number(b.slice(6))
    ).at(-1)!
  )

/** Sets the expiry of run `id`'s newest lease in the file store in `dir`. */
const lapseFile = (dir: string) => (id: string, expiresAt: number) =>
  Effect.map(folderOf(dir, id), (folder) => {
    const file = newestLease(folder)
    const lease = JSON.parse(Fs.readFileSync(file, "utf8"))
    Fs.writeFileSync(file, JSON.stringify({ ...lease, expiresAt }))
  })

/** Sets the expiry of run `id`'s lease in the SQL store whose table is `table`. */
const lapseRow =
  (client: Layer.Layer<SqlClient.SqlClient, unknown>, table: string) => (id: string, expiresAt: number) =>
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`UPDATE ${sql(`${table}_runs`)} SET expires_at = ${expiresAt} WHERE execution_id = ${id}`
    ).pipe(
      Effect.provide(client)
    )

/** A `FileSystem` over Node's that runs `before(path)` before it opens `path` for reading. */
const beforeReading = (before: (path: string) => Effect.Effect<void, unknown>) =>
  Layer.effect(FileSystem.FileSystem)(Effect.map(FileSystem.FileSystem, (fs) => ({
    ...fs,
    open: (path: string, options?: Parameters<FileSystem.FileSystem["open"]>[1]) =>
      options?.flag === "r"
        ? Effect.andThen(Effect.orDie(before(path)), fs.open(path, options))
        : fs.open(path, options)
  }))).pipe(Layer.provide(NodeFileSystem.layer))

if (!postgresReachable) console.warn("CheckpointRetention: SKIPPING PostgreSQL: nothing listens on 127.0.0.1:5432")

const temp = tempDirectory("retention")
const directory = temp.dir
afterAll(temp.remove)

const Names = Schema.Array(Schema.Struct({ name: Schema.String }))

describe("Checkpointer retention", () => {
  conformance("in memory", () => Checkpointer.layerMemory)
  conformance("on the file system", () => files(Path.join(directory, "files")))
  conformance(
    "on SQLite",
    () => Checkpointer.layerSql().pipe(Layer.provide(sqlite(Path.join(directory, "retention.db"))))
  )

  describe("in a key-value store", () => {
    it.effect("a run whose last execution's end was not recorded (cut off with its process) is dated by the first prune", () =>
      Effect.gen(function*() {
        const kv = yield* KeyValueStore.KeyValueStore
        const store = Checkpointer.layerKeyValueStore().pipe(
          Layer.provide(Layer.succeed(KeyValueStore.KeyValueStore, kv))
        )
        yield* TestClock.adjust("1 day")
        yield* record("cut-off", ["turn"]).pipe(Effect.provide(store))
        // What a process that died while executing it leaves (and an earlier version too): no end.
        yield* kv.remove("@agentloop/checkpoints/cut-off/ended")
        yield* TestClock.adjust("1 hour")
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 }).pipe(Effect.provide(store))).toStrictEqual({
          runs: []
        })
        yield* TestClock.adjust("1 hour")
        expect(yield* Checkpointer.prune({ unfinishedBefore: "90 minutes" }).pipe(Effect.provide(store)))
          .toStrictEqual({ runs: [] })
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(store)))
          .toStrictEqual({ runs: ["cut-off"] })
        expect(yield* kv.keys).toStrictEqual([])
      }).pipe(Effect.provide(KeyValueStore.layerMemory)))
  })

  describe("on the file system", () => {
    const dir = Path.join(directory, "stalled")
    stalledWriter(() => files(dir), lapseFile(dir))

    it.effect("a run executed between a prune's look and its taking the lease is kept: one that ended since, and one executing", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "between-"))
        yield* TestClock.adjust("1 day")
        yield* record("ended-since", ["turn 1"]).pipe(Effect.provide(files(dir)))
        yield* record("executing", ["turn 1"]).pipe(Effect.provide(files(dir)))
        yield* TestClock.adjust("1 hour")
        const scope = yield* Scope.make()
        // Each run is executed once the prune has read its log's head (having looked at its lease).
        const executions = new Map([
          [
            Path.join(yield* folderOf(dir, "ended-since"), "log"),
            record("ended-since", ["again"]).pipe(Effect.provide(files(dir)))
          ],
          [
            Path.join(yield* folderOf(dir, "executing"), "log"),
            Effect.flatMap(Checkpointer.Checkpointer, (store) => store.open("executing", fingerprint)).pipe(
              Effect.flatMap((log) => log.append(["held"])),
              Scope.provide(scope),
              Effect.provide(files(dir))
            )
          ]
        ])
        const execute = (path: string) =>
          Effect.suspend(() => {
            const execution = executions.get(path)
            executions.delete(path)
            return execution ?? Effect.void
          })
        const looked = Checkpointer.layerFileSystem(dir).pipe(
          Layer.provide(beforeReading(execute)),
          Layer.provide(NodePath.layer)
        )
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(looked)))
          .toStrictEqual({ runs: [] })
        expect(executions.size).toBe(0)
        expect(yield* read("ended-since").pipe(Effect.provide(files(dir)))).toStrictEqual(["turn 1", "again"])
        expect(yield* read("executing").pipe(Effect.provide(files(dir)))).toStrictEqual(["turn 1", "held"])
        yield* Scope.close(scope, Exit.void)
        // Left alone as long, they go.
        yield* TestClock.adjust("1 hour")
        const pruned = yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(files(dir)))
        expect([...pruned.runs].sort()).toStrictEqual(["ended-since", "executing"])
      }))

    it.effect("a forgotten run's folder keeps its lease until a later prune; a cleared run's folder goes too", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "husks-"))
        const store = files(dir)
        yield* TestClock.adjust("1 day")
        yield* record("stopped", ["turn 1"]).pipe(Effect.provide(store))
        yield* record("cleared", ["turn 1"]).pipe(Effect.provide(store))
        yield* Effect.flatMap(Checkpointer.Checkpointer, (checkpointer) => checkpointer.clear("cleared")).pipe(
          Effect.provide(store)
        )
        yield* TestClock.adjust("1 hour")
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(store)))
          .toStrictEqual({ runs: ["stopped"] })
        // The forgotten run's folder holds the lease the prune took (released), and no log.
        const stopped = yield* folderOf(dir, "stopped")
        expect(Fs.readdirSync(stopped).filter((name) => !name.startsWith("lease."))).toStrictEqual([])
        expect(Fs.readdirSync(dir)).toHaveLength(1)
        expect(yield* read("stopped").pipe(Effect.provide(store))).toStrictEqual([])
        // Not before its lease is as old as the cutoff.
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(store)))
          .toStrictEqual({ runs: [] })
        expect(Fs.readdirSync(dir)).toHaveLength(1)
        yield* TestClock.adjust("1 hour")
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(store)))
          .toStrictEqual({ runs: [] })
        expect(Fs.readdirSync(dir)).toStrictEqual([])
      }))

    it.effect("a lease released by an earlier version (which wrote 0) dates the run's end by its file's time", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "earlier-"))
        yield* TestClock.adjust("1 day")
        yield* record("earlier", ["turn"]).pipe(Effect.provide(files(dir)))
        const lease = newestLease(yield* folderOf(dir, "earlier"))
        Fs.writeFileSync(lease, JSON.stringify({ owner: "an earlier version", expiresAt: 0 }))
        // Written 23 hours in: an hour ago.
        const written = new Date(23 * 3_600_000)
        Fs.utimesSync(lease, written, written)
        expect(yield* Checkpointer.prune({ unfinishedBefore: "2 hours" }).pipe(Effect.provide(files(dir))))
          .toStrictEqual({ runs: [] })
        expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" }).pipe(Effect.provide(files(dir))))
          .toStrictEqual({ runs: ["earlier"] })
      }))

    it.effect("an executor that starts as a prune sets its run's folder aside keeps the run to itself (a forgotten run, a cleared run's folder)", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "aside-"))
        const store = files(dir)
        const open = (id: string) => Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open(id, fingerprint))
        yield* TestClock.adjust("1 day")
        yield* record("done", ["turn"], ["result"]).pipe(Effect.provide(store))
        yield* record("cleared", ["turn"]).pipe(Effect.provide(store))
        yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.clear("cleared")).pipe(Effect.provide(store))
        yield* TestClock.adjust("1 hour")
        const ids = new Map<string, string>()
        for (const id of ["done", "cleared"]) ids.set(Path.basename(yield* folderOf(dir, id)), id)
        // Each run is executed again once the prune renamed its folder aside, before the prune removed it.
        const scope = yield* Scope.make()
        const pruning = watchedFiles(dir, (call, name) => {
          const id = ids.get(name)
          if (call !== "rename" || id === undefined) return
          return {
            after: Effect.flatMap(open(id), (log) => log.append([`${id} again`])).pipe(
              Scope.provide(scope),
              Effect.provide(store),
              Effect.orDie
            )
          }
        })
        expect(
          yield* Checkpointer.prune({ finishedBefore: "30 minutes", unfinishedBefore: "30 minutes" }).pipe(
            Effect.provide(pruning)
          )
        ).toStrictEqual({ runs: ["done"] })
        for (const id of ids.values()) {
          // Executed afresh, and still held: no other executor gets it.
          expect(yield* read(id).pipe(Effect.provide(store))).toStrictEqual([`${id} again`])
          expect(yield* Effect.flip(Effect.scoped(open(id)).pipe(Effect.provide(store)))).toMatchObject({
            _tag: "RunInProgress"
          })
        }
        yield* Scope.close(scope, Exit.void)
      }))

    it.effect("an executor whose run's folder a prune removes as it takes the lease makes the folder again", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "vanishing-"))
        yield* TestClock.adjust("1 day")
        yield* record("vanishing", ["turn"], ["result"]).pipe(Effect.provide(files(dir)))
        yield* TestClock.adjust("1 hour")
        const folder = Path.basename(yield* folderOf(dir, "vanishing"))
        // The executor finds the run's folder there; before it lists it, a prune forgets the run.
        let pruned: CheckpointStore.Pruned | undefined
        const executing = watchedFiles(
          dir,
          (call, name) =>
            call === "readDirectory" && name === folder && pruned === undefined
              ? {
                before: Checkpointer.prune({ finishedBefore: "30 minutes" }).pipe(
                  Effect.provide(files(dir)),
                  Effect.map((result) => {
                    pruned = result
                  }),
                  Effect.orDie
                )
              }
              : undefined
        )
        const found = yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("vanishing", fingerprint)
          yield* log.append(["afresh"])
          return log.entries
        })).pipe(Effect.provide(executing))
        expect(pruned).toStrictEqual({ runs: ["vanishing"] })
        expect(found).toStrictEqual([])
        expect(yield* read("vanishing").pipe(Effect.provide(files(dir)))).toStrictEqual(["afresh"])
      }))

    it.effect("a prune that stalls past the lease it took leaves alone the run an executor took over meanwhile", () =>
      Effect.gen(function*() {
        yield* TestClock.adjust("1 day")
        const cases = [
          { id: "finished", result: ["result"], options: { finishedBefore: "30 minutes" } },
          { id: "stopped", result: [], options: { unfinishedBefore: "30 minutes" } }
        ] as const
        for (const { id, options, result } of cases) {
          const dir = Fs.mkdtempSync(Path.join(directory, "stalled-prune-"))
          yield* record(id, ["turn"], result.length > 0 ? result : undefined).pipe(Effect.provide(files(dir)))
          yield* TestClock.adjust("1 hour")
          const open = Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open(id, fingerprint))
          const stall = { ms: 0 }
          const scope = yield* Scope.make()
          let executor: CheckpointStore.Log | undefined
          // Once it took the run's lease, the prune stalls a minute: meanwhile an executor takes the run over.
          const pruning = watchedFiles(dir, (call) =>
            call === "link"
              ? {
                after: Effect.gen(function*() {
                  stall.ms = 60_000
                  executor = yield* open.pipe(Effect.provide(files(dir)), after(60_000), Scope.provide(scope))
                }).pipe(Effect.orDie)
              }
              : undefined)
          expect(yield* Checkpointer.prune(options).pipe(Effect.provide(pruning), ahead(stall))).toStrictEqual({
            runs: []
          })
          yield* executor!.append(["again"]).pipe(after(60_000))
          expect(yield* read(id).pipe(Effect.provide(files(dir)))).toStrictEqual(["turn", ...result, "again"])
          yield* Scope.close(scope, Exit.void)
        }
      }))

    it.effect("two prunes at once (two processes') each forget what the other did not, and neither fails", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "two-prunes-"))
        yield* TestClock.adjust("1 day")
        const finished = ["done-1", "done-2", "done-3"]
        const unfinished = ["stopped-1", "stopped-2"]
        for (const id of finished) yield* record(id, ["turn"], ["result"]).pipe(Effect.provide(files(dir)))
        for (const id of unfinished) yield* record(id, ["turn"]).pipe(Effect.provide(files(dir)))
        yield* TestClock.adjust("1 hour")
        const options = { finishedBefore: "30 minutes", unfinishedBefore: "30 minutes" } as const
        // The second prune runs whole once the first renamed its first run's folder aside, before the first removed
        // it: it removes that folder (as one a crashed prune left), and forgets the runs the first has yet to look at.
        let second: CheckpointStore.Pruned | undefined
        const first = watchedFiles(
          dir,
          (call, name) =>
            call === "rename" && /^[0-9a-f]{32}$/.test(name) && second === undefined
              ? {
                after: Checkpointer.prune(options).pipe(
                  Effect.provide(files(dir)),
                  Effect.map((pruned) => {
                    second = pruned
                  }),
                  Effect.orDie
                )
              }
              : undefined
        )
        const pruned = yield* Checkpointer.prune(options).pipe(Effect.provide(first))
        const runs = [...pruned.runs, ...second!.runs]
        expect(runs.sort()).toStrictEqual([...finished, ...unfinished].sort())
        for (const id of runs) expect(yield* read(id).pipe(Effect.provide(files(dir)))).toStrictEqual([])
      }))

    it.effect("a forgotten run's folder is removed, and one a crashed prune left aside too", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "folders-"))
        yield* record("kept", ["turn"]).pipe(Effect.provide(files(dir)))
        yield* record("gone", ["turn"], ["result"]).pipe(Effect.provide(files(dir)))
        const leftover = Path.join(dir, `${"0".repeat(32)}.pruned-crashed`)
        Fs.mkdirSync(leftover)
        Fs.writeFileSync(Path.join(leftover, "log"), "")
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ finishedBefore: 0 }).pipe(Effect.provide(files(dir)))).toStrictEqual({
          runs: ["gone"]
        })
        expect(Fs.readdirSync(dir)).toHaveLength(1)
        expect(yield* read("kept").pipe(Effect.provide(files(dir)))).toStrictEqual(["turn"])
      }))

    it.effect("a log cut down to its result is a new whole log: no temporary file left, appends go on after it", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "cut-"))
        const entries = Array.from({ length: 50 }, (_, i) => JSON.stringify({ turn: i, text: "x".repeat(100) }))
        yield* record("long", entries, ["result"]).pipe(Effect.provide(files(dir)))
        const [folder] = Fs.readdirSync(dir)
        const log = Path.join(dir, folder!, "log")
        const before = Fs.statSync(log).size
        yield* TestClock.adjust("1 second")
        yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" }).pipe(Effect.provide(files(dir)))
        expect(Fs.statSync(log).size).toBeLessThan(before / 50)
        expect(Fs.readdirSync(Path.join(dir, folder!)).filter((name) => name.includes(".tmp-"))).toStrictEqual([])
        yield* record("long", ["more"]).pipe(Effect.provide(files(dir)))
        expect(yield* read("long").pipe(Effect.provide(files(dir)))).toStrictEqual(["result", "more"])
      }))
  })

  describe("on SQLite", () => {
    it.effect("a table of runs made before retention gains its columns and index; its runs are kept", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE old_checkpoints (
          execution_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (execution_id, seq))`
        yield* sql`CREATE TABLE old_checkpoints_runs (
          execution_id TEXT NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL, owner TEXT NOT NULL,
          expires_at BIGINT NOT NULL)`
        yield* sql`INSERT INTO old_checkpoints_runs VALUES ('old', ${JSON.stringify(fingerprint)}, 'gone', 0)`
        yield* sql`INSERT INTO old_checkpoints VALUES ('old', 0, 'before')`
        const store = Checkpointer.layerSql({ table: "old_checkpoints" }).pipe(Layer.provide(Layer.succeed(
          SqlClient.SqlClient,
          sql
        )))
        yield* record("old", [], ["result"]).pipe(Effect.provide(store))
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" }).pipe(Effect.provide(store)))
          .toStrictEqual({ runs: ["old"] })
        expect(yield* read("old").pipe(Effect.provide(store))).toStrictEqual(["result"])
        const indexes = yield* Effect.flatMap(
          sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'old_checkpoints_runs'`,
          Schema.decodeUnknownEffect(Names)
        )
        expect(indexes.map((index) => index.name).sort()).toStrictEqual([
          "old_checkpoints_runs_finished",
          "old_checkpoints_runs_unfinished",
          "sqlite_autoindex_old_checkpoints_runs_1"
        ])
      }).pipe(Effect.provide(sqlite(Path.join(directory, "old.db")))))

    it.effect("a table of the version before: its index replaced; leases it released (0) are dated by the first prune", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE mid_checkpoints (
          execution_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (execution_id, seq))`
        yield* sql`CREATE TABLE mid_checkpoints_runs (
          execution_id TEXT NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL, owner TEXT NOT NULL,
          expires_at BIGINT NOT NULL, finished_at BIGINT, result_from BIGINT)`
        yield* sql`CREATE INDEX mid_checkpoints_runs_finished_at ON mid_checkpoints_runs (finished_at)`
        const thread = ThreadId.logId("earlier")
        const recorded = JSON.stringify(fingerprint)
        yield* sql`INSERT INTO mid_checkpoints_runs VALUES
          ('stopped', ${recorded}, 'gone', 0, NULL, NULL), (${thread}, ${recorded}, 'gone', 0, NULL, NULL),
          (${ThreadId.indexLogId}, ${recorded}, 'gone', 0, NULL, NULL), ('done', ${recorded}, 'gone', 0, 0, 0)`
        yield* sql`INSERT INTO mid_checkpoints VALUES ('stopped', 0, 'turn'), (${thread}, 0, 'started'),
          (${ThreadId.indexLogId}, 0, 'added'), ('done', 0, 'result')`
        const store = Checkpointer.layerSql({ table: "mid_checkpoints" }).pipe(
          Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))
        )
        yield* TestClock.adjust("1 day")
        // When it ended is not known: no later than now.
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 }).pipe(Effect.provide(store))).toStrictEqual({
          runs: []
        })
        const indexes = yield* Effect.flatMap(
          sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mid_checkpoints_runs'`,
          Schema.decodeUnknownEffect(Names)
        )
        expect(indexes.map((index) => index.name)).not.toContain("mid_checkpoints_runs_finished_at")
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ unfinishedBefore: 0 }).pipe(Effect.provide(store))).toStrictEqual({
          runs: ["stopped"]
        })
        expect(yield* read(thread).pipe(Effect.provide(store))).toStrictEqual(["started"])
        expect(yield* read(ThreadId.indexLogId).pipe(Effect.provide(store))).toStrictEqual(["added"])
        expect(yield* Checkpointer.prune({ finishedBefore: 0 }).pipe(Effect.provide(store))).toStrictEqual({
          runs: ["done"]
        })
      }).pipe(Effect.provide(sqlite(Path.join(directory, "mid.db")))))

    const client = sqlite(Path.join(directory, "stalled.db"))
    stalledWriter(() => Checkpointer.layerSql().pipe(Layer.provide(client)), lapseRow(client, "agentloop_checkpoints"))
    cutsInBatches(sqlite(Path.join(directory, "batches.db")), "batches")
  })

  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_retention_test_${process.pid}`
    const client = postgresClient
    afterAll(() => dropTables(table))
    conformance("on PostgreSQL", () => Checkpointer.layerSql({ table }).pipe(Layer.provide(client)))

    stalledWriter(() => Checkpointer.layerSql({ table }).pipe(Layer.provide(client)), lapseRow(client, table))
    const batches = `agentloop_retention_batches_${process.pid}`
    afterAll(() => dropTables(batches))
    cutsInBatches(client, batches)

    it.live("a stalled writer's append that meets a prune deleting its run waits for the prune, and writes nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* Checkpointer.Checkpointer
        const id = fresh("racing")
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* store.open(id, fingerprint)
          yield* log.append(["turn 1"])
          yield* lapseRow(client, table)(id, (yield* Clock.currentTimeMillis) - 3_600_000)
          // A prune's transaction, held open once it deleted the run's row and entries.
          const deleted = yield* Deferred.make<void>()
          const commit = yield* Deferred.make<void>()
          const prune = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
            yield* sql`DELETE FROM ${sql(`${table}_runs`)} WHERE execution_id = ${id}`
            yield* sql`DELETE FROM ${sql(table)} WHERE execution_id = ${id}`
            yield* Deferred.succeed(deleted, undefined)
            yield* Deferred.await(commit)
          })))
          yield* Deferred.await(deleted)
          const append = yield* Effect.forkChild(Effect.exit(log.append(["turn 2"])))
          // The append reaches the server and waits for the prune's row lock (or, unlocked, is done at once).
          const waiting = sql`SELECT 1 FROM pg_stat_activity
              WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO%' AND query LIKE ${`%${table}%`}`
            .pipe(Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (rows) => rows.length > 0 }))
          yield* Effect.raceFirst(waiting, Fiber.await(append))
          yield* Deferred.succeed(commit, undefined)
          yield* Fiber.join(prune)
          const appended = yield* Fiber.join(append)
          expect(Exit.isFailure(appended)).toBe(true)
        }))
        expect(yield* read(id)).toStrictEqual([])
      }).pipe(Effect.provide(Checkpointer.layerSql({ table }).pipe(Layer.provideMerge(client)))))

    it.effect("pruning finds finished runs by an index on when they finished, the others by when they last ended", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Checkpointer.prune({ finishedBefore: 0 }).pipe(
          Effect.provide(Checkpointer.layerSql({ table }).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))))
        )
        const indexes = yield* Effect.flatMap(
          sql`SELECT indexdef AS name FROM pg_indexes WHERE tablename = ${`${table}_runs`}`,
          Schema.decodeUnknownEffect(Names)
        )
        const definitions = indexes.map((index) => index.name).join("\n")
        expect(definitions).toMatch(/_runs_finished ON .*\(finished_at\) WHERE \(finished_at IS NOT NULL\)/)
        expect(definitions).toMatch(
          /_runs_unfinished ON .*\(abs\(expires_at\)\) WHERE \(\(finished_at IS NULL\) AND \(substr\(execution_id, 1, 18\) <> '@agentloop\/thread\/'::text\)\)/
        )
        expect(definitions).not.toMatch(/_runs_finished_at/)
      }).pipe(Effect.provide(client)))
  })
})
