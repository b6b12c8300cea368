import { AiError, type ProviderWire } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import * as MockLanguageModel from "../src/MockLanguageModel.ts"
import * as ProviderServer from "../src/ProviderServer.ts"

const TestLayer = Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)

/**
 * A wire format of this test's own, which writes what it was given as JSON,
 * so the test sees exactly what the server asked of it: the providers' real
 * formats are tested in their packages.
 */
const wire: ProviderWire.ProviderWire = {
  provider: "echo",
  turn: (turn, options) => [
    ProviderServer.sseEvent({ options: options ?? null }),
    ...turn.items.map((item) => ProviderServer.sseEvent(item))
  ],
  error: (error) => ({
    status: error._tag === "RateLimited" ? 429 : 400,
    headers: { "content-type": "application/json", "x-tag": error._tag },
    body: JSON.stringify({ error: { message: error.message } })
  })
}

const WireLayer = Layer.mergeAll(ProviderServer.layerWire(wire), FetchHttpClient.layer)

/** POSTs to the server; the status, the headers and the body as text. */
const post = (path = "/turn") =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(`${server.url}${path}`).pipe(HttpClientRequest.bodyJsonUnsafe({ path }))
    )
    return { status: response.status, headers: response.headers, text: yield* response.text }
  })

const decoder = new TextDecoder()

/** The chunks of a response body, as the client received them. */
const bodyChunks = (path: string) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const client = yield* HttpClient.HttpClient
    const response = yield* client.post(`${server.url}${path}`)
    const chunks = yield* Stream.runCollect(response.stream)
    return { status: response.status, chunks }
  })

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

