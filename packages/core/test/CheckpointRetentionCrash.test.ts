// @module-tag slow
/**
 * Retention after a real crash, on files, SQLite and PostgreSQL: a child that
 * holds a run's log and a thread's log is killed (`SIGKILL`), so neither lease
 * is released. Until its lease lapses the run is in progress, and no prune
 * takes it, whatever its cutoff; once it lapsed, the run's last execution ended when its lease
 * lapsed (the child's last renewal plus the lease's duration), and a prune of
 * the runs that did not finish takes it by that time. The thread's log is
 * never taken. The test's clock starts at the wall clock's time, before the
 * child starts, and is moved by hand.
 */
import { TestProcess } from "@agentloop/testing"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Path from "node:path"
import * as ThreadId from "../src/agent/ThreadId.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import {
  dropTables,
  files,
  postgresClient,
  postgresReachable,
  read,
  sqlite,
  tempDirectory
} from "./checkpointFixtures.ts"
import type { Config } from "./crash/retentionChild.ts"
import { sources } from "./fixtures.ts"

const child = TestProcess.bundled(new URL("./crash/retentionChild.ts", import.meta.url).pathname, sources)

/** A Node process loads the sources: seconds on a busy machine. The limit only ends a case that hangs. */
const hangs = 600_000

const crashed = (store: Config["store"], layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  Effect.gen(function*() {
    const start = Date.now()
    yield* TestClock.setTime(start)
    const config: Config = { store, runId: "cut-off", thread: "user-42", lease: 10_000 }
    const holder = yield* child.spawn(config)
    const opened = yield* holder.waitFor((message) => "opened" in message || "error" in message)
    expect(opened, holder.stderr()).toStrictEqual({ opened: true })
    yield* holder.kill
    yield* Effect.gen(function*() {
      // Its lease lapses at its last renewal (after `start`) plus 10 seconds: in progress until then, whatever the
      // cutoff (an hour from now would take it once it lapsed).
      expect(yield* Checkpointer.prune({ unfinishedBefore: new Date(start + 3_600_000) })).toStrictEqual({ runs: [] })
      expect(yield* read("cut-off")).toStrictEqual(["turn 1"])
      yield* TestClock.setTime(start + 3_600_000)
      // Lapsed: the execution ended then, after `start`, not before.
      expect(yield* Checkpointer.prune({ unfinishedBefore: new Date(start) })).toStrictEqual({ runs: [] })
      expect(yield* Checkpointer.prune({ unfinishedBefore: "30 minutes" })).toStrictEqual({ runs: ["cut-off"] })
      expect(yield* read("cut-off")).toStrictEqual([])
      expect(yield* read(ThreadId.logId("user-42"))).toStrictEqual(["started"])
    }).pipe(Effect.provide(layer()))
  }).pipe(Effect.scoped)

const temp = tempDirectory("retention-crash")
afterAll(temp.remove)

describe.concurrent("Retention after a crash", () => {
  it.effect("a killed holder's run is in progress until its lease lapses, then ended then (files)", () => {
    const directory = Path.join(temp.dir, "files")
    return crashed({ _tag: "files", directory }, () => files(directory))
  }, hangs)

  it.effect("a killed holder's run is in progress until its lease lapses, then ended then (SQLite)", () => {
    const filename = Path.join(temp.dir, "runs.db")
    return crashed({ _tag: "sqlite", filename }, () => Checkpointer.layerSql().pipe(Layer.provide(sqlite(filename))))
  }, hangs)

  it.effect.skipIf(!postgresReachable)(
    "a killed holder's run is in progress until its lease lapses, then ended then (PostgreSQL)",
    () => {
      const table = `agentloop_retention_crash_${process.pid}`
      return crashed(
        { _tag: "pg", table },
        () => Checkpointer.layerSql({ table }).pipe(Layer.provide(postgresClient))
      ).pipe(Effect.ensuring(Effect.promise(() => dropTables(table))))
    },
    hangs
  )
})
