/**
 * `Step.stream` of a recorded program replays what its ledger recorded, as
 * the live execution streamed it, then goes on: a finished program replays to
 * its end running nothing, one cut off replays its recorded prefix and streams
 * the rest once, a fork replays its source's events up to its checkpoint. On
 * every store; a ledger written before 0.3.0, `emit` filters, compaction and
 * damaged marks in memory.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import * as AiError from "../src/AiError.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Compactor from "../src/Compactor.ts"
import * as Item from "../src/Item.ts"
import type { LanguageModel } from "../src/LanguageModel.ts"
import * as RunFingerprint from "../src/RunFingerprint.ts"
import * as Channel from "../src/step/Channel.ts"
import { fingerprint as fingerprintOf } from "../src/step/internal/execute.ts"
import * as Journal from "../src/step/internal/journal.ts"
import * as Step from "../src/step/Step.ts"
import type * as StepEvent from "../src/step/StepEvent.ts"
import * as StepHistory from "../src/step/StepHistory.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import * as Verdict from "../src/Verdict.ts"
import { addCall, answer, model, pricing } from "./agentFixtures.ts"
import { eachStore, fresh, read, slowCall } from "./checkpointFixtures.ts"
import { add } from "./fixtures.ts"

type Event = StepEvent.Event<unknown>

/** The programs of these tests: they take a text and may ask a model. */
type Program = Step.Step<string, unknown, unknown, LanguageModel, unknown>

/** What a replay leaves out: the model's deltas and the tools' progress, which are not recorded. */
const recordedOnly = (events: ReadonlyArray<Event>) =>
  events.filter((event) =>
    event._tag !== "Turn" || (event.event._tag !== "Delta" && event.event._tag !== "ToolProgress")
  )

/** A `slow` tool, idempotent, that never ends the first time it is called when it `blocks`; `started` says it was. */
const slowTool = (blocks: boolean) => {
  const started = Deferred.makeUnsafe<void>()
  let calls = 0
  const slow = Tool.make({
    name: "slow",
    description: "Takes forever the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    idempotent: true,
    execute: () =>
      Effect.suspend(() =>
        blocks && ++calls === 1
          ? Effect.andThen(Deferred.succeed(started, undefined), Effect.never)
          : Effect.succeed("done")
      )
  })
  return { started, toolkit: Toolkit.make(add, slow) }
}

const input = "Add 2 and 3, then 5 and 5"

/** Streams `program` with `id` on a mock answering `script`: its events and how many requests the mock saw. */
const streamed = (
  program: Program,
  id: string,
  script: ReadonlyArray<MockLanguageModel.Reply>,
  toolkit: Toolkit.Toolkit<never> = slowTool(false).toolkit
) =>
  Effect.gen(function*() {
    const events: ReadonlyArray<Event> = yield* Stream.runCollect(Step.stream(program, input, { id, toolkit }))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { events, asked: requests.length }
  }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing)))

/**
 * A program with every kind of event a ledger records: an agent loop (turns, tool calls, a verdict per turn), a
 * branch, a fork of a step and a sub-agent, a settle fork with a path that fails, and a loop whose predicate gives
 * feedback. `concurrency` bounds the forks' paths (unbounded: they run at once).
 */
const everything = (concurrency?: number): Program => {
  const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
  const double = Step.run({ id: "double", execute: (text: string) => `${text} ${text}` })
  const paths = Step.fork({
    id: "paths",
    mode: "all",
    concurrency,
    paths: (_: string) => [
      Step.run({ id: "left", execute: (text: string) => text.length }),
      Step.spawn({ id: "helper", child: Step.run({ id: "inner", execute: (text: string) => text.split(" ").length }) })
    ],
    merge: (counts) => counts.join("/")
  })
  const settled = Step.fork({
    id: "settled",
    mode: "settle",
    concurrency,
    paths: (_: string) => [
      Step.run({ id: "fine", execute: () => "fine" }),
      Step.run({ id: "broken", execute: () => Promise.reject(new Error("broken")) })
    ],
    merge: (results) => results.map((result) => result.status).join(",")
  })
  const polish = Step.loop({
    id: "polish",
    steps: [Step.run({ id: "draft", execute: (text: string) => `${text}+` })],
    until: (snapshot) => snapshot.stepCount < 2 ? Verdict.continue("once more") : Verdict.stop("polished")
  })
  return Step.loop({
    id: "program",
    steps: [
      agent,
      Step.branch({ id: "route", route: (text: string) => text === "" ? null : double }),
      paths,
      settled,
      polish
    ],
    until: Until.maxSteps(1)
  })
}

