/**
 * Step programs on threads: a program's item log starts from its thread's
 * history and its items go to the thread once it ends well; compaction past
 * `maxItems`, one run at a time, a program executed again adding its items
 * once, `ThreadSuperseded`, and a thread shared by `AgentLoop` runs and step
 * programs. On every store; bad options and lost appends in memory.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, type Exit, Fiber, Layer, Schema, Stream } from "effect"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Thread from "../src/agent/Thread.ts"
import * as ThreadId from "../src/agent/ThreadId.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import { CheckpointError } from "../src/CheckpointStore.ts"
import * as Compactor from "../src/Compactor.ts"
import type * as Item from "../src/Item.ts"
import type { LanguageModel } from "../src/LanguageModel.ts"
import * as Step from "../src/step/Step.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import { answer, model, pricing } from "./agentFixtures.ts"
import { eachStore, fresh } from "./checkpointFixtures.ts"

/** An item as a line: `user: hi`, `assistant: hello`, or its type. */
const line = (item: Item.Item): string =>
  item.type === "message"
    ? `${item.role}: ${item.content.map((part) => "text" in part ? part.text : part.type).join("")}`
    : item.type

const history = (thread: string) => Effect.map(Thread.read(thread), (items) => items.map(line))

/** The agent loop as a step program: turns until the model calls no tool. */
const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })

type Program = Step.Step<string, string, unknown, LanguageModel, unknown>

/** Executes `program` on `input` with `options` on a fresh mock answering `script`: its exit, and each request's history as lines. */
const execute = (
  script: ReadonlyArray<MockLanguageModel.Reply>,
  input: string,
  options: Step.Options<never>,
  program: Program = agent
) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Step.execute(program, input, options))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests: requests.map((request) => request.history.map(line)) }
  }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing)))

/** Runs `AgentLoop` on `input` on `thread`: each request's history as lines. */
const chat = (script: ReadonlyArray<MockLanguageModel.Reply>, input: string, thread: string) =>
  Effect.gen(function*() {
    yield* (yield* AgentLoop.AgentLoop).run({ input, thread, model })
    return (yield* (yield* MockLanguageModel.MockLanguageModel).requests).map((request) => request.history.map(line))
  }).pipe(
    Effect.provide(
      AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))
    )
  )

const succeeded = (exit: Exit.Exit<unknown, unknown>) => expect(exit._tag).toBe("Success")

/** A tool that never returns the first time it runs (so a test can cut a program off mid-tool), then answers. */
const stalling = () => {
  const started = Deferred.makeUnsafe<void>()
  let calls = 0
  const wait = Tool.make({
    name: "wait",
    description: "Waits",
    input: Schema.Struct({}),
    output: Schema.String,
    idempotent: true,
    execute: () =>
      Effect.suspend(() =>
        ++calls === 1 ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never) : Effect.succeed("waited")
      )
  })
  return { started, toolkit: Toolkit.make(wait), calls: () => calls }
}
const waitCall = MockLanguageModel.callsTurn([{ name: "wait", arguments: {}, callId: "call_wait" }], { model })

