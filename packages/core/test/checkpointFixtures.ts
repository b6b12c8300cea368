/** What the retention and compaction tests share: runs to record, agents to run, and the stores to run them on. */
import { NodeSqliteClient } from "@agentloop/durable"
import { MockLanguageModel, Reachable } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe } from "@effect/vitest"
import { Clock, Deferred, Effect, FileSystem, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { model, pricing, usage } from "./agentFixtures.ts"

export const fingerprint = { input: "sha256:aa" }

/**
 * An `add` tool, and a `slow` one that never ends the first time it is called (so a run can be cut off in it), both
 * idempotent.
 */
export const tools = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  let slowCalls = 0
  const add = Tool.make({
    name: "add",
    description: "Adds two numbers",
    input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
    output: Schema.Finite,
    idempotent: true,
    execute: ({ a, b }) => Effect.succeed(a + b)
  })
  const slow = Tool.make({
    name: "slow",
    description: "Takes forever the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    // Run again when a run cut off in it resumes (a tool that is not idempotent would not be: see AgentLoopResume).
    idempotent: true,
    execute: () =>
      Effect.suspend(() =>
        ++slowCalls === 1 ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never) : Effect.succeed("done")
      )
  })
  return { started, toolkit: Toolkit.make(add, slow) }
})

export const slowCall = MockLanguageModel.callsTurn([{ name: "slow", arguments: {}, callId: "call_slow" }], {
  model,
  usage
})
export const fresh = (name: string) => `${name}-${Math.random().toString(36).slice(2)}`

/** Opens run `id`, appends `entries`, then `result` as the append that finishes it (when given), and closes it. */
export const record = (id: string, entries: ReadonlyArray<string>, result?: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* (yield* Checkpointer.Checkpointer).open(id, fingerprint)
    for (const entry of entries) yield* log.append([entry])
    if (result !== undefined) yield* log.append(result, { finished: true })
  }))

export const read = (id: string) => Effect.flatMap(Checkpointer.Checkpointer, (store) => store.read(id))

/** Runs `runId` on a mock answering `script`, against the checkpointer in context: its exit and how many turns it asked. */
export const runAgent = (
  script: ReadonlyArray<MockLanguageModel.Reply>,
  runId: string,
  options: Partial<AgentLoop.Options<string, never>> = {}
) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit((yield* AgentLoop.AgentLoop).run({ input: "Hi", model, runId, ...options }))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, asked: requests.length }
  }).pipe(
    Effect.provide(
      AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))
    )
  )

/** A temporary directory for a test file's stores, removed by `remove`. */
export const tempDirectory = (name: string) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), `agentloop-${name}-`))
  return { dir, remove: () => Fs.rmSync(dir, { recursive: true, force: true }) }
}

export const files = (dir: string) =>
  Checkpointer.layerFileSystem(dir).pipe(Layer.provide(NodeFileSystem.layer), Layer.provide(NodePath.layer))

export const sqlite = (filename: string) => NodeSqliteClient.layer({ filename })

export const postgresReachable = await Reachable.listening(5432)

export const postgresClient = PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })

/** Drops the checkpoint tables named after `table`. */
export const dropTables = (table: string) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql`DROP TABLE IF EXISTS ${sql(table)}`,
        sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`
      ])).pipe(Effect.provide(postgresClient))
  )

/**
 * Declares `suite` once per store: in memory, on the file system and on SQLite
 * (in a temporary directory of the file's), and on PostgreSQL when something
 * listens on its port (in tables of the file's own, dropped after).
 */
export const eachStore = (
  name: string,
  suite: (label: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) => void
): void => {
  const temp = tempDirectory(name)
  afterAll(temp.remove)
  suite("in memory", () => Checkpointer.layerMemory)
  suite("on the file system", () =>
    Checkpointer.layerFileSystem(temp.dir, { sync: false }).pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    ))
  suite("on SQLite", () => Checkpointer.layerSql().pipe(Layer.provide(sqlite(Path.join(temp.dir, "checkpoints.db")))))
  if (!postgresReachable) console.warn(`${name}: SKIPPING the PostgreSQL tests: nothing listens on 127.0.0.1:5432`)
  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_${name.replaceAll("-", "_")}_test_${process.pid}`
    afterAll(() => dropTables(table))
    suite("on PostgreSQL", () => Checkpointer.layerSql({ table }).pipe(Layer.provide(postgresClient)))
  })
}

/** What a watcher of the file system does about a call: nothing, or effects run before it, and once it succeeded. */
export type Watch = void | { readonly before?: Effect.Effect<void>; readonly after?: Effect.Effect<void> }

/**
 * The store on `dir` over the platform's file system, telling `seen` of each call it makes (a method of the file
 * system, or `sync` and `writeAll` on an open file) as it starts, with the name of the file (its first argument's).
 */
export const watchedFiles = (dir: string, seen: (call: string, name: string) => Watch) =>
  Checkpointer.layerFileSystem(dir).pipe(
    Layer.provide(
      Layer.effect(FileSystem.FileSystem)(Effect.map(FileSystem.FileSystem, (fs) => {
        const told = <A, E, R>(call: string, path: string, effect: Effect.Effect<A, E, R>) =>
          Effect.suspend(() => {
            const watch = seen(call, Path.basename(path))
            if (!watch) return effect
            return Effect.andThen(watch.before ?? Effect.void, Effect.tap(effect, () => watch.after ?? Effect.void))
          })
        const watched = (path: string, file: FileSystem.File): FileSystem.File =>
          new Proxy(file, {
            get: (target, key) =>
              key === "sync"
                ? told("sync", path, target.sync)
                : key === "writeAll"
                ? (bytes: Uint8Array) => told("writeAll", path, target.writeAll(bytes))
                : Reflect.get(target, key)
          })
        return new Proxy(fs, {
          get: (target, key) => {
            const method: unknown = Reflect.get(target, key)
            if (typeof method !== "function" || typeof key !== "string") return method
            return (path: string, ...rest: Array<unknown>) => {
              const effect = method.call(target, path, ...rest)
              return told(
                key,
                path,
                key === "open"
                  ? Effect.map(effect, (file: FileSystem.File) => watched(path, file))
                  : effect
              )
            }
          }
        })
      }))
    ),
    Layer.provide(NodeFileSystem.layer),
    Layer.provide(NodePath.layer)
  )

/**
 * Runs `effect` by a clock `by.ms` ahead of the test's, read at each look (so a test can make a process stall in the
 * middle of an effect: nothing runs meanwhile, and its clock jumps).
 */
export const ahead =
  (by: { readonly ms: number }) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Clock.clockWith((clock) =>
      Effect.provideService(effect, Clock.Clock, {
        currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe() + by.ms,
        currentTimeMillis: Effect.map(clock.currentTimeMillis, (now) => now + by.ms),
        currentTimeNanosUnsafe: () => clock.currentTimeNanosUnsafe() + BigInt(by.ms) * 1_000_000n,
        currentTimeNanos: Effect.map(clock.currentTimeNanos, (now) => now + BigInt(by.ms) * 1_000_000n),
        monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
        monotonicTimeNanos: clock.monotonicTimeNanos,
        sleep: (duration) => clock.sleep(duration)
      })
    )

/** Runs `effect` as if `ms` had passed on every clock (and nothing had run meanwhile: a process stalled that long). */
export const after = (ms: number) => ahead({ ms })
