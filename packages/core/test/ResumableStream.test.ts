/**
 * `Checkpointer` runs served as resumable Server-Sent Events, over real HTTP
 * in this process (the crash cases, with real processes, are in
 * `ResumableStreamCrash.test.ts`): a client that goes away and comes back
 * with its last id, a finished run, ids this server never wrote, a cancel
 * that every client sees, a run executed elsewhere, a client with other
 * options, a client too slow, and the registry's lifetime.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Schema, Scope, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Http from "node:http"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as EventStream from "../src/stream/EventStream.ts"
import * as EventStreamClient from "../src/stream/EventStreamClient.ts"
import * as LiveRuns from "../src/stream/LiveRuns.ts"
import * as ResumableStream from "../src/stream/ResumableStream.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"

/** Calls that wait `ms` milliseconds, forever when negative, or until the gate they name opens. */
const deferreds = new Map<string, Deferred.Deferred<void>>()
const deferred = (name: string) => {
  const found = deferreds.get(name)
  if (found !== undefined) return found
  const made = Deferred.makeUnsafe<void>()
  deferreds.set(name, made)
  return made
}
/** The gate of run `runId`'s second call (or turn), and the signal that it is waiting at it. */
const gate = (runId: string) => deferred(`${runId}/open`)
const atGate = (runId: string) => deferred(`${runId}/reached`)
const wait = Tool.make({
  name: "wait",
  description: "Waits",
  input: Schema.Struct({ ms: Schema.Int, gate: Schema.optionalKey(Schema.String) }),
  output: Schema.String,
  idempotent: true,
  execute: ({ gate: name, ms }) =>
    name === undefined
      ? Effect.as(Effect.sleep(ms), `waited ${ms} ms`)
      : Deferred.succeed(atGate(name), undefined).pipe(
        Effect.andThen(ms < 0 ? Effect.never : Deferred.await(gate(name))),
        Effect.as("opened")
      )
})
const toolkit = Toolkit.make(wait)

/**
 * Three turns of a call each, then an answer. A run whose task starts with "hang" waits forever at its first
 * call, one whose task starts with "gate" at its second call until its gate opens, and one whose task starts with
 * "stall" in the middle of its second turn (after two deltas) until its gate opens.
 */
const respond: MockLanguageModel.Respond = ({ history }) => {
  const calls = history.filter((item) => item.type === "function_call").length
  const first = history[0]
  const task = first?.type === "message" && first.content[0] !== undefined && "text" in first.content[0]
    ? first.content[0].text
    : ""
  const hang = task.startsWith("hang") && calls === 0
  const turn = calls < 3
    ? MockLanguageModel.callsTurn([{
      name: "wait",
      arguments: hang
        ? { ms: -1, gate: task }
        : task.startsWith("gate") && calls === 1
        ? { ms: 5, gate: task }
        : { ms: 5 },
      callId: `call_${calls}`
    }], { text: `Step ${calls + 1}, in a few words.` })
    : MockLanguageModel.textTurn("All done, in a few words.")
  return task.startsWith("stall") && calls === 1
    ? MockLanguageModel.held(
      turn,
      2,
      Effect.andThen(Deferred.succeed(atGate(task), undefined), Deferred.await(gate(task)))
    )
    : turn
}

const optionsFor = (runId: string, input = runId) => ({ input, toolkit, runId })

const routes = Layer.mergeAll(
  HttpRouter.add(
    "GET",
    "/runs/:id/events",
    Effect.gen(function*() {
      const { id } = yield* HttpRouter.params
      const request = yield* HttpServerRequest.HttpServerRequest
      const input = new URL(request.url, "http://localhost").searchParams.get("input") ?? undefined
      return yield* ResumableStream.toHttpResponse(optionsFor(id ?? "", input), EventStream.agent, {
        headers: request.headers,
        pollInterval: 20
      })
    })
  ),
  HttpRouter.add(
    "POST",
    "/runs/:id/cancel",
    Effect.gen(function*() {
      const { id } = yield* HttpRouter.params
      const cancelled = yield* ResumableStream.cancel(optionsFor(id ?? ""), { reason: "the user pressed stop" })
      return HttpServerResponse.text(cancelled ? "cancelled\n" : "already ended\n")
    }).pipe(Effect.orDie)
  )
)

