import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Fiber, Logger, Schema, Stream } from "effect"
import { HttpServer, HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import * as Http from "node:http"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Step from "../src/step/Step.ts"
import * as StepError from "../src/step/StepError.ts"
import * as EventStream from "../src/stream/EventStream.ts"
import * as Termination from "../src/Termination.ts"
import { addCall, answer, environment, model, toolkit } from "./agentFixtures.ts"

const Count = Schema.Struct({ n: Schema.Finite, at: Schema.Date })
class Broke extends Schema.TaggedError<Broke>()("Broke", { why: Schema.String }) {}
const counts: EventStream.Codec<typeof Count.Type, Broke> = { events: Count, failure: Broke }

const count = (n: number) => ({ n, at: new Date(Date.UTC(2026, 10, 23, 0, 0, n)) }) as const
const countsOf = (n: number) => Stream.fromIterable(Array.from({ length: n }, (_, i) => count(i)))

const bytes = (text: string) => Stream.make(new TextEncoder().encode(text))

/** What a client reads back from the server's bytes. */
const roundTrip = <A, E>(codec: EventStream.Codec<A, E>, stream: Stream.Stream<A, E>) =>
  Stream.runCollect(EventStream.decode(codec)(EventStream.encodeBytes(codec)(stream)))

describe("EventStream", () => {
  it.effect("a stream of Schema values, and its typed failure, cross the wire exactly", () =>
    Effect.gen(function*() {
      const values = yield* roundTrip(counts, countsOf(3))
      expect(values).toStrictEqual([count(0), count(1), count(2)])
      expect(values[1]!.at).toBeInstanceOf(Date)
      const failed = yield* Effect.flip(
        roundTrip(counts, Stream.concat(countsOf(1), Stream.fail(new Broke({ why: "disk" }))))
      )
      expect(failed).toStrictEqual(new Broke({ why: "disk" }))
    }))

  it.effect("an agent run's events and its termination arrive typed", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const run = agent.stream({ input: "Add", toolkit, model, limits: { maxTurns: 1 } })
      const error = yield* Effect.flip(roundTrip(EventStream.agent, run))
      expect(error).toBeInstanceOf(Termination.MaxTurns)
      expect(error._tag === "MaxTurns" && error.accounting.steps).toBe(1)
    }).pipe(Effect.provide(environment([addCall(1, 1), answer("never")]))))

  it.effect("a step program's events, its output and its StepError arrive typed", () =>
    Effect.gen(function*() {
      const shout = Step.run({ id: "shout", execute: (text: string) => text.toUpperCase() })
      const events = yield* roundTrip(EventStream.steps(Schema.String), Step.stream(shout, "hi"))
      expect(events.map((event) => event._tag)).toStrictEqual(["Started", "Completed", "Output"])
      expect(events.at(-1)).toStrictEqual({ _tag: "Output", value: "HI" })
      const broken = Step.run({
        id: "broken",
        execute: (_: string): Promise<string> => Promise.reject(new Error("offline"))
      })
      const error = yield* Effect.flip(roundTrip(EventStream.steps(Schema.String), Step.stream(broken, "hi")))
      expect(error).toBeInstanceOf(StepError.StepFailed)
      expect(error).toMatchObject({ _tag: "StepFailed", stepId: "broken" })
    }))

  it.effect("writes the documented wire format", () =>
    Effect.gen(function*() {
      const text = (yield* Stream.runCollect(EventStream.encode(counts)(countsOf(1)))).join("")
      expect(text).toBe("data: {\"n\":0,\"at\":\"2026-11-23T00:00:00.000Z\"}\n\nevent: end\ndata: {}\n\n")
      const failed = (yield* Stream.runCollect(EventStream.encode(counts)(Stream.fail(new Broke({ why: "x" }))))).join(
        ""
      )
      expect(failed).toBe("event: failure\ndata: {\"_tag\":\"Broke\",\"why\":\"x\"}\n\n")
    }))

  it.effect("encode, encodeBytes and toHttpResponse are dual: data-first and in a pipe give the same", () =>
    Effect.gen(function*() {
      const options = { keepAlive: Duration.infinity }
      const first = (yield* Stream.runCollect(EventStream.encode(countsOf(2), counts, options))).join("")
      const last = (yield* Stream.runCollect(countsOf(2).pipe(EventStream.encode(counts, options)))).join("")
      expect(first).toBe(last)
      expect(first).toContain("event: end")
      const decoder = new TextDecoder()
      const bytes = yield* Stream.runCollect(EventStream.encodeBytes(countsOf(2), counts, options))
      expect(bytes.map((chunk) => decoder.decode(chunk)).join("")).toBe(first)
      const response = yield* countsOf(2).pipe(EventStream.toHttpResponse(counts, options))
      expect(response.headers["content-type"]).toBe(EventStream.headers["content-type"])
    }))

  it.effect("a chunk of events is one frame string, so a server writes it at once", () =>
    Effect.gen(function*() {
      const frames = yield* Stream.runCollect(EventStream.encode(countsOf(3), counts, { keepAlive: Duration.infinity }))
      expect(frames).toHaveLength(2)
      expect(frames[0]!.match(/^data: /gm)).toHaveLength(3)
      expect(frames[1]).toBe("event: end\ndata: {}\n\n")
    }))

  it.effect("an event that does not encode mid-chunk: the events before it go out, then the error", () =>
    Effect.gen(function*() {
      const chunk = Stream.make(count(0), { n: 1, at: new Date(Number.NaN) }, count(2))
      const frames = yield* Stream.runCollect(EventStream.encode(chunk, counts))
      expect(frames[0]).toBe("data: {\"n\":0,\"at\":\"2026-11-23T00:00:00.000Z\"}\n\n")
      expect(frames.slice(1).join("")).toMatch(/^event: error\ndata: \{"message":"the server failed \(error err_\w+/)
      expect(frames.join("")).not.toContain("\"n\":2")
    }).pipe(Effect.provide(Logger.layer([]))))

  it.effect("a stream cut off before its end event fails as truncated, not as a shorter success", () =>
    Effect.gen(function*() {
      const cut = "data: {\"n\":0,\"at\":\"2026-11-23T00:00:00.000Z\"}\n\ndata: {\"n\":1"
      const error = yield* Effect.flip(Stream.runCollect(EventStream.decode(counts)(bytes(cut))))
      expect(error).toMatchObject({ _tag: "EventStreamError", reason: "truncated" })
    }))

  it.effect("an event that does not decode, an oversized one, or a server error fail with a reason", () =>
    Effect.gen(function*() {
      const decode = (text: string, options?: EventStream.DecodeOptions) =>
        Effect.flip(Stream.runCollect(EventStream.decode(counts, options)(bytes(text))))
      expect(yield* decode("data: {\"n\":\"zero\"}\n\nevent: end\ndata: {}\n\n")).toMatchObject({ reason: "malformed" })
      expect(yield* decode("data: not json\n\n")).toMatchObject({ reason: "malformed" })
      expect(yield* decode(`data: ${"x".repeat(200)}\n\n`, { maxEventSize: 100 })).toMatchObject({
        reason: "malformed"
      })
      expect(yield* decode("event: error\ndata: {\"message\":\"boom\"}\n\n")).toMatchObject({
        reason: "server",
        message: "boom"
      })
    }))

  it.effect("an event its schema cannot encode ends the stream with a server error, not a hang", () =>
    Effect.gen(function*() {
      const bad = Stream.make({ n: 1, at: new Date(Number.NaN) })
      const error = yield* Effect.flip(roundTrip(counts, bad))
      expect(error).toMatchObject({ _tag: "EventStreamError", reason: "server" })
      expect(error.message).toMatch(/^the server failed \(error err_\w+, in its log\)$/)
    }).pipe(Effect.provide(Logger.layer([]))))

  it.effect("a defect reaches the client as an error id, and the server's log has the id with the details", () =>
    Effect.gen(function*() {
      const logged: Array<{ readonly message: unknown; readonly cause: string }> = []
      const logger = Logger.make((options) => {
        logged.push({ message: options.message, cause: Cause.pretty(options.cause) })
      })
      const crash = new Error("the vault password is hunter2")
      const text = (yield* Stream.runCollect(
        EventStream.encode(counts)(Stream.concat(countsOf(1), Stream.die(crash)))
      ).pipe(Effect.provide(Logger.layer([logger])))).join("")
      expect(text).not.toContain("hunter2")
      expect(text).not.toContain(import.meta.dirname)
      const error = yield* Effect.flip(Stream.runCollect(EventStream.decode(counts)(bytes(text))))
      const id = /error (err_\w+)/.exec(error.message)?.[1]
      expect(error).toMatchObject({ _tag: "EventStreamError", reason: "server" })
      expect(id).toBeDefined()
      expect(logged).toHaveLength(1)
      expect(String(logged[0]?.message)).toContain(`error ${id}`)
      expect(logged[0]?.cause).toContain("the vault password is hunter2")
    }))

  it.effect("sends keepalive comments while no event is due, which the client skips", () =>
    Effect.gen(function*() {
      const slow = Stream.concat(countsOf(1), Stream.fromEffect(Effect.as(Effect.sleep("40 seconds"), count(1))))
      const fiber = yield* Stream.runCollect(EventStream.encode(counts)(slow)).pipe(Effect.forkChild)
      // One second at a time, so the forked stream has started its sleeps before the clock passes them.
      for (let second = 0; second < 45; second++) yield* TestClock.adjust("1 second")
      const text = (yield* Fiber.join(fiber)).join("")
      expect(text.match(/: keepalive\n\n/g)).toHaveLength(2)
      const read = yield* Stream.runCollect(EventStream.decode(counts)(bytes(text)))
      expect(read).toStrictEqual([count(0), count(1)])
    }))

  describe("over HTTP", () => {
    const serve = (handler: Effect.Effect<HttpServerResponse.HttpServerResponse>) =>
      Effect.gen(function*() {
        const nodeServer = Http.createServer()
        const server = yield* NodeHttpServer.make(() => nodeServer, {
          port: 0,
          host: "127.0.0.1",
          gracefulShutdownTimeout: Duration.zero
        })
        yield* HttpServer.serveEffect(handler).pipe(Effect.provideService(HttpServer.HttpServer, server))
        yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
        const address = nodeServer.address()
        return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/events`
      })

    it.live("a client reads an effect/http response, and leaving interrupts the server's stream", () =>
      Effect.gen(function*() {
        const interrupted = yield* Deferred.make<void>()
        const endless = Stream.iterate(0, (n) => n + 1).pipe(
          Stream.map(count),
          Stream.tap(() => Effect.sleep("5 millis")),
          Stream.onExit(() => Deferred.succeed(interrupted, undefined))
        )
        const url = yield* serve(EventStream.toHttpResponse(endless, counts))
        const first = yield* Stream.runCollect(Stream.take(EventStream.fetch(counts, url), 3))
        expect(first).toStrictEqual([count(0), count(1), count(2)])
        yield* Deferred.await(interrupted).pipe(Effect.timeout("5 seconds"))
      }).pipe(Effect.scoped))

    it.live("a response that is not an event stream fails with its status", () =>
      Effect.gen(function*() {
        const url = yield* serve(Effect.succeed(HttpServerResponse.text("nope", { status: 503 })))
        const error = yield* Effect.flip(Stream.runCollect(EventStream.fetch(counts, url)))
        expect(error).toMatchObject({ _tag: "EventStreamError", reason: "http", status: 503 })
      }).pipe(Effect.scoped))

    it.live("a web Response body reads back the same, and iterate() throws the typed failure", () =>
      Effect.gen(function*() {
        const response = yield* EventStream.toWebResponse(
          Stream.concat(countsOf(2), Stream.fail(new Broke({ why: "quota" }))),
          counts
        )
        expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8")
        const body = response.body!
        const read = yield* Effect.flip(Stream.runCollect(
          EventStream.decode(counts)(Stream.fromReadableStream({
            evaluate: () => body,
            onError: (error) => error
          }))
        ))
        expect(read).toStrictEqual(new Broke({ why: "quota" }))

        const url = yield* serve(EventStream.toHttpResponse(countsOf(2), counts))
        const seen: Array<number> = []
        for (
          const event of yield* Effect.promise(async () => {
            const out: Array<typeof Count.Type> = []
            for await (const value of EventStream.iterate(counts, url)) out.push(value)
            return out
          })
        ) seen.push(event.n)
        expect(seen).toStrictEqual([0, 1])
      }).pipe(Effect.scoped))
  })
})
