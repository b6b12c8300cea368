import { SpanRecorder } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Approval from "../src/Approval.ts"
import { Halt } from "../src/Halt.ts"
import { ExecutionContext } from "../src/step/ExecutionContext.ts"
import * as RetryPolicy from "../src/step/RetryPolicy.ts"
import * as Step from "../src/step/Step.ts"
import * as StepError from "../src/step/StepError.ts"
import * as Tool from "../src/Tool.ts"
import * as Until from "../src/Until.ts"

class Boom extends Schema.TaggedError<Boom>()("Boom", { why: Schema.String }) {}

describe("Step.run", () => {
  it.effect("answers with a value, a Promise or an Effect", () =>
    Effect.gen(function*() {
      expect(yield* Step.execute(Step.run({ id: "value", execute: (n: number) => n + 1 }), 1)).toBe(2)
      expect(yield* Step.execute(Step.run({ id: "promise", execute: async (n: number) => n + 2 }), 1)).toBe(3)
      expect(yield* Step.execute(Step.run({ id: "effect", execute: (n: number) => Effect.succeed(n + 3) }), 1)).toBe(4)
    }))

  it.effect("a throw or a rejected Promise is a typed StepFailed, not a defect", () =>
    Effect.gen(function*() {
      const thrown = yield* Effect.flip(Step.execute(
        Step.run({
          id: "throws",
          execute: (): number => {
            throw new Error("bad input")
          }
        }),
        undefined
      ))
      expect(thrown).toBeInstanceOf(StepError.StepFailed)
      expect(thrown).toMatchObject({ _tag: "StepFailed", stepId: "throws" })
      expect(thrown.message).toContain("execute threw: bad input")
      const rejected = yield* Effect.flip(Step.execute(
        Step.run({ id: "rejects", execute: () => Promise.reject(new Error("no luck")) }),
        undefined
      ))
      expect(rejected).toMatchObject({ _tag: "StepFailed", stepId: "rejects" })
      expect(rejected.message).toContain("execute rejected: no luck")
    }))

  it.effect("an Effect keeps its own typed error, and its defects stay defects", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.flip(Step.execute(
        Step.run({ id: "fails", execute: () => Effect.fail(new Boom({ why: "typed" })) }),
        undefined
      ))
      expect(failed).toStrictEqual(new Boom({ why: "typed" }))
      const died = yield* Effect.exit(
        Step.execute(Step.run({ id: "dies", execute: () => Effect.die("bug") }), undefined)
      )
      expect(Exit.isFailure(died) && died.cause.reasons[0]?._tag).toBe("Die")
    }))

  const flaky = (failures: number, times: Array<number>) => {
    let calls = 0
    return Step.run({
      id: "flaky",
      retry: { maxAttempts: 4, backoff: "exponential", initialDelay: 100, maxDelay: 300 },
      execute: () =>
        Effect.gen(function*() {
          times.push(yield* Effect.clockWith((clock) => Effect.succeed(clock.currentTimeMillisUnsafe())))
          calls++
          if (calls <= failures) return yield* new Boom({ why: `call ${calls}` })
          return calls
        })
    })
  }

  it.effect("retries with an exponential backoff capped at maxDelay", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const fiber = yield* Effect.forkChild(Step.execute(flaky(3, times), undefined))
      yield* TestClock.adjust(Duration.seconds(10))
      expect(yield* Fiber.join(fiber)).toBe(4)
      // 100, then 200, then 400 capped to 300.
      expect(times).toStrictEqual([0, 100, 300, 600])
    }))

  it.effect("gives up after maxAttempts attempts with the last error", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const fiber = yield* Effect.forkChild(Effect.flip(Step.execute(flaky(10, times), undefined)))
      yield* TestClock.adjust(Duration.seconds(10))
      expect(yield* Fiber.join(fiber)).toStrictEqual(new Boom({ why: "call 4" }))
      expect(times).toHaveLength(4)
    }))

  it.effect("a retry policy that does not decode fails with InvalidOptions before running", () =>
    Effect.gen(function*() {
      let ran = false
      const error = yield* Effect.flip(Step.execute(
        Step.run({
          id: "bad-retry",
          retry: { maxAttempts: 3, backoff: "fixed", initialDelay: -5 },
          execute: () => (ran = true)
        }),
        undefined
      ))
      expect(error).toMatchObject({ _tag: "InvalidOptions", stepId: "bad-retry", field: "retry" })
      expect(error.message).toContain("initialDelay")
      expect(ran).toBe(false)
    }))
})

