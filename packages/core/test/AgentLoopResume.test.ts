import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import * as AgentCheckpoint from "../src/agent/AgentCheckpoint.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Approval from "../src/Approval.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import type * as Item from "../src/Item.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { addCall, answer, model, pricing, usage } from "./agentFixtures.ts"

/**
 * A counting `add` tool (idempotent), and `slow`, which waits until released the first time (so a test can
 * interrupt a run mid-tool), idempotent or not, noting the `Tool.IdempotencyKey` of each of its runs.
 */
const tools = (slowIdempotent = false) =>
  Effect.gen(function*() {
    const ran: Array<string> = []
    const keys: Array<string | undefined> = []
    const started = yield* Deferred.make<void>()
    const add = Tool.make({
      name: "add",
      description: "Adds two numbers",
      input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
      output: Schema.Finite,
      idempotent: true,
      execute: ({ a, b }) => Effect.sync(() => (ran.push(`add ${a} ${b}`), a + b))
    })
    const slow = Tool.make({
      name: "slow",
      description: "Takes forever the first time",
      input: Schema.Struct({ id: Schema.String }),
      output: Schema.String,
      idempotent: slowIdempotent,
      execute: ({ id }) =>
        Effect.flatMap(Tool.IdempotencyKey, (key) =>
          Effect.suspend(() => {
            ran.push(`slow ${id}`)
            keys.push(key)
            return ran.filter((entry) => entry === `slow ${id}`).length === 1
              ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
              : Effect.succeed(`done ${id}`)
          }))
    })
    return { ran, keys, started, toolkit: Toolkit.make(add, slow) }
  })

/** The texts of the tool outputs a request sent the model. */
const outputs = (request: MockLanguageModel.Request) =>
  request.history.flatMap((item) => item.type === "function_call_output" ? [item.output] : [])

/** Runs `options` on a fresh mock answering `script`, against the checkpointer in context; returns the exit and the requests. */
const execute = <O>(script: ReadonlyArray<MockLanguageModel.Reply>, options: AgentLoop.Options<O>) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    const exit = yield* Effect.exit(agent.run(options))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests }
  }).pipe(
    Effect.provide(
      AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))
    )
  )

