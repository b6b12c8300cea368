import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import type { Accounting } from "../src/Accounting.ts"
import * as AgentTurn from "../src/agent/AgentTurn.ts"
import * as AiError from "../src/AiError.ts"
import * as Compactor from "../src/Compactor.ts"
import * as Item from "../src/Item.ts"
import { LanguageModel } from "../src/LanguageModel.ts"
import * as Loop from "../src/Loop.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import type * as TurnDelta from "../src/TurnDelta.ts"
import { addCall, answer, model, pricing } from "./agentFixtures.ts"
import { add } from "./fixtures.ts"

const books = (completed: AgentTurn.Completed): Accounting => ({
  usage: completed.turn.usage,
  cost: completed.cost,
  elapsedMs: 0,
  steps: 1,
  lastItems: completed.history
})

/** Runs one turn on its own, as an `llm` step would: its events, then its outcome. */
const oneTurn = <E>(request: Omit<AgentTurn.Request<E, never>, "step" | "options">) =>
  Loop.loop(
    0,
    () =>
      AgentTurn.stream({ step: 1, options: { model }, ...request }, (outcome) =>
        Loop.stopAfter(Stream.make({ _tag: "Outcome" as const, outcome })))
  )

const environment = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
  Layer.mergeAll(MockLanguageModel.layer(script), pricing)

