/**
 * The crash-test kit on a real agent: a shop assistant whose run is killed
 * after each step it recorded and resumed, in this process over the memory
 * store (every kill point), as an `AgentLoop` run and as step programs, and
 * over the file store (a few). Then apps the kit must find broken: an effect
 * made outside the checkpointed run, an input that changes from one
 * execution to the next, and a run that records nothing.
 */
import * as AgentLoop from "@agentloop/core/agent/AgentLoop"
import * as Checkpointer from "@agentloop/core/Checkpointer"
import type * as Item from "@agentloop/core/Item"
import * as Step from "@agentloop/core/step/Step"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as CrashJournal from "../src/CrashJournal.ts"
import * as CrashReport from "../src/CrashReport.ts"
import * as CrashTest from "../src/CrashTest.ts"
import * as MockLanguageModel from "../src/MockLanguageModel.ts"
import { order, orderSteps, respond, script } from "./crash/shop.ts"

const failure = <A>(report: CrashReport.Report<A>) =>
  Effect.map(Effect.exit(CrashReport.verify(report)), (exit) => {
    expect(Exit.isFailure(exit)).toBe(true)
    return Exit.isFailure(exit) ? String(exit.cause) : ""
  })

describe("CrashTest.everyCheckpoint", () => {
  it.effect("kills the shop's run after each of its appends, resumes it, and finds every invariant kept", () =>
    Effect.gen(function*() {
      const report = yield* CrashTest.everyCheckpoint({
        program: order("Tea and cake, please", "order-1"),
        layer: AgentLoop.layer,
        model: script
      })
      yield* CrashReport.verify(report)

      const { uninterrupted } = report
      expect(uninterrupted.result).toStrictEqual({ _tag: "Success", value: "Charged 7.50 for tea and cake." })
      // charge, not idempotent, records its start before it runs; lookup, idempotent, only its end.
      expect(uninterrupted.observed.appends).toStrictEqual([
        "Answered",
        "ToolDone",
        "ToolDone",
        "Decided",
        "Answered",
        "ToolStarted",
        "ToolDone",
        "Decided",
        "Answered",
        "Finished"
      ])
      expect(uninterrupted.observed.turns).toHaveLength(3)
      expect(uninterrupted.observed.effects.map((effect) => [effect.name, effect.key, effect.idempotent]))
        .toStrictEqual([
          ["lookup", `{"item":"tea"}`, true],
          ["lookup", `{"item":"cake"}`, true],
          ["charge", `{"cents":750}`, false]
        ])

      // One kill point per append, each killed there and resumed to the same answer.
      expect(report.killPoints.map((point) => [point.after, point.entry])).toStrictEqual(
        uninterrupted.observed.appends.map((entry, index) => [index + 1, entry])
      )
      for (const point of report.killPoints) {
        expect(point.problems, `after ${point.after}`).toStrictEqual([])
        expect(point.result).toStrictEqual(uninterrupted.result)
        // Over both halves: three turns asked, each step recorded once, and the card charged once, except
        // when the run was killed once charge's start was recorded: then it was charged never, and the model
        // was told that the charge's outcome is unknown.
        expect(point.observed.turns, `after ${point.after}`).toHaveLength(3)
        const lost = point.entry === "ToolStarted"
        expect(point.observed.effects.filter((effect) => effect.name === "charge")).toHaveLength(lost ? 0 : 1)
        expect(point.observed.turns[2]!.at(-1)).toMatchObject(
          lost
            ? { type: "function_call_output", call_id: "call_charge", status: "incomplete" }
            : { type: "function_call_output", call_id: "call_charge", status: "completed" }
        )
        expect(point.observed.appends).toStrictEqual(
          lost
            ? uninterrupted.observed.appends.filter((_, index) => index !== 6)
            : uninterrupted.observed.appends
        )
      }
    }))

  it.effect("kills the shop's step program after each of its appends, resumes it, and finds every invariant kept", () =>
    Effect.gen(function*() {
      const report = yield* CrashTest.everyCheckpoint({
        program: orderSteps("Tea and cake, please", "order-steps"),
        layer: Layer.empty,
        model: script
      })
      yield* CrashReport.verify(report)
      expect(report.uninterrupted.result).toStrictEqual({
        _tag: "Success",
        value: "emailed: Charged 7.50 for tea and cake."
      })
      // The ledger's entries: each turn and call, each completed step (turn, loop, email...), the program's end.
      expect(report.uninterrupted.observed.appends).toStrictEqual([
        "Answered",
        "ToolDone",
        "ToolDone",
        "Completed",
        "Answered",
        "ToolStarted",
        "ToolDone",
        "Completed",
        "Answered",
        "Completed",
        "Completed",
        "Completed",
        "Completed",
        "Finished"
      ])
      expect(report.killPoints).toHaveLength(14)
      for (const point of report.killPoints) {
        expect(point.observed.turns, `after ${point.after}`).toHaveLength(3)
        // Killed once charge's start was recorded, the resumed program does not charge: its outcome is unknown.
        expect(point.observed.effects.filter((effect) => effect.name !== "lookup").map((effect) => effect.name))
          .toStrictEqual(point.entry === "ToolStarted" ? ["email"] : ["charge", "email"])
      }
    }))

  it.effect("kills a step program whose paths ask the model at once, and finds every invariant kept", () =>
    Effect.gen(function*() {
      const path = (name: string) => Step.llm({ id: name, prompt: () => `Say ${name}` })
      const program = Step.fork({
        id: "paths",
        mode: "all",
        paths: () => [path("tea"), path("cake"), path("scone")],
        merge: (results: ReadonlyArray<string>) => results.join(", ")
      })
      const report = yield* CrashTest.everyCheckpoint({
        program: Step.execute(program, "Name three things", { id: "paths-1" }),
        layer: Layer.empty,
        // The paths' requests come in no fixed order: each is answered from its prompt.
        model: ({ history }) => {
          const last = history.at(-1)
          const text = last?.type === "message"
            ? last.content.map((part) => "text" in part ? part.text : "").join("")
            : ""
          return MockLanguageModel.textTurn(text.replace("Say ", ""))
        }
      })
      yield* CrashReport.verify(report)
      expect(report.uninterrupted.result).toStrictEqual({ _tag: "Success", value: "tea, cake, scone" })
      expect(report.killPoints).toHaveLength(8)
      for (const point of report.killPoints) expect(point.observed.turns).toHaveLength(3)
    }))

  it.live("takes the app's store: the file store, shared by every kill point", () =>
    Effect.gen(function*() {
      const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-crash-kit-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
      const report = yield* CrashTest.everyCheckpoint({
        program: order("Tea and cake, please", "order-1"),
        layer: AgentLoop.layer,
        model: script,
        checkpointer: Checkpointer.layerFileSystem(directory).pipe(
          Layer.provide(NodeFileSystem.layer),
          Layer.provide(NodePath.layer)
        ),
        at: [4, 6]
      })
      yield* CrashReport.verify(report)
      // Each run has a log of its own in the folder: the uninterrupted one and each kill point's.
      expect(Fs.readdirSync(directory)).toHaveLength(3)
    }).pipe(Effect.scoped))

  it.effect("`at` picks the kill points", () =>
    Effect.gen(function*() {
      const report = yield* CrashTest.everyCheckpoint({
        program: order("Tea and cake, please", "order-1"),
        layer: AgentLoop.layer,
        model: script,
        at: [5, 7]
      })
      expect(report.killPoints.map((point) => [point.after, point.entry, point.problems])).toStrictEqual([
        [5, "Answered", []],
        [7, "ToolDone", []]
      ])
    }))
})

