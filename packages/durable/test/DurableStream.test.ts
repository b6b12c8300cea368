// @module-tag slow
/**
 * A durable run's events over HTTP from a real server process (an embedded
 * runner on SQLite), read by client processes that are killed mid-run and
 * come back with `Last-Event-ID`, and a cancel that every client sees; in
 * this process, ids past a run's log and run ids with no record.
 */
import { Toolkit } from "@agentloop/core"
import * as EventStreamClient from "@agentloop/core/stream/EventStreamClient"
import { MockLanguageModel, StuckTool } from "@agentloop/testing"
import * as TestProcess from "@agentloop/testing/TestProcess"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import * as Path from "node:path"
import { DurableAgent, DurableEvent, DurableStream, NodeSqliteClient, RunStore } from "../src/index.ts"
import { answer, call, model, ran, sources, tempDir, toolkit, withRunner } from "./fixtures.ts"

const script = TestProcess.bundled(new URL("./streamChild.ts", import.meta.url).pathname, sources)

const Read = Schema.Struct({ id: Schema.String, tag: Schema.String })
const reads = (child: TestProcess.Child) =>
  child.messages.flatMap((message) => Schema.is(Read)(message) ? [message] : [])

/**
 * Reads a run's events in this process, as the killed client's process does: each `{ id, tag }`, then how it ended.
 * `saw` is completed once it has read an event tagged `tag`, or the read ended without one.
 */
const readHere = (
  url: string,
  lastEventId?: string,
  saw?: { readonly tag: string; readonly signal: Deferred.Deferred<void> }
) =>
  Effect.promise(async () => {
    const entries: Array<typeof Read.Type> = []
    try {
      for await (
        const { event, id } of EventStreamClient.entries(DurableEvent.codec, url, undefined, { lastEventId })
      ) {
        entries.push({ id, tag: event._tag })
        if (event._tag === saw?.tag) Deferred.doneUnsafe(saw.signal, Exit.void)
      }
      return { entries, ended: { ended: "end" } as Record<string, unknown> }
    } catch (error) {
      const tagged = error instanceof Error && "_tag" in error
      return {
        entries,
        ended: {
          ended: tagged ? error._tag : String(error),
          source: tagged && "source" in error ? error.source : undefined
        }
      }
    } finally {
      if (saw !== undefined) Deferred.doneUnsafe(saw.signal, Exit.void)
    }
  })

const eventsJson = Schema.fromJsonString(Schema.toCodecJson(DurableEvent.DurableEvent))
const encodeEvent = Schema.encodeSync(eventsJson)
const decodeEvent = Schema.decodeUnknownSync(eventsJson)

const post = (url: string, body = "") =>
  Effect.promise(() => fetch(url, { method: "POST", body }).then(async (response) => await response.text()))