describe("ProviderServer", () => {
  it.live("serves SSE frames in byte-sized pieces, splitting multi-byte characters", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const frames = [ProviderServer.sseEvent({ text: "héllo ✓" }, "delta"), ProviderServer.sseEvent({ done: true })]
      yield* server.reply(ProviderServer.sse(frames, { chunkSize: 1, delay: "2 millis" }))
      const { chunks, status } = yield* bodyChunks("/stream")
      expect(status).toBe(200)
      expect(decoder.decode(concat(chunks))).toBe(
        "event: delta\ndata: {\"text\":\"héllo ✓\"}\n\ndata: {\"done\":true}\n\n"
      )
      // One byte per write with a pause between writes: the client sees many pieces, not one.
      expect(chunks.length).toBeGreaterThan(10)
    }).pipe(Effect.provide(TestLayer)))

  it.live("delivers each write of a chunked reply as its own chunk, even without a delay", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const frames = Array.from({ length: 20 }, (_, n) => ProviderServer.sseEvent({ n, text: "ünïcødé" }))
      const body = new TextEncoder().encode(frames.join(""))
      yield* server.reply(ProviderServer.sse(frames, { chunkSize: 3 }))
      const { chunks } = yield* bodyChunks("/stream")
      expect(concat(chunks)).toStrictEqual(body)
      // Written in one go, the body would arrive as a single chunk.
      expect(chunks.length).toBeGreaterThan(body.length / 3 / 2)
    }).pipe(Effect.provide(TestLayer)))

  it.live("answers with a status, headers and a JSON or text body", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(
        ProviderServer.status(429, { error: { message: "slow down" } }, { "retry-after": "3" }),
        ProviderServer.status(502, "bad gateway")
      )
      const first = yield* client.post(`${server.url}/a`)
      expect(first.status).toBe(429)
      expect(first.headers["retry-after"]).toBe("3")
      expect(yield* first.json).toStrictEqual({ error: { message: "slow down" } })
      const second = yield* client.post(`${server.url}/b`)
      expect(second.status).toBe(502)
      expect(yield* second.text).toBe("bad gateway")
    }).pipe(Effect.provide(TestLayer)))

  it.live("records every request: method, path with query, lower-cased headers, parsed body", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(ProviderServer.status(200, {}), ProviderServer.status(200, {}))
      yield* client.execute(
        HttpClientRequest.post(`${server.url}/v1/x:stream?alt=sse`).pipe(
          HttpClientRequest.setHeader("X-Custom", "Yes"),
          HttpClientRequest.bodyJsonUnsafe({ a: [1, 2] })
        )
      )
      yield* client.execute(HttpClientRequest.post(`${server.url}/raw`).pipe(HttpClientRequest.bodyText("not json")))
      const [json, raw] = yield* server.requests
      expect(json?.method).toBe("POST")
      expect(json?.url).toBe("/v1/x:stream?alt=sse")
      expect(json?.headers["x-custom"]).toBe("Yes")
      expect(json?.body).toStrictEqual({ a: [1, 2] })
      expect(raw?.body).toBe("not json")
    }).pipe(Effect.provide(TestLayer)))

  it.live("refuses a request nothing was scripted for with a 400 (which no provider retries) that says so", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      const response = yield* client.post(`${server.url}/responses`)
      expect(response.status).toBe(400)
      expect(yield* response.text).toContain("nothing scripted for request #1 (POST /responses)")
    }).pipe(Effect.provide(TestLayer)))

  it.live("cuts the connection after disconnectAfter bytes", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ n: 1 }), ProviderServer.sseEvent({ n: 2 })], {
        disconnectAfter: 5
      }))
      const response = yield* client.post(`${server.url}/s`)
      const received: Array<Uint8Array> = []
      const error = yield* response.stream.pipe(
        Stream.runForEach((chunk) => Effect.sync(() => received.push(chunk))),
        Effect.flip
      )
      expect(error.reason._tag).toBe("DecodeError")
      expect(decoder.decode(concat(received))).toBe("data:")
    }).pipe(Effect.provide(TestLayer)))

  it.live("stalls after stallAfter bytes and sees the client abort when the consumer is interrupted", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ n: 1 })], { stallAfter: 4 }))
      const response = yield* client.post(`${server.url}/s`)
      // One consumer for the whole body: ending a first one early would itself cancel the body.
      const gotFirst = yield* Deferred.make<void>()
      const reader = yield* response.stream.pipe(
        Stream.tap(() => Deferred.succeed(gotFirst, undefined)),
        Stream.runCollect,
        Effect.forkChild
      )
      yield* Deferred.await(gotFirst)
      yield* Fiber.interrupt(reader)
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("sees the client abort a request that never got an answer", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(ProviderServer.hang)
      const fiber = yield* Effect.forkChild(client.post(`${server.url}/s`))
      const [request] = yield* server.awaitRequests(1)
      expect(request?.url).toBe("/s")
      yield* Fiber.interrupt(fiber)
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("stops with its scope", () =>
    Effect.gen(function*() {
      const url = yield* ProviderServer.ProviderServer.pipe(
        Effect.map((server) => server.url),
        Effect.provide(ProviderServer.layer)
      )
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const client = yield* HttpClient.HttpClient
      const error = yield* Effect.flip(client.post(`${url}/after`))
      expect(error.reason._tag).toBe("TransportError")
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.live("after the frames, sends a keepalive comment at the interval, until the client leaves", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ n: 1 })], { keepalive: "2 millis" }))
      const response = yield* client.post(`${server.url}/s`)
      const text = yield* response.stream.pipe(
        Stream.decodeText,
        Stream.mapAccum(() => "", (all, piece) => [all + piece, [all + piece]]),
        Stream.takeUntil((all) => all.split(": keepalive\n\n").length > 3),
        Stream.runLast
      )
      expect(Option.getOrThrow(text).startsWith("data: {\"n\":1}\n\n: keepalive\n\n: keepalive\n\n")).toBe(true)
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("writes an oversized body only as fast as the client reads it", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      yield* server.reply(ProviderServer.oversized(500, 1_000_000_000), ProviderServer.oversized(503, 100_000))
      const huge = yield* client.post(`${server.url}/huge`)
      expect(huge.status).toBe(500)
      const first = yield* huge.stream.pipe(Stream.take(1), Stream.runCollect)
      expect(decoder.decode(first[0]).slice(0, 3)).toBe("xxx")
      yield* server.awaitClientAbort
      const small = yield* client.post(`${server.url}/small`)
      expect((yield* small.text).length).toBe(100_000)
    }).pipe(Effect.provide(TestLayer)))

  it.live("make starts another server, for a second host", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const other = yield* ProviderServer.make()
      const client = yield* HttpClient.HttpClient
      expect(other.url).not.toBe(server.url)
      yield* other.reply(ProviderServer.status(204, ""))
      yield* client.post(`${other.url}/x`)
      expect((yield* other.requests).map((request) => request.url)).toStrictEqual(["/x"])
      expect(yield* server.requests).toHaveLength(0)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.live("with a delay, writes one frame, then waits before the next", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const client = yield* HttpClient.HttpClient
      const frames = [ProviderServer.sseEvent({ n: 1 }), ProviderServer.sseEvent({ n: 2 })]
      yield* server.reply(ProviderServer.sse(frames, { delay: "1 hour" }))
      const response = yield* client.post(`${server.url}/stream`)
      const pull = yield* Stream.toPull(response.stream)
      const first = yield* pull
      expect(decoder.decode(concat(first))).toBe(frames[0])
      // The second frame is an hour away: it must not come in the next 200 ms.
      const second = yield* Effect.timeoutOption(pull, "200 millis")
      expect(Option.isNone(second)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.live("without a delay or chunkSize, delivers each frame as its own chunk", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const frames = Array.from({ length: 12 }, (_, n) => ProviderServer.sseEvent({ n }))
      yield* server.reply(ProviderServer.sse(frames))
      const { chunks } = yield* bodyChunks("/stream")
      expect(decoder.decode(concat(chunks))).toBe(frames.join(""))
      // Each frame is its own write; the client may read two writes at once, but never a frame in halves.
      expect(chunks.length).toBeGreaterThan(frames.length / 2)
      for (const chunk of chunks) expect(decoder.decode(chunk)).toMatch(/^(data: \{"n":\d+\}\n\n)+$/)
    }).pipe(Effect.provide(TestLayer)))

  it.live("answers with a Turn and an AiError in the server's wire format", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const turn = MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 1 } }], { text: "Adding." })
      const limited = new AiError.RateLimited({ provider: "echo", message: "slow down" })
      yield* server.reply(turn, ProviderServer.turn(turn, { chunkSize: 3, complete: false }), limited)
      const bare = yield* post()
      expect(bare.status).toBe(200)
      expect(bare.headers["content-type"]).toBe("text/event-stream")
      expect(bare.text).toBe(wire.turn(turn, { chunkSize: undefined, complete: undefined }).join(""))
      const withOptions = yield* post()
      expect(withOptions.text).toBe(wire.turn(turn, { chunkSize: 3, complete: false }).join(""))
      const failed = yield* post()
      expect(failed).toMatchObject({ status: 429, headers: { "x-tag": "RateLimited" } })
      expect(JSON.parse(failed.text)).toStrictEqual({ error: { message: "slow down" } })
    }).pipe(Effect.provide(WireLayer)))

  it.live("refuses a Turn or an AiError on a server without a wire format, saying how to make one", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const exit = yield* Effect.exit(server.reply(MockLanguageModel.textTurn("hi")))
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain("ProviderServer.layerWire(")
      // Nothing was queued: the request is unscripted.
      expect((yield* post()).status).toBe(400)
    }).pipe(Effect.provide(TestLayer)))

  it.live("answers what the queue does not with the handler, given each request and its index", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const seen: Array<[unknown, number]> = []
      yield* server.reply(ProviderServer.status(202, "queued"))
      yield* server.handle((request, index) => {
        seen.push([request.body, index])
        return index % 2 === 0
          ? MockLanguageModel.textTurn(`turn ${index}`)
          : Effect.succeed(new AiError.InvalidRequest({ provider: "echo", message: `refused ${index}` }))
      })
      expect((yield* post("/a")).status).toBe(202)
      const refused = yield* post("/b")
      expect(refused.status).toBe(400)
      expect(refused.text).toContain("refused 1")
      expect((yield* post("/c")).text).toContain("turn 2")
      // A queued answer still goes first.
      yield* server.reply(ProviderServer.status(203, "queued again"))
      expect((yield* post("/d")).status).toBe(203)
      expect(seen).toStrictEqual([[{ path: "/b" }, 1], [{ path: "/c" }, 2]])
    }).pipe(Effect.provide(WireLayer)))

  it.live("reset drops the answers a run left unasked and the handler: the next request is unscripted", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const left = [MockLanguageModel.textTurn("one"), MockLanguageModel.textTurn("two")]
      yield* server.reply(...left)
      yield* server.handle(() => MockLanguageModel.textTurn("handled"))
      expect(yield* server.reset).toStrictEqual(left)
      const next = yield* post()
      // Unscripted, in the wire's own error format: the provider reads it as a non-retryable InvalidRequest.
      expect(next).toMatchObject({ status: 400, headers: { "x-tag": "InvalidRequest" } })
      expect(next.text).toContain("nothing scripted for request #1 (POST /turn)")
    }).pipe(Effect.provide(WireLayer)))
})