describe("CrashTest finds a broken app", () => {
  it.effect("an effect made outside the checkpointed run is made again on every resume", () =>
    Effect.gen(function*() {
      const report = yield* CrashTest.everyCheckpoint({
        // The app reserves the stock before its run: nothing records it, so every execution reserves again.
        program: Effect.andThen(
          CrashJournal.record("reserve", { key: "tea, cake" }),
          order("Tea and cake, please", "order-1")
        ),
        layer: AgentLoop.layer,
        model: script
      })
      expect(report.killPoints).toHaveLength(10)
      for (const point of report.killPoints) {
        expect(point.problems).toStrictEqual([
          `"reserve" tea, cake, which is not idempotent, ran 2 times (the uninterrupted run: once)`
        ])
      }
      const message = yield* failure(report)
      expect(message).toContain("the run broke its invariants at 10 of 10 kill points:")
      expect(message).toContain("killed after append 7 (ToolDone), then resumed:")
    }))

  it.effect("a run whose input changes from one execution to the next cannot resume", () =>
    Effect.gen(function*() {
      let executions = 0
      const report = yield* CrashTest.everyCheckpoint({
        program: Effect.suspend(() => order(`Tea and cake, order ${++executions}`, "order-1")),
        layer: AgentLoop.layer,
        model: script,
        at: [2]
      })
      const [point] = report.killPoints
      expect(point?.result._tag).toBe("Failure")
      expect(point?.problems).toHaveLength(1)
      expect(point?.problems[0]).toMatch(
        /^the resumed run failed: CheckpointFailed: .* was recorded with another input/
      )
      expect(yield* failure(report)).toContain("killed after append 2 (ToolDone), then resumed:")
    }))

  it.effect("a model turn asked again when the resumed run does not find the one before", () =>
    Effect.gen(function*() {
      // Each execution is a new run id: the resumed run starts over, asking the model and charging again.
      let executions = 0
      const report = yield* CrashTest.everyCheckpoint({
        program: Effect.suspend(() => order("Tea and cake, please", `order-${++executions}`)),
        layer: AgentLoop.layer,
        // The model answers from the history, so a request asked again gets the same turn.
        model: respond,
        at: [7]
      })
      const [point] = report.killPoints
      expect(point?.problems).toStrictEqual([
        `the model was asked the request after the user message "Tea and cake, please" 2 times (the uninterrupted run asked it once)`,
        `the model was asked the request after the output of call "call_cake" 2 times (the uninterrupted run asked it once)`,
        `"charge" {"cents":750}, which is not idempotent, ran 2 times (the uninterrupted run: once)`
      ])
    }))

  it.effect("a run that records nothing has nowhere to be killed", () =>
    Effect.gen(function*() {
      const report = yield* CrashTest.everyCheckpoint({
        program: order("Tea and cake, please", undefined),
        layer: AgentLoop.layer,
        model: script
      })
      expect(report.killPoints).toStrictEqual([])
      expect(yield* failure(report)).toContain("the uninterrupted run recorded nothing")
    }))
})

