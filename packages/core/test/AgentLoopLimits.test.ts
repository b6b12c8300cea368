import { MockLanguageModel, SpanRecorder, StuckTool } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as InvalidOptions from "../src/InvalidOptions.ts"
import * as StopPolicy from "../src/StopPolicy.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import {
  addCall,
  answer,
  dollarModel,
  environment,
  failureOf,
  model,
  requestsOf,
  runWith,
  toolkit
} from "./agentFixtures.ts"

/** A tool that never returns, and says when it started and when it was stopped. */
const stuckTool = Effect.sync(() => StuckTool.make("wait"))

const waitCall = MockLanguageModel.callsTurn([{ name: "wait", arguments: {} }], { model })

describe("AgentLoop accounting", () => {
  const dollarTurn = (a: number) =>
    MockLanguageModel.callsTurn([{ name: "add", arguments: { a, b: 1 } }], {
      model: dollarModel,
      usage: TokenUsage.make(1_000_000, 0)
    })

  it.effect("MaxBudgetUsd: a turn that brings the cost exactly to the budget ends the run", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([dollarTurn(1), dollarTurn(2), dollarTurn(3), answer("never")], {
        input: "Add",
        toolkit,
        model: dollarModel,
        limits: { maxBudgetUsd: 2 }
      })
      expect(error._tag).toBe("MaxBudgetUsd")
      expect(error.accounting.steps).toBe(2)
      expect(error.accounting.cost).toBe(2)
    }))

  it.effect("MaxBudgetUsd: every paid turn is reported, the one that reached the budget too, and none of its tools run", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events: Array<AgentLoop.AgentEvent> = []
      const error = yield* agent.stream({ input: "Add", toolkit, model: dollarModel, limits: { maxBudgetUsd: 2 } })
        .pipe(
          Stream.runForEach((event) => Effect.sync(() => events.push(event))),
          Effect.flip
        )
      const completed = events.flatMap((event) => event._tag === "TurnCompleted" ? [event] : [])
      expect(completed.map((event) => [event.step, event.cost, event.accounting.cost])).toStrictEqual([[1, 1, 1], [
        2,
        1,
        2
      ]])
      expect(error).toMatchObject({ _tag: "MaxBudgetUsd", accounting: { cost: 2, steps: 2 } })
      expect(events.filter((event) => event._tag === "ToolResult")).toHaveLength(1)
    }).pipe(Effect.provide(environment([dollarTurn(1), dollarTurn(2), dollarTurn(3)]))))

  it.effect("UnpricedModel: a budgeted run of a model without a price fails before its first request", () =>
    Effect.gen(function*() {
      const { exit, requests } = yield* requestsOf([answer("never")], {
        input: "Hi",
        model: "my-local-model",
        limits: { maxBudgetUsd: 1 }
      })
      expect(requests).toHaveLength(0)
      expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({
        _tag: "Fail",
        error: { _tag: "UnpricedModel", model: "my-local-model", maxBudgetUsd: 1 }
      })
      const error = yield* failureOf([], { input: "Hi", model: "my-local-model", limits: { maxBudgetUsd: 1 } })
      expect(error.message).toContain("model \"my-local-model\" has no price")
      expect(error.message).toContain("Pricing.layer({ \"my-local-model\"")
    }))

  it.effect("UnpricedModel: a turn answered by an unpriced model ends a budgeted run before its tools run", () =>
    Effect.gen(function*() {
      let ran = 0
      const counted = Tool.make({
        name: "add",
        description: "Adds",
        input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
        output: Schema.Finite,
        execute: ({ a, b }) => Effect.sync(() => (ran++, a + b))
      })
      const mystery = MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 1, b: 2 } }], { model: "mystery-1" })
      const error = yield* failureOf([mystery, answer("never")], {
        input: "Add",
        toolkit: Toolkit.make(counted),
        limits: { maxBudgetUsd: 1 }
      })
      expect(error).toMatchObject({ _tag: "UnpricedModel", model: "mystery-1" })
      expect(error.accounting.steps).toBe(1)
      expect(error.accounting.cost).toBeNull()
      expect(ran).toBe(0)
    }))

  it.effect("without a budget, an unknown cost is reported as unknown, never as 0", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({ input: "Hi" }))
      const completed = events.find((event) => event._tag === "TurnCompleted")
      expect(completed?.cost).toBeNull()
      expect(completed?.accounting.cost).toBeNull()
      const finished = events.find((event) => event._tag === "Finished")
      expect(finished?.result.termination.accounting.cost).toBeNull()
    }).pipe(Effect.provide(environment([MockLanguageModel.textTurn("hello", { model: "my-local-model" })]))))

  it.effect("Until.maxCost on an unknown cost ends the run with the reason, rather than never stopping", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([MockLanguageModel.textTurn("hello", { model: "my-local-model" })], {
        input: "Hi",
        until: Until.maxCost(1)
      })
      expect(error._tag).toBe("DuringExecution")
      expect(error.message).toContain("the run's cost is unknown")
    }))

  it.effect("NoProgress needs the repeated turns to be silent: the same calls with new text each time go on", () =>
    Effect.gen(function*() {
      const chatty = (text: string) =>
        MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 2 }, callId: "call_same" }], { text, model })
      const result = yield* runWith([chatty("One."), chatty("Two."), chatty("Three."), chatty("Four."), answer("4")], {
        input: "Add",
        toolkit
      })
      expect(result.termination.accounting.steps).toBe(5)
    }))
})

