/** The small event-stream client, over real HTTP against a loopback server, with good bytes and bad. */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Schema, Stream } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as EventStream from "../src/stream/EventStream.ts"
import * as EventStreamClient from "../src/stream/EventStreamClient.ts"

const Count = Schema.Struct({ n: Schema.Finite, at: Schema.Date })
class Broke extends Schema.TaggedError<Broke>()("Broke", { why: Schema.String }) {}
const counts: EventStream.Codec<typeof Count.Type, Broke> = { events: Count, failure: Broke }
const count = (n: number) => ({ n, at: new Date(Date.UTC(2026, 10, 23, 0, 0, n)) }) as const

/** What the server side writes for `stream`. */
const written = (stream: Stream.Stream<typeof Count.Type, Broke>) =>
  Effect.runSync(Stream.runCollect(EventStream.encode(counts, { keepAlive: Duration.infinity })(stream))).join("")

const event = "data: {\"n\":0,\"at\":\"2026-11-23T00:00:00.000Z\"}\n\n"

/** A loopback server answering each path with fixed bytes; `/hold` sends one event and keeps the connection open. */
const server = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly closed: Deferred.Deferred<void>; readonly http: Http.Server }>(
    (resume) => {
      const closed = Deferred.makeUnsafe<void>()
      const bodies: Record<string, string> = {
        "/ok": written(Stream.make(count(0), count(1))),
        "/fail": written(Stream.concat(Stream.make(count(0)), Stream.fail(new Broke({ why: "disk" })))),
        "/cut": event,
        "/malformed": "data: {\"n\":\"zero\"}\n\n",
        "/big": `data: ${"x".repeat(4096)}\n\n`,
        "/server": "event: error\ndata: {\"message\":\"could not encode\"}\n\n",
        // A resumed stream: the turn in progress again, without ids, then a recorded event.
        "/resumed": `${event}${event}id: 8\n${event}${written(Stream.empty)}`
      }
      const http = Http.createServer((request, response) => {
        const path = request.url ?? ""
        if (path === "/html") {
          response.writeHead(404, { "content-type": "text/html" }).end("<h1>no</h1>")
          return
        }
        response.writeHead(200, { "content-type": "text/event-stream" })
        if (path === "/hold") {
          response.write(event)
          response.on("close", () => Deferred.doneUnsafe(closed, Effect.void))
          return
        }
        response.end(bodies[path] ?? "")
      })
      http.listen(
        0,
        "127.0.0.1",
        () => resume(Effect.succeed({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`, closed, http }))
      )
    }
  ),
  ({ http }) =>
    Effect.sync(() => {
      http.closeAllConnections()
      http.close()
    })
)

const collect = async (iterable: AsyncIterable<unknown>) => {
  const out: Array<unknown> = []
  for await (const value of iterable) out.push(value)
  return out
}

const failure = (url: string, options?: EventStream.DecodeOptions) =>
  Effect.promise(() =>
    collect(EventStreamClient.events(counts, url, undefined, options)).then(() => undefined, (e) => e)
  )

describe("EventStreamClient.events", () => {
  it.live("reads what the server writes, typed, and throws the server's typed failure", () =>
    Effect.gen(function*() {
      const { url } = yield* server
      const values = yield* Effect.promise(() => collect(EventStreamClient.events(counts, `${url}/ok`)))
      expect(values).toStrictEqual([count(0), count(1)])
      expect((values[0] as typeof Count.Type).at).toBeInstanceOf(Date)
      expect(yield* failure(`${url}/fail`)).toStrictEqual(new Broke({ why: "disk" }))
    }).pipe(Effect.scoped))

  it.live("bad responses fail with a reason: http, truncated, malformed, too large, server", () =>
    Effect.gen(function*() {
      const { url } = yield* server
      expect(yield* failure(`${url}/html`)).toMatchObject({ _tag: "EventStreamError", reason: "http", status: 404 })
      expect(yield* failure(`${url}/cut`)).toMatchObject({ reason: "truncated" })
      expect(yield* failure(`${url}/malformed`)).toMatchObject({ reason: "malformed" })
      expect(yield* failure(`${url}/big`, { maxEventSize: 1024 })).toMatchObject({ reason: "malformed" })
      expect(yield* failure(`${url}/server`)).toMatchObject({ reason: "server", message: "could not encode" })
      expect(yield* failure("http://127.0.0.1:1/refused")).toMatchObject({ reason: "http" })
    }).pipe(Effect.scoped))

  it.live("a resumed stream's events without an id have the id it resumed from, as an EventSource keeps it", () =>
    Effect.gen(function*() {
      const { url } = yield* server
      const ids = yield* Effect.promise(async () => {
        const out: Array<string> = []
        const read = EventStreamClient.entries(counts, `${url}/resumed`, undefined, { lastEventId: "7" })
        for await (const { id } of read) out.push(id)
        return out
      })
      expect(ids).toStrictEqual(["7", "7", "8"])
    }).pipe(Effect.scoped))

  it.live("an id that cannot go back as a header (a server wrote it) fails the resume with a reason, not a TypeError", () =>
    Effect.gen(function*() {
      const { url } = yield* server
      // Headers are bytes: an id with a character past U+00FF, or a NUL, cannot be sent as Last-Event-ID.
      for (const lastEventId of ["7€", "7\u0000"]) {
        const error = yield* Effect.promise(() =>
          collect(EventStreamClient.entries(counts, `${url}/ok`, undefined, { lastEventId })).then(
            () => undefined,
            (e) => e
          )
        )
        expect(error).toMatchObject({ _tag: "EventStreamError", reason: "http" })
      }
    }).pipe(Effect.scoped))

  it.live("leaving the loop closes the connection, which the server sees", () =>
    Effect.gen(function*() {
      const { closed, url } = yield* server
      const first = yield* Effect.promise(async () => {
        for await (const value of EventStreamClient.events(counts, `${url}/hold`)) return value
      })
      expect(first).toStrictEqual(count(0))
      yield* Deferred.await(closed).pipe(Effect.timeout("5 seconds"))
    }).pipe(Effect.scoped))
})
