import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Item from "../src/Item.ts"
import type * as ExecutionContext from "../src/step/ExecutionContext.ts"
import * as Step from "../src/step/Step.ts"
import * as StepHistory from "../src/step/StepHistory.ts"
import * as Tool from "../src/Tool.ts"
import * as Until from "../src/Until.ts"
import { answer, model, pricing } from "./agentFixtures.ts"
import { eachStore } from "./checkpointFixtures.ts"

/** A model turn, then two steps on its answer; `ran` says which steps ran and the model how often it was asked. */
const pipeline = () => {
  const ran: Array<string> = []
  const program = Step.loop({
    id: "pipeline",
    steps: [
      Step.llm({ id: "ask", model }),
      Step.run({ id: "shout", execute: (text: string) => (ran.push("shout"), text.toUpperCase()) }),
      Step.run({ id: "mark", execute: (text: string) => (ran.push("mark"), `${text}!`) })
    ],
    until: Until.maxSteps(1)
  })
  return { program, ran }
}

const fresh = (name: string) => `${name}-${Math.random().toString(36).slice(2)}`

/** Executes `program` with `id` on a mock answering `script`: its output and the requests the mock saw. */
const execute = (
  program: ReturnType<typeof pipeline>["program"],
  id: string,
  script: ReadonlyArray<MockLanguageModel.Reply>
) =>
  Effect.gen(function*() {
    const output = yield* Step.execute(program, "Say hi", { id })
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { output, requests }
  }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing)))

const read = (id: string) => Effect.flatMap(Checkpointer.Checkpointer, (checkpointer) => checkpointer.read(id))