const suite = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("a thread shared by AgentLoop runs and step programs: each starts from what the others added", () =>
      Effect.gen(function*() {
        const thread = fresh("user")
        yield* chat([answer("Hello Ada.")], "I am Ada.", thread)
        // A step program on the thread: its model is asked with the conversation, then its own input.
        const program = yield* execute([answer("You are Ada.")], "Who am I?", { thread })
        succeeded(program.exit)
        expect(program.requests).toStrictEqual([["user: I am Ada.", "assistant: Hello Ada.", "user: Who am I?"]])
        // The next AgentLoop run follows the program.
        const next = yield* chat([answer("Bye, Ada.")], "Bye.", thread)
        expect(next).toStrictEqual([[
          "user: I am Ada.",
          "assistant: Hello Ada.",
          "user: Who am I?",
          "assistant: You are Ada.",
          "user: Bye."
        ]])
        expect(yield* history(thread)).toHaveLength(6)
        expect(yield* Thread.list).toContain(thread)
      }).pipe(Effect.provide(layer())))

    it.effect("past maxItems, the Compactor shortens the thread before the program starts, for the runs after too", () =>
      Effect.gen(function*() {
        const thread = fresh("long")
        const options = { id: thread, maxItems: 3 }
        for (const n of [1, 2]) succeeded((yield* execute([answer(`a${n}`)], `q${n}`, { thread: options })).exit)
        expect(yield* history(thread)).toHaveLength(4)
        const third = yield* execute([answer("a3")], "q3", { thread: options }).pipe(
          Effect.provide(Compactor.layer((items) => Effect.succeed(items.slice(-2))))
        )
        succeeded(third.exit)
        expect(third.requests).toStrictEqual([["user: q2", "assistant: a2", "user: q3"]])
        expect(yield* history(thread)).toStrictEqual(["user: q2", "assistant: a2", "user: q3", "assistant: a3"])
        // A compactor that cannot shorten it fails the program with its CompactionError, before any request.
        const stuck = yield* execute([], "q4", { thread: options })
        expect(yield* Effect.flip(stuck.exit)).toMatchObject({ _tag: "CompactionError" })
        expect(stuck.requests).toStrictEqual([])
        expect(yield* history(thread)).toHaveLength(4)
      }).pipe(Effect.provide(layer())))

    it.effect("one run at a time on a thread: a program or an AgentLoop run meanwhile is refused with RunInProgress", () =>
      Effect.gen(function*() {
        const thread = fresh("busy")
        const { started, toolkit } = stalling()
        const first = yield* Effect.forkChild(execute([waitCall, answer("done")], "slow", { toolkit, thread }))
        yield* Deferred.await(started)
        const second = yield* execute([answer("never")], "fast", { thread })
        expect(yield* Effect.flip(second.exit)).toMatchObject({
          _tag: "ExecutionCheckpointFailed",
          cause: { _tag: "RunInProgress", id: ThreadId.logId(thread) }
        })
        expect(second.requests).toStrictEqual([])
        expect(yield* Effect.flip(chat([answer("never")], "fast", thread))).toMatchObject({
          _tag: "CheckpointFailed",
          cause: { _tag: "RunInProgress", id: ThreadId.logId(thread) }
        })
        // The first, cut off, adds nothing.
        yield* Fiber.interrupt(first)
        expect(yield* history(thread)).toStrictEqual([])
        succeeded((yield* execute([answer("ok")], "fast", { thread })).exit)
        expect(yield* history(thread)).toStrictEqual(["user: fast", "assistant: ok"])
      }).pipe(Effect.provide(layer())))

    it.effect("a finished program or AgentLoop run on a thread replays while another run holds the thread", () =>
      Effect.gen(function*() {
        const thread = fresh("watched")
        const id = fresh("program")
        const runId = fresh("run")
        // What each streamed, less the model's deltas (not recorded), and a run's events by tag (a replayed turn's
        // time counts from the execution that replays it).
        const streamProgram = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
          Stream.runCollect(Step.stream(agent, "q1", { thread, id })).pipe(
            Effect.map((events) => events.filter((event) => event._tag !== "Turn" || event.event._tag !== "Delta")),
            Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing))
          )
        const streamRun = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
          Effect.flatMap(
            AgentLoop.AgentLoop,
            (agent) => Stream.runCollect(agent.stream({ input: "q2", thread, runId }))
          )
            .pipe(
              Effect.map((events) => events.flatMap((event) => event._tag === "Delta" ? [] : [event._tag])),
              Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script))))
            )
        const program = yield* streamProgram([answer("a1")])
        const run = yield* streamRun([answer("a2")])
        // Another run executes on the thread: it holds the thread's lease.
        const { started, toolkit } = stalling()
        const holder = yield* Effect.forkChild(execute([waitCall], "q3", { toolkit, thread }))
        yield* Deferred.await(started)
        // The finished ones replay all the same, asking nothing.
        expect(yield* streamProgram([])).toStrictEqual(program)
        expect(yield* streamRun([])).toStrictEqual(run)
        yield* Fiber.interrupt(holder)
        expect(yield* history(thread)).toStrictEqual(["user: q1", "assistant: a1", "user: q2", "assistant: a2"])
      }).pipe(Effect.provide(layer())))

    it.effect("a program cut off mid-tool and executed again with its id adds its items once; a failed one none", () =>
      Effect.gen(function*() {
        const thread = fresh("resumed")
        succeeded((yield* execute([answer("a1")], "q1", { thread })).exit)
        const { calls, started, toolkit } = stalling()
        const options = { toolkit, thread, id: fresh("program") }
        const first = yield* Effect.forkChild(execute([waitCall], "q2", options))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        expect(yield* history(thread)).toStrictEqual(["user: q1", "assistant: a1"])
        // Executed again: only the turn after the tool is asked, from the history the program started with.
        const resumed = yield* execute([answer("a2")], "q2", options)
        succeeded(resumed.exit)
        expect(calls()).toBe(2)
        const expected = [
          "user: q1",
          "assistant: a1",
          "user: q2",
          "function_call",
          "function_call_output",
          "assistant: a2"
        ]
        expect(resumed.requests).toStrictEqual([expected.slice(0, -1)])
        expect(yield* history(thread)).toStrictEqual(expected)
        // Executed once more, the finished program asks nothing and adds nothing.
        const again = yield* execute([], "q2", options)
        succeeded(again.exit)
        expect(again.requests).toStrictEqual([])
        expect(yield* history(thread)).toStrictEqual(expected)
        // A program that fails adds nothing.
        const failing = Step.run({ id: "fails", execute: () => Promise.reject(new Error("no")) })
        expect((yield* execute([], "q3", { thread }, failing)).exit._tag).toBe("Failure")
        expect(yield* history(thread)).toStrictEqual(expected)
      }).pipe(Effect.provide(layer())))

    it.effect("a program superseded by a later run on its thread is refused with ThreadSuperseded", () =>
      Effect.gen(function*() {
        const thread = fresh("superseded")
        const { started, toolkit } = stalling()
        const id = fresh("program")
        const first = yield* Effect.forkChild(execute([waitCall], "q1", { toolkit, thread, id }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        yield* chat([answer("a2")], "q2", thread)
        const resumed = yield* execute([answer("a1")], "q1", { toolkit, thread, id })
        expect(yield* Effect.flip(resumed.exit)).toMatchObject({
          _tag: "ExecutionCheckpointFailed",
          cause: { _tag: "ThreadSuperseded", thread, run: id }
        })
        expect(yield* history(thread)).toStrictEqual(["user: q2", "assistant: a2"])
      }).pipe(Effect.provide(layer())))
  })

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