describe("RetryPolicy", () => {
  it("waits initialDelay, then the same, more each time, or twice as long, capped at maxDelay", () => {
    const waits = (backoff: RetryPolicy.RetryPolicy["backoff"], maxDelay?: number) =>
      [1, 2, 3, 4].map((retry) =>
        RetryPolicy.delay({
          maxAttempts: 5,
          backoff,
          initialDelay: 100,
          ...(maxDelay === undefined ? {} : { maxDelay })
        }, retry)
      )
    expect(waits("fixed")).toStrictEqual([100, 100, 100, 100])
    expect(waits("linear")).toStrictEqual([100, 200, 300, 400])
    expect(waits("exponential")).toStrictEqual([100, 200, 400, 800])
    expect(waits("linear", 250)).toStrictEqual([100, 200, 250, 250])
  })

  it.effect("runs as a Schedule of maxAttempts - 1 retries", () =>
    Effect.gen(function*() {
      let attempts = 0
      const fiber = yield* Effect.forkChild(Effect.exit(
        Effect.suspend(() => (attempts++, Effect.fail("no"))).pipe(
          Effect.retry(RetryPolicy.schedule({ maxAttempts: 3, backoff: "linear", initialDelay: 10 }))
        )
      ))
      yield* TestClock.adjust(Duration.millis(29))
      expect(attempts).toBe(2)
      yield* TestClock.adjust(Duration.millis(1))
      expect(Exit.isFailure(yield* Fiber.join(fiber))).toBe(true)
      expect(attempts).toBe(3)
    }))
})

describe("Step.branch", () => {
  const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
  const negate = Step.run({ id: "negate", execute: (n: number) => Effect.succeed(-n) })

  it.effect("runs the routed step on the same input, and skips on null", () =>
    Effect.gen(function*() {
      const routed = Step.branch({
        id: "route",
        route: (n: number) => n > 10 ? double : n < 0 ? negate : null
      })
      expect(yield* Step.execute(routed, 20)).toBe(40)
      expect(yield* Step.execute(routed, -3)).toBe(3)
      expect(yield* Step.execute(routed, 5)).toBe(5)
    }))

  it.effect("a route that answers anything but a step or null fails with InvalidStep; a step that cannot work with InvalidOptions", () =>
    Effect.gen(function*() {
      // Answers from outside the type system: JavaScript callers, a lookup that missed.
      for (const answer of [undefined, "double", {}, 42]) {
        const routed = Step.branch({ id: "lookup", route: (_: number): typeof double => answer as never })
        const error = yield* Effect.flip(Step.execute(routed, 1))
        expect(error).toBeInstanceOf(StepError.InvalidStep)
        expect(error).toMatchObject({ stepId: "lookup" })
        expect(error.message).toContain("route of step \"lookup\" answered")
        expect(error.message).toContain("not a step")
      }
      const bad = Step.branch({
        id: "lookup",
        route: (_: number) => Step.spawn({ id: "helper", timeout: -1, child: double })
      })
      expect(yield* Effect.flip(Step.execute(bad, 1))).toMatchObject({
        _tag: "InvalidOptions",
        stepId: "helper",
        field: "timeout"
      })
    }))

  it.effect("a route that throws fails with StepFailed", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Step.execute(
        Step.branch({
          id: "broken",
          route: (n: number) => {
            if (n > 0) throw new Error("no route for positives")
            return double
          }
        }),
        1
      ))
      expect(error).toMatchObject({ _tag: "StepFailed", stepId: "broken" })
      expect(error.message).toContain("route threw: no route for positives")
    }))
})