describe.concurrent("DurableStream from a server process", () => {
  it.live(
    "a client killed mid-run comes back with Last-Event-ID: what it saw and what it gets is the whole run, once",
    () => {
      const temp = tempDir()
      return Effect.gen(function*() {
        const filename = Path.join(temp.dir, "runs.db")
        const server = yield* script.spawn({ action: "serve", filename, url: "" })
        const url = String((yield* server.waitFor(TestProcess.has("url")))["url"])
        yield* post(`${url}/runs/r1`, "go")
        const events = `${url}/runs/r1/events`

        const first = yield* script.spawn({ action: "read", filename, url: events })
        yield* first.waitFor(() => reads(first).length >= 3)
        yield* first.kill
        const seen = reads(first)
        expect(seen.length).toBeGreaterThanOrEqual(3)

        const lastEventId = seen[seen.length - 1]!.id
        const again = yield* readHere(events, lastEventId)
        expect(again.ended).toStrictEqual({ ended: "end" })

        // The run went on without its client: a reader from the start gets all of it, ending with Finished.
        const whole = yield* readHere(events)
        expect(whole.ended).toStrictEqual({ ended: "end" })
        const all = whole.entries
        expect(all.at(-1)?.tag).toBe("Finished")
        expect(all.filter((entry) => entry.tag === "TurnCompleted")).toHaveLength(5)
        expect([...seen, ...again.entries]).toStrictEqual(all)
        expect(new Set(all.map((entry) => entry.id)).size).toBe(all.length)
        expect(all.map((entry) => Number(entry.id))).toStrictEqual(all.map((_, i) => i))
      }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(temp.remove)))
    },
    120_000
  )

  it.live(
    "a cancel interrupts the run and every connected client gets Halted by a person; a bad Last-Event-ID is refused",
    () => {
      const temp = tempDir()
      return Effect.gen(function*() {
        const filename = Path.join(temp.dir, "runs.db")
        const server = yield* script.spawn({ action: "serve", filename, url: "" })
        const url = String((yield* server.waitFor(TestProcess.has("url")))["url"])
        yield* post(`${url}/runs/r2`, "hang on")
        const events = `${url}/runs/r2/events`
        // Two clients follow the run into its first turn's call, which never ends, so neither stream ends by itself.
        const seen = [Deferred.makeUnsafe<void>(), Deferred.makeUnsafe<void>()]
        const clients = yield* Effect.forkChild(
          Effect.all(seen.map((signal) => readHere(events, undefined, { tag: "TurnCompleted", signal })), {
            concurrency: 2
          })
        )
        yield* Effect.all(seen.map(Deferred.await))
        const before = yield* readHere(events).pipe(Effect.timeout("500 millis"), Effect.option)
        expect(before._tag).toBe("None")
        expect(yield* post(`${url}/runs/r2/cancel`)).toBe("cancelled\n")
        for (const client of yield* Fiber.join(clients)) {
          expect(client.ended).toStrictEqual({ ended: "Halted", source: "person" })
          expect(client.entries.map((entry) => entry.tag)).toStrictEqual(["TurnStarted", "TurnCompleted"])
        }
        // A client that connects later gets the whole run and its termination; a second cancel changes nothing.
        expect((yield* readHere(events)).ended).toStrictEqual({ ended: "Halted", source: "person" })
        expect(yield* post(`${url}/runs/r2/cancel`)).toBe("already ended\n")

        const refused = yield* Effect.promise(() => fetch(events, { headers: { "last-event-id": "12abc" } }))
        expect(refused.status).toBe(400)
      }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(temp.remove)))
    },
    120_000
  )

  it.live(
    "a cancel of a run id never started cancels nothing: it answers false, and the run starts and finishes later",
    () => {
      const temp = tempDir()
      return Effect.gen(function*() {
        const filename = Path.join(temp.dir, "runs.db")
        const server = yield* script.spawn({ action: "serve", filename, url: "" })
        const url = String((yield* server.waitFor(TestProcess.has("url")))["url"])
        // A guessed id: nothing runs under it, and nothing may be written under it.
        expect(yield* post(`${url}/runs/r3/cancel`)).toBe("already ended\n")
        yield* post(`${url}/runs/r3`, "go")
        const run = yield* readHere(`${url}/runs/r3/events`)
        expect(run.ended).toStrictEqual({ ended: "end" })
        expect(run.entries.at(-1)?.tag).toBe("Finished")
      }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(temp.remove)))
    },
    120_000
  )
})

describe("DurableStream.cancel of a run in this process", () => {
  it.live("interrupts a tool mid-call: no further model request, and the run ends Halted by a person", () => {
    const { started, stopped, tool } = StuckTool.make("endless")
    const agent = DurableAgent.make("canceller", { model, toolkit: Toolkit.make(tool) })
    return withRunner(
      agent.layer,
      [call("endless", {}), answer("never asked")],
      Effect.gen(function*() {
        yield* agent.start({ runId: "c1", input: "Go" })
        yield* Deferred.await(started)
        expect(yield* DurableStream.cancel(agent, "c1", { reason: "the user pressed stop" })).toBe(true)
        // The call stops (the engine's own interruption would wait for it to end), and the run replays to its end.
        yield* Deferred.await(stopped)
        const ended = yield* Effect.flip(agent.run({ runId: "c1", input: "Go" }))
        expect(ended).toMatchObject({ _tag: "Halted", source: "person", reason: "the user pressed stop" })
        const events = yield* Effect.flip(Stream.runCollect(agent.events("c1", { fromStep: 1 })))
        expect(events).toMatchObject({ _tag: "Halted", source: "person" })
        expect(yield* (yield* MockLanguageModel.MockLanguageModel).requests).toHaveLength(1)
        expect(yield* DurableStream.cancel(agent, "c1")).toBe(false)
      })
    )
  }, 30_000)

  it.live("ends a run that waits for a decision: Halted by a person, and the call it waited for never runs", () => {
    const agent = DurableAgent.make("waiter", { model, toolkit })
    const before = ran.remove
    return withRunner(
      agent.layer,
      [call("remove", { path: "/etc/x" }), answer("never asked")],
      Effect.gen(function*() {
        yield* agent.start({ runId: "w1", input: "Remove /etc/x" })
        yield* agent.events("w1", { fromStep: 1 }).pipe(
          Stream.filter((event) => event._tag === "ApprovalRequested"),
          Stream.runHead
        )
        expect(yield* DurableStream.cancel(agent, "w1")).toBe(true)
        expect(yield* Effect.flip(agent.run({ runId: "w1", input: "Remove /etc/x" }))).toMatchObject({
          _tag: "Halted",
          source: "person"
        })
        expect(ran.remove).toBe(before)
        expect(yield* (yield* MockLanguageModel.MockLanguageModel).requests).toHaveLength(1)
      })
    )
  }, 30_000)

  it.live("a run that logs where the cancel writes its end: the end goes after it, the log read on from there", () => {
    const agent = DurableAgent.make("racer", { model, toolkit })
    const input = "Remove /etc/y"
    return withRunner(
      agent.layer,
      [call("remove", { path: "/etc/y" }), answer("never asked")],
      Effect.gen(function*() {
        yield* agent.start({ runId: "r1", input })
        yield* agent.events("r1", { fromStep: 1 }).pipe(
          Stream.filter((event) => event._tag === "ApprovalRequested"),
          Stream.runHead
        )
        const store = yield* RunStore.RunStore
        const run = { agent: agent.name, runId: "r1" }
        const before = yield* store.read(run, { afterSeq: -1, fromStep: 0, limit: 1000 })
        const end = before.length
        // What the run logs first at the end's place: its first turn completed again, as a second one.
        const first = before.map((entry) => decodeEvent(entry.body)).find((event) => event._tag === "TurnCompleted")
        if (first?._tag !== "TurnCompleted") return expect.unreachable("the run completed a turn")
        const second = { ...first, step: 2, accounting: { ...first.accounting, steps: 2 } }
        const scans: Array<number> = []
        let raced = false
        const racing = RunStore.RunStore.of({
          ...store,
          read: (run, options) =>
            Effect.tap(
              store.read(run, options),
              () => Effect.sync(() => options.limit > 1 && scans.push(options.afterSeq))
            ),
          commit: (run, records) => {
            const written = records.entries[0]
            if (raced || written?.kind !== "failure") return store.commit(run, records)
            raced = true
            const logged = { ...written, kind: "event" as const, body: encodeEvent(second) }
            return Effect.andThen(store.commit(run, { steps: [], entries: [logged] }), store.commit(run, records))
          }
        })
        expect(yield* DurableStream.cancel(agent, "r1").pipe(Effect.provideService(RunStore.RunStore, racing)))
          .toBe(true)
        // The log read once from its start; after the place was taken, from that place on.
        expect(scans).toStrictEqual([-1, end - 1, end - 1, end])
        const after = yield* store.read(run, { afterSeq: end - 1, fromStep: 0, limit: 10 })
        expect(after.map((entry) => [entry.seq, entry.kind])).toStrictEqual([[end, "event"], [end + 1, "failure"]])
        expect(yield* Effect.flip(agent.run({ runId: "r1", input }))).toMatchObject({
          _tag: "Halted",
          source: "person",
          accounting: { steps: 2 }
        })
      })
    )
  }, 30_000)
})

