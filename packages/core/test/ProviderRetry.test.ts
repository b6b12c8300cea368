import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Schedule, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as AiError from "../src/AiError.ts"
import * as ProviderRetry from "../src/provider/ProviderRetry.ts"

const unavailable = new AiError.Unavailable({ provider: "test", message: "down" })

/** A stream whose nth run (from 0) does what `runs[n]` says, counting runs. */
const scripted = (runs: ReadonlyArray<Stream.Stream<number, AiError.AiError>>) => {
  let count = 0
  const stream = Stream.suspend(() => runs[count++] ?? Stream.fail(unavailable))
  return { stream, count: () => count }
}

describe("ProviderRetry.retry", () => {
  it.effect("re-runs a stream that failed with a retryable error before emitting", () =>
    Effect.gen(function*() {
      const { count, stream } = scripted([Stream.fail(unavailable), Stream.make(1, 2)])
      const fiber = yield* Effect.forkChild(Stream.runCollect(ProviderRetry.retry(stream)))
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(fiber)).toStrictEqual([1, 2])
      expect(count()).toBe(2)
    }))

  it.effect("never re-runs once an element reached the consumer", () =>
    Effect.gen(function*() {
      const { count, stream } = scripted([Stream.concat(Stream.make(1), Stream.fail(unavailable)), Stream.make(1, 2)])
      const exit = yield* Effect.exit(Stream.runCollect(ProviderRetry.retry(stream, { policy: Schedule.forever })))
      expect(exit).toStrictEqual(Exit.fail(unavailable))
      expect(count()).toBe(1)
    }))

  it.effect("never re-runs an error no retry can help: auth, quota, a bad request", () =>
    Effect.gen(function*() {
      for (
        const error of [
          new AiError.AuthFailed({ provider: "test", status: 401, message: "no" }),
          new AiError.QuotaExceeded({ provider: "test", status: 429, message: "no credit" }),
          new AiError.InvalidRequest({ provider: "test", status: 400, message: "bad" })
        ]
      ) {
        const { count, stream } = scripted([Stream.fail(error), Stream.make(1)])
        const exit = yield* Effect.exit(
          Stream.runCollect(stream.pipe(ProviderRetry.retry({ policy: Schedule.forever })))
        )
        expect(exit).toStrictEqual(Exit.fail(error))
        expect(count()).toBe(1)
      }
    }))

  for (
    const error of [
      new AiError.RateLimited({ provider: "test", message: "429", retryAfter: Duration.seconds(20) }),
      new AiError.Unavailable({ provider: "test", message: "503", retryAfter: Duration.seconds(20) })
    ]
  ) {
    it.effect(`waits at least a ${error._tag}'s retryAfter, even when the policy asks for less`, () =>
      Effect.gen(function*() {
        const { count, stream } = scripted([Stream.fail(error), Stream.make(1)])
        const fiber = yield* Effect.forkChild(
          Stream.runCollect(ProviderRetry.retry(stream, { policy: Schedule.spaced("1 second") }))
        )
        yield* TestClock.adjust("19 seconds")
        expect(count()).toBe(1)
        yield* TestClock.adjust("1 second")
        expect(yield* Fiber.join(fiber)).toStrictEqual([1])
        expect(count()).toBe(2)
      }))
  }

  it.effect("fails at once, keeping retryAfter, when the wait asked for is over maxRetryAfter", () =>
    Effect.gen(function*() {
      const asked = new AiError.RateLimited({ provider: "test", message: "429", retryAfter: Duration.hours(1) })
      const { count, stream } = scripted([Stream.fail(asked), Stream.make(1)])
      expect(yield* Effect.exit(Stream.runCollect(ProviderRetry.retry(stream)))).toStrictEqual(Exit.fail(asked))
      expect(count()).toBe(1)
      const within = scripted([Stream.fail(asked), Stream.make(1)])
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(ProviderRetry.retry(within.stream, { maxRetryAfter: "2 hours" }))
      )
      yield* TestClock.adjust("1 hour")
      expect(yield* Fiber.join(fiber)).toStrictEqual([1])
    }))

  it.effect("gives up with the last error when the policy is exhausted", () =>
    Effect.gen(function*() {
      const { count, stream } = scripted([])
      const fiber = yield* Effect.forkChild(Effect.exit(Stream.runCollect(ProviderRetry.retry(stream))))
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(fiber)).toStrictEqual(Exit.fail(unavailable))
      expect(count()).toBe(4)
      const once = scripted([])
      expect(yield* Effect.exit(Stream.runCollect(ProviderRetry.retry(once.stream, { policy: ProviderRetry.none }))))
        .toStrictEqual(Exit.fail(unavailable))
      expect(once.count()).toBe(1)
    }))

  it.effect("never waits past the turn's deadline: a retry that would start after it fails with the deadline's error", () =>
    Effect.gen(function*() {
      const overdue = new AiError.Timeout({ provider: "test", message: "the turn took longer than 30s" })
      const asked = new AiError.RateLimited({ provider: "test", message: "429", retryAfter: Duration.seconds(20) })
      const late = scripted([Stream.fail(asked), Stream.make(1)])
      const exit = yield* Effect.exit(
        Stream.runCollect(ProviderRetry.retry(late.stream, { deadline: { at: 10_000, error: overdue } }))
      )
      expect(exit).toStrictEqual(Exit.fail(overdue))
      expect(late.count()).toBe(1)
      const inTime = scripted([Stream.fail(asked), Stream.make(1)])
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(ProviderRetry.retry(inTime.stream, { deadline: { at: 30_000, error: overdue } }))
      )
      yield* TestClock.adjust("20 seconds")
      expect(yield* Fiber.join(fiber)).toStrictEqual([1])
    }))
})
