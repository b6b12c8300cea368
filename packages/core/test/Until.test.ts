import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Ref, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import type { AiError } from "../src/AiError.ts"
import * as Embedder from "../src/Embedder.ts"
import type * as Item from "../src/Item.ts"
import { PredicateFailed } from "../src/PredicateFailed.ts"
import * as Snapshot from "../src/Snapshot.ts"
import * as StepMeta from "../src/StepMeta.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import type * as Turn from "../src/Turn.ts"
import * as Until from "../src/Until.ts"

const snap = (fields: Partial<Snapshot.Snapshot> = {}): Snapshot.Snapshot => Snapshot.make({ runId: "run", ...fields })

const call = (name: string): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${name}`,
  status: "completed",
  call_id: `c_${name}`,
  name,
  arguments: "{}"
})

const turn = (items: ReadonlyArray<Item.Item>): Turn.Turn => ({
  items,
  usage: TokenUsage.make(10, 5),
  stopReason: "stop"
})

const answer: Item.Message = {
  type: "message",
  id: "a",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text: "4" }]
}

/** The verdict of a predicate, run through `evaluate`. */
const verdictOf = <E, R>(until: Until.Until<E, R>, snapshot: Snapshot.Snapshot) => Until.evaluate(until, snapshot)

/** The failure of a predicate that should fail. */
const failureOf = <E, R>(until: Until.Until<E, R>, snapshot: Snapshot.Snapshot) =>
  Effect.flip(Until.evaluate(until, snapshot))

describe("Until arguments that cannot work", () => {
  it.effect("are found when the predicate is built, named with the value, and kept by the combinators", () =>
    Effect.gen(function*() {
      expect(Until.invalid(Until.maxDuration(-1))).toMatchObject({
        _tag: "InvalidOptions",
        field: "Until.maxDuration(limit)",
        value: "-1"
      })
      expect(Until.invalid(Until.maxDuration("ten minutes" as "10 minutes"))).toMatchObject({
        value: "\"ten minutes\""
      })
      expect(Until.invalid(Until.maxSteps(1.5))?.message).toBe("Until.maxSteps(n) must be a positive integer, not 1.5")
      expect(Until.invalid(Until.maxTokens(0))).toMatchObject({ field: "Until.maxTokens(n)" })
      expect(Until.invalid(Until.maxCost(-0.01))).toMatchObject({ field: "Until.maxCost(usd)", value: "-0.01" })
      expect(Until.invalid(Until.converged({ threshold: Number.NaN }))).toMatchObject({
        field: "Until.converged threshold"
      })
      expect(Until.invalid(Until.outputContains(""))).toMatchObject({ field: "Until.outputContains(marker)" })
      expect(Until.invalid(Until.all(Until.noToolCalls(), Until.any(Until.maxSteps(-2))))).toMatchObject({
        field: "Until.maxSteps(n)",
        value: "-2"
      })
      expect(Until.invalid(Until.any(...([] as unknown as [Until.Until])))).toMatchObject({
        field: "Until.any(...predicates)"
      })
      for (const fine of [Until.maxDuration(0), Until.maxDuration("Infinity"), Until.maxSteps(1), Until.converged()]) {
        expect(Until.invalid(fine)).toBeUndefined()
      }
      // Asked anyway, a refused predicate cannot answer.
      const failure = yield* failureOf(Until.maxDuration(-1), snap())
      expect(failure.message).toContain("Until.maxDuration(limit) must be a duration of at least 0")
    }))
})

describe("Until limits", () => {
  it.effect("maxSteps stops once n iterations completed", () =>
    Effect.gen(function*() {
      expect(yield* verdictOf(Until.maxSteps(3), snap({ stepCount: 2 }))).toStrictEqual({ stop: false })
      expect(yield* verdictOf(Until.maxSteps(3), snap({ stepCount: 3 }))).toStrictEqual({
        stop: true,
        reason: "step limit reached: 3 of 3"
      })
    }))

  it.effect("maxTokens counts total tokens", () =>
    Effect.gen(function*() {
      expect((yield* verdictOf(Until.maxTokens(100), snap({ tokens: TokenUsage.make(60, 39) }))).stop).toBe(false)
      expect(yield* verdictOf(Until.maxTokens(100), snap({ tokens: TokenUsage.make(60, 40) }))).toStrictEqual({
        stop: true,
        reason: "token limit reached: 100 of 100"
      })
    }))

  it.effect("maxCost stops at the budget and says how much was spent", () =>
    Effect.gen(function*() {
      expect((yield* verdictOf(Until.maxCost(0.5), snap({ cost: 0.4999 }))).stop).toBe(false)
      expect(yield* verdictOf(Until.maxCost(0.5), snap({ cost: 0.1 + 0.2 + 0.2 }))).toStrictEqual({
        stop: true,
        reason: "cost limit reached: $0.5 of $0.5"
      })
    }))

  it.effect("maxCost fails on an unknown cost rather than treating it as free", () =>
    Effect.gen(function*() {
      const error = yield* failureOf(Until.maxCost(0.5), snap({ cost: null }))
      expect(error).toBeInstanceOf(PredicateFailed)
      expect(error.message).toContain("the run's cost is unknown")
      expect(error.message).toContain("Pricing.layer")
    }))

  it.effect("maxDuration stops exactly at the limit, not a millisecond before", () =>
    Effect.gen(function*() {
      const until = Until.maxDuration("2 seconds")
      expect((yield* verdictOf(until, snap({ elapsed: 1999 }))).stop).toBe(false)
      expect(yield* verdictOf(until, snap({ elapsed: 2000 }))).toStrictEqual({
        stop: true,
        reason: "time limit reached: 2000 ms of 2000 ms"
      })
      expect((yield* verdictOf(Until.maxDuration(500), snap({ elapsed: 500 }))).stop).toBe(true)
    }))

  it.effect("outputContains looks for the marker in the last text", () =>
    Effect.gen(function*() {
      expect((yield* verdictOf(Until.outputContains("DONE"), snap({ lastText: "not done yet" }))).stop).toBe(false)
      expect(yield* verdictOf(Until.outputContains("DONE"), snap({ lastText: "all DONE." }))).toStrictEqual({
        stop: true,
        reason: "output contains \"DONE\""
      })
    }))

  it("custom returns the predicate itself", () => {
    const predicate: Until.Until = () => ({ stop: false })
    expect(Until.custom(predicate)).toBe(predicate)
  })
})

describe("Until.noToolCalls", () => {
  const noCalls = StepMeta.fromTurn(turn([answer]))
  const withCalls = StepMeta.fromTurn(turn([call("search")]))

  it.effect("never stops before an iteration has completed", () =>
    Effect.gen(function*() {
      expect((yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 0, lastStepMeta: noCalls }))).stop).toBe(false)
      expect((yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 0, lastOutput: turn([answer]) }))).stop).toBe(
        false
      )
    }))

  it.effect("stops after an iteration whose turn called no tools", () =>
    Effect.gen(function*() {
      expect(yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 1, lastStepMeta: noCalls }))).toStrictEqual({
        stop: true,
        reason: "the model answered without calling a tool"
      })
      expect((yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 4, lastStepMeta: withCalls }))).stop).toBe(false)
    }))

  it.effect("reads responseItems, then a Turn in lastOutput, when toolCalls is not reported", () =>
    Effect.gen(function*() {
      const fromItems = (items: ReadonlyArray<Item.Item>) =>
        snap({ stepCount: 1, lastStepMeta: { responseItems: items } })
      expect((yield* verdictOf(Until.noToolCalls(), fromItems([answer]))).stop).toBe(true)
      expect((yield* verdictOf(Until.noToolCalls(), fromItems([answer, call("x")]))).stop).toBe(false)
      const fromTurn = (output: unknown) => snap({ stepCount: 1, lastStepMeta: null, lastOutput: output })
      expect((yield* verdictOf(Until.noToolCalls(), fromTurn(turn([answer])))).stop).toBe(true)
      expect((yield* verdictOf(Until.noToolCalls(), fromTurn(turn([call("x")])))).stop).toBe(false)
    }))

  it.effect("does not stop when nothing says whether tools were called", () =>
    Effect.gen(function*() {
      expect((yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 1 }))).stop).toBe(false)
      expect((yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 1, lastStepMeta: { cost: 0.1 } }))).stop).toBe(
        false
      )
      expect((yield* verdictOf(Until.noToolCalls(), snap({ stepCount: 1, lastOutput: { items: "nope" } }))).stop).toBe(
        false
      )
    }))

  it("StepMeta.fromTurn reports the turn's calls, usage, items and cost", () => {
    const t = { ...turn([answer, call("a")]), cost: 0.02 }
    expect(StepMeta.fromTurn(t)).toStrictEqual({
      toolCalls: [call("a")],
      usage: TokenUsage.make(10, 5),
      cost: 0.02,
      responseItems: t.items
    })
    expect(StepMeta.fromTurn(t, 0.5).cost).toBe(0.5)
    expect("cost" in StepMeta.fromTurn(turn([]))).toBe(false)
  })
})

describe("Until.verified", () => {
  it.effect("stops when verification passes and passes a failure's feedback on", () =>
    Effect.gen(function*() {
      const until = Until.verified((output) =>
        output === "42" ? { pass: true } : { pass: false, feedback: `expected 42, got ${String(output)}` }
      )
      expect(yield* verdictOf(until, snap({ lastOutput: "41" }))).toStrictEqual({
        stop: false,
        feedback: "expected 42, got 41"
      })
      expect(yield* verdictOf(until, snap({ lastOutput: "42" }))).toStrictEqual({
        stop: true,
        reason: "verification passed"
      })
    }))

  it.effect("accepts a Promise or an Effect from the verify function", () =>
    Effect.gen(function*() {
      const viaPromise = Until.verified(async () => ({ pass: false, feedback: "async says no" }))
      expect(yield* verdictOf(viaPromise, snap())).toStrictEqual({ stop: false, feedback: "async says no" })
      const viaEffect = Until.verified((_, snapshot) => Effect.succeed({ pass: snapshot.stepCount > 1 }))
      expect((yield* verdictOf(viaEffect, snap({ stepCount: 2 }))).stop).toBe(true)
    }))

  it.effect("a verify function that throws or answers nonsense fails the predicate", () =>
    Effect.gen(function*() {
      const thrown = yield* failureOf(
        Until.verified(() => {
          throw new Error("checker crashed")
        }),
        snap()
      )
      expect(thrown.message).toBe("verify function threw: checker crashed")
      const nonsense = yield* failureOf(Until.verified(() => Effect.succeed({ passed: true } as never)), snap())
      expect(nonsense.message).toBe("verify function returned {\"passed\":true}, not a verify result")
    }))
})

describe("Until.evaluate", () => {
  class Flaky extends Schema.TaggedError<Flaky>()("Flaky", { message: Schema.String }) {}

  it.effect("a predicate that throws becomes PredicateFailed with the thrown error as cause", () =>
    Effect.gen(function*() {
      const boom = new Error("boom")
      const throwing: Until.Until = () => {
        throw boom
      }
      const error = yield* failureOf(throwing, snap())
      expect(error).toBeInstanceOf(PredicateFailed)
      expect(error.message).toBe("until predicate threw: boom")
      expect(error.cause).toBe(boom)
    }))

  it.effect("a rejected promise, a typed failure and a defect each become PredicateFailed", () =>
    Effect.gen(function*() {
      const rejecting: Until.Until = () => Promise.reject(new Error("network down"))
      const rejected = yield* failureOf(rejecting, snap())
      expect(rejected.message).toBe("until predicate rejected: network down")
      const flaky = new Flaky({ message: "judge unavailable" })
      const failed = yield* failureOf(() => Effect.fail(flaky), snap())
      expect(failed.message).toBe("until predicate failed: judge unavailable")
      expect(failed.cause).toBe(flaky)
      const dying: Until.Until = () => Effect.die("bad state")
      const died = yield* failureOf(dying, snap())
      expect(died.message).toBe("until predicate died: bad state")
    }))

  it.effect("an answer that is not a verdict fails instead of stopping or continuing silently", () =>
    Effect.gen(function*() {
      const notAVerdict = (() => undefined) as unknown as Until.Until
      expect((yield* failureOf(notAVerdict, snap())).message).toBe("until predicate returned undefined, not a verdict")
      const stringly = (() => Promise.resolve({ stop: "yes" })) as unknown as Until.Until
      expect((yield* failureOf(stringly, snap())).message).toBe(
        "until predicate returned {\"stop\":\"yes\"}, not a verdict"
      )
    }))

  it.effect("a failure inside a combinator fails the whole predicate", () =>
    Effect.gen(function*() {
      const throwing: Until.Until = () => {
        throw new Error("inner")
      }
      const error = yield* failureOf(Until.any(Until.maxSteps(10), throwing), snap())
      expect(error.message).toBe("until predicate threw: inner")
    }))

  it.effect("interruption is not turned into a failure", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(Until.evaluate(() => Effect.never, snap()))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(Exit.findErrorOption(exit)._tag).toBe("None")
    }))

  it.effect("records the verdict on its span", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      let spanAttributes: ReadonlyMap<string, unknown> = new Map()
      const spy: Until.Until = () =>
        Effect.map(Effect.orDie(Effect.currentSpan), (span) => {
          seen.push(span.name)
          spanAttributes = span.attributes
          return { stop: true, reason: "because", feedback: "well done" }
        })
      yield* Until.evaluate(spy, snap())
      expect(seen).toStrictEqual(["Until.evaluate"])
      expect(spanAttributes.get("until.stop")).toBe(true)
      expect(spanAttributes.get("until.reason")).toBe("because")
      expect(spanAttributes.get("until.feedback")).toBe("well done")
    }))
})

describe("Until.any and Until.all", () => {
  const failing = Until.verified(() => ({ pass: false, feedback: "tests fail: 2 of 10" }))

  it.effect("any returns the first stopping verdict and keeps the feedback of a non-stopping one", () =>
    Effect.gen(function*() {
      const until = Until.any(failing, Until.maxSteps(3), Until.outputContains("x"))
      expect(yield* verdictOf(until, snap({ stepCount: 3, lastText: "x" }))).toStrictEqual({
        stop: true,
        reason: "step limit reached: 3 of 3",
        feedback: "tests fail: 2 of 10"
      })
      expect(yield* verdictOf(until, snap({ stepCount: 1 }))).toStrictEqual({
        stop: false,
        feedback: "tests fail: 2 of 10"
      })
    }))

  it.effect("any keeps a non-stopping predicate's feedback whatever the order of its arguments", () =>
    Effect.gen(function*() {
      const snapshot = snap({ stepCount: 3 })
      for (const until of [Until.any(Until.maxSteps(3), failing), Until.any(failing, Until.maxSteps(3))]) {
        expect(yield* verdictOf(until, snapshot)).toStrictEqual({
          stop: true,
          reason: "step limit reached: 3 of 3",
          feedback: "tests fail: 2 of 10"
        })
      }
    }))

  it.effect("any asks every predicate every time and stops with the reason of the first that stops", () =>
    Effect.gen(function*() {
      const asked = yield* Ref.make(0)
      const counting: Until.Until = () => Effect.as(Ref.update(asked, (n) => n + 1), { stop: false })
      const until = Until.any(counting, Until.outputContains("x"), Until.maxSteps(1), counting)
      expect(yield* verdictOf(until, snap({ stepCount: 1, lastText: "x" }))).toStrictEqual({
        stop: true,
        reason: "output contains \"x\""
      })
      expect(yield* Ref.get(asked)).toBe(2)
    }))

  it.effect("all stops only when every predicate stops and joins their reasons with '; '", () =>
    Effect.gen(function*() {
      const until = Until.all(Until.maxSteps(2), Until.outputContains("DONE"), Until.maxCost(1))
      expect((yield* verdictOf(until, snap({ stepCount: 2, lastText: "DONE", cost: 0.5 }))).stop).toBe(false)
      expect(yield* verdictOf(until, snap({ stepCount: 2, lastText: "DONE", cost: 1 }))).toStrictEqual({
        stop: true,
        reason: "step limit reached: 2 of 2; output contains \"DONE\"; cost limit reached: $1 of $1"
      })
    }))

  it.effect("all asks every predicate and keeps feedback whether or not it stops", () =>
    Effect.gen(function*() {
      const asked = yield* Ref.make(0)
      const counting: Until.Until = () => Effect.as(Ref.update(asked, (n) => n + 1), { stop: true, reason: "counted" })
      const until = Until.all(Until.maxSteps(5), counting, failing)
      expect(yield* verdictOf(until, snap({ stepCount: 1 }))).toStrictEqual({
        stop: false,
        feedback: "tests fail: 2 of 10"
      })
      expect(yield* Ref.get(asked)).toBe(1)
      const passing = Until.verified(() => ({ pass: true, feedback: "10 of 10" }))
      expect(yield* verdictOf(Until.all(passing, failing, counting), snap())).toStrictEqual({
        stop: false,
        feedback: "10 of 10\ntests fail: 2 of 10"
      })
    }))

  it.effect("give a stop without a reason one a person can read", () =>
    Effect.gen(function*() {
      const silent: Until.Until = () => ({ stop: true })
      expect(yield* verdictOf(Until.any(silent), snap())).toStrictEqual({ stop: true, reason: "a predicate stopped" })
      expect(yield* verdictOf(Until.all(silent, silent), snap())).toStrictEqual({
        stop: true,
        reason: "every predicate stopped"
      })
    }))

  it("keep the errors and services of their predicates in their types", () => {
    class Judge extends Context.Service<Judge, { readonly ok: Effect.Effect<boolean> }>()("test/Judge") {}
    const judged = Until.verified(() => Judge.use((judge) => Effect.map(judge.ok, (pass) => ({ pass }))))
    const combined = Until.any(Until.maxSteps(1), judged, Until.converged({ threshold: 0.9 }))
    expectTypeOf(combined).toEqualTypeOf<Until.Until<PredicateFailed | AiError, Judge | Embedder.Embedder>>()
    expectTypeOf(Until.all(Until.maxSteps(1), Until.converged())).toEqualTypeOf<Until.Until<PredicateFailed, never>>()
    expectTypeOf(Until.converged({ cache: true })).toEqualTypeOf<
      Until.Until<PredicateFailed | KeyValueStore.KeyValueStoreError | Schema.SchemaError, KeyValueStore.KeyValueStore>
    >()
  })
})

/** A fake embedder: counts of the letters a–z, so texts with the same letters point the same way. */
const letters = (text: string): ReadonlyArray<number> => {
  const counts = Array.from({ length: 26 }, () => 0)
  for (const char of text.toLowerCase()) {
    const index = char.charCodeAt(0) - 97
    if (index >= 0 && index < 26) counts[index] = (counts[index] ?? 0) + 1
  }
  return counts
}

const fakeEmbedder = (calls: Ref.Ref<Array<string>>) =>
  Layer.succeed(Embedder.Embedder, {
    embed: (text) => Effect.as(Ref.update(calls, (seen) => [...seen, text]), letters(text))
  })

describe("Until.converged", () => {
  it.effect("at threshold 1 stops when the text is exactly the previous step's", () =>
    Effect.gen(function*() {
      const until = Until.converged()
      const step = (stepCount: number, lastText: string) => verdictOf(until, snap({ stepCount, lastText }))
      expect((yield* step(1, "draft")).stop).toBe(false)
      expect((yield* step(2, "draft ")).stop).toBe(false)
      expect(yield* step(3, "draft ")).toStrictEqual({ stop: true, reason: "output unchanged since the previous step" })
    }))

  it.effect("never counts turns without text (tool calls only) as converged, at any threshold", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make<Array<string>>([])
      for (const until of [Until.converged(), Until.converged({ threshold: 0.5 })]) {
        const step = (stepCount: number, lastText: string) =>
          Effect.map(
            verdictOf(until, snap({ stepCount, lastText })).pipe(Effect.provide(fakeEmbedder(calls))),
            (v) => v.stop
          )
        expect(yield* step(1, "")).toBe(false)
        expect(yield* step(2, "")).toBe(false)
        expect(yield* step(3, "  \n")).toBe(false)
        expect(yield* step(4, "answer")).toBe(false)
        expect(yield* step(5, "answer")).toBe(true)
      }
      expect(yield* Ref.get(calls)).toStrictEqual(["answer", "answer"])
    }))

  it.effect("keeps one previous output per run, so one predicate serves concurrent runs", () =>
    Effect.gen(function*() {
      const until = Until.converged({ threshold: 1 })
      const step = (runId: string, stepCount: number, lastText: string) =>
        Effect.map(verdictOf(until, Snapshot.make({ runId, stepCount, lastText })), (v) => v.stop)
      expect(yield* step("a", 1, "same")).toBe(false)
      expect(yield* step("b", 1, "other")).toBe(false)
      expect(yield* step("a", 2, "same")).toBe(true)
      expect(yield* step("b", 2, "same")).toBe(false)
    }))

  it.effect("does not compare across a gap in steps, and answers a re-evaluated step the same way", () =>
    Effect.gen(function*() {
      const until = Until.converged()
      const step = (stepCount: number) =>
        Effect.map(verdictOf(until, snap({ stepCount, lastText: "x" })), (v) => v.stop)
      expect(yield* step(1)).toBe(false)
      expect(yield* step(3)).toBe(false)
      expect(yield* step(4)).toBe(true)
      expect(yield* step(4)).toBe(true)
    }))

  it.effect("below 1 compares the cosine similarity of the Embedder service's vectors", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make<Array<string>>([])
      const until = Until.converged({ threshold: 0.95 })
      const step = (stepCount: number, lastText: string) =>
        verdictOf(until, snap({ stepCount, lastText })).pipe(Effect.provide(fakeEmbedder(calls)))
      expect((yield* step(1, "the cat sat")).stop).toBe(false)
      expect((yield* step(2, "a dog ran off")).stop).toBe(false)
      expect(yield* step(3, "a dog ran off!")).toStrictEqual({
        stop: true,
        reason: "output converged: similarity 1.000 to the previous step, threshold 0.95"
      })
      expect((yield* step(4, "cat cat cat")).stop).toBe(false)
      expect(yield* Ref.get(calls)).toStrictEqual(["the cat sat", "a dog ran off", "a dog ran off!", "cat cat cat"])
    }))

  it.effect("uses the embed option instead of the service, and fails on vectors of different lengths", () =>
    Effect.gen(function*() {
      let dims = 26
      const until = Until.converged({ threshold: 0.9, embed: async (text) => letters(text).slice(0, dims) })
      expect((yield* verdictOf(until, snap({ stepCount: 1, lastText: "abc" }))).stop).toBe(false)
      expect((yield* verdictOf(until, snap({ stepCount: 2, lastText: "abcc" }))).stop).toBe(true)
      dims = 3
      const error = yield* failureOf(until, snap({ stepCount: 3, lastText: "abc" }))
      expect(error.message).toBe("converged: the previous and the current embeddings are not comparable vectors")
      const broken = Until.converged({ threshold: 0.9, embed: () => Promise.reject(new Error("quota")) })
      expect((yield* failureOf(broken, snap({ stepCount: 1, lastText: "abc" }))).message).toBe(
        "embed function rejected: quota"
      )
    }))

  it.effect("an Embedder failure fails the predicate with the AiError as cause", () =>
    Effect.gen(function*() {
      const { AuthFailed } = yield* Effect.promise(() => import("../src/AiError.ts"))
      const denied = new AuthFailed({ provider: "embeddings", status: 401, message: "bad key" })
      const error = yield* failureOf(Until.converged({ threshold: 0.5 }), snap({ stepCount: 1, lastText: "hi" })).pipe(
        Effect.provide(Layer.succeed(Embedder.Embedder, { embed: () => Effect.fail(denied) }))
      )
      expect(error.cause).toBe(denied)
    }))

  describe("with a cache", () => {
    it.effect("two runs sharing one KeyValueStore never see each other's outputs", () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make<Array<string>>([])
        const until = Until.converged({ threshold: 0.95, cache: true })
        const step = (runId: string, stepCount: number, lastText: string) =>
          Effect.map(verdictOf(until, Snapshot.make({ runId, stepCount, lastText })), (v) => v.stop).pipe(
            Effect.provide(fakeEmbedder(calls))
          )
        expect(yield* step("run-1", 1, "alpha")).toBe(false)
        expect(yield* step("run-2", 1, "zzz")).toBe(false)
        expect(yield* step("run-1", 2, "alpha")).toBe(true)
        expect(yield* step("run-2", 2, "alpha")).toBe(false)
        expect(yield* step("run-2", 3, "alpha")).toBe(true)
        const kv = yield* KeyValueStore.KeyValueStore
        expect([...(yield* kv.keys)].sort()).toStrictEqual([
          `${Until.convergedCachePrefix}run-1/vector`,
          `${Until.convergedCachePrefix}run-2/vector`
        ])
      }).pipe(Effect.provide(KeyValueStore.layerMemory)))

    it.effect("keeps the previous output across predicate instances (a new process, the same store)", () =>
      Effect.gen(function*() {
        const first = Until.converged({ cache: true })
        const second = Until.converged({ cache: true })
        expect((yield* verdictOf(first, snap({ stepCount: 1, lastText: "final" }))).stop).toBe(false)
        expect((yield* verdictOf(second, snap({ stepCount: 2, lastText: "final" }))).stop).toBe(true)
        const inMemory = Until.converged()
        expect((yield* verdictOf(inMemory, snap({ stepCount: 3, lastText: "final" }))).stop).toBe(false)
      }).pipe(Effect.provide(KeyValueStore.layerMemory)))

    it.effect("two converged predicates of one run sharing the store do not compare with each other", () =>
      Effect.gen(function*() {
        const until = Until.all(Until.converged({ cache: true }), Until.converged({ cache: true }))
        expect((yield* verdictOf(until, snap({ stepCount: 1, lastText: "v1" }))).stop).toBe(false)
        expect((yield* verdictOf(until, snap({ stepCount: 2, lastText: "v2" }))).stop).toBe(false)
        expect(yield* verdictOf(until, snap({ stepCount: 3, lastText: "v2" }))).toStrictEqual({
          stop: true,
          reason: "output unchanged since the previous step; output unchanged since the previous step"
        })
      }).pipe(Effect.provide(KeyValueStore.layerMemory)))

    it.effect("a corrupt cache entry fails the predicate rather than being trusted", () =>
      Effect.gen(function*() {
        const kv = yield* KeyValueStore.KeyValueStore
        yield* kv.set(`${Until.convergedCachePrefix}run/text`, "{\"step\":\"one\"}")
        const error = yield* failureOf(Until.converged({ cache: true }), snap({ stepCount: 2, lastText: "x" }))
        expect(error.message).toMatch(/^until predicate failed: /)
        expect(error.cause).toBeInstanceOf(Schema.SchemaError)
      }).pipe(Effect.provide(KeyValueStore.layerMemory)))
  })
})

describe("Embedder.cosineSimilarity", () => {
  it("is 1 for the same direction, 0 for orthogonal or zero vectors, -1 for opposite", () => {
    expect(Embedder.cosineSimilarity([1, 2], [2, 4])).toBeCloseTo(1)
    expect(Embedder.cosineSimilarity([1, 0], [0, 3])).toBe(0)
    expect(Embedder.cosineSimilarity([0, 0], [1, 1])).toBe(0)
    expect(Embedder.cosineSimilarity([1, 1], [-1, -1])).toBeCloseTo(-1)
  })
})
