// @module-tag slow
import { NodeSqliteClient } from "@agentloop/durable"
import { MockLanguageModel, Reachable } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, type Exit, Fiber, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Thread from "../src/agent/Thread.ts"
import * as ThreadId from "../src/agent/ThreadId.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import { CheckpointError } from "../src/CheckpointStore.ts"
import * as Compactor from "../src/Compactor.ts"
import type * as Item from "../src/Item.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { answer, environment, model } from "./agentFixtures.ts"

const fresh = (name: string) => `${name}-${Math.random().toString(36).slice(2)}`

/** An item as a line: `user: hi`, `assistant: hello`, or its type. */
const line = (item: Item.Item): string =>
  item.type === "message"
    ? `${item.role}: ${item.content.map((part) => "text" in part ? part.text : part.type).join("")}`
    : item.type

/** Runs `options` on a fresh mock answering `script`: the exit, and each request's history as lines. */
const execute = (script: ReadonlyArray<MockLanguageModel.Reply>, options: AgentLoop.Options) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    const exit = yield* Effect.exit(agent.run(options))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests: requests.map((request) => request.history.map(line)) }
  }).pipe(Effect.provide(environment(script)))

const succeeded = (exit: Exit.Exit<unknown, unknown>) => expect(exit._tag).toBe("Success")

const history = (thread: string) => Effect.map(Thread.read(thread), (items) => items.map(line))

/** A tool that never returns the first time it runs (so a test can cut a run off mid-tool), then answers. */
const stalling = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  let calls = 0
  const wait = Tool.make({
    name: "wait",
    description: "Waits",
    input: Schema.Struct({}),
    output: Schema.String,
    // Run again when a run cut off in it resumes.
    idempotent: true,
    execute: () =>
      Effect.suspend(() =>
        ++calls === 1 ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never) : Effect.succeed("waited")
      )
  })
  return { started, toolkit: Toolkit.make(wait), calls: () => calls }
})
const waitCall = MockLanguageModel.callsTurn([{ name: "wait", arguments: {}, callId: "call_wait" }], { model })

