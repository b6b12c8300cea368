import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Item from "../src/Item.ts"
import * as Channel from "../src/step/Channel.ts"
import type { ExecutionContext } from "../src/step/ExecutionContext.ts"
import * as Memory from "../src/step/Memory.ts"
import * as Step from "../src/step/Step.ts"
import * as StepError from "../src/step/StepError.ts"
import * as Until from "../src/Until.ts"
import * as Verdict from "../src/Verdict.ts"
import { answer, model, pricing } from "./agentFixtures.ts"

const describeContext = Step.run({
  id: "describe",
  execute: (_: unknown, ctx) => ({
    id: ctx.id,
    parent: ctx.parent?.id ?? null,
    parentStep: ctx.parent?.stepId ?? null,
    depth: ctx.depth,
    thread: ctx.threadId,
    resource: ctx.resourceId,
    items: ctx.itemLog.items,
    state: ctx.state
  })
})

describe("Step.spawn", () => {
  it.effect("runs its child in a new context: id, parent, depth, thread, item log and a copy of the state", () =>
    Effect.gen(function*() {
      const program = Step.loop({
        id: "main",
        steps: [
          Step.run({
            id: "note",
            execute: (text: string, ctx) => (ctx.itemLog.append(Item.assistantMessage("noted")), text)
          }),
          Step.spawn({ id: "helper", child: describeContext }),
          Step.spawn({ id: "helper", child: describeContext })
        ],
        prepareNext: () => "again",
        until: () => Verdict.stop("once")
      })
      const child = yield* Step.execute(program, "sub-task", { id: "root", resourceId: "acme", state: { plan: "A" } })
      expect(child).toStrictEqual({
        id: "root/helper#2",
        parent: "root",
        parentStep: "helper",
        depth: 1,
        thread: "root/helper#2",
        resource: "acme",
        items: [],
        state: { plan: "A" }
      })
      const first = yield* Step.execute(Step.spawn({ id: "helper", child: describeContext }), "task", { id: "root" })
      // A text input starts the child's own log as a user message; the parent's log is not the child's.
      expect(first.id).toBe("root/helper")
      expect(first.items).toStrictEqual([Item.userMessage("task")])
    }))

  it.effect(
    "sub-agents nested 2,000 deep, and loops 1,000 deep, run without overflowing the stack",
    () =>
      Effect.gen(function*() {
        const leaf = Step.run({ id: "leaf", execute: (_: unknown, ctx) => [ctx.depth, ctx.id.split("/").length] })
        let spawned: Step.Any = leaf as Step.Any
        for (let level = 0; level < 2000; level++) spawned = Step.spawn({ id: `s${level}`, child: spawned }) as Step.Any
        expect(yield* Step.execute(spawned as typeof leaf, undefined, { id: "root" })).toStrictEqual([2000, 2001])
        const increment = Step.run({ id: "increment", execute: (n: number) => n + 1 })
        let looped: Step.Any = increment as Step.Any
        for (let level = 0; level < 1000; level++) {
          looped = Step.loop({
            id: `l${level}`,
            steps: [looped as typeof increment],
            until: Until.maxSteps(1)
          }) as Step.Any
        }
        expect(yield* Step.execute(looped as typeof increment, 0)).toBe(1)
      }),
    30_000
  )

  it.effect("a timeout interrupts the child, finalizers included, and fails with StepTimeout", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const stuck = Step.spawn({
        id: "stuck",
        timeout: 1000,
        child: Step.run({
          id: "forever",
          execute: () => Effect.never.pipe(Effect.ensuring(Effect.sync(() => log.push("child finalized"))))
        })
      })
      const fiber = yield* Effect.forkChild(Effect.flip(Step.execute(stuck, undefined)))
      yield* TestClock.adjust(Duration.millis(999))
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Fiber.join(fiber)).toStrictEqual(new StepError.StepTimeout({ stepId: "stuck", timeoutMs: 1000 }))
      expect(log).toStrictEqual(["child finalized"])
      const negative = Step.spawn({ id: "negative", timeout: -1, child: describeContext })
      expect(yield* Effect.flip(Step.execute(negative, undefined))).toMatchObject({
        _tag: "InvalidOptions",
        stepId: "negative",
        field: "timeout"
      })
    }))

  it.effect("a child's abort fails its spawn step with Aborted, which its parent may handle", () =>
    Effect.gen(function*() {
      const quitter = Step.spawn({
        id: "quitter",
        child: Step.run({
          id: "quit",
          execute: (_: unknown, ctx) => Effect.sync(() => ctx.abort("not my job")).pipe(Effect.andThen(Effect.never))
        })
      })
      const settled = Step.fork({ id: "try", mode: "settle", paths: () => [quitter], merge: (results) => results })
      const [result] = yield* Step.execute(settled, undefined, { id: "boss" })
      expect(result).toStrictEqual({
        stepId: "quitter",
        status: "rejected",
        error: new StepError.Aborted({ contextId: "boss/quitter", reason: "not my job" })
      })
    }))

  it.effect("a child's complete ends the child with the value, not its parent", () =>
    Effect.gen(function*() {
      const program = Step.loop({
        id: "parent",
        steps: [
          Step.spawn({
            id: "child",
            child: Step.run({ id: "finish", execute: (_: number, ctx) => (ctx.complete(42), 0) })
          }),
          Step.run({ id: "after", execute: (n: number) => n + 1 })
        ],
        until: Until.maxSteps(1)
      })
      expect(yield* Step.execute(program, 0)).toBe(43)
    }))

  it.effect("the child's turns count in its parent's books as they happen", () =>
    Effect.gen(function*() {
      const costs: Array<number | null> = []
      const budget = Step.loop({
        id: "budget",
        steps: [
          Step.spawn({ id: "worker", child: Step.llm({ id: "work", model, tools: [] }) }),
          Step.run({ id: "books", execute: (_: string, ctx) => (costs.push(ctx.cost), ctx.cost) })
        ],
        prepareNext: () => "more",
        until: Until.maxCost(0.0001)
      })
      const exit = yield* Effect.exit(Step.execute(budget, "go"))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(costs.map((cost) => cost === null ? null : Math.round(cost * 1e6))).toStrictEqual([40, 80, 120])
    }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer([answer("a"), answer("b"), answer("c")]), pricing))))

  it.effect("executeStep runs a step inside the caller's context: depth, parent, books and events kept", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const planner = Step.run({
        id: "planner",
        execute: (task: string, ctx) =>
          Effect.gen(function*() {
            const answer = yield* Step.executeStep(Step.llm({ id: "think", model, tools: [] }), task, ctx)
            const helper = yield* Step.executeStep(Step.spawn({ id: "helper", child: describeContext }), task, ctx)
            // Step.execute would open a new program instead: depth 0, its own books.
            const apart = yield* Step.execute(describeContext, task)
            seen.push({ answer, cost: ctx.cost, helper: [helper.depth, helper.parent], apart: apart.depth })
            return answer
          })
      })
      const events = yield* Stream.runCollect(Step.stream(planner, "plan it", { id: "root" }))
      expect(seen).toStrictEqual([{ answer: "a", cost: 0.00004, helper: [1, "root"], apart: 0 }])
      expect(events.flatMap((event) => event._tag === "Started" ? [`${event.stepId} in ${event.contextId}`] : []))
        .toStrictEqual(["planner in root", "think in root", "helper in root", "describe in root/helper"])
      const fake = { stepId: "nobody" } as unknown as ExecutionContext
      const refused = yield* Effect.flip(Step.executeStep(describeContext, "x", fake))
      expect(refused).toMatchObject({ _tag: "InvalidStep", stepId: "nobody" })
      const notAStep = Step.run({
        id: "caller",
        execute: (_: string, ctx) => Step.executeStep(42 as unknown as typeof describeContext, "x", ctx)
      })
      expect(yield* Effect.flip(Step.execute(notAStep, "x"))).toMatchObject({ _tag: "InvalidStep", stepId: "caller" })
    }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer([answer("a")]), pricing))))

  it.effect("memory of its own replaces the memory around it, for the child only", () =>
    Effect.gen(function*() {
      const recalling = (text: string) =>
        Memory.layer({ recall: () => Effect.succeed([Item.userMessage(text, text)]), remember: () => Effect.void })
      const talk = Step.llm({ id: "talk", model, tools: [] })
      const program = Step.provide({
        id: "shared",
        memory: recalling("shared"),
        child: Step.loop({
          id: "both",
          steps: [Step.spawn({ id: "own", child: talk, memory: recalling("own") }), talk],
          prepareNext: () => "again",
          until: () => Verdict.stop("once")
        })
      })
      const requests = yield* Effect.gen(function*() {
        yield* Step.execute(program, "hi")
        return yield* (yield* MockLanguageModel.MockLanguageModel).requests
      }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer([answer("child"), answer("parent")]), pricing)))
      expect(requests.map((request) => request.history[0]?.id)).toStrictEqual(["own", "shared"])
    }))
})