describe("CrashReport.problems", () => {
  const message = (text: string): Item.Item => ({
    type: "message",
    id: "msg",
    status: "completed",
    role: "user",
    content: [{ type: "input_text", text }]
  })
  const effect = (key: string) => ({ name: "charge", key, idempotent: false })
  const uninterrupted: CrashReport.Uninterrupted<string> = {
    result: { _tag: "Success", value: "done" },
    observed: { appends: ["Answered", "Finished"], turns: [[message("at 10:00")]], effects: [effect("at 10:00")] }
  }

  it("a request or an effect that differs from the uninterrupted run's is no repeat; more of them in all is", () => {
    const differs = {
      after: 1,
      killed: true,
      result: { _tag: "Success" as const, value: "done" },
      observed: { appends: ["Answered", "Finished"], turns: [[message("at 10:01")]], effects: [effect("at 10:01")] }
    }
    expect(CrashReport.problems(uninterrupted, differs)).toStrictEqual([])
    const more = {
      ...differs,
      observed: {
        appends: ["Answered", "Finished"],
        turns: [[message("at 10:01")], [message("at 10:02")]],
        effects: [effect("at 10:01"), effect("at 10:02")]
      }
    }
    expect(CrashReport.problems(uninterrupted, more)).toStrictEqual([
      "the model was asked 2 turns (the uninterrupted run asked 1)",
      `"charge", which is not idempotent, ran 2 times in all (the uninterrupted run: once)`
    ])
  })

  it("a different result, by the equivalence given", () => {
    const other = {
      after: 1,
      killed: true,
      result: { _tag: "Success" as const, value: "DONE" },
      observed: uninterrupted.observed
    }
    expect(CrashReport.problems(uninterrupted, other)).toStrictEqual([
      `the resumed run returned 'DONE'; the uninterrupted run 'done'`
    ])
    expect(CrashReport.problems(uninterrupted, other, (a, b) => a.toLowerCase() === b.toLowerCase()))
      .toStrictEqual([])
  })
})
