import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Scheduler, Schema } from "effect"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Item from "../src/Item.ts"
import type { ExecutionContext } from "../src/step/ExecutionContext.ts"
import * as Step from "../src/step/Step.ts"
import * as StepHistory from "../src/step/StepHistory.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import { addCall, answer, model, pricing, toolkit, usage } from "./agentFixtures.ts"

/** Runs `program` on a fresh mock answering `script`, against the checkpointer in context; returns the exit and the requests. */
const execute = <A, E, R>(program: Effect.Effect<A, E, R>, script: ReadonlyArray<MockLanguageModel.Reply>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(program)
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests }
  }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing)))

/** A pipeline: research (an agent loop), then a step that counts its runs and waits the first time, then a summary. */
const pipeline = Effect.gen(function*() {
  const ran: Array<string> = []
  const waiting = yield* Deferred.make<void>()
  const research = Step.loop({
    id: "research",
    steps: [Step.llm({ id: "turn", model })],
    until: Until.noToolCalls()
  })
  const review = Step.run({
    id: "review",
    execute: (notes: string, ctx: ExecutionContext<{ readonly reviews: number }>) =>
      Effect.suspend(() => {
        ran.push("review")
        ctx.updateState((state) => ({ reviews: state.reviews + 1 }))
        return ran.length === 1
          ? Effect.andThen(Deferred.succeed(waiting, undefined), Effect.never)
          : Effect.succeed(`reviewed: ${notes}`)
      })
  })
  const summary = Step.run({
    id: "summary",
    execute: (reviewed: string, ctx: ExecutionContext<{ readonly reviews: number }>) => (
      ran.push(`summary after ${ctx.state.reviews} review`), reviewed.toUpperCase()
    )
  })
  const program = Step.loop({
    id: "pipeline",
    steps: [research, review, summary],
    until: Until.maxSteps(1)
  })
  return { program, ran, waiting }
})

/**
 * Tools `charge` and `lookup` that never end the first time they run (`blocked` says when each did), and what
 * ran: their names, and the `Tool.IdempotencyKey` each run saw.
 */
const blockingTools = Effect.gen(function*() {
  const ran: Array<string> = []
  const keys: Array<string | undefined> = []
  const blocked = { charge: yield* Deferred.make<void>(), lookup: yield* Deferred.make<void>() }
  const tool = (name: "charge" | "lookup", idempotent: boolean) =>
    Tool.make({
      name,
      description: `${name}s`,
      input: Schema.Struct({}),
      output: Schema.String,
      idempotent,
      execute: () =>
        Effect.flatMap(Tool.IdempotencyKey, (key) =>
          Effect.suspend(() => {
            ran.push(name)
            keys.push(key)
            return ran.filter((entry) => entry === name).length === 1
              ? Effect.andThen(Deferred.succeed(blocked[name], undefined), Effect.never)
              : Effect.succeed(`${name} done`)
          }))
    })
  return { blocked, keys, ran, tool }
})

