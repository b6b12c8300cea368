import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Step from "../src/step/Step.ts"
import * as StepError from "../src/step/StepError.ts"

class Lost extends Schema.TaggedError<Lost>()("Lost", { path: Schema.String }) {}

/** A path that waits `ms` on the test clock, then answers `value`, logging its end and its finalizer. */
const after = (id: string, ms: number, value: string, log: Array<string>) =>
  Step.run({
    id,
    execute: () =>
      Effect.sleep(Duration.millis(ms)).pipe(
        Effect.as(value),
        Effect.tap(() => Effect.sync(() => log.push(`${id} done`))),
        Effect.onInterrupt(() => Effect.sync(() => log.push(`${id} interrupted`))),
        Effect.ensuring(Effect.sync(() => log.push(`${id} finalized`)))
      )
  })

const failing = (id: string, ms: number) =>
  Step.run({
    id,
    execute: () => Effect.sleep(Duration.millis(ms)).pipe(Effect.andThen(Effect.fail(new Lost({ path: id }))))
  })

/** Runs `effect` on the test clock, moving it on by `ms`. */
const onClock = <A, E>(effect: Effect.Effect<A, E>, ms: number) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(Effect.exit(effect))
    yield* TestClock.adjust(Duration.millis(ms))
    return yield* Fiber.join(fiber)
  })

describe("Step.fork race", () => {
  it.effect("the first success wins; the losers are interrupted and finalized before the fork returns", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const race = Step.fork({
        id: "race",
        mode: "race",
        paths: () => [after("slow", 500, "slow answer", log), after("fast", 100, "fast answer", log)]
      })
      const exit = yield* onClock(
        Step.execute(race, undefined).pipe(Effect.tap(() => Effect.sync(() => log.push("fork returned")))),
        1000
      )
      expect(exit).toStrictEqual(Exit.succeed("fast answer"))
      expect(log).toStrictEqual(["fast done", "fast finalized", "slow interrupted", "slow finalized", "fork returned"])
    }))

  it.effect("race: the first path to end wins even when it fails, as the seed says; the others are interrupted", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const oneFails = Step.fork({
        id: "race",
        mode: "race",
        paths: () => [failing("broken", 10), after("steady", 100, "steady answer", log)]
      })
      expect(yield* onClock(Step.execute(oneFails, undefined), 1000)).toStrictEqual(
        Exit.fail(new Lost({ path: "broken" }))
      )
      expect(log).toStrictEqual(["steady interrupted", "steady finalized"])
    }))

  it.effect("firstSuccess: a failed path does not end the race; it fails only when every path fails", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const oneFails = Step.fork({
        id: "race",
        mode: "firstSuccess",
        paths: () => [failing("broken", 10), after("steady", 100, "steady answer", log)]
      })
      expect(yield* onClock(Step.execute(oneFails, undefined), 1000)).toStrictEqual(Exit.succeed("steady answer"))
      const allFail = Step.fork({ id: "race", mode: "firstSuccess", paths: () => [failing("a", 10), failing("b", 20)] })
      const exit = yield* onClock(Step.execute(allFail, undefined), 1000)
      expect(Exit.isFailure(exit) && exit.cause.reasons.map((reason) => reason._tag === "Fail" && reason.error))
        .toStrictEqual([new Lost({ path: "a" }), new Lost({ path: "b" })])
    }))

  it.effect("concurrency bounds the paths in flight", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const race = Step.fork({
        id: "race",
        mode: "firstSuccess",
        concurrency: 1,
        paths: () => [failing("first", 100), after("second", 100, "second answer", log)]
      })
      const fiber = yield* Effect.forkChild(Step.execute(race, undefined))
      yield* TestClock.adjust(Duration.millis(150))
      // With one path at a time, the second has only waited 50 ms of its 100.
      expect(log).toStrictEqual([])
      yield* TestClock.adjust(Duration.millis(50))
      expect(yield* Fiber.join(fiber)).toBe("second answer")
    }))

  it.effect("paths that are not steps fail with InvalidStep before any path runs", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const answers: ReadonlyArray<unknown> = [
        undefined,
        null,
        "fast",
        {},
        [after("fast", 10, "fast answer", log), undefined],
        [after("fast", 10, "fast answer", log), {}]
      ]
      for (const answer of answers) {
        for (const mode of ["race", "firstSuccess"] as const) {
          const fork = Step.fork({ id: "pick", mode, paths: () => answer as never })
          const exit = yield* onClock(Step.execute(fork, undefined), 100)
          expect(Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail" && exit.cause.reasons[0].error)
            .toMatchObject({ _tag: "InvalidStep", stepId: "pick" })
        }
        const all = Step.fork({ id: "pick", mode: "all", paths: () => answer as never, merge: (results) => results })
        const error = yield* Effect.flip(Step.execute(all, undefined))
        expect(error).toMatchObject({ _tag: "InvalidStep", stepId: "pick" })
      }
      expect(log).toStrictEqual([])
    }))

  it.effect("a race without paths is an InvalidStep", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Step.execute(Step.fork({ id: "empty", mode: "race", paths: () => [] }), undefined)
      )
      expect(error).toBeInstanceOf(StepError.InvalidStep)
    }))
})

