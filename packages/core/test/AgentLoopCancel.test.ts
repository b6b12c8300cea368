/**
 * A person's cancellation of an `AgentLoop` run, on every store: the `cancel`
 * option stops a running run, whose log then records it (after its tools
 * stopped), and `AgentHistory.cancel` records it for a run that is not
 * executing. Either way, the run's termination is `Halted` by `"person"`,
 * for every execution after; a finished run stays finished.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as AgentCheckpoint from "../src/agent/AgentCheckpoint.ts"
import * as AgentHistory from "../src/agent/AgentHistory.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AgentMachine from "../src/agent/AgentMachine.ts"
import * as Thread from "../src/agent/Thread.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { addCall, answer, model, pricing, usage } from "./agentFixtures.ts"
import { eachStore, fresh, read } from "./checkpointFixtures.ts"
import { add } from "./fixtures.ts"

/** A tool that runs until it is interrupted, saying when it starts, and in `order` when it stops. */
const blocking = (order: Array<string> = []) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const block = Tool.make({
      name: "block",
      description: "Blocks until interrupted",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Effect.sync(() => order.push("the tool stopped")))
        )
    })
    return { started, order, toolkit: Toolkit.make(add, block) }
  })

const blockCall = MockLanguageModel.callsTurn([{ name: "block", arguments: {}, callId: "call_block" }], {
  model,
  usage
})

/** The checkpointer in context, noting in `order` when a cancellation is appended. */
const noting = (order: Array<string>) =>
  Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (store) => ({
    ...store,
    open: (id, fingerprint) =>
      Effect.map(store.open(id, fingerprint), (log) => ({
        ...log,
        append: (entries, options) =>
          Effect.tap(
            log.append(entries, options),
            () => Effect.sync(() => entries.some((entry) => entry.includes("\"Cancelled\"")) && order.push("recorded"))
          )
      }))
  })))

/** The checkpointer in context, whose append of an entry tagged `tag`, once begun, runs `during` before it goes on. */
const whileAppending = (tag: string, during: Effect.Effect<void>) =>
  Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (store) => ({
    ...store,
    open: (id, fingerprint) =>
      Effect.map(store.open(id, fingerprint), (log) => ({
        ...log,
        append: (entries, options) =>
          entries.some((entry) => entry.includes(`"${tag}"`))
            ? Effect.andThen(during, log.append(entries, options))
            : log.append(entries, options)
      }))
  })))

/**
 * The checkpointer in context, whose append of a run's result, once begun, presses stop and waits until the run has
 * taken the cancel (`taken`): the cancellation arrives while the result is being written.
 */
const stopWhileFinishing = (stop: Deferred.Deferred<string>, taken: Deferred.Deferred<void>) =>
  whileAppending("Finished", Effect.andThen(Deferred.succeed(stop, "too late"), Deferred.await(taken)))

const agentWith = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
  AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))

/** Runs `options` to its end on a model answering `script`: its exit, and how many turns it asked. */
const execute = (script: ReadonlyArray<MockLanguageModel.Reply>, options: AgentLoop.Options<string, never>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit((yield* AgentLoop.AgentLoop).run(options))
    return { exit, asked: (yield* (yield* MockLanguageModel.MockLanguageModel).requests).length }
  }).pipe(Effect.provide(agentWith(script)))

const halted = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

