import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Channel from "../src/step/Channel.ts"
import * as Step from "../src/step/Step.ts"

class Down extends Schema.TaggedError<Down>()("Down", { at: Schema.Finite }) {}

const now = Effect.clockWith((clock) => Effect.succeed(clock.currentTimeMillisUnsafe()))

/** A step that notes the time it ran at, and fails when `fails` says so. */
const probe = (times: Array<number>, fails: (at: number) => boolean = () => false) =>
  Step.run({
    id: "probe",
    execute: () =>
      Effect.flatMap(now, (at) => {
        times.push(at)
        return fails(at) ? Effect.fail(new Down({ at })) : Effect.succeed(at)
      })
  })

describe("Step.every", () => {
  it.effect("runs its step, parks ms, and runs it again until interrupted", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const fiber = yield* Effect.forkChild(
        Step.execute(Step.every({ id: "poll", ms: 100, step: probe(times) }), undefined)
      )
      yield* TestClock.adjust(Duration.millis(350))
      yield* Fiber.interrupt(fiber)
      expect(times).toStrictEqual([0, 100, 200, 300])
    }))

  it.effect("parks ms plus up to jitter ms", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const fiber = yield* Effect.forkChild(
        Step.execute(Step.every({ id: "poll", ms: 100, jitter: 50, step: probe(times) }), undefined)
      )
      yield* TestClock.adjust(Duration.seconds(2))
      yield* Fiber.interrupt(fiber)
      const gaps = times.slice(1).map((at, i) => at - times[i]!)
      expect(gaps.length).toBeGreaterThanOrEqual(13)
      for (const gap of gaps) {
        expect(gap).toBeGreaterThanOrEqual(100)
        expect(gap).toBeLessThanOrEqual(150)
      }
    }))

  it.effect("a value on wakeOn ends the park at once", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const wake = yield* Channel.make<"now">("wake")
      const fiber = yield* Effect.forkChild(
        Step.execute(Step.every({ id: "poll", ms: 1000, wakeOn: wake, step: probe(times) }), undefined)
      )
      yield* TestClock.adjust(Duration.millis(300))
      yield* Channel.send(wake, "now")
      yield* TestClock.adjust(Duration.millis(1))
      yield* TestClock.adjust(Duration.millis(1000))
      yield* Fiber.interrupt(fiber)
      expect(times).toStrictEqual([0, 300, 1300])
    }))

  it.effect("records a failed run, as an event and in the context, and goes on", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const errors: Array<unknown> = []
      const program = Step.fork({
        id: "watch",
        mode: "race",
        paths: () => [
          Step.every({ id: "poll", ms: 100, step: probe(times, (at) => at === 100 || at === 200) }),
          Step.run({
            id: "deadline",
            execute: (_: unknown, ctx) =>
              Effect.sleep(Duration.millis(250)).pipe(
                Effect.andThen(Effect.sync(() => (errors.push(...ctx.errors), "stopped")))
              )
          })
        ]
      })
      const fiber = yield* Effect.forkChild(Stream.runCollect(Step.stream(program, undefined)))
      yield* TestClock.adjust(Duration.millis(300))
      const events = yield* Fiber.join(fiber)
      expect(events.at(-1)).toStrictEqual({ _tag: "Output", value: "stopped" })
      expect(times).toStrictEqual([0, 100, 200])
      expect(errors).toStrictEqual([
        { stepId: "poll", error: { tag: "Down", message: "" }, elapsed: 100 },
        { stepId: "poll", error: { tag: "Down", message: "" }, elapsed: 200 }
      ])
      expect(events.filter((event) => event._tag === "Recorded")).toStrictEqual([
        {
          _tag: "Recorded",
          stepId: "poll",
          kind: "every",
          contextId: expect.any(String),
          error: { tag: "Down", message: "" }
        },
        {
          _tag: "Recorded",
          stepId: "poll",
          kind: "every",
          contextId: expect.any(String),
          error: { tag: "Down", message: "" }
        }
      ])
    }))

  it.effect("with onError fail, a failed run fails the step", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const fiber = yield* Effect.forkChild(Effect.flip(Step.execute(
        Step.every({ id: "poll", ms: 100, onError: "fail", step: probe(times, (at) => at === 200) }),
        undefined
      )))
      yield* TestClock.adjust(Duration.millis(500))
      expect(yield* Fiber.join(fiber)).toStrictEqual(new Down({ at: 200 }))
    }))

  it.effect("a negative ms or jitter is an InvalidOptions, before anything runs", () =>
    Effect.gen(function*() {
      const times: Array<number> = []
      const negativeMs = yield* Effect.flip(
        Step.execute(Step.every({ id: "a", ms: -1, step: probe(times) }), undefined)
      )
      expect(negativeMs).toMatchObject({ _tag: "InvalidOptions", stepId: "a", field: "ms", value: "-1" })
      expect(negativeMs.message).toBe("step \"a\": ms must be a finite number of at least 0, not -1")
      const negativeJitter = yield* Effect.flip(
        Step.execute(Step.every({ id: "b", ms: 10, jitter: -5, step: probe(times) }), undefined)
      )
      expect(negativeJitter).toMatchObject({ _tag: "InvalidOptions", field: "jitter", value: "-5" })
      expect(times).toStrictEqual([])
    }))
})
