/**
 * Bounded logs: a compacting append replaces a run's log at once on every
 * store, and an `AgentLoop` run with `compactAfter` keeps its log bounded by
 * snapshots of its state, resumes from one, and ends as it would have.
 */
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, FileSystem, Layer, PlatformError } from "effect"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import { addCall, answer, environment, model } from "./agentFixtures.ts"
import {
  dropTables,
  files,
  fingerprint,
  fresh,
  postgresClient,
  postgresReachable,
  read,
  runAgent,
  slowCall,
  sqlite,
  tempDirectory,
  tools
} from "./checkpointFixtures.ts"

const temp = tempDirectory("compaction")
afterAll(temp.remove)

/** What every store's compaction must do. */
const conformance = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("a compacting append replaces the log at once; appends go on after it, in its place", () =>
      Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        const id = fresh("compacted")
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* store.open(id, fingerprint)
          yield* log.append(["a", "b"])
          yield* log.append(["c"], { durable: false })
          yield* log.append(["snapshot of a b c"], { compact: true })
          yield* log.append(["d"])
        }))
        expect(yield* read(id)).toStrictEqual(["snapshot of a b c", "d"])
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* store.open(id, fingerprint)
          expect(log.entries).toStrictEqual(["snapshot of a b c", "d"])
          yield* log.append(["e"])
          // Compacting and finishing at once: the result alone is the log.
          yield* log.append(["result"], { compact: true, finished: true })
        }))
        expect(yield* read(id)).toStrictEqual(["result"])
        yield* TestClock.adjust("1 second")
        expect(yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })).toStrictEqual({ runs: [] })
        expect(yield* Checkpointer.prune({ finishedBefore: 0 })).toStrictEqual({ runs: [id] })
      }).pipe(Effect.provide(layer())))

    it.effect("an AgentLoop run with compactAfter keeps its log bounded, resumes from its snapshot, ends the same", () =>
      Effect.gen(function*() {
        const { started, toolkit } = yield* tools
        const compacted = fresh("agent-compacted")
        const whole = fresh("agent-whole")
        const turns = [...Array.from({ length: 8 }, (_, i) => addCall(i, 1)), slowCall, answer("done")]
        const options = { toolkit, compactAfter: 4 }
        // Cut off in its ninth turn's slow call, after several snapshots.
        const first = yield* Effect.forkChild(runAgent(turns, compacted, options))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        const log = yield* read(compacted)
        expect(log[0]).toContain("\"_tag\":\"Snapshot\"")
        expect(log.length).toBeLessThanOrEqual(5)
        // Resumed: the slow call runs again, and only the last turn is asked.
        const resumed = yield* runAgent([answer("done")], compacted, options)
        expect(resumed.asked).toBe(1)
        // The same as a run that was never compacted, nor cut off.
        const reference = yield* runAgent(turns, whole, { toolkit })
        expect(reference.asked).toBe(10)
        expect(resumed.exit).toStrictEqual(reference.exit)
        expect((yield* read(whole)).length).toBeGreaterThan(25)
        yield* Effect.forEach(
          [compacted, whole],
          (id) => Effect.flatMap(Checkpointer.Checkpointer, (c) => c.clear(id)),
          {
            discard: true
          }
        )
      }).pipe(Effect.provide(layer())))
  })

describe("Compaction", () => {
  conformance("in memory", () => Checkpointer.layerMemory)
  conformance("on the file system", () => files(Path.join(temp.dir, "files")))
  conformance(
    "on SQLite",
    () => Checkpointer.layerSql().pipe(Layer.provide(sqlite(Path.join(temp.dir, "compaction.db"))))
  )
  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_compaction_test_${process.pid}`
    afterAll(() => dropTables(table))
    conformance("on PostgreSQL", () => Checkpointer.layerSql({ table }).pipe(Layer.provide(postgresClient)))
  })

  it.effect("a compacted file log is a new whole log: renamed into place, no temporary file left", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(temp.dir, "renamed-"))
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* (yield* Checkpointer.Checkpointer).open("renamed", fingerprint)
        yield* log.append(["a", "b", "c"])
        const [folder] = Fs.readdirSync(dir)
        const file = Path.join(dir, folder!, "log")
        const before = Fs.statSync(file)
        yield* log.append(["snapshot"], { compact: true })
        const after = Fs.statSync(file)
        expect(after.ino).not.toBe(before.ino)
        expect(after.size).toBeLessThan(before.size)
        // Appends after it go to the new log.
        yield* log.append(["d"])
        expect(Fs.statSync(file).size).toBeGreaterThan(after.size)
        expect(Fs.readdirSync(Path.join(dir, folder!)).filter((name) => name.includes(".tmp-"))).toStrictEqual([])
      })).pipe(Effect.provide(files(dir)))
      expect(yield* read("renamed").pipe(Effect.provide(files(dir)))).toStrictEqual(["snapshot", "d"])
    }))

  it.effect("a compaction cut off before its rename leaves the old log whole, and the next writer goes on", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(temp.dir, "cut-off-"))
      // The platform's file system, whose renames of a log fail: the process died just before it.
      const failing = Layer.effect(FileSystem.FileSystem)(Effect.map(FileSystem.FileSystem, (fs) => ({
        ...fs,
        rename: (from: string, to: string) =>
          to.endsWith(`${Path.sep}log`) && from.includes(".tmp-")
            ? Effect.fail(
              new PlatformError.PlatformError(
                new PlatformError.SystemError({
                  _tag: "Unknown",
                  module: "FileSystem",
                  method: "rename",
                  description: "the process died"
                })
              )
            )
            : fs.rename(from, to)
      }))).pipe(Layer.provide(NodeFileSystem.layer))
      const store = Checkpointer.layerFileSystem(dir).pipe(Layer.provide(failing), Layer.provide(NodePath.layer))
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* (yield* Checkpointer.Checkpointer).open("cut-off", fingerprint)
        yield* log.append(["a", "b"])
      })).pipe(Effect.provide(files(dir)))
      const error = yield* Effect.flip(
        Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("cut-off", fingerprint)
          yield* log.append(["snapshot"], { compact: true })
        })).pipe(Effect.provide(store))
      )
      expect(error).toMatchObject({ _tag: "CheckpointError", operation: "append" })
      expect(yield* read("cut-off").pipe(Effect.provide(files(dir)))).toStrictEqual(["a", "b"])
      yield* Effect.scoped(Effect.gen(function*() {
        const log = yield* (yield* Checkpointer.Checkpointer).open("cut-off", fingerprint)
        yield* log.append(["snapshot"], { compact: true })
      })).pipe(Effect.provide(files(dir)))
      expect(yield* read("cut-off").pipe(Effect.provide(files(dir)))).toStrictEqual(["snapshot"])
    }))

  it.effect("compactAfter must be a positive integer", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const error = yield* Effect.flip(agent.run({ input: "Hi", model, runId: "r", compactAfter: 0 }))
      expect(error).toMatchObject({ _tag: "InvalidOptions", field: "compactAfter" })
    }).pipe(Effect.provide(environment([answer("never")])), Effect.provide(Checkpointer.layerMemory)))
})