/** The behaviour threads have on every store. */
const conformance = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("a run on a thread starts from the items of the runs before it", () =>
      Effect.gen(function*() {
        const thread = fresh("user")
        expect(yield* history(thread)).toStrictEqual([])
        const first = yield* execute([answer("Hello Ada.")], { input: "I am Ada.", thread })
        succeeded(first.exit)
        const second = yield* execute([answer("You are Ada.")], { input: "Who am I?", thread })
        succeeded(second.exit)
        // The model is asked with the whole conversation, though the second run was given one message.
        expect(second.requests).toStrictEqual([[
          "user: I am Ada.",
          "assistant: Hello Ada.",
          "user: Who am I?"
        ]])
        expect(yield* history(thread)).toStrictEqual([
          "user: I am Ada.",
          "assistant: Hello Ada.",
          "user: Who am I?",
          "assistant: You are Ada."
        ])
        // Another thread is another conversation.
        const other = yield* execute([answer("Hi.")], { input: "Hi", thread: fresh("user") })
        expect(other.requests).toStrictEqual([["user: Hi"]])
      }).pipe(Effect.provide(layer())))

    it.effect("past maxItems, the thread is compacted by the Compactor before a run, and stays compacted", () =>
      Effect.gen(function*() {
        const thread = fresh("long")
        const keepLastTwo = Compactor.layer((items) => Effect.succeed(items.slice(-2)))
        const options = { id: thread, maxItems: 3 }
        for (const n of [1, 2]) {
          succeeded((yield* execute([answer(`a${n}`)], { input: `q${n}`, thread: options })).exit)
        }
        expect(yield* history(thread)).toHaveLength(4)
        const third = yield* execute([answer("a3")], { input: "q3", thread: options }).pipe(Effect.provide(keepLastTwo))
        succeeded(third.exit)
        expect(third.requests).toStrictEqual([["user: q2", "assistant: a2", "user: q3"]])
        expect(yield* history(thread)).toStrictEqual(["user: q2", "assistant: a2", "user: q3", "assistant: a3"])
        // A compactor that cannot shorten it ends the run before any request.
        const stuck = yield* execute([], { input: "q4", thread: options })
        expect(yield* Effect.flip(stuck.exit)).toMatchObject({ _tag: "CompactionFailed" })
        expect(stuck.requests).toStrictEqual([])
        expect(yield* history(thread)).toHaveLength(4)
      }).pipe(Effect.provide(layer())))

    it.effect("one run at a time on a thread: a second is refused with RunInProgress, nothing interleaves", () =>
      Effect.gen(function*() {
        const thread = fresh("busy")
        const { started, toolkit } = yield* stalling
        const first = yield* Effect.forkChild(execute([waitCall, answer("done")], { input: "slow", toolkit, thread }))
        yield* Deferred.await(started)
        const second = yield* execute([answer("never")], { input: "fast", thread })
        const refused = yield* Effect.flip(second.exit)
        expect(refused).toMatchObject({
          _tag: "CheckpointFailed",
          cause: { _tag: "RunInProgress", id: ThreadId.logId(thread) }
        })
        expect(second.requests).toStrictEqual([])
        expect(yield* Effect.flip(Thread.clear(thread))).toMatchObject({ _tag: "RunInProgress" })
        // The first run, cut off, adds nothing; the second, run again, starts from an empty thread.
        yield* Fiber.interrupt(first)
        expect(yield* history(thread)).toStrictEqual([])
        succeeded((yield* execute([answer("ok")], { input: "fast", thread })).exit)
        expect(yield* history(thread)).toStrictEqual(["user: fast", "assistant: ok"])
      }).pipe(Effect.provide(layer())))

    it.effect("a run cut off mid-tool and executed again with its runId adds its items once", () =>
      Effect.gen(function*() {
        const thread = fresh("crash")
        succeeded((yield* execute([answer("a1")], { input: "q1", thread })).exit)
        const { calls, started, toolkit } = yield* stalling
        const options = { input: "q2", toolkit, thread, runId: fresh("run") }
        const first = yield* Effect.forkChild(execute([waitCall], options))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        expect(yield* history(thread)).toStrictEqual(["user: q1", "assistant: a1"])
        // Resumed: only the turn after the tool is asked, from the history the run started with.
        const resumed = yield* execute([answer("a2")], options)
        succeeded(resumed.exit)
        expect(calls()).toBe(2)
        expect(resumed.requests).toStrictEqual([[
          "user: q1",
          "assistant: a1",
          "user: q2",
          "function_call",
          "function_call_output"
        ]])
        const expected = [
          "user: q1",
          "assistant: a1",
          "user: q2",
          "function_call",
          "function_call_output",
          "assistant: a2"
        ]
        expect(yield* history(thread)).toStrictEqual(expected)
        // Executed once more, the finished run answers from its checkpoint and adds nothing.
        const again = yield* execute([], options)
        succeeded(again.exit)
        expect(again.requests).toStrictEqual([])
        expect(yield* history(thread)).toStrictEqual(expected)
        // The next run follows it.
        const next = yield* execute([answer("a3")], { input: "q3", thread })
        expect(next.requests[0]).toStrictEqual([...expected, "user: q3"])
      }).pipe(Effect.provide(layer())))

    it.effect("a run superseded by a later run on its thread is refused with ThreadSuperseded", () =>
      Effect.gen(function*() {
        const thread = fresh("superseded")
        const { started, toolkit } = yield* stalling
        const runId = fresh("run")
        const first = yield* Effect.forkChild(execute([waitCall], { input: "q1", toolkit, thread, runId }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        succeeded((yield* execute([answer("a2")], { input: "q2", thread, runId: "later" })).exit)
        const resumed = yield* execute([answer("a1")], { input: "q1", toolkit, thread, runId })
        expect(yield* Effect.flip(resumed.exit)).toMatchObject({
          _tag: "CheckpointFailed",
          cause: { _tag: "ThreadSuperseded", thread, run: runId, by: "later" }
        })
        expect(yield* history(thread)).toStrictEqual(["user: q2", "assistant: a2"])
      }).pipe(Effect.provide(layer())))

    it.effect("a thread is forked into a new one, which goes on on its own, and deleted", () =>
      Effect.gen(function*() {
        const thread = fresh("source")
        const copy = fresh("copy")
        succeeded((yield* execute([answer("a1")], { input: "q1", thread })).exit)
        yield* Thread.fork(thread, copy)
        const onCopy = yield* execute([answer("b2")], { input: "q2 on the copy", thread: copy })
        expect(onCopy.requests).toStrictEqual([["user: q1", "assistant: a1", "user: q2 on the copy"]])
        expect(yield* history(thread)).toStrictEqual(["user: q1", "assistant: a1"])
        expect(yield* Effect.flip(Thread.fork(thread, copy))).toMatchObject({ _tag: "ThreadExists", thread: copy })
        expect(yield* Thread.list).toEqual(expect.arrayContaining([thread, copy]))
        // Deleted, a thread is no longer listed, and starts afresh; its fork keeps its own history.
        yield* Thread.clear(thread)
        expect(yield* history(thread)).toStrictEqual([])
        expect(yield* Thread.list).not.toContain(thread)
        const afresh = yield* execute([answer("a")], { input: "q", thread })
        expect(afresh.requests).toStrictEqual([["user: q"]])
        expect(yield* Thread.list).toEqual(expect.arrayContaining([thread, copy]))
        expect(yield* history(copy)).toHaveLength(4)
      }).pipe(Effect.provide(layer())))

    // Live: a writer of the list waits for another one on the clock.
    it.live("threads started at once are all listed, each once", () =>
      Effect.gen(function*() {
        const threads = Array.from({ length: 6 }, () => fresh("many"))
        yield* Effect.forEach(threads, (thread) => execute([answer("a")], { input: "q", thread }), {
          concurrency: "unbounded",
          discard: true
        })
        const listed = yield* Thread.list
        for (const thread of threads) expect(listed.filter((id) => id === thread)).toStrictEqual([thread])
      }).pipe(Effect.provide(layer())))

    it.effect("a damaged entry fails the thread with a CheckpointError naming it", () =>
      Effect.gen(function*() {
        const thread = fresh("damaged")
        succeeded((yield* execute([answer("a1")], { input: "q1", thread })).exit)
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open(ThreadId.logId(thread), Thread.fingerprint)
          yield* log.append([JSON.stringify({ _tag: "Ran", run: "x" })])
        }))
        expect(yield* Effect.flip(Thread.read(thread))).toMatchObject({
          _tag: "CheckpointError",
          operation: "read",
          id: ThreadId.logId(thread)
        })
        const refused = yield* execute([answer("never")], { input: "q2", thread })
        expect(yield* Effect.flip(refused.exit)).toMatchObject({
          _tag: "CheckpointFailed",
          cause: { _tag: "CheckpointError", message: expect.stringContaining(`entry 2 of thread "${thread}"`) }
        })
      }).pipe(Effect.provide(layer())))
  })

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-threads-"))
afterAll(() => Fs.rmSync(directory, { recursive: true, force: true }))