describe("AgentTurn", () => {
  it.effect("streams a turn and its tools outside any agent loop, and hands over the outcome", () =>
    Effect.gen(function*() {
      const accounted: Array<AgentTurn.Completed> = []
      const history = [Item.userMessage("Add 2 and 3")]
      const events = yield* Stream.runCollect(oneTurn({
        history,
        toolkit: Toolkit.make(add),
        account: (completed) => Effect.sync(() => (accounted.push(completed), books(completed)))
      }))
      expect(events.map((event) => event._tag).filter((tag, i, all) => tag !== "Delta" || all[i - 1] !== "Delta"))
        .toStrictEqual(["Delta", "TurnCompleted", "ToolResult", "Outcome"])
      const last = events.at(-1)
      if (last?._tag !== "Outcome") return expect.unreachable()
      expect(last.outcome.results.map((result) => result.outcome)).toStrictEqual(["success"])
      expect(last.outcome.cost).toBeCloseTo(0.00004, 12)
      expect(last.outcome.history.map((item) => item.type)).toStrictEqual([
        "message",
        "function_call",
        "function_call_output"
      ])
      expect(accounted).toHaveLength(1)
      expect(accounted[0]!.history).toStrictEqual(last.outcome.history.slice(0, 2))
    }).pipe(Effect.provide(environment([addCall(2, 3)]))))

  it.effect("complete runs the model part alone: deltas, then the priced turn, and no tool", () =>
    Effect.gen(function*() {
      const history = [Item.userMessage("Add 2 and 3")]
      const events = yield* Stream.runCollect(
        Loop.loop(
          0,
          () =>
            AgentTurn.complete(
              { step: 1, history, options: { model } },
              (completed) => Loop.stopAfter(Stream.make({ _tag: "Completed" as const, completed }))
            )
        )
      )
      const last = events.at(-1)
      if (last?._tag !== "Completed") return expect.unreachable()
      expect(events.slice(0, -1).every((event) => event._tag === "Delta")).toBe(true)
      expect(last.completed.cost).toBeCloseTo(0.00004, 12)
      expect(last.completed.history.map((item) => item.type)).toStrictEqual(["message", "function_call"])
    }).pipe(Effect.provide(environment([addCall(2, 3)]))))

  it.effect("a failing account stops the turn before its tools run", () =>
    Effect.gen(function*() {
      let ran = false
      const exit = yield* Stream.runCollect(
        oneTurn({
          history: [Item.userMessage("Add")],
          toolkit: Toolkit.make(add),
          tools: { concurrency: 1 },
          account: () => Effect.fail("over budget" as const)
        }).pipe(Stream.tap((event) => Effect.sync(() => ran ||= event._tag === "ToolResult")))
      ).pipe(Effect.exit)
      expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({ _tag: "Fail", error: "over budget" })
      expect(ran).toBe(false)
    }).pipe(Effect.provide(environment([addCall(2, 3)]))))

  // A model may send its `turn_complete` with the turn's last deltas or in a chunk of its own (a Chat Completions
  // server that reports no usage): the request is released before the tools either way.
  const chunkings = {
    "with the turn's last deltas": (deltas: ReadonlyArray<TurnDelta.TurnDelta>) => Stream.fromIterable(deltas),
    "alone in its own chunk": (deltas: ReadonlyArray<TurnDelta.TurnDelta>) =>
      Stream.concat(Stream.fromIterable(deltas.slice(0, -1)), Stream.fromIterable(deltas.slice(-1)))
  }
  for (const [chunking, streamed] of Object.entries(chunkings)) {
    it.effect(`releases its model request once its turn is complete, before its tools run (${chunking})`, () =>
      Effect.gen(function*() {
        const order: Array<string> = []
        const released = Layer.succeed(LanguageModel, {
          provider: "mock",
          streamTurn: () =>
            streamed(MockLanguageModel.deltas(addCall(2, 3))).pipe(
              Stream.ensuring(Effect.sync(() => order.push("request released")))
            )
        })
        const recorded = Tool.make({
          name: "add",
          description: "Adds two numbers",
          input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
          output: Schema.Finite,
          execute: ({ a, b }) => Effect.sync(() => (order.push("tool ran"), a + b))
        })
        yield* Stream.runDrain(oneTurn({
          history: [Item.userMessage("Add")],
          toolkit: Toolkit.make(recorded),
          account: (completed) => Effect.succeed(books(completed))
        })).pipe(Effect.provide(Layer.merge(released, pricing)))
        expect(order).toStrictEqual(["request released", "tool ran"])
      }))
  }

  it.effect("compacts once on a context overflow and answers from the shorter history", () =>
    Effect.gen(function*() {
      const long = [Item.userMessage("old question"), Item.assistantMessage("old answer"), Item.userMessage("now")]
      const events = yield* Stream.runCollect(
        oneTurn({ history: long, account: (completed) => Effect.succeed(books(completed)) })
      )
      expect(events.find((event) => event._tag === "Compacted")).toMatchObject({ before: 3, after: 1 })
      const last = events.at(-1)
      if (last?._tag !== "Outcome") return expect.unreachable()
      expect(last.outcome.history).toStrictEqual([Item.userMessage("now"), ...answer("done").items])
    }).pipe(
      Effect.provide(
        environment([new AiError.ContextLengthExceeded({ provider: "mock", message: "full" }), answer("done")])
      ),
      Effect.provide(Compactor.layer((history) => Effect.succeed(history.slice(-1))))
    ))

  it.effect("fails with the CompactionError carrying the overflow, or with IncompleteTurn when the stream breaks off", () =>
    Effect.gen(function*() {
      const account = (completed: AgentTurn.Completed) => Effect.succeed(books(completed))
      const overflow = new AiError.ContextLengthExceeded({ provider: "mock", message: "full" })
      const compaction = yield* Effect.flip(
        Stream.runDrain(oneTurn({ history: [Item.userMessage("hi")], account })).pipe(
          Effect.provide(environment([overflow]))
        )
      )
      expect(compaction).toBeInstanceOf(Compactor.CompactionError)
      expect(compaction).toMatchObject({ message: "no tool call with an output is left to drop" })
      expect(compaction._tag === "CompactionError" && compaction.overflow).toBe(overflow)

      const truncated = Layer.succeed(LanguageModel, {
        provider: "truncated",
        streamTurn: () => Stream.make({ type: "text_delta" as const, delta: "cut" })
      })
      const incomplete = yield* Effect.flip(
        Stream.runDrain(oneTurn({ history: [], account })).pipe(
          Effect.provide(truncated)
        )
      )
      expect(incomplete).toBeInstanceOf(AiError.IncompleteTurn)
    }))

  it("is a Schema-described failure", () => {
    const failure = new Compactor.CompactionError({
      message: "nothing to drop",
      overflow: new AiError.ContextLengthExceeded({ provider: "mock", message: "full" })
    })
    const json = Schema.toCodecJson(Compactor.CompactionError)
    expect(Schema.decodeUnknownSync(json)(JSON.parse(JSON.stringify(Schema.encodeSync(json)(failure)))))
      .toStrictEqual(failure)
  })
})
