/**
 * The registry of a server's live runs, on runs streamed by hand: a client
 * attaching mid-turn gets the run so far and the turn in progress from its
 * start, then the rest; one run per id; how a run's end reaches its clients;
 * a cancel; and the registry's scope.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Queue, Schedule, Scope, Stream } from "effect"
import type * as AgentEvent from "../src/agent/AgentEvent.ts"
import * as LiveRuns from "../src/stream/LiveRuns.ts"
import * as Termination from "../src/Termination.ts"
import * as TokenUsage from "../src/TokenUsage.ts"

type Event = AgentEvent.AgentEvent<string>

const accounting = { usage: TokenUsage.empty, cost: 0, elapsedMs: 0, steps: 1, lastItems: [] }
const turn = { items: [], usage: TokenUsage.empty, stopReason: "stop" as const }
const started: Event = { _tag: "TurnStarted", step: 1 }
const delta = (text: string): Event => ({ _tag: "Delta", step: 1, delta: { type: "text_delta", delta: text } })
const completed: Event = { _tag: "TurnCompleted", step: 1, turn, cost: 0, accounting }

/** A run whose events the test pushes, ending when it ends the queue (or fails it). */
const handRun = Effect.gen(function*() {
  const events = yield* Queue.unbounded<Event, Termination.Error | Cause.Done>()
  const run = (cancel: Effect.Effect<string>) => {
    let reason: string | undefined
    return Stream.fromQueue(events).pipe(
      Stream.interruptWhen(Effect.map(cancel, (given) => (reason = given))),
      Stream.concat(Stream.suspend(() =>
        reason === undefined
          ? Stream.empty
          : Stream.fail(new Termination.Halted({ reason, source: "person", accounting }))
      ))
    )
  }
  return { events, run }
})

/** Waits until what a client attaching to `live` gets right away is `done`. */
const attachingGets = <O>(live: LiveRuns.Live<O>, done: (attached: LiveRuns.Attached<O>) => boolean) =>
  Effect.scoped(live.attach).pipe(Effect.repeat({ until: done, schedule: Schedule.spaced("2 millis") }))

/** Waits until `live` has published `count` events of its turn so far (recorded, then unrecorded since). */
const published = <O>(live: LiveRuns.Live<O>, count: number) =>
  attachingGets(live, (attached) => attached.recorded.length + attached.since.length >= count)

/** What an attached client has right away, and the rest of its events until its run's end. */
const follow = <O>(live: LiveRuns.Live<O>) =>
  Effect.gen(function*() {
    const attached = yield* live.attach
    const now = [...attached.recorded, ...attached.since].map(({ event }) => event._tag)
    const rest = yield* Effect.forkChild(Effect.exit(Stream.runCollect(Stream.fromQueue(attached.next))))
    return { now, rest }
  })

