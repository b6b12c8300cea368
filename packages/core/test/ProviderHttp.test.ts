import * as ProviderServer from "@agentloop/testing/ProviderServer"
import * as SpanRecorder from "@agentloop/testing/SpanRecorder"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Effect, Exit, Fiber, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { TestClock } from "effect/testing"
import * as AiError from "../src/AiError.ts"
import * as ProviderHttp from "../src/provider/ProviderHttp.ts"

const TestLayer = Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)
const canary = "sk-canary-0123456789-DO-NOT-LEAK"
const credential: ProviderHttp.Credential = { header: "authorization", scheme: "Bearer", value: Redacted.make(canary) }
const decoder = new TextDecoder()

const endpointAt = (baseUrl: string) => ProviderHttp.endpoint({ provider: "test", baseUrl, credential })

/** The body stream of a request to the loopback server, below `base` (default `/v1?key=<canary>`). */
const body = (options?: Partial<ProviderHttp.RequestOptions>, base = `/v1?key=${canary}`) =>
  Effect.map(
    ProviderServer.ProviderServer,
    (server) =>
      ProviderHttp.stream(endpointAt(`${server.url}${base}`), { path: "/stream", body: { stream: true }, ...options })
  )

const text = (stream: Stream.Stream<Uint8Array, AiError.AiError, HttpClient.HttpClient>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => {
    const streaming = new TextDecoder()
    return chunks.map((chunk) => streaming.decode(chunk, { stream: true })).join("") + streaming.decode()
  })

const failure = (options?: Partial<ProviderHttp.RequestOptions>) =>
  Effect.flatMap(body(options), (stream) => Effect.flip(Stream.runDrain(stream)))

describe("ProviderHttp.endpoint", () => {
  it("keeps a base URL's problem without quoting it, and its userinfo among the secrets", () => {
    const withUser = endpointAt("https://me:pa%24s@proxy.example:8443/v1")
    expect(withUser.url).toBeUndefined()
    expect(withUser.problem).toMatch(/carries credentials/)
    expect(withUser.problem).not.toContain("pa%24s")
    expect(withUser.secrets.map(Redacted.value)).toStrictEqual([canary, "me", "me", "pa%24s", "pa$s"])
    expect(withUser.attributes).toStrictEqual({ "server.address": "proxy.example", "server.port": 8443 })
    expect(endpointAt("not a url").problem).toMatch(/not an http or https URL/)
    expect(endpointAt("ftp://example.com").problem).toMatch(/not an http or https URL/)
    const openai = endpointAt("https://api.openai.com/v1")
    expect(openai.problem).toBeUndefined()
    expect(openai.attributes).toStrictEqual({ "server.address": "api.openai.com", "server.port": 443 })
  })
})

