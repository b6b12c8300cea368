import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Checkpointer from "../src/Checkpointer.ts"
import type * as CheckpointStore from "../src/CheckpointStore.ts"
import * as Step from "../src/step/Step.ts"
import { answer } from "./agentFixtures.ts"
import {
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
  tempDirectory
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
        yield* record(id, [], ["result"])
        yield* TestClock.adjust("1 second")
        const refused = [
          [{ finishedBefore: "soon" }, "finishedBefore"],
          [{ finishedBefore: -1 }, "finishedBefore"],
          [{ finishedBefore: new Date(Number.NaN) }, "finishedBefore"],
          [{}, "finishedBefore"],
          [{ finishedBefore: 0, keep: "everything" }, "keep"]
        ] as const
        for (const [options, field] of refused) {
          const error = yield* Effect.flip(Checkpointer.prune(options as unknown as CheckpointStore.PruneOptions))
          expect(error).toMatchObject({ _tag: "InvalidOptions", field })
        }
        expect(yield* read(id)).toStrictEqual(["result"])
        expect(yield* Checkpointer.prune({ finishedBefore: 0 })).toStrictEqual({ runs: [id] })
      }).pipe(Effect.provide(layer())))
  })

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

  describe("on the file system", () => {
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
        expect(indexes.map((index) => index.name)).toContain("old_checkpoints_runs_finished_at")
      }).pipe(Effect.provide(sqlite(Path.join(directory, "old.db")))))
  })

  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_retention_test_${process.pid}`
    const client = postgresClient
    afterAll(() => dropTables(table))
    conformance("on PostgreSQL", () => Checkpointer.layerSql({ table }).pipe(Layer.provide(client)))

    it.effect("pruning finds finished runs by an index on when they finished", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Checkpointer.prune({ finishedBefore: 0 }).pipe(
          Effect.provide(Checkpointer.layerSql({ table }).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql))))
        )
        const indexes = yield* Effect.flatMap(
          sql`SELECT indexdef AS name FROM pg_indexes WHERE tablename = ${`${table}_runs`}`,
          Schema.decodeUnknownEffect(Names)
        )
        expect(indexes.map((index) => index.name).join("\n")).toMatch(/\(finished_at\)/)
      }).pipe(Effect.provide(client)))
  })
})