describe("Step.fork all", () => {
  it.effect("merges the outputs in path order, whatever order they finish in", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const all = Step.fork({
        id: "all",
        mode: "all",
        paths: (
          topic: string
        ) => [after("late", 300, `${topic}: late`, log), after("early", 100, `${topic}: early`, log)],
        merge: (results) => results.join(" | ")
      })
      expect(yield* onClock(Step.execute(all, "news"), 1000)).toStrictEqual(Exit.succeed("news: late | news: early"))
      expect(log.filter((line) => line.endsWith("done"))).toStrictEqual(["early done", "late done"])
    }))

  it.effect("the first failure interrupts the other paths", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const all = Step.fork({
        id: "all",
        mode: "all",
        paths: () => [after("long", 1000, "never", log), failing("broken", 100)],
        merge: (results) => results.length
      })
      const exit = yield* onClock(Effect.flip(Step.execute(all, undefined)), 2000)
      expect(exit).toStrictEqual(Exit.succeed(new Lost({ path: "broken" })))
      expect(log).toStrictEqual(["long interrupted", "long finalized"])
    }))

  it.effect("a merge that rejects fails with StepFailed; a concurrency of 0 is an InvalidOptions", () =>
    Effect.gen(function*() {
      const rejecting = Step.fork({
        id: "all",
        mode: "all",
        paths: () => [Step.run({ id: "one", execute: () => 1 })],
        merge: () => Promise.reject(new Error("cannot merge"))
      })
      expect(yield* Effect.flip(Step.execute(rejecting, undefined))).toMatchObject({
        _tag: "StepFailed",
        stepId: "all"
      })
      const zero = Step.fork({
        id: "zero",
        mode: "all",
        concurrency: 0,
        paths: () => [Step.run({ id: "one", execute: () => 1 })],
        merge: (results) => results
      })
      expect(yield* Effect.flip(Step.execute(zero, undefined))).toMatchObject({
        _tag: "InvalidOptions",
        stepId: "zero",
        field: "concurrency",
        value: "0"
      })
    }))
})

describe("Step.fork settle", () => {
  it.effect("merges every outcome as a SettleResult, in path order", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const settle = Step.fork({
        id: "settle",
        mode: "settle",
        paths: () => [failing("broken", 100), after("fine", 50, "fine answer", log)],
        merge: (results) => results
      })
      const exit = yield* onClock(Step.execute(settle, undefined), 1000)
      expect(exit).toStrictEqual(Exit.succeed([
        { stepId: "broken", status: "rejected", error: new Lost({ path: "broken" }) },
        { stepId: "fine", status: "fulfilled", value: "fine answer" }
      ]))
    }))
})

describe("abort", () => {
  it.effect("an abort in the middle of a fork interrupts every path, runs their finalizers, and fails with Aborted", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const program = Step.fork({
        id: "work",
        mode: "all",
        paths: () => [
          after("slow", 10_000, "slow", log),
          Step.run({
            id: "watchdog",
            execute: (_: unknown, ctx) =>
              Effect.sleep(Duration.millis(100)).pipe(
                Effect.andThen(Effect.sync(() => ctx.abort("the user cancelled")))
              )
          })
        ],
        merge: (results) => results.length
      })
      const exit = yield* onClock(Effect.flip(Step.execute(program, undefined, { id: "job-1" })), 200)
      expect(exit).toStrictEqual(
        Exit.succeed(new StepError.Aborted({ contextId: "job-1", reason: "the user cancelled" }))
      )
      expect(log).toStrictEqual(["slow interrupted", "slow finalized"])
    }))

  it.effect("the context says it was aborted, and why", () =>
    Effect.gen(function*() {
      const seen: Array<[boolean, string | undefined]> = []
      const program = Step.run({
        id: "quit",
        execute: (_: unknown, ctx) =>
          Effect.gen(function*() {
            seen.push([ctx.aborted, ctx.abortReason])
            ctx.abort("done here")
            seen.push([ctx.aborted, ctx.abortReason])
            yield* Effect.never
          })
      })
      const error = yield* Effect.flip(Step.execute(program, undefined))
      expect(error).toBeInstanceOf(StepError.Aborted)
      expect(error.message).toContain("done here")
      expect(seen).toStrictEqual([[false, undefined], [true, "done here"]])
    }))
})