const model = MockLanguageModel.layer(respond, { chunkSize: 4, delay: "1 millis" })

/** Serves the routes with a registry of their own in `scope` (its runs stop when it closes); the base URL. */
const serveIn = (scope: Scope.Scope, services: Context.Context<Services>) =>
  Effect.gen(function*() {
    const server = Http.createServer()
    yield* Layer.buildWithScope(
      HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provide(LiveRuns.layer),
        Layer.provide(Layer.succeedContext(services)),
        Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
      ),
      scope
    )
    yield* Scope.addFinalizer(scope, Effect.sync(() => server.closeAllConnections()))
    const address = server.address()
    return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  })

/** The agent, its model and a checkpointer in memory, for one test: its servers share them. */
const services = AgentLoop.layer.pipe(Layer.provideMerge(model), Layer.provideMerge(Checkpointer.layerMemory))

type Services = Checkpointer.Checkpointer | MockLanguageModel.MockLanguageModel | AgentLoop.AgentLoop

/** Serves the routes until the test's scope closes, on the test's services. */
const serve = Effect.gen(function*() {
  return yield* serveIn(yield* Effect.scope, yield* Effect.context<Services>())
})

interface Read {
  readonly entries: ReadonlyArray<{ readonly id: string; readonly tag: string }>
  readonly ended: string
  readonly source?: string | undefined
}

/**
 * Reads `url` from `lastEventId` on, leaving after `leaveAfter` events (or once the events it has pass it):
 * each event's id and tag, and how it ended. `saw` is completed when an event of tag `sawTag` (default
 * TurnCompleted) arrives.
 */
const readEvents = (
  url: string,
  options: {
    readonly lastEventId?: string
    readonly leaveAfter?: number | ((entries: Read["entries"]) => boolean)
    readonly saw?: Deferred.Deferred<void>
    readonly sawTag?: string
  } = {}
) =>
  Effect.promise(async (): Promise<Read> => {
    const entries: Array<{ id: string; tag: string }> = []
    try {
      const read = EventStreamClient.entries(EventStream.agent, url, undefined, { lastEventId: options.lastEventId })
      for await (const { event, id } of read) {
        entries.push({ id, tag: event._tag })
        if (options.saw !== undefined && event._tag === (options.sawTag ?? "TurnCompleted")) {
          Deferred.doneUnsafe(options.saw, Exit.void)
        }
        const leave = options.leaveAfter
        if (typeof leave === "number" ? entries.length === leave : leave?.(entries)) return { entries, ended: "left" }
      }
      return { entries, ended: "end" }
    } catch (error) {
      const tagged = error instanceof Error && "_tag" in error
      return {
        entries,
        ended: tagged ? String(error._tag) : String(error),
        source: tagged && "source" in error ? String(error.source) : undefined
      }
    }
  })

/**
 * The recorded events of reads, each from the last id of the one before: those whose id changed (an unrecorded
 * event repeats the last id).
 */
const recorded = (...reads: ReadonlyArray<Read>) => {
  const entries = reads.flatMap((read) => read.entries)
  return entries.filter((entry, i) => entry.id !== "" && entry.id !== (entries[i - 1]?.id ?? ""))
}

const post = (url: string) => Effect.promise(() => fetch(url, { method: "POST" }).then((response) => response.text()))

