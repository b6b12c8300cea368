import { textTurn } from "@agentloop/testing/MockLanguageModel"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, pipe, Stream } from "effect"
import * as Loop from "../src/Loop.ts"
import type { TurnDelta } from "../src/TurnDelta.ts"
import * as TurnStream from "../src/TurnStream.ts"

const counter = (limit: number) => (n: number) => n < limit ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stop

describe("loop", () => {
  it.effect("streams the values of every iteration until Stop, data-first and data-last", () =>
    Effect.gen(function*() {
      expect(yield* Stream.runCollect(Loop.loop(0, counter(5)))).toStrictEqual([0, 1, 2, 3, 4])
      expect(yield* Stream.runCollect(pipe(0, Loop.loop(counter(3))))).toStrictEqual([0, 1, 2])
    }))

  it.effect("runs exactly the bodies Stream.take needs", () =>
    Effect.gen(function*() {
      let calls = 0
      const values = yield* Loop.loop(0, (n) => {
        calls++
        return Loop.nextAfter(Stream.make(n, n), n + 1)
      }).pipe(Stream.take(5), Stream.runCollect)
      expect(values).toStrictEqual([0, 0, 1, 1, 2])
      expect(calls).toBe(3)
    }))

  it.effect("builds no body until the consumer pulls", () =>
    Effect.gen(function*() {
      let calls = 0
      const stream = Loop.loop(0, (n) => {
        calls++
        return Loop.nextAfter(Stream.make(n), n + 1)
      })
      expect(calls).toBe(0)
      yield* stream.pipe(Stream.take(1), Stream.runDrain)
      expect(calls).toBe(1)
    }))

  it.effect("accepts a body that is an Effect building the stream", () =>
    Effect.gen(function*() {
      const values = yield* Loop.loop(
        1,
        (n) => Effect.succeed(n > 8 ? Loop.stop : Loop.nextAfter(Stream.make(n), n * 2))
      ).pipe(Stream.runCollect)
      expect(values).toStrictEqual([1, 2, 4, 8])
    }))

  it.effect("drops events after a Next or a Stop in the same chunk", () =>
    Effect.gen(function*() {
      const values = yield* Loop.loop(0, (n): Stream.Stream<Loop.Event<string, number>> =>
        n === 0
          ? Stream.make(Loop.value("a"), Loop.next(1), Loop.value("dropped after next"), Loop.next(99))
          : Stream.make(Loop.value("b"), { _tag: "Stop" }, Loop.value("dropped after stop"))).pipe(Stream.runCollect)
      expect(values).toStrictEqual(["a", "b"])
    }))

  it.effect("drops the rest of a body's stream after its decision, across chunks", () =>
    Effect.gen(function*() {
      let pulledAfterDecision = false
      const values = yield* Loop.loop(0, (_: number): Stream.Stream<Loop.Event<number, number>> =>
        Stream.concat(
          Stream.make(Loop.value(1), { _tag: "Stop" }),
          Stream.fromEffect(Effect.sync(() => {
            pulledAfterDecision = true
            return Loop.value(2)
          }))
        )).pipe(Stream.runCollect)
      expect(values).toStrictEqual([1])
      expect(pulledAfterDecision).toBe(false)
    }))

  it.effect("ends the loop when a body ends without a decision", () =>
    Effect.gen(function*() {
      let calls = 0
      const values = yield* Loop.loop(0, (n: number) => {
        calls++
        return Stream.make(Loop.value(n))
      }).pipe(Stream.runCollect)
      expect(values).toStrictEqual([0])
      expect(calls).toBe(1)
    }))

  it.effect("nextAfter and stopAfter are ordinary event streams outside a loop", () =>
    Effect.gen(function*() {
      expect(yield* Stream.runCollect(Loop.nextAfter(Stream.make(1, 2), "s"))).toStrictEqual([
        Loop.value(1),
        Loop.value(2),
        Loop.next("s")
      ])
      expect(yield* Stream.runCollect(Stream.make(3).pipe(Loop.nextAfter("t")))).toStrictEqual([
        Loop.value(3),
        Loop.next("t")
      ])
      expect(yield* Stream.runCollect(Loop.stopAfter(Stream.make(1)))).toStrictEqual([Loop.value(1), { _tag: "Stop" }])
      expect(yield* Stream.runCollect(Loop.stop)).toStrictEqual([{ _tag: "Stop" }])
    }))

  it.effect("a transformed helper stream still decides (the general path)", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const values = yield* Loop.loop(0, (n) =>
        (n < 2 ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stopAfter(Stream.make(n))).pipe(
          Stream.tap((event) =>
            Effect.sync(() => seen.push(event._tag))
          )
        )).pipe(Stream.runCollect)
      expect(values).toStrictEqual([0, 1, 2])
      expect(seen).toStrictEqual(["Value", "Next", "Value", "Next", "Value", "Stop"])
    }))

  it.effect("closes each iteration's scope when it decides, before the next body starts", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const values = yield* Loop.loop(0, (n) =>
        Effect.gen(function*() {
          log.push(`body ${n}`)
          yield* Effect.addFinalizer(() => Effect.sync(() => log.push(`effect finalizer ${n}`)))
          const values = Stream.make(n).pipe(Stream.ensuring(Effect.sync(() => log.push(`stream finalizer ${n}`))))
          return n < 2 ? Loop.nextAfter(values, n + 1) : Loop.stopAfter(values)
        })).pipe(
          Stream.tap((n) => Effect.sync(() => log.push(`value ${n}`))),
          Stream.runCollect
        )
      expect(values).toStrictEqual([0, 1, 2])
      expect(log).toStrictEqual([
        "body 0",
        "value 0",
        "stream finalizer 0",
        "effect finalizer 0",
        "body 1",
        "value 1",
        "stream finalizer 1",
        "effect finalizer 1",
        "body 2",
        "value 2",
        "stream finalizer 2",
        "effect finalizer 2"
      ])
    }))

  it.effect("closes a hand-built body's scope as soon as its decision arrives", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      yield* Loop.loop(0, (n) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer(() => Effect.sync(() => log.push(`finalizer ${n}`)))
          return Stream.make(Loop.value(n), n < 1 ? Loop.next(n + 1) : { _tag: "Stop" as const })
        })).pipe(
          Stream.tap((n) => Effect.sync(() => log.push(`value ${n}`))),
          Stream.runDrain
        )
      // The decision shares the value's chunk, so the scope closes before the value is delivered.
      expect(log).toStrictEqual(["finalizer 0", "value 0", "finalizer 1", "value 1"])
    }))

  it.effect("runs the active body's finalizers when the consumer interrupts mid-iteration", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const started = yield* Deferred.make<void>()
      const fiber = yield* Loop.loop(0, (n: number) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer((exit) => Effect.sync(() => log.push(`effect finalizer ${n} ${exit._tag}`)))
          const values = Stream.concat(
            Stream.make(n),
            Stream.fromEffect(Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.never)))
          ).pipe(Stream.ensuring(Effect.sync(() => log.push(`stream finalizer ${n}`))))
          return Loop.nextAfter(values, n + 1)
        })).pipe(Stream.runDrain, Effect.forkChild)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(log).toStrictEqual(["stream finalizer 0", "effect finalizer 0 Failure"])
    }))

  it.effect("fails with the body's error and still runs its finalizers", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const exit = yield* Loop.loop(0, (n) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer(() => Effect.sync(() => log.push(`finalizer ${n}`)))
          return n < 1
            ? Loop.nextAfter(Stream.make(n), n + 1)
            : Loop.nextAfter(Stream.concat(Stream.make(n), Stream.fail("boom" as const)), n + 1)
        })).pipe(Stream.runCollect, Effect.exit)
      expect(exit).toStrictEqual(Exit.fail("boom"))
      expect(log).toStrictEqual(["finalizer 0", "finalizer 1"])
    }))

  it.effect("closes a failed iteration's scope before its failure reaches the consumer", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const seen = (error: string) => {
        log.push(`failure seen: ${error}`)
        return error
      }
      const failing = (n: number) => n < 1 ? Stream.make(n) : Stream.concat(Stream.make(n), Stream.fail("boom"))
      const streamed = yield* Loop.loop(0, (n: number) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer((exit) => Effect.sync(() => log.push(`finalizer ${n} ${exit._tag}`)))
          return Loop.nextAfter(failing(n), n + 1)
        })).pipe(Stream.mapError(seen), Stream.runCollect, Effect.exit)
      const built = yield* Loop.loop(0, (n: number) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer((exit) => Effect.sync(() => log.push(`built finalizer ${n} ${exit._tag}`)))
          return yield* Effect.fail("cannot build")
        })).pipe(Stream.mapError(seen), Stream.runCollect, Effect.exit)
      expect(streamed).toStrictEqual(Exit.fail("boom"))
      expect(built).toStrictEqual(Exit.fail("cannot build"))
      expect(log).toStrictEqual([
        "finalizer 0 Success",
        "finalizer 1 Failure",
        "failure seen: boom",
        "built finalizer 0 Failure",
        "failure seen: cannot build"
      ])
    }))

  it.effect("fails when building the body fails, without starting another", () =>
    Effect.gen(function*() {
      let calls = 0
      const exit = yield* Loop.loop(0, (n) => {
        calls++
        return n < 2 ? Effect.succeed(Loop.nextAfter(Stream.make(n), n + 1)) : Effect.fail("cannot build" as const)
      }).pipe(Stream.runCollect, Effect.exit)
      expect(exit).toStrictEqual(Exit.fail("cannot build"))
      expect(calls).toBe(3)
    }))

  it.effect("runs a hundred thousand iterations without overflowing the stack", () =>
    Effect.gen(function*() {
      const iterations = 100_000
      let sum = 0
      yield* Loop.loop(0, (n) => n < iterations ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stop).pipe(
        Stream.runForEach((n) => Effect.sync(() => sum += n))
      )
      expect(sum).toBe((iterations - 1) * iterations / 2)
    }), 60_000)

  // Memory across a million iterations is measured by `npm run bench` (bench/src/loop.ts), not here.
  it.effect("runs silent iterations and scoped bodies, closing every scope", () =>
    Effect.gen(function*() {
      const iterations = 10_000
      const silent = yield* Loop.loop(0, (n) =>
        n < iterations ? Loop.nextAfter(Stream.empty, n + 1) : Loop.stopAfter(Stream.make(n))).pipe(
          Stream.runCollect
        )
      expect(silent).toStrictEqual([iterations])
      let finalized = 0
      const scoped = yield* Loop.loop(0, (n) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer(() =>
            Effect.sync(() => finalized++)
          )
          return n < iterations ? Loop.nextAfter(Stream.empty, n + 1) : Loop.stop
        })).pipe(Stream.runCollect)
      expect(scoped).toStrictEqual([])
      expect(finalized).toBe(iterations + 1)
    }))
})