describe("LiveRuns", () => {
  it.live("the client that starts a run gets all of it; one attaching mid-turn, the run so far and the turn in progress from its start", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make()
      const { events, run } = yield* handRun
      const { attached, live } = (yield* registry.start("r1", { input: "a" }, run))!
      // The client that starts the run is attached before its first event.
      expect([...attached.recorded, ...attached.since]).toStrictEqual([])
      const starter = yield* Effect.forkChild(Stream.runCollect(Stream.fromQueue(attached.next)))
      yield* Queue.offerAll(events, [started, delta("Hel"), delta("lo")])
      yield* published(live, 3)
      expect(live.frontier()).toStrictEqual({ step: 1, place: "started", calls: [] })
      const client = yield* follow(live)
      expect(client.now).toStrictEqual(["TurnStarted", "Delta", "Delta"])
      // A second start under the same id finds the live run: one execution per id.
      expect((yield* registry.start("r1", { input: "a" }, run))?.live.id).toBe("r1")
      yield* Queue.offerAll(events, [delta("!"), completed])
      yield* attachingGets(live, (attached) => attached.recorded.length === 2)
      // Once the turn completed, a new client gets it whole: the deltas of a completed turn are not kept.
      const late = yield* follow(live)
      expect(late.now).toStrictEqual(["TurnStarted", "TurnCompleted"])
      yield* Queue.end(events)
      const exit = yield* Fiber.join(client.rest)
      expect(Exit.isSuccess(exit) && exit.value.map(({ event }) => event._tag)).toStrictEqual([
        "Delta",
        "TurnCompleted"
      ])
      expect((yield* Fiber.join(late.rest))._tag).toBe("Success")
      expect((yield* Fiber.join(starter)).map(({ event }) => event._tag)).toStrictEqual([
        "TurnStarted",
        "Delta",
        "Delta",
        "Delta",
        "TurnCompleted"
      ])
      // Ended, it left the registry.
      expect(registry.get("r1")).toBeUndefined()
    }).pipe(Effect.scoped))

  it.live("a run's failure reaches its clients with its cause, and a client attaching after the end gets it too", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make()
      const { events, run } = yield* handRun
      const { live } = (yield* registry.start("r2", {}, run))!
      const client = yield* follow(live)
      const failure = new Termination.MaxTurns({ maxTurns: 1, accounting })
      yield* Queue.offer(events, started)
      yield* Queue.fail(events, failure)
      const exit = yield* Fiber.join(client.rest)
      expect(exit).toMatchObject({ _tag: "Failure" })
      const ending = Exit.isFailure(exit)
        ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
        : undefined
      expect(ending?._tag).toBe("Failed")
      expect(ending?._tag === "Failed" && Cause.findErrorOption(ending.cause)).toMatchObject({ value: failure })
      // A handle kept past the end gets the end at once.
      const after = yield* follow(live)
      expect((yield* Fiber.join(after.rest))._tag).toBe("Failure")
      expect(registry.get("r2")).toBeUndefined()
    }).pipe(Effect.scoped))

  it.live("cancel tells a live run and answers whether it ended by the person's hand; a run not live is held meanwhile", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make()
      const { events, run } = yield* handRun
      const { live } = (yield* registry.start("r3", {}, run))!
      yield* Queue.offer(events, started)
      const client = yield* follow(live)
      expect(yield* registry.cancel("r3", {}, "stop", Effect.succeed(false))).toBe(true)
      const exit = yield* Fiber.join(client.rest)
      const ending = Exit.isFailure(exit)
        ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
        : undefined
      expect(ending?._tag === "Failed" && Cause.findErrorOption(ending.cause)).toMatchObject({
        value: { _tag: "Halted", source: "person", reason: "stop" }
      })
      // A run that ends some other way (it does not heed the cancel): `otherwise` answers, from the run's log.
      const deaf = yield* Queue.unbounded<Event, Cause.Done>()
      yield* registry.start("r3b", {}, () => Stream.fromQueue(deaf))
      const asked = yield* Effect.forkChild(registry.cancel("r3b", {}, "stop", Effect.succeed(true)))
      yield* Queue.end(deaf)
      expect(yield* Fiber.join(asked)).toBe(true)

      // Not live: `otherwise` answers, and a start asked for meanwhile comes after it.
      const order: Array<string> = []
      const recording = yield* Deferred.make<void>()
      const writing = yield* Deferred.make<void>()
      const cancelling = yield* Effect.forkChild(
        registry.cancel(
          "r4",
          { input: "r4" },
          "stop",
          Deferred.succeed(writing, undefined).pipe(
            Effect.andThen(Deferred.await(recording)),
            Effect.andThen(Effect.sync(() => order.push("recorded"))),
            Effect.as(true)
          )
        )
      )
      yield* Deferred.await(writing)
      // Held meanwhile under its options' fingerprint: a client asking for it then waits for the cancel's end.
      expect(registry.get("r4")?.fingerprint).toStrictEqual({ input: "r4" })
      const starting = yield* Effect.forkChild(registry.start("r4", {}, (cancel) => {
        order.push("started")
        return run(cancel)
      }))
      yield* Deferred.succeed(recording, undefined)
      expect(yield* Fiber.join(cancelling)).toBe(true)
      expect((yield* Fiber.join(starting))?.live.id).toBe("r4")
      expect(order).toStrictEqual(["recorded", "started"])
    }).pipe(Effect.scoped))

  it.live("a start interrupted as it starts the run leaves the run running, or nothing: never an id without a run", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make()
      const { run } = yield* handRun
      // The client's request is interrupted (its connection closed) while the run is being started.
      const starter = yield* Effect.forkChild(Effect.scoped(registry.start("r8", {}, (cancel) => {
        Fiber.getCurrent()?.interruptUnsafe()
        return run(cancel)
      })))
      expect((yield* Fiber.await(starter))._tag).toBe("Failure")
      // The run it registered runs: a client attaches to it, and a cancel reaches it.
      const { live } = (yield* registry.start("r8", {}, run))!
      const client = yield* follow(live)
      expect(yield* registry.cancel("r8", {}, "stop", Effect.succeed(false))).toBe(true)
      expect((yield* Fiber.join(client.rest))._tag).toBe("Failure")
      expect(registry.get("r8")).toBeUndefined()
    }).pipe(Effect.scoped))

  it.live("of cancels at once, one answers that it cancelled the run", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make()
      const { run } = yield* handRun
      yield* registry.start("r9", {}, run)
      const cancel = registry.cancel("r9", {}, "stop", Effect.succeed(true))
      const answers = yield* Effect.all([cancel, cancel, cancel], { concurrency: 3 })
      expect(answers.filter((answer) => answer)).toHaveLength(1)
    }).pipe(Effect.scoped))

  it.live("a cancel waiting for a run that does not heed it can be abandoned; the run stays told", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make()
      const deaf = yield* Queue.unbounded<Event, Cause.Done>()
      const told = yield* Deferred.make<string>()
      // A run that hears the cancel, and goes on (a tool that ignores interruption).
      const { live } = (yield* registry.start("r10", {}, (cancel) =>
        Stream.unwrap(Effect.as(
          Effect.forkChild(Effect.flatMap(cancel, (reason) => Deferred.succeed(told, reason))),
          Stream.fromQueue(deaf)
        ))))!
      const client = yield* follow(live)
      const waiting = yield* Effect.forkChild(registry.cancel("r10", {}, "stop", Effect.succeed(true)))
      expect(yield* Deferred.await(told)).toBe("stop")
      yield* Fiber.interrupt(waiting)
      expect(yield* Fiber.await(waiting)).toMatchObject({ _tag: "Failure" })
      expect(registry.get("r10")).toBeDefined()
      yield* Queue.end(deaf)
      expect((yield* Fiber.join(client.rest))._tag).toBe("Success")
    }).pipe(Effect.scoped))

  it.live("a turn in progress is kept up to capacity events; past them, a client attaching gets it when it completes", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make({ capacity: 4 })
      const { events, run } = yield* handRun
      const { attached, live } = (yield* registry.start("r11", {}, run))!
      const starter = yield* Effect.forkChild(Stream.runCollect(Stream.fromQueue(attached.next)))
      yield* Queue.offerAll(events, [started, delta("a"), delta("b"), delta("c")])
      yield* published(live, 4)
      const early = yield* follow(live)
      expect(early.now).toStrictEqual(["TurnStarted", "Delta", "Delta", "Delta"])
      // A fifth delta: the turn's deltas are no longer kept (a tool reporting progress for an hour, say).
      yield* Queue.offerAll(events, [delta("d"), delta("e")])
      yield* attachingGets(live, (attached) => attached.since.length === 0)
      // A client attaching now gets none of the turn's deltas, not even the ones that come: the turn whole, after.
      const late = yield* follow(live)
      expect(late.now).toStrictEqual(["TurnStarted"])
      yield* Queue.offerAll(events, [delta("f"), completed, delta("g")])
      yield* Queue.end(events)
      const tags = (exit: Exit.Exit<ReadonlyArray<LiveRuns.Published<string>>, unknown>) =>
        Exit.isSuccess(exit) ? exit.value.map(({ event }) => event._tag) : exit
      expect(tags(yield* Fiber.join(late.rest))).toStrictEqual(["TurnCompleted", "Delta"])
      // Clients that were there go on as before.
      expect(tags(yield* Fiber.join(early.rest))).toStrictEqual(["Delta", "Delta", "Delta", "TurnCompleted", "Delta"])
      expect(yield* Fiber.join(starter)).toHaveLength(9)
    }).pipe(Effect.scoped))

  it.live("closing its scope stops every live run (its clients get Stopped), and starts nothing after", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const registry = yield* LiveRuns.make().pipe(Scope.provide(scope))
      const { run } = yield* handRun
      const { live } = (yield* registry.start("r5", {}, run))!
      const client = yield* follow(live)
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.join(client.rest)
      const ending = Exit.isFailure(exit)
        ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
        : undefined
      expect(ending).toStrictEqual({ _tag: "Stopped" })
      expect(yield* registry.start("r6", {}, run)).toBeUndefined()
    }).pipe(Effect.scoped))

  it.live("a client too far behind is let go with Behind", () =>
    Effect.gen(function*() {
      const registry = yield* LiveRuns.make({ capacity: 3 })
      const { events, run } = yield* handRun
      const { live } = (yield* registry.start("r7", {}, run))!
      const attached = yield* live.attach
      yield* Queue.offerAll(events, [started, delta("a"), delta("b"), delta("c"), delta("d"), completed])
      yield* attachingGets(live, (attached) => attached.recorded.length === 2)
      const exit = yield* Effect.exit(Stream.runCollect(Stream.fromQueue(attached.next)))
      const ending = Exit.isFailure(exit)
        ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
        : undefined
      expect(ending).toStrictEqual({ _tag: "Behind" })
      yield* Queue.end(events)
    }).pipe(Effect.scoped))
})