describe("AgentLoop discarded attempts", () => {
  const overflow = new AiError.ContextLengthExceeded({ provider: "mock", message: "too long" })

  it.effect("text streamed before a context overflow is declared void, and the retry's text stands alone", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({ input: "Add", toolkit, model }))
      const tags = events.map((event) => event._tag).filter((tag, i, all) => tag !== "Delta" || all[i - 1] !== "Delta")
      expect(tags.slice(tags.indexOf("TurnStarted", 1))).toStrictEqual([
        "TurnStarted",
        "Delta",
        "AttemptDiscarded",
        "Compacted",
        "Delta",
        "TurnCompleted",
        "Verdict",
        "Finished"
      ])
      // What a UI shows for step 2 when it clears the step's text on AttemptDiscarded.
      let shown = ""
      for (const event of events) {
        if (event._tag === "AttemptDiscarded") shown = ""
        if (event._tag === "Delta" && event.step === 2 && event.delta.type === "text_delta") shown += event.delta.delta
      }
      expect(shown).toBe("FINAL")
      expect(events.find((event) => event._tag === "AttemptDiscarded")).toMatchObject({ step: 2, cause: overflow })
    }).pipe(Effect.provide(environment([
      addCall(1, 1),
      MockLanguageModel.partial(answer("PARTIAL-ANSWER"), 2, overflow),
      answer("FINAL")
    ]))))
})