describe("decideAfter", () => {
  it.effect("streams the values, then the events of `then`, built once the values have been pulled", () =>
    Effect.gen(function*() {
      const values = yield* Loop.loop(0, (round) => {
        let total = 0
        const numbers = Stream.make(1, 2, 3).pipe(Stream.tap((n) => Effect.sync(() => total += n)))
        return Loop.decideAfter(
          numbers,
          () =>
            round < 1 ? Loop.nextAfter(Stream.make(total * 10), round + 1) : Loop.stopAfter(Stream.make(total * 100))
        )
      }).pipe(Stream.runCollect)
      expect(values).toStrictEqual([1, 2, 3, 60, 1, 2, 3, 600])
    }))

  it.effect("keeps the iteration in one scope until the decision, across nested continuations", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const decision = (n: number): Stream.Stream<Loop.Event<string, number>> =>
        n < 1 ? Loop.nextAfter(Stream.make(`c${n}`), n + 1) : Loop.stop
      yield* Loop.loop(0, (n: number) =>
        Effect.gen(function*() {
          yield* Effect.addFinalizer(() => Effect.sync(() => log.push(`finalizer ${n}`)))
          return Loop.decideAfter(Stream.make(`a${n}`), () =>
            Effect.succeed(Loop.decideAfter(Stream.make(`b${n}`), () => decision(n))))
        })).pipe(
          Stream.tap((value) => Effect.sync(() => log.push(value))),
          Stream.runDrain
        )
      expect(log).toStrictEqual(["a0", "b0", "c0", "finalizer 0", "a1", "b1", "finalizer 1"])
    }))

  it.effect("builds no continuation the consumer does not pull, and fails with its error", () =>
    Effect.gen(function*() {
      let built = 0
      const taken = yield* Loop.loop(0, () =>
        Loop.decideAfter(Stream.make(1, 2), () => {
          built++
          return Loop.stop
        })).pipe(Stream.take(2), Stream.runCollect)
      expect(taken).toStrictEqual([1, 2])
      expect(built).toBe(0)
      const undecided = Effect.as(Effect.fail("no decision" as const), Loop.stop)
      const exit = yield* Loop.loop(0, () => Loop.decideAfter(Stream.make(1), () => undecided)).pipe(
        Stream.runCollect,
        Effect.exit
      )
      expect(exit).toStrictEqual(Exit.fail("no decision"))
    }))

  it.effect("is an ordinary event stream outside a loop", () =>
    Effect.gen(function*() {
      const events = yield* Stream.runCollect(
        Loop.decideAfter(Stream.make(1), () => Loop.nextAfter(Stream.make(2), "s"))
      )
      expect(events).toStrictEqual([Loop.value(1), Loop.value(2), Loop.next("s")])
    }))
})