describe("ProviderHttp.stream", () => {
  it.live("posts the JSON body below the base path, with the credential, and streams the body back", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ text: "ünïcødé ✓" })], { chunkSize: 1 }))
      const received = yield* text(yield* body({ urlParams: { alt: "sse" } }, "/v1/?key=" + canary))
      expect(received).toBe(`data: ${JSON.stringify({ text: "ünïcødé ✓" })}\n\n`)
      const [request] = yield* server.requests
      expect(request?.headers.authorization).toBe(`Bearer ${canary}`)
      expect(request?.headers.accept).toBe("text/event-stream")
      // The key in the base URL's query is still sent, as a redacted parameter.
      expect(request?.url).toBe(`/v1/stream?key=${canary}&alt=sse`)
      expect(request?.body).toStrictEqual({ stream: true })
    }).pipe(Effect.provide(TestLayer)))

  it.live("sends the wire format's headers, which cannot replace the credential, accept or content-type", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ ok: true })]))
      yield* text(
        yield* body({
          headers: {
            "anthropic-version": "2023-06-01",
            authorization: "Bearer stolen",
            accept: "text/html",
            "content-type": "text/plain"
          }
        })
      )
      const [request] = yield* server.requests
      expect(request?.headers["anthropic-version"]).toBe("2023-06-01")
      expect(request?.headers.authorization).toBe(`Bearer ${canary}`)
      expect(request?.headers.accept).toBe("text/event-stream")
      expect(request?.headers["content-type"]).toBe("application/json")
      expect(request?.body).toStrictEqual({ stream: true })
    }).pipe(Effect.provide(TestLayer)))

  it.live("sends the endpoint's headers over the wire format's, and no credential header without a key", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ ok: true })]))
      const endpoint = ProviderHttp.endpoint({
        provider: "test",
        baseUrl: server.url,
        headers: { "HTTP-Referer": "https://app.example", "X-Title": "demo", "x-version": "mine" }
      })
      expect(endpoint.credential).toBeUndefined()
      expect(endpoint.secrets).toStrictEqual([])
      yield* text(ProviderHttp.stream(endpoint, { path: "/chat", headers: { "x-version": "wire" }, body: {} }))
      const [request] = yield* server.requests
      expect(request?.headers["http-referer"]).toBe("https://app.example")
      expect(request?.headers["x-title"]).toBe("demo")
      expect(request?.headers["x-version"]).toBe("mine")
      expect(request?.headers.authorization).toBeUndefined()
    }).pipe(Effect.provide(TestLayer)))

  it.live("keeps secret headers out of spans, Redacted values and credential names alike, and among the secrets", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const { spans, tracer } = SpanRecorder.make()
      yield* server.reply(ProviderServer.sse([ProviderServer.sseEvent({ ok: true })]))
      const endpoint = ProviderHttp.endpoint({
        provider: "test",
        baseUrl: server.url,
        credential,
        headers: { "Api-Key": "azure-CANARY-1", "x-gateway-token": Redacted.make("gateway-CANARY-2"), "x-title": "t" }
      })
      expect(endpoint.secrets.map(Redacted.value)).toStrictEqual([canary, "azure-CANARY-1", "gateway-CANARY-2"])
      yield* text(ProviderHttp.stream(endpoint, { path: "/chat", body: {} })).pipe(Effect.withTracer(tracer))
      const [request] = yield* server.requests
      expect([request?.headers["api-key"], request?.headers["x-gateway-token"], request?.headers.authorization])
        .toStrictEqual(["azure-CANARY-1", "gateway-CANARY-2", `Bearer ${canary}`])
      const seen = SpanRecorder.text(spans)
      expect(seen).toContain("http.request.header.api-key")
      expect(seen).toContain("http.request.header.x-gateway-token")
      expect(seen).toContain("http.request.header.x-title")
      expect(seen).not.toMatch(/CANARY/)
      expect(seen).not.toContain(canary)
    }).pipe(
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.provide(TestLayer)
    ))

  it.live("fails a request to an unusable base URL with InvalidRequest, sending nothing", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const url = new URL(server.url)
      url.password = canary
      const error = yield* Effect.flip(
        Stream.runDrain(ProviderHttp.stream(endpointAt(url.href), { path: "/x", body: {} }))
      )
      expect(error._tag).toBe("InvalidRequest")
      expect(error.message).not.toContain(canary)
      expect(yield* server.requests).toHaveLength(0)
    }).pipe(Effect.provide(TestLayer)))

  it.live("lets the provider classify an error response, and falls back to the status", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const seen: Array<ProviderHttp.ErrorResponse> = []
      const classifyError = (failure: ProviderHttp.ErrorResponse) => {
        seen.push(failure)
        return failure.body.includes("quota")
          ? new AiError.QuotaExceeded({ provider: failure.provider, status: failure.status, message: failure.message })
          : undefined
      }
      yield* server.reply(
        ProviderServer.status(429, { error: { message: "no quota left" } }, { "retry-after": "5" }),
        ProviderServer.status(429, [{ error: { message: "slow down" } }])
      )
      expect(yield* failure({ classifyError })).toStrictEqual(
        new AiError.QuotaExceeded({ provider: "test", status: 429, message: "no quota left" })
      )
      expect(yield* failure({ classifyError })).toStrictEqual(
        new AiError.RateLimited({ provider: "test", message: "slow down" })
      )
      expect(seen[0]).toMatchObject({
        provider: "test",
        status: 429,
        message: "no quota left",
        retryAfter: Duration.seconds(5)
      })
    }).pipe(Effect.provide(TestLayer)))

  it.live("reads a context-length 400 as ContextLengthExceeded and any other 400 as InvalidRequest", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(
        ProviderServer.status(400, { error: { message: "This model's maximum context length is 128000 tokens" } }),
        ProviderServer.status(400, "unknown parameter: foo"),
        ProviderServer.status(503, "")
      )
      expect((yield* failure())._tag).toBe("ContextLengthExceeded")
      expect(yield* failure()).toStrictEqual(
        new AiError.InvalidRequest({ provider: "test", status: 400, message: "unknown parameter: foo" })
      )
      expect(yield* failure()).toMatchObject({ _tag: "Unavailable", message: "(empty body)" })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("reads Retry-After given as an HTTP date", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* TestClock.setTime(Date.parse("2030-01-01T00:00:00Z"))
      yield* server.reply(ProviderServer.status(429, "later", { "retry-after": "Tue, 01 Jan 2030 00:00:30 GMT" }))
      expect(yield* failure()).toMatchObject({ _tag: "RateLimited", retryAfter: Duration.seconds(30) })
    }).pipe(Effect.provide(TestLayer)))

  it.live("reads retry-after-ms before Retry-After, and a 503's Retry-After too", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(
        ProviderServer.status(429, "later", { "retry-after-ms": "1500", "retry-after": "9" }),
        ProviderServer.status(503, "overloaded", { "retry-after": "4" })
      )
      expect(yield* failure()).toMatchObject({ _tag: "RateLimited", retryAfter: Duration.millis(1500) })
      expect(yield* failure()).toMatchObject({ _tag: "Unavailable", status: 503, retryAfter: Duration.seconds(4) })
    }).pipe(Effect.provide(TestLayer)))

  it.live("reads at most maxErrorBodySize bytes of an error body, then lets the connection go", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.oversized(500, 500_000_000))
      const error = yield* failure()
      expect(error._tag).toBe("Unavailable")
      expect(error.message).toBe("x".repeat(ProviderHttp.maxErrorBodySize))
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("follows at most maxRedirects same-origin 307s and 308s, and no redirect to another origin", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const other = yield* ProviderServer.make()
      const to = (location: string, status = 307) => ProviderServer.status(status, "", { location })
      yield* server.reply(
        to("/v1/a"),
        to(`${server.url}/v1/b`, 308),
        ProviderServer.sse([ProviderServer.sseEvent({ ok: 1 })])
      )
      expect(yield* text(yield* body({}, "/v1"))).toBe("data: {\"ok\":1}\n\n")
      const followed = yield* server.requests
      expect(followed.map((request) => [request.url, request.headers.authorization, request.body])).toStrictEqual([
        ["/v1/stream", `Bearer ${canary}`, { stream: true }],
        ["/v1/a", `Bearer ${canary}`, { stream: true }],
        ["/v1/b", `Bearer ${canary}`, { stream: true }]
      ])
      yield* server.reply(to("/1"), to("/2"), to("/3"), to("/4"))
      expect(yield* failure()).toMatchObject({ _tag: "InvalidRequest", status: 307, message: "more than 3 redirects" })
      yield* server.reply(to(`${other.url}/steal`), to("/moved", 301), ProviderServer.status(307, ""), to("http://["))
      expect((yield* failure()).message).toMatch(/another origin, http:\/\/127\.0\.0\.1:\d+;/)
      expect((yield* failure()).message).toMatch(/redirected with 301/)
      expect((yield* failure()).message).toMatch(/nowhere readable/)
      expect((yield* failure()).message).toMatch(/nowhere readable/)
      expect(yield* other.requests).toHaveLength(0)
    }).pipe(Effect.scoped, Effect.provide(TestLayer)))

  it.live("turns a refused connection and a connection cut mid-body into Unavailable, without quoting the key", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const first = ProviderServer.sseEvent({ n: 1 })
      yield* server.reply(
        ProviderServer.sse([first, ProviderServer.sseEvent({ n: 2 })], { disconnectAfter: first.length + 3 })
      )
      const received: Array<string> = []
      const cut = yield* (yield* body()).pipe(
        Stream.runForEach((chunk) => Effect.sync(() => received.push(decoder.decode(chunk)))),
        Effect.flip
      )
      expect(received.join("")).toBe(`${first}dat`)
      expect(cut._tag).toBe("Unavailable")
      // A server that stopped: its port refuses connections.
      const url = yield* Effect.scoped(Effect.map(ProviderServer.make(), (stopped) => stopped.url))
      const refused = yield* Effect.flip(Stream.runDrain(
        ProviderHttp.stream(endpointAt(`${url}?key=${canary}`), { path: "/stream", body: {} })
      ))
      expect(refused._tag).toBe("Unavailable")
      expect(refused.message).not.toContain(canary)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with Timeout when the body stalls longer than idleTimeout, and aborts the request", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const first = ProviderServer.sseEvent({ n: 1 })
      yield* server.reply(ProviderServer.sse([first, ProviderServer.sseEvent({ n: 2 })], { stallAfter: first.length }))
      const gotFirst = yield* Deferred.make<void>()
      const fiber = yield* (yield* body({ idleTimeout: "30 seconds" })).pipe(
        Stream.tap(() => Deferred.succeed(gotFirst, undefined)),
        Stream.runDrain,
        Effect.forkChild
      )
      yield* Deferred.await(gotFirst)
      yield* TestClock.adjust("29 seconds")
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.await(fiber)).toStrictEqual(
        Exit.fail(new AiError.Timeout({ provider: "test", message: "no data for 30s while streaming" }))
      )
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.effect("counts idle time only while the consumer waits for a chunk, and ends a body at the deadline", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const frames = Array.from({ length: 3 }, (_, n) => ProviderServer.sseEvent({ n }))
      yield* server.reply(ProviderServer.sse(frames, { chunkSize: frames[0]!.length }))
      // A consumer slower than the idle timeout: each chunk is there when it asks.
      const slow = yield* (yield* body({ idleTimeout: "10 seconds" })).pipe(
        Stream.tap(() => TestClock.adjust("1 minute")),
        Stream.runCollect,
        Effect.forkChild
      )
      const received = yield* Fiber.join(slow)
      expect(decoder.decode(received.reduce((all, chunk) => new Uint8Array([...all, ...chunk]), new Uint8Array())))
        .toBe(frames.join(""))
      const now = yield* Clock.currentTimeMillis
      const overdue = new AiError.Timeout({ provider: "test", message: "the turn took longer than 1m" })
      yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames[0]!.length }))
      const gotFirst = yield* Deferred.make<void>()
      const fiber = yield* (yield* body({ idleTimeout: "5 minutes", deadline: { at: now + 60_000, error: overdue } }))
        .pipe(
          Stream.tap(() => Deferred.succeed(gotFirst, undefined)),
          Stream.runDrain,
          Effect.forkChild
        )
      yield* Deferred.await(gotFirst)
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.await(fiber)).toStrictEqual(Exit.fail(overdue))
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.effect("fails with Timeout when no response arrives within requestTimeout, and aborts the request", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.hang)
      const fiber = yield* (yield* body({ requestTimeout: "1 minute" })).pipe(Stream.runDrain, Effect.forkChild)
      // The request reached the server, so the timeout's timer is already on the TestClock.
      yield* server.awaitRequests(1)
      yield* TestClock.adjust("1 minute")
      expect(yield* Effect.flip(Fiber.join(fiber))).toStrictEqual(
        new AiError.Timeout({ provider: "test", message: "no response within 1m" })
      )
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))

  it.live("keeps the key out of every span, in the credential header and in the query", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const { spans, tracer } = SpanRecorder.make()
      yield* server.reply(
        ProviderServer.status(401, { error: { message: "Incorrect API key provided" } }),
        ProviderServer.sse([ProviderServer.sseEvent({ ok: true })])
      )
      yield* failure().pipe(Effect.withTracer(tracer))
      yield* Stream.runDrain(yield* body()).pipe(Effect.withTracer(tracer))
      expect(spans).toHaveLength(2)
      const seen = SpanRecorder.text(spans)
      expect(seen).toContain("url.full")
      expect(seen).toContain("http.request.header.authorization")
      expect(seen).not.toContain(canary)
    }).pipe(
      // Record every header on the spans, so a key that escaped redaction would show.
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.provide(TestLayer)
    ))

  it.live("keeps the key out of the client span's exit, whatever the header and the names a printer redacts", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      for (const header of ["x-goog-api-key", "x-api-key", "authorization"]) {
        const { spans, tracer } = SpanRecorder.make()
        yield* server.reply(
          ProviderServer.sse([ProviderServer.sseEvent({ ok: true })]),
          ProviderServer.status(401, { error: { message: "no" } })
        )
        const endpoint = ProviderHttp.endpoint({
          provider: "test",
          baseUrl: server.url,
          credential: { header, value: Redacted.make(canary) }
        })
        const request = ProviderHttp.stream(endpoint, { path: "/stream", body: {} })
        yield* Stream.runDrain(request).pipe(Effect.withTracer(tracer))
        expect(yield* Effect.flip(Stream.runDrain(request)).pipe(Effect.withTracer(tracer))).toMatchObject({
          _tag: "AuthFailed"
        })
        // Printed whole where no header name is redacted (an exporter's fiber, a logger with its own list).
        const printed = yield* SpanRecorder.printed(spans)
        expect(printed).not.toContain(canary)
        expect(spans).toHaveLength(2)
        expect(spans.map((span) => span.status._tag === "Ended" && span.status.exit._tag)).toStrictEqual([
          "Success",
          "Failure"
        ])
        expect(printed).toContain(`'http.request.header.${header}' => '<redacted>'`)
        expect(printed).toContain("StatusCode error (401 POST")
      }
    }).pipe(
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.provide(TestLayer)
    ))
})

describe("ProviderHttp.errorMessage", () => {
  it("finds the provider's message in the shapes APIs answer with, else takes the body", () => {
    expect(ProviderHttp.errorMessage("{\"error\":{\"message\":\"a\"}}")).toBe("a")
    expect(ProviderHttp.errorMessage("{\"message\":\"b\"}")).toBe("b")
    expect(ProviderHttp.errorMessage("[{\"error\":{\"message\":\"c\"}}]")).toBe("c")
    expect(ProviderHttp.errorMessage("plain")).toBe("plain")
    expect(ProviderHttp.errorMessage("")).toBe("(empty body)")
  })
})