describe("Step programs on threads", () => {
  eachStore("step-thread", suite)

  it.effect("a program whose items did not reach its thread adds them when executed again, asking nothing", () =>
    Effect.gen(function*() {
      const thread = fresh("lost")
      const options = { thread, id: fresh("program") }
      const first = yield* execute([answer("a1")], "q1", options)
      expect(yield* Effect.flip(first.exit)).toMatchObject({ _tag: "ExecutionCheckpointFailed" })
      expect(yield* history(thread)).toStrictEqual([])
      const again = yield* execute([], "q1", options)
      succeeded(again.exit)
      expect(again.requests).toStrictEqual([])
      expect(yield* history(thread)).toStrictEqual(["user: q1", "assistant: a1"])
    }).pipe(Effect.provide(losing())))

  it.effect("a program whose start its thread no longer holds (cleared meanwhile) is refused, not started afresh", () =>
    Effect.gen(function*() {
      const thread = fresh("cleared")
      succeeded((yield* execute([answer("a1")], "q1", { thread })).exit)
      const { started, toolkit } = stalling()
      const options = { toolkit, thread, id: fresh("program") }
      const first = yield* Effect.forkChild(execute([waitCall], "q2", options))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      // The thread is cleared after the program read where it started, before it takes the thread's lease.
      let armed = true
      const clearing = Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (store) => ({
        ...store,
        open: (id, fingerprint) =>
          id === ThreadId.logId(thread) && armed
            ? Effect.andThen(
              Effect.andThen(store.clear(id), Effect.sync(() => (armed = false))),
              store.open(id, fingerprint)
            )
            : store.open(id, fingerprint)
      })))
      const resumed = yield* execute([answer("a2")], "q2", options).pipe(Effect.provide(clearing))
      expect(yield* Effect.flip(resumed.exit)).toMatchObject({
        _tag: "ExecutionCheckpointFailed",
        cause: { _tag: "CheckpointMismatch", differences: [{ field: "thread" }] }
      })
      expect(resumed.requests).toStrictEqual([])
      expect(yield* history(thread)).toStrictEqual([])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a program on a thread needs a Checkpointer; its thread and its id are checked before anything runs", () =>
    Effect.gen(function*() {
      const alone = yield* execute([answer("never")], "q", { thread: "t" })
      expect(yield* Effect.flip(alone.exit)).toMatchObject({
        _tag: "ExecutionCheckpointFailed",
        cause: { _tag: "CheckpointError", id: ThreadId.logId("t") }
      })
      expect(alone.requests).toStrictEqual([])
      const refusals: ReadonlyArray<readonly [Step.Options<never>, string]> = [
        [{ thread: "" }, "thread"],
        [{ thread: { id: "t", maxItems: 0 } }, "thread"],
        [{ thread: { id: "t".repeat(ThreadId.maxLength + 1) } }, "thread"],
        [{ id: ThreadId.logId("t") }, "id"],
        [{ id: ThreadId.indexLogId }, "id"]
      ]
      for (const [options, field] of refusals) {
        const refused = yield* execute([], "q", options).pipe(Effect.provide(Checkpointer.layerMemory))
        expect(yield* Effect.flip(refused.exit)).toMatchObject({ _tag: "InvalidOptions", field })
      }
    }))
})