const script = [addCall(2, 3), addCall(5, 5), answer("5 and 10")]

/** `events` as execution `to` streams them where execution `from` streamed them: their contexts renamed. */
const renamed = (events: ReadonlyArray<Event>, from: string, to: string) =>
  events.map((event) =>
    event._tag === "Output" || !event.contextId.startsWith(from)
      ? event
      : { ...event, contextId: `${to}${event.contextId.slice(from.length)}` }
  )

/** The execution a stream's events come from: its first event's context. */
const contextOf = (events: ReadonlyArray<Event>) => events[0]?._tag === "Output" ? "" : events[0]?.contextId ?? ""

/** Events as JSON texts (their keys sorted), sorted: the same events, whatever their order. */
const sorted = (events: ReadonlyArray<Event>) => events.map(RunFingerprint.stableJson).sort()

/**
 * Streams `everything(concurrency)` uninterrupted, then again under a new id cut off while its second turn's slow
 * call runs, then resumed: what the uninterrupted stream, the cut one and the resumed one showed.
 */
const cutOff = (concurrency: number | undefined) =>
  Effect.gen(function*() {
    const cutScript = [addCall(2, 3), slowCall, answer("5 and 10")]
    const uninterrupted = yield* streamed(everything(concurrency), fresh("whole"), cutScript)
    const id = fresh("cut")
    const blocking = slowTool(true)
    const first: Array<Event> = []
    const fiber = yield* Effect.forkChild(
      Stream.runForEach(
        Step.stream(everything(concurrency), input, { id, toolkit: blocking.toolkit }),
        (event) => Effect.sync(() => first.push(event))
      ).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer(cutScript), pricing)))
    )
    yield* Deferred.await(blocking.started)
    yield* Fiber.interrupt(fiber)
    // The two turns the model answered are not asked again: they, and what came before, replay.
    const resumed = yield* streamed(everything(concurrency), id, cutScript.slice(2), blocking.toolkit)
    return { first, id, resumed, uninterrupted }
  })