describe("AgentLoop with a Checkpointer", () => {
  it.effect("a run interrupted mid-tool resumes from its last turn: no turn asked twice, no finished call run again", () =>
    Effect.gen(function*() {
      const { keys, ran, started, toolkit } = yield* tools(true)
      const options = { input: "Work", toolkit, model, runId: "run-interrupted" }
      // Turn 1 adds; turn 2 calls add and slow together; slow never returns the first time.
      const twoCalls = MockLanguageModel.callsTurn([
        { name: "add", arguments: { a: 1, b: 2 }, callId: "call_add" },
        { name: "slow", arguments: { id: "x" }, callId: "call_slow" }
      ], { model, usage })
      const first = yield* Effect.forkChild(execute([addCall(2, 2), twoCalls, answer("never")], options))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      expect(ran).toStrictEqual(["add 2 2", "add 1 2", "slow x"])

      const { exit, requests } = yield* execute([answer("all done")], options)
      expect(exit._tag === "Success" && exit.value._tag === "Stopped" && exit.value.output).toBe("all done")
      // The resumed run asked the model once: for the third turn. The second turn's add was not run again;
      // slow, idempotent and interrupted before it ended, ran again, with the same idempotency key.
      expect(requests).toHaveLength(1)
      expect(ran).toStrictEqual(["add 2 2", "add 1 2", "slow x", "slow x"])
      expect(keys).toHaveLength(2)
      expect(keys[0]).toMatch(/^[0-9a-f]{32}$/)
      expect(keys[1]).toBe(keys[0])
      expect(outputs(requests[0]!)).toStrictEqual(["4", "3", "\"done x\""])
      if (exit._tag !== "Success") return expect.unreachable()
      expect(exit.value.termination.accounting.steps).toBe(3)
      expect(exit.value.termination.accounting.usage.total).toBe(usage.total * 3)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a call of a non-idempotent tool cut off mid-run is not run again: the model reads its outcome is unknown", () =>
    Effect.gen(function*() {
      const { keys, ran, started, toolkit } = yield* tools(false)
      const options = { input: "Work", toolkit, model, runId: "run-unknown" }
      const twoCalls = MockLanguageModel.callsTurn([
        { name: "add", arguments: { a: 1, b: 2 }, callId: "call_add" },
        { name: "slow", arguments: { id: "x" }, callId: "call_slow" }
      ], { model, usage })
      const first = yield* Effect.forkChild(execute([twoCalls, answer("never")], options))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      // Its start was recorded before it ran; add, idempotent, records no start.
      const entries = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("run-unknown"))
      const [answered, ...calls] = entries.map((entry) => JSON.parse(entry))
      expect(answered).toMatchObject({ _tag: "Answered", v: 3 })
      // The two calls run at once: their entries come in either order.
      expect(calls).toHaveLength(2)
      expect(calls).toEqual(expect.arrayContaining([
        expect.objectContaining({ _tag: "ToolStarted", step: 1, index: 1, v: 3 }),
        expect.objectContaining({ _tag: "ToolDone", index: 0 })
      ]))

      const { exit, requests } = yield* execute([answer("I will check the order first")], options)
      expect(exit._tag === "Success" && exit.value._tag === "Stopped" && exit.value.output).toBe(
        "I will check the order first"
      )
      // slow ran once, in the first execution; the model was told its outcome is unknown.
      expect(ran).toStrictEqual(["add 1 2", "slow x"])
      expect(keys).toHaveLength(1)
      expect(keys[0]).toMatch(/^[0-9a-f]{32}$/)
      expect(requests).toHaveLength(1)
      const unknown = Toolkit.outcomeUnknown(twoCalls.items[1] as Item.FunctionCall)
      expect(outputs(requests[0]!)).toStrictEqual(["3", unknown.output.output])
      expect(JSON.parse(unknown.output.output).error).toContain("whether it took effect is unknown")
      if (exit._tag !== "Success") return expect.unreachable()
      expect(exit.value.history.find((item) => item.type === "function_call_output" && item.call_id === "call_slow"))
        .toMatchObject({ status: "incomplete" })

      // Executed again, the finished run is what it was: the unknown outcome is part of its history.
      const again = yield* execute([], options)
      expect(again.exit).toStrictEqual(exit)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a run recorded before ToolStarted existed resumes as before: a call cut off runs again", () =>
    Effect.gen(function*() {
      const { ran, started, toolkit } = yield* tools(false)
      const options = { input: "Work", toolkit, model, runId: "run-old" }
      const slowCall = MockLanguageModel.callsTurn([{ name: "slow", arguments: { id: "z" }, callId: "call_slow" }], {
        model,
        usage
      })
      const first = yield* Effect.forkChild(execute([slowCall], options))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      // The same log as a version of agentloop before ToolStarted wrote it: version 1, no ToolStarted.
      const log = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("run-old"))
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        const old = yield* store.open("run-old-v1", yield* AgentCheckpoint.fingerprint(options))
        yield* old.append(
          log.map((entry) => JSON.parse(entry)).filter((entry) => entry._tag !== "ToolStarted").map((entry) =>
            JSON.stringify({ ...entry, v: 1 })
          )
        )
      }))
      const { exit, requests } = yield* execute([answer("done")], { ...options, runId: "run-old-v1" })
      expect(exit._tag === "Success" && exit.value._tag === "Stopped" && exit.value.output).toBe("done")
      expect(ran).toStrictEqual(["slow z", "slow z"])
      expect(outputs(requests[0]!)).toStrictEqual(["\"done z\""])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a call whose start cannot be recorded does not run: the run ends with CheckpointFailed", () =>
    Effect.gen(function*() {
      const { ran, toolkit } = yield* tools(false)
      const appended: Array<string> = []
      const noStarts = Layer.succeed(Checkpointer.Checkpointer, {
        open: (id) =>
          Effect.succeed({
            entries: [],
            append: (entries: ReadonlyArray<string>) =>
              entries.some((entry) => entry.includes("ToolStarted"))
                ? Effect.fail(new Checkpointer.CheckpointError({ operation: "append", id, message: "disk full" }))
                : Effect.sync(() => void appended.push(...entries.map((entry) => JSON.parse(entry)._tag)))
          }),
        read: () => Effect.succeed([]),
        clear: () => Effect.void,
        prune: () => Effect.succeed({ runs: [] })
      })
      const slowCall = MockLanguageModel.callsTurn([{ name: "slow", arguments: { id: "w" }, callId: "call_slow" }], {
        model,
        usage
      })
      const { exit } = yield* execute([slowCall, answer("never")], {
        input: "Work",
        toolkit,
        model,
        runId: "run-nostart"
      })
        .pipe(Effect.provide(noStarts))
      expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({
        error: { _tag: "CheckpointFailed", message: "the run's checkpoint failed: disk full" }
      })
      expect(ran).toStrictEqual([])
      expect(appended).toStrictEqual(["Answered"])
    }))

  it.effect("a call cut off while it waits for its approval has not started: it is asked again and runs", () =>
    Effect.gen(function*() {
      const ran: Array<number> = []
      const asked = yield* Deferred.make<void>()
      const charge = Tool.make({
        name: "charge",
        description: "Charges the card",
        input: Schema.Struct({ cents: Schema.Int }),
        output: Schema.String,
        needsApproval: true,
        execute: ({ cents }) => Effect.sync(() => (ran.push(cents), "charged"))
      })
      const options = { input: "Charge", toolkit: Toolkit.make(charge), model, runId: "run-approval" }
      const call = MockLanguageModel.callsTurn([{ name: "charge", arguments: { cents: 5 }, callId: "call_charge" }], {
        model,
        usage
      })
      // The first approver never answers; the second approves.
      const waiting = Approval.Approval.of({
        decide: () => Effect.andThen(Deferred.succeed(asked, undefined), Effect.never)
      })
      const first = yield* Effect.forkChild(
        execute([call], options).pipe(Effect.provideService(Approval.Approval, waiting))
      )
      yield* Deferred.await(asked)
      yield* Fiber.interrupt(first)
      const entries = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("run-approval"))
      expect(entries.map((entry) => JSON.parse(entry)._tag)).toStrictEqual(["Answered"])

      const { exit, requests } = yield* execute([answer("Charged")], options).pipe(Effect.provide(Approval.allowAll))
      expect(exit._tag === "Success" && exit.value._tag === "Stopped" && exit.value.output).toBe("Charged")
      expect(ran).toStrictEqual([5])
      expect(outputs(requests[0]!)).toStrictEqual(["\"charged\""])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a finished run executed again returns its result at once, asking nothing", () =>
    Effect.gen(function*() {
      const options = { input: "Hi", model, runId: "run-finished" }
      const first = yield* execute([answer("hello")], options)
      const again = yield* execute([], options)
      expect(again.requests).toHaveLength(0)
      expect(again.exit).toStrictEqual(first.exit)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a run that hit its turn limit continues from its last turn when run again with a higher one", () =>
    Effect.gen(function*() {
      const { toolkit } = yield* tools()
      const options = { input: "Add", toolkit, model, runId: "run-limited" }
      const limited = yield* execute([addCall(1, 1), addCall(1, 2)], { ...options, limits: { maxTurns: 2 } })
      expect(limited.exit._tag === "Failure" && limited.exit.cause.reasons[0]).toMatchObject({
        error: { _tag: "MaxTurns" }
      })
      const { exit, requests } = yield* execute([answer("2 and 3")], { ...options, limits: { maxTurns: 5 } })
      expect(exit._tag === "Success" && exit.value.termination.accounting.steps).toBe(3)
      expect(requests).toHaveLength(1)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("each turn appends what changed, not the history again", () =>
    Effect.gen(function*() {
      const { toolkit } = yield* tools()
      const long = "a long question ".repeat(200)
      yield* execute([addCall(1, 1), addCall(1, 2), addCall(1, 3), answer("done")], {
        input: long,
        toolkit,
        model,
        runId: "run-sizes"
      })
      const entries = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("run-sizes"))
      expect(entries.map((entry) => JSON.parse(entry)._tag)).toStrictEqual([
        "Answered",
        "ToolDone",
        "Decided",
        "Answered",
        "ToolDone",
        "Decided",
        "Answered",
        "ToolDone",
        "Decided",
        "Answered",
        "Finished"
      ])
      // add is idempotent: its calls record no start, only their end.
      // The input comes with the options when the run is executed again, so no turn's entry repeats it: each
      // is as small as its turn. (The Finished entry holds the result, whole history included, once.)
      for (const entry of entries.slice(0, -1)) {
        expect(entry).not.toContain("a long question")
        expect(entry.length).toBeLessThan(1000)
      }
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a checkpoint that cannot be written ends the run with CheckpointFailed, before anything more runs", () =>
    Effect.gen(function*() {
      const { ran, toolkit } = yield* tools()
      const full = Layer.succeed(Checkpointer.Checkpointer, {
        open: (id) =>
          Effect.succeed({
            entries: [],
            append: () =>
              Effect.fail(new Checkpointer.CheckpointError({ operation: "append", id, message: "disk full" }))
          }),
        read: () => Effect.succeed([]),
        clear: () => Effect.void,
        prune: () => Effect.succeed({ runs: [] })
      })
      const { exit } = yield* execute([addCall(1, 1), answer("never")], {
        input: "Add",
        toolkit,
        model,
        runId: "run-full"
      }).pipe(
        Effect.provide(full)
      )
      expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({
        error: { _tag: "CheckpointFailed", message: "the run's checkpoint failed: disk full" }
      })
      expect(ran).toStrictEqual([])
    }))

  it.effect("a checkpoint that does not decode ends the run with CheckpointFailed instead of guessing", () =>
    Effect.gen(function*() {
      const corrupt = Layer.succeed(Checkpointer.Checkpointer, {
        open: () => Effect.succeed({ entries: ["{\"_tag\":\"Answered\",\"step\":-1}"], append: () => Effect.void }),
        read: () => Effect.succeed([]),
        clear: () => Effect.void,
        prune: () => Effect.succeed({ runs: [] })
      })
      const { exit, requests } = yield* execute([answer("never")], { input: "Hi", model, runId: "run-corrupt" }).pipe(
        Effect.provide(corrupt)
      )
      expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({ error: { _tag: "CheckpointFailed" } })
      expect(requests).toHaveLength(0)
    }))

  it.effect("without a runId nothing is written: the run cannot be resumed, so it is not recorded", () =>
    Effect.gen(function*() {
      const written: Array<string> = []
      const spy = Layer.succeed(Checkpointer.Checkpointer, {
        open: (id) => Effect.succeed({ entries: [], append: () => Effect.sync(() => written.push(id)) }),
        read: () => Effect.succeed([]),
        clear: () => Effect.void,
        prune: () => Effect.succeed({ runs: [] })
      })
      yield* execute([answer("hi")], { input: "Hi", model }).pipe(Effect.provide(spy))
      expect(written).toStrictEqual([])
    }))

  it.effect("a second executor of a run in progress ends at once with RunInProgress, asking nothing", () =>
    Effect.gen(function*() {
      const { ran, started, toolkit } = yield* tools(true)
      const options = { input: "Work", toolkit, model, runId: "run-twice" }
      const slow = MockLanguageModel.callsTurn([{ name: "slow", arguments: { id: "y" }, callId: "call_slow" }], {
        model,
        usage
      })
      const first = yield* Effect.forkChild(execute([slow, answer("first")], options))
      yield* Deferred.await(started)
      const second = yield* execute([answer("second")], options)
      expect(second.requests).toHaveLength(0)
      expect(second.exit._tag === "Failure" && second.exit.cause.reasons[0]).toMatchObject({
        error: { _tag: "CheckpointFailed", cause: { _tag: "RunInProgress", id: "run-twice" } }
      })
      yield* Fiber.interrupt(first)
      // The lease went with the first executor: the run goes on from its tool call.
      const third = yield* execute([answer("third")], options)
      expect(third.exit._tag === "Success" && third.exit.value._tag === "Stopped" && third.exit.value.output).toBe(
        "third"
      )
      expect(ran).toStrictEqual(["slow y", "slow y"])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a run executed again with another input, tools or output fails with CheckpointMismatch, asking nothing", () =>
    Effect.gen(function*() {
      const { toolkit } = yield* tools()
      const options = { input: "Question A", toolkit, model, runId: "run-fingerprinted" }
      yield* execute([addCall(1, 1), answer("A")], options)
      for (
        const [changed, field] of [
          [{ ...options, input: "Question B" }, "input"],
          [{ ...options, instructions: "Be terse." }, "instructions"],
          [{ ...options, toolkit: Toolkit.make() }, "tools"],
          [{ ...options, output: Schema.Struct({ answer: Schema.String }) }, "output"]
        ] as const
      ) {
        const { exit, requests } = yield* execute([answer("never")], changed)
        expect(requests).toHaveLength(0)
        expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({
          error: { _tag: "CheckpointFailed", cause: { _tag: "CheckpointMismatch", differences: [{ field }] } }
        })
      }
      // The same run again returns its result; a higher limit does not change the fingerprint.
      const again = yield* execute([], { ...options, limits: { maxTurns: 99 } })
      expect(again.exit._tag === "Success" && again.exit.value._tag === "Stopped" && again.exit.value.output).toBe("A")
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("an invalid run id ends the run with InvalidOptions naming runId, before anything runs", () =>
    Effect.gen(function*() {
      for (const runId of ["", "x".repeat(600), "bad\u0000id"]) {
        const { exit, requests } = yield* execute([answer("never")], { input: "Hi", model, runId })
        expect(requests).toHaveLength(0)
        expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({
          error: { _tag: "InvalidOptions", field: "runId" }
        })
      }
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it("HistoryChange keeps the common prefix by identity and carries the rest", () => {
    const [a, b, c, d] = [1, 2, 3, 4].map((n) => ({ ...answer(String(n)).items[0]! }))
    expect(AgentCheckpoint.change([a!, b!], [a!, b!, c!])).toStrictEqual({ keep: 2, append: [c] })
    expect(AgentCheckpoint.change([a!, b!, c!], [a!, c!, d!])).toStrictEqual({ keep: 1, append: [c, d] })
    expect(AgentCheckpoint.apply([a!, b!, c!], { keep: 1, append: [c!, d!] })).toStrictEqual([a, c, d])
  })
})