describe("streamUntilComplete", () => {
  const turn = textTurn("Hello, world")
  const deltas: ReadonlyArray<TurnDelta> = [
    { type: "text_delta", delta: "Hello, " },
    { type: "text_delta", delta: "world" },
    { type: "usage", usage: turn.usage },
    { type: "turn_complete", turn }
  ]

  it.effect("forwards every delta including turn_complete, then the callback's events", () =>
    Effect.gen(function*() {
      let seen: unknown
      const events = yield* Stream.fromIterable(deltas).pipe(
        TurnStream.streamUntilComplete((completed) => {
          seen = completed
          return Loop.nextAfter(Stream.make("tool output"), 1)
        }),
        Stream.runCollect
      )
      expect(seen).toStrictEqual(turn)
      expect(events).toStrictEqual([...deltas.map(Loop.value), Loop.value("tool output"), Loop.next(1)])
    }))

  it.effect("accepts an Effect callback, data-first", () =>
    Effect.gen(function*() {
      const events = yield* TurnStream.streamUntilComplete(Stream.fromIterable(deltas), () => Effect.succeed(Loop.stop))
        .pipe(Stream.runCollect)
      expect(events.at(-1)).toStrictEqual({ _tag: "Stop" })
      expect(events).toHaveLength(deltas.length + 1)
    }))

  it.effect("fails with IncompleteTurn when the upstream ends without turn_complete", () =>
    Effect.gen(function*() {
      let called = false
      const forwarded: Array<unknown> = []
      const error = yield* Stream.fromIterable(deltas.slice(0, 2)).pipe(
        TurnStream.streamUntilComplete(() => {
          called = true
          return Loop.stop
        }),
        Stream.runForEach((event) => Effect.sync(() => forwarded.push(event))),
        Effect.flip
      )
      expect(error._tag).toBe("IncompleteTurn")
      expect(forwarded).toHaveLength(2)
      expect(called).toBe(false)
    }))

  it.effect("stops reading the upstream at turn_complete", () =>
    Effect.gen(function*() {
      const events = yield* Stream.concat(Stream.fromIterable(deltas), Stream.fail("read past the end" as const))
        .pipe(TurnStream.streamUntilComplete(() => Loop.stop), Stream.runCollect)
      expect(events).toHaveLength(deltas.length + 1)
    }))

  it.effect("drives a loop over a model's turns", () =>
    Effect.gen(function*() {
      const turns = [textTurn("one"), textTurn("two")]
      const texts = yield* Loop.loop(0, (i) =>
        Stream.fromIterable([{ type: "turn_complete" as const, turn: turns[i]! }]).pipe(
          TurnStream.streamUntilComplete(() =>
            i + 1 < turns.length ? Loop.nextAfter(Stream.empty, i + 1) : Loop.stop
          )
        )).pipe(
          Stream.filter((delta) => delta.type === "turn_complete"),
          Stream.map((delta) => delta.turn.items.length),
          Stream.runCollect
        )
      expect(texts).toStrictEqual([1, 1])
    }))
})

describe("TurnStream.completion", () => {
  it.effect("hands the turn on once completed, fails with IncompleteTurn before, and forgets it on reset", () =>
    Effect.gen(function*() {
      const completion = TurnStream.completion()
      const turn = textTurn("done")
      expect((yield* Effect.flip(completion.turn))._tag).toBe("IncompleteTurn")
      completion.complete(turn)
      expect(yield* completion.turn).toBe(turn)
      completion.reset()
      expect((yield* Effect.flip(completion.turn))._tag).toBe("IncompleteTurn")
    }))

  it.effect("a stream run again does not see the turn of its last run", () =>
    Effect.gen(function*() {
      let runs = 0
      const complete: ReadonlyArray<TurnDelta> = [{ type: "turn_complete", turn: textTurn("first") }]
      const deltas = Stream.suspend(() => Stream.fromIterable(++runs === 1 ? complete : []))
      const stream = deltas.pipe(TurnStream.streamUntilComplete(() => Loop.stop))
      expect(yield* Stream.runCollect(stream)).toHaveLength(2)
      expect((yield* Effect.flip(Stream.runDrain(stream)))._tag).toBe("IncompleteTurn")
    }))
})
