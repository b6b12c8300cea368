/**
 * What a hostile or broken server must not get past, as conformance cases (see
 * `ProviderConformance`): the API key, a canary, appears in no error, delta
 * or span, whatever the server echoes; a redirect never takes the key to
 * another host; credentials in a base URL are refused unquoted; and error
 * bodies and messages of any size are read and kept only up to a bound.
 *
 * @since 0.1.0
 */
import * as LanguageModel from "@agentloop/core/LanguageModel"
import * as ProviderRetry from "@agentloop/core/provider/ProviderRetry"
import * as ProviderStream from "@agentloop/core/provider/ProviderStream"
import * as Turn from "@agentloop/core/Turn"
import * as Effect from "effect/Effect"
import { HttpClient } from "effect/http"
import * as Redacted from "effect/Redacted"
import * as assert from "node:assert/strict"
import * as ProviderHarness from "./ProviderHarness.ts"
import * as ProviderServer from "./ProviderServer.ts"
import * as SpanRecorder from "./SpanRecorder.ts"
import * as WireTurn from "./WireTurn.ts"

/**
 * The hostile-server cases for the provider `fixture` describes.
 *
 * @example
 * ```ts
 * import { ChatCompletions } from "@agentloop/chat-completions"
 * import { HostileServer, type ProviderHarness } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * // A provider's fixture: its layer, and how its wire writes a turn and a server error.
 * const sse = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`
 * const chunk = (delta: object, finish: string | null = null) =>
 *   sse({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })
 * const fixture: ProviderHarness.Fixture = {
 *   provider: "chat-completions",
 *   credentialHeader: "authorization",
 *   layer: (settings) => ChatCompletions.layerWithoutHttpClient({ ...settings, baseUrl: settings.baseUrl ?? "", model: "m" }),
 *   frames: (turn, options) => {
 *     const calls = turn.calls ?? []
 *     const body = [
 *       ...(turn.reasoning ?? []).map((reasoning_content) => chunk({ reasoning_content })),
 *       ...(turn.text ?? []).map((content) => chunk({ content })),
 *       ...calls.map((call, index) =>
 *         chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] })
 *       )
 *     ]
 *     const usage = {
 *       prompt_tokens: turn.usage.input,
 *       completion_tokens: turn.usage.output,
 *       total_tokens: turn.usage.total,
 *       prompt_tokens_details: { cached_tokens: turn.usage.cachedInput },
 *       completion_tokens_details: { reasoning_tokens: turn.usage.reasoning }
 *     }
 *     return options?.complete === false ? body : [
 *       ...body,
 *       chunk({}, calls.length > 0 ? "tool_calls" : "stop"),
 *       sse({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [], usage }),
 *       "data: [DONE]\n\n"
 *     ]
 *   },
 *   serverError: (message) => [sse({ error: { message, type: "server_error" } })]
 * }
 *
 * // The API key must never reach an error, whatever a hostile server echoes back.
 * const cases = HostileServer.cases(fixture)
 * console.log(cases.length > 0) // true
 * const first = cases[0]!
 * Effect.runPromise(first.test).then(() => console.log(`checked: ${first.name}`))
 * // checked: never puts the key in an error, a delta or a span, and annotates the current span with the server
 * ```
 *
 * @since 0.1.0
 * @category cases
 */