const postgresReachable = await Reachable.listening(5432)
if (!postgresReachable) console.warn("Thread: SKIPPING the PostgreSQL tests: nothing listens on 127.0.0.1:5432")

/** A store whose first append of a finished run's items to a thread fails, as a crash there would. */
const losing = () => {
  let lose = true
  return Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (store) => ({
    ...store,
    open: (id, fingerprint) =>
      Effect.map(store.open(id, fingerprint), (log) => ({
        ...log,
        append: (entries, options) => {
          if (!lose || !entries.some((entry) => entry.includes("\"_tag\":\"Ran\""))) {
            return log.append(entries, options)
          }
          lose = false
          return Effect.fail(new CheckpointError({ operation: "append", id, message: "lost" }))
        }
      }))
  }))).pipe(Layer.provide(Checkpointer.layerMemory))
}

describe("Thread", () => {
  conformance("in memory", () => Checkpointer.layerMemory)
  conformance(
    "on the file system",
    () =>
      Checkpointer.layerFileSystem(directory).pipe(Layer.provide(NodeFileSystem.layer), Layer.provide(NodePath.layer))
  )
  conformance(
    "on SQLite",
    () =>
      Checkpointer.layerSql().pipe(
        Layer.provide(NodeSqliteClient.layer({ filename: Path.join(directory, "threads.db") }))
      )
  )

  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_threads_test_${process.pid}`
    const connection = { host: "127.0.0.1", port: 5432, database: "test", username: "postgres" }
    const client = PgClient.layer(connection)
    afterAll(() =>
      Effect.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.all([
            sql`DROP TABLE IF EXISTS ${sql(table)}`,
            sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`
          ])).pipe(Effect.provide(client))
      )
    )
    conformance("on PostgreSQL", () => Checkpointer.layerSql({ table }).pipe(Layer.provide(client)))
  })

  it.effect("a run whose items did not reach its thread adds them when executed again, asking nothing", () =>
    Effect.gen(function*() {
      const thread = fresh("lost")
      const options = { input: "q1", thread, runId: fresh("run") }
      const first = yield* execute([answer("a1")], options)
      expect(yield* Effect.flip(first.exit)).toMatchObject({ _tag: "CheckpointFailed" })
      expect(yield* history(thread)).toStrictEqual([])
      const again = yield* execute([], options)
      succeeded(again.exit)
      expect(again.requests).toStrictEqual([])
      yield* execute([], options)
      expect(yield* history(thread)).toStrictEqual(["user: q1", "assistant: a1"])
    }).pipe(Effect.provide(losing())))

  it.effect("a run on a thread needs a Checkpointer; thread ids and run ids are checked before anything runs", () =>
    Effect.gen(function*() {
      const alone = yield* execute([answer("never")], { input: "q", thread: "t" })
      expect(yield* Effect.flip(alone.exit)).toMatchObject({
        _tag: "CheckpointFailed",
        cause: { _tag: "CheckpointError", id: ThreadId.logId("t") }
      })
      for (
        const [options, field] of [
          [{ input: "q", thread: "" }, "thread"],
          [{ input: "q", thread: { id: "t", maxItems: 0 } }, "thread"],
          [{ input: "q", thread: "t".repeat(ThreadId.maxLength + 1) }, "thread"],
          [{ input: "q", runId: ThreadId.logId("t") }, "runId"]
        ] as const
      ) {
        const refused = yield* execute([], options)
        expect(yield* Effect.flip(refused.exit)).toMatchObject({ _tag: "InvalidOptions", field })
      }
    }))
})