const suite = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("lists an execution's checkpoints and reads its ledger at any of them", () =>
      Effect.gen(function*() {
        const { program } = pipeline()
        const id = fresh("listed")
        yield* execute(program, id, [answer("hi")])
        const checkpoints = yield* StepHistory.checkpoints(id)
        expect(checkpoints.map(({ kind, stepId }) => [kind, stepId])).toStrictEqual([
          ["turn", "ask"],
          ["step", "ask"],
          ["step", "shout"],
          ["step", "mark"],
          ["step", "pipeline"],
          ["finished", undefined]
        ])
        expect(checkpoints.map((checkpoint) => checkpoint.output)).toStrictEqual([
          undefined,
          "hi",
          "HI",
          "HI!",
          "HI!",
          "HI!"
        ])
        expect(checkpoints.every((checkpoint) => checkpoint.execution === id && typeof checkpoint.time === "number"))
          .toBe(true)
        expect(checkpoints[0]!.cost).toBeCloseTo(0.00004)
        expect(checkpoints[0]!.items).toMatchObject([{ type: "message", role: "assistant" }])
        expect(checkpoints.at(-1)!.tokens.total).toBe(30)

        const afterShout = yield* StepHistory.stateAt(id, 2)
        expect(afterShout.completed.map((step) => [step.key, step.output])).toStrictEqual([
          ["/pipeline#0[0]/ask#0", "hi"],
          ["/pipeline#0[0]/shout#0", "HI"]
        ])
        expect(afterShout.contexts.get(id)?.items.map((item) => item.type)).toStrictEqual(["message", "message"])
        expect(afterShout.output).toBeUndefined()
        expect((yield* StepHistory.stateAt(id, -1)).output).toBe("HI!")
      }).pipe(Effect.provide(layer())))

    it.effect("a fork goes on from its checkpoint, running only what was not recorded there; the original is untouched", () =>
      Effect.gen(function*() {
        const source = pipeline()
        const from = fresh("source")
        yield* execute(source.program, from, [answer("hi")])
        const before = yield* read(from)

        const afterShout = pipeline()
        const id = fresh("fork")
        yield* StepHistory.fork(afterShout.program, "Say hi", { id, from, at: 2 })
        const forked = yield* execute(afterShout.program, id, [])
        expect(forked.output).toBe("HI!")
        expect(forked.requests).toHaveLength(0)
        expect(afterShout.ran).toStrictEqual(["mark"])

        // From the model's answer: the turn is not asked again, the steps after it run.
        const afterTurn = pipeline()
        const second = fresh("fork")
        yield* StepHistory.fork(afterTurn.program, "Say hi", { id: second, from, at: 0 })
        expect((yield* execute(afterTurn.program, second, [])).requests).toHaveLength(0)
        expect(afterTurn.ran).toStrictEqual(["shout", "mark"])

        expect(yield* read(from)).toStrictEqual(before)
        // The fork's first checkpoints are the source's, recorded under the fork's id.
        const kept = (checkpoints: ReadonlyArray<StepHistory.Checkpoint>) =>
          checkpoints.slice(0, 3).map(({ execution: _, ...rest }) => rest)
        expect(kept(yield* StepHistory.checkpoints(id))).toStrictEqual(kept(yield* StepHistory.checkpoints(from)))
        expect((yield* StepHistory.checkpoints(id)).every((checkpoint) => checkpoint.execution === id)).toBe(true)
      }).pipe(Effect.provide(layer())))

    it.effect("a fork renames its source's sub-agents after itself: their recorded steps are not run again", () =>
      Effect.gen(function*() {
        const ran: Array<string> = []
        const program = Step.loop({
          id: "main",
          steps: [
            Step.spawn({
              id: "helper",
              child: Step.run({ id: "inner", execute: (n: number) => (ran.push("inner"), n + 1) })
            }),
            Step.run({ id: "after", execute: (n: number) => (ran.push("after"), n * 10) })
          ],
          until: Until.maxSteps(1)
        })
        const from = fresh("spawner")
        expect(yield* Step.execute(program, 1, { id: from })).toBe(20)
        const checkpoints = yield* StepHistory.checkpoints(from)
        const inner = checkpoints.findIndex((checkpoint) => checkpoint.stepId === "inner")
        expect(checkpoints[inner]!.execution).toBe(`${from}/helper`)

        const id = fresh("fork")
        yield* StepHistory.fork(program, 1, { id, from, at: inner })
        ran.length = 0
        expect(yield* Step.execute(program, 1, { id })).toBe(20)
        expect(ran).toStrictEqual(["after"])
        expect((yield* StepHistory.checkpoints(id))[inner]!.execution).toBe(`${id}/helper`)
      }).pipe(Effect.provide(layer())))

    it.effect("a fork with its context edited: the steps after the checkpoint see the edited state and item log", () =>
      Effect.gen(function*() {
        const seen: Array<unknown> = []
        const program = Step.loop({
          id: "counting",
          steps: [
            Step.run({
              id: "count",
              execute: (text: string, ctx: ExecutionContext.ExecutionContext<{ readonly count: number }>) => (
                ctx.updateState((state) => ({ count: state.count + 1 })), text
              )
            }),
            Step.run({
              id: "inspect",
              execute: (text: string, ctx: ExecutionContext.ExecutionContext<{ readonly count: number }>) => (
                seen.push({ count: ctx.state.count, items: ctx.itemLog.items.length }), text
              )
            })
          ],
          until: Until.maxSteps(1)
        })
        const from = fresh("counted")
        yield* Step.execute(program, "Hi", { id: from, state: { count: 0 } })
        expect(seen).toStrictEqual([{ count: 1, items: 1 }])

        const id = fresh("fork")
        yield* StepHistory.fork(program, "Hi", {
          id,
          from,
          at: 0,
          edit: (context) => ({
            ...context,
            state: { count: 41 },
            items: [...context.items, Item.userMessage("an added message")]
          })
        })
        seen.length = 0
        yield* Step.execute(program, "Hi", { id, state: { count: 0 } })
        expect(seen).toStrictEqual([{ count: 41, items: 2 }])
        expect((yield* StepHistory.stateAt(id, 0)).contexts.get(id)?.state).toStrictEqual({ count: 41 })
        // The source is as it was.
        expect((yield* StepHistory.stateAt(from, 0)).contexts.get(from)?.state).toStrictEqual({ count: 1 })

        // Before any step recorded a context there is nothing to edit.
        const { program: pipelined } = pipeline()
        const asked = fresh("asked")
        yield* execute(pipelined, asked, [answer("hi")])
        const error = yield* Effect.flip(
          StepHistory.fork(pipelined, "Say hi", { id: fresh("fork"), from: asked, at: 0, edit: (context) => context })
        )
        expect(error).toMatchObject({ _tag: "UneditableCheckpoint", id: asked, index: 0 })
      }).pipe(Effect.provide(layer())))

    it.effect("bad input fails typed: unknown execution, checkpoint out of range, fork onto a recorded id, another input", () =>
      Effect.gen(function*() {
        const { program } = pipeline()
        const from = fresh("bad")
        yield* execute(program, from, [answer("hi")])
        const unknown = fresh("never-recorded")
        expect(yield* Effect.flip(StepHistory.checkpoints(unknown))).toMatchObject({ _tag: "UnknownRun", id: unknown })
        expect(yield* Effect.flip(StepHistory.stateAt(from, 6))).toMatchObject({
          _tag: "CheckpointNotFound",
          index: 6,
          count: 6
        })
        const id = fresh("target")
        expect(yield* Effect.flip(StepHistory.fork(program, "Say hi", { id, from, at: -7 }))).toMatchObject({
          _tag: "CheckpointNotFound"
        })
        expect(yield* Effect.flip(StepHistory.fork(program, "Say hi", { id, from: unknown, at: 0 }))).toMatchObject({
          _tag: "UnknownRun"
        })
        expect(yield* Effect.flip(StepHistory.fork(program, "Say bye", { id, from, at: 0 }))).toMatchObject({
          _tag: "CheckpointMismatch",
          id: from
        })
        expect(yield* read(id)).toStrictEqual([])
        const other = fresh("other")
        yield* execute(program, other, [answer("hello")])
        expect(yield* Effect.flip(StepHistory.fork(program, "Say hi", { id: other, from, at: 0 }))).toMatchObject({
          _tag: "RunExists",
          id: other
        })
      }).pipe(Effect.provide(layer())))
  })

