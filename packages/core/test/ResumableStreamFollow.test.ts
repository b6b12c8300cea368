/**
 * A run another executor holds (a fiber outside the server's registry, holding the run's lease), followed from
 * its log by `ResumableStream` on every store: each look reads only what the run appended since the last (and
 * the entry before it, to compare), and the client gets every recorded event once, in order, compactions of the
 * log under it included.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schedule, Schema, Stream } from "effect"
import type * as AgentEvent from "../src/agent/AgentEvent.ts"
import * as AgentHistory from "../src/agent/AgentHistory.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as CheckpointStore from "../src/CheckpointStore.ts"
import * as LiveRuns from "../src/stream/LiveRuns.ts"
import * as ResumableStream from "../src/stream/ResumableStream.ts"
import * as RunCursor from "../src/stream/RunCursor.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { eachStore, fresh, read } from "./checkpointFixtures.ts"

/** The turns that call a tool, before the run answers. */
const turns = 6

/** The gates of the runs' calls: a call waits at its own until the test opens it. */
const gates = new Map<string, Deferred.Deferred<void>>()
const gate = (name: string) => {
  const found = gates.get(name)
  if (found !== undefined) return found
  const made = Deferred.makeUnsafe<void>()
  gates.set(name, made)
  return made
}

const hold = Tool.make({
  name: "hold",
  description: "Waits at its gate",
  input: Schema.Struct({ gate: Schema.String }),
  output: Schema.String,
  idempotent: true,
  execute: ({ gate: name }) => Effect.as(Deferred.await(gate(name)), "opened")
})

/** Turn `i` of run `runId` calls `hold` at gate `<runId>/<i>`; then the run answers. */
const script = (runId: string) => [
  ...Array.from(
    { length: turns },
    (_, i) =>
      MockLanguageModel.callsTurn([{ name: "hold", arguments: { gate: `${runId}/${i + 1}` }, callId: `call_${i + 1}` }])
  ),
  MockLanguageModel.textTurn("Done.")
]

/** What each read of a log returned: the entry it read from, and how many entries. */
interface Look {
  readonly from: number
  readonly count: number
}

/** The store in context, noting what each `read` and `readFrom` returned in `looks`. */
const noting = (looks: Array<Look>) =>
  Layer.effect(Checkpointer.Checkpointer)(Effect.map(Checkpointer.Checkpointer, (store) => {
    const note = (from: number) => (entries: ReadonlyArray<string>) =>
      Effect.sync(() => looks.push({ from, count: entries.length }))
    return {
      ...store,
      read: (id: string) => Effect.tap(store.read(id), note(0)),
      readFrom: (id: string, from: number) => Effect.tap(CheckpointStore.readFrom(store, id, from), note(from))
    }
  }))

/** The SSE ids a client that has `events` from the start was sent, in order (see `RunCursor`). */
const idsOf = <O>(events: ReadonlyArray<AgentEvent.AgentEvent<O>>): Array<string> => {
  const keyOf = RunCursor.keys()
  let cursor: RunCursor.Cursor | undefined
  return events.flatMap((event) => {
    const key = keyOf(event)
    if (key === undefined) return []
    cursor = RunCursor.advance(cursor, key)
    return [RunCursor.eventId(cursor)]
  })
}

/** Waits until `done` holds, looking every few milliseconds. */
const until = (done: () => boolean) =>
  Effect.repeat(Effect.sync(done), { until: (holds) => holds, schedule: Schedule.spaced("2 millis") })

/**
 * Executes `options` in a fiber outside the registry (it holds the run's lease), and follows it as a client from
 * its first turn on, opening each turn's gate once the client has that turn's completion: the ids of the events
 * the execution streamed, and the ids the client got.
 */
const followed = (options: AgentLoop.Options<string, never> & { readonly runId: string }) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    const execution = yield* Effect.forkChild(Stream.runCollect(agent.stream(options)))
    yield* until(() => gates.has(`${options.runId}/1`))
    const got: Array<string> = []
    const client = yield* Effect.forkChild(Stream.runForEach(
      yield* ResumableStream.events(options, { pollInterval: 5 }),
      (entry) => Effect.sync(() => entry.id !== undefined && got.push(entry.id))
    ))
    for (let turn = 1; turn <= turns; turn++) {
      yield* until(() => got.includes(`${turn}.1`))
      yield* Deferred.succeed(gate(`${options.runId}/${turn}`), undefined)
    }
    const streamed = idsOf(yield* Fiber.join(execution))
    yield* Fiber.join(client)
    return { streamed, got }
  })

/** The agent on its script for run `runId`, the registry, and the store noting its reads in `looks`. */
const services = (runId: string, looks: Array<Look>, store: Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  Layer.mergeAll(LiveRuns.layer, AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script(runId))))).pipe(
    Layer.provideMerge(noting(looks)),
    Layer.provide(store)
  )

const suite = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.live(
      "a run another executor holds: the client gets every recorded event once, in order, each look reading only what was appended",
      () => {
        const looks: Array<Look> = []
        const options = { input: "Hold", toolkit: Toolkit.make(hold), runId: fresh("followed") }
        return Effect.gen(function*() {
          const { got, streamed } = yield* followed(options)
          expect(got).toStrictEqual(streamed)
          expect(got.at(-1)).toBe(`${turns + 1}.5`)
          // One look a turn at least; the first read the log whole, each after what was appended since and the entry
          // before it (a look of the whole log each time reads some 70 entries here).
          const client = [...looks]
          const length = (yield* read(options.runId)).length
          expect(client.length).toBeGreaterThan(turns)
          expect(client.reduce((sum, look) => sum + look.count, 0)).toBeLessThanOrEqual(length + client.length)
        }).pipe(Effect.provide(services(options.runId, looks, layer())))
      },
      30_000
    )

    it.live("a log compacted under the client: it gets each recorded event it could read, once, in order", () => {
      const looks: Array<Look> = []
      const options = { input: "Hold", toolkit: Toolkit.make(hold), runId: fresh("compacted"), compactAfter: 3 }
      return Effect.gen(function*() {
        const { got, streamed } = yield* followed(options)
        // Every turn's start and completion (the test waited for each), and the run's end: each once, in order.
        expect(streamed.filter((id) => got.includes(id))).toStrictEqual(got)
        for (let turn = 1; turn <= turns + 1; turn++) expect(got).toContain(`${turn}.1`)
        const ended = yield* AgentHistory.events(options)
        expect(ended.events.length).toBeLessThan(streamed.length)
        // From the second turn on, each decision replaced the log with a snapshot after the client had read the
        // turn: shorter than what it had read, or as long with another entry where it had read last. The client
        // read it from its start again, and got the rest of the run.
        for (const id of idsOf(ended.events)) expect(got).toContain(id)
      }).pipe(Effect.provide(services(options.runId, looks, layer())))
    }, 30_000)
  })

describe("ResumableStream following a run executed elsewhere", () => {
  eachStore("resumable-follow", suite)
})