describe("Step.tool", () => {
  const divide = Tool.make({
    name: "divide",
    description: "Divides",
    input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite.check(Schema.isGreaterThan(0)) }),
    output: Schema.Finite,
    failure: Boom,
    execute: ({ a, b }) => a > 1000 ? Effect.fail(new Boom({ why: "too big" })) : Effect.succeed(a / b)
  })

  it.effect("runs the tool on its input merged over the preset args, and reports the call", () =>
    Effect.gen(function*() {
      const byTwo = Step.tool({ id: "half", tool: divide, args: { b: 2 } })
      const program = Step.loop({
        id: "once",
        steps: [byTwo, Step.run({ id: "meta", execute: (half: number, ctx) => ({ half, meta: ctx.lastStepMeta }) })],
        prepareNext: () => ({ a: 0 }),
        until: () => ({ stop: true })
      })
      const { half, meta } = yield* Step.execute(program, { a: 9 })
      expect(half).toBe(4.5)
      expect(meta?.toolCalls?.map((call) => [call.name, JSON.parse(call.arguments)])).toStrictEqual([
        ["divide", { a: 9, b: 2 }]
      ])
      expect(meta?.responseItems?.at(-1)).toMatchObject({ type: "function_call_output", output: "4.5" })
      // The input wins over a preset argument.
      expect(yield* Step.execute(byTwo, { a: 9, b: 3 })).toBe(3)
    }))

  it.effect("an input the tool's schema refuses fails with InvalidToolInput; the tool's own failure passes through", () =>
    Effect.gen(function*() {
      const invalid = yield* Effect.flip(Step.execute(Step.tool({ id: "div", tool: divide }), { a: 1, b: 0 }))
      expect(invalid).toBeInstanceOf(StepError.InvalidToolInput)
      if (invalid._tag !== "InvalidToolInput") return expect.unreachable()
      expect(invalid.diagnostic.issues.map((issue) => issue.path)).toStrictEqual([["b"]])
      const failed = yield* Effect.flip(Step.execute(Step.tool({ id: "div", tool: divide }), { a: 5000, b: 1 }))
      expect(failed).toStrictEqual(new Boom({ why: "too big" }))
    }))

  it.effect("asks the Approval service for a tool that needs it", () =>
    Effect.gen(function*() {
      const guarded = Tool.make({
        name: "add",
        description: "Adds, once approved",
        input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
        output: Schema.Finite,
        needsApproval: true,
        execute: ({ a, b }) => Effect.succeed(a + b)
      })
      const step = Step.tool({ id: "guarded", tool: guarded })
      const denied = yield* Effect.flip(Step.execute(step, { a: 1, b: 2 }))
      expect(denied).toMatchObject({ _tag: "ToolDenied", tool: "add" })
      expect(yield* Step.execute(step, { a: 1, b: 2 }).pipe(Effect.provide(Approval.allowAll))).toBe(3)
    }))

  it.effect("a tool that cannot be interrupted fails the step at its time limit, and finishes on its own", () =>
    Effect.gen(function*() {
      const finished = yield* Deferred.make<void>()
      const stubborn = Tool.make({
        name: "stubborn",
        description: "Blocks for an hour, uninterruptibly",
        input: Schema.Struct({}),
        output: Schema.String,
        timeout: "2 seconds",
        execute: () =>
          Effect.uninterruptible(Effect.andThen(Effect.sleep("1 hour"), Deferred.succeed(finished, undefined))).pipe(
            Effect.as("late")
          )
      })
      const fiber = yield* Effect.forkChild(Effect.flip(Step.execute(Step.tool({ id: "block", tool: stubborn }), {})))
      yield* TestClock.adjust("2 seconds")
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
      const exit = fiber.pollUnsafe()
      expect(exit !== undefined && Exit.isSuccess(exit) && exit.value).toStrictEqual(
        new StepError.StepTimeout({ stepId: "block", timeoutMs: 2000 })
      )
      yield* TestClock.adjust("1 hour")
      yield* Deferred.await(finished)
    }))

  it.effect("the reported result item is the tool's decorateResultItem's; one it cannot make fails with StepFailed", () =>
    Effect.gen(function*() {
      const decorated = (card: string) =>
        Tool.make({
          name: "label",
          description: "Labels",
          input: Schema.Struct({ text: Schema.String }),
          output: Schema.String,
          itemSchemas: { toolResults: [Schema.Struct({ card: Schema.Literal("ok") })] },
          decorateResultItem: ({ baseItem }) => ({ ...baseItem, card }),
          execute: ({ text }) => Effect.succeed(text.toUpperCase())
        })
      const meta = Step.run({ id: "meta", execute: (_: string, ctx) => ctx.lastStepMeta?.responseItems?.at(-1) })
      const labelled = Step.loop({
        id: "labelled",
        steps: [Step.tool({ id: "label", tool: decorated("ok") }), meta],
        prepareNext: () => ({ text: "a" }),
        until: Until.maxSteps(1)
      })
      expect(yield* Step.execute(labelled, { text: "a" })).toMatchObject({ output: "\"A\"", card: "ok" })
      const refused = yield* Effect.flip(Step.execute(Step.tool({ id: "label", tool: decorated("no") }), { text: "a" }))
      expect(refused).toMatchObject({ _tag: "StepFailed", stepId: "label" })
      expect(refused.message).toContain("itemSchemas.toolResults")
    }))

  it.effect("a tool that halts fails the step with Halt", () =>
    Effect.gen(function*() {
      const stop = Tool.make({
        name: "stop",
        description: "Stops",
        input: Schema.Struct({}),
        output: Schema.Null,
        execute: () => Effect.fail(new Halt({ reason: "enough" }))
      })
      expect(yield* Effect.flip(Step.execute(Step.tool({ id: "stop", tool: stop }), {}))).toStrictEqual(
        new Halt({ reason: "enough" })
      )
    }))
})