const suite = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("a finished program streamed again replays the events it streamed, less deltas, asking nothing", () =>
      Effect.gen(function*() {
        const id = fresh("replayed")
        // The forks' paths run at once: their events interleave, and replay in the order they were streamed.
        const live = yield* streamed(everything(), id, script)
        const tags = new Set(
          recordedOnly(live.events).map((event) => event._tag === "Turn" ? event.event._tag : event._tag)
        )
        expect([...tags].sort()).toStrictEqual([
          "Completed",
          "Failed",
          "LoopEnded",
          "Output",
          "Started",
          "ToolResult",
          "TurnCompleted",
          "Verdict"
        ])
        const again = yield* streamed(everything(), id, [])
        expect(again.asked).toBe(0)
        expect(again.events).toStrictEqual(recordedOnly(live.events))
      }).pipe(Effect.provide(layer())))

    it.effect("a program cut off mid-way streams its recorded prefix, then the rest, each event once", () =>
      Effect.gen(function*() {
        // One path at a time: the events come in the same order, live, resumed or replayed.
        const { first, id, resumed, uninterrupted } = yield* cutOff(1)
        expect(resumed.asked).toBe(1)
        const events = recordedOnly(resumed.events)
        expect(events.slice(0, recordedOnly(first).length)).toStrictEqual(recordedOnly(first))
        expect(events).toStrictEqual(renamed(recordedOnly(uninterrupted.events), contextOf(uninterrupted.events), id))
      }).pipe(Effect.provide(layer())))

    it.effect("a program whose forks' paths run at once, cut off mid-way, streams each event once, none missing", () =>
      Effect.gen(function*() {
        const { id, resumed, uninterrupted } = yield* cutOff(undefined)
        expect(resumed.asked).toBe(1)
        // The paths' events interleave as they come, live and resumed alike: the same events, each once.
        const events = recordedOnly(resumed.events)
        const expected = renamed(recordedOnly(uninterrupted.events), contextOf(uninterrupted.events), id)
        expect(sorted(events)).toStrictEqual(sorted(expected))
        // The finished program replays them in the order the resumed execution streamed them.
        expect((yield* streamed(everything(), id, [])).events).toStrictEqual(events)
      }).pipe(Effect.provide(layer())))

    it.effect("a fork streams its source's events up to its checkpoint, then its own", () =>
      Effect.gen(function*() {
        const from = fresh("source")
        const live = yield* streamed(everything(1), from, script)
        const checkpoints = yield* StepHistory.checkpoints(from)
        const at = checkpoints.findIndex((checkpoint) => checkpoint.stepId === "double")
        const id = fresh("fork")
        yield* StepHistory.fork(everything(1), input, { id, from, at, toolkit: slowTool(false).toolkit })
        const forked = yield* streamed(everything(1), id, [])
        expect(forked.asked).toBe(0)
        expect(forked.events).toStrictEqual(renamed(recordedOnly(live.events), from, id))
      }).pipe(Effect.provide(layer())))

    it.effect("a program executed without a stream replays, streamed, what a live stream shows", () =>
      Effect.gen(function*() {
        const live = yield* streamed(everything(1), fresh("live"), script)
        const id = fresh("executed")
        yield* Step.execute(everything(1), input, { id, toolkit: slowTool(false).toolkit }).pipe(
          Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing))
        )
        const again = yield* streamed(everything(1), id, [])
        expect(again.events).toStrictEqual(renamed(recordedOnly(live.events), contextOf(live.events), id))
      }).pipe(Effect.provide(layer())))
  })

describe("Step.stream of a recorded program", () => {
  eachStore("step-replay", suite)
})

/** The ledger of execution `id`, as its entries' JSON. */
const entriesOf = (id: string) => Effect.map(read(id), (texts) => texts.map((text) => JSON.parse(text)))

/**
 * Records `entries` (JSON) of execution `from` as the ledger of execution `id` of `program` on `input` (their
 * executions renamed), the last one finishing it when it is the output's.
 */
const recordLedger = (
  id: string,
  program: Program,
  from: string,
  entries: ReadonlyArray<Record<string, unknown>>,
  toolkit: Toolkit.Toolkit<never>
) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* Checkpointer.Checkpointer
    const log = yield* store.open(id, yield* fingerprintOf(program, input, toolkit))
    const texts = entries.map((entry) =>
      JSON.stringify(
        typeof entry["execution"] === "string" ? { ...entry, execution: entry["execution"].replace(from, id) } : entry
      )
    )
    const last = entries.at(-1)?.["_tag"] === "Finished"
    if (texts.length > (last ? 1 : 0)) yield* log.append(last ? texts.slice(0, -1) : texts)
    if (last) yield* log.append(texts.slice(-1), { finished: true })
  }))

/** An entry as agentloop 0.2 wrote it: without what 0.3.0 added for replays. */
const before03 = (
  { events: _, hidden: __, kind: ___, meta: ____, step: _____, turnCompleted: ______, ...entry }: Record<
    string,
    unknown
  >
) => entry