describe("AgentLoop time limits", () => {
  it.effect("a tool that never returns is stopped after the default timeout, and the model is told", () =>
    Effect.gen(function*() {
      const { tool, started, stopped } = yield* stuckTool
      const agent = yield* AgentLoop.AgentLoop
      const fiber = yield* agent.stream({ input: "Wait", toolkit: Toolkit.make(tool), model }).pipe(
        Stream.runCollect,
        Effect.forkChild
      )
      yield* Deferred.await(started)
      yield* TestClock.adjust(Toolkit.defaultTimeout)
      yield* Deferred.await(stopped)
      const events = yield* Fiber.join(fiber)
      const result = events.find((event) => event._tag === "ToolResult")
      expect(result).toMatchObject({ outcome: "timeout" })
      expect(result?.reason).toContain("did not finish within 5m")
      expect(events.at(-1)?._tag).toBe("Finished")
    }).pipe(Effect.provide(environment([waitCall, answer("It timed out.")]))))

  it.effect("limits.toolTimeout overrides the default", () =>
    Effect.gen(function*() {
      const { tool, started } = yield* stuckTool
      const agent = yield* AgentLoop.AgentLoop
      const fiber = yield* agent.run({
        input: "Wait",
        toolkit: Toolkit.make(tool),
        model,
        limits: { toolTimeout: "2 seconds" }
      }).pipe(Effect.forkChild)
      yield* Deferred.await(started)
      yield* TestClock.adjust("2 seconds")
      const result = yield* Fiber.join(fiber)
      expect(result.history.find((item) => item.type === "function_call_output")).toMatchObject({
        status: "incomplete"
      })
    }).pipe(Effect.provide(environment([waitCall, answer("It timed out.")]))))

  it.effect("MaxDuration ends the run at its deadline while a tool is in flight, and stops the tool", () =>
    Effect.gen(function*() {
      const { tool, started, stopped } = yield* stuckTool
      const agent = yield* AgentLoop.AgentLoop
      const fiber = yield* agent.run({
        input: "Wait",
        toolkit: Toolkit.make(tool),
        model,
        limits: { maxDuration: "1 minute" }
      }).pipe(Effect.flip, Effect.forkChild)
      yield* Deferred.await(started)
      yield* TestClock.adjust("1 minute")
      const error = yield* Fiber.join(fiber)
      yield* Deferred.await(stopped)
      expect(error._tag).toBe("MaxDuration")
      expect(error.accounting.steps).toBe(1)
      expect(error.accounting.elapsedMs).toBe(60_000)
      expect(error.message).toBe("reached the deadline of 60000 ms")
    }).pipe(Effect.provide(environment([waitCall, answer("never")]))))

  it.effect("MaxDuration ends the run at its deadline while a tool that cannot be interrupted runs on", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const finished = yield* Deferred.make<void>()
      const stubborn = Tool.make({
        name: "wait",
        description: "Blocks for an hour, uninterruptibly",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () =>
          Effect.uninterruptible(
            Deferred.succeed(started, undefined).pipe(
              Effect.andThen(Effect.sleep("1 hour")),
              Effect.andThen(Deferred.succeed(finished, undefined))
            )
          ).pipe(Effect.as("late"))
      })
      const agent = yield* AgentLoop.AgentLoop
      const fiber = yield* agent.run({
        input: "Wait",
        toolkit: Toolkit.make(stubborn),
        model,
        limits: { maxDuration: "1 minute" }
      }).pipe(Effect.flip, Effect.forkChild)
      yield* Deferred.await(started)
      yield* TestClock.adjust("1 minute")
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
      const exit = fiber.pollUnsafe()
      expect(exit !== undefined && Exit.isSuccess(exit) && exit.value).toMatchObject({
        _tag: "MaxDuration",
        accounting: { elapsedMs: 60_000 }
      })
      expect(yield* Deferred.isDone(finished)).toBe(false)
      yield* TestClock.adjust("1 hour")
      yield* Deferred.await(finished)
    }).pipe(Effect.provide(environment([waitCall, answer("never")]))))

  it.effect("MaxDuration ends the run in the middle of a model turn, and is recorded on the run's span", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const streaming = yield* Deferred.make<void>()
      const { spans, tracer } = SpanRecorder.make()
      const fiber = yield* agent.stream({ input: "Talk", model, limits: { maxDuration: "1 second" } }).pipe(
        Stream.tap((event) => event._tag === "Delta" ? Deferred.succeed(streaming, undefined) : Effect.void),
        Stream.runCollect,
        Effect.flip,
        Effect.withTracer(tracer),
        Effect.forkChild
      )
      while (!(yield* Deferred.isDone(streaming))) yield* TestClock.adjust("10 millis")
      yield* TestClock.adjust("1 second")
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("MaxDuration")
      expect(error.accounting.steps).toBe(0)
      const run = spans.find((span) => span.name === "invoke_agent")
      expect(run?.attributes.get("agentloop.termination")).toBe("MaxDuration")
      expect(run?.attributes.get("error.type")).toBe("MaxDuration")
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect(yield* recorder.requests).toHaveLength(1)
    }).pipe(Effect.provide(
      AgentLoop.layer.pipe(
        Layer.provideMerge(MockLanguageModel.layer([answer("word ".repeat(40))], { delay: "100 millis" }))
      )
    )))
})