export const cases = (fixture: ProviderHarness.Fixture): ReadonlyArray<ProviderHarness.Case> => [
  {
    name: "never puts the key in an error, a delta or a span, and annotates the current span with the server",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const { spans, tracer } = SpanRecorder.make()
        yield* server.reply(
          ProviderServer.status(401, { error: { message: `Incorrect API key provided: ${ProviderHarness.canary}` } }),
          ProviderServer.status(500, `upstream said ${ProviderHarness.canary}`),
          ProviderServer.sse(fixture.serverError(`the key ${ProviderHarness.canary} is bad`)),
          ProviderServer.sse(fixture.frames(WireTurn.text("fine")))
        )
        const results = yield* Effect.forEach([1, 2, 3, 4], () => ProviderHarness.turn(model)).pipe(
          Effect.withSpan("chat"),
          Effect.withTracer(tracer),
          // Record every header on the client spans, so a key that escaped redaction would show.
          Effect.provideService(HttpClient.TracerHeaderFilter, () => true)
        )
        const errors = results.flatMap((result) => result.error === undefined ? [] : [result.error])
        assert.equal(errors.length, 3)
        for (const error of errors) {
          assert.equal(JSON.stringify(error).includes(ProviderHarness.canary), false, error.message)
        }
        assert.equal(
          JSON.stringify(results.map((result) => result.deltas)).includes(ProviderHarness.canary),
          false
        )
        const seen = SpanRecorder.text(spans)
        assert.equal(seen.includes(ProviderHarness.canary), false)
        assert.equal((yield* SpanRecorder.printed(spans)).includes(ProviderHarness.canary), false)
        const clientSpans = spans.filter((span) =>
          span.attributes.has(`http.request.header.${fixture.credentialHeader}`)
        )
        assert.equal(clientSpans.length, 4)
        for (const span of clientSpans) {
          assert.equal(span.attributes.get(`http.request.header.${fixture.credentialHeader}`), "<redacted>")
        }
        const chat = spans.find((span) => span.name === "chat")
        assert.equal(chat?.attributes.get("server.address"), "127.0.0.1")
        assert.equal(chat?.attributes.get("server.port"), Number(new URL(server.url).port))
      }))
  },
  {
    name: "never sends the key to another host: a redirect there fails, a 307 to the same origin is followed",
    clock: "live",
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        const other = yield* ProviderServer.make()
        yield* server.reply(ProviderServer.status(307, "", { location: `${other.url}/steal` }))
        const error = ProviderHarness.failed(yield* ProviderHarness.turn(model))
        assert.equal(error._tag, "InvalidRequest")
        assert.equal(error.message.includes(ProviderHarness.canary), false)
        yield* server.reply(ProviderServer.status(302, "", { location: `${server.url}/moved` }))
        assert.equal(ProviderHarness.failed(yield* ProviderHarness.turn(model))._tag, "InvalidRequest")
        assert.equal((yield* other.requests).length, 0)
        yield* server.reply(
          ProviderServer.status(308, "", { location: `${server.url}/moved` }),
          ProviderServer.sse(fixture.frames(WireTurn.text("moved")))
        )
        assert.equal(Turn.text(ProviderHarness.completed((yield* ProviderHarness.turn(model)).deltas)), "moved")
        const requests = yield* server.requests
        const [first, moved] = requests.slice(-2)
        assert.equal(moved?.url.split("?")[0], "/moved")
        assert.deepEqual(moved?.body, first?.body)
        assert.equal(moved?.headers[fixture.credentialHeader]?.includes(ProviderHarness.canary), true)
      }))
  },
  {
    name: "refuses a base URL carrying credentials, without sending or quoting them",
    clock: "live",
    test: ProviderHarness.run(fixture, (server) =>
      Effect.gen(function*() {
        const { spans, tracer } = SpanRecorder.make()
        const base = new URL(server.url)
        base.username = "user"
        base.password = ProviderHarness.canary
        const model = yield* LanguageModel.LanguageModel.pipe(
          Effect.provide(
            fixture.layer({ apiKey: Redacted.make("sk-other"), baseUrl: base.href, retryPolicy: ProviderRetry.none })
          )
        )
        const error = ProviderHarness.failed(
          yield* ProviderHarness.turn(model).pipe(Effect.withSpan("chat"), Effect.withTracer(tracer))
        )
        assert.equal(error._tag, "InvalidRequest")
        assert.equal(JSON.stringify(error).includes(ProviderHarness.canary), false)
        assert.equal(SpanRecorder.text(spans).includes(ProviderHarness.canary), false)
        assert.equal((yield* server.requests).length, 0)
      }))
  },
  {
    name: "bounds error messages and reads only the start of a huge error body",
    clock: "live",
    // Hundreds of megabytes offered and megabytes read: seconds on a busy machine.
    timeout: 120_000,
    test: ProviderHarness.run(fixture, (server, model) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.status(500, { error: { message: "x".repeat(10_000_000) } }))
        const long = ProviderHarness.failed(yield* ProviderHarness.turn(model))
        assert.equal(long._tag, "Unavailable")
        assert.ok(long.message.length <= ProviderStream.maxMessageLength + 100, `${long.message.length} characters`)
        yield* server.reply(ProviderServer.oversized(502, 300_000_000))
        const huge = ProviderHarness.failed(yield* ProviderHarness.turn(model))
        assert.equal(huge._tag, "Unavailable")
        assert.ok(huge.message.length <= ProviderStream.maxMessageLength + 100)
        yield* server.awaitClientAbort
        yield* server.reply(ProviderServer.sse(fixture.serverError("y".repeat(1_000_000))))
        const streamed = ProviderHarness.failed(yield* ProviderHarness.turn(model))
        assert.ok(streamed.message.length <= ProviderStream.maxMessageLength + 100)
      }))
  }
]