describe("the execution context", () => {
  it.effect("counts the steps that ended, keeps the state, and is a service for code deeper down", () =>
    Effect.gen(function*() {
      const helper = Effect.map(ExecutionContext, (ctx) => `${ctx.id} at step ${ctx.stepId}`)
      const program = Step.loop({
        id: "main",
        steps: [
          Step.run({
            id: "first",
            execute: (n: number, ctx: ExecutionContext<{ readonly visits: number }>) => {
              ctx.updateState((state) => ({ visits: state.visits + 1 }))
              return n
            }
          }),
          Step.run({ id: "second", execute: (n: number) => Effect.map(helper, (where) => ({ n, where })) }),
          Step.run({
            id: "third",
            execute: (
              { n, where }: { n: number; where: string },
              ctx: ExecutionContext<{ readonly visits: number }>
            ) => ({
              n,
              where,
              visits: ctx.state.visits,
              count: ctx.stepCount,
              depth: ctx.depth,
              parent: ctx.parent,
              thread: ctx.threadId,
              resource: ctx.resourceId
            })
          })
        ],
        prepareNext: (out) => out.n,
        until: () => ({ stop: true })
      })
      const out = yield* Step.execute(program, 7, { state: { visits: 0 }, id: "exec-1", resourceId: "user-9" })
      expect(out).toStrictEqual({
        n: 7,
        where: "exec-1 at step second",
        visits: 1,
        count: 2,
        depth: 0,
        parent: null,
        thread: "exec-1",
        resource: "user-9"
      })
    }))

  it.effect("a text input starts the item log as a user message; other inputs add nothing", () =>
    Effect.gen(function*() {
      const items = Step.run({ id: "items", execute: (_: unknown, ctx) => ctx.itemLog.items })
      expect(yield* Step.execute(items, "What is 2 + 2?")).toMatchObject([
        { type: "message", role: "user", content: [{ type: "input_text", text: "What is 2 + 2?" }] }
      ])
      expect(yield* Step.execute(items, { question: "no" })).toStrictEqual([])
    }))

  it.effect("complete ends the whole execution at once when no loop encloses the step", () =>
    Effect.gen(function*() {
      let after = false
      const program = Step.fork({
        id: "paths",
        mode: "all",
        paths: () => [
          Step.run({ id: "finisher", execute: (_: unknown, ctx) => (ctx.complete("done early"), "ignored") }),
          Step.run({
            id: "slow",
            execute: () => Effect.sleep(Duration.seconds(5)).pipe(Effect.andThen(Effect.sync(() => (after = true))))
          })
        ],
        merge: () => "merged"
      })
      expect(yield* Step.execute(program, undefined)).toBe("done early")
      expect(after).toBe(false)
    }))

  it.effect("every step runs in a span named after its kind and id, a child of its parent step's", () =>
    Effect.gen(function*() {
      const recorder = SpanRecorder.make()
      const program = Step.branch({
        id: "pick",
        route: () => Step.run({ id: "leaf", execute: (_: unknown, ctx) => ctx.span.name })
      })
      const leafSpan = yield* Step.execute(program, undefined).pipe(Effect.withTracer(recorder.tracer))
      expect(leafSpan).toBe("step.run leaf")
      const [pick, leaf] = recorder.spans
      expect(pick?.name).toBe("step.branch pick")
      expect(leaf?.name).toBe("step.run leaf")
      expect(leaf?.parent).toStrictEqual(Option.some(pick))
      expect(pick?.attributes.get("agentloop.step.kind")).toBe("branch")
    }))
})