eachStore("agent-cancel", (label, layer) =>
  describe(`a person's cancellation ${label}`, () => {
    it.effect(
      "stops a run mid-tool, its tool interrupted, records it, and every execution after fails with Halted by person",
      () => {
        const order: Array<string> = []
        return Effect.gen(function*() {
          const { started, toolkit } = yield* blocking(order)
          const stop = yield* Deferred.make<string>()
          const options = { input: "Add, then block", toolkit, model, runId: fresh("cancelled") }
          const streamed = yield* Effect.forkChild(
            Stream.runCollect((yield* AgentLoop.AgentLoop).stream({ ...options, cancel: Deferred.await(stop) }))
          )
          yield* Deferred.await(started)
          yield* Deferred.succeed(stop, "the user pressed stop")
          const exit = yield* Fiber.await(streamed)
          expect(halted(exit)).toMatchObject({
            _tag: "Halted",
            source: "person",
            reason: "the user pressed stop",
            accounting: { steps: 2 }
          })
          // The tool was interrupted (a toolkit does not wait for its tools to stop), and the cancellation written.
          yield* Effect.yieldNow.pipe(Effect.repeat({ until: () => order.length === 2 }))
          expect([...order].sort()).toStrictEqual(["recorded", "the tool stopped"])
          const entries = (yield* read(options.runId)).map((entry) => JSON.parse(entry))
          expect(entries.at(-1)).toMatchObject({ _tag: "Cancelled", reason: "the user pressed stop", v: 3 })
          expect(entries.filter((entry) => entry._tag === "ToolDone")).toHaveLength(1)

          // Executed again, it fails the same way at once: the model is not asked, no tool runs.
          const again = yield* execute([answer("never")], options)
          expect(halted(again.exit)).toMatchObject({
            _tag: "Halted",
            source: "person",
            reason: "the user pressed stop"
          })
          expect(again.asked).toBe(0)
          expect(order).toHaveLength(2)

          // Its history says so; its events replay, then the cancellation.
          const checkpoints = yield* AgentHistory.checkpoints(options)
          expect(checkpoints.at(-1)).toMatchObject({ kind: "cancelled", step: 2 })
          const replayed = yield* AgentHistory.events(options)
          expect(replayed.events.map((event) => event._tag)).toStrictEqual([
            "TurnStarted",
            "TurnCompleted",
            "ToolResult",
            "Verdict",
            "TurnStarted",
            "TurnCompleted"
          ])
          expect(replayed.ended).toMatchObject({ _tag: "Halted", source: "person", reason: "the user pressed stop" })
          // A second cancellation changes nothing.
          expect(yield* AgentHistory.cancel(options, { reason: "again" })).toBe(false)
        }).pipe(
          Effect.provide(agentWith([addCall(1, 2), blockCall, answer("never")])),
          Effect.provide(noting(order).pipe(Layer.provide(layer())))
        )
      }
    )

    it.effect("a cancellation that comes as the run finishes leaves it finished, and records nothing", () =>
      Effect.gen(function*() {
        const stop = yield* Deferred.make<string>()
        const options = { input: "Add", toolkit: Toolkit.make(add), model, runId: fresh("finished") }
        const events = yield* (yield* AgentLoop.AgentLoop).stream({ ...options, cancel: Deferred.await(stop) }).pipe(
          Stream.tap((event) => event._tag === "Finished" ? Deferred.succeed(stop, "too late") : Effect.void),
          Stream.runCollect
        )
        expect(events.at(-1)?._tag).toBe("Finished")
        expect((yield* read(options.runId)).map((entry) => JSON.parse(entry)._tag).at(-1)).toBe("Finished")
        expect(yield* AgentHistory.cancel(options)).toBe(false)
        const again = yield* execute([], options)
        expect(again.exit._tag).toBe("Success")
      }).pipe(Effect.provide(agentWith([addCall(1, 2), answer("3")])), Effect.provide(layer())))

    it.effect("a cancellation that comes while the run's result is being written leaves it finished", () => {
      const stop = Deferred.makeUnsafe<string>()
      const taken = Deferred.makeUnsafe<void>()
      return Effect.gen(function*() {
        const options = { input: "Add", toolkit: Toolkit.make(add), model, runId: fresh("finishing") }
        const cancel = Effect.tap(Deferred.await(stop), () => Deferred.succeed(taken, undefined))
        const events = yield* Stream.runCollect((yield* AgentLoop.AgentLoop).stream({ ...options, cancel }))
        // The consumer gets the result the log records, not the cancellation.
        expect(events.map((event) => event._tag).slice(-2)).toStrictEqual(["Verdict", "Finished"])
        expect((yield* read(options.runId)).map((entry) => JSON.parse(entry)._tag)).toStrictEqual([
          "Answered",
          "ToolDone",
          "Decided",
          "Answered",
          "Finished"
        ])
        expect((yield* AgentHistory.events(options)).ended?._tag).toBe("Finished")
        expect(yield* AgentHistory.cancel(options)).toBe(false)
        // Its result kept alone by retention, it stays finished.
        yield* Checkpointer.prune({ finishedBefore: new Date(Date.now() + 60_000), keep: "result" })
        expect((yield* read(options.runId)).map((entry) => JSON.parse(entry)._tag)).toStrictEqual(["Finished"])
        expect((yield* execute([], options)).exit._tag).toBe("Success")
      }).pipe(
        Effect.provide(agentWith([addCall(1, 2), answer("3")])),
        Effect.provide(stopWhileFinishing(stop, taken).pipe(Layer.provide(layer())))
      )
    })

    it.effect("a cancellation that comes while a run's result is being written lets its items reach its thread", () => {
      const stop = Deferred.makeUnsafe<string>()
      const taken = Deferred.makeUnsafe<void>()
      return Effect.gen(function*() {
        const thread = fresh("chat")
        const options = { input: "Add", toolkit: Toolkit.make(add), model, runId: fresh("finishing"), thread }
        const cancel = Effect.tap(Deferred.await(stop), () => Deferred.succeed(taken, undefined))
        const events = yield* Stream.runCollect((yield* AgentLoop.AgentLoop).stream({ ...options, cancel }))
        expect(events.at(-1)?._tag).toBe("Finished")
        expect((yield* Thread.read(thread)).map((item) => item.type)).toStrictEqual([
          "message",
          "function_call",
          "function_call_output",
          "message"
        ])
      }).pipe(
        Effect.provide(agentWith([addCall(1, 2), answer("3")])),
        Effect.provide(stopWhileFinishing(stop, taken).pipe(Layer.provide(layer())))
      )
    })

    it.effect("a deadline that passes while the run's result is being written leaves it finished", () =>
      Effect.gen(function*() {
        const options = {
          input: "Add",
          toolkit: Toolkit.make(add),
          model,
          runId: fresh("deadline"),
          limits: { maxDuration: "1 minute" as const }
        }
        const events = yield* Stream.runCollect((yield* AgentLoop.AgentLoop).stream(options))
        // The consumer gets the result the log records, not MaxDuration.
        expect(events.map((event) => event._tag).slice(-2)).toStrictEqual(["Verdict", "Finished"])
        expect((yield* AgentHistory.events(options)).ended?._tag).toBe("Finished")
      }).pipe(
        Effect.provide(agentWith([addCall(1, 2), answer("3")])),
        Effect.provide(whileAppending("Finished", TestClock.adjust("1 minute")).pipe(Layer.provide(layer())))
      ))

    it.effect("a deadline that passes while a cancellation is being written leaves the run cancelled", () =>
      Effect.gen(function*() {
        const { started, toolkit } = yield* blocking()
        const stop = yield* Deferred.make<string>()
        const options = {
          input: "Add, then block",
          toolkit,
          model,
          runId: fresh("deadline"),
          limits: { maxDuration: "1 minute" as const }
        }
        const streamed = yield* Effect.forkChild(
          Stream.runCollect((yield* AgentLoop.AgentLoop).stream({ ...options, cancel: Deferred.await(stop) }))
        )
        yield* Deferred.await(started)
        yield* Deferred.succeed(stop, "the user pressed stop")
        // The consumer is told what the log records: the person's cancellation, not MaxDuration.
        expect(halted(yield* Fiber.await(streamed))).toMatchObject({ _tag: "Halted", source: "person" })
        expect((yield* AgentHistory.events(options)).ended?._tag).toBe("Halted")
      }).pipe(
        Effect.provide(agentWith([addCall(1, 2), blockCall])),
        Effect.provide(whileAppending("Cancelled", TestClock.adjust("1 minute")).pipe(Layer.provide(layer())))
      ))

    it.effect("a recorder records no cancellation once the run's log ended, with its result or a cancellation", () =>
      Effect.gen(function*() {
        /** Opens a recorder of `options`' run, recovers it, and has it record a cancellation. */
        const cancelledByRecorder = (options: AgentLoop.Options<string, never>, reason: string) =>
          Effect.scoped(Effect.gen(function*() {
            const machine = yield* AgentMachine.make(options)
            const recorder = yield* AgentCheckpoint.recorder({
              runId: machine.runId,
              fingerprint: yield* AgentCheckpoint.fingerprint(options),
              machine,
              output: AgentCheckpoint.output(options),
              toolkit: options.toolkit
            })
            yield* recorder.recover(machine.initial, () => Effect.void)
            yield* recorder.cancelled(reason)
            yield* recorder.cancelled(`${reason}, again`)
          }))
        const tags = (runId: string) =>
          Effect.map(read(runId), (entries) => entries.map((entry) => JSON.parse(entry)._tag))
        const finished = { input: "Add", toolkit: Toolkit.make(add), model, runId: fresh("recorded") }
        expect((yield* execute([addCall(1, 2), answer("3")], finished)).exit._tag).toBe("Success")
        yield* cancelledByRecorder(finished, "too late")
        expect((yield* tags(finished.runId)).at(-1)).toBe("Finished")
        // A run that had not ended is cancelled once, by the first.
        const running = { ...finished, runId: fresh("recorded") }
        yield* cancelledByRecorder(running, "stop")
        expect(yield* tags(running.runId)).toStrictEqual(["Cancelled"])
        yield* cancelledByRecorder(running, "stop")
        expect(yield* tags(running.runId)).toStrictEqual(["Cancelled"])
      }).pipe(Effect.provide(layer())))

    it.effect("a run not executing is cancelled by AgentHistory.cancel, even one never started", () =>
      Effect.gen(function*() {
        const options = { input: "Add", toolkit: Toolkit.make(add), model, runId: fresh("unstarted") }
        expect(yield* AgentHistory.cancel(options, { reason: "not needed" })).toBe(true)
        const first = yield* execute([addCall(1, 2), answer("3")], options)
        expect(halted(first.exit)).toMatchObject({ _tag: "Halted", source: "person", reason: "not needed" })
        expect(first.asked).toBe(0)
        expect(yield* AgentHistory.cancel(options)).toBe(false)

        // A run stopped by a limit (not finished) is cancelled as well: raising the limit does not resume it.
        const limited = { ...options, runId: fresh("limited"), limits: { maxTurns: 1 } }
        expect(halted((yield* execute([addCall(1, 2)], limited)).exit)).toMatchObject({ _tag: "MaxTurns" })
        expect(yield* AgentHistory.cancel(limited)).toBe(true)
        const raised = yield* execute([answer("3")], { ...limited, limits: { maxTurns: 5 } })
        expect(halted(raised.exit)).toMatchObject({ _tag: "Halted", source: "person", reason: "cancelled" })
        expect(raised.asked).toBe(0)

        // Its result kept alone by retention, a cancelled run stays cancelled.
        yield* Checkpointer.prune({ finishedBefore: new Date(1), keep: "result" })
        expect((yield* read(limited.runId)).map((entry) => JSON.parse(entry)._tag)).toStrictEqual(["Cancelled"])
        expect(halted((yield* execute([answer("3")], limited)).exit)).toMatchObject({ _tag: "Halted" })
      }).pipe(Effect.provide(layer())))

    it.effect("AgentHistory.cancel refuses a run being executed, other options, and runs on a thread", () =>
      Effect.gen(function*() {
        const { started, toolkit } = yield* blocking()
        const options = { input: "Block", toolkit, model, runId: fresh("executing") }
        const running = yield* Effect.forkChild((yield* AgentLoop.AgentLoop).run(options))
        yield* Deferred.await(started)
        expect(yield* Effect.flip(AgentHistory.cancel(options))).toMatchObject({ _tag: "RunInProgress" })
        yield* Fiber.interrupt(running)
        expect(yield* Effect.flip(AgentHistory.cancel({ ...options, input: "Something else" }))).toMatchObject({
          _tag: "CheckpointMismatch",
          differences: [{ field: "input" }]
        })
        expect(yield* Effect.flip(AgentHistory.cancel({ ...options, thread: "chat-1" }))).toMatchObject({
          _tag: "InvalidOptions",
          field: "thread"
        })
        expect(yield* Effect.flip(AgentHistory.events({ ...options, thread: "chat-1" }))).toMatchObject({
          _tag: "InvalidOptions",
          field: "thread"
        })
        // Nothing was recorded by the refusals: the run resumes.
        expect((yield* read(options.runId)).some((entry) => entry.includes("Cancelled"))).toBe(false)
      }).pipe(Effect.provide(agentWith([blockCall])), Effect.provide(layer())))
  }))

describe("the cancel option", () => {
  it.effect("stops a run without a Checkpointer with Halted by person, recording nothing", () =>
    Effect.gen(function*() {
      const { started, toolkit } = yield* blocking()
      const stop = yield* Deferred.make<string>()
      const fiber = yield* Effect.forkChild(
        (yield* AgentLoop.AgentLoop).run({ input: "Block", toolkit, model, cancel: Deferred.await(stop) })
      )
      yield* Deferred.await(started)
      yield* Deferred.succeed(stop, "enough")
      expect(halted(yield* Fiber.await(fiber))).toMatchObject({ _tag: "Halted", source: "person", reason: "enough" })
    }).pipe(Effect.provide(agentWith([blockCall]))))

  it.effect("that is not an Effect is refused before anything runs", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip((yield* AgentLoop.AgentLoop).run({ input: "Hi", cancel: "now" as never }))
      expect(error).toMatchObject({ _tag: "InvalidOptions", field: "cancel", expected: "an Effect" })
      expect(yield* (yield* MockLanguageModel.MockLanguageModel).requests).toHaveLength(0)
    }).pipe(Effect.provide(agentWith([answer("never")]))))
})