describe("DurableStream in this process", () => {
  const withStore = <A, E>(effect: Effect.Effect<A, E, RunStore.RunStore>) => {
    const temp = tempDir()
    return effect.pipe(
      Effect.provide(
        RunStore.layer().pipe(Layer.provide(NodeSqliteClient.layer({ filename: Path.join(temp.dir, "runs.db") })))
      ),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  }

  it.live("a Last-Event-ID past the run's log is refused with 400", () =>
    withStore(Effect.gen(function*() {
      const run = { agent: "walker", runId: "logged" }
      yield* (yield* RunStore.RunStore).commit(run, {
        steps: [],
        entries: [
          { seq: 0, step: 1, kind: "event", body: encodeEvent({ _tag: "TurnStarted", step: 1 }) },
          { seq: 1, step: 1, kind: "event", body: encodeEvent({ _tag: "TurnStarted", step: 2 }) }
        ]
      })
      const status = (after: number) =>
        Effect.map(DurableStream.toHttpResponse(run.agent, run.runId, { after }), (r) => r.status)
      expect(yield* status(1)).toBe(200)
      expect(yield* status(2)).toBe(400)
      expect(yield* status(17)).toBe(400)
    })))

  it.live("a run the store has no record of is waited for up to startTimeout; one begun, for as long as it takes", () =>
    withStore(Effect.gen(function*() {
      const store = yield* RunStore.RunStore
      const options = { startTimeout: "50 millis", pollInterval: "5 millis" } as const
      const unknown = yield* Effect.flip(
        Stream.runDrain(DurableStream.read({ agent: "walker", runId: "never" }, DurableEvent.DurableEvent, options))
      )
      expect(unknown).toMatchObject({ _tag: "RunStoreError", operation: "read" })
      expect(unknown.message).toContain("has no record")
      // A run a runner began, whose first turn is long: its reader waits past the bound, until its first event.
      const run = { agent: "walker", runId: "slow" }
      yield* store.begin(run)
      const reading = yield* Effect.forkChild(
        Stream.runCollect(Stream.take(DurableStream.read(run, DurableEvent.DurableEvent, options), 1))
      )
      yield* Effect.sleep("100 millis")
      yield* store.commit(run, {
        steps: [],
        entries: [{ seq: 0, step: 1, kind: "event", body: encodeEvent({ _tag: "TurnStarted", step: 1 }) }]
      })
      expect(yield* Fiber.join(reading)).toHaveLength(1)
    })))
})