describe("Channel", () => {
  it.effect("send, recv and tryRecv pass values between steps", () =>
    Effect.gen(function*() {
      const results = yield* Channel.make("results", Schema.Number)
      const program = Step.fork({
        id: "pipe",
        mode: "all",
        paths: () => [
          Step.run({ id: "producer", execute: (_: unknown, ctx) => Effect.as(ctx.send(results, 7), "sent") }),
          Step.run({ id: "consumer", execute: (_: unknown, ctx) => Effect.map(ctx.recv(results), (n) => `got ${n}`) })
        ],
        merge: (outputs) => outputs
      })
      expect(yield* Step.execute(program, undefined)).toStrictEqual(["sent", "got 7"])
      const empty = Step.run({ id: "poll", execute: (_: unknown, ctx) => ctx.tryRecv(results) })
      expect(yield* Step.execute(empty, undefined)).toBeNull()
      yield* Channel.send(results, 8)
      expect(yield* Step.execute(empty, undefined)).toBe(8)
    }))

  it.effect("a value the schema refuses is not sent, and fails with InvalidChannelValue", () =>
    Effect.gen(function*() {
      const names = yield* Channel.make("names", Schema.String.check(Schema.isMinLength(1)))
      const error = yield* Effect.flip(Channel.send(names, ""))
      expect(error).toBeInstanceOf(StepError.InvalidChannelValue)
      expect(error.channel).toBe("names")
      expect(Channel.tryRecv(names)).toBeNull()
      const fromStep = Step.run({ id: "bad", execute: (_: unknown, ctx) => ctx.send(names, "") })
      expect(yield* Effect.flip(Step.execute(fromStep, undefined))).toBeInstanceOf(StepError.InvalidChannelValue)
    }))

  it.effect("recv with a timeout fails with RecvTimeout when nothing arrives", () =>
    Effect.gen(function*() {
      const quiet = yield* Channel.make<string>("quiet")
      const fiber = yield* Effect.forkChild(Effect.flip(Channel.recv(quiet, { timeout: "2 seconds" })))
      yield* TestClock.adjust(Duration.seconds(2))
      expect(yield* Fiber.join(fiber)).toStrictEqual(new StepError.RecvTimeout({ channel: "quiet", timeoutMs: 2000 }))
      // Zero or less waits for nothing: a value already sent, or the timeout at once.
      yield* Channel.send(quiet, "waiting")
      expect(yield* Channel.recv(quiet, { timeout: -5 })).toBe("waiting")
      expect(yield* Effect.flip(Channel.recv(quiet, { timeout: -5 }))).toStrictEqual(
        new StepError.RecvTimeout({ channel: "quiet", timeoutMs: 0 })
      )
    }))
})