describe("Step.execute with a Checkpointer", () => {
  it.effect("an execution cut off mid-step resumes there: no model turn asked again, no completed step run again", () =>
    Effect.gen(function*() {
      const { program, ran, waiting } = yield* pipeline
      const options = { id: "exec-1", toolkit, state: { reviews: 0 } }
      const first = yield* Effect.forkChild(
        execute(Step.execute(program, "Add 2 and 3", options), [addCall(2, 3), answer("5")])
      )
      yield* Deferred.await(waiting)
      yield* Fiber.interrupt(first)

      const { exit, requests } = yield* execute(Step.execute(program, "Add 2 and 3", options), [])
      expect(exit).toStrictEqual(Effect.runSync(Effect.exit(Effect.succeed("REVIEWED: 5"))))
      // The research turns were recorded: nothing was asked. The review ran again (it had not completed), from
      // the state before it: one review is counted, not two.
      expect(requests).toHaveLength(0)
      expect(ran).toStrictEqual(["review", "review", "summary after 1 review"])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a program that ended returns its recorded output at once, running nothing", () =>
    Effect.gen(function*() {
      let runs = 0
      const once = Step.run({ id: "once", execute: (n: number) => (runs++, { doubled: n * 2, at: "2026-11-23" }) })
      const first = yield* Step.execute(once, 21, { id: "exec-2" })
      const again = yield* Step.execute(once, 21, { id: "exec-2" })
      expect(again).toStrictEqual(first)
      expect(runs).toBe(1)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a step's context is restored with it: item log, usage, cost, step count and state", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const inspect = Step.run({
        id: "inspect",
        execute: (_: string, ctx: ExecutionContext) => {
          seen.push({
            items: ctx.itemLog.items.length,
            tokens: ctx.tokens.total,
            steps: ctx.stepCount,
            state: ctx.state,
            meta: ctx.lastStepMeta?.toolCalls?.length
          })
          return "seen"
        }
      })
      const count = Step.run({
        id: "count",
        execute: (text: string, ctx: ExecutionContext) => (ctx.setState({ counted: text.length }), text)
      })
      const program = Step.loop({
        id: "program",
        steps: [Step.llm({ id: "turn", model }), count, inspect],
        until: Until.maxSteps(1)
      })
      const whole = yield* execute(Step.execute(program, "Say hi", { id: "exec-3", state: {} }), [answer("hi")])
      expect(whole.exit._tag).toBe("Success")
      // Forget the last two records, as if the process died after the turn: `count` and `inspect` run again
      // with the context the turn left.
      const checkpoints = yield* Checkpointer.Checkpointer
      const entries = yield* checkpoints.read("exec-3")
      const turnDone = entries.findIndex((entry) => entry.includes("/turn#0"))
      const forgetful = Layer.succeed(Checkpointer.Checkpointer, {
        ...checkpoints,
        open: (id, fingerprint) =>
          Effect.map(
            checkpoints.open(id, fingerprint),
            (log) => ({ ...log, entries: log.entries.slice(0, turnDone + 1) })
          )
      })
      yield* execute(Step.execute(program, "Say hi", { id: "exec-3", state: {} }), []).pipe(Effect.provide(forgetful))
      expect(seen).toHaveLength(2)
      expect(seen[1]).toStrictEqual(seen[0])
      expect(seen[0]).toMatchObject({ items: 2, tokens: usage.total, steps: 2, state: { counted: 2 }, meta: 0 })
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("checkpoint() saves a long step's progress, which it reads back when it runs again", () =>
    Effect.gen(function*() {
      const processed: Array<number> = []
      const halfway = yield* Deferred.make<void>()
      const batch = Step.run({
        id: "batch",
        execute: (items: ReadonlyArray<number>, ctx: ExecutionContext<{ readonly done: number }>) =>
          Effect.gen(function*() {
            for (let i = ctx.state.done; i < items.length; i++) {
              processed.push(items[i]!)
              ctx.setState({ done: i + 1 })
              yield* ctx.checkpoint()
              if (processed.length === 2) yield* Effect.andThen(Deferred.succeed(halfway, undefined), Effect.never)
            }
            return processed.length
          })
      })
      const options = { id: "exec-4", state: { done: 0 } }
      const first = yield* Effect.forkChild(Step.execute(batch, [1, 2, 3, 4], options))
      yield* Deferred.await(halfway)
      yield* Fiber.interrupt(first)
      const total = yield* Step.execute(batch, [1, 2, 3, 4], options)
      expect(processed).toStrictEqual([1, 2, 3, 4])
      expect(total).toBe(4)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("fork paths and sub-agents that completed are not run again", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const stuck = yield* Deferred.make<void>()
      const path = (name: string, hangs: boolean) =>
        Step.run({
          id: name,
          execute: () =>
            Effect.suspend(() => {
              ran.push(name)
              const first = ran.filter((entry) => entry === name).length === 1
              return hangs && first
                ? Effect.andThen(Deferred.succeed(stuck, undefined), Effect.never)
                : Effect.succeed(name)
            })
        })
      const program = Step.fork({
        id: "fork",
        mode: "all",
        paths: () => [path("a", false), Step.spawn({ id: "helper", child: path("b", false) }), path("c", true)],
        merge: (results: ReadonlyArray<string>) => results.join("+")
      })
      const first = yield* Effect.forkChild(Step.execute(program, undefined, { id: "exec-5" }))
      yield* Deferred.await(stuck)
      yield* Fiber.interrupt(first)
      const merged = yield* Step.execute(program, undefined, { id: "exec-5" })
      expect(merged).toBe("a+b+c")
      expect(ran.sort()).toStrictEqual(["a", "b", "c", "c"])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a fork path's checkpoint lands where it was taken, whenever its fiber yields: the item log comes back whole", () =>
    Effect.gen(function*() {
      /** Effect work of `n` operations, two a round. */
      const busy = (n: number): Effect.Effect<void> =>
        n <= 0 ? Effect.void : Effect.flatMap(Effect.void, () => busy(n - 2))
      const texts = (items: ReadonlyArray<Item.Item>) =>
        items.map((item) => item.type === "message" ? item.content.map(Item.partText).join("") : item.type).join(",")
      // Path `a` works `ops` operations, then appends and checkpoints; path `b` appends and completes. A fiber
      // yields once it has run `budget` operations: one execution for each `ops` below it puts that yield at every
      // operation of `a`'s checkpoint, so in some `b` runs while `a` writes.
      const budget = 512
      const a = (ops: number) =>
        Step.run({
          id: "a",
          execute: (_: string, ctx) =>
            Effect.gen(function*() {
              yield* busy(ops)
              ctx.itemLog.append(Item.userMessage("a1"), Item.userMessage("a2"))
              yield* ctx.checkpoint()
              return "a"
            })
        })
      const b = Step.run({ id: "b", execute: (_: string, ctx) => (ctx.itemLog.append(Item.userMessage("b1")), "b") })
      const program = (ops: number) =>
        Step.loop({
          id: "job",
          steps: [
            Step.fork({
              id: "both",
              mode: "all",
              paths: (_: string) => [a(ops), b],
              merge: (outputs) => outputs.join("")
            }),
            Step.run({ id: "report", execute: (_: string, ctx) => texts(ctx.itemLog.items) })
          ],
          until: Until.maxSteps(1)
        })
      const torn: Array<string> = []
      for (let ops = 0; ops < budget; ops += 2) {
        const id = `exec-ordered-${ops}`
        const live = yield* Step.execute(program(ops), "go", { id }).pipe(
          Effect.provideService(Scheduler.MaxOpsBeforeYield, budget)
        )
        // What executing it again would put back: the item log its ledger rebuilds.
        const recorded = texts((yield* StepHistory.stateAt(id, -1)).contexts.get(id)?.items ?? [])
        if (recorded !== live) torn.push(`${ops} operations: ran with ${live}, recorded ${recorded}`)
      }
      expect(torn).toStrictEqual([])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("an output that is not JSON ends the execution with ExecutionCheckpointFailed (and is fine without a Checkpointer)", () =>
    Effect.gen(function*() {
      const dated = Step.run({ id: "dated", execute: () => new Date(0) })
      expect(yield* Step.execute(dated, undefined, { id: "exec-6" })).toStrictEqual(new Date(0))
      const error = yield* Effect.flip(
        Step.execute(dated, undefined, { id: "exec-6" }).pipe(Effect.provide(Checkpointer.layerMemory))
      )
      expect(error).toMatchObject({ _tag: "ExecutionCheckpointFailed", executionId: "exec-6" })
      expect(error.message).toContain("must be JSON")
      // An llm step's output schema writes its output: a Date survives.
      const At = Schema.Struct({ at: Schema.Date })
      const when = Step.llm({ id: "when", model, output: At })
      const { exit } = yield* execute(
        Step.execute(when, "When?", { id: "exec-7" }),
        [answer("{\"at\": \"2026-11-23T00:00:00.000Z\"}")]
      ).pipe(Effect.provide(Checkpointer.layerMemory))
      expect(exit._tag === "Success" && exit.value.at).toBeInstanceOf(Date)
    }))

  it.effect("an execution in progress, or executed with another input, fails with ExecutionCheckpointFailed saying why", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const waits = Step.run({
        id: "waits",
        execute: (n: number) =>
          Effect.andThen(Deferred.succeed(started, undefined), n > 0 ? Effect.never : Effect.succeed(n))
      })
      const first = yield* Effect.forkChild(Step.execute(waits, 1, { id: "exec-9" }))
      yield* Deferred.await(started)
      expect(yield* Effect.flip(Step.execute(waits, 1, { id: "exec-9" }))).toMatchObject({
        _tag: "ExecutionCheckpointFailed",
        executionId: "exec-9",
        cause: { _tag: "RunInProgress" }
      })
      yield* Fiber.interrupt(first)
      expect(yield* Effect.flip(Step.execute(waits, 0, { id: "exec-9" }))).toMatchObject({
        _tag: "ExecutionCheckpointFailed",
        cause: { _tag: "CheckpointMismatch", differences: [{ field: "input" }] }
      })
      expect(yield* Effect.flip(Step.execute(waits, 1, { id: "" }))).toMatchObject({
        _tag: "ExecutionCheckpointFailed",
        cause: { _tag: "InvalidRunId" }
      })
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("an llm step cut off mid-call runs an idempotent call again with the same key, and not a non-idempotent one", () =>
    Effect.gen(function*() {
      const { blocked, keys, ran, tool } = yield* blockingTools
      const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
      const options = { id: "exec-9", toolkit: Toolkit.make(tool("charge", false), tool("lookup", true)) }
      const call = (name: string) =>
        MockLanguageModel.callsTurn([{ name, arguments: {}, callId: `call_${name}` }], { model, usage })

      // Turn 1 looks up, cut off; the resumed execution looks up again and goes on to turn 2, which charges.
      const first = yield* Effect.forkChild(execute(Step.execute(agent, "Buy", options), [call("lookup")]))
      yield* Deferred.await(blocked.lookup)
      yield* Fiber.interrupt(first)
      const second = yield* Effect.forkChild(execute(Step.execute(agent, "Buy", options), [call("charge")]))
      yield* Deferred.await(blocked.charge)
      yield* Fiber.interrupt(second)
      expect(ran).toStrictEqual(["lookup", "lookup", "charge"])
      expect(keys[1]).toBe(keys[0])
      expect(keys[2]).toMatch(/^[0-9a-f]{32}$/)
      expect(keys[2]).not.toBe(keys[0])

      // Charge, not idempotent, is not run again: the model reads that its outcome is unknown.
      const { exit, requests } = yield* execute(Step.execute(agent, "Buy", options), [answer("Checking first")])
      expect(exit).toStrictEqual(Effect.runSync(Effect.exit(Effect.succeed("Checking first"))))
      expect(ran).toStrictEqual(["lookup", "lookup", "charge"])
      expect(requests).toHaveLength(1)
      const told = requests[0]!.history.flatMap((item) => item.type === "function_call_output" ? [item.output] : [])
      expect(told[0]).toBe("\"lookup done\"")
      expect(JSON.parse(told[1]!).error).toContain(
        "not idempotent, was not run again: whether it took effect is unknown"
      )
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a tool step cut off mid-call runs again with the same key when idempotent, and fails when not", () =>
    Effect.gen(function*() {
      const { blocked, keys, ran, tool } = yield* blockingTools
      const step = (name: "charge" | "lookup", idempotent: boolean) =>
        Step.tool({ id: name, args: {}, tool: tool(name, idempotent) })
      const cutOff = (name: "charge" | "lookup", idempotent: boolean) =>
        Effect.gen(function*() {
          const first = yield* Effect.forkChild(Step.execute(step(name, idempotent), {}, { id: `exec-${name}` }))
          yield* Deferred.await(blocked[name])
          yield* Fiber.interrupt(first)
          return yield* Effect.exit(Step.execute(step(name, idempotent), {}, { id: `exec-${name}` }))
        })

      // Idempotent: run again, with the same key.
      expect(yield* cutOff("lookup", true)).toStrictEqual(Effect.runSync(Effect.exit(Effect.succeed("lookup done"))))
      expect(ran).toStrictEqual(["lookup", "lookup"])
      expect(keys[0]).toMatch(/^[0-9a-f]{32}$/)
      expect(keys[1]).toBe(keys[0])

      // Not idempotent: not run again; the step fails, saying its outcome is unknown.
      const exit = yield* cutOff("charge", false)
      expect(ran).toStrictEqual(["lookup", "lookup", "charge"])
      const error = exit._tag === "Failure" ? exit.cause.reasons[0] : undefined
      expect(error).toMatchObject({ error: { _tag: "StepFailed", stepId: "charge" } })
      expect(error?._tag === "Fail" && error.error.message).toContain(
        "not idempotent, was not run again: whether it took effect is unknown"
      )
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("entries carry what changed: the item log is written once, and a turn repeats only what it showed", () =>
    Effect.gen(function*() {
      const agentOnly = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
      const question = "a long question ".repeat(100)
      yield* execute(
        Step.execute(agentOnly, question, { id: "exec-8", toolkit }),
        [addCall(1, 1), addCall(1, 2), addCall(1, 3), answer("done")]
      )
      const entries = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("exec-8"))
      // The first step's entry writes the question; the first turn's holds it too, among the last items its
      // `TurnCompleted` showed that no entry held yet (at most the 10 it shows), so that it replays as streamed.
      const holding = entries.filter((entry) => entry.includes("a long question"))
      expect(holding.map((entry) => JSON.parse(entry)._tag)).toStrictEqual(["Answered", "Completed"])
      expect(entries.filter((entry) => entry.includes("\"Answered\""))).toHaveLength(4)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))
})