describe("Step.stream of a recorded program (in memory)", () => {
  it.effect("an llm step's `emit` leaves out of the replay what it left out of the live stream", () =>
    Effect.gen(function*() {
      const filtered = Step.loop({
        id: "filtered",
        steps: [
          Step.llm({ id: "no-results", model, emit: (type) => type !== "ToolResult" }),
          Step.llm({ id: "no-turn", model, emit: (type) => type !== "TurnCompleted" }),
          Step.llm({ id: "quiet", model, emit: false }),
          Step.llm({ id: "no-ends", model, emit: (type) => type !== "Started" && type !== "Completed" })
        ],
        until: Until.maxSteps(1)
      })
      const id = fresh("filtered")
      const live = yield* streamed(filtered, id, [addCall(1, 1), addCall(1, 2), addCall(1, 3), answer("done")])
      const shown = recordedOnly(live.events).map((event) =>
        event._tag === "Output" ? "Output" : `${event.stepId} ${event._tag === "Turn" ? event.event._tag : event._tag}`
      )
      expect(shown).toStrictEqual([
        "filtered Started",
        "no-results Started",
        "no-results TurnCompleted",
        "no-results Completed",
        "no-turn Started",
        "no-turn ToolResult",
        "no-turn Completed",
        "no-ends TurnCompleted",
        "filtered Verdict",
        "filtered LoopEnded",
        "filtered Completed",
        "Output"
      ])
      const again = yield* streamed(filtered, id, [])
      expect(again.events).toStrictEqual(recordedOnly(live.events))
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a turn that compacted its history replays its discarded attempt, its compaction and its last items", () =>
    Effect.gen(function*() {
      const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
      const overflow = new AiError.ContextLengthExceeded({ provider: "mock", message: "too long" })
      const id = fresh("compacted")
      // Keeps the last item: the model is asked with another history than the item log.
      const compacting = Compactor.layer((history) => Effect.succeed(history.slice(-1)))
      const live = yield* streamed(agent, id, [addCall(1, 1), overflow, answer("2")]).pipe(Effect.provide(compacting))
      const turnEvents = recordedOnly(live.events).flatMap((event) => event._tag === "Turn" ? [event.event] : [])
      expect(turnEvents.map((event) => event._tag)).toStrictEqual([
        "TurnCompleted",
        "ToolResult",
        "AttemptDiscarded",
        "Compacted",
        "TurnCompleted"
      ])
      const again = yield* streamed(agent, id, [])
      expect(again.events).toStrictEqual(recordedOnly(live.events))
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("an every step's recorded errors replay, and the race it lost ends it without an event", () =>
    Effect.gen(function*() {
      const done = yield* Channel.make("done", Schema.Number)
      const wake = yield* Channel.make<"now">("wake")
      let polls = 0
      const watched = Step.fork({
        id: "watched",
        mode: "race",
        paths: (_: string) => [
          Step.every({
            id: "poll",
            ms: 60_000,
            wakeOn: wake,
            step: Step.run({
              id: "check",
              execute: (_: string, ctx) =>
                ++polls < 3 ? Effect.fail(new Error(`poll ${polls} failed`)) : ctx.send(done, polls)
            })
          }),
          Step.run({ id: "wait", execute: (_: string, ctx) => ctx.recv(done) })
        ]
      })
      for (let i = 0; i < 3; i++) yield* Channel.send(wake, "now")
      const id = fresh("polled")
      const live = yield* streamed(watched, id, [])
      expect(live.events.filter((event) => event._tag === "Recorded")).toHaveLength(2)
      expect(live.events.at(-1)).toStrictEqual({ _tag: "Output", value: 3 })
      const ran = polls
      const again = yield* streamed(watched, id, [])
      expect(again.events).toStrictEqual(live.events)
      expect(polls).toBe(ran)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("an every step that keeps failing writes its events on their own, never more than the bound waiting", () =>
    Effect.gen(function*() {
      const done = yield* Channel.make("done", Schema.Number)
      const wake = yield* Channel.make<"now">("wake")
      // Each failed run streams three events (its step's Started and Failed, the every's Recorded), and no step
      // completes: nothing else writes an entry.
      const failures = Journal.pendingBound
      const watched = Step.fork({
        id: "watched",
        mode: "race",
        paths: (_: string) => [
          Step.every({
            id: "poll",
            ms: 60_000,
            wakeOn: wake,
            step: Step.run({ id: "check", execute: () => Effect.fail(new Error("offline")) })
          }),
          Step.run({ id: "wait", execute: (_: string, ctx) => ctx.recv(done) })
        ]
      })
      for (let i = 0; i < failures; i++) yield* Channel.send(wake, "now")
      const id = fresh("failing")
      const first: Array<Event> = []
      const seen = yield* Deferred.make<void>()
      // Cut off once the consumer saw every failure: the every parks, waiting for a wake-up that does not come.
      const fiber = yield* Effect.forkChild(
        Stream.runForEach(
          Step.stream(watched, input, { id, toolkit: slowTool(false).toolkit }),
          (event) =>
            Effect.suspend(() => {
              first.push(event)
              return first.filter((seen) => seen._tag === "Recorded").length === failures
                ? Deferred.succeed(seen, undefined)
                : Effect.void
            })
        )
      )
      yield* Deferred.await(seen)
      yield* Fiber.interrupt(fiber)

      const entries = yield* entriesOf(id)
      const marks = entries.map((entry) => (entry["events"] as ReadonlyArray<unknown> | undefined)?.length ?? 0)
      const written = marks.reduce((sum, count) => sum + count, 0)
      expect(Math.max(...marks)).toBeLessThanOrEqual(Journal.pendingBound)
      expect(written).toBeGreaterThan(first.length - Journal.pendingBound)
      expect((yield* StepHistory.checkpoints(id)).map((checkpoint) => checkpoint.kind)).toContain("streamed")

      // Executed again, it replays what was written, then goes on.
      yield* Channel.send(done, 1)
      const resumed = yield* streamed(watched, id, [])
      expect(resumed.events.slice(0, written)).toStrictEqual(first.slice(0, written))
      expect(resumed.events.at(-1)).toStrictEqual({ _tag: "Output", value: 1 })
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a fork path interrupted once its step's entry was written replays no Completed: it streamed none", () =>
    Effect.gen(function*() {
      const writing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The store holds the loser's entry until the execution interrupted the loser: a slow disk, say.
      const slow = Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (store) => ({
        ...store,
        open: (id, fingerprint) =>
          Effect.map(store.open(id, fingerprint), (log) => ({
            ...log,
            append: (entries, options) =>
              entries.some((entry) => entry.includes("/loser#0\""))
                ? Effect.andThen(
                  Deferred.succeed(writing, undefined),
                  Effect.andThen(Deferred.await(release), log.append(entries, options))
                )
                : log.append(entries, options)
          }))
      })))
      // The ender completes the execution while the loser's entry is being written: the loser is interrupted then,
      // its entry written, its Completed not streamed.
      const ender = Step.run({
        id: "ender",
        execute: (_: string, ctx) =>
          Effect.gen(function*() {
            yield* Deferred.await(writing)
            ctx.complete("ended")
            return yield* Effect.never
          }).pipe(Effect.onInterrupt(() => Deferred.succeed(release, undefined)))
      })
      const watch = Step.fork({
        id: "watch",
        mode: "race",
        paths: (_: string) => [ender, Step.run({ id: "loser", execute: () => "lost" })]
      })
      const id = fresh("lost")
      const live = yield* streamed(watch, id, []).pipe(Effect.provide(slow))
      expect(live.events.some((event) => event._tag === "Completed" && event.stepId === "loser")).toBe(false)
      expect((yield* StepHistory.checkpoints(id)).map((checkpoint) => checkpoint.stepId)).toContain("loser")
      const again = yield* streamed(watch, id, [])
      expect(again.events).toStrictEqual(live.events)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a fork whose context was edited replays the turns after the edit as they were streamed", () =>
    Effect.gen(function*() {
      const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
      const from = fresh("source")
      const live = yield* streamed(agent, from, [addCall(2, 3), addCall(5, 5), answer("done")])
      const turnOf = (events: ReadonlyArray<Event>, step: number) =>
        recordedOnly(events).find((event) =>
          event._tag === "Turn" && event.event._tag === "TurnCompleted" && event.event.step === step
        )
      // At the second turn's answer: the context before it (the first turn's) is edited, the answer stays.
      const at = (yield* StepHistory.checkpoints(from)).findIndex((checkpoint, index, all) =>
        checkpoint.kind === "turn" && all.slice(0, index).some((before) => before.kind === "turn")
      )
      const id = fresh("edited")
      yield* StepHistory.fork(agent, input, {
        id,
        from,
        at,
        toolkit: slowTool(false).toolkit,
        edit: (context) => ({
          ...context,
          tokens: { input: 0, output: 0, total: 0 },
          items: [...context.items, Item.userMessage("an added message")]
        })
      })
      const forked = yield* streamed(agent, id, [answer("done again")])
      expect(turnOf(forked.events, 2)).toStrictEqual(renamed([turnOf(live.events, 2)!], from, id)[0])
      // The fork goes on from the edited context: its next turn is asked with the added message.
      const third = turnOf(forked.events, 3)
      expect(third?._tag === "Turn" && third.event._tag === "TurnCompleted" && third.event.accounting.usage.total)
        .toBe(60)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a ledger written before 0.3.0 resumes as it did, and replays what later executions recorded", () =>
    Effect.gen(function*() {
      const toolkit = slowTool(false).toolkit
      const source = fresh("source")
      const live = yield* streamed(everything(1), source, script, toolkit)
      const entries = (yield* entriesOf(source)).map(before03)

      // Finished: its output, nothing else to replay.
      const finished = fresh("old-finished")
      yield* recordLedger(finished, everything(1), source, entries, toolkit)
      expect((yield* streamed(everything(1), finished, [], toolkit)).events).toStrictEqual([live.events.at(-1)])

      // Cut off after `double`: the steps it recorded stream their `Completed` as they are skipped, as before.
      const cut = fresh("old-cut")
      const double = entries.findIndex((entry) =>
        typeof entry["key"] === "string" && entry["key"].endsWith("/double#0")
      )
      yield* recordLedger(cut, everything(1), source, entries.slice(0, double + 1), toolkit)
      const resumed = yield* streamed(everything(1), cut, [], toolkit)
      const shown = (events: ReadonlyArray<Event>) =>
        events.map((event) => event._tag === "Output" ? "Output" : `${event._tag} ${event.stepId}`)
      expect(shown(resumed.events).slice(0, 6)).toStrictEqual([
        "Started program",
        "Completed agent",
        "Started route",
        "Completed double",
        "Completed route",
        "Started paths"
      ])
      const rest = (events: ReadonlyArray<Event>) => shown(events).slice(shown(events).indexOf("Completed route"))
      expect(rest(resumed.events)).toStrictEqual(rest(recordedOnly(live.events)))

      // Streamed again, it replays what the execution that finished it recorded: all but the `Completed` of the
      // steps recorded before 0.3.0, which it could not replay.
      const again = yield* streamed(everything(1), cut, [], toolkit)
      expect(again.events).toStrictEqual(
        resumed.events.filter((event) =>
          !(event._tag === "Completed" && (event.stepId === "agent" || event.stepId === "double"))
        )
      )
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.live("a finished program pruned to its result streams its output alone", () =>
    Effect.gen(function*() {
      const id = fresh("pruned")
      const live = yield* streamed(everything(1), id, script)
      yield* Effect.sleep("5 millis")
      expect(yield* Checkpointer.prune({ finishedBefore: new Date(), keep: "result" })).toMatchObject({
        runs: expect.arrayContaining([id])
      })
      expect((yield* streamed(everything(1), id, [])).events).toStrictEqual([live.events.at(-1)])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a damaged mark fails the execution before anything runs; a reference to no entry is left out", () =>
    Effect.gen(function*() {
      const toolkit = slowTool(false).toolkit
      const one = Step.run({ id: "one", execute: (text: string) => text.length })
      const source = fresh("marked")
      yield* streamed(one, source, [], toolkit)
      const [completed, finished] = yield* entriesOf(source)
      const damaged = [
        // The program's output has no step of its own for a mark to start.
        { ...finished, events: ["run"] },
        { ...finished, events: [42] },
        { ...finished, events: [["run"]] },
        { ...finished, events: [{ key: "/one#0", event: { _tag: "Verdict", kind: "loop", iteration: 0 } }] }
      ]
      for (const last of damaged) {
        const id = fresh("damaged")
        yield* recordLedger(id, one, source, [completed!, last], toolkit)
        expect(yield* Effect.flip(streamed(one, id, [], toolkit))).toMatchObject({
          _tag: "ExecutionCheckpointFailed",
          message: expect.stringContaining("does not decode")
        })
      }
      const id = fresh("dangling")
      yield* recordLedger(id, one, source, [completed!, {
        ...finished,
        events: [{ ref: "Completed", key: "/nowhere#0" }]
      }], toolkit)
      expect((yield* streamed(one, id, [], toolkit)).events.map((event) => event._tag)).toStrictEqual([
        "Started",
        "Completed",
        "Output"
      ])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))
})