describe("StepHistory", () => {
  eachStore("step-history", suite)

  it.effect("a tool step whose tool is not idempotent checkpoints its call's start before the step", () =>
    Effect.gen(function*() {
      const charge = Tool.make({
        name: "charge",
        description: "Charges an amount",
        input: Schema.Struct({ amount: Schema.Finite }),
        output: Schema.String,
        execute: ({ amount }) => Effect.succeed(`charged ${amount}`)
      })
      const id = fresh("charged")
      yield* Step.execute(Step.tool({ id: "charge", tool: charge }), { amount: 5 }, { id })
      const checkpoints = yield* StepHistory.checkpoints(id)
      expect(checkpoints.map(({ kind, stepId }) => [kind, stepId])).toStrictEqual([
        ["started", "charge"],
        ["step", "charge"],
        ["finished", undefined]
      ])
      expect(checkpoints[0]!.items).toStrictEqual([])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a program that ran on a thread is not forked on its own ledger: refused naming the thread, nothing recorded", () =>
    Effect.gen(function*() {
      const { program } = pipeline()
      const thread = fresh("chat")
      const from = fresh("on-thread")
      yield* Step.execute(program, "Say hi", { id: from, thread }).pipe(
        Effect.provide(Layer.mergeAll(MockLanguageModel.layer([answer("hi")]), pricing))
      )
      const id = fresh("fork")
      const refused = yield* Effect.flip(StepHistory.fork(program, "Say hi", { id, from, at: 0 }))
      expect(refused).toMatchObject({ _tag: "InvalidOptions", field: "thread" })
      expect(refused.message).toContain("Thread.fork")
      expect(yield* read(id)).toStrictEqual([])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))
})
