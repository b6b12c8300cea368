import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Item from "../src/Item.ts"
import type { Snapshot } from "../src/Snapshot.ts"
import * as Channel from "../src/step/Channel.ts"
import type { ExecutionContext } from "../src/step/ExecutionContext.ts"
import * as ItemLog from "../src/step/ItemLog.ts"
import * as Step from "../src/step/Step.ts"
import * as StepError from "../src/step/StepError.ts"
import * as Until from "../src/Until.ts"
import * as Verdict from "../src/Verdict.ts"
import { lookupCall, lookupOutput } from "./fixtures.ts"

class Flaky extends Schema.TaggedError<Flaky>()("Flaky", { attempt: Schema.Int }) {}

const increment = Step.run({ id: "increment", execute: (n: number) => n + 1 })

const call = lookupCall
const output = (id: string) => lookupOutput(id)

describe("Step.loop", () => {
  it.effect("asks until with a snapshot of the iterations; ctx.stepCount counts steps", () =>
    Effect.gen(function*() {
      const seen: Array<Snapshot> = []
      const counts: Array<number> = []
      const program = Step.loop({
        id: "count",
        steps: [
          increment,
          Step.run({ id: "note", execute: (n: number, ctx) => (counts.push(ctx.stepCount), n) })
        ],
        until: (snapshot) => {
          seen.push(snapshot)
          return snapshot.stepCount >= 3 ? Verdict.stop("three") : Verdict.continue()
        }
      })
      expect(yield* Step.execute(program, 10, { id: "run-7" })).toBe(13)
      expect(seen.map((s) => [s.stepCount, s.lastOutput, s.lastText, s.history, s.runId, s.depth])).toStrictEqual([
        [1, 11, "11", [11], "run-7/count", 0],
        [2, 12, "12", [11, 12], "run-7/count", 0],
        [3, 13, "13", [11, 12, 13], "run-7/count", 0]
      ])
      // Two steps per iteration: the note sees the increments before it, and itself not yet.
      expect(counts).toStrictEqual([1, 3, 5])
    }))

  it.effect("a verdict's feedback goes into the item log as a user message", () =>
    Effect.gen(function*() {
      const program = Step.loop({
        id: "review",
        steps: [Step.run({ id: "items", execute: (_: string, ctx) => ctx.itemLog.items.length.toString() })],
        until: (snapshot) => snapshot.stepCount >= 2 ? Verdict.stop("done") : Verdict.continue("Shorter, please.")
      })
      const log = Step.loop({
        id: "outer",
        steps: [program, Step.run({ id: "log", execute: (_: string, ctx) => ctx.itemLog.items })],
        prepareNext: () => "again",
        until: () => Verdict.stop("once")
      })
      expect(yield* Step.execute(log, "Draft a summary.")).toStrictEqual([
        Item.userMessage("Draft a summary."),
        Item.userMessage("Shorter, please.", "feedback_1")
      ])
    }))

  it.effect("maxIterations is a safety limit: the loop ends with its last output, and says why", () =>
    Effect.gen(function*() {
      const forever = Step.loop({
        id: "forever",
        steps: [increment],
        until: () => Verdict.continue(),
        maxIterations: 4
      })
      expect(yield* Step.execute(forever, 0)).toBe(4)
      const events = yield* Stream.runCollect(Step.stream(forever, 0))
      expect(events.filter((event) => event._tag === "LoopEnded")).toStrictEqual([
        {
          _tag: "LoopEnded",
          stepId: "forever",
          kind: "loop",
          contextId: expect.any(String),
          reason: "maxIterations",
          iterations: 4
        }
      ])
      const stopped = Step.loop({ id: "stopped", steps: [increment], until: Until.maxSteps(2) })
      const ended = (yield* Stream.runCollect(Step.stream(stopped, 0))).filter((event) => event._tag === "LoopEnded")
      expect(ended).toMatchObject([{ reason: "until", iterations: 2 }])
    }))

  it.effect("a loop that sets no limit stops at Step.defaultMaxIterations; Infinity lifts it", () =>
    Effect.gen(function*() {
      expect(Step.defaultMaxIterations).toBe(50)
      const unbounded = Step.loop({ id: "counting", steps: [increment], until: () => Verdict.continue() })
      expect(yield* Step.execute(unbounded, 0)).toBe(50)
      const lifted = Step.loop({
        id: "lifted",
        steps: [increment],
        until: (snapshot) => snapshot.stepCount >= 120 ? Verdict.stop("enough") : Verdict.continue(),
        maxIterations: Infinity
      })
      const seen: Array<number> = []
      const watched = Step.loop({
        id: "watched",
        steps: [increment],
        until: (
          snapshot
        ) => (seen.push(snapshot.history.length),
          snapshot.stepCount >= 120 ? Verdict.stop("enough") : Verdict.continue()),
        maxIterations: 200
      })
      expect(yield* Step.execute(lifted, 0)).toBe(120)
      expect(yield* Step.execute(watched, 0)).toBe(120)
      // The snapshot's history keeps the last 100 outputs.
      expect([seen[0], seen[99], seen[119]]).toStrictEqual([1, 100, 100])
    }))

  it.effect("a limit, a duration or a predicate that cannot work is an InvalidOptions, before anything runs", () =>
    Effect.gen(function*() {
      let ran = 0
      const counted = Step.run({ id: "counted", execute: (n: number) => (ran++, n) })
      // Inside a loop whose first step would run if anything ran before the check.
      const refused = (loop: Step.Step<number, number, unknown>) =>
        Effect.flip(Step.execute(Step.loop({ id: "outer", steps: [counted, loop], until: Until.maxSteps(1) }), 0))
      expect(yield* refused(Step.loop({ id: "zero", steps: [increment], until: Until.maxSteps(1), maxIterations: 0 })))
        .toMatchObject({ _tag: "InvalidOptions", stepId: "zero", field: "maxIterations", value: "0" })
      expect(
        yield* refused(Step.loop({ id: "negative", steps: [increment], until: Until.maxSteps(1), parkTimeout: -1 }))
      )
        .toMatchObject({ _tag: "InvalidOptions", stepId: "negative", field: "parkTimeout", value: "-1" })
      expect(yield* refused(Step.loop({ id: "soon", steps: [increment], until: Until.maxDuration(-5) })))
        .toMatchObject({ _tag: "InvalidOptions", field: "Until.maxDuration(limit)", value: "-5" })
      expect(yield* refused(Step.loop({ id: "empty", steps: [] as never, until: Until.maxSteps(1) })))
        .toMatchObject({ _tag: "InvalidOptions", stepId: "empty", field: "steps" })
      expect(yield* refused(Step.loop({ id: "a/b", steps: [increment], until: Until.maxSteps(1) })))
        .toMatchObject({ _tag: "InvalidOptions", stepId: "a/b", field: "id" })
      expect(ran).toBe(0)
    }))

  it.effect("maxHistorySize keeps the newest items, never an output without its call", () =>
    Effect.gen(function*() {
      const tool = Step.run({
        id: "tool",
        execute: (n: number, ctx) => {
          ctx.itemLog.append(call(`c${n}`), call(`d${n}`), output(`c${n}`), output(`d${n}`))
          return n + 1
        }
      })
      const program = Step.loop({
        id: "trimmed",
        steps: [tool],
        until: Until.maxSteps(3),
        maxHistorySize: 3
      })
      const check = Step.loop({
        id: "outer",
        steps: [
          program,
          Step.run({ id: "ids", execute: (_: number, ctx) => ctx.itemLog.items.map((item) => item.id) })
        ],
        prepareNext: () => 0,
        until: () => Verdict.stop("once")
      })
      // Trimmed before the third iteration to the newest 3 of the second's four items, less
      // the output whose call was cut (c1): then the third's four.
      expect(yield* Step.execute(check, 0)).toStrictEqual(["fc_d1", "fco_d1", "fc_c2", "fc_d2", "fco_c2", "fco_d2"])
    }))

  it.effect("prepareNext maps an iteration's output and verdict to the next input", () =>
    Effect.gen(function*() {
      const program = Step.loop({
        id: "strings",
        steps: [Step.run({ id: "length", execute: (text: string) => text.length })],
        prepareNext: (length, verdict) => `${"x".repeat(length * 2)}${verdict.stop ? "!" : ""}`,
        until: (snapshot) => snapshot.stepCount >= 3 ? Verdict.stop("enough") : Verdict.continue()
      })
      expect(yield* Step.execute(program, "ab")).toBe(8)
    }))

  describe("onError", () => {
    const flaky = (failUntil: number) => {
      let attempt = 0
      return Step.run({
        id: "flaky",
        execute: (n: number) => {
          attempt++
          return attempt < failUntil ? Effect.fail(new Flaky({ attempt })) : Effect.succeed(n + attempt)
        }
      })
    }

    it.effect("retry runs the iteration again, counted toward maxIterations", () =>
      Effect.gen(function*() {
        const errors: Array<number> = []
        const retried = Step.loop({
          id: "retried",
          steps: [flaky(3)],
          until: Until.maxSteps(1),
          onError: (error) => (errors.push(error._tag === "Flaky" ? error.attempt : -1), "retry")
        })
        expect(yield* Step.execute(retried, 100)).toBe(103)
        expect(errors).toStrictEqual([1, 2])
        const bounded = Step.loop({
          id: "bounded",
          steps: [flaky(10)],
          until: Until.maxSteps(1),
          maxIterations: 3,
          onError: () => "retry"
        })
        expect(yield* Effect.flip(Step.execute(bounded, 0))).toBeInstanceOf(StepError.MaxIterations)
      }))

    it.effect("skip counts the failed iteration as done and goes on to the next, on the same input", () =>
      Effect.gen(function*() {
        const doubling = () => {
          let attempt = 0
          return Step.run({
            id: "double",
            execute: (n: number) => ++attempt === 2 ? Effect.fail(new Flaky({ attempt })) : Effect.succeed(n * 2)
          })
        }
        const seen: Array<[number, ReadonlyArray<unknown>]> = []
        const until = (
          snapshot: Snapshot
        ) => (seen.push([snapshot.stepCount, snapshot.history]), Until.maxSteps(3)(snapshot))
        const skipped = Step.loop({ id: "skipped", steps: [doubling()], until, onError: () => "skip" })
        // 1 → 2, a skipped iteration, then 2 → 4: three iterations.
        expect(yield* Step.execute(skipped, 1)).toBe(4)
        expect(seen).toStrictEqual([[1, [2]], [3, [2, 4]]])
        // A retry runs the iteration again instead: 1 → 2, a retried failure, 2 → 4, 4 → 8.
        const retried = Step.loop({
          id: "retried",
          steps: [doubling()],
          until: Until.maxSteps(3),
          onError: () => "retry"
        })
        expect(yield* Step.execute(retried, 1)).toBe(8)
      }))

    it.effect("abort (the default) fails the loop with the iteration's error", () =>
      Effect.gen(function*() {
        const aborted = Step.loop({ id: "aborted", steps: [flaky(2)], until: Until.maxSteps(1) })
        expect(yield* Effect.flip(Step.execute(aborted, 100))).toStrictEqual(new Flaky({ attempt: 1 }))
        const explicit = Step.loop({
          id: "explicit",
          steps: [flaky(2)],
          until: Until.maxSteps(1),
          onError: async () => "abort" as const
        })
        expect(yield* Effect.flip(Step.execute(explicit, 100))).toStrictEqual(new Flaky({ attempt: 1 }))
      }))

    it.effect("an answer that is none of the three is an InvalidStep; a throwing onError a StepFailed", () =>
      Effect.gen(function*() {
        // An answer from outside the type system, say a person's.
        const unchecked: (error: unknown) => Step.OnError = () => JSON.parse(`"again"`)
        const invalid = Step.loop({ id: "invalid", steps: [flaky(2)], until: Until.maxSteps(1), onError: unchecked })
        expect(yield* Effect.flip(Step.execute(invalid, 0))).toMatchObject({ _tag: "InvalidStep", stepId: "invalid" })
        const throwing = Step.loop({
          id: "throwing",
          steps: [flaky(2)],
          until: Until.maxSteps(1),
          onError: (): Step.OnError => {
            throw new Error("handler bug")
          }
        })
        expect(yield* Effect.flip(Step.execute(throwing, 0))).toMatchObject({ _tag: "StepFailed", stepId: "throwing" })
      }))
  })

  describe("inbox", () => {
    const chat = (inbox: Channel.Channel<string>, parkTimeout?: number) =>
      Step.loop({
        id: "chat",
        steps: [
          Step.run({
            id: "reply",
            execute: (_: string, ctx) => {
              const last = ctx.itemLog.items.at(-1)
              return last?.type === "message" ? `re: ${Item.partText(last.content[0]!)}` : "?"
            }
          })
        ],
        until: () => Verdict.stop("answered"),
        inbox,
        parkTimeout
      })

    it.effect("a message already waiting when the predicate says stop keeps the loop going", () =>
      Effect.gen(function*() {
        const inbox = yield* Channel.make("inbox", Schema.String)
        yield* Channel.send(inbox, "and one more thing")
        expect(yield* Step.execute(chat(inbox), "hello")).toBe("re: and one more thing")
        expect(yield* Step.execute(chat(inbox), "hello")).toBe("re: hello")
      }))

    it.effect("with parkTimeout, a message arriving in time keeps it going; none, and it stops when the time is up", () =>
      Effect.gen(function*() {
        const inbox = yield* Channel.make<string>("inbox")
        const fiber = yield* Effect.forkChild(Step.execute(chat(inbox, 1000), "hello"))
        yield* TestClock.adjust(Duration.millis(500))
        yield* Channel.send(inbox, "still there?")
        yield* TestClock.adjust(Duration.millis(999))
        expect(fiber.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust(Duration.millis(1))
        expect(yield* Fiber.join(fiber)).toBe("re: still there?")
      }))
  })

  describe("complete", () => {
    it.effect("ends the innermost loop at once with the value; the outer loop goes on", () =>
      Effect.gen(function*() {
        const after: Array<string> = []
        const inner = Step.loop({
          id: "inner",
          steps: [
            Step.run({ id: "finish", execute: (n: number, ctx) => (ctx.complete(n * 100), n) }),
            Step.run({ id: "never", execute: (n: number) => (after.push("inner went on"), n) })
          ],
          until: () => Verdict.continue()
        })
        const outer = Step.loop({
          id: "outer",
          steps: [inner, Step.run({ id: "seen", execute: (n: number, ctx) => ({ n, completed: ctx.completed }) })],
          prepareNext: ({ n }) => n,
          until: Until.maxSteps(1)
        })
        expect(yield* Step.execute(outer, 3)).toStrictEqual({ n: 300, completed: false })
        expect(after).toStrictEqual([])
      }))

    it.effect("from a path of a fork, interrupts the other paths", () =>
      Effect.gen(function*() {
        const log: Array<string> = []
        const finder = Step.loop({
          id: "search",
          steps: [
            Step.fork({
              id: "both",
              mode: "all",
              paths: (query: string) => [
                Step.run({
                  id: "quick",
                  execute: (_: string, ctx: ExecutionContext) => (ctx.complete(`found ${query}`), "quick")
                }),
                Step.run({
                  id: "slow",
                  execute: () => Effect.never.pipe(Effect.ensuring(Effect.sync(() => log.push("slow finalized"))))
                })
              ],
              merge: (results) => results.join()
            })
          ],
          until: () => Verdict.continue()
        })
        expect(yield* Step.execute(finder, "needle")).toBe("found needle")
        expect(log).toStrictEqual(["slow finalized"])
      }))
  })
})

describe("ItemLog", () => {
  it("keeps the newest items and drops an output whose call was cut", () => {
    const items = [Item.userMessage("q"), call("a"), call("b"), output("a"), output("b"), Item.assistantMessage("done")]
    expect(ItemLog.newest(items, 10)).toBe(items)
    expect(ItemLog.newest(items, 4).map((item) => item.id)).toStrictEqual(["fc_b", "fco_b", "assistant"])
    expect(ItemLog.newest(items, 0)).toStrictEqual([])
  })

  it("appends without changing an array already read", () => {
    const log = ItemLog.make([Item.userMessage("q")])
    const before = log.items
    log.append(Item.assistantMessage("a"))
    expect(before).toHaveLength(1)
    expect(log.items).toHaveLength(2)
  })
})