describe("AgentLoop options that cannot work", () => {
  const refused = (options: AgentLoop.Options<string, never, unknown>) =>
    Effect.gen(function*() {
      const { exit, requests } = yield* requestsOf([answer("never")], options)
      expect(requests).toHaveLength(0)
      if (exit._tag !== "Failure" || exit.cause.reasons[0]?._tag !== "Fail") return expect.unreachable(String(exit))
      const error = exit.cause.reasons[0].error
      expect(error).toBeInstanceOf(InvalidOptions.InvalidOptions)
      return error as InvalidOptions.InvalidOptions
    })

  it.effect("end the run with a typed InvalidOptions naming the field and the value, before any request", () =>
    Effect.gen(function*() {
      expect(yield* refused({ input: "Hi", limits: { maxTurns: -1 } })).toMatchObject({
        _tag: "InvalidOptions",
        field: "limits.maxTurns",
        value: "-1",
        expected: "a positive integer",
        accounting: { steps: 0, cost: 0 }
      })
      expect((yield* refused({ input: "Hi", model, limits: { maxBudgetUsd: -1 } })).message).toBe(
        "limits.maxBudgetUsd must be a finite number above 0, not -1"
      )
      expect(yield* refused({ input: "Hi", limits: { maxDuration: "soon" as Duration.Input } })).toMatchObject({
        field: "limits.maxDuration",
        value: "\"soon\""
      })
      expect(yield* refused({ input: "Hi", limits: { toolConcurrency: 0 } })).toMatchObject({
        field: "limits.toolConcurrency"
      })
      expect(yield* refused({ input: "Hi", limits: { maxStructuredOutputRetries: 1.5 } })).toMatchObject({
        field: "limits.maxStructuredOutputRetries"
      })
      expect(yield* refused({ input: "Hi", params: { topP: 2 } })).toMatchObject({ field: "params.topP", value: "2" })
      expect(yield* refused({ input: "Hi", toolkit, finish: "publish" })).toMatchObject({
        field: "finish",
        expected: "the name of a tool of the toolkit: \"add\", \"submit\", \"halt\""
      })
      expect(yield* refused({ input: "Hi", depth: -1 })).toMatchObject({ field: "depth" })
      expect(yield* refused({ input: [{ type: "message" }] as never })).toMatchObject({ field: "input" })
    }))

  it.effect("a stop predicate built with an argument that cannot work ends the run the same way", () =>
    Effect.gen(function*() {
      expect(yield* refused({ input: "Hi", until: Until.maxDuration(-1) })).toMatchObject({
        field: "Until.maxDuration(limit)",
        value: "-1"
      })
      expect(yield* refused({ input: "Hi", until: Until.any(Until.noToolCalls(), Until.maxSteps(0)) })).toMatchObject({
        field: "Until.maxSteps(n)",
        value: "0"
      })
      const fromPolicy = yield* refused({ input: "Hi" }).pipe(
        Effect.provideService(StopPolicy.StopPolicy, Until.maxCost(Number.NaN))
      )
      expect(fromPolicy).toMatchObject({ field: "Until.maxCost(usd)", value: "NaN" })
      const fromLayer = yield* refused({ input: "Hi" }).pipe(Effect.provide(StopPolicy.layer(Until.outputContains(""))))
      expect(fromLayer).toMatchObject({ field: "Until.outputContains(marker)", value: "\"\"" })
    }))
})