describe("ResumableStream over HTTP", () => {
  it.live(
    "a client that goes away comes back with its last id: what it saw and what it gets is the whole run, once",
    () =>
      Effect.gen(function*() {
        const url = `${yield* serve}/runs/walk/events`
        // The first client leaves in the middle of the second turn's deltas, when the run has recorded 5 events.
        const first = yield* readEvents(url, { leaveAfter: 25 })
        expect(recorded(first).length).toBeGreaterThanOrEqual(4)
        const lastEventId = first.entries.at(-1)!.id
        const rest = yield* readEvents(url, { lastEventId })
        expect(rest.ended).toBe("end")

        const whole = yield* readEvents(url)
        expect(whole.ended).toBe("end")
        // A client from the start of a finished run gets its recorded events: no deltas.
        expect(whole.entries.map((entry) => entry.tag)).toStrictEqual([
          "TurnStarted",
          "TurnCompleted",
          "ToolResult",
          "Verdict",
          "TurnStarted",
          "TurnCompleted",
          "ToolResult",
          "Verdict",
          "TurnStarted",
          "TurnCompleted",
          "ToolResult",
          "Verdict",
          "TurnStarted",
          "TurnCompleted",
          "Verdict",
          "Finished"
        ])
        expect(whole.entries.map((entry) => entry.id).slice(0, 5)).toStrictEqual(["1.0", "1.1", "1.2.1", "1.3", "2.0"])
        expect(whole.entries.at(-1)?.id).toBe("4.5")
        // No gap and no duplicate.
        expect(recorded(first, rest)).toStrictEqual(whole.entries)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live(
    "a client cut twice in the middle of a turn, back each time with the last id it has, gets the run once",
    () =>
      Effect.gen(function*() {
        const url = `${yield* serve}/runs/stall-twice/events`
        // Cut in the middle of the second turn's text, where the run waits (two deltas past its start)...
        const first = yield* readEvents(url, {
          leaveAfter: (entries) => entries.at(-3)?.tag === "TurnStarted" && entries.at(-3)?.id === "2.0"
        })
        expect(first.entries.at(-1)).toStrictEqual({ id: "2.0", tag: "Delta" })
        // ...back with its last id, it gets those deltas again, keeping that id; cut again in the same place.
        const second = yield* readEvents(url, { lastEventId: "2.0", leaveAfter: 2 })
        expect(second.entries).toStrictEqual([{ id: "2.0", tag: "Delta" }, { id: "2.0", tag: "Delta" }])
        yield* Deferred.succeed(gate("stall-twice"), undefined)
        const rest = yield* readEvents(url, { lastEventId: second.entries.at(-1)!.id })
        expect(rest.ended).toBe("end")
        expect(recorded(first, second, rest)).toStrictEqual((yield* readEvents(url)).entries)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live(
    "a client connecting to a finished run gets the whole run and its end; with its last id, only the end",
    () =>
      Effect.gen(function*() {
        const url = `${yield* serve}/runs/finished/events`
        const live = yield* readEvents(url)
        expect(live.ended).toBe("end")
        expect(live.entries.some((entry) => entry.tag === "Delta")).toBe(true)
        const again = yield* readEvents(url)
        expect(again.entries).toStrictEqual(recorded(live))
        const after = yield* readEvents(url, { lastEventId: live.entries.at(-1)!.id })
        expect(after).toStrictEqual({ entries: [], ended: "end" })
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live(
    "a Last-Event-ID this server never wrote is refused with 400, and starts nothing",
    () =>
      Effect.gen(function*() {
        const base = yield* serve
        const status = (id: string, run = "refused") =>
          Effect.promise(() =>
            fetch(`${base}/runs/${run}/events`, { headers: { "last-event-id": id } }).then(async (response) => ({
              status: response.status,
              text: await response.text()
            }))
          )
        for (const id of ["abc", "01.0", "1.2", "1.2.0", "1.9", "-1", "x".repeat(9000)]) {
          const refused = yield* status(id)
          expect(refused.status, id).toBe(400)
          expect(refused.text, id).toContain("is not an id of this stream")
        }
        // A well-formed id past the run's events: the run has recorded nothing, so only its first turn's start is possible.
        expect((yield* status("2.0")).status).toBe(400)
        expect((yield* status("1.1")).status).toBe(400)
        const registry = yield* readEvents(`${base}/runs/refused/events`, { leaveAfter: 1 })
        expect(registry.entries).toStrictEqual([{ id: "1.0", tag: "TurnStarted" }])
        // Once finished, nothing past its end.
        const finished = yield* readEvents(`${base}/runs/done/events`)
        expect(finished.ended).toBe("end")
        expect((yield* status("5.0", "done")).status).toBe(400)
        expect((yield* status("4.5", "done")).status).toBe(200)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live(
    "a cancel reaches every attached client as Halted by person; later clients and executions get the same",
    () =>
      Effect.gen(function*() {
        const base = yield* serve
        const url = `${base}/runs/hang-cancel/events`
        const saw = [yield* Deferred.make<void>(), yield* Deferred.make<void>()] as const
        const clients = yield* Effect.forkChild(
          Effect.all([readEvents(url, { saw: saw[0] }), readEvents(url, { saw: saw[1] })], { concurrency: 2 })
        )
        // Both follow the run, which is in its first call (which never ends).
        yield* Effect.all([Deferred.await(saw[0]), Deferred.await(saw[1]), Deferred.await(atGate("hang-cancel"))])
        expect(yield* post(`${base}/runs/hang-cancel/cancel`)).toBe("cancelled\n")
        for (const client of yield* Fiber.join(clients)) {
          expect(client.ended).toBe("Halted")
          expect(client.source).toBe("person")
          expect(recorded(client).map((entry) => entry.tag)).toStrictEqual(["TurnStarted", "TurnCompleted"])
        }
        const later = yield* readEvents(url)
        expect(later).toStrictEqual({
          entries: [{ id: "1.0", tag: "TurnStarted" }, { id: "1.1", tag: "TurnCompleted" }],
          ended: "Halted",
          source: "person"
        })
        expect(yield* post(`${base}/runs/hang-cancel/cancel`)).toBe("already ended\n")
        // Executed again by anyone, the run ends the same way, asking the model nothing.
        const agent = yield* AgentLoop.AgentLoop
        const mock = yield* MockLanguageModel.MockLanguageModel
        const asked = (yield* mock.requests).length
        const again = yield* Effect.flip(agent.run(optionsFor("hang-cancel")))
        expect(again).toMatchObject({ _tag: "Halted", source: "person", reason: "the user pressed stop" })
        expect((yield* mock.requests).length).toBe(asked)
        // A run cancelled before any client started it never runs.
        expect(yield* post(`${base}/runs/never/cancel`)).toBe("cancelled\n")
        expect((yield* readEvents(`${base}/runs/never/events`)).ended).toBe("Halted")
        expect((yield* mock.requests).length).toBe(asked)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live(
    "closing the registry stops its runs (their clients are cut off), which resume when a client comes back",
    () =>
      Effect.gen(function*() {
        const built = yield* Effect.context<Services>()
        const mock = Context.get(built, MockLanguageModel.MockLanguageModel)
        const scope = yield* Scope.make()
        const base = yield* serveIn(scope, built)
        const url = `${base}/runs/gate-restart/events`
        // The run waits at its second call's gate; the server stops then (its registry's scope closes).
        const first = yield* readEvents(url, { leaveAfter: 12 })
        yield* Deferred.await(atGate("gate-restart"))
        const before = (yield* mock.requests).length
        expect(before).toBe(2)
        const cut = yield* Effect.forkChild(readEvents(url, { lastEventId: first.entries.at(-1)!.id }))
        yield* Effect.sleep("100 millis")
        yield* Scope.close(scope, Exit.void)
        const during = yield* Fiber.join(cut)
        expect(during.ended).toBe("EventStreamError")

        // A new server on the same checkpoints: the client comes back, and the run resumes where it stopped.
        yield* Deferred.succeed(gate("gate-restart"), undefined)
        const again = yield* serveIn(yield* Effect.scope, built)
        const lastEventId = [...first.entries, ...during.entries].at(-1)!.id
        const rest = yield* readEvents(`${again}/runs/gate-restart/events`, { lastEventId })
        expect(rest.ended).toBe("end")
        // Asked only for the turns after the second: its answered turns came from the log.
        expect((yield* mock.requests).length).toBe(before + 2)
        const whole = yield* readEvents(`${again}/runs/gate-restart/events`)
        expect(recorded(first, during, rest)).toStrictEqual(whole.entries)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live("a run another executor holds is followed from its log until it ends", () =>
    Effect.gen(function*() {
      const base = yield* serve
      const agent = yield* AgentLoop.AgentLoop
      // Executed outside the server's registry: its lease is held, so the server reads its log instead.
      const elsewhere = yield* Effect.forkChild(agent.run(optionsFor("gate-elsewhere")))
      yield* Deferred.await(atGate("gate-elsewhere"))
      const saw = yield* Deferred.make<void>()
      const following = yield* Effect.forkChild(
        readEvents(`${base}/runs/gate-elsewhere/events`, { saw, sawTag: "Verdict" })
      )
      yield* Deferred.await(saw)
      yield* Deferred.succeed(gate("gate-elsewhere"), undefined)
      yield* Fiber.join(elsewhere)
      const followed = yield* Fiber.join(following)
      expect(followed.ended).toBe("end")
      expect(followed.entries.map((entry) => entry.tag).at(-1)).toBe("Finished")
      expect(followed.entries).toStrictEqual(recorded(followed))
      expect(followed.entries).toHaveLength(16)
    }).pipe(Effect.scoped, Effect.provide(services)), 30_000)

  it.live(
    "a client asking for a live run with other options gets CheckpointFailed, naming what differs",
    () =>
      Effect.gen(function*() {
        const base = yield* serve
        const url = `${base}/runs/hang-other/events`
        const owner = yield* Effect.forkChild(readEvents(url))
        yield* Deferred.await(atGate("hang-other"))
        const other = yield* Effect.promise(async () => {
          try {
            for await (const _ of EventStreamClient.events(EventStream.agent, `${url}?input=something%20else`)) {
              // nothing is sent before the refusal
            }
            return undefined
          } catch (error) {
            return error
          }
        })
        expect(other).toMatchObject({ _tag: "CheckpointFailed" })
        expect((other as Error).message).toContain("was recorded with another input")
        yield* Fiber.interrupt(owner)
        yield* post(`${base}/runs/hang-other/cancel`)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )
})

const waitTurn = MockLanguageModel.callsTurn([{ name: "wait", arguments: { ms: 0 }, callId: "call_0" }])

/** A model whose first turn calls `wait`, and whose second never goes past its start. */
const stalledInSecondTurn = MockLanguageModel.layer([
  waitTurn,
  MockLanguageModel.held(MockLanguageModel.textTurn("Never said."), 0, Effect.never)
])

/** Follows run `options.runId` from the start up to its second turn's start, and leaves: the last id it has. */
const untilSecondTurn = (options: ResumableStream.RunOptions<string, never, never, never>) =>
  Effect.flatMap(ResumableStream.events(options), (stream) =>
    stream.pipe(
      Stream.takeUntil((entry) => entry.event._tag === "TurnStarted" && entry.event.step === 2),
      Stream.runCollect,
      Effect.map((entries) => entries.at(-1)?.id)
    ))

/** Follows run `options.runId` again, from after `id`, to its end. */
const comeBack = (options: ResumableStream.RunOptions<string, never, never, never>, id: string | undefined) =>
  Effect.flatMap(
    ResumableStream.lastEventId({ "last-event-id": id }),
    (after) => Effect.flatMap(ResumableStream.events(options, { after }), Stream.runCollect)
  )

describe("ResumableStream.events", () => {
  it.live(
    "a client too far behind is let go, and comes back for the rest with its last id",
    () =>
      Effect.gen(function*() {
        const registry = yield* LiveRuns.make({ capacity: 4 })
        const events = (after?: ResumableStream.Options["after"]) =>
          ResumableStream.events(optionsFor("slow-client"), { after }).pipe(
            Effect.provideService(LiveRuns.LiveRuns, registry)
          )
        const stream = yield* events()
        const taken: Array<ResumableStream.Entry<unknown>> = []
        // It reads one event, then nothing while the run streams on.
        const exit = yield* stream.pipe(
          Stream.tap((entry) =>
            Effect.sync(() => taken.push(entry)).pipe(
              Effect.andThen(taken.length === 1 ? Effect.sleep("300 millis") : Effect.void)
            )
          ),
          Stream.runDrain,
          Effect.exit
        )
        expect(exit).toMatchObject({ _tag: "Failure" })
        const error = Exit.isFailure(exit)
          ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
          : undefined
        expect(error).toMatchObject({ _tag: "Detached", reason: "behind" })
        const last = taken.filter((entry) => entry.id !== undefined).at(-1)!
        const after = yield* ResumableStream.lastEventId({ "last-event-id": last.id! })
        const rest = yield* Stream.runCollect(yield* events(after))
        expect(rest.at(-1)?.event._tag).toBe("Finished")
        const ids = [...taken, ...rest].flatMap((entry) => entry.id === undefined ? [] : [entry.id])
        expect(new Set(ids).size).toBe(ids.length)
      }).pipe(Effect.scoped, Effect.provide(services)),
    30_000
  )

  it.live("a client back with the start of the turn its run was cancelled in gets the cancellation", () =>
    Effect.gen(function*() {
      const options = optionsFor("stalled")
      const id = yield* untilSecondTurn(options)
      expect(id).toBe("2.0")
      expect(yield* ResumableStream.cancel(options)).toBe(true)
      expect(yield* Effect.flip(comeBack(options, id))).toMatchObject({ _tag: "Halted", source: "person" })
    }).pipe(
      Effect.provide(LiveRuns.layer),
      Effect.provide(
        AgentLoop.layer.pipe(Layer.provide(stalledInSecondTurn), Layer.provideMerge(Checkpointer.layerMemory))
      )
    ))

  it.live("a client back at once from a run that failed gets the run executed again, not the failure", () =>
    Effect.gen(function*() {
      const options = optionsFor("failed")
      // The client follows the run to its failure: its last id is the start of the turn that failed.
      const seen: Array<ResumableStream.Entry<unknown>> = []
      const failed = yield* Effect.flatMap(
        ResumableStream.events(options),
        (stream) =>
          stream.pipe(Stream.tap((entry) => Effect.sync(() => seen.push(entry))), Stream.runDrain, Effect.flip)
      )
      expect(failed).toMatchObject({ _tag: "DuringExecution" })
      const id = seen.findLast((entry) => entry.id !== undefined)?.id
      expect(id).toBe("2.0")
      // It comes back at once: the run is executed again, from its log, and its second turn asked again.
      const rest = yield* comeBack(options, id)
      expect(rest.map((entry) => entry.event._tag).filter((tag) => tag !== "Delta")).toStrictEqual([
        "TurnCompleted",
        "Verdict",
        "Finished"
      ])
      expect(yield* (yield* MockLanguageModel.MockLanguageModel).requests).toHaveLength(3)
    }).pipe(
      Effect.provide(LiveRuns.layer),
      Effect.provide(
        AgentLoop.layer.pipe(
          Layer.provideMerge(MockLanguageModel.layer([
            waitTurn,
            new AiError.Unavailable({ provider: "mock", message: "overloaded" }),
            MockLanguageModel.textTurn("Done.")
          ])),
          Layer.provideMerge(Checkpointer.layerMemory)
        )
      )
    ))

  it.live("a cancel with other options than the run's is refused with CheckpointMismatch, live or not", () =>
    Effect.gen(function*() {
      const options = optionsFor("hang-mismatch")
      const other = { ...options, input: "something else" }
      const following = yield* Effect.forkChild(Effect.flatMap(ResumableStream.events(options), Stream.runDrain))
      yield* Deferred.await(atGate("hang-mismatch"))
      const mismatch = { _tag: "CheckpointMismatch", differences: [{ field: "input" }] }
      expect(yield* Effect.flip(ResumableStream.cancel(other))).toMatchObject(mismatch)
      // The run goes on; cancelled with its own options, it stops, and then the other options are refused as well.
      expect(yield* ResumableStream.cancel(options)).toBe(true)
      expect(yield* Effect.flip(Fiber.join(following))).toMatchObject({ _tag: "Halted", source: "person" })
      expect(yield* Effect.flip(ResumableStream.cancel(other))).toMatchObject(mismatch)
    }).pipe(Effect.provide(LiveRuns.layer), Effect.provide(services)))

  it.live("a client connecting to a finished run gets what its log holds: after a compaction, the turns after it", () =>
    Effect.gen(function*() {
      const options = { ...optionsFor("compacted"), compactAfter: 3 }
      const ids = (entries: ReadonlyArray<ResumableStream.Entry<unknown>>) =>
        entries.flatMap((entry) => entry.id === undefined ? [] : [entry.id])
      // Live in this server, the run sends every event; read from its log after, what follows its last snapshot.
      const live = ids(yield* Stream.runCollect(yield* ResumableStream.events(options)))
      expect(live).toHaveLength(16)
      expect(ids(yield* Stream.runCollect(yield* ResumableStream.events(options)))).toStrictEqual(live.slice(-4))
    }).pipe(Effect.provide(LiveRuns.layer), Effect.provide(services)))

  it.live("a run on a thread is refused with InvalidOptions", () =>
    Effect.gen(function*() {
      const stream = yield* ResumableStream.events({ ...optionsFor("threaded"), thread: "chat-1" })
      const error = yield* Effect.flip(Stream.runDrain(stream))
      expect(error).toMatchObject({ _tag: "InvalidOptions", field: "thread" })
    }).pipe(Effect.provide(LiveRuns.layer), Effect.provide(services)))
})
